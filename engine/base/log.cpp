#include "base/log.h"

#include <atomic>
#include <cstdio>

namespace qvl::base {
namespace {

std::atomic<LogLevel> g_level{LogLevel::kWarning};
std::atomic<LogSink> g_sink{nullptr};

void stderr_sink(LogLevel level, std::string_view message) {
    static const char* const kNames[] = {"debug", "info", "warning", "error", ""};
    std::fprintf(stderr, "qvl: %s: %.*s\n", kNames[int(level)], int(message.size()),
                 message.data());
}

}  // namespace

void set_log_level(LogLevel level) { g_level.store(level); }
LogLevel log_level() { return g_level.load(); }
void set_log_sink(LogSink sink) { g_sink.store(sink); }

void log_message(LogLevel level, std::string_view message) {
    if (level < log_level()) return;
    LogSink sink = g_sink.load();
    (sink ? sink : stderr_sink)(level, message);
}

}  // namespace qvl::base
