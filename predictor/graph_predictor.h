#pragma once
// Whole-model forecasts: cost every operator of an OpGraph on one GPU.
#include <string>
#include <vector>

#include "core/gpu_spec.h"
#include "core/op_graph.h"
#include "predictor/kernel_predictor.h"

namespace tilecast::predictor {

struct OpForecast {
  std::string name, kind;
  int64_t count = 1;
  double fw_ms = 0, bw_ms = 0, acc_ms = 0;  // one execution
};

struct ModelForecast {
  std::string model, gpu;
  int64_t batch = 0, seq = 0;
  Mode mode = Mode::kInference;
  bool fused = false;
  double forward_ms = 0;
  double backward_ms = 0;   // backward kernels + gradient accumulation (what loss.backward() runs)
  double optimizer_ms = 0;  // AdamW step, reported apart (not in total_ms)
  double communication_ms = 0;  // multi-GPU: time in collectives on the critical path
  double total_ms = 0;      // forward + backward (+ exposed communication, pipeline bubbles)
  Parallelism par;
  std::vector<OpForecast> ops;
};

// Identical kernels are forecast once; all kernels of a family go through one batched MLP call.
ModelForecast forecast_model(const OpGraph& g, const GpuSpec& gpu, const KernelPredictor& kp);

// Ring all-reduce of `bytes` over `group` GPUs: 2 (n-1)/n * bytes at 80 % of the per-direction
// interconnect bandwidth, plus 5 us per ring step. Throws ConfigError if the spec has no
// interconnect_gbps.
double all_reduce_ms(double bytes, int64_t group, const GpuSpec& gpu);
double send_recv_ms(double bytes, const GpuSpec& gpu);

// AdamW (PyTorch's foreach implementation): a memory-bound pass over parameters, gradients
// and both moments; 1 GB = 1e9 bytes. Seconds -> ms.
double adamw_step_ms(double parameters, const GpuSpec& gpu);

std::string forecast_json(const ModelForecast& f);
std::string forecast_csv(const ModelForecast& f);
std::string forecast_table(const ModelForecast& f, int top_ops = 10);

}  // namespace tilecast::predictor
