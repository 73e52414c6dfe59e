#pragma once
// `tilecast compare` and `tilecast plan`: many forecasts in one process, one row each, with
// every identifying column, the memory verdict and (given a price) the cost.
#include <map>
#include <string>
#include <vector>

#include "core/gpu_spec.h"
#include "core/model_config.h"
#include "core/op_graph.h"
#include "predictor/api.h"
#include "predictor/graph_predictor.h"
#include "predictor/kernel_predictor.h"

namespace tilecast::predictor {

// What a forecast is asked for. Lists are crossed: every model x gpu x batch x seq x dp x tp
// x pp x microbatches combination is one row.
struct CompareRequest {
  std::vector<std::string> models;            // names or config.json paths
  std::vector<std::string> gpus;              // registry names; "all" = every spec
  std::string mode = "inference";             // inference|training|prefill|decode|generate
  std::string dtype;                          // serving dtype (empty = the config's torch_dtype); training: fp32|bf16|fp16|fp8
  std::string kv_dtype;                       // serving KV cache; empty = bf16 for fp8, else dtype
  std::string expert_dtype;                   // serving: the MoE models' experts (empty: each config's, else dtype)
  std::vector<int64_t> batches{1}, seqs{0};   // seq: prompt / sequence (decode: --context)
  int64_t gen = 0;                            // generate: output tokens
  SchedulerLimits limits;                     // generate: the engine's scheduler (0: no budget, no cap)
  int64_t cached_prefix = 0;                  // prefill, generate: prompt tokens cached (prefix caching)
  SpecRequest spec;                           // generate: speculative decoding (none by default)
  std::vector<int64_t> dps{1}, tps{1}, pps{1}, microbatches{1};
  std::vector<int64_t> eps{1};                // MoE: expert-parallel ranks (serving: of the tp group; training: of dp)
  std::vector<int64_t> cps{1};                // mixed-precision training: context-parallel ranks
  std::vector<int64_t> vpps{1};               // mixed-precision training: model chunks per pipeline rank
  bool dp_attention = false;                  // serving: rows with tp > 1 take DP attention (Parallelism::dp_attention)
  bool moe_a2a = false;                       // serving MoE: DP-attention rows with ep = tp take DeepEP (Parallelism::moe_all_to_all)
  // generate: each a row's disaggregated layout, its tp the decode instances' (default: aggregated)
  std::vector<Disaggregation> disaggs{Disaggregation{}};
  double routing_alpha = kUniformRouting;     // serving MoE: token routing (uniform, 0 balanced, else power law)
  bool optimizer_state = true;                // training memory: AdamW moments
  TrainingArgs training;                      // mixed-precision training (sequence parallelism: rows with tp > 1)
  bool hf_eager = false;                      // prefill, mixed-precision training: Hugging Face's eager model
};

// USD per GPU-hour, keyed by the registry's canonical GPU name; the file's date and source.
struct Prices {
  std::map<std::string, double> usd_per_gpu_hour;
  std::string date, source;
  // The price of `gpu` (a registry name); 0 where none is given.
  double of(const std::string& gpu) const {
    const auto it = usd_per_gpu_hour.find(gpu);
    return it == usd_per_gpu_hour.end() ? 0.0 : it->second;
  }
};
// YAML: {date: 2026-11-01, source: "...", usd_per_gpu_hour: {H100-SXM: 2.49, ...}}. Unknown
// GPUs, non-positive or non-numeric prices, missing date/source: ConfigError naming the field.
Prices load_prices(const std::string& path, const GpuRegistry& reg);
// "G=USD" (--price); ConfigError otherwise.
void add_price(Prices& p, const std::string& arg, const GpuRegistry& reg);

struct CompareRow {
  std::string model, gpu, mode, dtype;
  bool hf_eager = false;  // Hugging Face's eager model (ForecastRequest::hf_eager)
  std::string expert_dtype;  // serving a MoE model: its experts' dtype (empty otherwise)
  int64_t batch = 0, seq = 0, gen = 0, dp = 1, tp = 1, pp = 1, microbatches = 1;
  int64_t ep = 1;  // MoE: the experts split over ep ranks (serving: of each tp group; training: of dp)
  int64_t cp = 1;  // mixed-precision training: each sequence split over cp ranks
  int64_t vpp = 1;  // mixed-precision training: model chunks per pipeline rank (interleaved 1F1B)
  bool dp_attention = false;  // serving: SGLang's DP attention over the tp group (Parallelism::dp_attention)
  bool moe_a2a = false;       // serving MoE: DeepEP's all-to-all (Parallelism::moe_all_to_all)
  Disaggregation disagg;      // generate: a prefill instance beside the row's (decode) instance
  double routing_alpha = kUniformRouting;  // serving MoE: token routing (uniform by default)
  SchedulerLimits limits;  // generate: the engine's scheduler (max_seqs: the cap `auto` chose, 0 = none binds)
  int64_t cached_prefix = 0;  // prefill, generate: prompt tokens cached
  std::string spec_draft;     // generate: the draft of speculative decoding (empty: none)
  int64_t spec_tokens = 0;
  double spec_accept = 0;
  // A disaggregated replica's prefill and decode instances count too (replica_gpus).
  int64_t gpus() const { return dp * disagg.replica_gpus(tp * cp * pp); }
  std::string error;  // non-empty: this combination cannot run (the reason); no numbers
  double step_ms = 0;       // training/inference: step; prefill: TTFT; decode: one step; generate: end to end
  double ttft_ms = 0, tpot_ms = 0;  // serving
  // What the forecast rests on (ModelForecast::basis; generate: GenerateForecast::basis).
  std::vector<ForecastBasis> basis;
  // Which of the two the row's mode has: a first token (prefill, generate), output tokens
  // after it (decode, generate). The other is null in JSON, empty in CSV, '-' in the table.
  bool has_ttft() const { return mode == "prefill" || mode == "generate"; }
  bool has_tpot() const { return mode == "decode" || mode == "generate"; }
  double goodput_rps = 0, slo_attained_pct = 0;  // generate with objectives (limits.has_slo())
  double ttft_p99_ms = 0, tpot_p99_ms = 0;        // generate: over the requests
  double tokens_per_s = 0;  // training/inference: batch x seq per step; prefill: prompt tokens;
                            // decode: batch per step; generate: output tokens per second
  // Mixed-precision training (training in bf16/fp16): the model FLOPs utilisation (ModelForecast).
  bool mixed_training() const { return mode == "training" && dtype != "fp32"; }
  double mfu_pct = 0;
  double pipeline_bubble_ms = 0;  // mixed-precision training with pp > 1 (ModelForecast)
  int zero = 0;             // mixed-precision training: ZeRO stage
  bool recompute = false;   // mixed-precision training: layers recomputed
  // Mixed-precision training with train_tokens: the run's days, and its cost at the price.
  double train_tokens = 0, train_days = 0, train_usd = 0;
  double memory_gb = 0, gpu_memory_gb = 0;
  bool fits = false;
  // Serving: sequences of the row's length the KV room of all its GPUs holds (every replica;
  // MemoryEstimate::max_sequences); -1 for the eager modes.
  int64_t max_sequences = -1;
  double usd_per_hour = 0;         // price x GPUs; 0 = no price given
  double usd_per_m_tokens = 0;     // 0 = no price given
};

// Forecasts every combination. Combinations a model or GPU cannot run (a layout that does
// not divide the heads, FP8 on an A100, ...) become rows with `error` set; a bad model or GPU
// name throws ConfigError.
std::vector<CompareRow> run_compare(const CompareRequest& req, const GpuRegistry& reg, const KernelPredictor& kp,
                                    const std::string& models_dir, const Prices* prices = nullptr);

// Rows ranked by `key`: "time" (step_ms ascending), "throughput" (tokens_per_s descending) or
// "cost" (usd_per_m_tokens ascending); rows that do not fit come after those that do, and
// rows with an error last. Adds nothing, removes nothing.
void rank_rows(std::vector<CompareRow>& rows, const std::string& key);

std::string compare_table(const std::vector<CompareRow>& rows, const Prices* prices);
std::string compare_csv(const std::vector<CompareRow>& rows);
std::string compare_json(const std::vector<CompareRow>& rows, const Prices* prices);
// One row as JSON (the Python module's dicts).
std::string compare_row_json(const CompareRow& r);

// `capacity` over GPUs and tensor-parallel sizes: find_capacity of `base` (a generate request;
// its gpu and par.tp are set per row) on every gpu x tp, one row each. A combination that cannot
// run (tp not dividing the heads, weights that do not fit, a dtype the GPU lacks) is a row with
// `error`; a bad GPU name throws ConfigError.
struct CapacityRow {
  ForecastRequest request;  // base with this row's gpu and tp
  CapacityResult result;
  std::string error;
  double usd_per_gpu_hour = 0;  // from the prices; 0 = none given
  // Requests a second one GPU serves within the objectives (capacity / the replica's GPUs).
  double per_gpu_rps() const { return result.max_rate_rps / double(replica_gpus(request)); }
};
// `layouts`: the disaggregated layouts to try, each a row per GPU and tp (base.disagg is each
// row's layout in turn; {Disaggregation{}}: aggregated).
std::vector<CapacityRow> run_capacity(const ForecastRequest& base, const std::vector<std::string>& gpus,
                                      const std::vector<int64_t>& tps, const std::vector<Disaggregation>& layouts,
                                      double attainment_pct, const GpuRegistry& reg, const KernelPredictor& kp,
                                      const Prices* prices = nullptr);
// Ranked: by USD per million requests where every row with a capacity has a price, else by
// capacity per GPU (highest first); rows that meet no rate, then rows with an error, last.
void rank_capacity(std::vector<CapacityRow>& rows);
// {"rows": [capacity_json of each row, or its error], "prices": ...}; the table ranks them (one
// row: capacity_table's detail).
std::string capacity_rows_json(const std::vector<CapacityRow>& rows, double target_rate_rps, const Prices* prices);
std::string capacity_rows_table(const std::vector<CapacityRow>& rows, double target_rate_rps, const Prices* prices);

// `plan`: every dp x tp x pp with dp * tp * pp == gpus and microbatch counts that divide the
// per-replica batch (on one pipeline stage, gradient accumulation: the counts from 1 up to the
// first whose layout fits), for one model on one GPU type and a global batch.
struct PlanRequest {
  std::string model, gpu;                 // a name or config.json path; a GPU type
  std::string mode = "training";          // training|inference|prefill|decode|generate
  std::string dtype;                      // serving dtype (empty = the config's torch_dtype); training: fp32|bf16|fp16|fp8
  std::string expert_dtype;               // serving MoE: the experts' (empty: the config's, else dtype)
  int64_t gpus = 0, global_batch = 0;
  int64_t seq = 0;                        // prompt / sequence (decode: the cached context)
  int64_t gen = 0;                        // generate: output tokens
  SchedulerLimits limits;                 // generate: each replica's scheduler (0: no budget, no cap)
  int64_t cached_prefix = 0;              // prefill, generate: prompt tokens cached (prefix caching)
  SpecRequest spec;                       // generate: speculative decoding (none by default)
  bool optimizer_state = true;            // training memory: AdamW moments
  double routing_alpha = kUniformRouting;  // serving MoE: token routing (uniform, 0 balanced, else power law)
  TrainingArgs training;                  // mixed-precision training (sequence parallelism: layouts with tp > 1)
  // Mixed-precision training: the interleaved pipeline's model chunks a rank to try beside 1
  // (Parallelism::vpp), on layouts whose layers and microbatches allow them.
  std::vector<int64_t> vpps{1};
  // Serving: each layout with tp > 1 and one pipeline stage is also tried with DP attention
  // (Parallelism::dp_attention).
  bool dp_attention = false;
  // Serving a MoE model with dp_attention: each DP-attention layout with ep = tp is also tried
  // with DeepEP's all-to-all (Parallelism::moe_all_to_all).
  bool moe_a2a = false;
  // Generate: also each split of a replica's R GPUs into N prefill instances of tp P and M
  // decode instances of tp (R - N x P) / M (prefill-decode disaggregation, Disaggregation),
  // beside the aggregated layouts.
  bool disaggregate = false;
  // Prefill and mixed-precision training: Hugging Face's eager model (ForecastRequest::hf_eager)
  // on every layout; those it cannot run on (tp, pp, cp, ep, ZeRO) are set aside with the reason.
  bool hf_eager = false;
};
// The rows of run_compare, ranked by step time with the fitting layouts first; layouts that
// cannot run are left out of them and, when `skipped` is given, appended there (their rows
// say why). ConfigError when no layout runs, naming the first reason.
// Serving modes (prefill, decode, generate): dp replicas of tp x pp GPUs each (dp * tp * pp ==
// gpus), each serving global_batch / dp sequences (arriving at request_rate / dp a second, the
// traffic spread evenly); step times are a replica's, tokens/s, goodput, cost and
// max_sequences those of all replicas. Generate with objectives ranks by goodput. For MoE models every expert-parallel size ep of the
// tp group is a layout too (ep dividing tp and the experts; ep 1 splits every expert over tp),
// each under the request's routing (the most loaded rank forecast; a dense model refuses one).
// Mixed-precision training of an MoE model: every expert-parallel size of the dp x cp ranks
// that divides the experts is a layout too (Parallelism::ep; ep and cp dividing one another);
// of any model without a sliding window, every context-parallel size cp that splits seq into
// 2 cp chunks (dp x tp x cp x pp == gpus); with pipeline stages, each of `vpps` that splits
// the layers into pp x vpp chunks, where the microbatches are a multiple of pp.
std::vector<CompareRow> run_plan(const PlanRequest& req, const GpuRegistry& reg, const KernelPredictor& kp,
                                 const std::string& models_dir, const Prices* prices = nullptr,
                                 std::vector<CompareRow>* skipped = nullptr);
// One line per distinct reason among `skipped` (plan's layouts that cannot run): the reason and
// the layouts it stopped, e.g. "dp 1 x tp 16 x pp 1: <error>".
std::string skipped_layouts_text(const std::vector<CompareRow>& skipped);

}  // namespace tilecast::predictor
