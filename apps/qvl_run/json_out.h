// The --json report and the stderr timing block of qvl-run (cli.md "Output").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "runtime/generate.h"

namespace qvl::app {

struct RunReport {
    const runtime::PreparedPrompt* prompt = nullptr;
    const runtime::GenerateResult* result = nullptr;
    runtime::SamplingParams sampling;
    int threads = 0;
    std::string threads_reason;    // why that many: "--threads" or the default's CPU budget
    const char* weights = "bf16";  // the text decoder's weight format
    // What ran: the kernel tier ("avx2") and the precision with auto resolved ("f32-kv-bf16").
    const char* isa = "";
    const char* precision = "";
    double load_ms = 0, total_ms = 0, peak_rss_mb = 0;
    std::string boxes_json;  // grounding boxes of the answer as a JSON array; "" = none
};

std::string json_int_array(std::span<const std::int32_t> ids);
std::string format_json_report(const RunReport& r);
std::string format_timing_block(const RunReport& r);

}  // namespace qvl::app
