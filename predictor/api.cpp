#include "predictor/api.h"

#include <cmath>
#include <sstream>
#include <cstdio>

#include "core/error.h"
#include "core/model_config.h"

namespace tilecast::predictor {

DType dtype_flag(const std::string& flag, const std::string& value) {
  try {
    return dtype_from_string(value);
  } catch (const ConfigError& e) {
    throw ConfigError(flag + ": " + e.what());
  }
}

std::vector<std::string> split_list(const std::string& flag, const std::string& value) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i <= value.size(); ++i) {
    if (i == value.size() || value[i] == ',') {
      if (cur.empty()) throw ConfigError(flag + " '" + value + "': empty item in the list");
      out.push_back(cur);
      cur.clear();
    } else {
      cur += value[i];
    }
  }
  return out;
}

std::string canonical_mode(const std::string& mode) {
  const std::string m = mode == "inf" ? "inference" : mode == "train" ? "training" : mode;
  if (m != "inference" && m != "training" && !is_serving_mode(m))
    throw ConfigError("--mode: expected inference, training, prefill, decode or generate, got '" + mode + "'");
  return m;
}

bool is_serving_mode(const std::string& m) { return m == "prefill" || m == "decode" || m == "generate"; }

void check_optimizer(const std::string& value) {
  if (value != "adamw" && value != "none") throw ConfigError("--optimizer: expected adamw or none, got '" + value + "'");
}

ServingDtypes serving_dtypes(const ModelConfig& m, const std::string& dtype, const std::string& kv_dtype) {
  ServingDtypes d;
  DType cfg;
  if (!dtype.empty()) d.gemm = dtype_flag("--dtype", dtype);
  else if (!m.quantized_dtype.empty()) d.gemm = dtype_flag("quantization_config", m.quantized_dtype);
  else if (!m.torch_dtype.empty() && try_dtype_from_string(m.torch_dtype, &cfg)) d.gemm = cfg;
  // The experts' formats (weight-only int4 and mxfp4, W4A8 mxfp4_mxfp8) are no GEMM dtype.
  if (!family_models_dtype(Family::kGemm, d.gemm))
    throw ConfigError(std::string("--dtype ") + dtype_name(d.gemm) + ": " +
                      (is_weight_only(d.gemm) ? "weight-only formats are " : "") +
                      "modelled for a MoE model's experts only (--expert-dtype); --dtype is the GEMMs' and "
                      "attention's dtype (" + dtype_set_names(family_traits(Family::kGemm).dtypes) + ")");
  // The KV cache defaults to the config's kv_cache_scheme (compressed-tensors FP8), else to the
  // activations' dtype (BF16 under FP8 or NVFP4 GEMMs), and takes the attention families'
  // dtypes only.
  d.kv = !kv_dtype.empty()             ? dtype_flag("--kv-dtype", kv_dtype)
         : !m.kv_cache_dtype.empty() ? dtype_flag("quantization_config.kv_cache_scheme", m.kv_cache_dtype)
                                     : activation_dtype(d.gemm);
  if (!family_models_dtype(Family::kAttnDecode, d.kv))
    throw ConfigError("--kv-dtype " + kv_dtype + ": the KV cache is fp32, fp16, bf16 or fp8");
  return d;
}

void apply_expert_dtype(ModelConfig& m, const std::string& expert_dtype, const std::string& mode) {
  if (expert_dtype.empty()) return;
  if (!is_serving_mode(mode)) throw ConfigError("--expert-dtype does not apply to --mode " + mode);
  const DType d = dtype_flag("--expert-dtype", expert_dtype);
  if (const std::string why = expert_dtype_refusal(m, d); !why.empty())
    throw ConfigError("--expert-dtype " + expert_dtype + ": " + why);
  m.expert_dtype = dtype_name(d);
  m.expert_group_size = 0;  // the flag's dtype as the MoE family models it, not the config's format
}

double routing_flag(const std::string& value) {
  double alpha = 0;
  if (!try_parse_routing(value, &alpha))
    throw ConfigError("--routing: expected balanced, uniform or power_law_<a> with 0 < a <= 10 (e.g. power_law_1.2), got '" +
                      value + "'");
  return alpha;
}

