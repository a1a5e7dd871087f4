// Fuzzes grammar/gbnf.h parse_gbnf on arbitrary text, then runs a matcher of every grammar that
// parses over a few bytes and one token mask of a small vocabulary: errors must name the
// problem; no input may crash, hang or grow without bound (grammar.h's limits).
#include <algorithm>
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
    for (const char* s : {"ab", "\"}", "{\"", "\xC3\xA9", "\xE2\x82", "  ", "true", "null", "a b c",
                          "\xE6\x9D\xB1x", "x\"y", "\xF0\x9F\x98\x80 ", "ab\\n"})
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
    const auto grammar = std::make_shared<const qvl::grammar::Grammar>(std::move(g).value());
    qvl::grammar::Matcher m(grammar, vocab, {vocab->size() - 1});
    // The byte-by-byte walk is the reference for the plain-text shortcut; on small grammars
    // only, so that the second matcher does not double the time of the large ones.
    const bool compare = grammar->elems.size() <= 256;
    qvl::grammar::Matcher walked(grammar, vocab, {vocab->size() - 1});
    walked.use_plain_subtrees(false);
    for (int step = 0; step < 8; ++step) {
        const auto mask = m.mask();
        if (compare) {
            const auto want = walked.mask();
            if (!std::equal(mask.begin(), mask.end(), want.begin(), want.end()))
                qvl::fuzz::fail("the plain-text shortcut changed the mask");
        }
        std::int32_t pick = -1;
        for (std::int32_t id = 0; id < vocab->size() && pick < 0; ++id) {
            if (m.allowed(mask, (id * 37 + step) % vocab->size()))
                pick = (id * 37 + step) % vocab->size();
        }
        if (pick < 0) break;
        if (!m.accept(pick) || (compare && !walked.accept(pick)))
            qvl::fuzz::fail("a token the mask allowed was refused");
        if (m.finished()) break;
    }
    return 0;
}
