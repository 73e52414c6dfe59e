#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "predictor/api.h"
#include "predictor/kernel_predictor.h"

namespace tilecast::cli {

int run_predict_kernel(const Args& args, const GlobalOptions&) {
  po::options_description desc("predict-kernel options");
  std::string op, shape, gpu, weights, gpu_dir, format, dtype, kv_dtype, routing;
  int64_t window = 0, moe_tp = 1, moe_ep = 1, prefix = 0, weight_group = 0;
  bool sustained = false;
  // Each family's dtypes and default, from kFamilyTable.
  std::string dtype_help;
  for (Family f : kAllFamilies)
    if (is_dtyped(f))
      dtype_help += std::string(family_name(f)) + ": " + dtype_set_names(family_traits(f).dtypes) + " (default " +
                    dtype_name(family_traits(f).default_dtype) + "); ";
  dtype_help += "the FP32 families (NeuSight's): fp32 only";
  desc.add_options()("op", po::value(&op)->required(),
                     "bmm, linear, add, addu, mul, mulu, div, divu, pow, powu, relu, gelu, tanh, softmax, ln "
                     "(FP32, NeuSight's families); gemm (tensor cores), attention_prefill, attention_decode, rmsnorm, silu_mul, "
                     "rope, residual_add, sampler, moe (--dtype; the sampler's default is fp32)")(
      "shape", po::value(&shape)->required(),
      "bmm: B,M,N,K; linear and gemm: M,N,K (M tokens, N = in, K = out features); vector ops: B,H; "
      "attention_prefill: B,S,H,KV,D; attention_decode: B,CTX,H,KV,D; rmsnorm, residual_add: T,H (tokens, hidden); "
      "silu_mul: T,F (F = FFN width of one rank); rope: T,W (W = (heads + KV heads) x head_dim); "
      "sampler: S,V (sequences sampled, vocabulary); "
      "moe: T,H,F,K,E (tokens, hidden, expert FFN width, top-k, experts)")(
      "dtype", po::value(&dtype), dtype_help.c_str())(
      "kv-dtype", po::value(&kv_dtype), "attention: KV cache dtype (default: --dtype)")(
      "window", po::value(&window)->default_value(0), "attention: sliding window in tokens (0 = none)")(
      "prefix", po::value(&prefix)->default_value(0),
      "attention_prefill: prompt tokens already cached; S is then a chunk of a longer prompt (chunked prefill)")(
      "moe-tp", po::value(&moe_tp)->default_value(1), "moe: ranks the expert FFN width is split over")(
      "moe-ep", po::value(&moe_ep)->default_value(1),
      "moe: ranks the experts are split over (balanced: rank 0 forecast; power law: the most loaded rank)")(
      "routing", po::value(&routing)->default_value("balanced"),
      "moe: balanced (as aiconfigurator's collector spreads them: on one rank every pick a different expert "
      "until all are hit; over ranks, each token's picks at random), uniform (each token's picks at random, "
      "every expert alike: what a balanced router gives a real batch, serving forecasts' default) or "
      "power_law_<a> (experts' loads drawn from a power law as the collector draws them, e.g. power_law_1.2; a "
      "layer of no more picks than experts, tokens x top-k <= experts, loads as balanced, as the collector's ran)")(
      "weight-group", po::value(&weight_group)->default_value(0),
      "moe --dtype int4: weights per 16-bit scale (e.g. 32; 0 = 128, the modelled kernels' groups)")(
      "sustained", po::bool_switch(&sustained),
      "the kernel inside seconds of back-to-back tensor-core work (a model's step, as `predict` forecasts "
      "it), not alone: tensor-core rates at the clock the GPU's sheet rates full-SM loads at where it states "
      "one (Hopper: 1,830 of 1,980 MHz), which a GPU at its power limit runs at or below")(
      "gpu", po::value(&gpu)->required(), "GPU: YAML/JSON path, name, alias or CUDA device name")(
      "weights", po::value(&weights), "weights folder (default: bundled weights/)")(
      "gpu-dir", po::value(&gpu_dir), "GPU spec folder (default: configs/gpus)")(
      "format", po::value(&format)->default_value("table"), "table|json|csv");
  po::variables_map vm;
  if (!parse_options(args, desc, vm,
                     "tilecast predict-kernel --op OP --shape DIMS --gpu GPU [--format table|json|csv]"))
    return 0;
  check_format(format, {"table", "json", "csv"});
  predictor::KernelArgs ka;
  ka.op = op, ka.shape = shape, ka.dtype = dtype, ka.kv_dtype = kv_dtype, ka.routing = routing;
  ka.window = window, ka.moe_tp = moe_tp, ka.moe_ep = moe_ep, ka.prefix = prefix, ka.weight_group = weight_group;
  ka.sustained = sustained;
  const KernelQuery q = predictor::build_kernel_query(ka);
  const OpKind kind = q.op;
  const bool moe = kind == OpKind::kMoe;
  GpuRegistry reg = load_registry(gpu_dir);
  const GpuSpec& spec = reg.resolve(gpu);
  predictor::KernelPredictor pred(trainer::weights_dir(weights));
  auto r = pred.predict(q, spec);
  const bool gemm = has_mnk(op_family(kind));
  const bool attn = is_attention(op_family(kind));
  if (format == "json") {
    std::cout << predictor::kernel_forecast_json(q, r, spec, pred).dump(2) << "\n";
    return 0;
  }
  if (format == "csv") {
    std::cout << "op,family,shape,dtype,gpu,latency_ms,member_min_ms,member_max_ms,roofline_ms,base_ms,utilisation,bound,"
                 "num_ctas,ctas_per_sm,waves,flops,bytes,outside_training_range\n";
    std::string oor;
    for (const auto& n : r.out_of_range) oor += (oor.empty() ? "" : ";") + n;
    std::printf("%s,%s,\"%s\",%s,%s,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%s,%lld,%d,%lld,%.9g,%.9g,%s\n", op_name(kind),
                family_name(op_family(kind)), query_shape_string(q).c_str(), dtype_name(q.dtype), spec.name.c_str(),
                r.latency_ms, r.member_min_ms, r.member_max_ms, r.roofline_ms, r.base_ms, r.utilisation, r.bound,
                static_cast<long long>(r.launch.num_ctas), r.launch.ctas_per_sm, static_cast<long long>(r.launch.num_waves),
                query_flops(q), query_bytes(q), oor.c_str());
    return 0;
  }
  std::printf("op           %s (%s)\n", op_name(kind), family_name(op_family(kind)));
  std::printf("shape        %s (%s%s)\n", query_shape_string(q).c_str(), dtype_name(q.dtype),
              kind == OpKind::kMoe ? (", routing " + routing_name(q.routing_alpha)).c_str() : "");
  std::printf("gpu          %s (%s)\n", spec.name.c_str(), spec.cuda_name.c_str());
  // A MoE layer's passes over other ranks' pairs (moe_other_rank_bytes) and whether they, not the
  // compute peak, are the floor this forecast was held to (only where the network does not correct).
  const double other_rank_bytes = moe ? moe_other_rank_bytes(q, spec) : 0.0;
  const double other_rank_ms = moe ? s_to_ms(moe_other_rank_s(q, spec)) : 0.0;
  const bool passes_floor = !r.corrected && other_rank_ms > s_to_ms(fastest_s(q, spec));
  // The members' range only where there is one: a family of one network (or a forecast by its fitted
  // roofline alone) has no spread to show.
  char members[96] = "";
  if (r.member_min_ms != r.member_max_ms)
    std::snprintf(members, sizeof members, " (ensemble members: %.6g - %.6g)", r.member_min_ms, r.member_max_ms);
  std::printf("latency_ms   %.6g%s%s\n", r.latency_ms, members,
              !r.at_peak      ? ""
              : passes_floor ? "; raised to the other ranks' passes (below), which the forecast beat"
                             : "; raised to the sheet's compute peak, which the forecast beat");
  if (!r.capped_by.empty())
    std::printf("capped       at the forecast of this kernel on %s, a training GPU this GPU betters in every spec "
                "the kernel uses (SMs, clock, DRAM bandwidth, L2, the dtype's peak), in the same kernel library: no slower "
                "than it\n",
                r.capped_by.c_str());
  if (!r.lifted_by.empty())
    std::printf("raised       to the forecast of this kernel on %s, a training GPU that betters this GPU in every "
                "spec the kernel uses, in the same kernel library: no faster than it\n",
                r.lifted_by.c_str());
  if (r.stream_ms != r.latency_ms)
    std::printf("stream_ms    %.6g (inside a whole model: less the host time per call that the training data's "
                "isolated timings include)\n", r.stream_ms);
  // The plain roofline's own limit (the sheet's peak or its DRAM bandwidth), which can differ from
  // that of the wave-quantised bound below: a 1-row GEMM padded to its tile is compute-bound
  // there and memory-bound here.
  const bool roofline_compute = roofline_compute_bound(q, spec);
  std::printf("roofline_ms  %.6g (%s-bound: %s)\n", r.roofline_ms, roofline_compute ? "compute" : "memory",
              roofline_compute ? "its FLOPs at the sheet's peak" : "its bytes at the sheet's DRAM bandwidth");
  std::printf("utilisation  %.3f of the wave-quantised roofline (%.6g ms, %s-bound)\n", r.utilisation, r.bound_ms,
              r.bound);
  if (r.prior_ms > 0) {
    // The fitted roofline named: a kernel library's own (prior_base_by_library) or the family's.
    const std::string fit = r.prior_library.empty() ? "the family's fitted roofline"
                                                    : r.prior_library + "'s own fitted roofline";
    if (r.fallback)
      std::printf("prior_ms     %.6g (the fitted roofline of the fallback library's own rows (%s), on the whole causal "
                  "triangle at the BF16 rate, the work that kernel does; %s)\n",
                  r.prior_ms, attention_library(q, spec),
                  r.network_weight >= 1  ? "which that library's own network corrects"
                  : r.network_weight > 0 ? "blended with that library's own network, this GPU being neither its "
                                           "training GPU nor a twin"
                                         : "alone: no network of that library here");
    else if (r.corrected)
      std::printf("prior_ms     %.6g (%s%s)\n", r.prior_ms, fit.c_str(),
                  r.prior_is_base ? ", which the network corrects" : "");
    else if (r.network_weight > 0 && r.composite_weight > 0)
      std::printf("prior_ms     %.6g (%s; this GPU is not one the network was trained on, nor "
                  "a twin: the forecast is the weighted geometric mean of the network's (weight %.2f), this (%.2f) and "
                  "the stacked GEMMs below (%.2f))\n",
                  r.prior_ms, fit.c_str(), r.network_weight, 1 - r.network_weight - r.composite_weight, r.composite_weight);
    else if (r.network_weight > 0)
      std::printf("prior_ms     %.6g (%s; this GPU is not one the network was trained on, nor "
                  "a twin: the forecast is the geometric mean of the network's (weight %.2f) and this (%.2f%s))\n",
                  r.prior_ms, fit.c_str(), 1 - r.fitted_roofline_weight, r.fitted_roofline_weight,
                  r.fitted_roofline_weight < 1 - r.network_weight - 1e-9
                      ? ": the family's weight times the share of this beyond its floor and waves"
                      : "");
    else
      std::printf("prior_ms     %.6g (%s; alone: the network corrects only the GPUs it was "
                  "trained on, or their twins where the family's network_gpus says so)\n", r.prior_ms, fit.c_str());
    if (r.prior_floor_kcycles > 0)
      std::printf("floor        %.4g thousand cycles (%s's launch floor, fitted on its training rows): %.4g us at "
                  "this GPU's %.0f MHz boost clock\n",
                  r.prior_floor_kcycles, kernel_library(q, spec), r.prior_floor_kcycles * 1e3 / spec.boost_clock_mhz,
                  spec.boost_clock_mhz);
    if (r.prior_cta_ns > 0)
      std::printf("cta cost     %.4g ns a CTA (%s's, fitted on its training rows): past the floor, %lld CTAs take at "
                  "least %.6g ms\n",
                  r.prior_cta_ns, kernel_library(q, spec), static_cast<long long>(r.launch.num_ctas),
                  double(r.launch.num_ctas) * r.prior_cta_ns * 1e-6);
    if (r.prior_sm_bytes_per_cycle > 0)
      std::printf("sm load rate %.4g bytes per SM-cycle (%s's, fitted on its training rows): the bytes also take "
                  "%.4g x their time at DRAM bandwidth (this GPU moves %.4g bytes per SM-cycle at DRAM speed)\n",
                  r.prior_sm_bytes_per_cycle, kernel_library(q, spec),
                  dram_bytes_per_sm_cycle(spec) / r.prior_sm_bytes_per_cycle, dram_bytes_per_sm_cycle(spec));
  }
  if (attn)
    std::printf("tasks        %lld CTAs (%s; %s)\n", static_cast<long long>(r.launch.num_ctas),
                kind == OpKind::kAttnPrefill ? "sequence x head x 128-query block" : "sequence x KV head x KV split",
                attention_library(q, spec));
  else if (kind == OpKind::kGemm)
    std::printf("tile         %dx%d split_k=%d (%s tensor-core tile, from the spec's architecture)\n",
                r.launch.tile.tm, r.launch.tile.tk, r.launch.tile.split_k, spec.arch.c_str());
  else if (moe)
    std::printf("experts      %.1f hit, %.1f tokens on this rank, busiest expert %.1f (%s)%s\n", r.launch.moe.hit,
                r.launch.moe.tokens, r.launch.moe.max_load_if_hit, moe_library(spec, q.dtype), r.moe_chunks > 1 ? ", each chunk" : "");
  else if (op_family(kind) == Family::kMemoryOp)
    std::printf("model        %s; L2-resident here: %.4g MB of %.4g MB\n", kMemoryOpModelSummary,
                r.l2_resident_bytes / 1e6, query_bytes(q) / 1e6);
  else if (gemm)
    std::printf("tile         %dx%d split_k=%d (kernel choices of %s)\n", r.launch.tile.tm,
                r.launch.tile.tk, r.launch.tile.split_k, pred.set_for(spec, op_family(kind)).tiles().reference_device(spec).c_str());
  else
    std::printf("tile         %g elements/CTA, %d threads/CTA%s\n", r.launch.elems_per_cta, r.launch.threads_per_cta,
                layernorm_two_kernels(q) ? "; two kernels (H not a multiple of 4: PyTorch's RowwiseMomentsCUDAKernel, "
                                           "then LayerNormForwardCUDAKernel, each reading the input)"
                                         : "");
  if (other_rank_bytes > 0)
    std::printf("other ranks  %.4g GB, %.4g ms at DRAM bandwidth: the rows of the pairs routed to other ranks' experts, "
                "which %s writes as zeros and SiLU-mul and the top-k sum pass through; %s\n",
                other_rank_bytes / kBytesPerGb, other_rank_ms, moe_library(spec, q.dtype),
                r.corrected ? "not a floor here (it is on GPUs the network was not trained on): this GPU's rows trained it"
                            : "the forecast's floor");
  if (moe) {
    // A working set that fits the L2 (moe_l2_scale): what the fitted roofline charges for it.
    const KernelBounds kb = kernel_bounds(q, spec, launch_info(q, spec));
    if (kb.fit_memory_scale < 1)
      std::printf("l2           %.4g MB, the layer's working set, fits the %.4g MB L2: a call repeated alone reads it "
                  "from there, %.4g us in the fitted roofline (%.4g us at DRAM bandwidth, as inside a model's step: "
                  "--sustained)\n",
                  query_bytes(q) / 1e6, spec.l2_cache_mb * kBytesPerMib / 1e6, s_to_us(kb.fitted_memory_s()),
                  s_to_us(kb.memory_s));
    if (r.in_step_l2_factor > 1)
      std::printf("in a step    %.4g MB, the layer's working set, would fit the %.4g MB L2 alone; in a model's step "
                  "it comes from DRAM: the networks' share of the forecast x %.3f (the fitted roofline from DRAM "
                  "over the same from the L2)\n",
                  query_bytes(q) / 1e6, spec.l2_cache_mb * kBytesPerMib / 1e6, r.in_step_l2_factor);
  }
  if (gemm && q.dtype == DType::kFp32 && spec.fp32_simt_gemm_gflops() < spec.fp32_gemm_peak_gflops())
    std::printf("fp32 rate    %.6g GFLOP/s: the sheet's %.6g x issue bound %.3f x compute clock %.3f (SIMT SGEMM)\n",
                spec.fp32_simt_gemm_gflops(), spec.fp32_gemm_peak_gflops(), spec.fp32_issue_fraction(),
                spec.compute_clock_fraction());
  // The tensor rate where a kernel alone and one inside a model's step differ (Hopper's rated
  // clock, or a measured sustained clock in the spec).
  if ((kind == OpKind::kGemm || attn || moe) && q.dtype != DType::kFp32 &&
      (spec.compute_clock_fraction() < 1 || spec.sustained_clock_fraction() < 1)) {
    const double rated_mhz = spec.boost_clock_mhz * spec.compute_clock_fraction();
    const double sustained_mhz = spec.boost_clock_mhz * spec.sustained_clock_fraction();
    const auto mhz = [](double v) { return std::to_string(static_cast<long long>(std::lround(v))); };
    const std::string step_clock =
        spec.sustained_clock_mhz > 0
            ? "the " + mhz(sustained_mhz) + " MHz the spec's sustained_clock_mhz measured for sustained tensor-core work"
            : "the " + mhz(rated_mhz) + " MHz the sheet rates full-SM loads at";
    if (q.sustained)
      std::printf("tensor rate  %.6g GFLOP/s: the peak at %s (--sustained)\n", gemm_rate_gflops(spec, q.dtype, true),
                  step_clock.c_str());
    else
      std::printf("tensor rate  %.6g GFLOP/s: the sheet's %.6g (rated at %.0f MHz) at the %.0f MHz boost clock a kernel "
                  "alone runs at (--sustained: inside a model's step, at %s)\n",
                  gemm_rate_gflops(spec, q.dtype), gemm_peak_gflops(spec, q.dtype), rated_mhz, spec.boost_clock_mhz,
                  step_clock.c_str());
  }
  if (r.fp8_from_bf16)
    std::printf("fp8          %.2f us + %.4f x the BF16 layer's %.6g ms (%s: FP8 at its BF16's pace on half the work; "
                "scripts/eval-moe-fp8.py)\n",
                predictor::kTritonFp8MoeFloorUs, predictor::kTritonFp8MoeFactor, r.bf16_ms, moe_library(spec, q.dtype));
  if (r.composite_weight > 0)
    std::printf("gemms        %.6g ms: the %slayer as two stacked GEMMs (gate_up, down) forecast by the gemm family, "
                "weight %.2f in the forecast (an unseen GPU)\n",
                r.composite_ms, r.fp8_from_bf16 ? "BF16 " : "", r.composite_weight);
  if (r.moe_chunks > 1)
    std::printf("chunks       %lld x %lld tokens, one after another (the family was trained on at most %lld tokens; "
                "at the top of that range the data's latency nearly doubles with the tokens)\n",
                static_cast<long long>(r.moe_chunks), static_cast<long long>(r.moe_chunk_tokens),
                static_cast<long long>(pred.moe_trained_tokens(spec)));
  if (!r.out_of_range.empty()) {
    std::string names;
    for (const auto& n : r.out_of_range) names += (names.empty() ? "" : ", ") + n;
    std::printf("note         outside the training range (%s): %s\n",
                r.clamped ? "clamped to it" : "extrapolated", names.c_str());
  }
  std::printf("%s", predictor::basis_text({predictor::kernel_basis(op_family(kind), r)}, spec.vendor).c_str());
  std::printf("waves        %lld (%lld CTAs, %d per SM, last wave %.0f%% full)\n",
              static_cast<long long>(r.launch.num_waves), static_cast<long long>(r.launch.num_ctas),
              r.launch.ctas_per_sm, 100 * r.launch.last_wave_fill);
  return 0;
}

}  // namespace tilecast::cli