KernelQuery build_kernel_query(const KernelArgs& a) {
  OpKind kind;
  if (!try_op_kind_from_string(a.op, &kind)) throw ConfigError("--op: unknown op '" + a.op + "'");
  KernelQuery q = parse_query(kind, a.shape);
  const Family fam = op_family(kind);
  // The sampler reads the engines' FP32 logits; every other op takes its family's default.
  const std::string dtype = !a.dtype.empty()           ? a.dtype
                            : kind == OpKind::kSampler ? "fp32"
                                                       : dtype_name(family_traits(fam).default_dtype);
  const std::string kv_dtype = a.kv_dtype.empty() ? dtype : a.kv_dtype;
  const DType dt = dtype_flag("--dtype", dtype), kvd = dtype_flag("--kv-dtype", kv_dtype);
  // Each family's dtypes are a row of kFamilyTable (core/op_kind.h).
  if (const std::string why = dtype_refusal(kind, dt); !why.empty()) throw ConfigError("--dtype " + dtype + ": " + why);
  if (a.window < 0) throw ConfigError("--window: expected >= 0, got " + std::to_string(a.window));
  if (a.prefix != 0 && kind != OpKind::kAttnPrefill) throw ConfigError("--prefix applies to --op attention_prefill only");
  if (a.prefix < 0 || a.prefix > (int64_t{1} << 22))
    throw ConfigError("--prefix: " + std::to_string(a.prefix) + " out of range [0, 2^22]");
  const bool moe = kind == OpKind::kMoe;
  if (!moe && (a.moe_tp != 1 || a.moe_ep != 1 || a.routing != "balanced" || a.weight_group != 0))
    throw ConfigError("--moe-tp/--moe-ep/--routing/--weight-group apply to --op moe only");
  if (a.weight_group != 0 && dt != DType::kInt4)
    throw ConfigError("--weight-group applies to --dtype int4 (the weight-only experts' scale groups)");
  if (!a.kv_dtype.empty() && !is_attention(fam)) throw ConfigError("--kv-dtype applies to attention ops only");
  if (moe) {
    q = moe_q(q.b, q.h, q.n, q.topk, q.experts, a.moe_tp, a.moe_ep, dt, routing_flag(a.routing));
    set_weight_group(q, a.weight_group);
    validate_query(q, "--shape");
  } else if (kind == OpKind::kGemm) {
    q = gemm_q(q.m, q.n, q.k, dt);
  } else if (is_attention(fam)) {
    if (const std::string why = dtype_refusal(kind, kvd); !why.empty())
      throw ConfigError("--kv-dtype " + kv_dtype + ": " + why);
    q = kind == OpKind::kAttnPrefill ? attention_chunk_q(q.b, q.m, a.prefix, q.k, q.h, q.n, dt, kvd, a.window)
                                     : attention_decode_q(q.b, q.ctx, q.k, q.h, q.n, dt, kvd, a.window);
    validate_query(q, "--shape");
  } else {
    q.dtype = dt;
  }
  q.sustained = a.sustained;
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
                      {"sustained", q.sustained},
                      {"latency_ms", r.latency_ms},
                      {"stream_ms", r.stream_ms},
                      {"member_range_ms", {r.member_min_ms, r.member_max_ms}},
                      {"roofline_ms", r.roofline_ms},
                      {"base_ms", r.base_ms},
                      {"bound_ms", r.bound_ms},
                      {"utilisation", r.utilisation},
                      {"bound", r.bound},
                      {"num_ctas", r.launch.num_ctas},
                      {"ctas_per_sm", r.launch.ctas_per_sm},
                      {"waves", r.launch.num_waves},
                      {"flops", query_flops(q)},
                      {"bytes", query_bytes(q)},
                      {"outside_training_range", r.out_of_range},
                      {"clamped_to_training_range", r.clamped},
                      {"peak_ms", r.peak_ms},
                      {"raised_to_peak", r.at_peak},
                      // The training GPU whose forecast capped this one (a GPU this one betters in
                      // every spec; KernelPrediction::capped_by), null where none did.
                      {"capped_by", r.capped_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.capped_by)},
                      // The training GPU whose forecast raised this one (a GPU that betters this
                      // one in every spec; KernelPrediction::lifted_by), null where none did.
                      {"lifted_by", r.lifted_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.lifted_by)},
                      {"basis", basis_json({kernel_basis(fam, r)})[0]}};
  if (r.prior_ms > 0) {
    j["prior_ms"] = r.prior_ms;
    j["network_correction"] = r.corrected;
    j["network_weight"] = r.network_weight;
    j["fitted_roofline_weight"] = r.fitted_roofline_weight;  // this row's, after its fixed costs
    j["prior_cta_ns"] = r.prior_cta_ns;  // the library's cost per CTA in prior_ms (0: none)
    j["prior_sm_bytes_per_cycle"] = r.prior_sm_bytes_per_cycle;  // the library's load rate per SM (0: none)
    j["prior_floor_kcycles"] = r.prior_floor_kcycles;  // the library's own floor in prior_ms (0: the shared one)
    // The kernel library whose own fitted roofline prior_ms is (prior_base_by_library); null: the family's.
    j["prior_library"] = r.prior_library.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.prior_library);
  }
  if (is_attention(fam)) {
    j["library"] = attention_library(q, spec);
    // A fallback library's forecast: its own fitted roofline, corrected by its own network where
    // the weights have one (network_weight; KernelPrediction::fallback).
    j["fallback_prior"] = r.fallback;
  } else if (kind == OpKind::kMoe) {
    j["routing"] = routing_name(q.routing_alpha);
    if (r.fp8_from_bf16) j["fp8_from_bf16_ms"] = r.bf16_ms;
    // The layer as two stacked GEMMs (moe_gemm_composite), whether or not the forecast uses them;
    // their time and weight where it does (of its BF16 twin where fp8_from_bf16).
    KernelQuery up, down;
    if (moe_gemm_composite(q, &up, &down)) j["stacked_gemms"] = {query_shape_string(up), query_shape_string(down)};
    if (r.composite_weight > 0) {
      j["gemm_composite_ms"] = r.composite_ms;
      j["gemm_composite_weight"] = r.composite_weight;
    }
    j["chunks"] = r.moe_chunks;  // > 1: forecast as equal chunks within the trained tokens
    if (r.moe_chunks > 1) j["chunk_tokens"] = r.moe_chunk_tokens;
    const MoeLoad& l = r.launch.moe;
    j["library"] = moe_library(spec, q.dtype);
    j["experts_hit"] = l.hit;
    j["tokens_on_rank"] = l.tokens;
    j["busiest_expert_tokens"] = l.max_load_if_hit;
    // The rows of pairs routed to other ranks' experts that Triton's and Marlin's kernels still
    // pass through (moe_other_rank_bytes; 0 at EP 1, for TRT-LLM's and behind DeepEP's
    // dispatch), at DRAM bandwidth: the forecast's floor on a GPU the network does not correct
    // (forecast_floor_s), reported only on one it does.
    const double other = moe_other_rank_bytes(q, spec);
    j["other_rank_gb"] = other / kBytesPerGb;
    j["other_rank_ms"] = s_to_ms(moe_other_rank_s(q, spec));
    j["other_rank_floor"] = other > 0 && !r.corrected;
    // A working set that fits the L2, read from there by the fitted roofline of a call repeated
    // alone (moe_l2_scale; false inside a model's step), and the memory time it charges.
    const KernelBounds kb = kernel_bounds(q, spec, launch_info(q, spec));
    j["l2_working_set"] = kb.fit_memory_scale < 1;
    j["fitted_memory_us"] = s_to_us(kb.fitted_memory_s());
    j["in_step_l2_factor"] = r.in_step_l2_factor;
  } else if (fam == Family::kMemoryOp) {
    j["model"] = kMemoryOpModelSummary;
    j["l2_resident_bytes"] = r.l2_resident_bytes;
  } else if (has_mnk(fam)) {
    j["tile"] = {{"m", r.launch.tile.tm}, {"k", r.launch.tile.tk}, {"split_k", r.launch.tile.split_k},
                 {"from", kind == OpKind::kGemm ? spec.arch + " tensor-core tile" : kp.set_for(spec, fam).tiles().reference_device(spec)}};
    // A SIMT FP32 GEMM's compute rate: the sheet's peak, its issue bound and the clock the
    // sheet rates full-SM loads at (GpuSpec::fp32_simt_gemm_gflops).
    if (q.dtype == DType::kFp32)
      j["fp32_gemm_rate"] = {{"gflops", spec.fp32_simt_gemm_gflops()},
                             {"sheet_gflops", spec.fp32_gemm_peak_gflops()},
                             {"issue_fraction", spec.fp32_issue_fraction()},
                             {"compute_clock_fraction", spec.compute_clock_fraction()}};
  } else {
    j["tile"] = {{"elems_per_cta", r.launch.elems_per_cta}, {"threads_per_cta", r.launch.threads_per_cta}};
    if (q.op == OpKind::kLayerNorm) j["kernels"] = layernorm_two_kernels(q) ? 2 : 1;
  }
  return j;
}

