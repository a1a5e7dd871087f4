// Standard base64 (RFC 4648, "+/" alphabet) for data: URIs. Strict: any byte outside the
// alphabet (whitespace included) is an error naming its offset, so a truncated or mangled image
// is reported as such instead of decoding to garbage that the image decoder then rejects.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace qvl::serve {

// Decodes `text`; padding ('=') is optional but, when present, must end the text. Errors
// (kInvalidArgument) say what is wrong and where, e.g. "invalid base64 character '%' at offset 12".
Result<std::vector<std::uint8_t>> decode_base64(std::string_view text);

}  // namespace qvl::serve
