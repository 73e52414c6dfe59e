#pragma once
// One kernel to forecast: op + shape, its FLOPs and bytes, the launch model (tiles, CTAs,
// waves) on a GPU, and the MLP feature vector. Pure C++: shared by trainer and predictor.
// Formulas: docs/architecture.md#kernel-model.
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/gpu_spec.h"
#include "core/op_kind.h"

namespace tilecast {

// DType (core/op_kind.h): the element type of a kernel's inputs.
const char* dtype_name(DType d);  // fp32, tf32, fp16, bf16, fp8, fp8_block, fp8_static, int4, mxfp4, nvfp4, mxfp4_mxfp8
inline bool is_fp8(DType d) { return d == DType::kFp8 || d == DType::kFp8Block || d == DType::kFp8Static; }
// The scaled low-precision formats (FP8, NVFP4, MXFP4 x MXFP8): weights and the activation
// quantised per call, the rest of the model in BF16 (their activations and KV cache default to
// BF16; their CUTLASS kernels do not split K).
inline bool is_scaled_lowp(DType d) { return is_fp8(d) || d == DType::kNvfp4 || d == DType::kMxfp4Mxfp8; }
// Weight-only 4-bit formats (W4A16): BF16 activations, weights dequantised for BF16 tensor cores.
inline bool is_weight_only(DType d) { return d == DType::kInt4 || d == DType::kMxfp4; }
// The dtype a model's activations are in around kernels of dtype `d`: BF16 for the weight-only
// formats (their math runs in BF16 too) and for the scaled FP8/NVFP4 formats (their GEMMs
// quantise the BF16 activation per call), `d` otherwise. Serving graphs' norms, attention and
// activations take it.
inline DType activation_dtype(DType d) { return is_weight_only(d) || is_scaled_lowp(d) ? DType::kBf16 : d; }
// The dtype of mixed-precision training's weights, activations and collectives: BF16 for FP8
// training (only its GEMMs run in FP8: build_llm_training_graph), the training dtype otherwise.
inline DType training_storage_dtype(DType d) { return activation_dtype(d); }
// Our names plus the data's spellings (bfloat16, float16, float32); false if unknown.
bool try_dtype_from_string(const std::string& s, DType* out);
DType dtype_from_string(const std::string& s);  // ConfigError listing the known ones
std::string dtype_set_names(DTypeSet s);        // "fp32, fp16, bf16", in DType order
// "" when op's family models d, else why not: "op 'rope' (family memory_op) is modelled in
// fp32, fp16, bf16"; callers prefix the flag or the file and column.
std::string dtype_refusal(OpKind op, DType d);
// Bytes per activation element: 4, 4, 2, 2, 1, 1, 1; the weight-only formats' BF16 activations
// 2, and nvfp4's 2 (its activations live in BF16 between the GEMMs, which quantise them).
int dtype_size(DType d);
// Bytes per weight element (and per element of a GEMM's operands), scales included: dtype_size,
// but int4 0.5 + 2 / 128 (a 16-bit scale per group of 128), mxfp4 0.5 + 1 / 32 (an 8-bit scale
// per block of 32) and nvfp4 0.5 + 1 / 16 (an FP8 scale per block of 16).
double weight_bytes_per_elem(DType d);
// int4 at scale groups of `group` weights (a 16-bit scale each): 0.5 + 2 / group B a weight;
// group 0 is the modelled kernels' kInt4ModelledGroup (the data's Marlin and TRT-LLM rows).
constexpr int64_t kInt4ModelledGroup = 128;
double int4_bytes_per_weight(int64_t group);
// The GPU's dense tensor-core peak for `d` (GFLOP/s) as its spec sheet states it (the
// weight-only formats: BF16's, the math they run in); fp32 is the
// SIMT GEMM peak. A GPU without that tensor path (FP8 before Ada/Hopper) is ConfigError naming
// GPU and dtype. The plain roofline's compute bound.
double gemm_peak_gflops(const GpuSpec& gpu, DType d);
// The same, 0 where the GPU has no such path (no error): whether it runs `d` at all.
double gemm_peak_gflops_or_zero(const GpuSpec& gpu, DType d);
// The rate tilecast's kernel bounds and features use. fp32: the issue-bound SIMT SGEMM rate
// (GpuSpec::fp32_simt_gemm_gflops). Tensor cores: the sheet's peak taken at the boost clock, the
// clock a kernel alone runs at and the one every training GPU's sheet states its peak at (Hopper's
// sheets rate it at a lower clock: gemm_peak_gflops / GpuSpec::compute_clock_fraction); with
// `sustained`, inside seconds of back-to-back tensor-core work, the peak at the clock the sheet
// rates, or at the spec's measured sustained_clock_mhz (a GPU at its board-power limit lowers its
// clock: docs/accuracy.md, "Burst and sustained").
double gemm_rate_gflops(const GpuSpec& gpu, DType d, bool sustained = false);

// Shapes follow NeuSight: BMM (B,M,N)x(B,N,K)->(B,M,K); Linear input (M,N) times a (N->K)
// layer (B = 1); N is always the reduction dim. Vector ops act on a (B,H) tensor, H = last dim.
struct KernelQuery {
  OpKind op = OpKind::kBmm;
  int64_t b = 1, m = 0, n = 0, k = 0;  // GEMMs
  int64_t h = 0;                       // vector ops (with b)
  DType dtype = DType::kFp32;          // element type (NeuSight's data: FP32, TF32 off); gemm: the
                                       // tensor-core input type; attention: Q/K/V compute type
  // Attention (context_attention / generation_attention): b = batch, m = query tokens per
  // sequence (prefill: the prompt; decode: 1), k = query heads, h = KV heads, n = head_dim;
  int64_t ctx = 0;                     // decode: tokens in the KV cache (attended keys)
  int64_t prefix = 0;                  // prefill: tokens of each sequence already in the KV cache
                                       // (a chunk of a longer prompt: its m queries attend them
                                       // and, causally, each other); 0 = a whole prompt
  int64_t window = 0;                  // sliding window in tokens (0 = none)
  DType kv_dtype = DType::kBf16;       // KV cache element type
  // Fused MoE (op moe): b = tokens, h = hidden, n = expert FFN width (whole, before tp);
  int64_t experts = 0, topk = 0;       // experts in the layer, experts per token
  int64_t moe_tp = 1, moe_ep = 1;      // expert FFNs split over moe_tp ranks, experts over moe_ep
  // token routing (MoeLoad): 0 = balanced, kUniformRouting = uniform, > 0 a power law of this exponent
  double routing_alpha = 0;
  // moe with int4 weights: elements per 16-bit scale (e.g. Kimi-K2-Thinking's 32); 0 = the
  // modelled kernels' kInt4ModelledGroup (set_weight_group keeps it so)
  int64_t weight_group = 0;
  // The kernel runs inside a sustained load (a whole model's step), not alone: tensor-core
  // rates at the clock the GPU's sheet rates full-SM loads at (gemm_rate_gflops).
  bool sustained = false;
  // moe: the rank's kernel sees only the pairs dispatched to its experts (DeepEP's all-to-all),
  // none routed to other ranks (moe_other_rank_bytes 0).
  bool moe_dispatched = false;
};
// Every field of a KernelQuery, in order: two queries with the same key are the same kernel
// (graph_predictor's dedup, KernelPredictor's memo). Add a field there and here.
using KernelQueryKey = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int64_t, int64_t, int64_t,
                                  int64_t, int64_t, int64_t, int64_t, double, int64_t, bool, bool>;
inline KernelQueryKey query_key(const KernelQuery& q) {
  return {static_cast<int>(q.op), q.b, q.m, q.n, q.k, q.h, static_cast<int>(q.dtype), static_cast<int>(q.kv_dtype),
          q.ctx, q.window, q.prefix, q.experts, q.topk, q.moe_tp, q.moe_ep, q.routing_alpha, q.weight_group,
          q.sustained, q.moe_dispatched};
}
// Causal prefill of `batch` prompts of `seq` tokens; decode of one token per sequence over
// `ctx` cached tokens. Heads must be a multiple of kv_heads (GQA).
KernelQuery attention_prefill_q(int64_t batch, int64_t seq, int64_t heads, int64_t kv_heads, int64_t head_dim,
                                DType dtype, DType kv_dtype, int64_t window = 0);
KernelQuery attention_decode_q(int64_t batch, int64_t ctx, int64_t heads, int64_t kv_heads, int64_t head_dim,
                               DType dtype, DType kv_dtype, int64_t window = 0);
// Chunked prefill: `batch` chunks of `chunk` prompt tokens, each after `prefix` tokens of its
// prompt already cached (attention_prefill_q when prefix is 0).
KernelQuery attention_chunk_q(int64_t batch, int64_t chunk, int64_t prefix, int64_t heads, int64_t kv_heads,
                              int64_t head_dim, DType dtype, DType kv_dtype, int64_t window = 0);
// The attention library a GPU runs in SGLang for a query, from its architecture and the query's
// shape (never from the row): "trtllm_mha" on datacenter Blackwell (compute capability 10.x),
// "flash_attention" elsewhere; on datacenter Blackwell a windowed prefill whose head_dim
// TRT-LLM's kernels lack (they have 64, 128 and 256) falls back to "triton" (the B200's rows:
// every windowed head_dim-192 prefill is Triton's, every other prefill and decode TRT-LLM's).
const char* attention_library(const KernelQuery& q, const GpuSpec& gpu);
// Whether that choice is a fallback (Triton's prefill on datacenter Blackwell), not the GPU's
// own attention library. No network learns such rows (they run 20-100x below the family's
// fitted roofline, and mixed in they made the networks worse on the GPUs left out); a fitted
// roofline of their own (the manifest's `fallback_prior`) forecasts them, on the work their
// kernel does (fallback_physics_query).
bool fallback_attention(const KernelQuery& q, const GpuSpec& gpu);
// The work the fallback kernel does for a query: Triton's prefill on Blackwell computes (nearly)
// the whole causal triangle whatever the window (the B200's rows: t(1,024-key window) /
// t(128) 1.00 / 1.09 / 1.29 at the 10th / 50th / 90th percentile), and an FP8 query at the BF16
// rate (FP8 / BF16 time 0.83 / 0.90 / 0.94; scripts/llm-data-checks.py, check 6): the query
// without its window, in BF16 (the KV cache's type kept).
KernelQuery fallback_physics_query(const KernelQuery& q);
// What a window of 0 in an SGLang row measured (aiconfigurator's `window_size` column, where a
// file has one): FlashAttention (FA2, FA3) takes a window as the keys (left, right) a query may
// see, both ends inclusive, -1 meaning no limit, and SGLang's FlashAttention backend passes a
// window w > -1 as (w, 0); 0 as written is each query's own key alone. TRT-LLM's context
// (prefill) kernels take it alike; TRT-LLM's decode kernel takes it as no window. True where the
// GPU's library (attention_library) and the op take it as the query's own key alone: the
// training files bear it out (`python3 scripts/llm-data-checks.py`, check 4; docs/accuracy.md,
// "What SGLang's window 0 measured").
bool sglang_window_zero_is_own_key(const KernelQuery& q, const GpuSpec& gpu);
// A fused MoE layer on one rank: `tokens` tokens pick `topk` of `experts` experts; each expert
// is gate_up (hidden -> 2 x inter) and down (inter -> hidden). aiconfigurator's layout.
KernelQuery moe_q(int64_t tokens, int64_t hidden, int64_t inter, int64_t topk, int64_t experts, int64_t moe_tp,
                  int64_t moe_ep, DType dtype, double routing_alpha = 0);
// Uniform routing: each token's top-k picked at random among the experts, every expert alike:
// what a balanced router gives a batch in expectation, and serving forecasts' default.
// "balanced" (0) is the benchmark's spread instead, every pick a different expert until all are
// hit, as the data's balanced rows ran (MoeLoad).
constexpr double kUniformRouting = -1;
// Token routing of a MoE query: "balanced" (0), "uniform" (kUniformRouting) or "power_law_<a>"
// with 0 < a <= 10.
bool try_parse_routing(const std::string& s, double* alpha);
// Whether a query's routing_alpha is one of those (what the range checks of queries and serving
// layouts accept).
bool valid_routing(double alpha);
// Its inverse: "balanced" for 0, "uniform" for kUniformRouting, else "power_law_<a>" (shortest
// form that reads back as a).
std::string routing_name(double alpha);
// The fused-MoE kernel SGLang runs, from the architecture and the dtype: flashinfer's TRT-LLM
// kernel on datacenter Blackwell; elsewhere the Marlin MoE kernel for int4 weights and the
// Triton fused_moe kernel for the rest (mxfp4 included).
const char* moe_library(const GpuSpec& gpu, DType d);
// Expected per-expert load on the rank of the expert-parallel group a forecast is for: tokens
// routed there, experts hit, the busiest expert's tokens and the M tiles of the grouped GEMM
// (tile `tm` rows). Balanced: on one rank (ep 1) as aiconfigurator's collector routes it, every
// pick a different expert until all are hit (each expert floor or ceil of tokens x top-k /
// experts); over expert-parallel ranks, rank 0 with each token's top-k picked at random.
// Uniform: rank 0 with each token's top-k picked at random, on one rank too.
// Power law (`routing_alpha` a > 0): as aiconfigurator's collector routes the data's power-law
// rows, each expert's load drawn from a power law of exponent a and the most loaded rank the one
// timed; the expectation over a fixed seed's draws (core/kernel.cpp, power_law_moe_load). A
// power-law layer of no more picks than experts (tokens x top-k <= experts) takes the balanced
// load: the data's such rows ran as their balanced twins (compute_moe_load).
struct MoeLoad {
  // Expected values on the forecast's rank: tokens routed to it, experts hit, the busiest
  // expert's tokens (balanced over ranks: the expected load, below 1 when tokens x top-k <
  // experts, a feature as trained; on one rank and under a power law: the largest count, its
  // expectation for the power law), the busiest expert's tokens
  // given that it is hit (what predict-kernel shows), M tiles.
  double tokens = 0, hit = 0, max_load = 0, max_load_if_hit = 0, tiles_m = 0;
  int tm = 64;
};
MoeLoad moe_load(const KernelQuery& q);
// A fused MoE layer on one rank read as two stacked dense GEMMs (gemm_q), with the layer's FLOPs
// and weight bytes: gate_up of (tokens / experts hit) rows x hidden in x (hit x 2 x inter / tp)
// out, and down of the same rows x inter / tp in x (hit x hidden) out (hit and rows rounded to
// whole numbers, at least 1). Only for the dtypes the gemm family runs (bf16, fp16, fp8,
// fp8_block): false otherwise (the 4-bit weight formats, fp32), and where the stacked GEMMs
// exceed validate_query's limits though the layer does not.
bool moe_gemm_composite(const KernelQuery& moe, KernelQuery* gate_up, KernelQuery* down);
// Bytes a cast of a GEMM's BF16 activation (q.m tokens x q.n in-features) to FP8 moves: read in
// BF16, written in FP8, 3 bytes a value. An FP8 GEMM's own quantisation charges it
// (activation_quant_bytes), and a serving step runs it as a kernel of its own before a static
// scale's GEMM, whose kernel takes its activation in FP8 (serving_gemm, core/op_graph.cpp).
constexpr double kFp8CastBytesPerValue = 3.0;
double fp8_cast_bytes(const KernelQuery& q);
// Bytes a rank of an expert-parallel MoE layer moves for the (token, expert) pairs routed to
// other ranks' experts, where SGLang runs Triton's fused_moe or Marlin's MoE kernel (every GPU
// but datacenter Blackwell: moe_library): the top-k ids of other ranks' experts map to -1, the
// grouped gate_up and down GEMMs write zero rows for those pairs (2 x inter / tp and hidden
// BF16 values), SiLU-mul reads and writes their intermediate rows as any other, and the top-k
// sum reads their down rows: 2 x (5 x inter / tp + 2 x hidden) bytes a pair. The work grows
// with the layer's global tokens, not the rank's. 0 at EP 1, for TRT-LLM's MoE, which routes
// only a rank's own pairs, and for a layer behind DeepEP's dispatch (q.moe_dispatched).
double moe_other_rank_bytes(const KernelQuery& q, const GpuSpec& gpu);
// Those bytes' time at the GPU's DRAM bandwidth (KernelBounds::other_rank_s, the floor of
// forecast_floor_s, predict-kernel's `other ranks` line).
double moe_other_rank_s(const KernelQuery& q, const GpuSpec& gpu);
// Bytes of the memory passes SGLang's Triton and Marlin MoE launch apart from the grouped GEMMs,
// over this rank's own pairs: SiLU-mul reads each pair's gate_up row (2 x inter / tp BF16 values)
// and writes the product (inter / tp), the top-k sum reads each pair's down row (hidden) and
// writes each token's (hidden): 2 x (3 x inter / tp + hidden) bytes a pair and 2 x hidden a
// token. 0 on datacenter Blackwell (TRT-LLM's MoE fuses the activation into its first GEMM;
// its finalize, charged so, was worse in leave one GPU out: docs/accuracy.md).
double moe_pass_bytes(const KernelQuery& q, const GpuSpec& gpu);
// The same with the query's expected loads already computed (moe_bounds has them).
double moe_pass_bytes(const KernelQuery& q, const GpuSpec& gpu, const MoeLoad& load);
// The kernel library a query's forecast assumes on this GPU (attention_library, moe_library),
// or nullptr for families measured with one library.
const char* kernel_library(const KernelQuery& q, const GpuSpec& gpu);
// A tensor-core GEMM (op gemm): M tokens, N in-features (reduction), K out-features, as linear.
KernelQuery gemm_q(int64_t m, int64_t n, int64_t k, DType d);
// An int4 MoE query's scale group (0 or kInt4ModelledGroup: the modelled kernels', stored as 0 so
// that both are one kernel); validate_query checks it.
inline void set_weight_group(KernelQuery& q, int64_t group) { q.weight_group = group == kInt4ModelledGroup ? 0 : group; }

// Throws DataError if a dim is < 1 or absurd (> 2^31 per dim, > 2^40 elements per tensor).
void validate_query(const KernelQuery& q, const std::string& context);
// Parses "B,M,N,K" (bmm), "M,N,K" or "B,M,N,K" with B=1 (linear, gemm), "B,H" (vector ops),
// "B,S,H,KV,D" (attention_prefill), "B,CTX,H,KV,D" (attention_decode) and "T,H,F,K,E"
// (moe: tokens, hidden, expert FFN width, top-k, experts; moe_tp = moe_ep = 1, balanced).
KernelQuery parse_query(OpKind op, const std::string& shape);
// The same from numbers in that order, in `dtype` (attention: its KV cache too); validated
// (DataError naming `context`). ConfigError if the count does not fit the family's schema.
KernelQuery query_from_dims(OpKind op, const std::vector<int64_t>& dims, DType dtype, const std::string& context);
// A query's dimensions in its family's shape order (the order parse_query reads), without the
// MoE parallel/routing and attention window options.
std::vector<int64_t> query_dims(const KernelQuery& q);
// query_dims joined by commas, plus the options (",tp2", ",ep8", ",a1.2", ",w4096").
std::string query_shape_string(const KernelQuery& q);

double query_flops(const KernelQuery& q);  // useful arithmetic, FLOPs
double query_bytes(const KernelQuery& q);  // compulsory DRAM traffic, bytes

// GEMM tile chosen by the library: tm rows of the output (M), tk output columns (K),
// split_k partitions of the reduction.
struct GemmTile {
  int tm = 128, tk = 128, split_k = 1;
  bool operator==(const GemmTile& o) const {
    return tm == o.tm && tk == o.tk && split_k == o.split_k;
  }
};

struct LaunchInfo {
  int64_t num_ctas = 0;     // CTAs launched
  int threads_per_cta = 0;  // threads per CTA
  int ctas_per_sm = 1;      // resident CTAs per SM (occupancy)
  int64_t num_waves = 0;    // ceil(num_ctas / (num_sms * ctas_per_sm))
  double last_wave_fill = 1;  // fraction of CTA slots busy in the last wave, (0, 1]
  double elems_per_cta = 0;   // vector ops: output elements per CTA
  GemmTile tile;              // GEMMs
  MoeLoad moe;                // moe: expected expert loads (computed once per query)
};

// Launch model. GEMMs use `tile` (from the tile table); vector ops follow PyTorch's fixed
// launch heuristics, identical on every NVIDIA GPU in the data.
LaunchInfo launch_info(const KernelQuery& q, const GpuSpec& gpu, const GemmTile& tile = {});

struct KernelBounds {
  double compute_s = 0;  // wave-quantised compute time at FP32 peak
  double memory_s = 0;   // compulsory bytes at DRAM bandwidth
  // Quantising an FP8 activation before the matmul: a GEMM's is in base_s, an FP8 MoE layer's
  // only in the fitted roofline (in series after it).
  double quant_s = 0;
  double base_s = 0;     // max of the two (+ a GEMM's quant_s): latency at 100 % utilisation
  double waves = 1;      // waves of CTAs (LaunchInfo::num_waves), for the fitted roofline
  double ctas = 1;       // CTAs launched (LaunchInfo::num_ctas), for FittedRoofline::cta_ns
  // Kernels the call launches, each paying the fitted roofline's floor: a fused MoE layer in FP8
  // 1 + its activation's quantising kernels (activation_quant_launches).
  double launches = 1;
  double us_per_kcycle = 0;  // microseconds per 1,000 SM clock cycles (1e3 / boost clock, MHz)
  // DRAM bytes each SM must move per clock to keep the memory busy (bandwidth / (SMs x boost
  // clock)), for FittedRoofline::sm_bytes_per_cycle.
  double dram_bytes_per_sm_cycle = 0;
  // The fitted roofline's compute charges the busiest SM's share of the CTAs, ceil(CTAs / SMs)
  // (CTAs resident on one SM share its tensor cores), where compute_s charges the last wave's
  // slots in full (wave_frame): their ratio. 1 where one CTA takes an SM; below it for
  // occupancy-bound launches (fused MoE: 56 CTAs on 108 SMs, twelve-plus slots an SM).
  double fit_compute_scale = 1;
  double fitted_compute_s() const { return compute_s * fit_compute_scale; }
  // The fitted roofline's memory time over memory_s: below 1 where a repeated call reads its
  // working set from the L2 (a fused MoE layer timed alone: moe_l2_scale), 1 elsewhere.
  // memory_s, the networks' input, stays at DRAM bandwidth.
  double fit_memory_scale = 1;
  double fitted_memory_s() const { return memory_s * fit_memory_scale; }
  // fit_memory_scale were the kernel timed alone (KernelQuery::sustained false). Inside a model's
  // step the working set comes from DRAM (fit_memory_scale 1) where alone it would come from the
  // L2 (this below 1): the networks, trained on kernels timed alone, learned that speed-up, and
  // the predictor takes it back out of their share of the forecast (KernelPredictor).
  double alone_memory_scale = 1;
  // Fused MoE under expert parallelism, SGLang's Triton kernels: the pass over the pairs routed
  // to other ranks' experts (moe_other_rank_bytes: rows written as zeros, then read by the
  // SiLU-mul and the top-k sum) at DRAM bandwidth. The fitted roofline adds it after the
  // roofline, in series; the networks' base (base_s) leaves it out.
  double other_rank_s = 0;
  // Fused MoE, SGLang's Triton and Marlin kernels: the SiLU-mul and the top-k sum, kernels of
  // their own between and after the grouped GEMMs, over this rank's pairs (moe_pass_bytes) at
  // DRAM bandwidth. The fitted roofline runs them in series after the GEMMs' roofline, whose
  // memory side takes memory_s less them; the networks' base (base_s) is unchanged. Prefill: its
  // Q and O bytes' share of memory_s (each CTA's prologue and epilogue), likewise.
  double series_pass_s = 0;
};
KernelBounds kernel_bounds(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li);
// DRAM bytes each SM must move per clock to keep the memory busy (bandwidth / (SMs x boost
// clock)): the loads a CTA keeps in flight (Little's law) set how much of it a streaming kernel
// reaches. The LLM-era training GPUs span 2.4 (L40S) to 27.5 (B200); the H100 SXM is at 12.8,
// by the A100's 13.4.
double dram_bytes_per_sm_cycle(const GpuSpec& gpu);

// Absorbed multi-head latent attention's decode (DeepSeek-V2/V3): q a decode query of q.k heads
// over one cached latent (q.h = 1) of q.n = latent + rotary dims, the values its first
// `value_dim` dims. Per sequence and attended key: 2 q.k (q.n + value_dim) FLOPs (scores over
// q.n, the weighted sum over value_dim), the key's latent read once (q.n x the KV dtype); each
// query's q.n and output's value_dim in the activation dtype. Its bounds: the decode family's
// launch (one CTA per sequence, the cache split while SMs idle), compute at the tensor peak,
// memory at DRAM bandwidth. DataError for a query that is not of that shape.
double mla_decode_flops(const KernelQuery& q, int64_t value_dim);
double mla_decode_bytes(const KernelQuery& q, int64_t value_dim);
KernelBounds mla_decode_bounds(const KernelQuery& q, int64_t value_dim, const GpuSpec& gpu);

// A roofline fitted to a family's training rows (predictor config `prior: true`): a per-launch
// floor, a fixed cost per wave of CTAs (each CTA's prologue and epilogue: loading its inputs,
// writing its outputs), and the compute and memory bounds at fitted fractions of the sheet's
// rates:
//   latency = floor + waves x wave + max(compute / eta_compute, memory / eta_memory)
//             + (quant + other ranks' pass) / eta_memory.
// Four numbers shared by every GPU of the family; the network learns the residual on top.
constexpr double kMinFittedEta = 0.05;  // fit_roofline's lowest efficiency, by default
struct FittedRoofline {
  double floor_us = 0, wave_us = 0;
  double eta_compute = 1, eta_memory = 1;  // achieved fraction of the sheet's peak and bandwidth
  // The floor and the per-wave cost in thousands of SM clock cycles instead (`prior_floor:
  // cycles`): the same number of cycles takes longer on a slower-clocked GPU. A fit sets
  // either these or the microsecond pair, never both.
  double floor_kcycles = 0, wave_kcycles = 0;
  // A kernel library's cost per CTA, nanoseconds whatever the GPU (0: none): past the floor,
  // the launch takes at least CTAs x cta_ns. FlashAttention's decode at one cached token costs
  // 37 ns a (sequence, KV head) CTA on the A100 and on the L40S alike, neither a cost per wave
  // in microseconds nor in cycles (docs/accuracy.md, "What a decode CTA costs, by library").
  // Set per library from its rows (FamilyEntry::library_cta_ns), never fitted with the rest.
  double cta_ns = 0;
  // A kernel library's rate of loads per SM, bytes per SM clock cycle whatever the GPU (0:
  // none): its memory term takes memory x (1 / eta_memory + dram_bytes_per_sm_cycle /
  // sm_bytes_per_cycle), the bytes at DRAM bandwidth and again at what the SMs' loads in
  // flight sustain (Little's law), in series, as the memory_op family's SM-side term does.
  // Set per library from its rows (FamilyEntry::library_sm_bytes_per_cycle), as cta_ns.
  double sm_bytes_per_cycle = 0;
  bool operator==(const FittedRoofline& o) const {
    return floor_us == o.floor_us && wave_us == o.wave_us && eta_compute == o.eta_compute &&
           eta_memory == o.eta_memory && floor_kcycles == o.floor_kcycles && wave_kcycles == o.wave_kcycles &&
           cta_ns == o.cta_ns && sm_bytes_per_cycle == o.sm_bytes_per_cycle;
  }
};
double fitted_roofline_s(const KernelBounds& kb, const FittedRoofline& p);
// The fitted roofline's fixed costs alone (its floor, its cost per wave, and the floor of each
// launch after the first), seconds: the part of fitted_roofline_s that is no peak or bandwidth.
double fitted_fixed_s(const KernelBounds& kb, const FittedRoofline& p);

// PyTorch's layer norm over rows it cannot load 4 elements at a time (H not a multiple of 4):
// two kernels, RowwiseMomentsCUDAKernel then LayerNormForwardCUDAKernel, each reading the input
// (its bytes count that read twice). False for every other op.
bool layernorm_two_kernels(const KernelQuery& q);

// The base a family's network output scales, in training and forecasting alike: the fitted
// roofline when the family has one (`prior`), else the wave-quantised bound raised to the
// family's launch floor (`floor_s`, 0: none). `bound` receives which term dominates:
// "launch", "compute" or "memory".
double network_base_s(const KernelBounds& kb, const FittedRoofline* prior, double floor_s, const char** bound = nullptr);
// The four numbers minimising the mean |log(forecast / measured)| over the rows (bounds and
// measured seconds, same length, measured > 0): coordinate search over log grids (floor
// 0.1-100 us, wave 0 or 0.01-100 us, eta 0.05-1; with `in_cycles` floor 0.2-200 and wave 0 or
// 0.02-200 thousand cycles), from at most 50,000 evenly spaced rows; eta_memory at most
// `max_eta_memory`; the efficiencies' grid from `min_eta` (a fallback kernel library's rows run
// at a few % of the peak: 0.005) to 1. Deterministic.
FittedRoofline fit_roofline(const std::vector<KernelBounds>& bounds, const std::vector<double>& measured_s,
                            bool in_cycles = false, double max_eta_memory = 1, double min_eta = kMinFittedEta);

// The compute peak the spec sheet states for the query's family and dtype (GFLOP/s): the
// dtype's tensor peak for the LLM-era families, the FP32 GEMM or vector peak otherwise.
double sheet_peak_gflops(const KernelQuery& q, const GpuSpec& gpu);
// Plain roofline (no tiles, no waves): max(flops / sheet peak, bytes / bandwidth), seconds.
double roofline_s(const KernelQuery& q, const GpuSpec& gpu);
// Whether roofline_s is its compute half (else its bytes at DRAM bandwidth).
bool roofline_compute_bound(const KernelQuery& q, const GpuSpec& gpu);
// Its compute half: the query's FLOPs at the sheet peak (training leaves out rows that beat it).
double peak_s(const KernelQuery& q, const GpuSpec& gpu);
// The query's FLOPs at the fastest its kernel can run: the sheet peak, taken at the boost clock
// for a tensor-core kernel alone where the sheet rates its tensor peak at a lower clock (Hopper;
// gemm_rate_gflops). No kernel runs faster: forecasts are held to it.
double fastest_s(const KernelQuery& q, const GpuSpec& gpu);
// fastest_s, and for a Triton or Marlin MoE layer at EP > 1 the passes over the pairs routed to
// other ranks at DRAM bandwidth (moe_other_rank_bytes), if longer: the floor of a forecast on a
// GPU the family's network does not correct (KernelPredictor).
double forecast_floor_s(const KernelQuery& q, const GpuSpec& gpu);

// memory_op family (RMSNorm, SiLU-mul, RoPE, residual add), a fitted physics model per op:
//   latency = floor_kcycles x 1,000 / boost clock
//             + dram_factor x max(0, bytes - l2_resident_fraction x L2) / DRAM bandwidth
//             + sm_cycles_per_byte x bytes / (SMs x clock)
//             + thread_cycles_per_byte x bytes / (SMs x max resident threads per SM x clock)
// The third term is an SM-side rate (row reductions, address arithmetic, and the L2's own
// bandwidth for the bytes it serves): on GPUs with much DRAM bandwidth per SM these kernels do
// not reach DRAM speed. The fourth is a latency-bound rate (Little's law: each resident thread
// keeps a fixed number of bytes in flight for a memory latency of fixed cycles): vidur's
// RMSNorm reaches 34 % of the A100's DRAM bandwidth and 59 % of the A40's, but about the same
// rate per resident thread on both (scripts/memop-rates.py; docs/accuracy.md). Bytes up to
// l2_resident_fraction of the L2 are served from it and cost
// no DRAM time: a timed call repeated on the same tensors keeps a working set that fits, as a
// layer's activations stay in L2 between the kernel that writes them and the one that reads
// them. Coefficients (all >= 0) are fitted on measured layer ops of the training GPUs by
// `tilecast train --family memory_op`; l2_resident_fraction comes from configs/predictors/
// memory_op.yaml (0: every byte at DRAM speed, the model before session 26). The floor is in SM
// clock cycles since session 77 (microseconds before), as the other families' fixed costs:
// vidur's few-token floors follow the clock between the A100 and the A40 (docs/accuracy.md).
struct MemoryOpCoeffs {
  double floor_kcycles = 0;         // per-launch floor, thousands of SM cycles at the boost clock
  double dram_factor = 1;           // x time at the spec's DRAM bandwidth (bytes beyond the L2-resident share)
  double sm_cycles_per_byte = 0;    // SM cycles per byte, spread over all SMs
  double thread_cycles_per_byte = 0;  // resident-thread cycles per byte (SMs x max threads per SM x clock)
  double l2_resident_fraction = 0;  // share of the L2 a working set keeps resident, [0, 1]
  int64_t rows = 0;                 // rows fitted
};
// The model above in one line, as predict-kernel's text and JSON state it.
inline constexpr const char* kMemoryOpModelSummary =
    "physics: per-launch floor + DRAM time of the bytes not resident in L2 + SM-side and latency-bound time per byte "
    "(fitted)";
double memory_op_latency_s(const KernelQuery& q, const GpuSpec& gpu, const MemoryOpCoeffs& c);
// Of `bytes`, those the model serves from L2: min(bytes, l2_resident_fraction x L2).
double memory_op_l2_resident_bytes(double bytes, const GpuSpec& gpu, double l2_resident_fraction);
struct MemoryOpRow {
  const GpuSpec* gpu = nullptr;
  double bytes = 0;      // query_bytes
  double latency_s = 0;  // measured
};
// Non-negative least squares in relative error, each GPU weighing the same. Rows of a single
// GPU are fitted with l2_resident_fraction 0 whatever is asked: one GPU's L2 cannot say how a
// cache of another size carries (the result's field says which was used).
MemoryOpCoeffs fit_memory_op(const std::vector<MemoryOpRow>& rows, double l2_resident_fraction = 0);

// Feature schema. Bump kFeatureSchemaVersion whenever features change: weights trained on
// another schema are refused at load time.
constexpr int kFeatureSchemaVersion = 7;  // 7: ensembles (manifest lists member files)
const std::vector<std::string>& feature_names(Family f);
// Feature vector (log2-scaled, unnormalised) for the family's MLP.
void kernel_features(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li,
                     const KernelBounds& kb, float* out);
size_t num_features(Family f);
// Column of each named feature of the family; throws ConfigError naming an unknown one.
std::vector<size_t> feature_columns(Family f, const std::vector<std::string>& names);

}  // namespace tilecast
