#pragma once
// `tilecast eval-models`: forecast every end-to-end label of NeuSight's layout
// (<GPU>/<model>-<inf|train>-<seq>-<batch>[-fusion].json) and compare with the label and
// with NeuSight's published error for the same cell.
#include <string>
#include <vector>

#include "core/gpu_spec.h"
#include "predictor/baselines.h"
#include "predictor/kernel_predictor.h"

namespace tilecast::predictor {

struct ModelEvalRow {
  std::string device_dir;  // label folder, e.g. "NVIDIA_L4"
  std::string gpu;         // our spec name
  std::string model;       // NeuSight's model name, e.g. "gpt2_large"
  std::string mode;        // "inf" | "train"
  std::string option;      // "" | "fusion"
  int64_t seq = 0, batch = 0;
  double label_ms = 0, predicted_ms = 0, error_pct = 0;
  double neusight_error_pct = -1;  // published; < 0 when absent
  // Baselines re-run on the same graph (single-GPU and DP rows; -1 when not available): the
  // plain roofline of every kernel, and Li et al. from its published per-GPU coefficients.
  double roofline_ms = -1, li_ms = -1;
  // Training steps timed in parts (the label JSON's fw_latency / bwall_latency; 0 = not timed)
  // beside the forecast's forward and backward (with gradient accumulation).
  double label_fw_ms = 0, label_bw_ms = 0, forecast_fw_ms = 0, forecast_bw_ms = 0;
  // The label's backward / forward ratio over the same ratio of its own per-node CSV (every
  // node of one layer timed alone: backward + accumulation over forward); -1 when either is
  // missing. Far from 1, the two timings of the same step disagree (see phase_split).
  double phase_ratio_vs_nodes = -1;
};

// A training label's forward/backward split checked against its per-node timings:
// "consistent" (phase_ratio_vs_nodes within [kPhaseRatioLo, kPhaseRatioHi]), "inconsistent",
// "unchecked" (split timed, no per-node CSV) or "" (no split: inference, parallel runs).
inline constexpr double kPhaseRatioLo = 0.8, kPhaseRatioHi = 1.25;
std::string phase_split(const ModelEvalRow& r);


// Per-operator check against a label CSV (one layer, each node timed in isolation): sums
// per op kind of the label's fw+bw+acc latencies vs. our one-layer forecast of the same kind.
struct PerOpRow {
  std::string gpu, model, mode, kind;
  int64_t seq = 0, batch = 0;
  double label_ms = 0, forecast_ms = 0;
};

struct ModelEvalResult {
  std::vector<ModelEvalRow> rows;
  std::vector<PerOpRow> per_op;
  std::vector<std::string> skipped;  // files not evaluated, with the reason
};

// `published_summary` may be empty (no NeuSight column); `opgraphs_dir` (NeuSight's parsed
// graphs, to name the label CSVs' nodes) may be empty (no per-op check). Throws on
// malformed labels.
ModelEvalResult eval_models(const std::string& labels_dir, const std::string& models_dir,
                            const std::string& published_summary, const std::string& opgraphs_dir,
                            const GpuRegistry& gpus, const KernelPredictor& kp, double host_gap_us = 0,
                            const LiEtAlBaseline* li = nullptr);
std::string per_op_table(const ModelEvalResult& r);

std::string model_eval_table(const ModelEvalResult& r);  // rows + means per GPU and mode
std::string model_eval_json(const ModelEvalResult& r);
std::string model_eval_csv(const ModelEvalResult& r);
// The layout of NeuSight's nvidia_inf.csv / nvidia_train.csv: per GPU, per model and batch.
std::string neusight_layout_tables(const ModelEvalResult& r);

}  // namespace tilecast::predictor
