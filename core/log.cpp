#include "core/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "core/error.h"

namespace tilecast {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kError: return "error";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kInfo: return "info";
    case LogLevel::kDebug: return "debug";
  }
  return "?";
}
}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }

LogLevel parse_log_level(const std::string& name) {
  for (auto l : {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug})
    if (name == level_name(l)) return l;
  throw ConfigError("--log-level: unknown level '" + name + "' (error, warn, info, debug)");
}

LogLine::~LogLine() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", std::localtime(&t));
  std::string line = std::string(buf) + " [" + level_name(level_) + "] " + os_.str() + "\n";
  std::fputs(line.c_str(), stderr);
}

}  // namespace tilecast
