// Fuzzes grammar/json_schema.h on arbitrary text: a schema either compiles to a grammar that
// parses, or is refused with an error that names the problem; nothing crashes or grows without
// bound (deeply nested schemas, huge enums, self-references).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto gbnf = qvl::grammar::json_schema_to_gbnf(text);
    if (!gbnf.ok()) {
        if (gbnf.status().message().empty()) qvl::fuzz::fail("error without a message");
        return 0;
    }
    auto g = qvl::grammar::parse_gbnf(gbnf.value());
    // The compiler's own output must parse, except where it meets the size limits.
    if (!g.ok() && g.status().message().find("too large") == std::string::npos &&
        g.status().message().find("repetition") == std::string::npos) {
        qvl::fuzz::fail("a compiled schema did not parse");
    }
    return 0;
}
