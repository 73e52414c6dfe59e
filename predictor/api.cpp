#include "predictor/api.h"

#include "core/error.h"
#include "core/model_config.h"

namespace tilecast::predictor {

namespace {
DType flag_dtype(const std::string& flag, const std::string& value) {
  try {
    return dtype_from_string(value);
  } catch (const ConfigError& e) {
    throw ConfigError(flag + ": " + e.what());
  }
}
}  // namespace

KernelQuery build_kernel_query(const KernelArgs& a) {
  OpKind kind;
  if (!try_op_kind_from_string(a.op, &kind)) throw ConfigError("--op: unknown op '" + a.op + "'");
  KernelQuery q = parse_query(kind, a.shape);
  const bool llm = family_traits(op_family(kind)).dtyped;
  const std::string dtype = a.dtype.empty() ? (llm ? "bf16" : "fp32") : a.dtype;
  const std::string kv_dtype = a.kv_dtype.empty() ? dtype : a.kv_dtype;
  const DType dt = flag_dtype("--dtype", dtype), kvd = flag_dtype("--kv-dtype", kv_dtype);
  if (a.window < 0) throw ConfigError("--window: expected >= 0, got " + std::to_string(a.window));
  const bool moe = kind == OpKind::kMoe;
  if (!moe && (a.moe_tp != 1 || a.moe_ep != 1 || a.routing != "balanced"))
    throw ConfigError("--moe-tp/--moe-ep/--routing apply to --op moe only");
  if (moe) {
    double alpha = 0;
    if (!try_parse_routing(a.routing, &alpha))
      throw ConfigError("--routing: expected balanced or power_law_<a> with 0 < a <= 10 (e.g. power_law_1.2), got '" +
                        a.routing + "'");
    if (dt != DType::kBf16 && dt != DType::kFp16 && dt != DType::kFp8 && dt != DType::kFp8Block)
      throw ConfigError("--dtype " + dtype + ": fused MoE is modelled in bf16, fp16, fp8 and fp8_block");
    q = moe_q(q.b, q.h, q.n, q.topk, q.experts, a.moe_tp, a.moe_ep, dt, alpha);
    validate_query(q, "--shape");
  } else if (kind == OpKind::kGemm) {
    q = gemm_q(q.m, q.n, q.k, dt);
  } else if (is_attention(op_family(kind))) {
    q = kind == OpKind::kAttnPrefill ? attention_prefill_q(q.b, q.m, q.k, q.h, q.n, dt, kvd, a.window)
                                     : attention_decode_q(q.b, q.ctx, q.k, q.h, q.n, dt, kvd, a.window);
    validate_query(q, "--shape");
  } else if (op_family(kind) == Family::kMemoryOp) {
    if (dt != DType::kFp32 && dt != DType::kFp16 && dt != DType::kBf16)
      throw ConfigError("--dtype " + dtype + ": op '" + op_name(kind) +
                        "' runs in the model's activation dtype: fp32, fp16 or bf16");
    q.dtype = dt;
  } else if (dt != DType::kFp32) {
    throw ConfigError("--dtype " + dtype + ": op '" + op_name(kind) +
                      "' is modelled in fp32 only (NeuSight's FP32 data); use --op gemm for tensor-core GEMMs");
  }
  return q;
}

nlohmann::json kernel_forecast_json(const KernelQuery& q, const KernelPrediction& r, const GpuSpec& spec,
                                    const KernelPredictor& kp) {
  const OpKind kind = q.op;
  const Family fam = op_family(kind);
  nlohmann::json j = {{"op", op_name(kind)},
                      {"family", family_name(fam)},
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
                      {"outside_training_range", r.out_of_range},
                      {"clamped_to_training_range", r.clamped}};
  if (is_attention(fam)) {
    j["library"] = attention_library(spec);
  } else if (kind == OpKind::kMoe) {
    const MoeLoad& l = r.launch.moe;
    j["library"] = moe_library(spec);
    j["experts_hit"] = l.hit;
    j["tokens_on_rank"] = l.tokens;
    j["busiest_expert_tokens"] = l.max_load;
  } else if (fam == Family::kMemoryOp) {
    j["model"] = "physics: per-launch floor + DRAM time + SM-side time per byte (fitted)";
  } else if (has_mnk(fam)) {
    j["tile"] = {{"m", r.launch.tile.tm}, {"k", r.launch.tile.tk}, {"split_k", r.launch.tile.split_k},
                 {"from", kind == OpKind::kGemm ? spec.arch + " tensor-core tile" : kp.set_for(spec, fam).tiles().reference_device(spec)}};
  } else {
    j["tile"] = {{"elems_per_cta", r.launch.elems_per_cta}, {"threads_per_cta", r.launch.threads_per_cta}};
  }
  return j;
}

nlohmann::json gpu_json(const GpuSpec& s) {
  return {{"name", s.name},
          {"cuda_name", s.cuda_name},
          {"vendor", s.vendor},
          {"arch", s.arch},
          {"num_sms", s.num_sms},
          {"boost_clock_mhz", s.boost_clock_mhz},
          {"fp32_peak_gflops", s.fp32_peak_gflops},
          {"tensor_peak_gflops", s.tensor_peak_gflops},
          {"mem_bw_gbps", s.mem_bw_gbps},
          {"mem_gb", s.mem_gb},
          {"l2_cache_mb", s.l2_cache_mb},
          {"interconnect_gbps", s.interconnect_gbps}};
}

PredictResult run_predict(const PredictArgs& in, const GpuRegistry& reg, const KernelPredictor& kp,
                          const std::string& models_dir) {
  PredictArgs a = in;
  if (a.mode == "inf") a.mode = "inference";
  if (a.mode == "train") a.mode = "training";
  const std::string& mode = a.mode;
  if (a.optimizer != "adamw" && a.optimizer != "none")
    throw ConfigError("--optimizer: expected adamw or none, got '" + a.optimizer + "'");
  const bool serving = mode == "prefill" || mode == "decode" || mode == "generate";
  if (mode != "inference" && mode != "training" && !serving)
    throw ConfigError("--mode: expected inference, training, prefill, decode or generate, got '" + mode + "'");
  auto need = [&](const char* flag, bool ok) {
    if (!ok) throw ConfigError(std::string("--mode ") + mode + " needs " + flag);
  };
  auto refuse = [&](const char* flag, bool given) {
    if (given) throw ConfigError(std::string(flag) + " does not apply to --mode " + mode);
  };
  refuse("--context", mode != "decode" && a.context.has_value());
  refuse("--gen", mode != "generate" && a.gen.has_value());
  refuse("--seq", mode == "decode" && a.seq.has_value());
  refuse("--optimizer", mode != "training" && a.optimizer != "adamw");
  if (mode == "decode") need("--context L", a.context.has_value());
  else need("--seq S", a.seq.has_value());
  if (mode == "generate") need("--gen T", a.gen.has_value());
  const ModelConfig mc = load_model_config(a.model, models_dir);
  DType dtype = DType::kFp32, kv_dtype = DType::kFp32;
  if (serving) {
    refuse("--fusion", a.fusion);
    if (a.par.dp != 1 || a.par.pp != 1 || a.par.microbatches != 1)
      throw ConfigError("--mode " + mode + ": serving forecasts take --tp only (one tensor-parallel replica)");
    if (a.dtype.empty()) {
      DType d;
      dtype = !mc.torch_dtype.empty() && try_dtype_from_string(mc.torch_dtype, &d) ? d : DType::kBf16;
    } else {
      dtype = flag_dtype("--dtype", a.dtype);
    }
    const bool fp8 = dtype == DType::kFp8 || dtype == DType::kFp8Block;
    kv_dtype = a.kv_dtype.empty() ? (fp8 ? DType::kBf16 : dtype) : flag_dtype("--kv-dtype", a.kv_dtype);
  } else {
    refuse("--kv-dtype", !a.kv_dtype.empty());
    if (!a.dtype.empty() && flag_dtype("--dtype", a.dtype) != DType::kFp32)
      throw ConfigError("--dtype " + a.dtype + ": --mode " + mode +
                        " models eager FP32 PyTorch (NeuSight's data); BF16/FP16/FP8 forecasts are the serving "
                        "modes (--mode prefill|decode|generate)");
  }
  const GpuSpec& spec = reg.resolve(a.gpu);
  PredictResult r;
  if (mode == "generate") {
    r.generate = forecast_generate(mc, spec, kp, a.batch, *a.seq, *a.gen, dtype, kv_dtype, a.par.tp);
    r.memory = r.generate->memory;
    r.forecast = r.generate->prefill;
    return r;
  }
  OpGraph g;
  if (serving) {
    const Mode phase = mode == "prefill" ? Mode::kPrefill : Mode::kDecode;
    const int64_t tokens = phase == Mode::kPrefill ? *a.seq : *a.context;
    g = build_serving_graph(mc, phase, a.batch, tokens, dtype, kv_dtype, a.par.tp);
    r.memory = serving_memory(mc, dtype, kv_dtype, a.par.tp, a.batch, tokens + (phase == Mode::kDecode ? 1 : 0), spec);
  } else {
    const bool training = mode == "training";
    g = build_op_graph(mc, a.batch, *a.seq, training ? Mode::kTraining : Mode::kInference, a.par);
    if (a.fusion) g = fuse_op_graph(g);
    r.memory = training ? training_memory(mc, a.batch, *a.seq, a.par, spec, a.optimizer == "adamw")
                        : inference_memory(mc, a.batch, *a.seq, a.par, spec);
  }
  r.forecast = forecast_model(g, spec, kp);
  if (a.optimizer == "none") r.forecast.optimizer_ms = 0;
  return r;
}

std::string predict_result_json(const PredictResult& r) {
  return r.generate ? generate_json(*r.generate) : forecast_json(r.forecast, &r.memory);
}

}  // namespace tilecast::predictor
