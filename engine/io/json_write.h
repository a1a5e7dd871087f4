// Writing JSON text (the server's responses, qvl-run's --json and --batch output, safetensors
// headers): string quoting (always valid UTF-8 out, whatever comes in) and numbers that JSON can
// hold. The documents are small and built with fmt around these, so a document model for output
// would only add allocations.
#pragma once

#include <string>
#include <string_view>

namespace qvl::io {

// `s` as a quoted JSON string. Control characters become \u escapes; bytes that are not valid
// UTF-8 become U+FFFD, so an error message quoting a client's bytes is still valid JSON.
std::string json_quote(std::string_view s);

// A finite double as JSON (NaN and infinities, which JSON cannot hold, become 0).
std::string json_number(double v);

}  // namespace qvl::io
