#include "base/status.h"

namespace qvl::base {

const char* error_code_name(ErrorCode code) {
    switch (code) {
        case ErrorCode::kOk:
            return "ok";
        case ErrorCode::kInvalidArgument:
            return "invalid argument";
        case ErrorCode::kNotFound:
            return "not found";
        case ErrorCode::kIo:
            return "i/o error";
        case ErrorCode::kCorruptFile:
            return "corrupt file";
        case ErrorCode::kUnsupported:
            return "unsupported";
        case ErrorCode::kOutOfRange:
            return "out of range";
        case ErrorCode::kResourceExhausted:
            return "resource exhausted";
        case ErrorCode::kInternal:
            return "internal error";
    }
    return "unknown";
}

Status Status::with_context(std::string_view context) const {
    if (ok()) return *this;
    return Status(code_, std::string(context) + message_);
}

}  // namespace qvl::base
