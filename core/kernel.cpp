#include "core/kernel.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <cmath>
#include <cstring>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/units.h"

namespace tilecast {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 31;
constexpr double kMaxElems = 1099511627776.0;  // 2^40 elements per tensor

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Upper end (log2) of the row widths in the training data; see kernel_features.
constexpr double kRowWidthCap = 12.0;   // vector ops: H <= 4096

// Smallest slice of the reduction one split-K partition of a tensor-core GEMM takes.
constexpr int64_t kSplitMinReduction = 256;

int next_pow2(int64_t x) {
  int p = 1;
  while (p < x && p < (1 << 30)) p <<= 1;
  return p;
}

double lg(double x) { return std::log2(std::max(x, 1e-30)); }

// Board power per FLOP at a tensor-core peak, pJ: W / (GFLOP/s) x 1e3.
double pj_per_flop(const GpuSpec& gpu, double peak_gflops) {
  if (!(gpu.tdp_w > 0))
    throw ConfigError(gpu.origin + ": field 'tdp_w' (board power, W) is needed for tensor-core forecasts");
  return gpu.tdp_w * 1e3 / peak_gflops;
}

// Output tiles of a tensor-core GEMM (M rows by K output columns).
int64_t tc_output_tiles(const KernelQuery& q, const GemmTile& t) { return ceil_div(q.m, t.tm) * ceil_div(q.k, t.tk); }

// SM clock cycles per second over the whole GPU (SMs x boost clock): the rate of SM-side work.
double sm_cycles_per_s(const GpuSpec& gpu) { return double(gpu.num_sms) * gpu.boost_clock_mhz * 1e6; }
// Microseconds per 1,000 SM clock cycles at the boost clock: the unit of fixed costs in cycles.
double us_per_kcycle(const GpuSpec& gpu) { return 1e3 / gpu.boost_clock_mhz; }

// Bytes read from the L2 at 47.4 bytes per SM-cycle (the A100 whitepaper's 5,120 bytes per clock
// over its 108 SMs).
double l2_read_s(double bytes, const GpuSpec& gpu) { return bytes / (sm_cycles_per_s(gpu) * (5120.0 / 108.0)); }
// Bytes a repeated call reads with up to half the L2 of them resident: those from the L2
// (l2_read_s), the rest from DRAM.
double l2_resident_memory_s(double bytes, const GpuSpec& gpu) {
  const double resident = std::min(bytes, 0.5 * gpu.l2_cache_mb * kBytesPerMib);
  return transfer_s(bytes - resident, gpu.mem_bw_gbps) + l2_read_s(resident, gpu);
}

// Output tile of the tensor-core GEMM libraries, from the architecture alone: 128 x 128
// (Ampere, Ada, Blackwell 12.x: mma.sync) or 128 x 256 (Hopper wgmma, Blackwell 10.x tcgen05) output columns per
// CTA; small-M (decode) GEMMs take an M tile of the next power of two, 16 to 128.
// Split-K: when the output tiles leave SMs idle, cuBLAS (the BF16/FP16/TF32/FP32 GEMMs)
// splits the reduction so that tiles x splits fills the SMs, each split keeping at least
// kSplitMinReduction of it. The FP8 and NVFP4 scaled-mm kernels (CUTLASS, fixed configurations per M
// range) do not split.
GemmTile tensor_core_tile(const KernelQuery& q, const GpuSpec& gpu) {
  GemmTile t;
  t.tm = static_cast<int>(std::min<int64_t>(128, std::max<int64_t>(16, next_pow2(q.m))));
  t.tk = gpu.async_tensor_cores() ? 256 : 128;
  const int64_t tiles = tc_output_tiles(q, t);
  const int64_t by_sms = tiles < gpu.num_sms && !is_scaled_lowp(q.dtype) ? gpu.num_sms / tiles : 1;
  t.split_k = static_cast<int>(std::max<int64_t>(1, std::min(by_sms, q.n / kSplitMinReduction)));
  return t;
}

// Elements a thread of PyTorch's vectorized_layer_norm_kernel loads at once: rows whose width is
// not a multiple of it run the two-kernel path (vector_bytes).
constexpr int64_t kLayerNormVecElems = 4;

// log2 of the largest power of two dividing x, capped: vectorised loads and aligned
// library kernels need dims that are multiples of 2, 4, 8...; random training shapes are
// mostly unaligned while real models are aligned.
float alignment(int64_t x, int cap) {
  int tz = 0;
  while (tz < cap && x % (int64_t{2} << tz) == 0) ++tz;
  return static_cast<float>(tz);
}

}  // namespace

bool layernorm_two_kernels(const KernelQuery& q) { return q.op == OpKind::kLayerNorm && q.h % kLayerNormVecElems != 0; }

double dram_bytes_per_sm_cycle(const GpuSpec& gpu) { return gpu.mem_bw_gbps * 1e9 / sm_cycles_per_s(gpu); }

const char* dtype_name(DType d) {
  switch (d) {
    case DType::kFp32: return "fp32";
    case DType::kTf32: return "tf32";
    case DType::kFp16: return "fp16";
    case DType::kBf16: return "bf16";
    case DType::kFp8: return "fp8";
    case DType::kFp8Block: return "fp8_block";
    case DType::kFp8Static: return "fp8_static";
    case DType::kInt4: return "int4";
    case DType::kMxfp4: return "mxfp4";
    case DType::kNvfp4: return "nvfp4";
    case DType::kMxfp4Mxfp8: return "mxfp4_mxfp8";
  }
  return "?";
}

bool try_dtype_from_string(const std::string& s, DType* out) {
  static const std::pair<const char*, DType> names[] = {
      {"fp32", DType::kFp32},     {"float32", DType::kFp32},   {"tf32", DType::kTf32},
      {"fp16", DType::kFp16},     {"float16", DType::kFp16},   {"half", DType::kFp16},
      {"bf16", DType::kBf16},     {"bfloat16", DType::kBf16},  {"fp8", DType::kFp8},
      {"fp8_static", DType::kFp8Static}, {"fp8_block", DType::kFp8Block},
      // aiconfigurator's moe_dtype spellings of the weight-only formats
      {"int4", DType::kInt4},     {"int4_wo", DType::kInt4},   {"mxfp4", DType::kMxfp4},
      {"w4a16_mxfp4", DType::kMxfp4}, {"nvfp4", DType::kNvfp4},
      {"mxfp4_mxfp8", DType::kMxfp4Mxfp8}, {"w4a8_mxfp4_mxfp8", DType::kMxfp4Mxfp8}};
  for (const auto& n : names)
    if (s == n.first) {
      *out = n.second;
      return true;
    }
  return false;
}

DType dtype_from_string(const std::string& s) {
  DType d;
  if (!try_dtype_from_string(s, &d))
    throw ConfigError("unknown dtype '" + s + "' (" + dtype_set_names(~DTypeSet{0}) + ")");
  return d;
}

std::string dtype_set_names(DTypeSet set) {
  std::string out;
  for (DType d : kAllDTypes)
    if (set & dtype_bit(d)) out += (out.empty() ? "" : ", ") + std::string(dtype_name(d));
  return out;
}

std::string dtype_refusal(OpKind op, DType d) {
  const Family f = op_family(op);
  if (family_models_dtype(f, d)) return "";
  std::string why = std::string("op '") + op_name(op) + "' (family " + family_name(f) + ") is modelled in " +
                    dtype_set_names(family_traits(f).dtypes);
  if (!is_dtyped(f)) why += " (NeuSight's FP32 data; --op gemm for tensor-core GEMMs)";
  return why;
}

int dtype_size(DType d) {
  switch (d) {
    case DType::kFp32: case DType::kTf32: return 4;
    case DType::kFp16: case DType::kBf16: return 2;
    case DType::kFp8: case DType::kFp8Block: case DType::kFp8Static: return 1;
    case DType::kInt4: case DType::kMxfp4: case DType::kNvfp4: case DType::kMxfp4Mxfp8:
      return 2;  // BF16 activations
  }
  return 4;
}

double weight_bytes_per_elem(DType d) {
  switch (d) {
    case DType::kInt4: return int4_bytes_per_weight(0);
    case DType::kMxfp4: case DType::kMxfp4Mxfp8: return 0.5 + 1.0 / 32;
    case DType::kNvfp4: return 0.5 + 1.0 / 16;
    default: return dtype_size(d);
  }
}

double int4_bytes_per_weight(int64_t group) { return 0.5 + 2.0 / double(group > 0 ? group : kInt4ModelledGroup); }

namespace {
// The sheet's peak that dtype `d` runs at: "fp8" (FP8 and MXFP4 x MXFP8), "fp4" (NVFP4), else
// its activation's (the weight-only formats run in BF16).
std::string peak_key(DType d) {
  return is_fp8(d) || d == DType::kMxfp4Mxfp8 ? "fp8" : d == DType::kNvfp4 ? "fp4" : dtype_name(activation_dtype(d));
}
double stated_peak(const GpuSpec& gpu, const std::string& key) {
  const auto it = gpu.tensor_peak_gflops.find(key);
  return it != gpu.tensor_peak_gflops.end() && it->second > 0 ? it->second : 0.0;
}
}  // namespace

double gemm_peak_gflops_or_zero(const GpuSpec& gpu, DType d) {
  if (d == DType::kFp32) return gpu.fp32_gemm_peak_gflops();
  // MXFP4 x MXFP8 runs at the FP8 peak on Blackwell's block-scaled tensor cores, the generation
  // that brought FP4: a sheet without an FP4 peak has no such MMA.
  if (d == DType::kMxfp4Mxfp8 && stated_peak(gpu, "fp4") <= 0) return 0.0;
  return stated_peak(gpu, peak_key(d));
}

double gemm_peak_gflops(const GpuSpec& gpu, DType d) {
  if (const double peak = gemm_peak_gflops_or_zero(gpu, d); peak > 0 || d == DType::kFp32) return peak;
  if (d == DType::kMxfp4Mxfp8 && stated_peak(gpu, "fp4") <= 0)
    throw ConfigError("GPU '" + gpu.name + "' has no fp4 tensor-core peak in its spec: mxfp4_mxfp8 needs the " +
                      "block-scaled MXFP4 x MXFP8 tensor cores that start with Blackwell (" + gpu.origin + ")");
  const std::string key = peak_key(d);
  throw ConfigError("GPU '" + gpu.name + "' has no " + key + " tensor-core peak in its spec" +
                    (key == "fp8"   ? " (FP8 tensor cores start with Ada and Hopper)"
                     : key == "fp4" ? " (FP4 tensor cores start with Blackwell)"
                                    : "") +
                    " (" + gpu.origin + ")");
}

double gemm_rate_gflops(const GpuSpec& gpu, DType d, bool sustained) {
  if (d == DType::kFp32) return gpu.fp32_simt_gemm_gflops();
  const double at_boost = gemm_peak_gflops(gpu, d) / gpu.compute_clock_fraction();
  return sustained ? at_boost * gpu.sustained_clock_fraction() : at_boost;
}

KernelQuery gemm_q(int64_t m, int64_t n, int64_t k, DType d) {
  KernelQuery q;
  q.op = OpKind::kGemm;
  q.b = 1, q.m = m, q.n = n, q.k = k;
  q.dtype = d;
  return q;
}

KernelQuery attention_prefill_q(int64_t batch, int64_t seq, int64_t heads, int64_t kv_heads, int64_t head_dim,
                                DType dtype, DType kv_dtype, int64_t window) {
  KernelQuery q;
  q.op = OpKind::kAttnPrefill;
  q.b = batch, q.m = seq, q.k = heads, q.h = kv_heads, q.n = head_dim;
  q.ctx = seq, q.window = window, q.dtype = dtype, q.kv_dtype = kv_dtype;
  return q;
}

KernelQuery attention_decode_q(int64_t batch, int64_t ctx, int64_t heads, int64_t kv_heads, int64_t head_dim,
                               DType dtype, DType kv_dtype, int64_t window) {
  KernelQuery q = attention_prefill_q(batch, 1, heads, kv_heads, head_dim, dtype, kv_dtype, window);
  q.op = OpKind::kAttnDecode;
  q.ctx = ctx;
  return q;
}

KernelQuery attention_chunk_q(int64_t batch, int64_t chunk, int64_t prefix, int64_t heads, int64_t kv_heads,
                              int64_t head_dim, DType dtype, DType kv_dtype, int64_t window) {
  KernelQuery q = attention_prefill_q(batch, chunk, heads, kv_heads, head_dim, dtype, kv_dtype, window);
  q.prefix = prefix;
  return q;
}

