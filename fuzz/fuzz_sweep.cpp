// Collector sweep YAML: load, size (checked arithmetic) and the first configs' decoding.
#include "collector/sweep.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tilecast::fuzz::write_input(data, size, ".yaml");
  tilecast::fuzz::expect_only_tilecast_errors([&] {
    const auto s = tilecast::collector::load_sweep(path);
    const int64_t n = tilecast::collector::sweep_size(s);
    for (int64_t i = 0; i < n && i < 16; ++i) tilecast::collector::sweep_config(s, i);
    if (n > 0) tilecast::collector::sweep_config(s, n - 1);
    tilecast::collector::sweep_fingerprint(s);
  });
  return 0;
}
