// Fuzzes model/tokenizer.h Tokenizer::encode with the real Qwen tokenizer (tests/data) on
// arbitrary bytes, invalid UTF-8 included. Properties: invalid UTF-8 is an error with a
// message, never a crash; ids are in range; pure ASCII text (NFC leaves it alone) decodes back
// to itself exactly when special tokens are kept; the streaming decoder agrees with decode().
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "text/tokenizer.h"

namespace {

const qvl::text::Tokenizer* g_tok = nullptr;

// RFC 3629 well-formedness (no overlongs, surrogates or code points past U+10FFFF), written
// here rather than taken from the tokenizer so that the property does not test itself.
bool valid_utf8(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        int len = 0;
        std::uint32_t cp = 0, min = 0;
        if (b < 0x80) {
            len = 1, cp = b;
        } else if ((b & 0xE0) == 0xC0) {
            len = 2, cp = b & 0x1Fu, min = 0x80;
        } else if ((b & 0xF0) == 0xE0) {
            len = 3, cp = b & 0x0Fu, min = 0x800;
        } else if ((b & 0xF8) == 0xF0) {
            len = 4, cp = b & 0x07u, min = 0x10000;
        } else {
            return false;
        }
        if (i + std::size_t(len) > s.size()) return false;
        for (int k = 1; k < len; ++k) {
            const auto c = static_cast<unsigned char>(s[i + std::size_t(k)]);
            if ((c & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (c & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += std::size_t(len);
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
    qvl::base::Result<qvl::text::Tokenizer> tok =
        qvl::text::Tokenizer::load(QVL_TEST_DATA_DIR "/tiny-qwen3vl");
    if (!tok.ok()) qvl::fuzz::fail("cannot load the test tokenizer: " + tok.status().message());
    g_tok = new qvl::text::Tokenizer(std::move(tok).value());
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    qvl::base::Result<std::vector<std::int32_t>> ids = g_tok->encode(text);
    const bool valid = valid_utf8(text);
    if (!ids.ok()) {
        if (ids.status().message().empty()) qvl::fuzz::fail("error without a message");
        // Invalid UTF-8 is the one input error; anything else is a safety net that fired.
        if (valid) qvl::fuzz::fail("valid UTF-8 refused: " + ids.status().message());
        return 0;
    }
    if (!valid) qvl::fuzz::fail("invalid UTF-8 encoded without an error");
    for (std::int32_t id : ids.value()) {
        if (id < 0 || id >= g_tok->vocab_size()) qvl::fuzz::fail("id out of range");
    }
    const std::string back = g_tok->decode(ids.value(), false);
    bool ascii = true;
    for (unsigned char c : text) ascii = ascii && c < 0x80;
    if (ascii && back != text) {
        qvl::fuzz::fail("ASCII text does not round-trip: '" + std::string(text) + "' -> '" + back +
                        "'");
    }
    qvl::text::StreamDecoder stream(*g_tok, true);
    std::string streamed;
    for (std::int32_t id : ids.value()) streamed += stream.push(id);
    streamed += stream.finish();
    if (streamed != g_tok->decode(ids.value(), true)) {
        qvl::fuzz::fail("StreamDecoder disagrees with decode()");
    }
    return 0;
}
