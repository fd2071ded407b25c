// Line-oriented logging to stderr, prefixed with the role and rank of the
// process ("[loader 3] ..."), so interleaved output of many ranks stays legible.
#pragma once

#include <string>

#include "common/error.h"

namespace msd {

enum class LogLevel { debug = 0, info = 1, warn = 2, error = 3, quiet = 4 };

void set_log_prefix(const std::string& prefix);  // e.g. "loader 3"
void set_log_level(LogLevel level);
LogLevel log_level();
LogLevel parse_log_level(const std::string& name);  // throws ConfigError
void log_line(LogLevel level, const std::string& message);

template <typename... Parts>
void log_info(const Parts&... parts) {
  if (log_level() <= LogLevel::info) log_line(LogLevel::info, str(parts...));
}
template <typename... Parts>
void log_warn(const Parts&... parts) {
  if (log_level() <= LogLevel::warn) log_line(LogLevel::warn, str(parts...));
}
template <typename... Parts>
void log_error(const Parts&... parts) {
  log_line(LogLevel::error, str(parts...));
}
template <typename... Parts>
void log_debug(const Parts&... parts) {
  if (log_level() <= LogLevel::debug) log_line(LogLevel::debug, str(parts...));
}

}  // namespace msd
