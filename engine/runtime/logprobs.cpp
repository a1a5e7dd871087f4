#include "runtime/logprobs.h"

#include <algorithm>
#include <cmath>

namespace qvl::runtime {

TokenLogprobs token_logprobs(std::span<const float> logits, std::int32_t token, int top) {
    TokenLogprobs out;
    out.token = token;
    const int n = int(logits.size());
    if (n == 0) return out;
    double max = -INFINITY;
    for (const float v : logits) max = std::max(max, double(v));
    double sum = 0.0;
    for (const float v : logits) sum += std::exp(double(v) - max);
    const double log_z = max + std::log(sum);
    if (token >= 0 && token < n) out.logprob = double(logits[std::size_t(token)]) - log_z;
    // The best `top` ids by one pass keeping a small sorted list (top <= 20).
    const int k = std::clamp(top, 0, std::min(kMaxTopLogprobs, n));
    std::vector<std::int32_t> best;
    best.reserve(std::size_t(k) + 1);
    auto better = [&](std::int32_t a, std::int32_t b) {
        return logits[std::size_t(a)] != logits[std::size_t(b)]
                   ? logits[std::size_t(a)] > logits[std::size_t(b)]
                   : a < b;
    };
    for (std::int32_t id = 0; id < n && k > 0; ++id) {
        if (int(best.size()) == k && !better(id, best.back())) continue;
        best.insert(std::upper_bound(best.begin(), best.end(), id, better), id);
        if (int(best.size()) > k) best.pop_back();
    }
    out.top.reserve(best.size());
    for (const std::int32_t id : best) {
        out.top.emplace_back(id, double(logits[std::size_t(id)]) - log_z);
    }
    return out;
}

}  // namespace qvl::runtime
