// Wall-clock time since a start, for the programs' own reports (load time, progress, batch
// throughput); the engine times its own stages (qvl::Timings).
#pragma once

#include <chrono>

namespace qvl::app {

class Stopwatch {
  public:
    double elapsed_ms() const {
        return std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
    }
    void reset() { start_ = Clock::now(); }

  private:
    using Clock = std::chrono::steady_clock;
    Clock::time_point start_ = Clock::now();
};

}  // namespace qvl::app