KernelQuery moe_q(int64_t tokens, int64_t hidden, int64_t inter, int64_t topk, int64_t experts, int64_t moe_tp,
                  int64_t moe_ep, DType dtype, double routing_alpha) {
  KernelQuery q;
  q.op = OpKind::kMoe;
  q.b = tokens, q.h = hidden, q.n = inter;
  q.topk = topk, q.experts = experts, q.moe_tp = moe_tp, q.moe_ep = moe_ep;
  q.routing_alpha = routing_alpha;
  q.dtype = dtype;
  return q;
}

bool try_parse_routing(const std::string& s, double* alpha) {
  if (s == "balanced" || s == "uniform") {
    *alpha = s == "balanced" ? 0 : kUniformRouting;
    return true;
  }
  if (s.rfind("power_law_", 0) != 0 || s.size() == 10) return false;
  char* end = nullptr;
  const double a = std::strtod(s.c_str() + 10, &end);
  if (*end != '\0' || !(a > 0 && a <= 10)) return false;
  *alpha = a;
  return true;
}

bool valid_routing(double alpha) { return alpha == kUniformRouting || (alpha >= 0 && alpha <= 10); }

std::string routing_name(double alpha) {
  if (alpha == 0) return "balanced";
  if (alpha == kUniformRouting) return "uniform";
  std::ostringstream os;
  os.precision(15);
  os << "power_law_" << alpha;
  return os.str();
}

namespace {
// Datacenter Blackwell (tcgen05): the GPUs whose attention and MoE kernels are TRT-LLM's in the
// data (SGLang's FlashAttention and Triton kernels elsewhere).
bool trtllm_kernels(const GpuSpec& gpu) { return gpu.arch == "blackwell" && gpu.async_tensor_cores(); }
}  // namespace

const char* moe_library(const GpuSpec& gpu, DType d) {
  if (trtllm_kernels(gpu)) return "sglang_flashinfer_trtllm_moe";
  return d == DType::kInt4 ? "sglang_marlin_moe" : "sglang_fused_moe_triton";
}

namespace {
// Triton fused_moe's BLOCK_SIZE_M follows the tokens per expert (16..128).
int moe_block_m(double tokens_on_rank, int64_t local_experts) {
  const double per_hit_guess = std::max(1.0, tokens_on_rank / std::max(1.0, double(local_experts)));
  return static_cast<int>(
      std::min<int64_t>(128, std::max<int64_t>(16, next_pow2(static_cast<int64_t>(std::ceil(per_hit_guess))))));
}

// One rank's whole-token loads (balanced on one rank, a power law's draw): the experts hit, the
// busiest one's tokens and the grouped GEMM's M tiles of `tm` rows.
struct RankCounts {
  double hit = 0, max_load = 0, tiles_m = 0;
};
RankCounts count_rank(const std::vector<double>& loads, int tm) {
  RankCounts c;
  for (double l : loads) {
    if (l <= 0) continue;
    c.hit += 1;
    c.max_load = std::max(c.max_load, l);
    c.tiles_m += std::ceil(l / tm);
  }
  return c;
}

// Uniform routing, and balanced over expert-parallel ranks: each token picks top-k of the
// experts at random, every expert alike; rank 0 holds E / ep of them. An expert is hit unless no
// token picks it: 1 - (1 - K/E)^T.
MoeLoad random_moe_load(const KernelQuery& q) {
  const int64_t local = q.experts / q.moe_ep;
  const double a = double(q.b) * q.topk;
  MoeLoad r;
  std::vector<double> load(static_cast<size_t>(local));
  for (int64_t i = 1; i <= local; ++i) {
    load[i - 1] = std::min(double(q.b), a / double(q.experts));
    r.tokens += load[i - 1];
    r.max_load = std::max(r.max_load, load[i - 1]);
  }
  r.tm = moe_block_m(r.tokens, local);
  double last_l = -1, p_hit = 0;
  for (double l : load) {
    if (l != last_l) p_hit = 1.0 - std::pow(1.0 - std::min(1.0, l / double(q.b)), double(q.b)), last_l = l;
    r.hit += p_hit;
    if (p_hit > 0) r.max_load_if_hit = std::max(r.max_load_if_hit, l / p_hit);
    r.tiles_m += p_hit * std::ceil(std::max(1.0, l) / r.tm);
  }
  r.hit = std::max(r.hit, 1e-9);
  return r;
}

// Balanced routing on one rank (ep 1), as aiconfigurator's collector routes it (its
// balanced_logits): token i picks experts (i + j x ceil(E / K)) mod E, j < K, so every pick is
// a different expert until all are hit, and every expert takes floor or ceil of T x K / E
// tokens. Exact: each E tokens give each expert K (each j a permutation), the remaining T mod E
// tokens a run of experts from each j x ceil(E / K). The data's layers ran so (check 15 of
// scripts/llm-data-checks.py: a layer's time at T x K / E = 0.25 / 0.5 / 1 / 2 is 0.25-0.30 /
// 0.49-0.52 / 0.97-0.99 / 0.98-0.99 of its time at 4, where picks at random would give 0.23 /
// 0.40 / 0.64 / 0.88). Over expert-parallel ranks the picks stay random (random_moe_load): rank
// 0 of the collector's pattern holds more of the few picks than the data's timed ranks ran
// (docs/accuracy.md, "Balanced as the collector routes it, on one rank").
MoeLoad balanced_moe_load(const KernelQuery& q) {
  if (q.moe_ep > 1) return random_moe_load(q);
  const int64_t e = q.experts, k = q.topk;
  const int64_t stride = (e + k - 1) / k, full = q.b / e, rem = q.b % e;
  std::vector<int64_t> diff(static_cast<size_t>(e) + 1, 0);
  for (int64_t j = 0; j < k && rem > 0; ++j) {
    const int64_t start = (j * stride) % e, end = start + rem;
    diff[size_t(start)] += 1;
    if (end <= e) {
      diff[size_t(end)] -= 1;
    } else {
      diff[size_t(e)] -= 1;
      diff[0] += 1;
      diff[size_t(end - e)] -= 1;
    }
  }
  MoeLoad r;
  std::vector<double> load(static_cast<size_t>(e));
  int64_t run = 0;
  for (int64_t i = 0; i < e; ++i) {
    run += diff[size_t(i)];
    r.tokens += (load[size_t(i)] = std::min(double(q.b), double(full * k + run)));
  }
  r.tm = moe_block_m(r.tokens, e);
  const RankCounts c = count_rank(load, r.tm);
  r.hit = std::max(c.hit, 1e-9);
  r.max_load = r.max_load_if_hit = c.max_load;
  r.tiles_m = c.tiles_m;
  return r;
}

// Power-law routing as aiconfigurator's MoE collector generates it (its power_law_logits_v3,
// which the data's `power_law_<a>` rows ran), where the picks outnumber the experts (tokens x
// top-k > experts; compute_moe_load takes the balanced load below that, as the data's rows ran,
// where the collector draws from [0.01, 2] instead): each expert's load is drawn independently
// from a power law of exponent a bounded to [1, 0.8 x tokens], scaled to tokens x top-k
// assignments and rounded (the remainder added to the most loaded experts, or taken from the
// least; equal counts ordered by their draws), and the expert-parallel rank with the most
// assignments is the one timed. An expert takes a token at most once. The expectation over
// kPowerLawTrials draws of a fixed seed: deterministic, the same on every machine.
constexpr int kPowerLawTrials = 32;
MoeLoad power_law_moe_load(const KernelQuery& q) {
  const int64_t e = q.experts, local = q.experts / q.moe_ep, ranks = q.moe_ep;
  const double alpha = q.routing_alpha, cap = double(q.b);
  const int64_t target = q.b * q.topk;
  TC_CHECK(target > e, "power_law_moe_load: the picks must outnumber the experts (compute_moe_load)");
  const double xmin = 1.0, xmax = std::max(1.0, 0.8 * double(q.b));
  // Inverse CDF of the bounded power law; alpha == 1 is log-uniform.
  const bool log_uniform = std::fabs(1.0 - alpha) < 1e-9;
  const double lo = log_uniform ? 0 : std::pow(xmin, 1.0 - alpha), span = log_uniform ? 0 : std::pow(xmax, 1.0 - alpha) - lo;
  auto draw = [&](double u) {
    return log_uniform ? xmin * std::pow(xmax / xmin, u) : std::pow(span * u + lo, 1.0 / (1.0 - alpha));
  };
  // splitmix64 of a fixed seed: the same stream on every platform (std::uniform_real_distribution's is not).
  uint64_t state = 0x7469'6c65'6361'7374ULL;  // "tilecast"
  auto uniform = [&state]() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return double(z >> 11) * 0x1.0p-53;
  };
  std::vector<double> x(static_cast<size_t>(e)), c(static_cast<size_t>(e));
  std::vector<int64_t> order(static_cast<size_t>(e));
  std::vector<std::vector<double>> rank_loads;  // the timed rank's loads, per trial
  rank_loads.reserve(kPowerLawTrials);
  double tokens = 0;
  for (int t = 0; t < kPowerLawTrials; ++t) {
    double sum = 0;
    for (auto& v : x) sum += (v = draw(uniform()));
    double assigned = 0;
    for (size_t i = 0; i < x.size(); ++i) assigned += (c[i] = std::nearbyint(x[i] / sum * double(target)));
    const int64_t delta = target - static_cast<int64_t>(assigned);
    if (delta != 0) {
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
      // Most loaded first by the rounded count, then by the drawn load: among experts of equal
      // counts the remainder goes to those whose draws were largest (anywhere among the ranks),
      // not to the lowest-numbered ones (on the first ranks).
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const size_t i = size_t(a), j = size_t(b);
        return c[i] != c[j] ? c[i] > c[j] : x[i] != x[j] ? x[i] > x[j] : a < b;
      });
      if (delta > 0) {
        for (int64_t i = 0; i < delta; ++i) c[size_t(order[size_t(i % e)])] += 1;
      } else {
        for (int64_t i = 0; i < -delta; ++i) {
          const size_t j = size_t(order[size_t(e - 1 - (i % e))]);
          if (c[j] > 0)
            c[j] -= 1;
          else
            *std::max_element(c.begin(), c.end()) -= 1;
        }
      }
    }
    int64_t best = 0;
    double best_sum = -1;
    for (int64_t r = 0; r < ranks; ++r) {
      double s = 0;
      for (int64_t i = r * local; i < (r + 1) * local; ++i) s += std::min(cap, c[size_t(i)]);
      if (s > best_sum) best_sum = s, best = r;
    }
    std::vector<double> loads(static_cast<size_t>(local));
    for (int64_t i = 0; i < local; ++i) loads[size_t(i)] = std::min(cap, c[size_t(best * local + i)]);
    tokens += best_sum;
    rank_loads.push_back(std::move(loads));
  }
  MoeLoad r;
  r.tokens = tokens / kPowerLawTrials;
  r.tm = moe_block_m(r.tokens, local);
  double hit = 0, max_load = 0, tiles = 0;
  for (const auto& loads : rank_loads) {
    const RankCounts c = count_rank(loads, r.tm);
    hit += c.hit, max_load += c.max_load, tiles += c.tiles_m;
  }
  r.hit = std::max(hit / kPowerLawTrials, 1e-9);
  r.max_load = r.max_load_if_hit = max_load / kPowerLawTrials;
  r.tiles_m = tiles / kPowerLawTrials;
  return r;
}

MoeLoad compute_moe_load(const KernelQuery& q) {
  // Where the tokens' picks number no more than the experts (T x K <= E), the collector's power
  // law rows run as their balanced twins: the median t(power law) / t(balanced) of the layers
  // timed both ways is 0.91-1.11 on every GPU, library and ep there (check 15 of
  // scripts/llm-data-checks.py), where the draws below would give the busiest rank about twice
  // a balanced rank's picks (22 picks of 512 experts over 8 ranks: 5.1 against 2.75). Leave one
  // GPU out, the eleven cells' mean 31.9 -> 31.7 % on plausible rows, 33.7 -> 31.7 % on every
  // row at seed 0 (docs/accuracy.md, "Few picks under a power law"). Near T x K = E on one rank
  // they hit fewer experts than the balanced spread (2,816 x 704, top-8 of 128, 16 tokens on the
  // L40S: 1.05-1.14 ms against 2.22 ms balanced), yet random picks for them measured worse in
  // leave one GPU out (session 82, "Balanced as the collector routes it, on one rank").
  if (q.routing_alpha == kUniformRouting) return random_moe_load(q);
  if (q.routing_alpha == 0 || q.b * q.topk <= q.experts) return balanced_moe_load(q);
  // The draws cost E x kPowerLawTrials powers: kept per thread by the fields they read (a
  // training set has a few thousand routings over hundreds of thousands of rows).
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, double>;
  thread_local std::map<Key, MoeLoad> cache;
  const Key key{q.b, q.topk, q.experts, q.moe_ep, q.routing_alpha};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() >= 65536) cache.clear();
  return cache.emplace(key, power_law_moe_load(q)).first->second;
}
}  // namespace

