// Kernel CSVs (NeuSight's layout, the collector's columns): read_kernel_csv.
#include "core/kernel_dataset.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tilecast::fuzz::write_input(data, size, ".csv");
  tilecast::fuzz::expect_only_tilecast_errors([&] { tilecast::read_kernel_csv(path); });
  return 0;
}
