#pragma once
// Minimal leveled logger to stderr (stdout carries data only).
#include <sstream>
#include <string>

namespace tilecast {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
// Parses "error|warn|info|debug"; throws ConfigError otherwise.
LogLevel parse_log_level(const std::string& name);

class LogLine {
 public:
  explicit LogLine(LogLevel level) : level_(level) {}
  ~LogLine();
  template <typename T>
  LogLine& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  LogLevel level_;
  std::ostringstream os_;
};

}  // namespace tilecast

#define TC_LOG(LEVEL)                                                      \
  if (::tilecast::LogLevel::k##LEVEL > ::tilecast::log_level()) {         \
  } else                                                                   \
    ::tilecast::LogLine(::tilecast::LogLevel::k##LEVEL)
