#include "engine_request.h"

#include <algorithm>
#include <system_error>

#include "common/status.h"

namespace qvl::serve {
namespace {

// A file:// path, resolved through symlinks and "..", must lie inside the media folder.
Result<std::filesystem::path> resolve_media_path(const std::string& path,
                                                 const std::filesystem::path& root,
                                                 const std::string& where) {
    if (root.empty()) {
        return app::error(ErrorCode::kInvalidArgument, "{}: file:// URLs are refused", where);
    }
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(path, ec);
    if (ec) return app::error(ErrorCode::kNotFound, "{}: {}: {}", where, path, ec.message());
    const auto [root_end, real_it] =
        std::mismatch(root.begin(), root.end(), real.begin(), real.end());
    if (root_end != root.end()) {
        return app::error(ErrorCode::kInvalidArgument, "{}: {} is outside the allowed media folder",
                          where, path);
    }
    return real;
}

constexpr std::string_view kFileScheme = "file://";

}  // namespace

std::vector<Message> engine_messages(std::vector<RequestMessage>& messages) {
    std::vector<Message> out;
    for (RequestMessage& m : messages) {
        Message msg{.role = m.role, .tool_calls = std::move(m.tool_calls)};
        for (RequestPart& part : m.parts) {
            if (part.kind == RequestPart::Kind::kText) {
                msg.content.push_back(ContentPart::from_text(std::move(part.text)));
            } else if (!part.image.remote_url.empty()) {
                msg.content.push_back(
                    ContentPart::image_url(std::move(part.image.remote_url), part.image.where));
            } else if (!part.image.file_path.empty()) {
                msg.content.push_back(ContentPart::image_url(
                    std::string(kFileScheme) + part.image.file_path, part.image.where));
            } else {
                msg.content.push_back(
                    ContentPart::image_bytes(std::move(part.image.bytes), part.image.where));
            }
        }
        out.push_back(std::move(msg));
    }
    return out;
}

MediaResolver media_resolver(std::filesystem::path allowed_media_dir, FetchLimits fetch) {
    return [root = std::move(allowed_media_dir),
            fetch](const ContentPart& part) -> Result<ContentPart> {
        if (!part.url.starts_with(kFileScheme)) {
            Result<std::vector<std::uint8_t>> bytes = fetch_media(part.url, fetch);
            if (!bytes.ok())
                return Status(bytes.status().code(), part.path + ": " + bytes.status().message());
            return ContentPart::image_bytes(std::move(bytes).value(), part.path);
        }
        const std::string path = part.url.substr(kFileScheme.size());
        Result<std::filesystem::path> real = resolve_media_path(path, root, part.path);
        if (!real.ok()) return real.status();
        return ContentPart::image_file(real.value().string());
    };
}

Sampling request_sampling(const Model& model, const ChatRequest& r) {
    Sampling s = model.sampling({.temperature = r.temperature,
                                 .top_p = r.top_p,
                                 .top_k = r.top_k,
                                 .seed = r.seed,
                                 .repetition_penalty = r.repetition_penalty,
                                 .presence_penalty = r.presence_penalty,
                                 .frequency_penalty = r.frequency_penalty});
    s.logit_bias = r.logit_bias;
    s.logprobs = r.top_logprobs;
    return s;
}

Result<int> new_tokens(const ChatRequest& request, int prompt_tokens, int ctx_size) {
    const int room = ctx_size - prompt_tokens;
    if (room < 1 || (request.max_tokens && *request.max_tokens > room)) {
        return app::error(ErrorCode::kOutOfRange,
                          "the prompt of {} tokens plus {} new tokens does not fit the context "
                          "of {} tokens per slot (shorten the conversation, lower max_tokens or "
                          "image sizes, or start the server with a larger -c)",
                          prompt_tokens, request.max_tokens.value_or(1), ctx_size);
    }
    return request.max_tokens.value_or(room);
}

}  // namespace qvl::serve
