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
    if (!ids.ok()) {
        if (ids.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
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
