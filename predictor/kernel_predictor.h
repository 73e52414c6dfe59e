#pragma once
// Kernel latency forecasts from the trained MLPs (no LibTorch: predictor/dense_mlp.h).
#include <memory>
#include <string>
#include <vector>

#include "core/gpu_spec.h"
#include "core/kernel.h"
#include "core/tile_table.h"
#include "predictor/forecast_errors.h"
#include "trainer/weights_manifest.h"

namespace tilecast::predictor {

// Where a GPU stands against a family's training GPUs: one of them (`trained_on`), else a twin
// of one (`twin`, the same die and memory system: gpu_twins, judged on the specs the weights
// record), else unseen; `training_gpus` how many; `vendor_trained`: one of them is of the GPU's
// vendor (true where the weights record no specs).
struct GpuStanding {
  bool trained_on = false, twin = false, vendor_trained = true;
  int training_gpus = 0;
  const char* name() const { return trained_on ? "training" : twin ? "twin" : "unseen"; }
};

struct KernelPrediction {
  double latency_ms = 0;    // forecast
  double roofline_ms = 0;   // plain roofline, for comparison
  // The query's FLOPs at the fastest its kernel can run (fastest_s: the sheet's compute peak,
  // at the boost clock for a tensor-core kernel alone), or on a GPU the network does not correct
  // a Triton / Marlin MoE layer's passes over other ranks' pairs where longer
  // (forecast_floor_s): a forecast below it is raised to it (`at_peak`).
  double peak_ms = 0;
  bool at_peak = false;
  double base_ms = 0;       // the bound the MLP's output scales: the wave-quantised roofline, or
                            // the family's fitted roofline (config `prior`)
  double bound_ms = 0;      // the wave-quantised roofline (max of the compute and memory bounds)
  double prior_ms = 0;      // the fitted roofline alone (families that fit one; else 0)
  bool prior_is_base = false;  // config `prior`: the network corrects that fitted roofline
  // The GPU's kernel library's cost per CTA (ns) in prior_ms, where the fitted roofline forecasts
  // alone (FamilyEntry::library_cta_ns); 0: none.
  double prior_cta_ns = 0;
  // The library's rate of loads per SM, bytes per SM-cycle, in prior_ms where it forecasts alone
  // (FamilyEntry::library_sm_bytes_per_cycle); 0: none.
  double prior_sm_bytes_per_cycle = 0;
  // The library's per-launch floor, thousands of SM cycles, in prior_ms where it forecasts alone
  // (FamilyEntry::library_floor_kcycles; in place of the shared fit's floor); 0: none.
  double prior_floor_kcycles = 0;
  // The kernel library whose own fitted roofline is prior_ms and the network's base
  // (prior_base_by_library, FamilyEntry::library_prior); empty: the family's shared fit.
  std::string prior_library;
  double utilisation = 0;   // wave-quantised roofline / latency_ms
  double member_min_ms = 0, member_max_ms = 0;  // range of the ensemble members' forecasts
  const char* bound = "";   // "compute" | "memory" | "launch" (below a fitted floor)
  // Features outside the range the family was trained on, by name; `clamped`: moved into the
  // range (families that clamp) rather than extrapolated.
  std::vector<std::string> out_of_range;
  bool clamped = false;
  // False where the GPU is outside the family's network_gpus (network_gpus: trained, and the
  // GPU is not one it was trained on; twins: nor a twin of one): the forecast is then the
  // fitted roofline, alone or blended with the network's forecast (network_weight).
  bool corrected = true;
  // The network forecast's share of the log-latency: 1 where corrected, else 1 - the family's
  // unseen_prior_weight (0: the fitted roofline alone).
  double network_weight = 1;
  // The fitted roofline's share of this forecast's log-latency: 1 - network_weight, less where
  // the fitted roofline is the network's base and part of it is fixed costs (floor and waves):
  // unseen_prior_weight x the share of the fitted forecast beyond them (blend_weight).
  double fitted_roofline_weight = 0;
  // moe on a GPU outside network_gpus (config gemm_composite_weight > 0): the layer's two stacked
  // GEMMs forecast by the gemm family (moe_gemm_composite), and their share of the log-latency
  // (the network's and the fitted roofline's shares are then scaled by 1 - it). 0: none.
  double composite_ms = 0, composite_weight = 0;
  // The GPU against the family's training GPUs (ForecastBasis sums it over a model).
  GpuStanding standing;
  // The kernel's time inside a whole model's stream of kernels: latency_ms less its family's
  // call overhead (the host time per call its training data's isolated timings include;
  // manifest `call_overhead_us`), never below min(latency_ms, kMinStreamUs). latency_ms where
  // the family has none.
  double stream_ms = 0;
  // moe inside a model's step (sustained) whose working set would fit the L2 alone: the factor
  // the network's share of the forecast was raised by to take the L2's speed-up back (the fitted
  // roofline from DRAM over the same from the L2, to the network's share); 1 otherwise.
  double in_step_l2_factor = 1;
  // memory_op: the bytes the model serves from L2 (min(bytes, l2_resident_fraction x L2)),
  // which cost no DRAM time; 0 for every other family.
  double l2_resident_bytes = 0;
  // moe: forecast from the same layer's BF16 forecast (triton_fp8_moe); latency_ms is then
  // kTritonFp8MoeFloorUs + kTritonFp8MoeFactor x bf16_ms (at least peak_ms).
  bool fp8_from_bf16 = false;
  double bf16_ms = 0;
  // attention: a fallback kernel library's query (fallback_attention: Triton's prefill on
  // datacenter Blackwell), forecast by the family's `fallback_prior` on the work the fallback
  // does (fallback_physics_query; prior_ms, the base), corrected by the fallback library's own
  // network where the weights have one (network_weight 1), else that alone (network_weight 0).
  // The family's own network does not run for it.
  bool fallback = false;
  // moe: a layer of more tokens than the family was trained on (moe_trained_tokens), forecast
  // as `moe_chunks` equal chunks of `moe_chunk_tokens` tokens, one after another; 1 otherwise.
  int64_t moe_chunks = 1, moe_chunk_tokens = 0;
  // The training GPU (its spec's name) whose forecast of the same kernel this one was lowered
  // to: on a GPU the family's network does not correct, no forecast is slower than that of a
  // training GPU it betters in every spec the kernel uses and that runs the kernel in the same
  // library (KernelPredictor::hold_in_spec_order; the training GPUs' specs are the weights
  // folder's gpus/). Empty: none lowered it.
  std::string capped_by;
  // The training GPU whose forecast of the same kernel this one was raised to: nor is it faster
  // than that of a training GPU that betters it in every spec the kernel uses, in the same
  // library (e.g. an A100-PCIE-40GB's decode against the A100-SXM4-80GB's). Empty: none raised it.
  std::string lifted_by;
  // The family's errors on the query's op / dtype that the weights folder's forecast_errors.json
  // records (predictor/forecast_errors.h), nullptr where none: where the GPU is none of the
  // family's training GPUs nor a twin of one (and its vendor is theirs), its leave-one-GPU-out
  // error; where it is a training GPU, its error on the shapes left out of training.
  std::shared_ptr<const UnseenGpuError> unseen_error;
  std::shared_ptr<const HeldoutShapesError> heldout_error;
  LaunchInfo launch;
};
// The least a kernel takes in a stream of kernels (launch to launch on the GPU), microseconds.
constexpr double kMinStreamUs = 2.0;

// A fused MoE in FP8 (fp8, fp8_block) on a GPU whose SGLang MoE kernel is Triton's fused_moe
// (moe_library: every GPU but datacenter Blackwell's TRT-LLM) is forecast as
// kTritonFp8MoeFloorUs + kTritonFp8MoeFactor x the same layer's BF16 forecast. The networks'
// only FP8 MoE rows are the B200's TRT-LLM kernels, whose FP8 runs slower than their BF16
// (median 1.20x over 21,465 matched rows), while Triton's FP8 runs at its BF16's pace on half
// the work (0.61x over 6,399). Fitted on the B200's Triton FP8/BF16 pairs by
// `scripts/eval-moe-fp8.py --fit` (tests/python/test_moe_fp8_constant.py checks these against it).
constexpr double kTritonFp8MoeFloorUs = 13.39;
constexpr double kTritonFp8MoeFactor = 0.4916;
// Whether query `q` on `gpu` takes that rule.
bool triton_fp8_moe(const KernelQuery& q, const GpuSpec& gpu);

// Whether GPU `x` is at least GPU `t` in every spec a kernel `q` runs on, so that `q`, in one
// kernel library on both (same_kernel_library), cannot be slower on `x`: the same vendor, an
// architecture no older (compute capability), at least as many SMs, resident threads per SM,
// boost clock, DRAM bandwidth, L2 and FP32 peak, and at least `t`'s rate for the query's dtype
// (and KV cache's), which both must run (an FP8 query has no reference on an A100). The H100
// and H200 better the A100-SXM4-80GB and the A40; the H100 PCIe not the A100 SXM (2,000 against
// 2,039 GB/s); no Hopper GPU the L40S (its 2,520 MHz).
bool betters_in_every_spec(const GpuSpec& x, const GpuSpec& t, const KernelQuery& q);
// Whether `q` runs in one kernel library on both GPUs (kernel_library: attention and MoE choose
// theirs from the architecture; the other families have one). Spec order holds within a library
// only: the B200's TRT-LLM decode of 4-8 sequences starts slower than the A100's FlashAttention
// (20.7 against 14.5 us measured), and floors from the B200's TRT-LLM prefill forecasts made the
// A100's leave-one-GPU-out prefill fold markedly worse (docs/accuracy.md, session 84).
bool same_kernel_library(const GpuSpec& x, const GpuSpec& t, const KernelQuery& q);

class KernelPredictor {
 public:
  // Loads manifest.yaml, the tile table and every family's checkpoint from `weights_dir`.
  // Throws ConfigError for missing files or a schema mismatch.
  explicit KernelPredictor(const std::string& weights_dir);
  ~KernelPredictor();
  KernelPredictor(KernelPredictor&&) noexcept;