MoeLoad moe_load(const KernelQuery& q) {
  // One forecast asks for the same query's load several times (launch, FLOPs and bytes for the
  // roofline, the peak clamp, the implausible-row rule): the last one is kept per thread.
  // Keyed by exactly the fields compute_moe_load reads.
  struct Memo {
    bool valid = false;
    int64_t b = 0, topk = 0, experts = 0, moe_ep = 0;
    double alpha = 0;
    MoeLoad load;
  };
  thread_local Memo memo;
  if (!(memo.valid && memo.b == q.b && memo.topk == q.topk && memo.experts == q.experts && memo.moe_ep == q.moe_ep &&
        memo.alpha == q.routing_alpha))
    memo = {true, q.b, q.topk, q.experts, q.moe_ep, q.routing_alpha, compute_moe_load(q)};
  return memo.load;
}

bool moe_gemm_composite(const KernelQuery& q, KernelQuery* gate_up, KernelQuery* down) {
  if (q.op != OpKind::kMoe) return false;
  if (q.dtype != DType::kBf16 && q.dtype != DType::kFp16 && q.dtype != DType::kFp8 && q.dtype != DType::kFp8Block)
    return false;
  const MoeLoad l = moe_load(q);
  const int64_t hit = std::max<int64_t>(1, std::llround(l.hit));
  const int64_t rows = std::max<int64_t>(1, std::llround(l.tokens / l.hit));
  const int64_t f = q.n / q.moe_tp;
  *gate_up = gemm_q(rows, q.h, hit * 2 * f, q.dtype);
  *down = gemm_q(rows, f, hit * q.h, q.dtype);
  // Stacked, the experts' weights can exceed one query's limits where each expert's do not (a
  // layer of thousands of wide experts): no GEMM twin then.
  try {
    validate_query(*gate_up, "gate_up");
    validate_query(*down, "down");
  } catch (const DataError&) {
    return false;
  }
  return true;
}

// Bytes of a MoE layer's intermediate values: BF16, whatever the weights' dtype.
constexpr double kMoeIntermediateBytes = 2;

double moe_other_rank_bytes(const KernelQuery& q, const GpuSpec& gpu) {
  if (q.op != OpKind::kMoe || q.moe_ep <= 1 || q.moe_dispatched || trtllm_kernels(gpu)) return 0;
  const double other_pairs = std::max(0.0, double(q.b) * q.topk - moe_load(q).tokens);
  return other_pairs * kMoeIntermediateBytes * (5.0 * double(q.n / q.moe_tp) + 2.0 * double(q.h));
}
double moe_other_rank_s(const KernelQuery& q, const GpuSpec& gpu) {
  return transfer_s(moe_other_rank_bytes(q, gpu), gpu.mem_bw_gbps);
}
double moe_pass_bytes(const KernelQuery& q, const GpuSpec& gpu, const MoeLoad& load) {
  if (q.op != OpKind::kMoe || trtllm_kernels(gpu)) return 0;
  return kMoeIntermediateBytes * (load.tokens * (3.0 * double(q.n / q.moe_tp) + double(q.h)) + double(q.b) * q.h);
}
double moe_pass_bytes(const KernelQuery& q, const GpuSpec& gpu) { return moe_pass_bytes(q, gpu, moe_load(q)); }
double fp8_cast_bytes(const KernelQuery& q) { return kFp8CastBytesPerValue * double(q.m) * q.n; }

namespace {
// A head_dim TRT-LLM's context (prefill) attention kernels are built for.
bool trtllm_head_dim(int64_t head_dim) { return head_dim == 64 || head_dim == 128 || head_dim == 256; }
}  // namespace

bool fallback_attention(const KernelQuery& q, const GpuSpec& gpu) {
  return trtllm_kernels(gpu) && q.op == OpKind::kAttnPrefill && q.window > 0 && !trtllm_head_dim(q.n);
}

const char* attention_library(const KernelQuery& q, const GpuSpec& gpu) {
  if (!trtllm_kernels(gpu)) return "flash_attention";
  return fallback_attention(q, gpu) ? "triton" : "trtllm_mha";
}

bool sglang_window_zero_is_own_key(const KernelQuery& q, const GpuSpec& gpu) {
  if (!is_attention(op_family(q.op)) || q.window != 0) return false;
  return std::strcmp(attention_library(q, gpu), "flash_attention") == 0 || q.op == OpKind::kAttnPrefill;
}

KernelQuery fallback_physics_query(const KernelQuery& q) {
  KernelQuery whole = q;
  whole.window = 0;
  if (is_fp8(whole.dtype)) whole.dtype = DType::kBf16;
  return whole;
}

const char* kernel_library(const KernelQuery& q, const GpuSpec& gpu) {
  if (is_attention(op_family(q.op))) return attention_library(q, gpu);
  if (q.op == OpKind::kMoe) return moe_library(gpu, q.dtype);
  return nullptr;
}

namespace {
// Keys the first s queries of a causal prompt attend in all (each at most w).
double causal_keys(double s, double w) { return w >= s ? s * (s + 1) / 2 : w * (w + 1) / 2 + (s - w) * w; }
// Keys each query attends, summed over the queries of one sequence (causal, optional window;
// a chunk after `prefix` cached tokens: queries prefix + 1 .. prefix + m of the prompt).
double attended_keys(const KernelQuery& q) {
  const double w = q.window > 0 ? double(q.window) : 1e30;
  if (q.op == OpKind::kAttnDecode) return std::min(double(q.ctx), w);
  const double p = double(q.prefix);
  return causal_keys(p + double(q.m), w) - causal_keys(p, w);
}
constexpr int64_t kAttnQueryBlock = 128;  // FlashAttention's query tile
constexpr int64_t kDecodeSplit = 256;     // split-KV chunk of flash-decoding kernels
}  // namespace

