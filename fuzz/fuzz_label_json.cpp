// NeuSight end-to-end label JSON (e2e_latency, fw_latency, bwall_latency).
#include "core/config_io.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tilecast::fuzz::write_input(data, size, ".json");
  tilecast::fuzz::expect_only_tilecast_errors([&] { tilecast::read_end_to_end_label(path); });
  return 0;
}
