#include "args_logits.h"

#include <fmt/format.h>
#include <qvl/qvl.h>

#include <charconv>
#include <cmath>
#include <cstdint>

namespace qvl::app {

namespace {

template <class T>
bool parse_whole(std::string_view text, T* value) {
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, *value);
    return !text.empty() && ec == std::errc() && ptr == end;
}

}  // namespace

std::optional<std::string> convert_logits_flags(const std::string& logprobs,
                                                const std::vector<std::string>& logit_bias,
                                                RunOptions* options) {
    if (!logprobs.empty()) {
        int n = 0;
        if (!parse_whole(logprobs, &n) || n < 0 || n > kMaxLogprobs) {
            return fmt::format("--logprobs: '{}' is not an integer in [0, {}]", logprobs,
                               kMaxLogprobs);
        }
        if (!options->json) {
            return std::string(
                "--logprobs needs --json: the log-probabilities are part of its "
                "report");
        }
        if (options->dry_run || options->tokenize) {
            return std::string("--logprobs: --dry-run and --tokenize generate no tokens");
        }
        options->logprobs = n;
    }
    for (const std::string& item : logit_bias) {
        const std::size_t eq = item.find('=');
        std::int32_t id = 0;
        float bias = 0.0f;
        if (eq == std::string::npos || !parse_whole(std::string_view(item).substr(0, eq), &id) ||
            id < 0) {
            return fmt::format("--logit-bias: '{}' is not ID=BIAS with a token id ID >= 0", item);
        }
        if (!parse_whole(std::string_view(item).substr(eq + 1), &bias) || !std::isfinite(bias) ||
            bias < -100.0f || bias > 100.0f) {
            return fmt::format("--logit-bias: '{}': the bias is not a number in [-100, 100]", item);
        }
        options->logit_bias.emplace_back(id, bias);
    }
    return std::nullopt;
}

}  // namespace qvl::app