  // The GPU's standing against family `f`'s training GPUs in the set that forecasts it there
  // (the AMD set's for an AMD GPU where it has the family); training_gpus 0 where no set has it.
  GpuStanding standing(const GpuSpec& gpu, Family f) const;

  // Batched forecast on one GPU: groups queries by family, one MLP call per family. An AMD
  // GPU (spec vendor "amd") is forecast by the AMD predictor set (`<dir>/amd/`, trained on
  // MI100 and MI210 only) for the families that set has, by this folder's otherwise.
  std::vector<KernelPrediction> predict(const std::vector<KernelQuery>& queries,
                                        const GpuSpec& gpu) const;
  KernelPrediction predict(const KernelQuery& q, const GpuSpec& gpu) const;
  bool has_family(Family f) const;  // memory_op: fitted coefficients present
  // The most tokens of a fused MoE layer the moe family that forecasts `gpu` was trained on
  // (its manifest's range of log2_tokens; 16,384 for the bundled weights), 0 where unknown.
  // predict() forecasts a larger layer as ceil(tokens / that) equal chunks within it, summed:
  // at the top of the range the data's latency nearly doubles with the tokens (8,192 -> 16,384:
  // median 1.79-2.14x per GPU and library, scripts/moe-scaling.py), while the network,
  // its token count clamped to the range, forecasts 1.6x for the next doubling.
  int64_t moe_trained_tokens(const GpuSpec& gpu) const;
  const trainer::WeightsManifest& manifest() const;
  const TileTable& tiles() const;
  // The predictor set that forecasts family `f` on `gpu`: this one, or its AMD set.
  const KernelPredictor& set_for(const GpuSpec& gpu, Family f) const;
  bool has_amd_set() const;
  // Whole-model forecasts with this call overhead (microseconds, 0..1000) for NeuSight's five
  // FP32 families, in this set and its AMD set, instead of the manifests' `call_overhead_us`
  // (`eval-models --call-overhead-us`, to fit it: scripts/fit-host-gap.sh). ConfigError
  // outside the range.
  void set_call_overhead_us(double us);

