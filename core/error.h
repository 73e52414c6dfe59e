#pragma once
// Exception hierarchy. Only cli/main.cpp catches; it prints one line and maps to an exit code.
#include <stdexcept>
#include <string>

namespace tilecast {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Bad configuration or usage (exit 1).
struct ConfigError : Error {
  using Error::Error;
};
// Bad input data: file (+ line for CSV) named in the message (exit 1).
struct DataError : Error {
  using Error::Error;
};
// Feature not compiled in (exit 2).
struct NotBuiltError : Error {
  using Error::Error;
};
// Runtime / device failure (exit 3).
struct RuntimeError : Error {
  using Error::Error;
};
// Broken internal invariant (a bug), raised by TC_CHECK.
struct InternalError : Error {
  using Error::Error;
};

// "file:line: message" helpers keep error lines uniform.
std::string where(const std::string& file, long line = -1);
// A value as an error line names it: printf's %g (1.5, -3, 1e+06, nan), not std::to_string's
// six decimals.
std::string g_text(double v);

}  // namespace tilecast

#define TC_CHECK(cond, msg)                                                                  \
  do {                                                                                       \
    if (!(cond))                                                                             \
      throw ::tilecast::InternalError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                      ": check failed: " #cond ": " + (msg));                \
  } while (0)