namespace {
// ---- Per-family physics: one row of kPhysics per kernel family ---------------------------
// A family's useful FLOPs and compulsory DRAM bytes, its launch (CTAs, threads, tile), its
// compute and memory bounds, the sheet peak its plain roofline uses and the features its
// network reads are its functions below and one row of kPhysics; the public functions after
// the table (query_flops, query_bytes, launch_info, kernel_bounds, sheet_peak_gflops,
// feature_names, kernel_features) only dispatch on it. Adding a family is its functions here,
// a row of kPhysics and a row of kFamilyTable (core/op_kind.h).

// -- Shape schemas: each family's dims in --shape / CSV order, and their checks.
void check_dim(const std::string& context, int64_t v, const char* dim) {
  if (v < 1 || v > kMaxDim)
    throw DataError(context + ": dimension " + dim + " = " + std::to_string(v) + " out of range [1, 2^31]");
}
void mnk_validate(const KernelQuery& q, const std::string& context) {
  check_dim(context, q.m, "M");
  check_dim(context, q.n, "N");
  check_dim(context, q.k, "K");
  double biggest = std::max({double(q.b) * q.m * q.n, double(q.b) * q.n * q.k,
                             double(q.b) * q.m * q.k});
  if (biggest > kMaxElems) throw DataError(context + ": tensor larger than 2^40 elements");
}
void vector_validate(const KernelQuery& q, const std::string& context) {
  check_dim(context, q.h, "H");
  if (double(q.b) * q.h > kMaxElems) throw DataError(context + ": tensor larger than 2^40 elements");
}
void attention_validate(const KernelQuery& q, const std::string& context) {
  check_dim(context, q.m, "S");
  check_dim(context, q.k, "H");
  check_dim(context, q.h, "KV");
  check_dim(context, q.n, "D");
  check_dim(context, q.ctx, "CTX");
  if (q.n > 1024) throw DataError(context + ": head_dim " + std::to_string(q.n) + " out of range [1, 1024]");
  if (q.k % q.h != 0)
    throw DataError(context + ": " + std::to_string(q.k) + " query heads are not a multiple of " +
                    std::to_string(q.h) + " KV heads");
  if (q.window < 0) throw DataError(context + ": window must be >= 0");
  if (q.prefix < 0 || q.prefix > kMaxDim || (q.prefix > 0 && q.op != OpKind::kAttnPrefill))
    throw DataError(context + ": prefix " + std::to_string(q.prefix) + " out of range (prefill chunks only, [0, 2^31])");
  if (double(q.b) * std::max(q.m + q.prefix, q.ctx) * q.k * q.n > kMaxElems)
    throw DataError(context + ": tensor larger than 2^40 elements");
}
void moe_validate(const KernelQuery& q, const std::string& context) {
  check_dim(context, q.h, "H");
  check_dim(context, q.n, "F");
  check_dim(context, q.experts, "E");
  check_dim(context, q.topk, "K");
  if (q.topk > q.experts)
    throw DataError(context + ": top-k " + std::to_string(q.topk) + " exceeds the " + std::to_string(q.experts) + " experts");
  if (q.moe_tp < 1 || q.moe_ep < 1 || q.n % q.moe_tp != 0 || q.experts % q.moe_ep != 0)
    throw DataError(context + ": moe_tp must divide the expert FFN width and moe_ep the experts (got tp " +
                    std::to_string(q.moe_tp) + ", ep " + std::to_string(q.moe_ep) + ")");
  if (q.experts > 65536) throw DataError(context + ": " + std::to_string(q.experts) + " experts out of range [1, 65536]");
  if (!valid_routing(q.routing_alpha))
    throw DataError(context + ": routing power-law exponent must be in [0, 10]");
  if (q.weight_group != 0 && (q.dtype != DType::kInt4 || q.weight_group < 16 || q.weight_group > 1024 || q.h % q.weight_group != 0 ||
                              (q.n / q.moe_tp) % q.weight_group != 0))
    throw DataError(context + ": a weight scale group (" + std::to_string(q.weight_group) +
                    ") applies to int4 experts, 16-1024 elements dividing the hidden width and the rank's FFN width");
  if (double(q.b) * q.topk * std::max(q.h, q.n) > kMaxElems || double(q.experts) * q.h * q.n > kMaxElems)
    throw DataError(context + ": tensor larger than 2^40 elements");
}

std::vector<int64_t> bmm_dims(const KernelQuery& q) { return {q.b, q.m, q.n, q.k}; }
std::vector<int64_t> mnk_dims(const KernelQuery& q) { return {q.m, q.n, q.k}; }
std::vector<int64_t> vector_dims(const KernelQuery& q) { return {q.b, q.h}; }
std::vector<int64_t> prefill_dims(const KernelQuery& q) { return {q.b, q.m, q.k, q.h, q.n}; }
std::vector<int64_t> decode_dims(const KernelQuery& q) { return {q.b, q.ctx, q.k, q.h, q.n}; }
std::vector<int64_t> moe_dims(const KernelQuery& q) { return {q.b, q.h, q.n, q.topk, q.experts}; }

// --shape dims -> query (the dtype is the caller's); one ConfigError naming the schema.
KernelQuery bmm_from_dims(OpKind op, const std::vector<int64_t>& d) {
  if (d.size() != 4) throw ConfigError("--shape: bmm takes B,M,N,K");
  KernelQuery q;
  q.op = op;
  q.b = d[0], q.m = d[1], q.n = d[2], q.k = d[3];
  return q;
}
KernelQuery mnk_from_dims(OpKind op, const std::vector<int64_t>& d) {
  KernelQuery q;
  q.op = op;
  if (d.size() == 3) {
    q.b = 1, q.m = d[0], q.n = d[1], q.k = d[2];
  } else if (d.size() == 4) {
    q.b = 1, q.m = d[0] * d[1], q.n = d[2], q.k = d[3];  // leading dims fold into M
  } else {
    throw ConfigError(std::string("--shape: ") + op_name(op) + " takes M,N,K (N = in features, K = out features)");
  }
  return q;
}
KernelQuery vector_from_dims(OpKind op, const std::vector<int64_t>& d) {
  if (d.size() != 2) throw ConfigError(std::string("--shape: ") + op_name(op) + " takes B,H");
  KernelQuery q;
  q.op = op;
  q.b = d[0], q.h = d[1];
  return q;
}
KernelQuery prefill_from_dims(OpKind op, const std::vector<int64_t>& d) {
  if (d.size() != 5)
    throw ConfigError(std::string("--shape: ") + op_name(op) +
                      " takes B,S,H,KV,D (batch, prompt tokens, heads, KV heads, head_dim)");
  return attention_prefill_q(d[0], d[1], d[2], d[3], d[4], DType::kBf16, DType::kBf16);
}
KernelQuery decode_from_dims(OpKind op, const std::vector<int64_t>& d) {
  if (d.size() != 5)
    throw ConfigError(std::string("--shape: ") + op_name(op) +
                      " takes B,CTX,H,KV,D (batch, cached tokens, heads, KV heads, head_dim)");
  return attention_decode_q(d[0], d[1], d[2], d[3], d[4], DType::kBf16, DType::kBf16);
}
KernelQuery moe_from_dims(OpKind, const std::vector<int64_t>& d) {
  if (d.size() != 5) throw ConfigError("--shape: moe takes T,H,F,K,E (tokens, hidden, expert FFN width, top-k, experts)");
  return moe_q(d[0], d[1], d[2], d[3], d[4], 1, 1, DType::kBf16);
}

// gate_up (h -> 2 f) and down (f -> h) for every token routed to this rank's experts.
double moe_flops(const KernelQuery& q, const MoeLoad& l) { return 6.0 * l.tokens * double(q.h) * (q.n / q.moe_tp); }
// Weights of every expert hit, in the dtype (weight-only formats: 4 bits and their scales); per
// routed token its hidden input in the activation dtype and the BF16 intermediates (gate_up out,
// SiLU-mul in/out, down out); the combined output.
double moe_bytes(const KernelQuery& q, const MoeLoad& l) {
  // int4 at another scale group than the modelled kernels' 128: its own scale bytes (the
  // features keep the trained kernels' bytes per weight; the bound carries the difference).
  const double w = q.weight_group > 0 ? int4_bytes_per_weight(q.weight_group) : weight_bytes_per_elem(q.dtype);
  const double e = dtype_size(q.dtype), f = double(q.n / q.moe_tp);
  return l.hit * 3.0 * q.h * f * w + l.tokens * (double(q.h) * e + 10.0 * f + 2.0 * q.h) + 2.0 * q.b * double(q.h);
}

// FP8 GEMMs quantise their BF16 activation A (M tokens x N in-features) before the scaled
// matmul, in kernels of their own: dynamic per-tensor scaling reads A twice (absmax, then
// quantise) and writes it once in FP8, block scaling (1 x 128 groups) reads it once and writes a
// float scale per group. Bytes, and kernel launches. A static scale's GEMM (fp8_static) takes A
// already in FP8: the data time it so (a fifth of the L40S's rows whose BF16 activation is 4x
// its L2 run faster than the cast alone could at DRAM bandwidth; none of its dynamic ones do:
// check 13 of scripts/llm-data-checks.py), and a model's step charges the cast, where the engine
// runs it, as a pass of its own (serving_gemm, core/op_graph.cpp). Leave one GPU out,
// seeds 0 / 1, the eleven cells' mean 27.6 / 27.4 -> 26.5 / 26.4 % (docs/accuracy.md, "A static
// scale's GEMM takes its activation in FP8").
double activation_quant_bytes(const KernelQuery& q) {
  const double mn = double(q.m) * q.n;
  switch (q.dtype) {
    case DType::kFp8: return 2.0 * mn + fp8_cast_bytes(q);  // the absmax's read, then the cast
    case DType::kFp8Block: return fp8_cast_bytes(q) + 4.0 * double(q.m) * double(ceil_div(q.n, 128));
    // NVFP4 (a calibrated global scale): one pass reading BF16, writing 4 bits and a scale per 16.
    case DType::kNvfp4: return (2.0 + weight_bytes_per_elem(DType::kNvfp4)) * mn;
    default: return 0;
  }
}
int activation_quant_launches(DType d) {
  return d == DType::kFp8 ? 2 : d == DType::kFp8Static ? 0 : is_scaled_lowp(d) ? 1 : 0;
}

double fp32_sheet_peak(const KernelQuery&, const GpuSpec& gpu) { return gpu.fp32_peak_gflops; }
double tensor_sheet_peak(const KernelQuery& q, const GpuSpec& gpu) { return gemm_peak_gflops(gpu, q.dtype); }
// Every family's features start with the same four (kernel_features writes them).

// -- SIMT FP32 GEMMs (NeuSight's bmm and linear): tiles from the training GPUs' kernels.
double simt_gemm_flops(const KernelQuery& q) {
  double f = 2.0 * q.b * q.m * q.n * q.k;
  if (q.op == OpKind::kLinear) f += double(q.m) * q.k;  // bias add
  return f;
}
double simt_gemm_bytes(const KernelQuery& q) {
  const double e = dtype_size(q.dtype);
  double elems = double(q.b) * (double(q.m) * q.n + double(q.n) * q.k + double(q.m) * q.k);
  if (q.op == OpKind::kLinear) elems += q.k;  // bias
  return e * elems;
}
void simt_gemm_launch(const KernelQuery& q, const GpuSpec&, const GemmTile& tile, LaunchInfo& li) {
  li.tile = tile;
  li.tile.tm = std::max(1, tile.tm);
  li.tile.tk = std::max(1, tile.tk);
  li.tile.split_k = std::max(1, tile.split_k);
  li.num_ctas = q.b * ceil_div(q.m, li.tile.tm) * ceil_div(q.k, li.tile.tk) * li.tile.split_k;
  li.threads_per_cta = 256;
  li.ctas_per_sm = 1;  // SIMT SGEMM tiles are register/smem bound: one CTA per SM per wave
}
void simt_gemm_bounds(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li, double pad, KernelBounds& kb) {
  double padded_flops = 2.0 * q.b * double(ceil_div(q.m, li.tile.tm) * li.tile.tm) * q.n *
                        double(ceil_div(q.k, li.tile.tk) * li.tile.tk);
  kb.compute_s = compute_s(padded_flops * pad, gpu.fp32_simt_gemm_gflops());
  kb.memory_s = transfer_s(simt_gemm_bytes(q), gpu.mem_bw_gbps);
  kb.base_s = std::max(kb.compute_s, kb.memory_s);
}
double simt_gemm_sheet_peak(const KernelQuery&, const GpuSpec& gpu) { return gpu.fp32_gemm_peak_gflops(); }
const std::vector<std::string>& simt_gemm_features() {
  static const std::vector<std::string> v = {
      "log2_compute_us", "log2_memory_us", "log2_waves", "last_wave_fill", "log2_tile_m", "log2_tile_k", "log2_split_k", "log2_b", "log2_m", "log2_n", "log2_k",
      "log2_bytes_over_l2", "log2_wave_us", "align_m", "align_n", "align_k"};
  return v;
}
void simt_gemm_fill(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li, const KernelBounds&, float* out) {
  const double bytes = simt_gemm_bytes(q), l2_bytes = gpu.l2_cache_mb * kBytesPerMib;
  int i = 0;
  out[i++] = float(lg(li.tile.tm));
  out[i++] = float(lg(li.tile.tk));
  out[i++] = float(lg(li.tile.split_k));
  // GEMM dims are not clamped: clamping bmm dims to the training range (<= 1025) was
  // measured worse on the unseen GPUs (A100-80GB bmm MAPE 4.96 % -> 8.34 %).
  out[i++] = float(lg(double(q.b)));
  out[i++] = float(lg(double(q.m)));
  out[i++] = float(lg(double(q.n)));
  out[i++] = float(lg(double(q.k)));
  out[i++] = float(lg(bytes / l2_bytes));
  // Time of one wave of tiles on one SM at peak (NeuSight's tile-level feature).
  double tile_flops = 2.0 * li.tile.tm * li.tile.tk * double(q.n) / li.tile.split_k;
  out[i++] = float(lg(s_to_us(compute_s(tile_flops, gpu.fp32_simt_gemm_gflops() / gpu.num_sms))));
  out[i++] = alignment(q.m, 4);
  out[i++] = alignment(q.n, 4);
  out[i++] = alignment(q.k, 4);
}

// -- Row and element kernels: NeuSight's elementwise, softmax and layer norm (FP32), and the
// LLM-era memory ops (memory_op: RMSNorm, SiLU-mul, RoPE, residual add in the model's dtype).
double vector_flops(const KernelQuery& q) { return op_info(q.op).flops_per_elem * double(q.b) * q.h; }
double vector_bytes(const KernelQuery& q) {
  const double e = dtype_size(q.dtype);
  double bytes = op_info(q.op).bytes_per_elem * (e / 4.0) * double(q.b) * q.h;
  if (q.op == OpKind::kLayerNorm) {
    bytes += 2.0 * e * q.h;  // gamma, beta
    // PyTorch's vectorized_layer_norm_kernel needs rows of a multiple of 4 elements
    // (aten/src/ATen/native/cuda/layer_norm_kernel.cu, vec_size 4); other rows take two kernels,
    // RowwiseMomentsCUDAKernel then LayerNormForwardCUDAKernel, each reading the input.
    if (layernorm_two_kernels(q)) bytes += e * double(q.b) * q.h;
  }
  return bytes;
}
double memory_op_bytes(const KernelQuery& q) {
  const double e = dtype_size(q.dtype);
  double bytes = op_info(q.op).bytes_per_elem * e * double(q.b) * q.h;
  if (q.op == OpKind::kRmsNorm) bytes += e * q.h;  // weight
  return bytes;
}
// at::native::vectorized_elementwise_kernel<4>: 128 threads x 4 elements.
void elementwise_launch(const KernelQuery& q, const GpuSpec&, const GemmTile&, LaunchInfo& li) {
  li.threads_per_cta = 128;
  li.elems_per_cta = 512;
  li.num_ctas = ceil_div(q.b * q.h, 512);
}
// Softmax: rows <= 1024 use the warp-per-row kernel (128 threads, 4 rows per CTA; 8 when rows
// are <= 128 wide); wider rows use one CTA per row of next_pow2(H)/8 threads.
void softmax_launch(const KernelQuery& q, const GpuSpec&, const GemmTile&, LaunchInfo& li) {
  if (q.h <= 1024) {
    int rows = q.h <= 128 ? 8 : 4;
    li.threads_per_cta = 128;
    li.elems_per_cta = double(rows) * q.h;
    li.num_ctas = ceil_div(q.b, rows);
  } else {
    li.threads_per_cta = std::min(1024, std::max(32, next_pow2(q.h) / 8));
    li.elems_per_cta = double(q.h);
    li.num_ctas = q.b;
  }
}
// vectorized_layer_norm_kernel: one row per CTA of 32x4 threads.
void layernorm_launch(const KernelQuery& q, const GpuSpec&, const GemmTile&, LaunchInfo& li) {
  li.threads_per_cta = 128;
  li.elems_per_cta = double(q.h);
  li.num_ctas = q.b;
}
// vLLM/SGLang custom kernels: one CTA per token row.
void memory_op_launch(const KernelQuery& q, const GpuSpec&, const GemmTile&, LaunchInfo& li) {
  li.threads_per_cta = std::min(1024, std::max(32, next_pow2(q.h) / 8));
  li.elems_per_cta = double(q.h);
  li.num_ctas = q.b;
}
void vector_bounds(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo&, double pad, KernelBounds& kb) {
  kb.compute_s = compute_s(query_flops(q) * pad, gpu.fp32_peak_gflops);
  kb.memory_s = transfer_s(query_bytes(q), gpu.mem_bw_gbps);
  kb.base_s = std::max(kb.compute_s, kb.memory_s);
}
const std::vector<std::string>& vector_features() {
  static const std::vector<std::string> v = {
      "log2_compute_us", "log2_memory_us", "log2_waves", "last_wave_fill", "log2_b", "log2_h", "log2_bytes_over_l2", "bytes_per_elem_over_4", "log2_flops_per_elem",
      "scalar_operand", "log2_threads_per_cta", "log2_elems_per_cta", "align_h"};
  return v;
}
void vector_fill(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li, const KernelBounds&, float* out) {
  const OpInfo& info = op_info(q.op);
  const double bytes = vector_bytes(q), l2_bytes = gpu.l2_cache_mb * kBytesPerMib;
  int i = 0;
  out[i++] = float(lg(double(q.b)));
  out[i++] = float(std::min(lg(double(q.h)), kRowWidthCap));  // trained on H <= 4096
  out[i++] = float(lg(bytes / l2_bytes));
  out[i++] = float(info.bytes_per_elem / 4.0);
  out[i++] = float(lg(info.flops_per_elem));
  out[i++] = info.scalar_operand ? 1.f : 0.f;
  out[i++] = float(lg(li.threads_per_cta));
  out[i++] = float(std::min(lg(li.elems_per_cta), kRowWidthCap));
  out[i++] = alignment(q.h, 4);
}
// memory_op is physics with fitted coefficients: no network, no features.
const std::vector<std::string>& no_features() {
  static const std::vector<std::string> v;
  return v;
}
// Every network family's first features, written by kernel_features before the family's own
// fill: log2 compute and memory bound (us), log2 waves, last-wave fill.
constexpr size_t kCommonFeatures = 4;
void no_fill(const KernelQuery&, const GpuSpec&, const LaunchInfo&, const KernelBounds&, float*) {}

// -- Tensor-core GEMM (BF16/FP16/FP8/TF32, as serving engines launch it).
double tc_gemm_flops(const KernelQuery& q) { return 2.0 * q.m * double(q.n) * q.k; }
// The output C (M,K) in BF16/FP16 (FP32 for fp32/tf32).
double tc_gemm_out_bytes(const KernelQuery& q) {
  const double out = dtype_size(q.dtype) >= 4 ? 4.0 : 2.0;
  return out * double(q.m) * q.k;
}
double tc_gemm_bytes(const KernelQuery& q) {
  // Inputs in the dtype (nvfp4: 4 bits and an FP8 scale per 16): A (M,N), B (K,N); and C.
  const double e = weight_bytes_per_elem(q.dtype);
  return e * (double(q.m) * q.n + double(q.k) * q.n) + tc_gemm_out_bytes(q);
}
void tc_gemm_launch(const KernelQuery& q, const GpuSpec& gpu, const GemmTile&, LaunchInfo& li) {
  li.tile = tensor_core_tile(q, gpu);
  li.num_ctas = tc_output_tiles(q, li.tile) * li.tile.split_k;
  li.threads_per_cta = 256;
  li.ctas_per_sm = 1;
}
void tc_gemm_bounds(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li, double pad, KernelBounds& kb) {
  const double padded_flops = 2.0 * double(ceil_div(q.m, li.tile.tm) * li.tile.tm) * q.n *
                              double(ceil_div(q.k, li.tile.tk) * li.tile.tk);
  // The partial last wave charged as a full one, though cuBLAS's BF16 GEMMs show little of it
  // (check 10 of scripts/llm-data-checks.py; the scaled FP8/NVFP4 kernels pay for it). Without
  // it for cuBLAS's dtypes (session 63, commit 11584a7, reverted): the fitted roofline alone
  // gained on every BF16/FP16 fold (A100 BF16 24.3 -> 19.6 %), but the network's 11 cells'
  // mean went 27.6 -> 27.2 % at seed 0 and 27.4 -> 28.4 % at seed 1 (L40S fp8_static 47.5 ->
  // 53.3 %); dropped for every dtype (6ad5036): 27.6 -> 30.4 %.
  kb.compute_s = compute_s(padded_flops * pad, gemm_rate_gflops(gpu, q.dtype, q.sustained));
  // All bytes from DRAM: prefill's L2-resident share (l2_resident_memory_s) was measured here in
  // leave one GPU out (session 62): the 11 cells' mean 27.6 -> 26.8 % but the B200's BF16 17.9 ->
  // 29.5 % (bias 1.06 -> 1.23) and the A40 11.0 -> 15.6 %; the bytes-over-L2 feature stays.
  kb.memory_s = transfer_s(tc_gemm_bytes(q), gpu.mem_bw_gbps);
  // The activation's FP8 quantisation runs before the matmul, not overlapped with it.
  kb.quant_s = transfer_s(activation_quant_bytes(q), gpu.mem_bw_gbps);
  kb.base_s = std::max(kb.compute_s, kb.memory_s) + kb.quant_s;
  // A CTA writes its C tile after its main loop; A and B stream under the MMAs. So the fitted
  // roofline (the networks' base) charges C's share of the memory bound after the roofline, in
  // series (series_pass_s, as prefill's Q and O), and A and B under it. Leave one GPU out, seeds
  // 0 / 1: the eleven cells' mean 26.1 / 26.1 -> 25.9 / 25.5 %, no cell worse by more than 1.6
  // points (docs/accuracy.md, "The output's store in series"). Hopper's and Blackwell's
  // persistent kernels overlap a tile's store with the next tile's loop, which this does not
  // know. The input is named log2_memory_c_us so that weights trained on the old base are
  // refused, not misread.
  kb.series_pass_s = transfer_s(tc_gemm_out_bytes(q), gpu.mem_bw_gbps);
}
// SynPerf-style demand features: times and ratios, never raw spec numbers.
const std::vector<std::string>& tc_gemm_features() {
  static const std::vector<std::string> v = {
      "log2_compute_us", "log2_memory_c_us", "log2_waves", "last_wave_fill", "log2_ideal_compute_us", "log2_tile_m", "log2_tile_k", "log2_m", "log2_n", "log2_k",
      "log2_bytes_over_l2", "log2_wave_us", "dtype_bytes", "block_scaled", "quant_share", "quant_launches",
      "align_m", "align_k", "log2_dram_bytes_per_sm_cycle"};
  return v;
}
void tc_gemm_fill(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li, const KernelBounds& kb, float* out) {
  const double bytes = tc_gemm_bytes(q), l2_bytes = gpu.l2_cache_mb * kBytesPerMib;
  const double peak = gemm_rate_gflops(gpu, q.dtype, q.sustained);
  int i = 0;
  out[i++] = float(lg(s_to_us(compute_s(tc_gemm_flops(q), peak))));
  out[i++] = float(lg(li.tile.tm));
  out[i++] = float(lg(li.tile.tk));
  // Raw dims stay: leaving them out was measured worse in leave-one-GPU-out (A100 35.2 ->
  // 37.2 %, L40S bf16 60.4 -> 63.5 %, B200 bf16 27.2 -> 30.8 %; docs/accuracy.md).
  out[i++] = float(lg(double(q.m)));
  out[i++] = float(lg(double(q.n)));
  out[i++] = float(lg(double(q.k)));
  out[i++] = float(lg(bytes / l2_bytes));
  // One CTA's K loop (its split of the reduction) on one SM at the dtype's peak.
  const double tile_flops = 2.0 * li.tile.tm * li.tile.tk * double(q.n) / li.tile.split_k;
  out[i++] = float(lg(s_to_us(compute_s(tile_flops, peak / gpu.num_sms))));
  out[i++] = float(weight_bytes_per_elem(q.dtype));  // `dtype_bytes`: of an operand element, scales included
  out[i++] = q.dtype == DType::kFp8Block || q.dtype == DType::kNvfp4 ? 1.f : 0.f;
  // Share of the bound spent quantising the activation, and the quantising kernels' launches.
  out[i++] = float(kb.quant_s / std::max(kb.base_s, 1e-12));
  out[i++] = float(activation_quant_launches(q.dtype));
  out[i++] = alignment(q.m, 4);
  out[i++] = alignment(q.k, 4);
  // Leave one GPU out, two seeds: the ten cells' mean 29.6 -> 28.0 and 30.0 -> 28.3 %, no cell
  // worse by more than 3.9 points (docs/accuracy.md).
  out[i++] = float(lg(dram_bytes_per_sm_cycle(gpu)));
  // No board-power-per-FLOP feature (tdp_w / peak): worse in leave-one-GPU-out on the L40S
  // and B200 folds (docs/accuracy.md).
}

// -- Attention: FlashAttention-style causal prefill and decode over a KV cache.
// QK^T and PV: 2 x 2 x head_dim FLOPs per (query, key) pair and head.
double attention_flops(const KernelQuery& q) { return 4.0 * q.b * double(q.k) * q.n * attended_keys(q); }
// Q in (its dtype) and O out (BF16) for every query and head.
double attention_qo_bytes(const KernelQuery& q) { return double(q.b) * double(q.m) * q.k * q.n * (dtype_size(q.dtype) + 2.0); }
// Those, and K and V of the attended span once per sequence (a prefill chunk's: its prefix and
// itself).
double attention_bytes(const KernelQuery& q) {
  const double kv_tokens = q.op == OpKind::kAttnDecode ? attended_keys(q) : double(q.m + q.prefix);
  return attention_qo_bytes(q) + double(q.b) * 2.0 * kv_tokens * q.h * q.n * dtype_size(q.kv_dtype);
}
// One CTA per (sequence, head, 128-query block).
void prefill_launch(const KernelQuery& q, const GpuSpec&, const GemmTile&, LaunchInfo& li) {
  li.num_ctas = q.b * q.k * ceil_div(q.m, kAttnQueryBlock);
  li.threads_per_cta = 128;
  li.ctas_per_sm = 1;
  li.tile.tm = static_cast<int>(kAttnQueryBlock);
}
// One CTA per (sequence, KV head), the cache split into chunks while that leaves SMs idle.
void decode_launch(const KernelQuery& q, const GpuSpec& gpu, const GemmTile&, LaunchInfo& li) {
  const int64_t base = q.b * q.h;
  const int64_t keys = static_cast<int64_t>(attended_keys(q));  // >= 1: ctx and window are validated
  const int64_t splits = std::max<int64_t>(1, std::min(ceil_div(keys, kDecodeSplit), ceil_div(2 * int64_t{gpu.num_sms}, base)));
  li.num_ctas = base * splits;
  li.threads_per_cta = 128;
  li.ctas_per_sm = 1;
  li.tile.split_k = static_cast<int>(std::min<int64_t>(splits, 1 << 20));
}
void prefill_bounds(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo&, double, KernelBounds& kb) {
  const double peak = gemm_rate_gflops(gpu, q.dtype, q.sustained);
  // Causal work per CTA grows with its query block's position: the busiest SM gets at
  // least the longest CTA and at least an even share of all (query, key) block pairs.
  // A chunk after a cached prefix is the query blocks pb + 1 .. pb + nb of a longer prompt.
  const int64_t nb = ceil_div(q.m, kAttnQueryBlock), pb = q.prefix / kAttnQueryBlock;
  const int64_t wb = q.window > 0 ? std::max<int64_t>(1, ceil_div(q.window, kAttnQueryBlock)) : pb + nb;
  // Pairs per (sequence, head): sum over query blocks j = pb + 1 .. pb + nb of min(j, wb).
  const double pairs = causal_keys(double(pb + nb), double(wb)) - causal_keys(double(pb), double(wb));
  const double total = pairs * q.b * q.k;
  const double busiest = std::max(std::ceil(total / gpu.num_sms), double(std::min(pb + nb, wb)));
  const double pair_flops = 4.0 * kAttnQueryBlock * kAttnQueryBlock * q.n;
  // The softmax's exponentials, one per (query, key) element and head of a block pair, run on
  // the SM's special-function units beside the tensor cores: the busier of the two bounds the
  // SM (16 a clock, 32 on Blackwell Ultra: GpuSpec::exp_per_sm_clock). Only datacenter
  // Blackwell's tensor cores outrun them (a 128 x 128 pair at head_dim 128: 0.55 us of BF16
  // MMA against 0.52 us of exponentials on a B200 SM; 2.9 against 0.73 us on an A100; FP8 halves
  // the MMA): the B200's TRT-LLM prefills in FP8 take a median 1.00-1.02x the time of the same
  // BF16 ones (check 11 of scripts/llm-data-checks.py). Leave one GPU out, seeds 0 / 1, the four
  // cells' mean 40.0 / 39.1 -> 37.2 / 36.9 %, no cell worse by more than 0.8 points
  // (docs/accuracy.md, "The softmax's exponentials").
  // At the clock the tensor rate takes: the boost clock alone, the sustained one inside a step.
  const double clock_hz = gpu.boost_clock_mhz * 1e6 * (q.sustained ? gpu.sustained_clock_fraction() : 1.0);
  const double exp_s = busiest * double(kAttnQueryBlock * kAttnQueryBlock) / (gpu.exp_per_sm_clock() * clock_hz);
  kb.compute_s = std::max(compute_s(busiest * pair_flops, peak / gpu.num_sms), exp_s);
  // A benchmark repeating one call keeps up to half the L2 of its Q, K, V and output resident
  // (the memory_op family's l2_resident_fraction): those bytes come from the L2 at the A100
  // whitepaper's 5,120 bytes per clock over its 108 SMs (47.4 a SM), the rest from DRAM. Leave
  // one GPU out (session 62), seeds 0 / 1, against all bytes from DRAM: A100 22.6 / 23.5 -> 22.7
  // / 21.5 %, L40S 47.8 / 44.3 -> 22.4 / 18.5 % (its small windows fit its 96 MB L2), B200 bf16
  // 60.4 / 60.5 -> 54.5 / 55.2 %, fp8 66.3 / 66.7 -> 60.2 / 61.3 %; docs/accuracy.md. The feature
  // was named log2_memory_l2_us then so that weights trained before were refused, not misread.
  kb.memory_s = l2_resident_memory_s(attention_bytes(q), gpu);
  kb.base_s = std::max(kb.compute_s, kb.memory_s);
  // A CTA loads its query block before its first key block and writes its output block after its
  // last; K and V stream under its block pairs. So the fitted roofline (the networks' base) charges
  // the Q and O bytes' share of the memory bound after the roofline, in series (series_pass_s, as
  // MoE's passes), and the rest under it: the bytes of a short window's CTA no longer hide behind
  // its one block pair, nor a long one's pairs behind them (check 14 of scripts/llm-data-checks.py:
  // a 128-key row's time beyond its block pairs is 85-90 % its bytes at DRAM speed on the L40S).
  // Leave one GPU out, seeds 0 / 1: the four cells' mean 37.2 / 36.9 -> 34.7 / 34.7 %, no cell worse
  // by more than 0.4 points (docs/accuracy.md, "Q and O in series"). The input is named
  // log2_memory_l2_qo_us so that weights trained on the old base are refused, not misread.
  kb.series_pass_s = kb.memory_s * attention_qo_bytes(q) / attention_bytes(q);
}
void decode_bounds(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo&, double pad, KernelBounds& kb) {
  kb.compute_s = compute_s(attention_flops(q) * pad, gemm_rate_gflops(gpu, q.dtype, q.sustained));
  // All bytes from DRAM: prefill's L2-resident share (l2_resident_memory_s) was measured here in
  // leave one GPU out (session 62): A100 30.8 -> 30.2 %, L40S 18.9 -> 18.0 %, B200 48.6 -> 77.5 %
  // (its fold, fitted on the FlashAttention GPUs, forecasts TRT-LLM's small caches too slow).
  kb.memory_s = transfer_s(attention_bytes(q), gpu.mem_bw_gbps);
  kb.base_s = std::max(kb.compute_s, kb.memory_s);
}
const std::vector<std::string>& attention_features() {
  static const std::vector<std::string> v = {
      "log2_compute_us", "log2_memory_us", "log2_waves", "last_wave_fill", "log2_ideal_compute_us", "log2_ctas_over_sms", "log2_batch", "log2_query_tokens",
      "log2_ctx", "log2_heads", "log2_group", "log2_head_dim", "dtype_bytes", "kv_dtype_bytes", "window_fraction"};
  return v;
}
void attention_fill(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li, const KernelBounds&, float* out) {
  int i = 0;
  out[i++] = float(lg(s_to_us(compute_s(attention_flops(q), gemm_rate_gflops(gpu, q.dtype, q.sustained)))));
  out[i++] = float(lg(double(li.num_ctas) / gpu.num_sms));
  out[i++] = float(lg(double(q.b)));
  out[i++] = float(lg(double(q.m)));
  out[i++] = float(lg(double(q.ctx)));
  out[i++] = float(lg(double(q.k)));
  out[i++] = float(lg(double(q.k) / q.h));
  out[i++] = float(lg(double(q.n)));
  out[i++] = float(dtype_size(q.dtype));
  out[i++] = float(dtype_size(q.kv_dtype));
  // Prefill's window in whole 128-key blocks, as its kernels walk the keys (and as
  // prefill_bounds counts its work): a 1-key window (SGLang's window 0,
  // resolve_sglang_window_zero) visits a block as a 128-key one does. Every window of the
  // training data is a multiple of 128, so the trained networks saw the same values (and
  // kFeatureSchemaVersion stays). Decode reads the keys it attends, block or not.
  const bool decode = q.op == OpKind::kAttnDecode;
  const double span = decode ? double(q.ctx) : double(q.m);
  const double window_keys = decode ? double(q.window) : double(ceil_div(q.window, kAttnQueryBlock) * kAttnQueryBlock);
  out[i++] = q.window > 0 ? float(std::min(1.0, window_keys / span)) : 1.f;
  // No bytes / L2 feature: it was measured worse in leave-one-GPU-out for decode (A100
  // 56.3 -> 59.9 %, L40S 756 -> 970 %; docs/accuracy.md).
}

// Prefill: the attention features and the kernel library the spec selects (TRT-LLM MHA on
// datacenter Blackwell, FlashAttention elsewhere; training keeps only that library's rows, so
// the row's library and the spec's agree; the Triton fallback's rows train no network:
// fallback_attention). Leave one GPU out, plausible rows, seeds 0 / 1: the four cells' mean
// 48.7 / 48.2 -> 47.5 / 47.6 %, no cell worse by more than 0.6 points (docs/accuracy.md, "The
// kernel library as a prefill feature").
const std::vector<std::string>& prefill_features() {
  static const std::vector<std::string> v = [] {
    auto f = attention_features();
    f[0] = "log2_compute_exp_us";  // its compute bound is the busier of MMA and exponentials
    // Its memory bound serves half the L2 from the L2, and its base takes the Q and O bytes in
    // series (prefill_bounds): the name marks weights trained on that base.
    f[1] = "log2_memory_l2_qo_us";
    f.push_back("trtllm_library");
    return f;
  }();
  return v;
}
void prefill_fill(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li, const KernelBounds& kb, float* out) {
  attention_fill(q, gpu, li, kb, out);
  out[attention_features().size() - kCommonFeatures] = trtllm_kernels(gpu) ? 1.f : 0.f;
}

// -- Fused MoE: top-k routing, grouped gate_up GEMM, SiLU-mul, grouped down GEMM.
double moe_query_flops(const KernelQuery& q) { return moe_flops(q, moe_load(q)); }
double moe_query_bytes(const KernelQuery& q) { return moe_bytes(q, moe_load(q)); }
// A MoE layer timed alone, call after call with the same routing, reads the same experts each
// time: where its whole working set (moe_bytes: the hit experts' weights and the tokens'
// activations) fits the L2, every call after the first reads it from there (at the A100
// whitepaper's 47.4 bytes per SM-cycle, as l2_resident_memory_s), and where it does not, a
// cyclic sweep of more than the L2 leaves nothing resident: all from DRAM. The L40S's BF16
// rows show the step (check 16 of scripts/llm-data-checks.py): at 1 token, Qwen3-30B-A3B's 8
// experts (75 MB, its L2 96 MiB) take 30.5 us, at 2 tokens (151 MB) 255 us. Inside a model's
// step (KernelQuery::sustained) the other layers have evicted the experts since this layer's
// last call: all from DRAM (moe_bounds). The memory time alone over the time at DRAM bandwidth:
// 1 where all comes from DRAM.
double moe_l2_scale(const KernelQuery& q, const GpuSpec& gpu, const MoeLoad& l) {
  const double bytes = moe_bytes(q, l);
  if (bytes > gpu.l2_cache_mb * kBytesPerMib) return 1.0;
  return l2_read_s(bytes, gpu) / transfer_s(bytes, gpu.mem_bw_gbps);
}
// Grouped gate_up GEMM: M tiles over the experts hit x 128-column N tiles of 2 x F.
void moe_launch(const KernelQuery& q, const GpuSpec&, const GemmTile&, LaunchInfo& li) {
  li.moe = moe_load(q);
  li.tile.tm = li.moe.tm;
  li.tile.tk = 128;
  li.num_ctas = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(li.moe.tiles_m)) * ceil_div(2 * (q.n / q.moe_tp), 128));
  li.threads_per_cta = 128;
}
void moe_bounds(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li, double pad, KernelBounds& kb) {
  const MoeLoad& l = li.moe;
  const double padded_flops = l.tiles_m * l.tm * 6.0 * double(q.h) * (q.n / q.moe_tp);
  kb.compute_s = compute_s(padded_flops * pad, gemm_rate_gflops(gpu, q.dtype, q.sustained));
  // The networks' memory input and base at DRAM bandwidth; the fitted roofline reads a working set
  // that fits the L2 from there (moe_l2_scale): leave one GPU out, seeds 0 / 1, the eleven cells'
  // mean 33.4 / 33.4 -> 31.9 / 31.9 % (L40S bf16 43.0 -> 33.5 %), no cell worse by more than 4.2
  // points (docs/accuracy.md, "A working set that fits the L2, read from it"). The L2's rate in
  // the networks' input and base too (a temporary build): the A100 and L40S folds better, the
  // B200's worse by more than the rule allows, the mean worse.
  // Prefill's L2-resident share, up to half the L2 of any layer's bytes (l2_resident_memory_s),
  // was measured here in session 62: the ten cells' mean 48.0 -> 59.4 %.
  kb.memory_s = transfer_s(moe_bytes(q, l), gpu.mem_bw_gbps);
  kb.alone_memory_scale = moe_l2_scale(q, gpu, l);
  kb.fit_memory_scale = q.sustained ? 1.0 : kb.alone_memory_scale;
  kb.base_s = std::max(kb.compute_s, kb.memory_s);
  kb.other_rank_s = moe_other_rank_s(q, gpu);
  // SiLU-mul and the top-k sum run after and between the GEMMs, not under them: in the fitted
  // roofline, in series. Leave one GPU out, seeds 0 / 1, the eleven cells' mean 37.8 / 37.4 ->
  // 37.2 / 36.8 %, no cell worse by more than 1.1 points (docs/accuracy.md, "SiLU-mul and the
  // top-k sum in series"); TRT-LLM's finalize charged the same way was worse (37.4 % at seed 0).
  kb.series_pass_s = transfer_s(moe_pass_bytes(q, gpu, l), gpu.mem_bw_gbps);
  // The FP8 experts' activation is quantised before the first grouped GEMM by kernels of their
  // own (SGLang's per-token-group or per-tensor quantisation, on either library): its bytes in
  // series, as a GEMM's (activation_quant_bytes), and each kernel a further launch. Leave one GPU
  // out, seeds 0 / 1, the eleven cells' mean 37.2 / 36.8 -> 36.3 / 35.9 % (the B200's fp8_block
  // 33.1 -> 24.5 %), no cell worse by more than 0.6 points; charged for NVFP4 and MXFP8
  // activations too, 37.4 % (nvfp4 +8.1 points): docs/accuracy.md, "The FP8 activation's
  // quantisation in series".
  if (is_fp8(q.dtype)) {
    kb.quant_s = transfer_s(activation_quant_bytes(gemm_q(q.b, q.h, 1, q.dtype)), gpu.mem_bw_gbps);
    kb.launches = 1 + activation_quant_launches(q.dtype);
  }
}
const std::vector<std::string>& moe_features() {
  static const std::vector<std::string> v = {
      "log2_compute_us", "log2_memory_dram_us", "log2_waves", "last_wave_fill", "log2_ideal_compute_us", "log2_tokens", "log2_hidden", "log2_inter_local", "log2_topk",
      "log2_experts_local", "log2_experts_hit", "log2_max_load", "log2_tokens_per_hit", "routing_alpha",
      "dtype_bytes", "log2_weight_bytes_over_l2", "log2_pj_per_flop"};
  return v;
}
void moe_fill(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li, const KernelBounds&, float* out) {
  const double l2_bytes = gpu.l2_cache_mb * kBytesPerMib;
  const double peak = gemm_rate_gflops(gpu, q.dtype, q.sustained);
  const MoeLoad& l = li.moe;
  const double f = double(q.n / q.moe_tp);
  int i = 0;
  out[i++] = float(lg(s_to_us(compute_s(moe_flops(q, l), peak))));
  out[i++] = float(lg(double(q.b)));
  out[i++] = float(lg(double(q.h)));
  out[i++] = float(lg(f));
  out[i++] = float(lg(double(q.topk)));
  out[i++] = float(lg(double(q.experts / q.moe_ep)));
  out[i++] = float(lg(l.hit));
  out[i++] = float(lg(std::max(l.max_load, 1e-3)));
  out[i++] = float(lg(std::max(l.tokens / l.hit, 1e-3)));
  out[i++] = float(std::max(0.0, q.routing_alpha));  // uniform reads as balanced: its load differs
  // `dtype_bytes`: bytes per weight element (the experts' weights dominate the layer's bytes).
  out[i++] = float(weight_bytes_per_elem(q.dtype));
  out[i++] = float(lg(l.hit * 3.0 * q.h * f * weight_bytes_per_elem(q.dtype) / l2_bytes));
  out[i++] = float(lg(pj_per_flop(gpu, peak)));
  // No DRAM-bytes-per-SM-cycle feature (GEMM's): with two GPUs per fold it is a GPU's name, and
  // leave one GPU out was worse on all four cells (docs/accuracy.md).
}

