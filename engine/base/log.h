// Levelled logging to a replaceable sink (stderr by default). The engine never printf()s.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace qvl::base {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kSilent = 4 };

using LogSink = void (*)(LogLevel level, std::string_view message);

void set_log_level(LogLevel level);
LogLevel log_level();
void set_log_sink(LogSink sink);  // nullptr restores stderr
void log_message(LogLevel level, std::string_view message);

template <class... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
    if (level < log_level()) return;
    log_message(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace qvl::base
