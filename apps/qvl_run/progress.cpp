#include "progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace qvl::app {

bool Progress::wanted(bool json, int verbosity) {
    return !json && verbosity >= 0 && ::isatty(STDERR_FILENO) != 0;
}

void Progress::phase(const std::string& what) {
    phase_timer_.reset();
    show(what + "...");
}

void Progress::step(const std::string& what, int done, int total) {
    std::string line = fmt::format("{} {}/{}", what, done, total);
    if (done > 0 && done < total) {
        const double left_s = phase_timer_.elapsed_ms() / done * (total - done) / 1000.0;
        line += fmt::format(", about {:.0f} s left", left_s);
    }
    show(line);
}

void Progress::clear() {
    if (!enabled_ || !shown_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    shown_ = false;
}

void Progress::show(const std::string& line) {
    if (!enabled_) return;
    std::fprintf(stderr, "\r\033[K%s", line.c_str());  // overwrite the previous state
    std::fflush(stderr);
    shown_ = true;
}

}  // namespace qvl::app
