#pragma once
// `tilecast eval-kernels`: forecast NeuSight-format rows from op, shape and GPU spec only,
// and compare with the measured latency and with the plain roofline.
#include <map>
#include <string>
#include <vector>

#include "core/gpu_spec.h"
#include "predictor/baselines.h"
#include "predictor/kernel_predictor.h"

namespace tilecast::predictor {

// APEs of one forecaster over rows: their mean over every row and over the plausible ones
// (rows that implausible_row calls physically impossible, measurement artefacts, are left out
// of the latter but counted in `rows`).
struct ApeTally {
  int64_t rows = 0, implausible_rows = 0;
  double ape_sum_pct = 0, plausible_ape_sum_pct = 0;
  double mape_pct() const { return rows ? ape_sum_pct / rows : 0; }
  double plausible_mape_pct() const {
    return rows > implausible_rows ? plausible_ape_sum_pct / double(rows - implausible_rows) : 0;
  }
  void add(double ape, bool plausible);
};

// The forecast's tally (the base), the plain roofline's MAPE, per-row APEs for percentiles,
// and the family's fitted roofline alone (`prior`; families with a prior, else empty).
struct ErrorStats : ApeTally {
  double roofline_ape_sum_pct = 0;
  std::vector<double> apes;    // per-row APE (%), for percentiles
  std::vector<double> ratios;  // per-row forecast / measured, for the signed bias
  ApeTally prior;
  double roofline_mape_pct() const { return rows ? roofline_ape_sum_pct / rows : 0; }
  double percentile_pct(double p) const;
  // Signed bias: the median forecast / measured (< 1: forecasts too fast); 0 without rows.
  double bias_median() const;
  // One row: its forecast, plain roofline, measured latency and the family's fitted roofline
  // alone (prior_ms <= 0: the family has none), all in ms (measured > 0).
  void add(double forecast_ms, double roofline_ms, double measured_ms, bool plausible = true, double prior_ms = 0);
};

struct KernelEvalReport {
  ErrorStats overall;
  // The headline split: rows on GPUs the row's family was trained on (the manifest's
  // training_gpus; held-out shapes at best) and rows on GPUs it never saw.
  ErrorStats training_gpus, unseen_gpus;
  std::map<std::string, ErrorStats> by_op;         // family name
  std::map<std::string, ErrorStats> by_device;     // CUDA device name
  std::map<std::string, ErrorStats> by_op_dtype;   // "gemm/bf16", "softmax/fp32", ...
  // The kernel library each row's forecast assumes on its GPU (kernel_library: the attention
  // and MoE families), "context_attention/triton", ...; families measured with one library have none.
  std::map<std::string, ErrorStats> by_library;
  // The library each row says it ran, as its file names it (aiconfigurator's kernel_source;
  // "vidur" and "vllm" for those sources' layer ops), "moe/sglang_fused_moe_triton", ...: where
  // it differs from by_library, rows of a library the forecast does not assume (the B200's
  // Triton MoE rows, forecast on TRT-LLM's path). Rows without one (NeuSight's) have none.
  std::map<std::string, ErrorStats> by_row_library;
  std::map<std::string, std::map<std::string, ErrorStats>> by_device_op;
  // SGLang rows of window 0 that measured each query attending to its own key alone
  // (resolve_sglang_window_zero), forecast as such; also counted in every group above.
  ErrorStats sglang_window_zero;
};

struct KernelEvalRow {
  std::string device, op;
  std::string shape;
  std::string dtype;  // the query's (fp32 for NeuSight's families)
  double measured_ms = 0, predicted_ms = 0, roofline_ms = 0;
  double prior_ms = 0;  // the family's fitted roofline alone (0: the family has none)
  double li_ms = -1;  // Li et al. re-run (eval_kernels' `li`); -1 when not given or no coefficients
};

// Reads every CSV, forecasts every row; throws DataError for bad rows or unknown devices.
// If `rows_out` is non-null, per-row results are appended there.
// `holdout_shapes_pct` > 0 scores only the rows train --holdout-shapes left out (shape_held_out),
// of the kernel library the GPU's spec implies (filter_spec_library), as training chose them.
KernelEvalReport eval_kernels(const std::vector<std::string>& csv_files,
                              const KernelPredictor& predictor, const GpuRegistry& gpus,
                              std::vector<KernelEvalRow>* rows_out = nullptr, bool quiet = false,
                              int holdout_shapes_pct = 0, const LiEtAlBaseline* li = nullptr);

std::string eval_report_json(const KernelEvalReport& r);
std::string eval_report_table(const KernelEvalReport& r);
// One line per group: section,group,rows,mape_pct,p50_ape_pct,p90_ape_pct,roofline_mape_pct,
// implausible_rows,plausible_mape_pct,bias_median.
std::string eval_report_csv(const KernelEvalReport& r);

}  // namespace tilecast::predictor
