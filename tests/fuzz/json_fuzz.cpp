// Fuzzes io/json.h parse_json on arbitrary bytes (every config, index and header goes through it).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "io/json.h"

namespace {

// Walks the whole document so every node is read at least once.
std::size_t walk(const qvl::io::JsonValue& v, int depth) {
    if (depth > 100000) qvl::fuzz::fail("document deeper than its text");
    std::size_t n = 1;
    for (const qvl::io::JsonValue& item : v.items()) n += walk(item, depth + 1);
    for (const qvl::io::JsonValue::Member& m : v.members()) n += walk(m.second, depth + 1);
    return n;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    qvl::base::Result<qvl::io::JsonValue> v = qvl::io::parse_json(text, "fuzz.json");
    if (!v.ok()) {
        if (v.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    if (walk(v.value(), 0) > size + 1) qvl::fuzz::fail("more nodes than input bytes");
    return 0;
}
