#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "predictor/kernel_predictor.h"

namespace tilecast::cli {

int run_predict_kernel(const Args& args, const GlobalOptions&) {
  po::options_description desc("predict-kernel options");
  std::string op, shape, gpu, weights, gpu_dir, format, dtype, kv_dtype, routing;
  int64_t window = 0, moe_tp = 1, moe_ep = 1;
  desc.add_options()("op", po::value(&op)->required(),
                     "bmm, linear, add, addu, mul, mulu, div, divu, pow, powu, relu, gelu, tanh, softmax, ln "
                     "(FP32, NeuSight's families); gemm (tensor cores), attention_prefill, attention_decode, rmsnorm, silu_mul, "
                     "rope, residual_add, moe (--dtype)")(
      "shape", po::value(&shape)->required(),
      "bmm: B,M,N,K; linear and gemm: M,N,K (M tokens, N = in, K = out features); vector ops: B,H; "
      "attention_prefill: B,S,H,KV,D; attention_decode: B,CTX,H,KV,D; rmsnorm, residual_add: T,H (tokens, hidden); "
      "silu_mul: T,F (F = FFN width of one rank); rope: T,W (W = (heads + KV heads) x head_dim); "
      "moe: T,H,F,K,E (tokens, hidden, expert FFN width, top-k, experts)")(
      "dtype", po::value(&dtype),
      "fp32|tf32|fp16|bf16|fp8|fp8_block: gemm and attention (default bf16); memory ops: fp32|fp16|bf16 "
      "(default bf16); the FP32 families take fp32 only")(
      "kv-dtype", po::value(&kv_dtype), "attention: KV cache dtype (default: --dtype)")(
      "window", po::value(&window)->default_value(0), "attention: sliding window in tokens (0 = none)")(
      "moe-tp", po::value(&moe_tp)->default_value(1), "moe: ranks the expert FFN width is split over")(
      "moe-ep", po::value(&moe_ep)->default_value(1), "moe: ranks the experts are split over (rank 0 forecast)")(
      "routing", po::value(&routing)->default_value("balanced"), "moe: balanced or power_law_<a> (e.g. power_law_1.2)")(
      "gpu", po::value(&gpu)->required(), "GPU: YAML/JSON path, name, alias or CUDA device name")(
      "weights", po::value(&weights), "weights folder (default: bundled weights/)")(
      "gpu-dir", po::value(&gpu_dir), "GPU spec folder (default: configs/gpus)")(
      "format", po::value(&format)->default_value("table"), "table|json");
  po::variables_map vm;
  if (!parse_options(args, desc, vm,
                     "tilecast predict-kernel --op OP --shape DIMS --gpu GPU [--format table|json]"))
    return 0;
  check_format(format, {"table", "json"});
  OpKind kind;
  if (!try_op_kind_from_string(op, &kind)) throw ConfigError("--op: unknown op '" + op + "'");
  KernelQuery q = parse_query(kind, shape);
  const bool llm = family_traits(op_family(kind)).dtyped;
  if (dtype.empty()) dtype = llm ? "bf16" : "fp32";
  if (kv_dtype.empty()) kv_dtype = dtype;
  const DType dt = parse_dtype_flag("--dtype", dtype), kvd = parse_dtype_flag("--kv-dtype", kv_dtype);
  if (window < 0) throw ConfigError("--window: expected >= 0, got " + std::to_string(window));
  const bool moe = kind == OpKind::kMoe;
  if (!moe && (moe_tp != 1 || moe_ep != 1 || routing != "balanced"))
    throw ConfigError("--moe-tp/--moe-ep/--routing apply to --op moe only");
  if (moe) {
    double alpha = 0;
    if (!try_parse_routing(routing, &alpha))
      throw ConfigError("--routing: expected balanced or power_law_<a> with 0 < a <= 10 (e.g. power_law_1.2), got '" +
                        routing + "'");
    if (dt != DType::kBf16 && dt != DType::kFp16 && dt != DType::kFp8 && dt != DType::kFp8Block)
      throw ConfigError(std::string("--dtype ") + dtype + ": fused MoE is modelled in bf16, fp16, fp8 and fp8_block");
    q = moe_q(q.b, q.h, q.n, q.topk, q.experts, moe_tp, moe_ep, dt, alpha);
    validate_query(q, "--shape");
  } else if (kind == OpKind::kGemm) {
    q = gemm_q(q.m, q.n, q.k, dt);
  } else if (is_attention(op_family(kind))) {
    q = kind == OpKind::kAttnPrefill ? attention_prefill_q(q.b, q.m, q.k, q.h, q.n, dt, kvd, window)
                                     : attention_decode_q(q.b, q.ctx, q.k, q.h, q.n, dt, kvd, window);
    validate_query(q, "--shape");
  } else if (op_family(kind) == Family::kMemoryOp) {
    if (dt != DType::kFp32 && dt != DType::kFp16 && dt != DType::kBf16)
      throw ConfigError(std::string("--dtype ") + dtype + ": op '" + op_name(kind) +
                        "' runs in the model's activation dtype: fp32, fp16 or bf16");
    q.dtype = dt;
  } else if (dt != DType::kFp32) {
    throw ConfigError(std::string("--dtype ") + dtype + ": op '" + op_name(kind) +
                      "' is modelled in fp32 only (NeuSight's FP32 data); use --op gemm for tensor-core GEMMs");
  }
  GpuRegistry reg = load_registry(gpu_dir);
  const GpuSpec& spec = reg.resolve(gpu);
  predictor::KernelPredictor pred(trainer::weights_dir(weights));
  auto r = pred.predict(q, spec);
  const bool gemm = has_mnk(op_family(kind));
  const bool attn = is_attention(op_family(kind));
  if (format == "json") {
    nlohmann::json j = {{"op", op_name(kind)},
                        {"family", family_name(op_family(kind))},
                        {"shape", query_shape_string(q)},
                        {"dtype", dtype_name(q.dtype)},
                        {"gpu", spec.name},
                        {"latency_ms", r.latency_ms},
                        {"member_range_ms", {r.member_min_ms, r.member_max_ms}},
                        {"roofline_ms", r.roofline_ms},
                        {"base_ms", r.base_ms},
                        {"utilisation", r.utilisation},
                        {"bound", r.bound},
                        {"num_ctas", r.launch.num_ctas},
                        {"ctas_per_sm", r.launch.ctas_per_sm},
                        {"waves", r.launch.num_waves},
                        {"flops", query_flops(q)},
                        {"bytes", query_bytes(q)},
                        {"outside_training_range", r.out_of_range}};
    if (attn)
      j["library"] = attention_library(spec);
    else if (moe) {
      const MoeLoad& l = r.launch.moe;
      j["library"] = moe_library(spec);
      j["experts_hit"] = l.hit;
      j["tokens_on_rank"] = l.tokens;
      j["busiest_expert_tokens"] = l.max_load;
    }
    else if (op_family(kind) == Family::kMemoryOp)
      j["model"] = "physics: per-launch floor + DRAM time + SM-side time per byte (fitted)";
    else if (gemm)
      j["tile"] = {{"m", r.launch.tile.tm}, {"k", r.launch.tile.tk}, {"split_k", r.launch.tile.split_k},
                   {"from", kind == OpKind::kGemm ? spec.arch + " tensor-core tile" : pred.tiles().reference_device(spec)}};
    else
      j["tile"] = {{"elems_per_cta", r.launch.elems_per_cta}, {"threads_per_cta", r.launch.threads_per_cta}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("op           %s (%s)\n", op_name(kind), family_name(op_family(kind)));
  std::printf("shape        %s (%s)\n", query_shape_string(q).c_str(), dtype_name(q.dtype));
  std::printf("gpu          %s (%s)\n", spec.name.c_str(), spec.cuda_name.c_str());
  std::printf("latency_ms   %.6g (ensemble members: %.6g - %.6g)\n", r.latency_ms, r.member_min_ms,
              r.member_max_ms);
  std::printf("roofline_ms  %.6g (%s-bound)\n", r.roofline_ms, r.bound);
  std::printf("utilisation  %.3f of the wave-quantised roofline (%.6g ms)\n", r.utilisation, r.base_ms);
  if (attn)
    std::printf("tasks        %lld CTAs (%s; %s)\n", static_cast<long long>(r.launch.num_ctas),
                kind == OpKind::kAttnPrefill ? "sequence x head x 128-query block" : "sequence x KV head x KV split",
                attention_library(spec));
  else if (kind == OpKind::kGemm)
    std::printf("tile         %dx%d (%s tensor-core tile, from the spec's architecture)\n", r.launch.tile.tm,
                r.launch.tile.tk, spec.arch.c_str());
  else if (moe)
    std::printf("experts      %.1f hit, %.1f tokens on this rank, busiest expert %.1f (%s)\n", r.launch.moe.hit,
                r.launch.moe.tokens, r.launch.moe.max_load, moe_library(spec));
  else if (op_family(kind) == Family::kMemoryOp)
    std::printf("model        physics: per-launch floor + DRAM time + SM-side time per byte (fitted)\n");
  else if (gemm)
    std::printf("tile         %dx%d split_k=%d (kernel choices of %s)\n", r.launch.tile.tm,
                r.launch.tile.tk, r.launch.tile.split_k, pred.tiles().reference_device(spec).c_str());
  else
    std::printf("tile         %g elements/CTA, %d threads/CTA\n", r.launch.elems_per_cta,
                r.launch.threads_per_cta);
  if (!r.out_of_range.empty()) {
    std::string names;
    for (const auto& n : r.out_of_range) names += (names.empty() ? "" : ", ") + n;
    std::printf("note         outside the training range (clamped): %s\n", names.c_str());
  }
  std::printf("waves        %lld (%lld CTAs, %d per SM, last wave %.0f%% full)\n",
              static_cast<long long>(r.launch.num_waves), static_cast<long long>(r.launch.num_ctas),
              r.launch.ctas_per_sm, 100 * r.launch.last_wave_fill);
  return 0;
}

}  // namespace tilecast::cli