nlohmann::json models_json(const std::string& models_dir) {
  const std::vector<std::string> names = bundled_models(models_dir);
  if (names.empty()) throw ConfigError(models_dir + ": no model configs (*.json) in this folder");
  nlohmann::json list = nlohmann::json::array();
  for (const auto& n : names) {
    const ModelConfig m = load_model_config(n, models_dir);
    list.push_back({{"name", m.name},
                    {"model_type", m.model_type},
                    {"parameters", model_parameters(m)},
                    {"layers", m.layers},
                    {"hidden", m.hidden},
                    {"heads", m.heads},
                    {"kv_heads", m.kv_heads},
                    {"head_dim", m.head_dim},
                    {"ffn", m.num_experts > 0 && m.moe_ffn > 0 ? m.moe_ffn : m.ffn},
                    {"experts", m.num_experts},
                    {"experts_per_token", m.experts_per_token},
                    {"vocab", m.vocab},
                    {"max_positions", m.max_positions},
                    {"sliding_window", m.sliding_window},
                    {"sliding_window_layers", windowed_layers(m)},
                    {"chunked_attention", m.chunked_attention && windowed_layers(m) > 0},
                    {"attention", is_mla(m) ? "mla" : m.kv_heads < m.heads ? "gqa" : "mha"},
                    {"torch_dtype", m.torch_dtype},
                    {"quantized_dtype", m.quantized_dtype},
                    {"expert_dtype", m.expert_dtype},
                    // Multi-token-prediction layers (`--spec-draft mtp` needs one or more).
                    {"mtp_layers", m.mtp_layers}});
  }
  return list;
}

nlohmann::json gpu_json(const GpuSpec& s) {
  return {{"name", s.name},
          {"cuda_name", s.cuda_name},
          {"vendor", s.vendor},
          {"arch", s.arch},
          {"num_sms", s.num_sms},
          {"boost_clock_mhz", s.boost_clock_mhz},
          // The clock a full-SM load runs at (the boost clock where the sheet states one) and
          // the SIMT FP32 GEMM rate tilecast's bounds take (GpuSpec::fp32_simt_gemm_gflops).
          {"compute_clock_mhz", s.boost_clock_mhz * s.compute_clock_fraction()},
          // The clock of tensor-core work inside a model's step: measured, or the rated one.
          {"sustained_clock_mhz", s.boost_clock_mhz * s.sustained_clock_fraction()},
          {"fp32_peak_gflops", s.fp32_peak_gflops},
          {"fp32_simt_gemm_gflops", s.fp32_simt_gemm_gflops()},
          {"tensor_peak_gflops", s.tensor_peak_gflops},
          // Exponentials per SM and clock (prefill's softmax): the sheet's, else 16.
          {"exp_per_sm_clock", s.exp_per_sm_clock()},
          {"mem_bw_gbps", s.mem_bw_gbps},
          {"mem_gib", s.mem_gib},
          {"l2_cache_mb", s.l2_cache_mb},
          {"interconnect_gbps", s.interconnect_gbps},
          {"interconnect_mesh_peers", s.interconnect_mesh_peers},
          {"gpus_per_node", s.gpus_per_node},
          {"network_gbps", s.network_gbps}};
}

nlohmann::json gpus_json(const GpuRegistry& reg, const KernelPredictor& kp) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : reg.all()) {
    nlohmann::json g = gpu_json(s);
    nlohmann::json t = nlohmann::json::object();
    for (Family f : kAllFamilies) {
      const GpuStanding st = kp.standing(s, f);
      if (st.training_gpus > 0) t[family_name(f)] = st.name();
    }
    g["training"] = t;
    list.push_back(g);
  }
  return list;
}

std::string training_summary(const GpuSpec& gpu, const KernelPredictor& kp) {
  // NeuSight's five FP32 families share their training GPUs: one group.
  const std::vector<std::pair<const char*, std::vector<Family>>> groups = {
      {"fp32", {Family::kBmm, Family::kLinear, Family::kElementwise, Family::kSoftmax, Family::kLayerNorm}},
      {"gemm", {Family::kGemm}},
      {"prefill", {Family::kAttnPrefill}},
      {"decode", {Family::kAttnDecode}},
      {"moe", {Family::kMoe}},
      {"memop", {Family::kMemoryOp}}};
  std::string out;
  for (const auto& [label, fams] : groups) {
    bool trained = false, twin = false;
    for (Family f : fams) {
      const GpuStanding st = kp.standing(gpu, f);
      trained = trained || st.trained_on;
      twin = twin || st.twin;
    }
    if (trained || twin) out += std::string(out.empty() ? "" : " ") + label + (trained ? "" : "~");
  }
  return out.empty() ? "-" : out;
}

