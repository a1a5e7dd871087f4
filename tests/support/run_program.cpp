#include "support/run_program.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>

namespace qvl::testing {

std::string shell_quote(const std::string& s) {
    std::string q(1, '\'');
    for (char c : s) {
        if (c == '\'') {
            q.append("'\\''");
        } else {
            q.push_back(c);
        }
    }
    q.push_back('\'');
    return q;
}

ProgramRun run_program(const std::string& program, const std::vector<std::string>& args,
                       const ProgramOptions& options) {
    std::string cmd = options.env.empty() ? "" : options.env + " ";
    cmd.append(shell_quote(program));
    for (const std::string& a : args) {
        cmd.push_back(' ');
        cmd.append(shell_quote(a));
    }
    cmd.append(" < ");
    cmd.append(shell_quote(options.stdin_file.empty() ? "/dev/null" : options.stdin_file.string()));
    cmd.append(" 2>");
    cmd.append(
        shell_quote(options.stderr_file.empty() ? "/dev/null" : options.stderr_file.string()));
    ProgramRun r;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return r;
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (!options.stderr_file.empty()) {
        std::ifstream in(options.stderr_file, std::ios::binary);
        r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return r;
}

}  // namespace qvl::testing
