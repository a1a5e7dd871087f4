#include "base64.h"

#include <array>
#include <cstdint>

namespace qvl::serve {
namespace {

constexpr std::array<std::int8_t, 256> make_table() {
    std::array<std::int8_t, 256> t{};
    for (auto& v : t) v = -1;
    constexpr std::string_view kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
        t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
    }
    return t;
}
constexpr std::array<std::int8_t, 256> kTable = make_table();

}  // namespace

Result<std::vector<std::uint8_t>> decode_base64(std::string_view text) {
    std::size_t end = text.size();
    std::size_t padding = 0;
    while (end > 0 && text[end - 1] == '=' && padding < 2) {
        --end;
        ++padding;
    }
    if (padding > 0 && text.size() % 4 != 0) {
        return app::error(ErrorCode::kInvalidArgument,
                          "invalid base64: padded text of {} characters is not a multiple of 4",
                          text.size());
    }
    if (end % 4 == 1) {
        return app::error(ErrorCode::kInvalidArgument,
                          "invalid base64: {} characters cannot encode whole bytes (truncated?)",
                          end);
    }
    std::vector<std::uint8_t> out;
    out.reserve(end / 4 * 3 + 2);
    std::uint32_t acc = 0;
    int bits = 0;
    for (std::size_t i = 0; i < end; ++i) {
        const std::int8_t v = kTable[static_cast<unsigned char>(text[i])];
        if (v < 0) {
            const unsigned char c = static_cast<unsigned char>(text[i]);
            if (c >= 0x21 && c < 0x7F) {
                return app::error(ErrorCode::kInvalidArgument,
                                  "invalid base64 character '{}' at offset {}", char(c), i);
            }
            return app::error(ErrorCode::kInvalidArgument,
                              "invalid base64 byte 0x{:02x} at offset {}", c, i);
        }
        acc = (acc << 6) | std::uint32_t(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<std::uint8_t>((acc >> bits) & 0xFF));
        }
    }
    return out;
}

}  // namespace qvl::serve