SpecRequest SpecRequest::from_flags(const std::string& draft, std::optional<int64_t> tokens, std::optional<double> accept) {
  if (tokens.has_value() && draft.empty()) throw ConfigError("--spec-tokens needs --spec-draft");
  return {draft, tokens.value_or(4), accept};
}

void SpecRequest::check(const std::string& mode) const {
  if (!draft.empty() && mode != "generate") throw ConfigError("--spec-draft does not apply to --mode " + mode);
  if (draft.empty() && accept.has_value()) throw ConfigError("--spec-accept needs --spec-draft");
  if (!draft.empty() && !accept.has_value())
    throw ConfigError("--spec-draft needs --spec-accept A (the probability that the target accepts a draft token)");
}

ModelConfig SpecRequest::draft_for(const ModelConfig& target, const std::string& models_dir) const {
  return draft == "mtp" ? mtp_draft_config(target) : load_model_config(draft, models_dir);
}

Disaggregation disaggregation_flags(std::optional<int64_t> prefill_tp, std::optional<int64_t> prefill_ep,
                                    std::optional<int64_t> prefill_instances,
                                    std::optional<int64_t> decode_instances) {
  if (prefill_ep && !prefill_tp) throw ConfigError("--prefill-ep needs --prefill-tp");
  if (prefill_instances && !prefill_tp) throw ConfigError("--prefill-instances needs --prefill-tp");
  if (decode_instances && !prefill_tp) throw ConfigError("--decode-instances needs --prefill-tp");
  const Disaggregation d{prefill_tp.value_or(0), prefill_ep.value_or(1), prefill_instances.value_or(1),
                         decode_instances.value_or(1)};
  if (prefill_tp) check_disaggregation(d);  // a given tp of 0 too: not silently aggregated
  return d;
}

std::vector<Disaggregation> disaggregation_layouts(std::optional<int64_t> prefill_tp, std::optional<int64_t> prefill_ep,
                                                   const std::vector<int64_t>& prefill_instances,
                                                   const std::vector<int64_t>& decode_instances) {
  auto each = [](const std::vector<int64_t>& v) {
    std::vector<std::optional<int64_t>> o(v.begin(), v.end());
    if (o.empty()) o.push_back(std::nullopt);
    return o;
  };
  std::vector<Disaggregation> layouts;
  for (const auto& n : each(prefill_instances))
    for (const auto& m : each(decode_instances)) layouts.push_back(disaggregation_flags(prefill_tp, prefill_ep, n, m));
  return layouts;
}

void check_disaggregation_mode(const Disaggregation& d, const std::string& mode) {
  if (d.active() && mode != "generate")
    throw ConfigError("--prefill-tp applies to --mode generate (a prefill and a decode instance)");
}

bool parse_moe_a2a(const std::string& value) {
  if (value != "none" && value != "deepep") throw ConfigError("--moe-a2a: expected none or deepep, got '" + value + "'");
  return value == "deepep";
}

void check_moe_a2a(bool moe_all_to_all, bool dp_attention, const std::string& mode) {
  if (!moe_all_to_all) return;
  if (!is_serving_mode(mode)) throw ConfigError("--moe-a2a does not apply to --mode " + mode);
  if (!dp_attention)
    throw ConfigError("--moe-a2a deepep is modelled with --dp-attention (each rank dispatching its own sequences' "
                      "tokens, as SGLang runs DeepEP)");
}

void check_dp_attention(bool dp_attention, const std::string& mode, int64_t largest_tp, const std::string& tp_flag) {
  if (!dp_attention) return;
  if (!is_serving_mode(mode)) throw ConfigError("--dp-attention does not apply to --mode " + mode);
  if (largest_tp < 2)
    throw ConfigError("--dp-attention needs " + tp_flag + " 2 or more (the ranks that split the sequences' attention)");
}

PredictResult run_predict(const PredictArgs& a, const GpuRegistry& reg, const KernelPredictor& kp,
                          const std::string& models_dir) {
  const std::string mode = canonical_mode(a.mode);
  check_optimizer(a.optimizer);
  auto need = [&](const char* flag, bool ok) {
    if (!ok) throw ConfigError("--mode " + mode + " needs " + flag);
  };
  auto refuse = [&](const char* flag, bool given) {
    if (given) throw ConfigError(std::string(flag) + " does not apply to --mode " + mode);
  };
  const bool serving = is_serving_mode(mode);
  refuse("--context", mode != "decode" && a.context.has_value());
  refuse("--gen", mode != "generate" && a.gen.has_value());
  refuse("--seq", mode == "decode" && a.seq.has_value());
  refuse("--optimizer", mode != "training" && a.optimizer != "adamw");
  if (const char* flag = a.sched.first_given()) refuse(flag, mode != "generate");
  refuse("--cached-prefix", mode != "generate" && mode != "prefill" && a.cached_prefix.has_value());
  a.spec.check(mode);
  if (mode == "decode") need("--context L", a.context.has_value());
  else need("--seq S", a.seq.has_value());
  if (mode == "generate") need("--gen T", a.gen.has_value());
  ModelConfig mc = load_model_config(a.model, models_dir);
  apply_expert_dtype(mc, a.expert_dtype, mode);
  ForecastRequest r;
  r.model = &mc;
  r.mode = mode;
  r.batch = a.batch;
  r.tokens = mode == "decode" ? *a.context : *a.seq;
  r.gen = a.gen.value_or(0);
  r.limits = a.sched.limits();
  r.cached_prefix = a.cached_prefix.value_or(0);
  r.par = a.par;
  r.disagg = a.disagg;
  r.fusion = a.fusion;
  r.hf_eager = a.hf_eager;
  r.optimizer_state = a.optimizer == "adamw";
  r.host_gap_us = a.host_gap_us;  // validated by forecast_model
  if (serving) {
    refuse("--fusion", a.fusion);
    r.dtypes = serving_dtypes(mc, a.dtype, a.kv_dtype);
    if (!a.routing.empty()) r.routing_alpha = routing_flag(a.routing);  // a dense model: build_serving_graph refuses
  } else {
    refuse("--kv-dtype", !a.kv_dtype.empty());
    refuse("--routing", !a.routing.empty());  // even "balanced": forecast() sees only a power law
    r.train_dtype = eager_dtype(mode, a.dtype);
  }
  a.training.apply(r, false);
  std::optional<ModelConfig> draft;
  if (!a.spec.draft.empty()) {
    draft = a.spec.draft_for(mc, models_dir);
    r.spec = a.spec.with(*draft);
  }
  r.gpu = &reg.resolve(a.gpu);
  return forecast(r, kp);
}

