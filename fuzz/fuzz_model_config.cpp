// Hugging Face config.json -> ModelConfig -> operator graph (inference and training).
#include "core/model_config.h"
#include "core/op_graph.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = tilecast::fuzz::write_input(data, size, ".json");
  tilecast::fuzz::expect_only_tilecast_errors([&] {
    const auto m = tilecast::load_model_config(path, "/nonexistent");
    tilecast::build_op_graph(m, 2, 16, tilecast::Mode::kTraining);
  });
  return 0;
}
