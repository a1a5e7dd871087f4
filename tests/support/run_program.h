// Running a program of this project (qvl-run, ...) the way a user's shell does, for tests that
// drive the real binary: arguments quoted for /bin/sh, stdin from a file, stdout captured.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace qvl::testing {

// s as one single-quoted /bin/sh word (embedded quotes survive).
std::string shell_quote(const std::string& s);

struct ProgramRun {
    int exit_code = -1;  // -1: not started, or ended by a signal
    std::string out;     // stdout
    std::string err;     // stderr, when kept
};

struct ProgramOptions {
    std::string env;                    // "NAME=value ..." put before the command ("" = none)
    std::filesystem::path stdin_file;   // empty: /dev/null
    std::filesystem::path stderr_file;  // empty: stderr is discarded; else kept there and in err
};

ProgramRun run_program(const std::string& program, const std::vector<std::string>& args,
                       const ProgramOptions& options = {});

}  // namespace qvl::testing