DType eager_dtype(const std::string& mode, const std::string& dtype) {
  const DType d = dtype.empty() ? DType::kFp32 : dtype_flag("--dtype", dtype);
  if (d == DType::kFp32 || (mode == "training" && (d == DType::kBf16 || d == DType::kFp16 || d == DType::kFp8))) return d;
  throw ConfigError("--dtype " + dtype + ": --mode " + mode +
                    " models eager FP32 PyTorch (NeuSight's data); mixed-precision training is --mode training "
                    "--dtype bf16|fp16|fp8, BF16/FP16/FP8 serving the modes prefill, decode and generate");
}

int zero_flag(const std::string& value) {
  if (value == "auto") return TrainingArgs::kZeroAuto;
  if (value.size() == 1 && value[0] >= '0' && value[0] <= '3') return value[0] - '0';
  throw ConfigError("--zero: expected 0, 1, 2, 3 or auto (plan), got '" + value + "'");
}

void TrainingArgs::apply(ForecastRequest& r, bool where_tp_splits) const {
  if (zero == kZeroAuto || recompute == "auto")
    throw ConfigError(std::string(zero == kZeroAuto ? "--zero" : "--recompute") +
                      " auto: only plan searches it; give one value");
  r.par.zero = zero;
  r.par.sequence_parallel = sequence_parallel && (!where_tp_splits || r.par.tp > 1);
  r.recompute = !recompute.empty() && recompute_flag(recompute);
  r.train_tokens = train_tokens;
}

void check_train_tokens(double tokens) {
  if (tokens == 0) return;
  if (!(tokens >= 1 && tokens <= 1e16))
    throw ConfigError("--train-tokens: " + g_text(tokens) + " out of range [1, 1e16]");
}

bool recompute_flag(const std::string& value) {
  if (value != "none" && value != "full") throw ConfigError("--recompute: expected none or full, got '" + value + "'");
  return value == "full";
}

void check_scheduler_options(const std::string& mode, const SchedulerLimits& limits, int64_t cached_prefix) {
  if (mode != "generate" && (limits.any() || limits.prefill_first || limits.has_slo()))
    throw ConfigError(
        "--max-batched-tokens, --max-seqs, --schedule, --request-rate and --slo-* apply to --mode generate only");
  if (mode != "generate" && mode != "prefill" && cached_prefix != 0)
    throw ConfigError("--cached-prefix applies to --mode prefill and generate only");
}

