// Fuzzes model/tokenizer.h Tokenizer::load on an arbitrary tokenizer.json (seeded with a cut-down
// Qwen tokenizer). A tokenizer that loads must encode and decode a mixed text without failing
// on valid UTF-8 and decode every id it defines.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "text/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static qvl::fuzz::ScratchDir dir;
    dir.write_file("tokenizer.json", data, size);
    qvl::base::Result<qvl::text::Tokenizer> tok = qvl::text::Tokenizer::load(dir.path());
    if (!tok.ok()) {
        if (tok.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    constexpr std::string_view kText = "Hello <|im_start|>user\n world 123 \xc3\xbc\xe6\x97\xa5 !!";
    // kText is valid UTF-8: the only errors encode() can give it are its kInternal safety nets
    // (NFC or the pre-tokenizer regex failing), which must not happen on a tokenizer that loaded.
    qvl::base::Result<std::vector<std::int32_t>> ids = tok->encode(kText);
    if (!ids.ok()) qvl::fuzz::fail("a loaded tokenizer cannot encode: " + ids.status().message());
    for (std::int32_t id : ids.value()) {
        if (id < 0 || id >= tok->vocab_size()) qvl::fuzz::fail("encode gave an id out of range");
    }
    (void)tok->decode(ids.value(), false);
    const int n = tok->vocab_size();
    for (std::int32_t id = 0; id < n && id < 4096; ++id) (void)tok->token_bytes(id);
    return 0;
}
