#include "media_fetch.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "chat_request.h"

namespace qvl::serve {

namespace {

using Clock = std::chrono::steady_clock;

struct Sink {
    std::vector<std::uint8_t> bytes;
    std::size_t max_bytes = 0;
    bool too_big = false;
};

std::size_t write_body(char* data, std::size_t size, std::size_t n, void* user) {
    auto* sink = static_cast<Sink*>(user);
    const std::size_t len = size * n;
    if (sink->bytes.size() + len > sink->max_bytes) {
        sink->too_big = true;
        return 0;  // aborts the transfer
    }
    const auto* p = reinterpret_cast<const std::uint8_t*>(data);
    sink->bytes.insert(sink->bytes.end(), p, p + len);
    return len;
}

struct CurlDeleter {
    void operator()(CURL* c) const { curl_easy_cleanup(c); }
};

Status refuse(const std::string& url, const std::string& what) {
    return app::error(ErrorCode::kInvalidArgument, "{}: {}", url, what);
}

// One GET without following redirects, within `left_ms`: *status and, for a redirect,
// *location.
Status get_once(const std::string& url, const FetchLimits& limits, long left_ms, Sink* sink,
                long* status, std::string* location) {
    std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
    if (!curl) return app::error(ErrorCode::kResourceExhausted, "{}: libcurl: no handle", url);
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, std::max(left_ms, 1L));
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(limits.max_bytes));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
    const CURLcode rc = curl_easy_perform(c);
    if (sink->too_big || rc == CURLE_FILESIZE_EXCEEDED) {
        return refuse(url, fmt::format("the image is over the {} byte limit", limits.max_bytes));
    }
    if (rc == CURLE_OPERATION_TIMEDOUT) {
        return refuse(url, fmt::format("fetching took longer than {} s", limits.timeout_s));
    }
    if (rc != CURLE_OK) return refuse(url, fmt::format("fetch failed: {}", curl_easy_strerror(rc)));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    char* redirect = nullptr;
    curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &redirect);
    if (redirect != nullptr) *location = redirect;
    return {};
}

}  // namespace

void media_fetch_init() { curl_global_init(CURL_GLOBAL_DEFAULT); }

Result<std::vector<std::uint8_t>> fetch_media(const std::string& url, const FetchLimits& limits) {
    const Clock::time_point end =
        Clock::now() + std::chrono::milliseconds(std::int64_t(limits.timeout_s * 1000));
    const std::string host = url_host(url);
    std::string current = url;
    for (int hop = 0;; ++hop) {
        Sink sink{.max_bytes = limits.max_bytes};
        long status = 0;
        std::string location;
        const long left =
            long(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
        if (left <= 0) {
            return refuse(url, fmt::format("fetching took longer than {} s", limits.timeout_s));
        }
        APP_TRY(get_once(current, limits, left, &sink, &status, &location));
        if (status >= 300 && status < 400 && !location.empty()) {
            if (hop == limits.max_redirects) {
                return refuse(url, fmt::format("more than {} redirects", limits.max_redirects));
            }
            if (url_host(location) != host) {
                return refuse(url, fmt::format("redirected to another host ('{}'), which is not "
                                               "followed",
                                               location));
            }
            current = std::move(location);
            continue;
        }
        if (status != 200) return refuse(url, fmt::format("the server answered HTTP {}", status));
        if (sink.bytes.empty()) return refuse(url, "the server sent no bytes");
        return std::move(sink.bytes);
    }
}

}  // namespace qvl::serve