PredictResult forecast(const ForecastRequest& q, const KernelPredictor& kp) {
  const ModelConfig& mc = *q.model;
  const GpuSpec& spec = *q.gpu;
  PredictResult r;
  check_scheduler_options(q.mode, q.limits, q.cached_prefix);
  check_dp_attention(q.par.dp_attention, q.mode, q.par.tp, "--tp");
  check_moe_a2a(q.par.moe_all_to_all, q.par.dp_attention, q.mode);
  check_disaggregation_mode(q.disagg, q.mode);
  check_train_tokens(q.train_tokens);
  if ((q.par.zero != 0 || q.recompute || q.par.sequence_parallel || q.train_tokens > 0) &&
      (q.mode != "training" || q.train_dtype == DType::kFp32))
    throw ConfigError(std::string(q.par.zero != 0           ? "--zero"
                                  : q.recompute             ? "--recompute"
                                  : q.par.sequence_parallel ? "--sequence-parallel"
                                                            : "--train-tokens") +
                      " applies to mixed-precision training (--mode training --dtype bf16|fp16|fp8)");
  const bool training = q.mode == "training", mixed_training = training && q.train_dtype != DType::kFp32;
  if (q.hf_eager && !(mixed_training || q.mode == "prefill"))
    throw ConfigError("--hf-eager applies to --mode prefill and --mode training --dtype bf16|fp16 (--mode " + q.mode +
                      (training || q.mode == "inference" ? " in fp32 is eager PyTorch already)" : ")"));
  if ((q.par.cp != 1 || q.par.vpp != 1) && !mixed_training)
    throw ConfigError(std::string(q.par.cp != 1 ? "--cp" : "--vpp") +
                      " applies to mixed-precision training (--mode training --dtype bf16|fp16|fp8)");
  if (is_serving_mode(q.mode)) {
    // Before any graph: generate builds a prefill graph first, whose refusal would name prefill.
    require_serving_family(mc, "--mode " + q.mode);
    if (q.par.dp != 1 || q.par.microbatches != 1)
      throw ConfigError("--mode " + q.mode +
                        ": serving forecasts take --tp, --pp and --ep (one replica; its microbatches follow from --pp)");
    const ServingDtypes& d = q.dtypes;
    if (q.disagg.active()) {
      check_disaggregation_options("--prefill-tp", q.limits, q.cached_prefix, q.spec.has_value());
      r.generate = forecast_disaggregated(mc, spec, kp, q.batch, q.tokens, q.gen, d.gemm, d.kv, q.par, q.disagg,
                                          q.host_gap_us, q.routing_alpha, q.limits);
      r.memory = r.generate->memory;
      r.forecast = r.generate->prefill;
      return r;
    }
    if (q.mode == "generate") {
      r.generate = forecast_generate(mc, spec, kp, q.batch, q.tokens, q.gen, d.gemm, d.kv, q.par, q.host_gap_us,
                                     q.routing_alpha, q.limits, q.cached_prefix, q.spec ? &*q.spec : nullptr);
      r.memory = r.generate->memory;
      r.forecast = r.generate->prefill;
      return r;
    }
    const Mode phase = q.mode == "prefill" ? Mode::kPrefill : Mode::kDecode;
    if (q.hf_eager) {
      // The graph first: its builder refuses a model it does not build, whatever the layout.
      const OpGraph g = build_hf_eager_prefill_graph(mc, q.batch, q.tokens, d.gemm);
      if (q.par.tp != 1 || q.par.pp != 1 || q.par.ep != 1 || q.par.dp_attention || q.cached_prefix != 0 ||
          d.kv != d.gemm)
        throw ConfigError("--hf-eager: Hugging Face's eager prefill runs on one GPU, its cache in the model's dtype "
                          "(no --tp, --pp, --ep, --dp-attention, --cached-prefix or --kv-dtype)");
      r.forecast = forecast_model(g, spec, kp, q.host_gap_us);
      r.memory = serving_memory(mc, d.gemm, d.kv, 1, q.batch, q.tokens, spec, 1, 0, ServingPass{0, q.tokens});
      return r;
    }
    r.forecast = forecast_model(build_serving_graph(mc, phase, q.batch, q.tokens, d.gemm, d.kv, q.par.tp, q.par.ep,
                                                    q.routing_alpha, q.par.pp, q.cached_prefix, q.par.dp_attention,
                                                    q.par.moe_all_to_all),
                                spec, kp, q.host_gap_us);
    // The pass: each prompt's uncached rest, or one token a sequence.
    const ServingPass pass{0, phase == Mode::kDecode ? 1 : q.tokens - q.cached_prefix};
    r.memory = serving_memory(mc, d.gemm, d.kv, q.par.tp, q.batch, q.tokens + (phase == Mode::kDecode ? 1 : 0), spec,
                              q.par.pp, q.cached_prefix, pass, q.par.dp_attention, {}, q.par.moe_all_to_all);
    return r;
  }
  // Token routing is a serving option: refused here for eager FP32 and training, for predict,
  // compare and plan alike (the eager graph refuses the layouts it does not model itself).
  if (q.routing_alpha > 0) throw ConfigError("--routing does not apply to --mode " + q.mode);
  if (mixed_training) {
    if (q.fusion) throw ConfigError("--fusion applies to eager FP32 inference, not mixed-precision training");
    const OpGraph g = build_llm_training_graph(mc, q.batch, q.tokens, q.train_dtype, q.par, q.recompute, q.hf_eager);
    r.forecast = forecast_model(g, spec, kp, q.host_gap_us);
    if (!q.optimizer_state) r.forecast.optimizer_ms = 0;
    r.forecast.recompute = q.recompute;
    set_training_throughput(r.forecast, g, spec);
    r.forecast.train_tokens = q.train_tokens;
    r.memory =
        llm_training_memory(mc, q.batch, q.tokens, q.train_dtype, q.par, spec, q.optimizer_state, q.recompute, q.hf_eager);
    return r;
  }

  OpGraph g = build_op_graph(mc, q.batch, q.tokens, training ? Mode::kTraining : Mode::kInference, q.par);
  if (q.fusion) g = fuse_op_graph(g);
  r.forecast = forecast_model(g, spec, kp, q.host_gap_us);
  r.memory = training ? training_memory(mc, q.batch, q.tokens, q.par, spec, q.optimizer_state)
                      : inference_memory(mc, q.batch, q.tokens, q.par, spec);
  if (!q.optimizer_state) r.forecast.optimizer_ms = 0;
  return r;
}

std::string predict_result_json(const PredictResult& r) {
  return r.generate ? generate_json(*r.generate) : forecast_json(r.forecast, &r.memory);
}

void check_capacity_request(const ForecastRequest& base, double attainment_pct) {
  if (canonical_mode(base.mode) != "generate") throw ConfigError("capacity: forecasts --mode generate only");
  if (!base.limits.has_slo()) throw ConfigError("capacity: needs an objective (--slo-ttft-ms, --slo-tpot-ms)");
  if (!(attainment_pct > 0 && attainment_pct <= 100))
    throw ConfigError("--attainment: " + g_text(attainment_pct) + " out of range (0, 100] %");
  // At the lowest rates every request decodes alone: requests x gen steps, each forecast apart.
  if (double(base.batch) * double(base.gen) > double(kMaxArrivalSteps))
    throw ConfigError("capacity: --requests " + std::to_string(base.batch) + " x --gen " + std::to_string(base.gen) +
                      " is more than the " + std::to_string(kMaxArrivalSteps) +
                      " steps a trial at a low rate may take; lower either");
}

CapacityResult find_capacity(const ForecastRequest& base, double attainment_pct, const KernelPredictor& kp) {
  check_capacity_request(base, attainment_pct);
  // The trials forecast the same steps' kernels again and again: each is forecast once.
  const KernelPredictor::MemoScope memo(kp);
  CapacityResult c;
  c.attainment_pct = attainment_pct;
  c.requests = base.batch;
  // q's requests at `rate` a second (0: together).
  auto at = [&](ForecastRequest q, double rate) {
    q.mode = "generate", q.limits.request_rate = rate;
    ++c.forecasts;
    return *forecast(q, kp).generate;
  };
  auto meets = [&](const GenerateForecast& f) {
    return f.fits() && f.slo_attained_pct() >= attainment_pct - 1e-9;
  };
  ForecastRequest lone = base;  // one request of the stated lengths (the range's draws are for the runs of many)
  lone.batch = 1, lone.limits.range_ratio = 0;
  c.lone = at(lone, 0);
  if (!meets(c.lone)) return c;
  double lo = 0, hi = 0;
  std::optional<GenerateForecast> best;
  for (double r = 1e-3;; r = r < 1 ? 1 : r * 4) {
    if (r > 1e6) {  // every rate meets them: all requests at once do
      c.unbounded = true;
      break;
    }
    GenerateForecast f = at(base, r);
    if (!meets(f)) {
      hi = r;
      break;
    }
    lo = r, best = std::move(f);
  }
  if (hi > 0 && lo > 0) {
    while (hi / lo > 1.01) {
      const double mid = std::sqrt(lo * hi);
      GenerateForecast f = at(base, mid);
      if (meets(f)) lo = mid, best = std::move(f);
      else hi = mid;
    }
  }
  c.failing_rate_rps = hi;
  c.max_rate_rps = lo;
  c.at_max = std::move(best);
  return c;
}

