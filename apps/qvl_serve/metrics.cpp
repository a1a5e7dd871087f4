#include "metrics.h"

#include <fmt/format.h>

#include <utility>

namespace qvl::serve {

void Histogram::observe(double seconds) {
    for (std::size_t i = 0; i < kBounds.size(); ++i) {
        if (seconds <= kBounds[i]) {
            ++counts_[i];
            break;
        }
    }
    ++count_;
    sum_ += seconds;
}

std::string Histogram::format(const std::string& name, const std::string& help) const {
    std::string out = fmt::format("# HELP {0} {1}\n# TYPE {0} histogram\n", name, help);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < kBounds.size(); ++i) {
        cumulative += counts_[i];
        out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBounds[i], cumulative);
    }
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
    out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
    return out;
}

void Metrics::record(const RequestOutcome& r) {
    std::lock_guard lock(mu_);
    ++requests_[r.outcome];
    if (r.ttft_s >= 0) ttft_.observe(r.ttft_s);
    if (r.outcome == "ok") duration_.observe(r.duration_s);
}

std::string Metrics::format(const Engine::Stats& stats) const {
    std::lock_guard lock(mu_);
    std::string out =
        "# HELP qvl_requests_total Chat completion requests by outcome.\n"
        "# TYPE qvl_requests_total counter\n";
    // Every outcome appears from the start, so rate() queries see a zero before the first one.
    for (const char* o : {"ok", "cancelled", "client_error", "rejected", "error", "cut"}) {
        const auto it = requests_.find(o);
        out += fmt::format("qvl_requests_total{{outcome=\"{}\"}} {}\n", o,
                           it == requests_.end() ? 0 : it->second);
    }
    out += ttft_.format("qvl_time_to_first_token_seconds",
                        "Time from request received to first generated token.");
    out += duration_.format("qvl_request_duration_seconds",
                            "Time from request received to last token, completed requests.");
    const auto counter = [&](const char* name, const char* help, std::uint64_t v) {
        out += fmt::format("# HELP {0} {1}\n# TYPE {0} counter\n{0} {2}\n", name, help, v);
    };
    const auto gauge = [&](const char* name, const char* help, int v) {
        out += fmt::format("# HELP {0} {1}\n# TYPE {0} gauge\n{0} {2}\n", name, help, v);
    };
    out +=
        "# HELP qvl_generations_total Generations (one per choice) the engine finished, by "
        "finish reason.\n# TYPE qvl_generations_total counter\n";
    const std::pair<const char*, std::uint64_t> ends[] = {{"stop", stats.stopped},
                                                          {"length", stats.length},
                                                          {"cancelled", stats.cancelled},
                                                          {"error", stats.failed}};
    for (const auto& [reason, n] : ends) {
        out += fmt::format("qvl_generations_total{{finish_reason=\"{}\"}} {}\n", reason, n);
    }
    counter("qvl_generations_refused_total", "Generations the engine refused (queue full, ...).",
            stats.refused);
    counter("qvl_prompt_tokens_total", "Prompt tokens of finished requests.", stats.prompt_tokens);
    counter("qvl_generated_tokens_total", "Generated tokens.", stats.generated_tokens);
    counter("qvl_cached_prompt_tokens_total", "Prompt tokens reused from a slot's KV cache.",
            stats.cached_prompt_tokens);
    counter("qvl_image_cache_hits_total", "Images whose features came from the cache.",
            stats.image_cache_hits);
    gauge("qvl_slots_busy", "Slots running a request.", stats.slots_busy);
    gauge("qvl_slots", "Slots (--parallel).", stats.slots);
    gauge("qvl_queue_length", "Requests waiting for a slot.", stats.queue_length);
    return out;
}

}  // namespace qvl::serve
