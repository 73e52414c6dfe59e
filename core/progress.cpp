#include "core/progress.h"

#include <unistd.h>

#include <cstdio>

#include "core/log.h"

namespace tilecast {

ProgressBar::ProgressBar(int64_t total, std::string label, bool quiet, bool log_every_tick)
    : total_(total < 1 ? 1 : total),
      label_(std::move(label)),
      quiet_(quiet),
      tty_(isatty(fileno(stderr)) != 0),
      every_tick_(log_every_tick),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - std::chrono::seconds(1)) {}

void ProgressBar::tick(int64_t n, const std::string& note) {
  done_ += n;
  draw(note, false);
}

void ProgressBar::finish(const std::string& note) {
  done_ = total_;
  draw(note, true);
  if (tty_ && !quiet_) std::fputc('\n', stderr);
}

void ProgressBar::draw(const std::string& note, bool force) {
  if (quiet_) return;
  auto now = std::chrono::steady_clock::now();
  double frac = static_cast<double>(done_) / static_cast<double>(total_);
  double elapsed_s = std::chrono::duration<double>(now - start_).count();
  double eta_s = frac > 0 ? elapsed_s * (1 - frac) / frac : 0;
  if (tty_) {
    if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    const int width = 24;
    int filled = static_cast<int>(frac * width);
    std::string bar(filled, '#');
    bar.resize(width, ' ');
    std::fprintf(stderr, "\r%s [%s] %lld/%lld %.1f%% ETA %dm%02ds %s", label_.c_str(), bar.c_str(),
                 static_cast<long long>(done_), static_cast<long long>(total_), 100 * frac,
                 static_cast<int>(eta_s) / 60, static_cast<int>(eta_s) % 60, note.c_str());
    std::fflush(stderr);
  } else {
    int decile = every_tick_ ? static_cast<int>(done_) : static_cast<int>(frac * 10);
    if (decile == last_decile_) return;
    last_decile_ = decile;
    TC_LOG(Info) << label_ << " " << done_ << "/" << total_ << " (" << static_cast<int>(100 * frac)
                 << "%, " << static_cast<int>(elapsed_s) << "s elapsed) " << note;
  }
}

}  // namespace tilecast
