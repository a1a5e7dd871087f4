// Monotonic wall-clock timing for stage timings and profiles.
#pragma once

#include <chrono>

namespace qvl::base {

inline double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

class Timer {
  public:
    Timer() : start_(now_ms()) {}
    double elapsed_ms() const { return now_ms() - start_; }
    void reset() { start_ = now_ms(); }

  private:
    double start_;
};

}  // namespace qvl::base
