#pragma once
// What a forecast may be off by, as measured: each LLM-era family's errors recorded next to the
// weights in forecast_errors.json by `scripts/llm-loo-table.py OUT --write-errors
// <weights>/forecast_errors.json [--heldout HELDOUT]`.
// - Leave one GPU out (scripts/eval-llm-loo.sh OUT; docs/accuracy.md, "LLM-era kernels on a GPU
//   the models never saw"): each training GPU of the family left out in turn, the family trained
//   on the others and every row of the left-out GPU forecast from its spec; one cell per left-out
//   GPU and op / dtype. Quoted where the forecast's GPU is unseen.
// - Held-out shapes (scripts/eval-llm-heldout.sh HELDOUT; "LLM-era kernels: held-out shapes"):
//   the family trained with a share of its shapes left out on every GPU, those rows scored per
//   training GPU and op / dtype. Quoted where the forecast's GPU is that training GPU.
// A forecast's `basis` quotes the cells of its kernels' op / dtype (docs/architecture.md, "What a
// forecast rests on").
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "trainer/weights_manifest.h"

namespace tilecast::predictor {

constexpr const char* kForecastErrorsFile = "forecast_errors.json";

// One op / dtype's leave-one-GPU-out cells: the GPUs left out in turn and the plausible-row MAPE
// (%) and median forecast / measured of each.
struct UnseenGpuError {
  std::string family;  // "gemm", ..., "memory_op"
  std::string key;     // eval-kernels' by_op_dtype key ("gemm/bf16"); memory ops: the op ("rmsnorm")
  std::vector<std::string> left_out;
  std::vector<double> mape_pct, bias;
  double mean_pct() const;
  double min_pct() const;
  double max_pct() const;
  // "gemm/bf16 22.9 % (11.6-35.6 % over 4 GPUs left out in turn)"
  std::string text() const;
};

// One training GPU's held-out shapes of an op / dtype: their plausible-row MAPE (%) and median
// forecast / measured, `pct` % of the family's shapes having been left out of its training.
struct HeldoutShapesError {
  std::string family, key, gpu;  // gpu: the CUDA device name the training rows carry
  int64_t rows = 0;
  double mape_pct = 0, bias = 1;
  int pct = 0;
  // "gemm/bf16 4.9 % (3494 rows)"
  std::string text() const;
};

class ForecastErrors {
 public:
  ForecastErrors() = default;
  // Reads `path` (ConfigError naming the file and field where it is malformed). A family whose
  // manifest entry was trained (memory_op: fitted) at another time or on other data than the
  // file records is left out: its figures describe an earlier training (`stale` names it).
  static ForecastErrors load(const std::string& path, const trainer::WeightsManifest& manifest);
  // The leave-one-GPU-out cells of the query's op / dtype (memory ops: of its op, whatever the
  // dtype); nullptr: none (a family or dtype the file has no cell of, or a stale family).
  std::shared_ptr<const UnseenGpuError> find(const KernelQuery& q) const;
  // The held-out shapes cell of the query's op / dtype on training GPU `cuda_name`; nullptr: none.
  std::shared_ptr<const HeldoutShapesError> find_heldout(const KernelQuery& q, const std::string& cuda_name) const;
  const std::vector<std::string>& stale() const { return stale_; }
  bool empty() const { return by_key_.empty() && heldout_.empty(); }

 private:
  std::map<std::string, std::shared_ptr<const UnseenGpuError>> by_key_;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const HeldoutShapesError>> heldout_;  // (gpu, key)
  std::vector<std::string> stale_;
};

// The key find() looks a query up by: "<family>/<dtype>", memory ops their op's name.
std::string forecast_error_key(const KernelQuery& q);

}  // namespace tilecast::predictor
