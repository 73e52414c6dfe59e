#pragma once
// SIGINT/SIGTERM handling for long work: the first signal sets a flag that loops check
// between units of work (finish the current one, flush, exit 130); a second one kills.
namespace tilecast {
void install_interrupt_handler();
bool interrupted();
}  // namespace tilecast
