#pragma once
// Progress reporting on stderr: a redrawn bar on a terminal, a log line every 10% otherwise.
#include <chrono>
#include <cstdint>
#include <string>

namespace tilecast {

class ProgressBar {
 public:
  // `log_every_tick`: without a terminal, log every tick instead of every 10 % (training
  // epochs, where each line carries the epoch's metrics).
  ProgressBar(int64_t total, std::string label, bool quiet = false, bool log_every_tick = false);
  // Advances by n items; `note` is appended (e.g. "val_mape=12.3%").
  void tick(int64_t n = 1, const std::string& note = "");
  void finish(const std::string& note = "");

 private:
  void draw(const std::string& note, bool force);
  int64_t total_, done_ = 0;
  std::string label_;
  bool quiet_, tty_, every_tick_;
  int last_decile_ = -1;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace tilecast
