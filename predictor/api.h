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
#include "core/model_config.h"
#include "core/op_graph.h"
#include "predictor/graph_predictor.h"
#include "predictor/kernel_predictor.h"

namespace tilecast::predictor {

// `predict-kernel`: a query from the op name, its shape string and the dtype options
// (empty dtype: bf16 for the LLM-era families, fp32 for NeuSight's).
struct KernelArgs {
  std::string op, shape, dtype, kv_dtype, routing = "balanced";
  int64_t window = 0, moe_tp = 1, moe_ep = 1;
  int64_t prefix = 0;  // attention_prefill: prompt tokens already cached before this chunk
  int64_t weight_group = 0;  // moe, int4: elements per weight scale (0: the modelled kernels' 128)
  bool sustained = false;    // inside a sustained load (KernelQuery::sustained), not alone
};
KernelQuery build_kernel_query(const KernelArgs& a);
nlohmann::json kernel_forecast_json(const KernelQuery& q, const KernelPrediction& r, const GpuSpec& gpu,
                                    const KernelPredictor& kp);

// `gpus --format json`: one object per spec.
nlohmann::json gpu_json(const GpuSpec& s);
// Every GPU of `reg` as gpu_json gives it, with `training`: for each kernel family of the set
// that forecasts it (the AMD set's for an AMD GPU), its standing against the family's training
// GPUs, "training", "twin" or "unseen" (`tilecast gpus --format json`, Python's gpus()).
nlohmann::json gpus_json(const GpuRegistry& reg, const KernelPredictor& kp);
// The family groups a GPU is a training GPU of, "~" after one it is only a twin of a training
// GPU of: "fp32" (NeuSight's five FP32 families), "gemm", "prefill", "decode", "moe", "memop";
// "-" for none (`tilecast gpus`' column).
std::string training_summary(const GpuSpec& gpu, const KernelPredictor& kp);
// `tilecast models --format json`: every bundled config of `models_dir`, with the sizes a
// forecast reads (ffn: an expert's width for MoE models). ConfigError for a folder without
// configs, or a bad config (its one line).
nlohmann::json models_json(const std::string& models_dir);

// "inf"/"train" (NeuSight's spelling) -> inference/training; anything but inference,
// training, prefill, decode or generate is a ConfigError.
std::string canonical_mode(const std::string& mode);
bool is_serving_mode(const std::string& mode);  // prefill, decode, generate
// "a,b,c" -> {"a", "b", "c"}; an empty item is a ConfigError naming `flag`.
std::vector<std::string> split_list(const std::string& flag, const std::string& value);
// --optimizer: adamw or none.
void check_optimizer(const std::string& value);
// --routing of predict-kernel, the serving modes and compare: balanced (0) or power_law_<a> (a);
// ConfigError naming the flag otherwise.
double routing_flag(const std::string& value);
// A dtype option's value; ConfigError "<flag>: unknown dtype ..." otherwise.
DType dtype_flag(const std::string& flag, const std::string& value);
// --dtype of the eager modes (empty: fp32): inference takes fp32; training fp32 (eager, NeuSight's
// setting) or bf16/fp16 (mixed precision, build_llm_training_graph). ConfigError naming the
// flag otherwise.
DType eager_dtype(const std::string& mode, const std::string& dtype);
// --recompute: none (false) or full (true); ConfigError otherwise.
bool recompute_flag(const std::string& value);
// --train-tokens: 0 (not given) or in [1, 1e16]; ConfigError otherwise.
void check_train_tokens(double tokens);
// Serving dtypes: `dtype` (empty: the dtype the config's quantization_config implies, else
// its torch_dtype, else bf16) and the KV cache
// (`kv_dtype`, empty: bf16 under FP8 GEMMs, else the GEMM dtype).
struct ServingDtypes {
  DType gemm = DType::kBf16, kv = DType::kBf16;
};
ServingDtypes serving_dtypes(const ModelConfig& m, const std::string& dtype, const std::string& kv_dtype);
// --expert-dtype (empty: keep the config's expert_dtype): the routed experts' dtype of a serving
// forecast of `m` (ModelConfig::expert_dtype). ConfigError naming the flag for a non-serving
// `mode`, a model without experts or a dtype the MoE family does not model.
void apply_expert_dtype(ModelConfig& m, const std::string& expert_dtype, const std::string& mode);

// Mixed-precision training's options beside the layout (--zero, --sequence-parallel,
// --recompute, --train-tokens), as a front end reads them: predict, compare, plan, Python.
struct ForecastRequest;
struct TrainingArgs {
  static constexpr int kZeroAuto = -1;  // plan: every ZeRO stage
  int zero = 0;                    // ZeRO stage (Parallelism::zero), or kZeroAuto
  bool sequence_parallel = false;  // with tp > 1 (Parallelism::sequence_parallel)
  std::string recompute;           // none | full (plan: also auto, both); empty: not given (none)
  double train_tokens = 0;         // tokens of a whole run (0: none)
  // Sets them on `r` (ConfigError for a bad --recompute, and for auto, which only plan
  // resolves). `where_tp_splits`: sequence parallelism only on requests with tp > 1 (compare's
  // and plan's rows), else as given (predict refuses it on tp 1).
  void apply(ForecastRequest& r, bool where_tp_splits) const;
};
// --zero: 0-3, or auto (TrainingArgs::kZeroAuto); ConfigError otherwise.
int zero_flag(const std::string& value);

// Speculative decoding of `generate` as the flags ask for it (predict, compare, plan, Python):
// the draft ("mtp": each model's own MTP module; empty: none), its tokens a round and the
// acceptance of a draft token.
struct SpecRequest {
  std::string draft;
  int64_t tokens = 4;
  std::optional<double> accept;
  // From --spec-draft, --spec-tokens, --spec-accept: tokens without a draft is one error line;
  // tokens default to 4.
  static SpecRequest from_flags(const std::string& draft, std::optional<int64_t> tokens, std::optional<double> accept);
  // ConfigError unless a draft comes with an acceptance and mode generate (and vice versa).
  void check(const std::string& mode) const;
  // The draft for `target`: mtp_draft_config(target) for "mtp", else the config `draft` names.
  ModelConfig draft_for(const ModelConfig& target, const std::string& models_dir) const;
  // The forecast's speculative decoding with `draft` (draft_for's, kept alive by the caller).
  SpecDecoding with(const ModelConfig& draft) const { return {&draft, tokens, *accept}; }
};

// --prefill-tp / --prefill-ep / --prefill-instances / --decode-instances (Python's prefill_tp,
// prefill_ep, prefill_instances, decode_instances), each where given: a disaggregated request's
// instances (inactive without a tp). ConfigError for a tp outside [1, 4096], instances outside
// [1, 1024], or an ep or instances without a tp.
Disaggregation disaggregation_flags(std::optional<int64_t> prefill_tp, std::optional<int64_t> prefill_ep,
                                    std::optional<int64_t> prefill_instances = std::nullopt,
                                    std::optional<int64_t> decode_instances = std::nullopt);
// Every combination of the given prefill and decode instance counts (capacity's lists), each
// as disaggregation_flags makes it; one layout where both lists are empty.
std::vector<Disaggregation> disaggregation_layouts(std::optional<int64_t> prefill_tp, std::optional<int64_t> prefill_ep,
                                                   const std::vector<int64_t>& prefill_instances,
                                                   const std::vector<int64_t>& decode_instances);
// --prefill-tp outside --mode generate: ConfigError (forecast() and compare check it).
void check_disaggregation_mode(const Disaggregation& d, const std::string& mode);
// `--moe-a2a` / Python's moe_a2a: "none" (false) or "deepep" (true: Parallelism::moe_all_to_all);
// ConfigError naming --moe-a2a otherwise.
bool parse_moe_a2a(const std::string& value);
// The refusals of DeepEP's all-to-all MoE (Parallelism::moe_all_to_all) that do not need a
// layout: a mode other than prefill, decode and generate, or no --dp-attention. ConfigError
// naming --moe-a2a.
void check_moe_a2a(bool moe_all_to_all, bool dp_attention, const std::string& mode);
// --dp-attention of compare, plan and capacity: ConfigError for a mode other than the serving
// ones, or where `largest_tp`, the largest tensor-parallel group the request can form (`tp_flag`:
// the largest --tp, or plan's --gpus), leaves no group of 2 or more to split the attention of.
void check_dp_attention(bool dp_attention, const std::string& mode, int64_t largest_tp, const std::string& tp_flag);

// `predict`.
struct PredictArgs {
  std::string model, gpu, mode = "inference";  // inference|training (inf|train)|prefill|decode|generate
  int64_t batch = 0;
  std::optional<int64_t> seq, context, gen;
  std::string dtype, kv_dtype;                 // serving; empty = the config's torch_dtype
  std::string expert_dtype;                    // serving MoE: the experts' (empty: the config's, else dtype)
  std::string routing;                         // serving MoE: balanced | power_law_<a>; empty = balanced
  SchedulerArgs sched;                         // generate: the engine's scheduler
  std::optional<int64_t> cached_prefix;        // prefill, generate: prompt tokens in the cache already
  SpecRequest spec;                            // generate: speculative decoding (none by default)
  Parallelism par;
  Disaggregation disagg;                       // generate: a prefill instance beside par's (--prefill-tp)
  bool fusion = false;
  bool hf_eager = false;                       // prefill, mixed-precision training: Hugging Face's eager model
  std::string optimizer = "adamw";             // training: adamw | none
  TrainingArgs training;                       // mixed-precision training
  double host_gap_us = 0;                      // host time per kernel launch (forecast_model)
};
struct PredictResult {
  ModelForecast forecast;                      // prefill/decode/inference/training
  std::optional<GenerateForecast> generate;    // generate
  MemoryEstimate memory;
};
// Validates the options (one ConfigError naming the flag), loads model and GPU, forecasts.
PredictResult run_predict(const PredictArgs& a, const GpuRegistry& reg, const KernelPredictor& kp,
                          const std::string& models_dir);

// One forecast of a resolved request: what `predict` prints and each `compare`/`plan` row is
// made of. `tokens`: the sequence (training, inference), the prompt (prefill, generate) or
// the cached context (decode). Serving modes take tp only (dp, pp, microbatches 1).
struct ForecastRequest {
  const ModelConfig* model = nullptr;
  const GpuSpec* gpu = nullptr;
  std::string mode;  // canonical
  int64_t batch = 0, tokens = 0, gen = 0;
  ServingDtypes dtypes;  // serving modes only
  Parallelism par;
  double routing_alpha = kUniformRouting;  // serving MoE layers' token routing (uniform by default; 0 = balanced)
  SchedulerLimits limits;  // generate: the engine's scheduler (chunked prefill, running sequences)
  int64_t cached_prefix = 0;  // prefill, generate: prompt tokens every request finds cached (prefix caching)
  std::optional<SpecDecoding> spec;  // generate: speculative decoding (SpecRequest::with)
  Disaggregation disagg;             // generate: prefill-decode disaggregation (forecast_disaggregated)
  bool fusion = false;
  // prefill and mixed-precision training: the model as Hugging Face transformers runs it
  // eagerly (build_hf_eager_prefill_graph, build_llm_training_graph's hf_eager).
  bool hf_eager = false;
  bool optimizer_state = true;
  // training: fp32 (eager FP32 PyTorch, NeuSight's setting) or bf16/fp16 (mixed precision,
  // build_llm_training_graph), with each layer recomputed in the backward where `recompute`.
  DType train_dtype = DType::kFp32;
  bool recompute = false;
  // Mixed-precision training: tokens a whole run trains on (0: none), for its duration.
  double train_tokens = 0;
  double host_gap_us = 0;
};
PredictResult forecast(const ForecastRequest& r, const KernelPredictor& kp);
// The GPUs one replica of a serving request takes: its tp x pp group, and a disaggregated
// replica's prefill instances and every decode instance.
inline int64_t replica_gpus(const ForecastRequest& r) { return r.disagg.replica_gpus(r.par.tp * r.par.pp); }
// The scheduler's options (generate only) and a cached prefix (prefill and generate) against the
// mode; ConfigError naming them otherwise. forecast() calls it, so compare's and plan's rows do.
void check_scheduler_options(const std::string& mode, const SchedulerLimits& limits, int64_t cached_prefix);
// The JSON `predict --format json` prints.
std::string predict_result_json(const PredictResult& r);

// `capacity`: the highest request rate one replica serves with at least `attainment_pct` % of
// its `base.batch` requests within the objectives (base.limits' slo_ttft_ms and slo_tpot_ms, at
// least one), DistServe's per-GPU goodput capacity. `base` is a generate request; the search sets
// its request rate (the arrivals stay as base.limits say). A rate whose forecast does not fit
// in memory fails. Search: one request alone first (no rate can do better), then 0.001
// requests a second, then rates from 1 a second x4 until one fails (at most 1e6), then
// bisection in log space to 1 %.
struct CapacityResult {
  double attainment_pct = 0;               // the target
  int64_t requests = 0;                    // each trial's (base.batch)
  double max_rate_rps = 0;                 // 0: no rate from 0.001 a second meets them
  bool unbounded = false;                  // every rate tried, up to 1e6 a second, met them
  double failing_rate_rps = 0;             // the lowest rate seen to fail (0: none)
  GenerateForecast lone;                   // one request alone
  std::optional<GenerateForecast> at_max;  // the forecast at max_rate_rps
  int forecasts = 0;                       // generate forecasts the search ran
};
CapacityResult find_capacity(const ForecastRequest& base, double attainment_pct, const KernelPredictor& kp);
// What find_capacity requires of every request: generate, an objective, attainment in (0, 100].
void check_capacity_request(const ForecastRequest& base, double attainment_pct);
// Replicas of `gpus_per_replica` GPUs for `target_rate_rps` at c's capacity (0: none will do, or
// no target), and USD per million requests at the capacity (0: no price or no capacity).
int64_t capacity_replicas(const CapacityResult& c, double target_rate_rps);
double capacity_usd_per_m_requests(const CapacityResult& c, int64_t gpus_per_replica, double usd_per_gpu_hour);
// --requests (1..65536) and --target-rate ((0, 1e9] where given); ConfigError naming the flag.
void check_capacity_options(int64_t requests, std::optional<double> target_rate_rps);
// The generate request `capacity` searches: `requests` requests of `seq` + `gen` tokens on the
// model `m` under the scheduler's options (`sched`, checked, names as Python's keywords with
// `python_names`; --max-seqs auto unless given; a request rate is refused, the search sets it).
// Its gpu and tp are left to run_capacity.
ForecastRequest capacity_request(const ModelConfig& m, int64_t requests, int64_t seq, int64_t gen,
                                 const ServingDtypes& dtypes, int64_t ep, double routing_alpha, SchedulerArgs sched,
                                 int64_t cached_prefix, bool python_names = false);
// What `capacity` reports: the request (`q`, as find_capacity took it), the result, and for a
// `target_rate_rps` > 0 the replicas it takes at the capacity found (ceil(target / capacity);
// null where no rate meets the objectives) and their GPUs (tp each); with `usd_per_gpu_hour` > 0
// the cost of a million requests at the capacity and, with a target, the fleet's an hour.
std::string capacity_json(const ForecastRequest& q, const CapacityResult& c, double target_rate_rps = 0,
                          double usd_per_gpu_hour = 0);
std::string capacity_table(const ForecastRequest& q, const CapacityResult& c, double target_rate_rps = 0,
                           double usd_per_gpu_hour = 0);

}  // namespace tilecast::predictor
