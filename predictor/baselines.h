#pragma once
// Published baselines re-run by tilecast's evaluation commands (eval-kernels, eval-models).
#include <map>
#include <string>
#include <utility>

#include "core/kernel.h"

namespace tilecast::predictor {

// Li et al. (NeuSight's MICRO baseline, `baselines/li_et_al/<family>.csv`): per GPU and kernel
// family, seconds = coef x X + intercept, X = 2BMNK FLOPs for bmm/linear and B x H x 4 x (3 for
// binary ops, 2 otherwise) bytes for vector ops. Devices match by normalize_gpu_key, so
// NeuSight's folder names ("NVIDIA_L4") and CUDA names ("NVIDIA L4") both find theirs.
class LiEtAlBaseline {
 public:
  explicit LiEtAlBaseline(const std::string& dir);  // ConfigError/DataError naming the file
  // ms (0 where the fitted line crosses zero for tiny kernels), or NaN when the device or the
  // op's family has no coefficients.
  double kernel_ms(const std::string& device, const KernelQuery& q) const;

 private:
  std::map<std::pair<std::string, Family>, std::pair<double, double>> coef_;  // (device, family) -> (coef, intercept)
};

}  // namespace tilecast::predictor
