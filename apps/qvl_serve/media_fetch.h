// http(s) image URLs for qvl-serve --allowed-media-hosts: one GET through libcurl (Debian's
// libcurl4-openssl-dev: the HTTP client every distribution keeps patched, with TLS, proxies
// and timeouts done right; the server's own Boost.Beast is server-side and would need a TLS
// client written here). Bounded three ways: the body stops being read past max_bytes (a
// Content-Length over it is refused before reading), one deadline covers the whole fetch
// (connect, redirects and body), and redirects are followed only to the same host (at most
// max_redirects, http and https only). Errors name the URL and the limit (kInvalidArgument:
// the client's URL or what its server answered).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace qvl::serve {

struct FetchLimits {
    std::size_t max_bytes = 64u << 20;
    double timeout_s = 10.0;  // the whole fetch
    int max_redirects = 3;
};

// Once, before threads start (libcurl's global state).
void media_fetch_init();

// `url` is http:// or https:// (its host already checked against the allowed list).
Result<std::vector<std::uint8_t>> fetch_media(const std::string& url, const FetchLimits& limits);

}  // namespace qvl::serve