struct FamilyPhysics {
  Family family;
  // Shape schema: --shape dims -> query, the query's dims in that order, the family's checks.
  KernelQuery (*from_dims)(OpKind, const std::vector<int64_t>&);
  std::vector<int64_t> (*dims)(const KernelQuery&);
  void (*validate)(const KernelQuery&, const std::string& context);
  double (*flops)(const KernelQuery&);  // useful arithmetic
  double (*bytes)(const KernelQuery&);  // compulsory DRAM traffic
  // CTAs, threads, tile (MoE: the expert load); waves and the last wave's fill are common.
  void (*launch)(const KernelQuery&, const GpuSpec&, const GemmTile& tile, LaunchInfo&);
  // As many CTAs per SM as threads and the block limit allow (row and element kernels, and the
  // Triton fused-MoE kernel's 4-warp CTAs; one CTA per SM was measured worse for MoE in
  // leave-one-GPU-out: mean MAPE 46.8 -> 55.8 % over the four MoE folds of
  // scripts/eval-llm-loo.sh --epochs 10); else one CTA per SM per wave (tiled GEMMs, attention).
  bool occupancy_bound;
  // compute_s, memory_s, quant_s, base_s; `pad` charges the last, partial wave in full.
  void (*bounds)(const KernelQuery&, const GpuSpec&, const LaunchInfo&, double pad, KernelBounds&);
  double (*sheet_peak)(const KernelQuery&, const GpuSpec&);  // the plain roofline's compute peak
  const std::vector<std::string>& (*features)();             // the network's inputs, in order
  // Writes the features after the four common ones.
  void (*fill)(const KernelQuery&, const GpuSpec&, const LaunchInfo&, const KernelBounds&, float*);
};
// Order follows Family.
constexpr FamilyPhysics kPhysics[] = {
    {Family::kBmm, bmm_from_dims, bmm_dims, mnk_validate,
     simt_gemm_flops, simt_gemm_bytes, simt_gemm_launch, false, simt_gemm_bounds, simt_gemm_sheet_peak,
     simt_gemm_features, simt_gemm_fill},
    {Family::kLinear, mnk_from_dims, bmm_dims, mnk_validate,
     simt_gemm_flops, simt_gemm_bytes, simt_gemm_launch, false, simt_gemm_bounds,
     simt_gemm_sheet_peak, simt_gemm_features, simt_gemm_fill},
    {Family::kElementwise, vector_from_dims, vector_dims, vector_validate,
     vector_flops, vector_bytes, elementwise_launch, true, vector_bounds, fp32_sheet_peak,
     vector_features, vector_fill},
    {Family::kSoftmax, vector_from_dims, vector_dims, vector_validate,
     vector_flops, vector_bytes, softmax_launch, true, vector_bounds, fp32_sheet_peak,
     vector_features, vector_fill},
    {Family::kLayerNorm, vector_from_dims, vector_dims, vector_validate,
     vector_flops, vector_bytes, layernorm_launch, true, vector_bounds, fp32_sheet_peak,
     vector_features, vector_fill},
    {Family::kGemm, mnk_from_dims, mnk_dims, mnk_validate,
     tc_gemm_flops, tc_gemm_bytes, tc_gemm_launch, false, tc_gemm_bounds, tensor_sheet_peak,
     tc_gemm_features, tc_gemm_fill},
    {Family::kAttnPrefill, prefill_from_dims, prefill_dims, attention_validate,
     attention_flops, attention_bytes, prefill_launch, false, prefill_bounds, tensor_sheet_peak,
     prefill_features, prefill_fill},
    {Family::kAttnDecode, decode_from_dims, decode_dims, attention_validate,
     attention_flops, attention_bytes, decode_launch, false, decode_bounds, tensor_sheet_peak,
     attention_features, attention_fill},
    {Family::kMemoryOp, vector_from_dims, vector_dims, vector_validate,
     vector_flops, memory_op_bytes, memory_op_launch, true, vector_bounds, fp32_sheet_peak,
     no_features, no_fill},
    {Family::kMoe, moe_from_dims, moe_dims, moe_validate,
     moe_query_flops, moe_query_bytes, moe_launch, true, moe_bounds, tensor_sheet_peak, moe_features,
     moe_fill},
};
static_assert(sizeof(kPhysics) / sizeof(kPhysics[0]) == static_cast<size_t>(Family::kCount), "a physics row per family");
constexpr bool physics_in_family_order() {
  for (size_t i = 0; i < sizeof(kPhysics) / sizeof(kPhysics[0]); ++i)
    if (static_cast<size_t>(kPhysics[i].family) != i) return false;
  return true;
}
static_assert(physics_in_family_order(), "kPhysics rows follow Family");
const FamilyPhysics& physics(Family f) { return kPhysics[static_cast<size_t>(f)]; }
}  // namespace

