#include "core/interrupt.h"

#include <csignal>

namespace tilecast {
namespace {
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_signal(int sig) {
  if (g_interrupted) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
  g_interrupted = 1;
}
}  // namespace

void install_interrupt_handler() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}
bool interrupted() { return g_interrupted != 0; }

}  // namespace tilecast
