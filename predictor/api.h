#pragma once
// One forecast request -> one result, shared by the CLI commands and the Python module so
// that `tilecast.predict(...)` returns exactly what `tilecast predict --format json` prints.
// Validation lives here: a bad combination is one ConfigError naming the option.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/gpu_spec.h"
#include "core/kernel.h"
#include "core/memory_model.h"
#include "core/op_graph.h"
#include "predictor/graph_predictor.h"
#include "predictor/kernel_predictor.h"

namespace tilecast::predictor {

// `predict-kernel`: a query from the op name, its shape string and the dtype options
// (empty dtype: bf16 for the LLM-era families, fp32 for NeuSight's).
struct KernelArgs {
  std::string op, shape, dtype, kv_dtype, routing = "balanced";
  int64_t window = 0, moe_tp = 1, moe_ep = 1;
};
KernelQuery build_kernel_query(const KernelArgs& a);
nlohmann::json kernel_forecast_json(const KernelQuery& q, const KernelPrediction& r, const GpuSpec& gpu,
                                    const KernelPredictor& kp);

// `gpus --format json`: one object per spec.
nlohmann::json gpu_json(const GpuSpec& s);

// `predict`.
struct PredictArgs {
  std::string model, gpu, mode = "inference";  // inference|training (inf|train)|prefill|decode|generate
  int64_t batch = 0;
  std::optional<int64_t> seq, context, gen;
  std::string dtype, kv_dtype;                 // serving; empty = the config's torch_dtype
  Parallelism par;
  bool fusion = false;
  std::string optimizer = "adamw";             // training: adamw | none
};
struct PredictResult {
  ModelForecast forecast;                      // prefill/decode/inference/training
  std::optional<GenerateForecast> generate;    // generate
  MemoryEstimate memory;
};
PredictResult run_predict(const PredictArgs& a, const GpuRegistry& reg, const KernelPredictor& kp,
                          const std::string& models_dir);
// The JSON `predict --format json` prints.
std::string predict_result_json(const PredictResult& r);

}  // namespace tilecast::predictor