namespace {
nlohmann::json point_json(const GenerateForecast& f) {
  return {{"request_rate", f.limits.request_rate},
          {"attained_pct", f.slo_attained_pct()},
          {"goodput_rps", f.goodput_rps},
          {"ttft_ms", f.ttft_ms},
          {"ttft_p50_ms", f.ttft.p50_ms},
          {"ttft_p99_ms", f.ttft.p99_ms},
          {"tpot_ms", f.tpot_ms},
          {"tpot_p50_ms", f.tpot.p50_ms},
          {"tpot_p99_ms", f.tpot.p99_ms},
          {"tokens_per_s", f.tokens_per_s},
          {"max_seqs", f.limits.max_seqs},
          {"memory_gb", f.memory.total_gb()},
          {"fits", f.fits()},  // disaggregated: both instances
          // Disaggregated: the prefill instances per decode instance that keep both busy.
          {"prefill_per_decode", f.disagg ? nlohmann::json(f.disagg->prefill_per_decode) : nlohmann::json(nullptr)}};
}

}  // namespace

int64_t capacity_replicas(const CapacityResult& c, double target_rate) {
  if (!(target_rate > 0) || c.max_rate_rps <= 0) return 0;
  if (c.unbounded) return 1;  // one replica meets them at any rate tried
  return static_cast<int64_t>(std::ceil(target_rate / c.max_rate_rps - 1e-9));
}

double capacity_usd_per_m_requests(const CapacityResult& c, int64_t gpus_per_replica, double usd_per_gpu_hour) {
  if (!(usd_per_gpu_hour > 0) || c.max_rate_rps <= 0) return 0;
  return usd_per_gpu_hour * double(gpus_per_replica) / (3600.0 * c.max_rate_rps) * 1e6;
}

void check_capacity_options(int64_t requests, std::optional<double> target_rate) {
  if (requests < 1 || requests > 65536) throw ConfigError("--requests: expected 1..65536, got " + std::to_string(requests));
  if (target_rate && !(*target_rate > 0 && *target_rate <= 1e9))
    throw ConfigError("--target-rate: expected a rate in (0, 1e9] requests a second");
}

ForecastRequest capacity_request(const ModelConfig& m, int64_t requests, int64_t seq, int64_t gen,
                                 const ServingDtypes& dtypes, int64_t ep, double routing_alpha, SchedulerArgs sched,
                                 int64_t cached_prefix, bool python_names) {
  if (sched.request_rate)
    throw ConfigError(std::string(python_names ? "request_rate" : "--request-rate") + ": capacity searches the rate itself");
  if (!sched.max_seqs) sched.max_seqs = "auto";
  sched.request_rate = 1;  // checks the arrivals; the search sets the rate
  ForecastRequest q;
  q.model = &m;
  q.mode = "generate";
  q.batch = requests, q.tokens = seq, q.gen = gen;
  q.dtypes = dtypes;
  q.par.ep = ep;
  q.routing_alpha = routing_alpha;
  q.limits = sched.limits(python_names);
  q.limits.request_rate = 0;
  q.cached_prefix = cached_prefix;
  return q;
}

std::string capacity_json(const ForecastRequest& q, const CapacityResult& c, double target_rate, double usd_per_gpu_hour) {
  const int64_t replicas = capacity_replicas(c, target_rate), gpus_per_replica = replica_gpus(q);
  nlohmann::json j = {{"model", q.model->name},
                      {"gpu", q.gpu->name},
                      {"seq", q.tokens},
                      {"gen", q.gen},
                      {"requests", c.requests},
                      {"tp", q.par.tp},
                      {"ep", q.par.ep},
                      {"dp_attention", q.par.dp_attention},
                      {"moe_a2a", q.par.moe_all_to_all ? "deepep" : "none"},
                      {"prefill_tp", q.disagg.active() ? nlohmann::json(q.disagg.prefill_tp) : nlohmann::json(nullptr)},
                      {"prefill_ep", q.disagg.active() ? nlohmann::json(q.disagg.prefill_ep) : nlohmann::json(nullptr)},
                      {"prefill_instances",
                       q.disagg.active() ? nlohmann::json(q.disagg.prefill_instances) : nlohmann::json(nullptr)},
                      {"decode_instances",
                       q.disagg.active() ? nlohmann::json(q.disagg.decode_instances) : nlohmann::json(nullptr)},
                      {"gpus_per_replica", gpus_per_replica},
                      {"dtype", dtype_name(q.dtypes.gemm)},
                      {"max_batched_tokens", q.limits.max_batched_tokens},
                      {"max_seqs", q.limits.max_seqs},
                      {"max_seqs_auto", q.limits.max_seqs_auto},
                      {"schedule", q.limits.schedule_name()},
                      {"arrivals", q.limits.uniform_arrivals ? "uniform" : "poisson"},
                      {"range_ratio", q.limits.range_ratio},
                      {"cached_prefix", q.cached_prefix},
                      {"slo_ttft_ms", positive_or_null(q.limits.slo_ttft_ms)},
                      {"slo_tpot_ms", positive_or_null(q.limits.slo_tpot_ms)},
                      {"attainment_pct", c.attainment_pct},
                      {"max_rate_rps", c.max_rate_rps},
                      {"unbounded", c.unbounded},
                      {"failing_rate_rps", positive_or_null(c.failing_rate_rps)},
                      {"forecasts", c.forecasts},
                      {"lone_request", {{"ttft_ms", c.lone.ttft_ms}, {"tpot_ms", c.lone.tpot_ms}, {"fits", c.lone.memory.fits()}}},
                      {"at_max_rate", c.at_max ? point_json(*c.at_max) : nlohmann::json(nullptr)}};
  const double per_m = capacity_usd_per_m_requests(c, gpus_per_replica, usd_per_gpu_hour);
  j["usd_per_gpu_hour"] = positive_or_null(usd_per_gpu_hour);
  j["usd_per_m_requests"] = positive_or_null(per_m);
  if (target_rate > 0) {
    j["target_rate_rps"] = target_rate;
    j["replicas"] = replicas > 0 ? nlohmann::json(replicas) : nlohmann::json(nullptr);
    j["gpus"] = replicas > 0 ? nlohmann::json(replicas * gpus_per_replica) : nlohmann::json(nullptr);
    j["usd_per_hour"] = positive_or_null(double(replicas * gpus_per_replica) * usd_per_gpu_hour);
  }
  return j.dump(2) + "\n";
}

