// Early return on an error for the programs' code, over the public qvl::Status and qvl::Result
// (the engine's own macros are internal).
#pragma once

#include <fmt/format.h>
#include <qvl/qvl.h>

#include <utility>

namespace qvl::app {

inline const Status& status_of(const Status& s) { return s; }
template <class T>
Status status_of(const Result<T>& r) {
    return r.status();
}

// A Status whose message is formatted like fmt::format.
template <class... Args>
Status error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
    return Status(code, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace qvl::app

// APP_TRY(expr): returns expr's Status when it is an error (expr: a Status or a Result).
#define APP_TRY(expr)                                                           \
    do {                                                                        \
        auto&& app_try_value_ = (expr);                                         \
        if (!app_try_value_.ok()) return ::qvl::app::status_of(app_try_value_); \
    } while (0)
