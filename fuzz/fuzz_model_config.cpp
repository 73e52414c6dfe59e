// Hugging Face config.json -> ModelConfig -> operator graphs: eager training, and for the decoder
// families the serving graphs (prefill, a prompt chunk after a cached prefix beside decodes,
// decode), the mixed-precision training graph and Hugging Face's eager graphs, each built on its
// own (a refusal of one is not a refusal of the others).
#include "core/model_config.h"
#include "core/op_graph.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tilecast;
  const std::string path = fuzz::write_input(data, size, ".json");
  fuzz::expect_only_tilecast_errors([&] {
    const auto m = load_model_config(path, "/nonexistent");
    fuzz::expect_only_tilecast_errors([&] { build_op_graph(m, 2, 16, Mode::kTraining); });
    if (!is_llm_family(m.model_type)) return;
    fuzz::expect_only_tilecast_errors(
        [&] { build_serving_graph(m, Mode::kPrefill, 2, 40, DType::kBf16, DType::kBf16, 1); });
    fuzz::expect_only_tilecast_errors(
        [&] { build_serving_graph(m, Mode::kDecode, 3, 40, DType::kBf16, DType::kBf16, 1); });
    fuzz::expect_only_tilecast_errors([&] {
      ServingStep step;
      step.prefill = {{1, 20, 30}};
      step.decode_seqs = 2;
      step.decode_context = 50;
      build_serving_step_graph(m, step, DType::kBf16, DType::kBf16, 1);
    });
    fuzz::expect_only_tilecast_errors([&] { build_llm_training_graph(m, 2, 16, DType::kBf16, {}); });
    // Hugging Face's eager model (--hf-eager): refused for what it does not build, never a crash.
    fuzz::expect_only_tilecast_errors([&] { build_llm_training_graph(m, 2, 16, DType::kBf16, {}, false, true); });
    fuzz::expect_only_tilecast_errors([&] { build_hf_eager_prefill_graph(m, 2, 16, DType::kBf16); });
  });
  return 0;
}
