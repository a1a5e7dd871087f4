// Counters and histograms for GET /metrics, in the Prometheus text exposition format (shared
// docs/serve.md lists the required series). Thread-safe; updates take one short lock.
#pragma once

#include <qvl/qvl.h>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace qvl::serve {

class Histogram {
  public:
    void observe(double seconds);
    // "name_bucket{le=...} n" lines, then _sum and _count.
    std::string format(const std::string& name, const std::string& help) const;

  private:
    static constexpr std::array<double, 14> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                       1,     2.5,  5,     10,   30,  60,   120};
    std::array<std::uint64_t, kBounds.size()> counts_{};  // per bucket, not cumulative
    std::uint64_t count_ = 0;
    double sum_ = 0;
};

// An HTTP request's end (its tokens are the engine's counters, Engine::Stats).
struct RequestOutcome {
    // ok | cancelled (client gone) | client_error | rejected | error (failed in the engine) |
    // cut (cut at the shutdown deadline)
    std::string outcome;
    double ttft_s = -1;  // < 0: no token was produced
    double duration_s = 0;
};

class Metrics {
  public:
    void record(const RequestOutcome& r);
    // The exposition text: the HTTP outcomes counted here, the engine's `stats` sampled by the
    // caller.
    std::string format(const Engine::Stats& stats) const;

  private:
    mutable std::mutex mu_;
    std::map<std::string, std::uint64_t> requests_;
    Histogram ttft_, duration_;
};

}  // namespace qvl::serve
