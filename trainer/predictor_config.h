#pragma once
// Hyper-parameters of one family's MLP (configs/predictors/<family>.yaml).
#include <cstdint>
#include <string>
#include <vector>

#include "core/op_kind.h"

namespace tilecast::trainer {

struct PredictorConfig {
  Family family = Family::kBmm;
  int num_layers = 8;        // Linear layers, ReLU between them
  int hidden_size = 512;
  double lr = 1e-3;          // AdamW peak learning rate
  double weight_decay = 0.01;
  std::string lr_schedule = "cosine";  // "constant" | "cosine" (to lr * 0.01 at the last epoch)
  int batch_size = 128;
  int val_batch_size = 4096;
  int epochs = 100;
  double val_fraction = 0.1;  // random rows of the training GPUs held out for checkpointing
  uint64_t seed = 0;
  int64_t max_rows = 0;       // 0 = all rows; else a seeded subsample (for smoke runs)
  int ensemble = 1;           // members trained with seeds seed, seed+1, ...; forecasts average log-latency
  // Latency = max(bound, floor) x exp(o), the floor fitted by `train` from the training rows
  // (launch_floor_us below) instead of 0: a per-launch floor the network need not learn.
  bool launch_floor = false;
  // Latency = fitted roofline x exp(o): `train` fits a per-launch floor and the achieved
  // fractions of the compute peak and of DRAM bandwidth on the training rows (FittedRoofline,
  // core/kernel.h), shared by every GPU, and the network learns only what is left.
  bool prior = false;
  // Units of the prior's floor and per-wave cost: "us" (microseconds, the same on every GPU)
  // or "cycles" (thousands of SM clock cycles: longer on a slower-clocked GPU).
  std::string prior_floor = "us";
  // The prior's DRAM efficiency at most the largest of the training GPUs' median efficiencies
  // over their rows whose bytes exceed 4x their L2 (bytes the cache cannot serve); else up to
  // 1. Tried for decode in leave-one-GPU-out, not bundled (docs/accuracy.md).
  bool prior_cap_memory = false;
  // Fit, per kernel library of the training rows (kernel_library: e.g. FlashAttention on the A100
  // and L40S, TRT-LLM's on the B200), a cost per CTA in nanoseconds beside the shared fitted
  // roofline (FittedRoofline::cta_ns; the manifest's library_cta_ns). It applies where the
  // fitted roofline forecasts alone (a GPU outside network_gpus) and the spec's library has one;
  // the networks' base stays the shared fit. Decode (docs/accuracy.md).
  bool prior_cta_by_library = false;
  // Fit, likewise per kernel library, a rate of loads per SM in bytes per SM clock cycle
  // (FittedRoofline::sm_bytes_per_cycle; the manifest's library_sm_bytes_per_cycle), fitted in
  // turn with the cost per CTA when prior_cta_by_library is set too, and applied where that is.
  bool prior_sm_rate_by_library = false;
  // Fit, likewise per kernel library, its own per-launch floor in thousands of SM clock cycles
  // (the manifest's library_floor_kcycles), which replaces the shared floor where the fitted
  // roofline forecasts alone and the GPU's library has one: a library's fixed cost follows the
  // clock of the GPU that runs it; a library no training GPU ran keeps the shared floor.
  bool prior_floor_by_library = false;
  // Fit, per kernel library of the training rows with at least kMinLibraryRows of them
  // (trainer/train.h, rows_by_library), a fitted roofline of its own (floor, cost per wave, both
  // efficiencies; the manifest's library_prior), which is the networks' base for every row and
  // query in that library, in training and forecasting alike: the networks learn what is left
  // after each library's own efficiency. A library without one (too few of its rows in
  // training) takes the shared fit. Prefill (docs/accuracy.md).
  bool prior_base_by_library = false;
  // Where the network's correction of the prior applies: "all" GPUs, or only the GPUs it was
  // "trained" on (any other GPU gets the fitted roofline alone), for families whose correction
  // was measured not to carry over to a GPU left out of training (leave-one-GPU-out); "twins":
  // the trained GPUs and their twins (gpu_twins, core/gpu_spec.h: the same die and memory).
  std::string network_gpus = "all";
  // On a GPU outside network_gpus (neither trained on nor, with twins, a twin of a training
  // GPU): the forecast's weight on the fitted roofline in log space, the network's own forecast
  // taking the rest. 1 (the default): the fitted roofline alone; 0.25: fitted^0.25 x
  // network^0.75, a network that extrapolates shrunk toward the physics (tried for NeuSight's
  // bmm and linear, not bundled: better kernel rows, worse whole models in leave-one-GPU-out,
  // docs/accuracy.md). Needs network_gpus other than all. Where the fitted roofline is also
  // the network's base (prior), a weight below 1 is scaled per kernel by the share of the fitted
  // forecast beyond its fixed costs, which the network corrects (blend_weight,
  // predictor/kernel_predictor.cpp).
  double unseen_prior_weight = 1.0;
  // moe only: on a GPU outside network_gpus, the weight in log space of the layer read as two
  // stacked GEMMs forecast by the gemm family (gate_up: tokens / experts hit rows x hidden x
  // hit x 2 x inter / tp; down: the same rows x inter / tp x hit x hidden; moe_gemm_composite,
  // core/kernel.h), the network + fitted roofline blend taking the rest. 0 (the default): none.
  // Chosen by leave-one-GPU-out (docs/accuracy.md, "A fused MoE layer as two stacked GEMMs").
  double gemm_composite_weight = 0;
  // Features the network does not see (their column is 0 in training and forecasting): e.g.
  // the absolute times, which place every row on its own GPU's scale, so that the network's
  // correction of the prior depends on the shape and the launch only.
  std::vector<std::string> ignore_features;
  // memory_op only (a fitted physics model, no network; its file takes no other field): the
  // share of a GPU's L2 whose bytes cost no DRAM time (MemoryOpCoeffs, core/kernel.h).
  double l2_resident_fraction = 0;
  std::string origin;

  // Whether `train` fits the family's roofline: as the network's base (prior) or as the
  // forecast on GPUs outside network_gpus.
  bool fits_roofline() const { return prior || network_gpus != "all"; }
};

// The first rule the prior-related fields break, alone (a value outside its set or range) or
// together (prior_floor without a fitted roofline, unseen_prior_weight without network_gpus,
// ...), as "field 'x': why"; empty when none. The config loader and the weights manifest
// reader both check it.
std::string config_conflict(const PredictorConfig& c);

// Reads a YAML file; unknown keys or out-of-range values throw ConfigError naming the field.
PredictorConfig load_predictor_config(const std::string& path);
std::string predictor_config_to_yaml(const PredictorConfig& c);

}  // namespace tilecast::trainer
