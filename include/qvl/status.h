// qvl's errors: a Status names the file or value and the problem, a Result<T> holds a value or
// the Status saying why there is none. Part of the public API (included by qvl/qvl.h; standard
// library only).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace qvl {

// The kinds of failure (the same values as the engine's own).
enum class ErrorCode {
    kOk = 0,
    kInvalidArgument,    // a value out of its allowed range
    kNotFound,           // a file, tensor or key that must exist does not
    kIo,                 // the operating system refused (open, read, mmap)
    kCorruptFile,        // bytes that do not follow their format
    kUnsupported,        // well-formed but outside what qvl implements
    kOutOfRange,         // does not fit a configured limit (context, pixels, image budget)
    kResourceExhausted,  // memory could not be had
    kInternal,           // a safety net; should not happen
};

class [[nodiscard]] Status {
  public:
    Status() = default;
    Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
    bool ok() const { return code_ == ErrorCode::kOk; }
    ErrorCode code() const { return code_; }
    const std::string& message() const { return message_; }

  private:
    ErrorCode code_ = ErrorCode::kOk;
    std::string message_;
};

// A value or the Status saying why there is none. value() on an error is a bug.
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

  private:
    std::variant<T, Status> v_;
};

}  // namespace qvl
