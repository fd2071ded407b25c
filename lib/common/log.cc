#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace msd {
namespace {
std::mutex log_mutex;
std::string log_prefix = "msd";
std::atomic<int> current_level{static_cast<int>(LogLevel::info)};
}  // namespace

void set_log_prefix(const std::string& prefix) {
  std::lock_guard lock(log_mutex);
  log_prefix = prefix;
}
void set_log_level(LogLevel level) { current_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(current_level.load()); }

LogLevel parse_log_level(const std::string& name) {
  if (name == "debug") return LogLevel::debug;
  if (name == "info") return LogLevel::info;
  if (name == "warn") return LogLevel::warn;
  if (name == "error") return LogLevel::error;
  if (name == "quiet") return LogLevel::quiet;
  throw ConfigError("unknown log level '" + name + "' (expected debug, info, warn, error or quiet)");
}

void log_line(LogLevel level, const std::string& message) {
  static const char* names[] = {"debug", "info", "warning", "error", ""};
  std::lock_guard lock(log_mutex);
  if (level >= LogLevel::warn)
    std::fprintf(stderr, "[%s] %s: %s\n", log_prefix.c_str(), names[static_cast<int>(level)], message.c_str());
  else
    std::fprintf(stderr, "[%s] %s\n", log_prefix.c_str(), message.c_str());
  std::fflush(stderr);
}

}  // namespace msd
