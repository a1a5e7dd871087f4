// Session internals shared by its source files.
#pragma once

#include <exception>

#include "base/status.h"

namespace qvl::runtime::session_detail {

// The engine neither throws nor catches, except here at the public boundary: a stray
// bad_alloc from a std container becomes a Status instead of a crash.
template <class Fn>
base::Status guarded(const char* what, Fn&& fn) {
    try {
        return fn();
    } catch (const std::exception& e) {
        return base::error(base::ErrorCode::kResourceExhausted, "{}: {}", what, e.what());
    }
}

}  // namespace qvl::runtime::session_detail
