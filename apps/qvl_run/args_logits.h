// qvl-run's --logprobs N and --logit-bias ID=BIAS (repeatable): parsed from their texts apart
// from args.cpp, which holds every other flag.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "args.h"

namespace qvl::app {

// Sets options->logprobs (0..20) when logprobs is non-empty and options->logit_bias from every
// "ID=BIAS" (ID a non-negative integer, BIAS a number in [-100, 100]). Returns the usage error's
// message naming the flag and the value, or nullopt.
std::optional<std::string> convert_logits_flags(const std::string& logprobs,
                                                const std::vector<std::string>& logit_bias,
                                                RunOptions* options);

}  // namespace qvl::app