void validate_query(const KernelQuery& q, const std::string& context) {
  check_dim(context, q.b, "B");
  physics(op_family(q.op)).validate(q, context);
}

KernelQuery parse_query(OpKind op, const std::string& shape) {
  std::vector<int64_t> dims;
  std::stringstream ss(shape);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    char* end = nullptr;
    long long v = std::strtoll(tok.c_str(), &end, 10);
    if (tok.empty() || *end != '\0')
      throw ConfigError("--shape: '" + tok + "' is not an integer (in '" + shape + "')");
    dims.push_back(v);
  }
  KernelQuery q = physics(op_family(op)).from_dims(op, dims);
  validate_query(q, "--shape");
  return q;
}

KernelQuery query_from_dims(OpKind op, const std::vector<int64_t>& dims, DType dtype, const std::string& context) {
  KernelQuery q = physics(op_family(op)).from_dims(op, dims);
  q.dtype = dtype;
  if (is_attention(op_family(op))) q.kv_dtype = dtype;
  validate_query(q, context);
  return q;
}

std::vector<int64_t> query_dims(const KernelQuery& q) { return physics(op_family(q.op)).dims(q); }

std::string query_shape_string(const KernelQuery& q) {
  std::ostringstream os;
  const auto dims = query_dims(q);
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? "," : "") << dims[i];
  if (q.op == OpKind::kMoe) {
    if (q.moe_tp > 1) os << ",tp" << q.moe_tp;
    if (q.moe_ep > 1) os << ",ep" << q.moe_ep << (q.moe_dispatched ? ",dispatched" : "");
    if (q.routing_alpha > 0) os << ",a" << q.routing_alpha;
    if (q.weight_group > 0) os << ",g" << q.weight_group;
  } else if (is_attention(op_family(q.op))) {
    if (q.window) os << ",w" << q.window;
    if (q.prefix) os << ",p" << q.prefix;
  }
  return os.str();
}

