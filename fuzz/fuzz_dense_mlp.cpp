// Torch-free network files (.tcmlp, predictor/dense_mlp.h): DenseMlp::parse, then a forward
// pass of one row through whatever it accepted.
#include <vector>

#include "fuzz/fuzz_util.h"
#include "predictor/dense_mlp.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  tilecast::fuzz::expect_only_tilecast_errors([&] {
    const auto m = tilecast::predictor::DenseMlp::parse(bytes, "fuzz.tcmlp");
    if (m.inputs() * static_cast<int64_t>(m.layers.size()) > (1 << 20)) return;  // bounded work per input
    std::vector<float> x(m.inputs(), 1.0f);
    float out = 0;
    m.forward(x.data(), 1, &out);
  });
  return 0;
}
