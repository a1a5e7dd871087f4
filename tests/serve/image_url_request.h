// A chat request body whose one user message is an image_url part with the given URL, for the
// request parser tests (request_parse_test.cpp, request_fields_test.cpp).
#pragma once

#include <string>
#include <string_view>

namespace qvl::serve::test {

inline std::string image_url_request(std::string_view url) {
    return std::string(R"({"messages":[{"role":"user","content":[{"type":"image_url",
            "image_url":{"url":")") +
           std::string(url) + R"("}}]}]})";
}

}  // namespace qvl::serve::test