double query_flops(const KernelQuery& q) { return physics(op_family(q.op)).flops(q); }
double query_bytes(const KernelQuery& q) { return physics(op_family(q.op)).bytes(q); }

LaunchInfo launch_info(const KernelQuery& q, const GpuSpec& gpu, const GemmTile& tile) {
  LaunchInfo li;
  const FamilyPhysics& p = physics(op_family(q.op));
  p.launch(q, gpu, tile, li);
  if (p.occupancy_bound)
    li.ctas_per_sm = std::max(1, std::min(gpu.max_blocks_per_sm, gpu.max_threads_per_sm / li.threads_per_cta));
  const int64_t slots = int64_t{gpu.num_sms} * li.ctas_per_sm;
  li.num_waves = std::max<int64_t>(1, ceil_div(li.num_ctas, slots));
  li.last_wave_fill =
      double(li.num_ctas - (li.num_waves - 1) * slots) / double(slots);
  return li;
}

namespace {
// A launch's waves and clock (the fitted roofline's fixed costs), and `pad`: the work charged as
// full waves, the last, partial wave taking as long as a full one.
KernelBounds wave_frame(const GpuSpec& gpu, const LaunchInfo& li, double* pad) {
  KernelBounds kb;
  kb.waves = double(li.num_waves);
  kb.ctas = double(li.num_ctas);
  kb.us_per_kcycle = us_per_kcycle(gpu);
  kb.dram_bytes_per_sm_cycle = dram_bytes_per_sm_cycle(gpu);
  const double slots = double(gpu.num_sms) * li.ctas_per_sm, ctas = std::max<double>(1, li.num_ctas);
  *pad = li.num_waves * slots / ctas;
  // The fitted roofline charges the busiest SM's share instead; the networks keep `pad`, as their
  // inputs and base were selected (docs/accuracy.md, "The busiest SM's share of a MoE launch").
  kb.fit_compute_scale = double(gpu.num_sms) * std::ceil(ctas / double(gpu.num_sms)) / ctas / *pad;
  return kb;
}

void check_mla(const KernelQuery& q, int64_t value_dim) {
  if (q.op != OpKind::kAttnDecode || q.h != 1 || q.window != 0 || value_dim < 1 || value_dim > q.n)
    throw DataError("MLA decode: a decode query over one latent head (no window) with 1 <= value dims <= " +
                    std::to_string(q.n) + ", got " + query_shape_string(q) + " and " + std::to_string(value_dim));
}
}  // namespace

double mla_decode_flops(const KernelQuery& q, int64_t value_dim) {
  check_mla(q, value_dim);
  return 2.0 * double(q.b) * double(q.k) * double(q.ctx) * double(q.n + value_dim);
}

double mla_decode_bytes(const KernelQuery& q, int64_t value_dim) {
  check_mla(q, value_dim);
  return double(q.b) * (double(q.ctx) * double(q.n) * dtype_size(q.kv_dtype) +
                        double(q.k) * double(q.n + value_dim) * dtype_size(q.dtype));
}

KernelBounds mla_decode_bounds(const KernelQuery& q, int64_t value_dim, const GpuSpec& gpu) {
  double pad = 1;
  KernelBounds kb = wave_frame(gpu, launch_info(q, gpu), &pad);
  kb.compute_s = compute_s(mla_decode_flops(q, value_dim) * pad, gemm_rate_gflops(gpu, q.dtype, q.sustained));
  kb.memory_s = transfer_s(mla_decode_bytes(q, value_dim), gpu.mem_bw_gbps);
  kb.base_s = std::max(kb.compute_s, kb.memory_s);
  return kb;
}

KernelBounds kernel_bounds(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li) {
  double pad = 1;
  KernelBounds kb = wave_frame(gpu, li, &pad);
  physics(op_family(q.op)).bounds(q, gpu, li, pad, kb);
  return kb;
}

double fitted_fixed_s(const KernelBounds& kb, const FittedRoofline& p) {
  const double more_launches_us = (kb.launches - 1) * (p.floor_us + p.floor_kcycles * kb.us_per_kcycle);
  return ((p.floor_us + kb.waves * p.wave_us) + (p.floor_kcycles + kb.waves * p.wave_kcycles) * kb.us_per_kcycle +
          more_launches_us) *
         1e-6;
}

double fitted_roofline_s(const KernelBounds& kb, const FittedRoofline& p) {
  // The library's load rate per SM, where one is set: the bytes again at that rate, in series.
  const double sm_side_s =
      p.sm_bytes_per_cycle > 0 ? kb.fitted_memory_s() * kb.dram_bytes_per_sm_cycle / p.sm_bytes_per_cycle : 0.0;
  const double gemm_memory_s = std::max(0.0, kb.fitted_memory_s() - kb.series_pass_s);
  const double roofline = std::max(kb.fitted_compute_s() / p.eta_compute, gemm_memory_s / p.eta_memory + sm_side_s);
  const double fitted =
      fitted_fixed_s(kb, p) + roofline + (kb.quant_s + kb.other_rank_s + kb.series_pass_s) / p.eta_memory;
  if (p.cta_ns <= 0) return fitted;
  // The library's cost per CTA bounds what follows the floor: the waves and the roofline.
  const double waves_s = kb.waves * (p.wave_us + p.wave_kcycles * kb.us_per_kcycle) * 1e-6;
  return fitted + std::max(0.0, kb.ctas * p.cta_ns * 1e-9 - (waves_s + roofline));
}

double network_base_s(const KernelBounds& kb, const FittedRoofline* prior, double floor_s, const char** bound) {
  double c = kb.compute_s, m = kb.memory_s, launch = floor_s, base = std::max(kb.base_s, floor_s);
  if (prior) {
    c = kb.fitted_compute_s() / prior->eta_compute;
    m = (kb.fitted_memory_s() + kb.quant_s + kb.other_rank_s) / prior->eta_memory;
    launch = fitted_fixed_s(kb, *prior);
    base = fitted_roofline_s(kb, *prior);
  }
  if (bound) *bound = launch > std::max(c, m) ? "launch" : c >= m ? "compute" : "memory";
  return base;
}

