// A plain single-sequence generation loop over a runtime::Session (vision, prefill, sampling,
// decode, stop tokens, streamed UTF-8-safe text), with every hook a golden test needs (node
// observers on the Session, the prompt's logits). The tests hold the Engine (runtime/engine.h,
// the one loop the library and the programs use) to this simpler loop's tokens.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "runtime/generate.h"
#include "runtime/logprobs.h"
#include "runtime/session.h"

namespace qvl::test {

using runtime::GenerateParams;
using runtime::PreparedPrompt;
using runtime::Session;
using runtime::TokenLogprobs;

struct GenerateResult {
    std::vector<std::int32_t> tokens;
    std::string text;
    std::string finish_reason;  // "stop" | "length" | "interrupted"
    double vision_ms = 0, prefill_ms = 0, decode_ms = 0, ttft_ms = 0;
    int decoded_steps = 0;
    std::vector<TokenLogprobs> logprobs;  // one per token when params.top_logprobs >= 0
};

struct GenerateHooks {
    std::function<void(std::string_view)> on_text;     // streamed text pieces
    std::function<void(const Session&)> after_vision;  // images encoded, before prefill
    // The prompt is in slot 0's KV: session.logits() gives the last prompt token's logits.
    std::function<void(const Session&, int slot)> after_prefill;
};

base::Result<GenerateResult> generate(Session& session, const PreparedPrompt& prompt,
                                      const GenerateParams& params, const GenerateHooks& hooks);

}  // namespace qvl::test
