#pragma once
// Whole-model forecasts: cost every operator of an OpGraph on one GPU.
#include <functional>
#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu_spec.h"
#include "core/memory_model.h"
#include "core/model_config.h"
#include "core/op_graph.h"
#include "predictor/kernel_predictor.h"

namespace tilecast::predictor {

struct OpForecast {
  std::string name, kind;
  int64_t count = 1;
  double fw_ms = 0, bw_ms = 0, acc_ms = 0;  // one execution
  bool unnamed_by_neusight = false;          // GraphOp::unnamed_by_neusight
};

// What a forecast's kernels of one family rest on (forecast_model sums it over the distinct
// kernels it forecast): the GPU's standing against the family's training GPUs and how the
// forecast was made there. Kernels costed otherwise (backward GEMMs at their forward's rate, MLA
// and mixed-batch decodes by formula, copies, collectives) are not counted.
struct ForecastBasis {
  Family family = Family::kGemm;
  int64_t kernels = 0;        // distinct kernels forecast
  int64_t outside_range = 0;  // of them, with a feature outside the family's training range
  // of them, capped at a training GPU's forecast (KernelPrediction::capped_by), and that GPU
  // (the first, where several)
  int64_t capped = 0;
  std::string capped_by;
  // of them, raised to a training GPU's forecast (KernelPrediction::lifted_by), and that GPU
  int64_t lifted = 0;
  std::string lifted_by;
  bool clamped = false;       // ... moved into it (families that clamp) rather than extrapolated
  GpuStanding standing;       // the GPU against the family's training GPUs (KernelPrediction's)
  double network_weight = 1;  // the network's share of the log-latency (0: the fitted roofline alone)
  double composite_weight = 0;  // moe: the stacked GEMMs' share (KernelPrediction::composite_weight)
  // The fitted roofline is the network's base and blends in: its weight shrinks with the share
  // of its forecast that is fixed costs (KernelPrediction::fitted_roofline_weight).
  bool fixed_costs_to_network = false;
  // The family's leave-one-GPU-out error on each op / dtype of its kernels here, where the GPU
  // is unseen (KernelPrediction::unseen_error), each key once.
  std::vector<std::shared_ptr<const UnseenGpuError>> unseen_errors;
  // On a training GPU, the family's error on its held-out shapes of each op / dtype here
  // (KernelPrediction::heldout_error), each key once.
  std::vector<std::shared_ptr<const HeldoutShapesError>> heldout_errors;
  bool physics() const { return !is_mlp_family(family); }  // memory_op: fitted coefficients, no network
  // "network", "network+fitted_roofline", "network+fitted_roofline+gemm_composite",
  // "fitted_roofline" or "physics".
  const char* forecast_by() const;
};
// One kernel's (KernelPrediction's standing, network weight and training range).
ForecastBasis kernel_basis(Family fam, const KernelPrediction& p);
// Adds `x`'s kernels (of the same family) to `b`: their counts, the first GPU capping or raising
// them, and each op / dtype's recorded errors once.
void add_to_basis(ForecastBasis& b, const ForecastBasis& x);
// One line per family, the first headed "basis": "gemm (7 kernels): not one of its 5 training
// GPUs: network^0.70 x fitted roofline^0.30", with the kernels outside the training range and,
// where none of the training GPUs is of the GPU's `vendor`, that.
std::string basis_text(const std::vector<ForecastBasis>& basis, const std::string& vendor);
// JSON `basis`: per family its kernels, `gpu` (training | twin | unseen), training_gpus,
// vendor_in_training, forecast_by, network_weight (null for physics), outside_training_range,
// clamped, fixed_costs_to_network, capped (kernels capped at a training GPU's forecast),
// capped_by (that GPU, null where none), lifted and lifted_by (raised to one's forecast).
nlohmann::json basis_json(const std::vector<ForecastBasis>& basis);
// The same families of two forecasts (a prefill and a decode step) as one list, kernels added.
std::vector<ForecastBasis> merge_basis(const std::vector<ForecastBasis>& a, const std::vector<ForecastBasis>& b);

struct ModelForecast {
  std::string model, gpu;
  std::string gpu_vendor;  // the spec's, for basis_text
  std::vector<ForecastBasis> basis;  // by family, in family order
  int64_t batch = 0, seq = 0;
  Mode mode = Mode::kInference;
  bool fused = false;
  bool hf_eager = false;  // Hugging Face's eager modules (OpGraph::hf_eager), not an engine's kernels
  double forward_ms = 0;
  double backward_ms = 0;   // backward kernels + gradient accumulation (what loss.backward() runs)
  double optimizer_ms = 0;  // AdamW step, reported apart (not in total_ms)
  double communication_ms = 0;  // multi-GPU: time in collectives on the critical path
  double total_ms = 0;      // forward + backward (+ exposed communication, pipeline bubbles)
  Parallelism par;
  int64_t micro_batch = 0;  // sequences per microbatch on one GPU (OpGraph::micro_batch)
  DType dtype = DType::kFp32, kv_dtype = DType::kFp32;  // serving: GEMM and KV-cache dtypes
  std::optional<DType> expert_dtype;  // serving a MoE model: its routed experts' (OpGraph::expert_dtype)
  int64_t context = 0;  // serving: prompt tokens (prefill) or tokens cached before the step (decode)
  double routing_alpha = kUniformRouting;  // serving MoE: token routing (OpGraph::routing_alpha)
  int64_t sliding_window = 0;  // serving: the attention window (OpGraph::sliding_window), 0 = none
  int64_t window_layers = 0;   // of the model's layers, those with the window (OpGraph::window_layers)
  bool chunked_window = false; // aligned chunks rather than a sliding window (OpGraph::chunked_window)
  int64_t layers = 0;          // the model's repeated layers (OpGraph::layers)
  ServingStep step;  // a scheduled serving step (OpGraph::step); empty otherwise
  int64_t cached_prefix = 0;  // serving prefill: prompt tokens already cached (OpGraph::cached_prefix)
  int64_t kernel_launches = 0;  // kernels (and copies) one step launches on one GPU, all microbatches
  double host_gap_us = 0;       // host time added per launch (see forecast_model)
  // Eager graphs (OpGraph::eager): the host time per kernel call the forward cannot beat (the
  // FP32 families' call_overhead_us; 0: not eager, or a layout without the floor), and what the
  // floor added to forward_ms (0 where the forward's kernels outlast the host's calls).
  double host_call_us = 0;
  double host_floor_ms = 0;
  // By family, the host time per call taken off each of its kernels (the weights manifests'
  // call_overhead_us, KernelPrediction::stream_ms); only families of the graph with one.
  std::map<std::string, double> call_overhead_us;
  std::vector<OpForecast> ops;
  // Mixed-precision training (build_llm_training_graph; 0 otherwise): whether each layer's
  // forward is recomputed, the global tokens a second over the step (total_ms + optimizer_ms),
  // and the model FLOPs utilisation: 3x one GPU's forward GEMM, attention and expert FLOPs (no
  // recomputation; a GPU's share of the pipeline stages) over that time at the dtype's dense
  // tensor peak (BF16's for FP8 training, whose GEMMs alone run in FP8, so that the two
  // precisions compare on one scale).
  bool mixed_training() const { return mode == Mode::kTraining && dtype != DType::kFp32; }
  bool recompute = false;
  // FP8 training: the first microbatch's forward casts each FP8 GEMM's weight on the GPU's
  // stages to FP8 with its transpose (read 2 B, write 2 x 1 B a weight at DRAM bandwidth;
  // Transformer Engine reuses them for the step's later microbatches); in forward_ms and total_ms.
  double fp8_weight_cast_ms = 0;
  // With pipeline stages, a batch arriving at once (training, eager inference, a prefill): the
  // pipeline's fill and drain, the part of forward_ms + backward_ms beyond the slowest stage's
  // own work on every microbatch ((all stages - the slowest) / vpp a pass); 0 otherwise.
  double pipeline_bubble_ms = 0;
  double tokens_per_s = 0, mfu_pct = 0;
  // Tokens a whole run trains on (0: not asked); train_days() is that run at tokens_per_s.
  double train_tokens = 0;
  double train_days() const { return train_tokens > 0 && tokens_per_s > 0 ? train_tokens / tokens_per_s / 86400 : 0; }
};
// Sets f.tokens_per_s and f.mfu_pct of a mixed-precision training forecast of graph `g`.
void set_training_throughput(ModelForecast& f, const OpGraph& g, const GpuSpec& gpu);

inline bool is_serving(Mode m) { return m == Mode::kPrefill || m == Mode::kDecode; }

// Identical kernels are forecast once; all kernels of a family go through one batched MLP call.
// `host_gap_us`: host time added to every kernel launch and copy (eager PyTorch's dispatch and
// launch cost when the GPU waits for the host); 0 (the bundled default) adds none: fitted on the
// training GPUs' whole-model labels by scripts/fit-host-gap.sh, any gap made them worse.
// Each kernel costs its stream time (KernelPrediction::stream_ms: its isolated latency less the
// call overhead of its family's training data); `isolated`: its isolated latency instead, as
// NeuSight's per-op labels time each node alone. An eager graph's forward (OpGraph::eager, one
// GPU or data parallelism) takes at least its kernel calls times the host time per call (the
// FP32 families' call_overhead_us): the host issues them one at a time (ModelForecast::
// host_floor_ms; an op "(eager host)" of kind "host" carries it).
ModelForecast forecast_model(const OpGraph& g, const GpuSpec& gpu, const KernelPredictor& kp,
                             double host_gap_us = 0, bool isolated = false);
// A per-kernel baseline summed over a single-GPU graph the way forecast_model sums forecasts
// (every op's forward, backward and accumulation kernels, times its count and the
// microbatches): kernels costed by `kernel_ms` (NaN: no baseline for that kernel, and the whole
// sum is then -1), memory passes at DRAM bandwidth. Throws ConfigError for a graph with
// tensor, pipeline, expert or context parallelism (their collectives have no baseline).
double graph_sum_ms(const OpGraph& g, const GpuSpec& gpu, const std::function<double(const KernelQuery&)>& kernel_ms);
// Validates a --host-gap-us value (finite, 0..10000 us); ConfigError naming the flag otherwise.
void check_host_gap_us(double us);

// Ring all-reduce of `bytes` over `group` GPUs as NCCL's cost model prices it: for each of its
// protocols (LL, LL128, Simple) a base latency + 2 (n-1) steps x the link's per-step latency
// (NVLink/xGMI or PCIe: GpuSpec::interconnect_link) + 2 (n-1)/n * bytes at the protocol's share
// of 80 % of the per-direction interconnect bandwidth; the fastest protocol. Small messages
// (serving steps: 6.6 + 2 (n-1) x 0.6 us on NVLink) are latency-bound, large ones (gradient
// buckets, training activations) bandwidth-bound. Throws ConfigError if the spec has no
// interconnect_gbps. A group whose members sit `stride` GPUs apart (tp: 1; dp: tp x pp) and span
// several of the spec's nodes (gpus_per_node) crosses the network on 2 x nodes of its steps, at
// NCCL's NET latency per step, and its bandwidth is at most its ranks per node x network_gbps
// (ConfigError if the spec states no network_gbps). Point-to-point (send_recv_ms): bytes at 80 %
// of the link + 5 us, or of network_gbps + 7.7 us across nodes.
double all_reduce_ms(double bytes, int64_t group, const GpuSpec& gpu, int64_t stride = 1);
// `what`: the transfer, named in the error for a spec without network_gbps.
double send_recv_ms(double bytes, const GpuSpec& gpu, bool across_nodes = false,
                    const std::string& what = "a pipeline hand-over between nodes");
// All-to-all over `group` GPUs `stride` apart, each sending 1/group of its `bytes` to every
// peer at once (NCCL's grouped send/recv, as Megatron-Core's token dispatcher runs it): the
// peers on its node over the link at 80 % (a mesh: one link per peer, collective_gbps), the
// others over its network port at 80 % of network_gbps, the slower of the two, plus the
// point-to-point latency (5 us; 7.7 us across nodes). Not fitted to any measurement: no
// all-to-all timing is in ../shared. ConfigError without interconnect_gbps, or without
// network_gbps for a group beyond one node.
double all_to_all_ms(double bytes, int64_t group, const GpuSpec& gpu, int64_t stride = 1);
// Nodes of the spec (gpus_per_node; 0 = one node) a group of `group` ranks `stride` GPUs apart
// spans, and its ranks on each (replicas laid out node by node, strides dividing nodes).
struct GroupSpan {
  int64_t nodes = 1, ranks_per_node = 1;
};
GroupSpan group_span(int64_t group, int64_t stride, const GpuSpec& gpu);
// A group of `inner` ranks `inner_stride` apart, repeated `outer` times `outer_stride` apart
// (outer_stride >= inner x inner_stride): group_span of the inner block, and as many blocks on
// a node as group_span puts members of the outer group there.
GroupSpan group_span(int64_t inner, int64_t inner_stride, int64_t outer, int64_t outer_stride, const GpuSpec& gpu);
// Mixed-precision training's expert-parallel group (Parallelism::ep), drawn from the dp x cp
// ranks with cp first (Megatron-Core): ep ranks tp apart inside the cp group where ep divides
// cp, else whole cp groups (tp apart) from ep / cp data-parallel peers (a replica apart).
GroupSpan expert_parallel_span(const Parallelism& par, const GpuSpec& gpu);
// all_to_all_ms over a group laid out as `span` says (training's expert-parallel group:
// expert_parallel_span).
double all_to_all_ms(double bytes, int64_t group, const GpuSpec& gpu, const GroupSpan& span);
// Serving's DeepEP dispatch or combine (KernelCall::deepep) over a group laid out as `span`: the
// bytes one rank sends over its node's links and through its network port. Low-latency kernels
// (decode) send each token's top-k copies straight to their experts' ranks, spread evenly over
// the group's ranks. Normal kernels send a token once to each other rank of its node holding
// one of its experts (p1 = deepep_hit_probability for 1 rank) and once to each other node
// holding one (pn, for a node's ranks), by RDMA to the same-index GPU there, which forwards it
// over the node's links: per rank link bytes = copy x p1 x (ranks per node - 1) x nodes,
// network bytes = copy x pn x (nodes - 1) (DeepEP's internode design).
struct DeepEpTraffic {
  double link_bytes = 0, network_bytes = 0;
};
DeepEpTraffic deepep_traffic(const KernelCall& c, const GroupSpan& span);
// deepep_traffic's two at 80 % of the link (collective_gbps of the ranks per node) and of
// network_gbps at once, the slower, plus all_to_all_ms's latencies. Not fitted to any
// measurement: no DeepEP timing is in ../shared.
double deepep_ms(const KernelCall& c, const GpuSpec& gpu, const GroupSpan& span);

// The decoding sequences of a mixed chunked-prefill step where the engine runs the whole batch
// through FlashAttention-2's varlen kernel (vLLM's FlashAttention backend on compute capability
// 8.x; fa2_varlen_mixing): each decode request gets one CTA per query head, whose 128-query
// block holds its one query and walks its whole cache in 128-key blocks, unsplit. Time: waves
// (ceil(requests x query heads / SMs)) x blocks (ceil(attended keys / 128)) x
// kVarlenCyclesPerKeyBlock SM cycles at the boost clock, x head_dim / 128. The constant is the
// median over LLMServingSim's 8,448 mixed calls (vLLM 0.19, RTX 4090), the chunk's own forecast
// taken off (`python3 scripts/eval-mixed-attention.py --fit`; docs/accuracy.md).
constexpr double kVarlenCyclesPerKeyBlock = 10865;
// Whether vLLM mixes through FA2's varlen kernel on `gpu` with a `kv_dtype` cache (FA2 has no
// FP8 cache); elsewhere the decodes are their own decode kernel.
bool fa2_varlen_mixing(const GpuSpec& gpu, DType kv_dtype);
double varlen_decode_ms(const KernelQuery& decode, const GpuSpec& gpu);
// A decode of multi-head latent attention (KernelCall::mla_value_dim): the generation_attention
// family's fitted roofline (the one it forecasts unseen GPUs by) over mla_decode_bounds. No row of
// ../shared times an MLA kernel, so its networks are not asked. ConfigError where the weights
// have no fitted roofline for that family.
double mla_decode_ms(const KernelQuery& q, int64_t value_dim, const GpuSpec& gpu, const KernelPredictor& kp);

// AdamW (PyTorch's foreach implementation): a memory-bound pass over parameters, gradients
// and both moments, each value `value_bytes` (FP32's 4 unless OpGraph::state_bytes says
// otherwise); 1 GB = 1e9 bytes. Seconds -> ms.
double adamw_step_ms(double parameters, const GpuSpec& gpu, double value_bytes = 4.0);

// Memory one GPU of a tp group holds while serving (1 GB = 1e9 bytes): weights (GEMM weights
// in the GEMM dtype, embeddings and norms in the activation dtype, all split over tp except
// norms) and the KV cache of `batch` sequences of `tokens` tokens. With `pp` pipeline stages
// (pipeline_stage_layers), the GPU of the stage holding the most: its layers' weights and
// cache, the input embedding on the first stage, the final norm and LM head on the last (a
// tied head is a second copy of the embedding there). fits() compares the sum with 90 % of
// the spec's memory (the rest: workspace, CUDA context). `shared_prefix`: the
// first tokens of every sequence are one prefix, cached once (prefix caching; not with a
// sliding window), in the cache and in the KV room's max_sequences.
//
// `pass`: the largest forward pass the forecast runs, whose transient tensors the GPU holds
// beside weights and cache (activations_gb; the KV room leaves them out, as vLLM profiles one
// pass of its token budget before it sizes its cache). Per token in the activation dtype, on
// one GPU of the tp group: the hidden state and the residual, plus the larger of the attention
// block's tensors (Q, K and V, and the attention output) and the FFN's (gated: gate and up
// projections and their product, 3F / tp; MoE: fused_moe's three caches for every routed
// token, top-k x (3F / tp + h), with ep 1); per sequence the last stage's logits (V / tp in the
// activation dtype, gathered into V FP32 values for sampling). FlashAttention keeps no score
// matrix. With pp stages a stage holds one of min(pp, sequences) microbatches.
struct ServingPass {
  int64_t fixed_tokens = 0;    // tokens whatever the sequences (a step at the token budget)
  int64_t tokens_per_seq = 0;  // tokens each running sequence adds (its prompt's uncached rest; a decode: 1)
  // Neither: no pass, the memory of weights and cache alone.
  bool any() const { return fixed_tokens > 0 || tokens_per_seq > 0; }
};
//
// `dp_attention` (Parallelism::dp_attention): every attention projection and the input embedding
// whole on every rank; each rank caches its own ceil(batch / tp) sequences with every KV head (an
// MLA latent once per sequence in the group, not on every rank); a rank's pass holds its
// sequences' attention tensors or the FFN's over the gathered tokens, and 1 / tp of a token
// budget. The KV room is the group's (MemoryEstimate::kv_ranks = tp ranks' rooms).
// `moe_all_to_all` (Parallelism::moe_all_to_all, DeepEP): the shared experts whole on every rank;
// a rank's pass holds its own tokens' top-k copies at the experts, not the gathered tokens.
// DeepEP's own communication buffers are not counted.
//
// `draft` (speculative decoding): a draft model on every GPU beside the target, its weights and
// its cache of the same tokens (a cached token's bytes, serving_kv_token_bytes), in weights_gb and
// kv_cache_gb, and in the KV room (in tokens of both caches, sequences of both).
struct ServingDraft {
  double weights_bytes = 0;  // on one GPU
  double token_bytes = 0;    // a cached token on one GPU, all its layers
};
MemoryEstimate serving_memory(const ModelConfig& m, DType dtype, DType kv_dtype, int64_t tp, int64_t batch,
                             int64_t tokens, const GpuSpec& gpu, int64_t pp = 1, int64_t shared_prefix = 0,
                             const ServingPass& pass = {}, bool dp_attention = false, const ServingDraft& draft = {},
                             bool moe_all_to_all = false);
// The bytes a cached token takes on one GPU of the tp group over all of m's layers (no window):
// its K and V heads on the rank (all of them with DP attention), or MLA's latent and rotary key.
double serving_kv_token_bytes(const ModelConfig& m, DType kv_dtype, int64_t tp, bool dp_attention = false);
// The weights one GPU of the tp group holds of the whole model (one pipeline stage), as
// serving_memory counts them (its weights_gb without pipeline stages).
double serving_weight_bytes(const ModelConfig& m, DType dtype, int64_t tp, bool dp_attention = false);

// What a serving engine's scheduler allows per step: `max_batched_tokens` tokens (vLLM's
// max_num_batched_tokens, SGLang's chunked_prefill_size; 0 = no budget) and `max_seqs`
// sequences running at once (vLLM's max_num_seqs, SGLang's max_running_requests; 0 = no cap).
// `max_seqs_auto`: forecast_generate caps the running sequences at those whose whole cache the
// KV room holds (MemoryEstimate::max_sequences, at least 1), as an engine admits no more than
// its cache blocks take; no cap where every request fits.
// `prefill_first`: a step with prompt tokens holds no decode tokens (the sequences that have
// their first token wait), as SGLang schedules by default; otherwise each step decodes every
// running sequence first and fills the rest with prompt tokens, as vLLM's V1 engine does.
// `request_rate` (requests a second; 0: all arrive at once): requests arrive one by one, the
// first at 0, the gaps drawn from an exponential distribution (a Poisson process, as vLLM's
// benchmark sends them; `uniform_arrivals`: every gap 1 / rate), from a fixed seed so that a
// forecast repeats; a request's TTFT counts from its arrival.
// `range_ratio` (0: every request has --seq prompt and --gen output tokens): each request's
// prompt and output lengths are drawn uniformly from [L (1 - r), L (1 + r)] around them, as vLLM's
// serving benchmark draws its random dataset (--random-range-ratio), from a fixed seed
// (request_lengths).
// `slo_ttft_ms`, `slo_tpot_ms` (0: none) change no step: service-level objectives on each
// request, against which forecast_generate counts the requests that meet every one and their
// rate over the run (goodput, as vLLM's serving benchmark reports it with --goodput).
struct SchedulerLimits {
  int64_t max_batched_tokens = 0, max_seqs = 0;
  bool max_seqs_auto = false;
  bool prefill_first = false;
  double request_rate = 0;
  bool uniform_arrivals = false;
  double slo_ttft_ms = 0, slo_tpot_ms = 0;
  double range_ratio = 0;
  bool has_slo() const { return slo_ttft_ms > 0 || slo_tpot_ms > 0; }
  std::string slo_text() const;  // "TTFT <= 200 ms, TPOT <= 30 ms" (the objectives set)
  bool any() const { return binds() || max_seqs_auto; }
  // A limit that makes the schedule differ from one prefill step and the decode steps (with
  // max_seqs_auto resolved into max_seqs by forecast_generate).
  bool binds() const { return max_batched_tokens > 0 || max_seqs > 0 || request_rate > 0 || range_ratio > 0; }
  const char* schedule_name() const { return prefill_first ? "prefill-first" : "mixed"; }
  const char* arrivals_name() const { return request_rate > 0 ? (uniform_arrivals ? "uniform" : "poisson") : "together"; }
};
// The arrival times (ms) of `batch` requests at `request_rate` requests a second (all 0 at rate 0).
std::vector<double> arrival_times_ms(int64_t batch, double request_rate, bool uniform);
// The prompt and output tokens of each of `batch` requests: seq and gen at range_ratio 0, else
// integers drawn uniformly from [floor(L (1 - r)), ceil(L (1 + r))] for each (vLLM's random
// dataset), from a fixed seed; prompts of at least min_seq tokens, outputs of at least 2.
struct RequestLength {
  int64_t seq = 0, gen = 0;
  bool operator==(const RequestLength& o) const { return seq == o.seq && gen == o.gen; }
};
std::vector<RequestLength> request_lengths(int64_t batch, int64_t seq, int64_t gen, double range_ratio,
                                           int64_t min_seq = 1);
// The scheduler's options as a front end reads them (predict, compare, plan and the Python
// module; unset: not given), checked and turned into SchedulerLimits in one place.
struct SchedulerArgs {
  std::optional<int64_t> max_batched_tokens;  // >= 1
  std::optional<std::string> max_seqs;        // a count in [1, 65536] or "auto"
  std::optional<std::string> schedule;        // mixed | prefill-first
  std::optional<double> request_rate;         // requests a second, [0.001, 1e6]
  std::optional<std::string> arrivals;        // with request_rate: poisson (default) | uniform
  std::optional<double> slo_ttft_ms, slo_tpot_ms;  // (0, 1e9] ms
  std::optional<double> range_ratio;               // [0, 1)
  // The first option given, as its CLI flag (--max-seqs); nullptr when none is.
  const char* first_given() const;
  // The limits; ConfigError naming the option (`python`: as the keyword argument, max_seqs,
  // else the flag, --max-seqs), and for arrivals without a request rate.
  SchedulerLimits limits(bool python = false) const;
};

// Continuous batching of `batch` requests that arrive together, each a prompt of `seq` tokens
// and `gen` output tokens, as vLLM's and SGLang's schedulers run them (first come, first served):
// every step first gives each running sequence that has its first token one decode token, then
// fills the rest of the token budget with prompt tokens, splitting a prompt across steps where
// it does not fit (chunked prefill; no budget: every prompt that may start runs whole). A
// request starts with its first prompt chunk, once fewer than max_seqs run, and runs until its
// last token. Its first token comes at the end of the step that runs the last of its prompt,
// each further token one step later. `step_ms` times a step; a run of decode-only steps with
// the same sequences (their mean context growing by one a step) is timed step by step up to 64
// steps, else at 33 evenly spaced steps integrated by the trapezoid rule (a decode step is
// smooth in its context length). ConfigError: a budget below the sequences that run at once
// (each decodes one token a step), or more than 20,000 steps with prompt tokens.
// `n` requests that fared alike: from arrival to the first token (ttft_ms) and to the last
// (e2el_ms), and (last token - first token) / (gen - 1) (tpot_ms).
struct RequestTimes {
  int64_t n = 0;
  double ttft_ms = 0, tpot_ms = 0, e2el_ms = 0;
};
// Percentiles over the requests, as vLLM's and SGLang's serving benchmarks report them
// (numpy.percentile: linear between the closest ranks).
struct LatencyPercentiles {
  double p50_ms = 0, p90_ms = 0, p99_ms = 0;
};
// The mean of `field` over every request of `requests` (0 for none).
double request_mean(const std::vector<RequestTimes>& requests, double RequestTimes::*field);
// The q-th percentile (0 to 100; 100: the largest) of `field` over every request of `requests`.
double request_percentile(const std::vector<RequestTimes>& requests, double RequestTimes::*field, double q);
LatencyPercentiles request_percentiles(const std::vector<RequestTimes>& requests, double RequestTimes::*field);
// The requests whose TTFT and TPOT are within `limits`' objectives (each where set), and their
// number a second over a run of `e2e_ms` (goodput; nothing without objectives).
struct Goodput {
  int64_t requests = 0;
  double rps = 0;
};
Goodput slo_goodput(const std::vector<RequestTimes>& requests, double e2e_ms, const SchedulerLimits& limits);
// The steps one schedule_serving run may take while requests are still to arrive (each decode
// step then is forecast apart); more is refused.
constexpr int64_t kMaxArrivalSteps = 1000000;
struct ServingSchedule {
  // Over `requests`: the mean and largest TTFT (from arrival to the first token), the mean TPOT.
  double ttft_mean_ms() const { return request_mean(requests, &RequestTimes::ttft_ms); }
  double ttft_max_ms() const { return request_percentile(requests, &RequestTimes::ttft_ms, 100); }
  double tpot_mean_ms() const { return request_mean(requests, &RequestTimes::tpot_ms); }
  double e2e_ms = 0;        // the last request's last token
  int64_t output_tokens = 0;  // every request's output tokens
  std::vector<RequestTimes> requests;  // every request, in order of completion
  int64_t steps = 0;          // steps in all
  int64_t prefill_steps = 0;  // steps with prompt tokens
  int64_t steps_timed = 0, decode_steps_timed = 0;  // step_ms calls: all, of decode-only steps
};
// `cached_prefix`: the first tokens of every prompt are in the cache already (prefix caching):
// each prompt runs its other seq - cached_prefix tokens, its first chunk after that prefix.
// With limits.range_ratio each request has its own lengths (request_lengths; prompts longer
// than the cached prefix), and a decode step's context is the mean over its sequences.
// `drawn`: those lengths as the caller drew them already (request_lengths with the same
// arguments), so that they are drawn once; nullptr draws them here.
ServingSchedule schedule_serving(int64_t batch, int64_t seq, int64_t gen, const SchedulerLimits& limits,
                                 const std::function<double(const ServingStep&)>& step_ms, int64_t cached_prefix = 0,
                                 const std::vector<RequestLength>* drawn = nullptr);

// `generate`: `batch` prompts of `seq` tokens, then gen - 1 decode steps with the context
// growing from seq to seq + gen - 2 cached tokens, scheduled by schedule_serving (without
// limits: one prefill step, whose time is the time to first token, then the decode steps).
// ttft_ms and tpot_ms are the means over the requests, e2e_ms the last request's end; memory
// holds the KV cache of the sequences that run at once (a `cached_prefix` shared by every prompt
// once: prefix caching, schedule_serving). Limits that bind need pp 1; `limits`
// holds the cap that max_seqs_auto chose (max_seqs, 0 where none binds).
// Prefill-decode disaggregation (SGLang's --disaggregation-mode prefill|decode, vLLM's and
// Dynamo's disaggregated serving): the prompts run on a prefill instance of its own tensor- (and
// expert-) parallel layout, their KV caches move to the decode instance, which decodes them.
// Several prefill instances of that layout can feed several decode instances of the serving
// layout (xPyD: x prefill, y decode instances), each request sent to the next prefill instance
// and the next decode instance in turn.
struct Disaggregation {
  int64_t prefill_tp = 0;  // 0: aggregated serving
  int64_t prefill_ep = 1;
  int64_t prefill_instances = 1;
  int64_t decode_instances = 1;
  bool active() const { return prefill_tp > 0; }
  // The GPUs of the prefill instances (0 when aggregated).
  int64_t gpus() const { return prefill_tp * prefill_instances; }
  // Every GPU of the replica, given one decode instance's (or, aggregated, the replica's own).
  int64_t replica_gpus(int64_t decode_instance_gpus) const {
    return gpus() + (active() ? decode_instances : 1) * decode_instance_gpus;
  }
};
// ConfigError for a prefill tp outside [1, 4096] or instances outside [1, 1024], naming the flag.
void check_disaggregation(const Disaggregation& d);
// "a prefill instance of tp P" or "N prefill instances of tp P", with " (ep E)" where E > 1,
// and " feeding M decode instances" where M > 1.
std::string prefill_instances_text(const Disaggregation& d);
// The layout's prefill instances per decode instance: "N", or "N per M" with M decode instances.
std::string instance_ratio_text(const Disaggregation& d);
struct DisaggForecast {
  Disaggregation layout;  // the prefill and decode instances forecast
  double prefill_ms = 0;  // the prefill instances' steps (their first tokens), their busy time summed
  // Every request's cache to its decode instance; kv_transfer_ms the time their links spend on
  // them, summed.
  double kv_transfer_gb = 0, kv_transfer_ms = 0;
  bool kv_over_network = false;                   // between nodes, else over the node's links
  double decode_ms = 0;   // the decode instances' steps (the other gen - 1 tokens), their busy time summed
  // Prefill instances per decode instance that keep both busy: prefill_ms / decode_ms.
  double prefill_per_decode = 0;
  MemoryEstimate prefill_memory;  // one GPU of the prefill instance at its largest step
};
struct GenerateForecast {
  std::string model, gpu;
  DType dtype = DType::kBf16, kv_dtype = DType::kBf16;
  int64_t batch = 0, seq = 0, gen = 0;  // the layout (tp, pp, ep, routing): prefill.par, prefill.routing_alpha
  SchedulerLimits limits;
  int64_t cached_prefix = 0;            // prompt tokens each request finds in the cache (prefix caching)
  double ttft_ms = 0, ttft_max_ms = 0, tpot_ms = 0, e2e_ms = 0, tokens_per_s = 0;
  LatencyPercentiles ttft, tpot;        // over the requests
  std::vector<RequestTimes> requests;   // every request (schedule_serving's)
  // With limits.has_slo(): the requests whose TTFT and TPOT are within the objectives, and
  // goodput, their number over the run's time (e2e_ms) in requests a second.
  int64_t slo_requests = 0;
  double goodput_rps = 0;
  double slo_attained_pct() const { return batch > 0 ? 100.0 * double(slo_requests) / double(batch) : 0.0; }
  int64_t steps = 0, prefill_steps = 0;
  int64_t decode_steps_forecast = 0;  // decode-only step graphs actually forecast
  // Speculative decoding: the draft's name (empty: none), its tokens a round, the acceptance
  // rate, the expected tokens a round and the last round's time (draft steps + verify step).
  std::string spec_draft;
  int64_t spec_tokens = 0;
  double spec_accept = 0, spec_expected_tokens = 0, spec_round_ms = 0, spec_draft_step_ms = 0;
  MemoryEstimate memory;
  ModelForecast prefill, last_decode;  // the first step and the last decode-only step forecast
  // Prefill-decode disaggregation (forecast_disaggregated): the prefill instance's figures;
  // memory and last_decode are then the decode instance's, prefill the prefill instance's step.
  std::optional<DisaggForecast> disagg;
  // Every GPU of the replica fits: the (decode) instance's and, disaggregated, the prefill's.
  bool fits() const { return memory.fits() && (!disagg || disagg->prefill_memory.fits()); }
  // What its kernels rest on: the prefill's and the last decode step's (merge_basis).
  std::vector<ForecastBasis> basis() const { return merge_basis(prefill.basis, last_decode.basis); }
};
// Speculative decoding with a draft model (vLLM's and SGLang's draft-model speculation): each
// round the draft decodes `tokens` tokens per sequence one by one, then the target verifies
// them in one step (tokens + 1 query tokens a sequence after its cache, logits for each), and
// keeps the accepted ones and one of its own. With each draft token accepted with probability
// `accept` (independently, as in Leviathan et al.'s analysis), a round yields
// expected_tokens() = (1 - accept^(tokens + 1)) / (1 - accept) tokens (tokens + 1 at 1).
struct SpecDecoding {
  const ModelConfig* draft = nullptr;  // runs on the same GPUs with the target's tp and dtypes
  int64_t tokens = 0;                  // draft tokens a round, 1..16
  double accept = 0;                   // 0..1
  double expected_tokens() const;
};

// `par`: tp, pp and ep as build_serving_graph takes them (dp and microbatches must be 1).
// `spec`: speculative decoding (no scheduler limits, pp 1, no sliding window): the time to first
// token adds the draft's prefill, and the decode steps become rounds, each the draft's decode
// steps and the target's verify step, forecast at contexts growing by expected_tokens() a round
// (every round up to 64, else 33 sampled); tpot_ms is their time over the gen - 1 tokens.
GenerateForecast forecast_generate(const ModelConfig& m, const GpuSpec& gpu, const KernelPredictor& kp, int64_t batch,
                                   int64_t seq, int64_t gen, DType dtype, DType kv_dtype, const Parallelism& par,
                                   double host_gap_us = 0, double routing_alpha = kUniformRouting, const SchedulerLimits& limits = {},
                                   int64_t cached_prefix = 0, const SpecDecoding* spec = nullptr);
// `generate` disaggregated (Disaggregation): the decode instance is `par` (pp 1), as
// forecast_generate forecasts it without scheduler limits (every prompt prefilled at once, then
// the batch decodes: its TPOT); the prefill instance runs the batch's prompts in one step on
// tp d.prefill_tp, ep d.prefill_ep (no DP attention); with d.prefill_instances N, N such
// instances share the prompts, request i going to instance i mod N (round robin), and the batch
// at once splits into shares of ceil or floor(batch / N) prompts run side by side; with
// d.decode_instances M, M decode instances of `par` decode them, request i going to decode
// instance i mod M. Each step's caches (every KV head or MLA latent of every layer, a sliding
// window's tokens in its layers) move over min(prefill, decode) GPU pairs at once: over the
// node's links at 80 % of interconnect_gbps where every instance fits on one node (the sheet's
// gpus_per_node), else through each GPU's network port at 80 % of network_gbps, plus the
// point-to-point latency; the moves go in the order the steps end, each once both the sending
// prefill instance's links and the receiving decode instance's are free (one move at a time
// on each side). A batch at once: each decode instance decodes
// its share (ceil or floor(batch / M)) once its last cache is there, at forecast_generate's
// TPOT for that share; TTFT = the mean over the requests of their decode instance's last
// cache's arrival (N = M = 1: the prefill step + the move); e2e = the last instance's end;
// memory a decode instance's at its largest share (its pass one token a sequence),
// DisaggForecast::prefill_memory a prefill instance's at its largest step. With
// limits.request_rate (and its arrivals and objectives) the requests arrive over time: each
// prefill instance, whenever idle, runs every prompt sent to it that has arrived in one step
// and moves their caches together; each decode instance takes each of its requests once its
// cache is there (first come, at most as many as its KV room holds) and every step decodes one token
// of each running request at their mean context (steps forecast once per sequences and context
// to 16 tokens); TTFT from arrival to the cache's arrival, TPOT from there to the last token.
// limits.max_batched_tokens B is the prefill instances' token budget (their chunked prefill):
// a step runs at most B prompt tokens of the arrived prompts, in order, the prompt that reaches
// the budget split there and continued next step (its chunk after the cached part, as
// build_serving_step_graph costs it); a prompt's cache moves when its last chunk's step ends.
// Not modelled: a sequence cap, prefill-first scheduling, prefix caching, speculative decoding
// (ConfigError), routing by load rather than in turn.
// Not measured: no disaggregated serving run is in ../shared.
// ConfigError "<option> with <flag>: not modelled (...)" for the first option disaggregated
// serving does not model (--max-seqs, --schedule, --cached-prefix, --spec-draft); --max-seqs
// auto is the decode instance's own cap and --max-batched-tokens the prefill instances' budget,
// both allowed. `option` names what asked for disaggregation (--prefill-tp, plan's --disaggregate).
void check_disaggregation_options(const std::string& option, const SchedulerLimits& limits, int64_t cached_prefix = 0,
                                  bool spec = false);
GenerateForecast forecast_disaggregated(const ModelConfig& m, const GpuSpec& gpu, const KernelPredictor& kp,
                                        int64_t batch, int64_t seq, int64_t gen, DType dtype, DType kv_dtype,
                                        const Parallelism& par, const Disaggregation& d, double host_gap_us = 0,
                                        double routing_alpha = kUniformRouting, const SchedulerLimits& limits = {});
std::string generate_json(const GenerateForecast& f);
std::string generate_table(const GenerateForecast& f, int top_ops = 10);

// `memory`: what one GPU holds (weights, KV cache, gradients, optimizer state, activations)
// and the fit verdict beside the times. `by_kind` holds the table's "by kind" rows ({kind: {ms,
// pct}}), `by_kind_pct_of` whether the % is of the step or, with pipeline stages, of the work.
std::string forecast_json(const ModelForecast& f, const MemoryEstimate* memory = nullptr);
// The memory keys of every JSON forecast: weights_gb, kv_cache_gb, gradients_gb, optimizer_gb,
// activations_gb, memory_gb (their sum, per GPU), gpu_memory_gb (the spec's), fits.
void add_memory_json(nlohmann::json& j, const MemoryEstimate& m);
// `v` where positive, else null (a figure JSON readers should see as absent: no price, no objective).
nlohmann::json positive_or_null(double v);
std::string forecast_csv(const ModelForecast& f);
std::string forecast_table(const ModelForecast& f, int top_ops = 10, const MemoryEstimate* memory = nullptr);

}  // namespace tilecast::predictor
