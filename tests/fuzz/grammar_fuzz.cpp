// Fuzzes grammar/gbnf.h parse_gbnf on arbitrary text, then runs a matcher of every grammar that
// parses over a few bytes and one token mask of a small vocabulary: errors must name the
// problem; no input may crash, hang or grow without bound (grammar.h's limits).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace {

std::shared_ptr<const qvl::grammar::Vocab> small_vocab() {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, char(b));
    for (const char* s : {"ab", "\"}", "{\"", "\xC3\xA9", "\xE2\x82", "  ", "true", "null"})
        bytes.emplace_back(s);
    bytes.emplace_back();
    return std::make_shared<const qvl::grammar::Vocab>(bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const auto vocab = small_vocab();
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto g = qvl::grammar::parse_gbnf(text);
    if (!g.ok()) {
        if (g.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    qvl::grammar::Matcher m(std::make_shared<const qvl::grammar::Grammar>(std::move(g).value()),
                            vocab, {vocab->size() - 1});
    for (int step = 0; step < 8; ++step) {
        const auto mask = m.mask();
        std::int32_t pick = -1;
        for (std::int32_t id = 0; id < vocab->size() && pick < 0; ++id) {
            if (m.allowed(mask, (id * 37 + step) % vocab->size()))
                pick = (id * 37 + step) % vocab->size();
        }
        if (pick < 0) break;
        if (!m.accept(pick)) qvl::fuzz::fail("a token the mask allowed was refused");
        if (m.finished()) break;
    }
    return 0;
}
