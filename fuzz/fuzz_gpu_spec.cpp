// GPU specs: our YAML (configs/gpus) and NeuSight's device JSON; the first input byte picks.
#include "core/gpu_spec.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool json = data[0] & 1;
  const std::string path = tilecast::fuzz::write_input(data + 1, size - 1, json ? ".json" : ".yaml");
  tilecast::fuzz::expect_only_tilecast_errors([&] {
    if (json) tilecast::load_neusight_device_json(path);
    else tilecast::gpu_spec_to_yaml(tilecast::load_gpu_yaml(path));
  });
  return 0;
}
