// Status and Result<T>: how bad input is reported. Every function that reads something from
// outside (files, images, configs, prompts, options) returns one of these; a message names the
// file, the tensor or key, and the numbers. Bugs use QVL_CHECK (check.h) instead.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace qvl::base {

enum class ErrorCode {
    kOk = 0,
    kInvalidArgument,    // a value out of its allowed range (options, config fields)
    kNotFound,           // a file, tensor or key that must exist does not
    kIo,                 // the operating system refused (open, read, mmap)
    kCorruptFile,        // bytes that do not follow their format
    kUnsupported,        // well-formed but outside what qvl implements
    kOutOfRange,         // does not fit a configured limit (context, pixels)
    kResourceExhausted,  // memory could not be had
    kInternal,           // a safety net; should not happen
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
  public:
    Status() = default;
    Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status ok_status() { return Status(); }
    bool ok() const { return code_ == ErrorCode::kOk; }
    ErrorCode code() const { return code_; }
    const std::string& message() const { return message_; }

    // Prepends context ("config.json: ") to the message; keeps the code.
    Status with_context(std::string_view context) const;

  private:
    ErrorCode code_ = ErrorCode::kOk;
    std::string message_;
};

template <class... Args>
Status error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
    return Status(code, fmt::format(format, std::forward<Args>(args)...));
}

template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
    Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

    bool ok() const { return std::holds_alternative<T>(v_); }
    Status status() const { return ok() ? Status() : std::get<Status>(v_); }
    T& value() & { return std::get<T>(v_); }
    const T& value() const& { return std::get<T>(v_); }
    T&& value() && { return std::get<T>(std::move(v_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }

  private:
    std::variant<T, Status> v_;
};

namespace detail {
inline Status to_status(const Status& s) { return s; }
template <class T>
Status to_status(const Result<T>& r) {
    return r.status();
}
}  // namespace detail

}  // namespace qvl::base

#define QVL_CONCAT_INNER(a, b) a##b
#define QVL_CONCAT(a, b) QVL_CONCAT_INNER(a, b)

// Returns the error of a Status- or Result-valued expression from the enclosing function.
#define QVL_TRY(expr)                                                                    \
    do {                                                                                 \
        auto&& qvl_try_value_ = (expr);                                                  \
        if (!qvl_try_value_.ok()) return ::qvl::base::detail::to_status(qvl_try_value_); \
    } while (0)

// QVL_ASSIGN_OR_RETURN(auto x, make_x()): binds the value or returns the error.
#define QVL_ASSIGN_OR_RETURN(decl, expr) \
    QVL_ASSIGN_OR_RETURN_IMPL(QVL_CONCAT(qvl_result_, __LINE__), decl, expr)
#define QVL_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
    auto tmp = (expr);                             \
    if (!tmp.ok()) return tmp.status();            \
    decl = std::move(tmp).value()
