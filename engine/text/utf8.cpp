#include "text/utf8.h"

#include <cstdint>
#include <cstring>

namespace qvl::text::detail {
namespace {

// Expected length of a sequence starting with `lead` (0 for bytes that never start one) and the
// allowed range of its second byte; later bytes are always 0x80..0xBF (Unicode Table 3-7).
struct Lead {
    int len;
    unsigned char lo, hi;
};

Lead classify(unsigned char b) {
    if (b < 0x80) return {1, 0, 0};
    if (b < 0xC2) return {0, 0, 0};
    if (b < 0xE0) return {2, 0x80, 0xBF};
    if (b == 0xE0) return {3, 0xA0, 0xBF};
    if (b == 0xED) return {3, 0x80, 0x9F};
    if (b < 0xF0) return {3, 0x80, 0xBF};
    if (b == 0xF0) return {4, 0x90, 0xBF};
    if (b < 0xF4) return {4, 0x80, 0xBF};
    if (b == 0xF4) return {4, 0x80, 0x8F};
    return {0, 0, 0};
}

// Number of bytes of the sequence at p[0..n) that are valid so far (1..len), and whether it is
// complete. A lead that never starts a sequence gives valid = 0.
struct Prefix {
    int valid;
    bool complete;
};

Prefix scan_sequence(const unsigned char* p, std::size_t n) {
    const Lead lead = classify(p[0]);
    if (lead.len == 0) return {0, false};
    if (lead.len == 1) return {1, true};
    int k = 1;
    for (; k < lead.len; ++k) {
        if (std::size_t(k) >= n) return {k, false};
        const unsigned char lo = k == 1 ? lead.lo : 0x80;
        const unsigned char hi = k == 1 ? lead.hi : 0xBF;
        if (p[k] < lo || p[k] > hi) return {k, false};
    }
    return {k, true};
}

std::size_t ascii_run(const unsigned char* p, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t w;
        std::memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ull) break;
    }
    while (i < n && p[i] < 0x80) ++i;
    return i;
}

}  // namespace

std::size_t find_invalid_utf8(std::string_view text) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        i += ascii_run(p + i, n - i);
        if (i >= n) break;
        const Prefix s = scan_sequence(p + i, n - i);
        if (!s.complete) return i;
        i += std::size_t(s.valid);
    }
    return std::string_view::npos;
}

std::size_t append_utf8_lossy(std::string& out, std::string_view bytes, bool final) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::size_t n = bytes.size();
    std::size_t i = 0;
    while (i < n) {
        const std::size_t run = ascii_run(p + i, n - i);
        out.append(bytes.data() + i, run);
        i += run;
        if (i >= n) break;
        const Prefix s = scan_sequence(p + i, n - i);
        if (s.complete) {
            out.append(bytes.data() + i, std::size_t(s.valid));
            i += std::size_t(s.valid);
        } else if (s.valid > 0 && i + std::size_t(s.valid) == n && !final) {
            return i;  // may still complete with the next bytes
        } else {
            append_codepoint(out, 0xFFFD);
            i += s.valid > 0 ? std::size_t(s.valid) : 1;
        }
    }
    return n;
}

void append_codepoint(std::string& out, char32_t cp) {
    char buf[4];
    int len;
    if (cp < 0x80) {
        buf[0] = char(cp);
        len = 1;
    } else if (cp < 0x800) {
        buf[0] = char(0xC0 | (cp >> 6));
        buf[1] = char(0x80 | (cp & 0x3F));
        len = 2;
    } else if (cp < 0x10000) {
        buf[0] = char(0xE0 | (cp >> 12));
        buf[1] = char(0x80 | ((cp >> 6) & 0x3F));
        buf[2] = char(0x80 | (cp & 0x3F));
        len = 3;
    } else {
        buf[0] = char(0xF0 | (cp >> 18));
        buf[1] = char(0x80 | ((cp >> 12) & 0x3F));
        buf[2] = char(0x80 | ((cp >> 6) & 0x3F));
        buf[3] = char(0x80 | (cp & 0x3F));
        len = 4;
    }
    out.append(buf, std::size_t(len));
}

}  // namespace qvl::text::detail