FittedRoofline fit_roofline(const std::vector<KernelBounds>& bounds, const std::vector<double>& measured_s,
                            bool in_cycles, double max_eta_memory, double min_eta) {
  if (bounds.size() != measured_s.size() || bounds.empty())
    throw DataError("fit_roofline: needs one measured latency per row, and at least one row");
  constexpr size_t kMaxRows = 50000;
  const size_t step = std::max<size_t>(1, bounds.size() / kMaxRows);
  std::vector<size_t> rows;
  for (size_t i = 0; i < bounds.size(); i += step) {
    if (!(measured_s[i] > 0) || !std::isfinite(measured_s[i]))
      throw DataError("fit_roofline: row " + std::to_string(i) + ": measured latency must be > 0");
    rows.push_back(i);
  }
  auto loss = [&](const FittedRoofline& p) {
    double sum = 0;
    for (size_t i : rows) sum += std::abs(std::log(fitted_roofline_s(bounds[i], p) / measured_s[i]));
    return sum;
  };
  // Log grids: 0.1-100 us for the floor, 0 or 0.01-100 us per wave, 0.05-1 for the efficiencies.
  auto grid = [](double lo, double hi, int n) {
    std::vector<double> g;
    for (int k = 0; k < n; ++k) g.push_back(lo * std::pow(hi / lo, double(k) / (n - 1)));
    return g;
  };
  // No kernel runs faster than the sheet's peak or bandwidth: the efficiencies stop at 1. Rows
  // weigh equally, so a GPU with more rows weighs more (B200 rows outnumber the A100's);
  // weighing each GPU equally instead was worse on every decode fold (docs/accuracy.md).
  // In cycles the grids span twice the numbers (about 2,000 cycles per microsecond).
  const double unit = in_cycles ? 2.0 : 1.0;
  if (!(min_eta > 0 && min_eta < 1)) throw DataError("fit_roofline: min_eta must be in (0, 1)");
  // 101 points from 0.05 (the default) to 1; a lower start keeps that spacing (100 steps per
  // factor of 20), so that the default grid is the one every family was fitted on.
  const int n_eta = 1 + static_cast<int>(std::lround(100 * std::log(1 / min_eta) / std::log(20.0)));
  const std::vector<double> floors = grid(0.1 * unit, 100 * unit, 121), etas = grid(min_eta, 1, n_eta);
  std::vector<double> waves = grid(0.01 * unit, 100 * unit, 121);
  waves.insert(waves.begin(), 0.0);
  const double eta_memory0 = std::min(0.7, max_eta_memory);
  FittedRoofline best{5.0, 0.0, 0.7, eta_memory0};
  if (in_cycles) best = {0.0, 0.0, 0.7, eta_memory0, 5.0 * unit, 0.0};
  double best_loss = loss(best);
  for (int round = 0; round < 8; ++round) {
    const FittedRoofline before = best;
    for (int which = 0; which < 4; ++which) {
      for (double v : which == 0 ? floors : which == 1 ? waves : etas) {
        if (which == 3 && v > max_eta_memory) continue;
        FittedRoofline p = best;
        double& slot = which == 0   ? (in_cycles ? p.floor_kcycles : p.floor_us)
                       : which == 1 ? (in_cycles ? p.wave_kcycles : p.wave_us)
                       : which == 2 ? p.eta_compute
                                    : p.eta_memory;
        slot = v;
        const double l = loss(p);
        if (l < best_loss) best_loss = l, best = p;
      }
    }
    if (best == before) break;
  }
  return best;
}

double sheet_peak_gflops(const KernelQuery& q, const GpuSpec& gpu) {
  // The spec sheet's peaks (not the issue-bound FP32 GEMM rate).
  return physics(op_family(q.op)).sheet_peak(q, gpu);
}

double peak_s(const KernelQuery& q, const GpuSpec& gpu) { return compute_s(query_flops(q), sheet_peak_gflops(q, gpu)); }

double fastest_s(const KernelQuery& q, const GpuSpec& gpu) {
  const bool tensor = physics(op_family(q.op)).sheet_peak == tensor_sheet_peak && q.dtype != DType::kFp32;
  return tensor ? compute_s(query_flops(q), gemm_rate_gflops(gpu, q.dtype, q.sustained)) : peak_s(q, gpu);
}

double forecast_floor_s(const KernelQuery& q, const GpuSpec& gpu) {
  return std::max(fastest_s(q, gpu), moe_other_rank_s(q, gpu));
}

double roofline_s(const KernelQuery& q, const GpuSpec& gpu) {
  return std::max(peak_s(q, gpu), transfer_s(query_bytes(q), gpu.mem_bw_gbps));
}

bool roofline_compute_bound(const KernelQuery& q, const GpuSpec& gpu) {
  return peak_s(q, gpu) >= transfer_s(query_bytes(q), gpu.mem_bw_gbps);
}

const std::vector<std::string>& feature_names(Family f) { return physics(f).features(); }

size_t num_features(Family f) { return feature_names(f).size(); }

std::vector<size_t> feature_columns(Family f, const std::vector<std::string>& names) {
  const auto& all = feature_names(f);
  std::vector<size_t> cols;
  for (const auto& n : names) {
    const auto it = std::find(all.begin(), all.end(), n);
    if (it == all.end())
      throw ConfigError("'" + n + "' is not a feature of family " + family_name(f));
    cols.push_back(static_cast<size_t>(it - all.begin()));
  }
  return cols;
}

void kernel_features(const KernelQuery& q, const GpuSpec& gpu, const LaunchInfo& li,
                     const KernelBounds& kb, float* out) {
  const FamilyPhysics& p = physics(op_family(q.op));
  if (p.features().empty()) return;  // memory_op: physics, no network
  out[0] = float(lg(s_to_us(kb.compute_s)));
  out[1] = float(lg(s_to_us(kb.memory_s)));
  out[2] = float(lg(double(li.num_waves)));
  out[3] = float(li.last_wave_fill);
  p.fill(q, gpu, li, kb, out + kCommonFeatures);
}

namespace {
constexpr size_t kMemoryOpTerms = 4;
// The four regressors of the memory_op model for one query: 1 (floor), the time at DRAM
// bandwidth of the bytes beyond the L2-resident share, bytes per SM-cycle (an SM-side rate:
// per-row reductions, address math and the L2's bandwidth, which bound these kernels on GPUs
// with much DRAM bandwidth per SM), and bytes per resident-thread cycle (Little's law for a
// latency-bound kernel: each resident thread keeps a fixed number of bytes in flight for a
// memory latency of a fixed number of cycles, so the rate scales with SMs x resident threads
// per SM x clock, not with the DRAM's bandwidth).
std::array<double, kMemoryOpTerms> memory_op_terms(double bytes, const GpuSpec& gpu, double l2_resident_fraction) {
  const double dram_bytes = bytes - memory_op_l2_resident_bytes(bytes, gpu, l2_resident_fraction);
  // The floor in thousands of SM cycles at the boost clock (session 77; microseconds before).
  return {us_per_kcycle(gpu) * 1e-6, transfer_s(dram_bytes, gpu.mem_bw_gbps), bytes / sm_cycles_per_s(gpu),
          bytes / (sm_cycles_per_s(gpu) * double(gpu.max_threads_per_sm))};
}
}  // namespace

double memory_op_l2_resident_bytes(double bytes, const GpuSpec& gpu, double l2_resident_fraction) {
  return std::min(bytes, l2_resident_fraction * gpu.l2_cache_mb * kBytesPerMib);
}

double memory_op_latency_s(const KernelQuery& q, const GpuSpec& gpu, const MemoryOpCoeffs& c) {
  const auto x = memory_op_terms(query_bytes(q), gpu, c.l2_resident_fraction);
  return c.floor_kcycles * x[0] + c.dram_factor * x[1] + c.sm_cycles_per_byte * x[2] + c.thread_cycles_per_byte * x[3];
}

MemoryOpCoeffs fit_memory_op(const std::vector<MemoryOpRow>& rows, double l2_resident_fraction) {
  // Non-negative least squares in relative error, sum w_i ((c . x_i) / y_i - 1)^2, by trying
  // every subset of the three coefficients (exact for three) and keeping the best feasible one
  // (ties: the first, see below). Each GPU weighs the same whatever its row count (w_i = rows /
  // (GPUs x its rows)): the sources disagree (vidur's Sarathi kernels on the A100 and A40,
  // 71,000 rows; vLLM's on the RTX 4090, 608), and rows would make the fit vidur's alone
  // (leave one GPU out, docs/accuracy.md: the mean of the 11 cells 43.6 -> 38.3 %).
  if (rows.size() < 3) throw DataError("memory_op fit: fewer than 3 rows");
  std::map<std::string, int64_t> per_gpu;
  for (const auto& r : rows) {
    if (!r.gpu) throw DataError("memory_op fit: a row without a GPU");
    ++per_gpu[r.gpu->name];
  }
  if (!(l2_resident_fraction >= 0 && l2_resident_fraction <= 1))
    throw ConfigError("memory_op fit: l2_resident_fraction must be in [0, 1]");
  // One GPU's rows cannot separate the L2's share from the DRAM rate in a way that carries to a
  // cache of another size (leave one GPU out, docs/accuracy.md): all its bytes go at DRAM speed.
  if (per_gpu.size() == 1) l2_resident_fraction = 0;
  constexpr size_t K = kMemoryOpTerms;
  std::vector<std::array<double, K>> xs;
  std::vector<double> ws;
  for (const auto& r : rows) {
    ws.push_back(double(rows.size()) / (double(per_gpu.size()) * double(per_gpu[r.gpu->name])));
    if (!(r.latency_s > 0) || !(r.bytes > 0)) throw DataError("memory_op fit: non-positive bytes or latency");
    auto x = memory_op_terms(r.bytes, *r.gpu, l2_resident_fraction);
    for (double& v : x) v /= r.latency_s;  // relative error: divide the row by its label
    xs.push_back(x);
  }
  double best_err = std::numeric_limits<double>::infinity();
  std::array<double, K> best{};
  for (int mask = 1; mask < (1 << K); ++mask) {
    std::vector<size_t> use;
    for (size_t j = 0; j < K; ++j)
      if (mask & (1 << j)) use.push_back(j);
    const size_t n = use.size();
    double a[K][K + 1] = {};  // normal equations [A | b]
    for (size_t q = 0; q < xs.size(); ++q)
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < n; ++j) a[i][j] += ws[q] * xs[q][use[i]] * xs[q][use[j]];
        a[i][n] += ws[q] * xs[q][use[i]];  // target 1 after dividing by y
      }
    // Gaussian elimination with partial pivoting.
    bool ok = true;
    for (size_t c = 0; c < n && ok; ++c) {
      size_t p = c;
      for (size_t r = c + 1; r < n; ++r)
        if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
      if (std::abs(a[p][c]) < 1e-300) ok = false;
      for (size_t k = 0; ok && k <= n; ++k) std::swap(a[c][k], a[p][k]);
      for (size_t r = 0; ok && r < n; ++r)
        if (r != c) {
          const double f = a[r][c] / a[c][c];
          for (size_t k = c; k <= n; ++k) a[r][k] -= f * a[c][k];
        }
    }
    if (!ok) continue;
    std::array<double, K> coef{};
    for (size_t i = 0; i < n; ++i) coef[use[i]] = a[i][n] / a[i][i];
    if (std::any_of(coef.begin(), coef.end(), [](double v) { return v < 0; })) continue;
    double err = 0;
    for (size_t q = 0; q < xs.size(); ++q) {
      double e = -1;
      for (size_t j = 0; j < K; ++j) e += coef[j] * xs[q][j];
      err += ws[q] * e * e;
    }
    // On one GPU the DRAM and SM terms are both proportional to the bytes: the subsets that use
    // either fit equally well, and rounding alone used to choose between them, which decides
    // how the fit carries to another GPU. A later subset (masks run floor, DRAM, floor + DRAM,
    // then the SM term) must err less by a margin (relative, and absolute for exact fits): ties
    // keep the fewer terms and the DRAM rate.
    if (!std::isfinite(best_err) || err < best_err - (1e-6 * best_err + 1e-12 * double(xs.size())))
      best_err = err, best = coef;
  }
  if (!std::isfinite(best_err)) throw DataError("memory_op fit: no non-negative solution");
  MemoryOpCoeffs c;
  c.floor_kcycles = best[0];
  c.dram_factor = best[1];
  c.sm_cycles_per_byte = best[2];
  c.thread_cycles_per_byte = best[3];
  c.l2_resident_fraction = l2_resident_fraction;
  c.rows = static_cast<int64_t>(rows.size());
  return c;
}

}  // namespace tilecast
