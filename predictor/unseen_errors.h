#pragma once
// What a forecast on a GPU no network saw may be off by: each LLM-era family's leave-one-GPU-out
// error (docs/accuracy.md, "LLM-era kernels on a GPU the models never saw"), as measured by
// scripts/eval-llm-loo.sh and written next to the weights by `scripts/llm-loo-table.py OUT
// --write-errors <weights>/unseen_gpu_errors.json`. Each training GPU of the family was left out
// in turn, the family trained on the others and every row of the left-out GPU forecast from its
// spec: one cell per left-out GPU and op / dtype. A forecast's `basis` quotes the cells of its
// kernels' op / dtype where the GPU is unseen (docs/architecture.md, "What a forecast rests on").
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/kernel.h"
#include "trainer/weights_manifest.h"

namespace tilecast::predictor {

constexpr const char* kUnseenGpuErrorsFile = "unseen_gpu_errors.json";

// One op / dtype's cells: the GPUs left out in turn and the plausible-row MAPE (%) and median
// forecast / measured of each.
struct UnseenGpuError {
  std::string family;  // "gemm", ..., "memory_op"
  std::string key;     // eval-kernels' by_op_dtype key ("gemm/bf16"); memory ops: the op ("rmsnorm")
  std::vector<std::string> left_out;
  std::vector<double> mape_pct, bias;
  double mean_pct() const;
  double min_pct() const;
  double max_pct() const;
  // "gemm/bf16 23.0 % (11.6-35.6 % over 4 GPUs left out in turn)"
  std::string text() const;
};

class UnseenGpuErrors {
 public:
  UnseenGpuErrors() = default;
  // Reads `path` (ConfigError naming the file and field where it is malformed). A family whose
  // manifest entry was trained (memory_op: fitted) at another time or on other data than the
  // file records is left out: its figures describe an earlier training (`stale` names it).
  static UnseenGpuErrors load(const std::string& path, const trainer::WeightsManifest& manifest);
  // The cells of the query's op / dtype (memory ops: of its op, whatever the dtype); nullptr:
  // none (a family or dtype the file has no cell of, or a stale family).
  std::shared_ptr<const UnseenGpuError> find(const KernelQuery& q) const;
  const std::vector<std::string>& stale() const { return stale_; }
  bool empty() const { return by_key_.empty(); }

 private:
  std::map<std::string, std::shared_ptr<const UnseenGpuError>> by_key_;
  std::vector<std::string> stale_;
};

// The key find() looks a query up by: "<family>/<dtype>", memory ops their op's name.
std::string unseen_error_key(const KernelQuery& q);

}  // namespace tilecast::predictor