std::string capacity_table(const ForecastRequest& q, const CapacityResult& c, double target_rate, double usd_per_gpu_hour) {
  const int64_t replicas = capacity_replicas(c, target_rate), gpus_per_replica = replica_gpus(q);
  const ModelConfig& mc = *q.model;
  const int64_t seq = q.tokens, gen = q.gen, requests = c.requests;
  const double attainment = c.attainment_pct;
  std::ostringstream os;
  char buf[512];
  const std::string disagg =
      q.disagg.active() ? ", disaggregated: " + prefill_instances_text(q.disagg) : std::string();
  std::snprintf(buf, sizeof buf, "%s on %s, %lld-token prompts, %lld output tokens, %s, tp %lld%s%s, %s arrivals of %lld requests\n",
                mc.name.c_str(), q.gpu->name.c_str(), static_cast<long long>(seq), static_cast<long long>(gen),
                dtype_name(q.dtypes.gemm), static_cast<long long>(q.par.tp),
                q.par.moe_all_to_all ? ", DP attention, DeepEP" : q.par.dp_attention ? ", DP attention" : "",
                disagg.c_str(), q.limits.uniform_arrivals ? "uniform" : "Poisson", static_cast<long long>(requests));
  os << buf;
  if (q.limits.range_ratio > 0) {
    std::snprintf(buf, sizeof buf, "lengths: each request's drawn within %g %% of them (a lone request: as stated)\n",
                  100 * q.limits.range_ratio);
    os << buf;
  }
  std::string engine = q.limits.max_batched_tokens > 0
                           ? std::to_string(q.limits.max_batched_tokens) + " tokens a step"
                           : std::string("whole prompts a step");
  engine += ", at most " + (q.limits.max_seqs_auto ? std::string("the KV room's") : std::to_string(q.limits.max_seqs)) +
            " sequences at once, " + q.limits.schedule_name() + " steps";
  if (q.disagg.active())
    engine = std::string(q.disagg.prefill_instances > 1 ? "each prefill instance runs every arrived prompt sent to it"
                                                        : "the prefill instance runs every arrived prompt") +
             " a step; " + (q.disagg.decode_instances > 1 ? "each decode instance" : "the decode instance") +
             " decodes at most its KV room's sequences at once";
  os << "engine: " << engine << "\n";
  std::snprintf(buf, sizeof buf, "objective: %s for %g %% of the requests\n", q.limits.slo_text().c_str(), attainment);
  os << buf;
  std::snprintf(buf, sizeof buf, "a lone request: TTFT %.3f ms, TPOT %.3f ms%s\n", c.lone.ttft_ms, c.lone.tpot_ms,
                c.lone.memory.fits() ? "" : " (DOES NOT FIT)");
  os << buf;
  if (c.max_rate_rps <= 0) {
    os << "max_rate_rps        0  (no rate meets the objectives: a lone request or one at 0.001 a second misses them)\n";
  } else {
    if (c.unbounded)
      std::snprintf(buf, sizeof buf, "max_rate_rps  %10.3f  (every rate tried meets the objectives: all requests at once do)\n",
                    c.max_rate_rps);
    else
      std::snprintf(buf, sizeof buf, "max_rate_rps  %10.3f  (requests a second one replica serves within them; %.3f fails)\n",
                    c.max_rate_rps, c.failing_rate_rps);
    os << buf;
    const GenerateForecast& f = *c.at_max;
    std::snprintf(buf, sizeof buf,
                  "at that rate:  %.1f %% met, goodput %.3f requests/s, TTFT p50/p99 %.3f / %.3f ms, TPOT p50/p99 %.3f / %.3f "
                  "ms, %.1f tokens/s\n",
                  f.slo_attained_pct(), f.goodput_rps, f.ttft.p50_ms, f.ttft.p99_ms, f.tpot.p50_ms, f.tpot.p99_ms,
                  f.tokens_per_s);
    os << buf;
    if (f.disagg) {
      std::snprintf(buf, sizeof buf,
                    "balance:       %.3f prefill instances per decode instance keep both busy at that rate (%s here)\n",
                    f.disagg->prefill_per_decode, instance_ratio_text(f.disagg->layout).c_str());
      os << buf;
    }
  }
  if (const double per_m = capacity_usd_per_m_requests(c, gpus_per_replica, usd_per_gpu_hour); per_m > 0) {
    std::snprintf(buf, sizeof buf, "cost:         %.4f USD per million requests at that rate (%g USD per GPU-hour)\n", per_m,
                  usd_per_gpu_hour);
    os << buf;
  }
  if (target_rate > 0) {
    if (replicas > 0) {
      std::snprintf(buf, sizeof buf, "for %g requests/s: %lld replica%s of %lld GPU%s = %lld GPUs", target_rate,
                    static_cast<long long>(replicas), replicas > 1 ? "s" : "", static_cast<long long>(gpus_per_replica),
                    gpus_per_replica > 1 ? "s" : "", static_cast<long long>(replicas * gpus_per_replica));
      os << buf;
      if (usd_per_gpu_hour > 0) {
        std::snprintf(buf, sizeof buf, ", %.2f USD an hour", double(replicas * gpus_per_replica) * usd_per_gpu_hour);
        os << buf;
      }
      os << "\n";
    } else {
      os << "for " << target_rate << " requests/s: no number of replicas\n";
    }
  }
  std::snprintf(buf, sizeof buf, "(%d forecasts)\n", c.forecasts);
  os << buf;
  return os.str();
}

}  // namespace tilecast::predictor
