// Fuzzes qvl-serve's request parser (apps/qvl_serve/chat_request.h): any body is either a
// request within the limits or an error with a message naming the problem; never a crash.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chat_request.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view body(reinterpret_cast<const char*>(data), size);
    qvl::serve::ParseLimits limits;
    limits.max_images = 8;
    limits.allow_file_urls = size % 2 == 0;
    qvl::Result<qvl::serve::ChatRequest> r = qvl::serve::parse_chat_request(body, limits);
    if (!r.ok()) {
        if (r.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    const qvl::serve::ChatRequest& req = r.value();
    if (req.messages.empty()) qvl::fuzz::fail("accepted an empty conversation");
    if (req.image_count > limits.max_images) qvl::fuzz::fail("accepted too many images");
    int images = 0;
    for (const qvl::serve::RequestMessage& m : req.messages) {
        if (m.role != "system" && m.role != "user" && m.role != "assistant") {
            qvl::fuzz::fail("accepted role '" + m.role + "'");
        }
        for (const qvl::serve::RequestPart& p : m.parts) {
            if (p.kind != qvl::serve::RequestPart::Kind::kImage) continue;
            ++images;
            if (m.role != "user") qvl::fuzz::fail("accepted an image outside a user message");
            if (p.image.bytes.empty() == p.image.file_path.empty()) {
                qvl::fuzz::fail("an image with neither or both of bytes and a path");
            }
            if (!p.image.file_path.empty() && !limits.allow_file_urls) {
                qvl::fuzz::fail("accepted a file:// URL while they are refused");
            }
        }
    }
    if (images != req.image_count) qvl::fuzz::fail("image count mismatch");
    if (req.max_tokens && *req.max_tokens < 1) qvl::fuzz::fail("accepted max_tokens < 1");
    if (req.top_p && !(*req.top_p > 0.0f && *req.top_p <= 1.0f)) qvl::fuzz::fail("bad top_p");
    for (const std::string& s : req.stop) {
        if (s.empty()) qvl::fuzz::fail("accepted an empty stop string");
    }
    return 0;
}
