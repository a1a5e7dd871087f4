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

// An image or video part: its bytes, or a URL the resolver turns into a file or bytes.
ContentPart media_part(RequestPart& part) {
    const bool video = part.kind == RequestPart::Kind::kVideo;
    ImageRef& m = part.image;
    std::string url = !m.remote_url.empty()  ? std::move(m.remote_url)
                      : !m.file_path.empty() ? std::string(kFileScheme) + m.file_path
                                             : std::string();
    if (!url.empty()) {
        return video ? ContentPart::video_url(std::move(url), m.where)
                     : ContentPart::image_url(std::move(url), m.where);
    }
    return video ? ContentPart::video_bytes(std::move(m.bytes), m.where)
                 : ContentPart::image_bytes(std::move(m.bytes), m.where);
}

}  // namespace

std::vector<Message> engine_messages(std::vector<RequestMessage>& messages) {
    std::vector<Message> out;
    for (RequestMessage& m : messages) {
        Message msg{.role = m.role, .tool_calls = std::move(m.tool_calls)};
        for (RequestPart& part : m.parts) {
            if (part.kind == RequestPart::Kind::kText) {
                msg.content.push_back(ContentPart::from_text(std::move(part.text)));
            } else {
                msg.content.push_back(media_part(part));
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
            return part.is_video() ? ContentPart::video_bytes(std::move(bytes).value(), part.path)
                                   : ContentPart::image_bytes(std::move(bytes).value(), part.path);
        }
        const std::string path = part.url.substr(kFileScheme.size());
        Result<std::filesystem::path> real = resolve_media_path(path, root, part.path);
        if (!real.ok()) return real.status();
        return part.is_video() ? ContentPart::video_file(real.value().string())
                               : ContentPart::image_file(real.value().string());
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