  // While one of these lives, predict() keeps each forecast and answers a query it has answered
  // on the same GpuSpec object again from memory (forecasts are deterministic): for searches
  // that forecast the same kernels many times (find_capacity's trials). The GpuSpec objects
  // must not change meanwhile. Nested scopes share one memo, dropped when the last ends.
  class MemoScope {
   public:
    explicit MemoScope(const KernelPredictor& kp);
    ~MemoScope();
    MemoScope(const MemoScope&) = delete;
    MemoScope& operator=(const MemoScope&) = delete;

   private:
    const KernelPredictor& kp_;
  };
  // Forecasts answered from the memo and forecast afresh since the outermost scope was opened
  // (0 before the first).
  int64_t memo_hits() const;
  int64_t memo_misses() const;
  // The host time per call (us) taken off family `f`'s kernels on `gpu`: the call_overhead_us of
  // the set that forecasts it (set_for); 0 where it has none.
  double call_overhead_us(const GpuSpec& gpu, Family f) const;

 private:
  // memory_op family: fitted physics (floor + bytes at a fraction of DRAM bandwidth).
  GpuStanding memory_op_standing(const GpuSpec& gpu) const;
  void predict_memory_ops(const std::vector<KernelQuery>& queries, const std::vector<size_t>& idx,
                          const GpuSpec& gpu, std::vector<KernelPrediction>& out) const;
  std::vector<KernelPrediction> predict_here(const std::vector<KernelQuery>& queries, const GpuSpec& gpu) const;
  // MoE forecasts out[idx] on a GPU outside the family's network_gpus: blended in log space with
  // weight w with their layers' two stacked GEMMs (moe_gemm_composite) as the gemm family
  // forecasts them; dtypes the gemm family does not run keep their forecast.
  void blend_gemm_composite(const std::vector<KernelQuery>& queries, const std::vector<size_t>& idx, const GpuSpec& gpu,
                            double w, double overhead_ms, std::vector<KernelPrediction>& out) const;
  // Attention queries of a fallback kernel library (fallback_attention) out[idx]: the family's
  // fallback_prior on the work that kernel does, corrected by the fallback network where the
  // weights have one (its gate: the family's network_gpus, judged on the fallback's rows' GPUs).
  void predict_fallback(const std::vector<KernelQuery>& queries, const std::vector<size_t>& idx, const GpuSpec& gpu,
                        const trainer::FamilyEntry& entry, const TileTable& tiles, std::vector<KernelPrediction>& out) const;
  // predict_here on this set or its AMD set, by family (predict's AMD rule).
  std::vector<KernelPrediction> predict_by_set(const std::vector<KernelQuery>& queries, const GpuSpec& gpu) const;
  std::vector<KernelPrediction> predict_unmemoised(const std::vector<KernelQuery>& queries, const GpuSpec& gpu) const;
  // predict_unmemoised before hold_in_spec_order: the GPU's own forecast, neither capped nor
  // raised to a training GPU's (what a reference GPU contributes to those bounds).
  std::vector<KernelPrediction> predict_unbounded(const std::vector<KernelQuery>& queries, const GpuSpec& gpu) const;
  // out[i] of an LLM-era family on a GPU neither trained on nor a twin, put in spec order with
  // the family's training GPUs that run the query in the same library: raised to the greatest
  // forecast of the same query on those that better the GPU in every spec
  // (KernelPrediction::lifted_by), then lowered to the least on those it betters
  // (KernelPrediction::capped_by). Where the two disagree (the training GPUs' own forecasts out
  // of spec order), the cap holds.
  void hold_in_spec_order(const std::vector<KernelQuery>& queries, const GpuSpec& gpu,
                          std::vector<KernelPrediction>& out) const;
  // The specs of this set's training GPUs that the weights folder records (<dir>/gpus/*.yaml),
  // by CUDA name; nullptr where it has none.
  const GpuSpec* recorded_spec(const std::string& cuda_name) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tilecast::predictor
