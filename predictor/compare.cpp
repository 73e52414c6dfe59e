#include "predictor/compare.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/csv.h"
#include "core/error.h"
#include "core/fs_util.h"
#include "core/memory_model.h"
#include "predictor/api.h"
#include "predictor/graph_predictor.h"

namespace tilecast::predictor {

namespace {

// One combination's row: forecast() (what `predict` runs) plus the identifying columns,
// tokens/s and the price. A combination that cannot run becomes a row saying why.
CompareRow forecast_one(const ForecastRequest& c, const KernelPredictor& kp, const Prices* prices) {
  CompareRow r;
  r.model = c.model->name;
  r.gpu = c.gpu->name;
  r.mode = c.mode;
  r.dtype = dtype_name(is_serving_mode(c.mode) ? c.dtypes.gemm : c.train_dtype);
  r.batch = c.batch, r.seq = c.tokens, r.gen = c.gen;
  r.dp = c.par.dp, r.tp = c.par.tp, r.pp = c.par.pp, r.microbatches = c.par.microbatches, r.ep = c.par.ep;
  r.cp = c.par.cp, r.vpp = c.par.vpp, r.dp_attention = c.par.dp_attention, r.moe_a2a = c.par.moe_all_to_all;
  r.zero = c.par.zero, r.recompute = c.recompute;
  r.hf_eager = c.hf_eager;
  r.routing_alpha = c.routing_alpha;
  r.limits = c.limits;
  r.cached_prefix = c.cached_prefix;
  r.disagg = c.disagg;
  if (c.spec) r.spec_draft = c.spec->draft->name, r.spec_tokens = c.spec->tokens, r.spec_accept = c.spec->accept;
  r.gpu_memory_gb = c.gpu->mem_gb();
  // The experts' format as requested, so that a row that cannot run names it too; a forecast
  // states the one it ran.
  if (is_serving_mode(c.mode) && c.model->num_experts > 0) r.expert_dtype = c.model->expert_dtype;
  try {
    const PredictResult f = forecast(c, kp);
    const ModelForecast& step = f.generate ? f.generate->prefill : f.forecast;
    r.expert_dtype = step.expert_dtype ? dtype_name(*step.expert_dtype) : "";
    r.microbatches = f.forecast.par.microbatches;  // serving: what the engine keeps in flight (from pp)
    if (f.generate) {
      r.step_ms = f.generate->e2e_ms, r.ttft_ms = f.generate->ttft_ms, r.tpot_ms = f.generate->tpot_ms;
      r.tokens_per_s = f.generate->tokens_per_s;
      r.limits = f.generate->limits;  // the cap --max-seqs auto chose
      r.goodput_rps = f.generate->goodput_rps;
      r.ttft_p99_ms = f.generate->ttft.p99_ms, r.tpot_p99_ms = f.generate->tpot.p99_ms;
      r.slo_attained_pct = f.generate->slo_attained_pct();
    } else if (f.forecast.mixed_training()) {  // the optimizer step is in it
      r.step_ms = f.forecast.total_ms + f.forecast.optimizer_ms;
      r.tokens_per_s = f.forecast.tokens_per_s;
      r.mfu_pct = f.forecast.mfu_pct;
      r.pipeline_bubble_ms = f.forecast.pipeline_bubble_ms;
      r.train_tokens = f.forecast.train_tokens;
      r.train_days = f.forecast.train_days();
    } else {
      r.step_ms = f.forecast.total_ms;
      if (c.mode == "prefill") r.ttft_ms = r.step_ms;
      if (c.mode == "decode") r.tpot_ms = r.step_ms;
      // training/inference: batch x seq per step; prefill: prompt tokens; decode: one per sequence.
      r.tokens_per_s = double(c.batch) * (c.mode == "decode" ? 1 : c.tokens) / (r.step_ms / 1e3);
    }
    r.basis = f.generate ? f.generate->basis() : f.forecast.basis;
    r.memory_gb = f.memory.total_gb();  // disaggregated: the decode instance's GPU
    r.fits = f.generate ? f.generate->fits() : f.memory.fits();
    r.max_sequences = f.memory.max_sequences;
    if (const double price = prices ? prices->of(c.gpu->name) : 0.0; price > 0 && r.tokens_per_s > 0) {
      r.usd_per_hour = price * double(r.gpus());
      r.usd_per_m_tokens = r.usd_per_hour / 3600.0 * 1e6 / r.tokens_per_s;
      r.train_usd = r.usd_per_hour * 24 * r.train_days;
    }
  } catch (const ConfigError& e) {
    r.error = e.what();
  }
  return r;
}

std::vector<const GpuSpec*> resolve_gpus(const std::vector<std::string>& names, const GpuRegistry& reg) {
  std::vector<const GpuSpec*> out;
  for (const auto& n : names) {
    if (n == "all") {
      for (const auto& s : reg.all())
        if (s.vendor != "cpu") out.push_back(&s);
    } else {
      out.push_back(&reg.resolve(n));
    }
  }
  if (out.empty()) throw ConfigError("--gpus: no GPU given");
  return out;
}

double price_value(const YAML::Node& n, const std::string& where) {
  double v = 0;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    throw ConfigError(where + ": expected a number (USD per GPU-hour)");
  }
  if (!(v > 0) || !std::isfinite(v) || v > 1e6) throw ConfigError(where + ": expected a price in (0, 1e6] USD per GPU-hour");
  return v;
}

// The `pre` column of compare, plan and capacity: P for one prefill instance of tp P, NxP for N
// of them, ":M" where M decode instances share them, "-" where the row is not disaggregated.
std::string pre_text(const Disaggregation& d) {
  if (!d.active()) return "-";
  return (d.prefill_instances > 1 ? std::to_string(d.prefill_instances) + "x" + std::to_string(d.prefill_tp)
                                  : std::to_string(d.prefill_tp)) +
         (d.decode_instances > 1 ? ":" + std::to_string(d.decode_instances) : "");
}
// The pre column's width: its longest entry, at least "pre". `disagg` gives a row's layout.
template <class Rows, class Disagg>
int pre_width(const Rows& rows, Disagg disagg) {
  int w = 3;
  for (const auto& r : rows) w = std::max(w, static_cast<int>(pre_text(disagg(r)).size()));
  return w;
}
}  // namespace

Prices load_prices(const std::string& path, const GpuRegistry& reg) {
  check_readable_file(path);
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ": malformed YAML: " + e.msg);
  }
  if (!root.IsMap()) throw ConfigError(path + ": expected a map with date, source and usd_per_gpu_hour");
  Prices p;
  for (const auto& kv : root) {
    const std::string k = kv.first.as<std::string>();
    if (k != "date" && k != "source" && k != "usd_per_gpu_hour") throw ConfigError(path + ": unknown field '" + k + "'");
  }
  if (!root["date"] || !root["source"])
    throw ConfigError(path + ": fields 'date' and 'source' are required (prices change: say when and where from)");
  p.date = root["date"].as<std::string>();
  p.source = root["source"].as<std::string>();
  const YAML::Node m = root["usd_per_gpu_hour"];
  if (!m || !m.IsMap() || m.size() == 0) throw ConfigError(path + ": field 'usd_per_gpu_hour': expected a map GPU: USD");
  for (const auto& kv : m) {
    const std::string g = kv.first.as<std::string>();
    const GpuSpec* s = reg.find(g);
    if (!s) throw ConfigError(path + ": field 'usd_per_gpu_hour': unknown GPU '" + g + "'");
    p.usd_per_gpu_hour[s->name] = price_value(kv.second, path + ": field 'usd_per_gpu_hour." + g + "'");
  }
  return p;
}

void add_price(Prices& p, const std::string& arg, const GpuRegistry& reg) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError("--price '" + arg + "': expected GPU=USD_PER_HOUR");
  const GpuSpec& s = reg.resolve(arg.substr(0, eq));
  p.usd_per_gpu_hour[s.name] = price_value(YAML::Load(arg.substr(eq + 1)), "--price '" + arg + "'");
  if (p.source.empty()) p.source = "--price";
}

std::vector<CompareRow> run_compare(const CompareRequest& req, const GpuRegistry& reg, const KernelPredictor& kp,
                                    const std::string& models_dir, const Prices* prices) {
  const std::string mode = canonical_mode(req.mode);
  const bool serving = is_serving_mode(mode);
  const DType train_dtype = serving ? DType::kFp32 : eager_dtype(mode, req.dtype);
  if (mode == "generate" && req.gen < 2) throw ConfigError("--mode generate needs --gen T (>= 2)");
  check_scheduler_options(mode, req.limits, req.cached_prefix);
  for (int64_t s : req.seqs)
    if (s < 1) throw ConfigError(std::string(mode == "decode" ? "--context" : "--seq") + " is required (>= 1)");
  if (req.models.empty()) throw ConfigError("--model: no model given");
  std::vector<ModelConfig> models;
  for (const auto& m : req.models) models.push_back(load_model_config(m, models_dir));
  // --expert-dtype sets the MoE models' experts; dense models beside them keep none.
  if (!req.expert_dtype.empty()) {
    bool any = false;
    for (auto& m : models)
      if (m.num_experts > 0) apply_expert_dtype(m, req.expert_dtype, mode), any = true;
    if (!any) apply_expert_dtype(models.front(), req.expert_dtype, mode);  // refuses, naming the model
  }
  // Speculative decoding: each model's draft (its MTP module, or the one draft model); a model
  // without an MTP module is refused in one line.
  req.spec.check(mode);
  check_dp_attention(req.dp_attention, mode, req.tps.empty() ? 0 : *std::max_element(req.tps.begin(), req.tps.end()),
                     "a --tp of");
  check_moe_a2a(req.moe_a2a, req.dp_attention, mode);
  if (req.disaggs.empty()) throw std::logic_error("run_compare: no disaggregation layout (aggregated is one)");
  for (const Disaggregation& d : req.disaggs) check_disaggregation_mode(d, mode);
  if (req.moe_a2a) {
    if (std::none_of(models.begin(), models.end(), [](const ModelConfig& m) { return m.num_experts > 0; }))
      throw ConfigError("--moe-a2a deepep: no model of the list has experts");
    if (std::none_of(req.tps.begin(), req.tps.end(), [&](int64_t tp) {
          return tp > 1 && std::find(req.eps.begin(), req.eps.end(), tp) != req.eps.end();
        }))
      throw ConfigError("--moe-a2a deepep needs an --ep equal to a --tp of 2 or more (DeepEP spreads the experts "
                        "over every rank)");
  }
  std::vector<ModelConfig> drafts;
  if (!req.spec.draft.empty())
    for (const auto& m : models) drafts.push_back(req.spec.draft_for(m, models_dir));
  const auto gpus = resolve_gpus(req.gpus, reg);
  // Every layout the lists cross, in the lists' order (dp slowest, vpp fastest).
  std::vector<Parallelism> layouts;
  for (int64_t dp : req.dps)
    for (int64_t tp : req.tps)
      for (int64_t pp : req.pps)
        for (int64_t mb : req.microbatches)
          for (int64_t ep : req.eps)
            for (int64_t cp : req.cps)
              for (int64_t vpp : req.vpps) {
                Parallelism par;
                par.dp = dp, par.tp = tp, par.pp = pp, par.microbatches = mb, par.ep = ep, par.cp = cp, par.vpp = vpp;
                par.dp_attention = req.dp_attention && tp > 1;  // a tp 1 row has no group to spread over
                layouts.push_back(par);
              }
  std::vector<CompareRow> rows;
  for (size_t mi = 0; mi < models.size(); ++mi)
    for (const GpuSpec* g : gpus)
      for (int64_t b : req.batches)
        for (int64_t s : req.seqs)
          for (const Parallelism& par : layouts)
            for (const Disaggregation& d : req.disaggs) {
              const ModelConfig& m = models[mi];
              ForecastRequest c;
              c.model = &m, c.gpu = g, c.mode = mode;
              c.batch = b, c.tokens = s, c.gen = req.gen, c.limits = req.limits, c.cached_prefix = req.cached_prefix;
              if (!drafts.empty()) c.spec = req.spec.with(drafts[mi]);
              c.par = par;
              // DeepEP's layout: DP attention with ep = tp, on a MoE model's rows.
              c.par.moe_all_to_all = req.moe_a2a && par.dp_attention && par.ep == par.tp && m.num_experts > 0;
              c.optimizer_state = req.optimizer_state;
              c.hf_eager = req.hf_eager;  // rows that cannot take it (tp > 1, decode) say why
              c.train_dtype = train_dtype;
              req.training.apply(c, true);
              c.routing_alpha = req.routing_alpha;  // rows that cannot take it say why
              c.disagg = d;                         // rows that cannot take it (pp > 1, ...) say why
              if (serving) c.dtypes = serving_dtypes(m, req.dtype, req.kv_dtype);
              rows.push_back(forecast_one(c, kp, prices));
            }
  return rows;
}

void rank_rows(std::vector<CompareRow>& rows, const std::string& key) {
  if (key != "time" && key != "throughput" && key != "cost" && key != "goodput")
    throw ConfigError("--sort: expected time, throughput, cost or goodput, got '" + key + "'");
  if (key == "goodput" &&
      std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.mode != "generate" || !r.limits.has_slo(); }))
    throw ConfigError("--sort goodput: needs --mode generate and an objective (--slo-ttft-ms, --slo-tpot-ms)");
  auto group = [](const CompareRow& r) { return !r.error.empty() ? 2 : (r.fits ? 0 : 1); };
  std::stable_sort(rows.begin(), rows.end(), [&](const CompareRow& a, const CompareRow& b) {
    if (group(a) != group(b)) return group(a) < group(b);
    if (key == "throughput") return a.tokens_per_s > b.tokens_per_s;
    if (key == "goodput" && a.goodput_rps != b.goodput_rps) return a.goodput_rps > b.goodput_rps;
    if (key == "cost") {
      const bool pa = a.usd_per_m_tokens > 0, pb = b.usd_per_m_tokens > 0;  // unpriced after priced
      if (pa != pb) return pa;
      if (pa) return a.usd_per_m_tokens < b.usd_per_m_tokens;
    }
    return a.step_ms < b.step_ms;
  });
}

std::string compare_row_json(const CompareRow& r) {
  nlohmann::json j = {{"model", r.model}, {"gpu", r.gpu}, {"mode", r.mode}, {"dtype", r.dtype},
                      {"batch", r.batch}, {"seq", r.seq}, {"dp", r.dp}, {"tp", r.tp}, {"pp", r.pp},
                      {"microbatches", r.microbatches}, {"ep", r.ep}, {"cp", r.cp}, {"vpp", r.vpp}, {"gpus", r.gpus()},
                      {"dp_attention", r.dp_attention}, {"moe_a2a", r.moe_a2a ? "deepep" : "none"},
                      {"gpu_memory_gb", r.gpu_memory_gb}};
  if (r.mode == "generate") {
    j["gen"] = r.gen;
    j["max_batched_tokens"] = r.limits.max_batched_tokens;
    j["max_seqs"] = r.limits.max_seqs;
    j["max_seqs_auto"] = r.limits.max_seqs_auto;
    j["schedule"] = r.limits.schedule_name();
    j["request_rate"] = r.limits.request_rate;
    j["arrivals"] = r.limits.arrivals_name();
    j["range_ratio"] = r.limits.range_ratio;
    j["prefill_tp"] = r.disagg.active() ? nlohmann::json(r.disagg.prefill_tp) : nlohmann::json(nullptr);
    j["prefill_ep"] = r.disagg.active() ? nlohmann::json(r.disagg.prefill_ep) : nlohmann::json(nullptr);
    j["prefill_instances"] = r.disagg.active() ? nlohmann::json(r.disagg.prefill_instances) : nlohmann::json(nullptr);
    j["decode_instances"] = r.disagg.active() ? nlohmann::json(r.disagg.decode_instances) : nlohmann::json(nullptr);
  }
  if (!r.error.empty()) {
    j["error"] = r.error;
    return j.dump();
  }
  j["step_ms"] = r.step_ms;
  if (is_serving_mode(r.mode)) {
    j["expert_dtype"] = r.expert_dtype.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.expert_dtype);
    j["routing"] = routing_name(r.routing_alpha);
    if (r.mode != "decode") j["cached_prefix"] = r.cached_prefix;
    if (!r.spec_draft.empty())
      j["speculative"] = {{"draft", r.spec_draft}, {"tokens", r.spec_tokens}, {"accept", r.spec_accept}};
    // A decode step has no first token, a prefill no output tokens after it: null.
    j["ttft_ms"] = r.has_ttft() ? nlohmann::json(r.ttft_ms) : nlohmann::json(nullptr);
    j["tpot_ms"] = r.has_tpot() ? nlohmann::json(r.tpot_ms) : nlohmann::json(nullptr);
    if (r.mode == "generate") {
      j["ttft_p99_ms"] = r.ttft_p99_ms;
      j["tpot_p99_ms"] = r.tpot_p99_ms;
    }
    if (r.mode == "generate" && r.limits.has_slo()) {
      j["slo_ttft_ms"] = positive_or_null(r.limits.slo_ttft_ms);
      j["slo_tpot_ms"] = positive_or_null(r.limits.slo_tpot_ms);
      j["slo_attained_pct"] = r.slo_attained_pct;
      j["goodput_rps"] = r.goodput_rps;
    }
  }
  j["tokens_per_s"] = r.tokens_per_s;
  j["hf_eager"] = r.hf_eager;
  if (r.mixed_training()) {
    j["mfu_pct"] = r.mfu_pct;
    if (r.pp > 1) j["pipeline_bubble_ms"] = r.pipeline_bubble_ms;
    j["zero"] = r.zero;
    j["recompute"] = r.recompute ? "full" : "none";
  }
  if (r.train_tokens > 0) {
    j["train_tokens"] = r.train_tokens;
    j["train_days"] = r.train_days;
    j["train_usd"] = positive_or_null(r.train_usd);
  }
  j["memory_gb"] = r.memory_gb;
  j["fits"] = r.fits;
  if (r.max_sequences >= 0) j["max_sequences"] = r.max_sequences;
  j["usd_per_hour"] = positive_or_null(r.usd_per_hour);
  j["usd_per_m_tokens"] = positive_or_null(r.usd_per_m_tokens);
  j["basis"] = basis_json(r.basis);
  return j.dump();
}

std::string compare_json(const std::vector<CompareRow>& rows, const Prices* prices) {
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) j["rows"].push_back(nlohmann::json::parse(compare_row_json(r)));
  if (prices && !prices->usd_per_gpu_hour.empty())
    j["prices"] = {{"date", prices->date}, {"source", prices->source}, {"usd_per_gpu_hour", prices->usd_per_gpu_hour}};
  return j.dump(2) + "\n";
}

std::string compare_csv(const std::vector<CompareRow>& rows) {
  std::ostringstream os;
  os.precision(10);
  os << "model,gpu,mode,dtype,batch,seq,gen,max_batched_tokens,max_seqs,schedule,dp,tp,pp,microbatches,gpus,ep,cp,vpp,routing,"
        "dp_attention,moe_a2a,prefill_tp,prefill_ep,prefill_instances,decode_instances,spec_draft,spec_tokens,spec_accept,step_ms,ttft_ms,"
        "tpot_ms,tokens_per_s,"
        "memory_gb,gpu_memory_gb,fits,max_sequences,usd_per_hour,usd_per_m_tokens,mfu_pct,zero,recompute,hf_eager,train_days,"
        "train_usd,error\n";
  for (const auto& r : rows) {
    // routing: serving rows only (an empty field for the eager modes, which have none).
    os << csv_escape(r.model) << ',' << csv_escape(r.gpu) << ',' << r.mode << ',' << r.dtype << ',' << r.batch << ','
       << r.seq << ',' << r.gen << ',' << r.limits.max_batched_tokens << ',' << r.limits.max_seqs << ','
       << (r.mode == "generate" ? r.limits.schedule_name() : "") << ',' << r.dp << ','
       << r.tp << ',' << r.pp << ',' << r.microbatches << ','
       << r.gpus() << ',' << r.ep << ',' << r.cp << ',' << r.vpp << ',' << (is_serving_mode(r.mode) ? routing_name(r.routing_alpha) : "") << ','
       << (is_serving_mode(r.mode) ? (r.dp_attention ? "true" : "false") : "") << ','
       << (is_serving_mode(r.mode) ? (r.moe_a2a ? "deepep" : "none") : "") << ',';
    // disaggregation: the prefill instances' tp, ep and number, the decode instances' number
    // (empty when aggregated)
    if (r.disagg.active())
      os << r.disagg.prefill_tp << ',' << r.disagg.prefill_ep << ',' << r.disagg.prefill_instances << ','
         << r.disagg.decode_instances << ',';
    else os << ",,,,";
    // speculative decoding: the draft, its tokens a round and acceptance (empty without one)
    if (!r.spec_draft.empty()) os << csv_escape(r.spec_draft) << ',' << r.spec_tokens << ',' << r.spec_accept << ',';
    else os << ",,,";
    if (r.error.empty()) {
      os << r.step_ms << ',';
      if (r.has_ttft()) os << r.ttft_ms;
      os << ',';
      if (r.has_tpot()) os << r.tpot_ms;
      os << ',' << r.tokens_per_s << ',' << r.memory_gb << ','
         << r.gpu_memory_gb << ',' << (r.fits ? "true" : "false") << ','
         << (r.max_sequences >= 0 ? std::to_string(r.max_sequences) : "") << ',';
      if (r.usd_per_hour > 0) os << r.usd_per_hour << ',' << r.usd_per_m_tokens;
      else os << ',';
      // Mixed-precision training's columns: empty for every other row.
      os << ',';
      if (r.mixed_training()) os << r.mfu_pct << ',' << r.zero << ',' << (r.recompute ? "full" : "none");
      else os << ",,";
      // Hugging Face's eager model: said for the modes that take --hf-eager, empty elsewhere.
      os << ',' << (r.hf_eager ? "true" : r.mode == "prefill" || r.mixed_training() ? "false" : "") << ',';
      if (r.train_days > 0) os << r.train_days;
      os << ',';
      if (r.train_usd > 0) os << r.train_usd;
      os << ",\n";
    } else {
      os << ",,,,," << r.gpu_memory_gb << ",,,,,,,,,,," << csv_escape(r.error) << '\n';
    }
  }
  return os.str();
}

std::string compare_table(const std::vector<CompareRow>& rows, const Prices* prices) {
  std::ostringstream os;
  char buf[512];
  const bool serving = !rows.empty() && is_serving_mode(rows.front().mode);
  const bool priced = prices && !prices->usd_per_gpu_hour.empty();
  // Tables of MoE layouts name each one's expert parallelism; the others have none.
  const bool show_ep = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.ep > 1; });
  // And context parallelism, where a row has it.
  const bool show_cp = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.cp > 1; });
  // And the interleaved pipeline's model chunks a rank.
  const bool show_vpp = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.vpp > 1; });
  // And DP attention (serving), where a row has it.
  const bool show_dpa = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.dp_attention; });
  // And the prefill instances, where rows differ in them (plan --disaggregate).
  const bool show_pre = std::any_of(rows.begin(), rows.end(), [&](const CompareRow& r) {
    return r.disagg.prefill_tp != rows.front().disagg.prefill_tp ||
           r.disagg.prefill_instances != rows.front().disagg.prefill_instances ||
           r.disagg.decode_instances != rows.front().disagg.decode_instances;
  });
  const int pw = pre_width(rows, [](const CompareRow& r) -> const Disaggregation& { return r.disagg; });
  // Generate rows under objectives: goodput (requests a second meeting them) and their share.
  const bool show_slo = serving && rows.front().mode == "generate" && rows.front().limits.has_slo();
  // Mixed-precision training: the model FLOPs utilisation beside the step.
  const bool show_mfu = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.mixed_training(); });
  // With the tokens of a whole run: its days (and, priced, its cost) after the memory.
  const bool show_run = std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.train_days > 0; });
  // The dtype column: the GEMMs' dtype, "/" the routed experts' where they differ (Kimi's
  // int4, gpt-oss's mxfp4), as wide as its longest entry and at least "dtype".
  auto shown_dtype = [](const CompareRow& r) {
    return r.expert_dtype.empty() || r.expert_dtype == r.dtype ? r.dtype : r.dtype + "/" + r.expert_dtype;
  };
  int dw = 5;
  bool expert_split = false;
  for (const auto& r : rows) {
    dw = std::max(dw, static_cast<int>(shown_dtype(r).size()));
    expert_split = expert_split || shown_dtype(r) != r.dtype;
  }
  std::snprintf(buf, sizeof buf, "%4s %-16s %-20s %-*s %6s %6s %3s %3s %3s%s %3s %12s %s%s%s%12s %14s  %s\n", "rank", "model",
                "gpu", dw, "dtype", "batch", serving && rows.front().mode == "decode" ? "ctx" : "seq", "dp", "tp", "pp",
                (std::string(show_ep ? "  ep" : "") + (show_cp ? "  cp" : "") + (show_vpp ? " vpp" : "") + (show_dpa ? " dpa" : "") +
                 (show_pre ? " " + std::string(static_cast<size_t>(pw - 3), ' ') + "pre" : "")).c_str(), "mb", "step_ms", serving ? "     ttft_ms      tpot_ms " : "",
                show_slo ? "goodput/s  met % " : "", show_mfu ? " zero  rc  MFU % " : "", "tokens/s", "memory GB",
                (std::string(priced ? "  $/1M tokens" : "") + (show_run ? "  run days" : "") +
                 (show_run && priced ? "       run $" : ""))
                    .c_str());
  os << buf;
  int rank = 0;
  for (const auto& r : rows) {
    char ep[32] = "";
    if (show_ep) std::snprintf(ep, sizeof ep, " %3lld", (long long)r.ep);
    if (show_cp) std::snprintf(ep + std::strlen(ep), sizeof ep - std::strlen(ep), " %3lld", (long long)r.cp);
    if (show_vpp) std::snprintf(ep + std::strlen(ep), sizeof ep - std::strlen(ep), " %3lld", (long long)r.vpp);
    if (show_dpa)
      std::snprintf(ep + std::strlen(ep), sizeof ep - std::strlen(ep), " %3s",
                    r.moe_a2a ? "a2a" : r.dp_attention ? "yes" : "no");
    if (show_pre)
      std::snprintf(ep + std::strlen(ep), sizeof ep - std::strlen(ep), " %*s", pw, pre_text(r.disagg).c_str());
    if (!r.error.empty()) {
      std::snprintf(buf, sizeof buf, "%4s %-16s %-20s %-*s %6lld %6lld %3lld %3lld %3lld%s %3lld  cannot run: %s\n", "-",
                    r.model.c_str(), r.gpu.c_str(), dw, shown_dtype(r).c_str(), (long long)r.batch, (long long)r.seq,
                    (long long)r.dp, (long long)r.tp, (long long)r.pp, ep, (long long)r.microbatches, r.error.c_str());
      os << buf;
      continue;
    }
    char serv[96] = "";
    if (serving) {
      auto cell = [](bool has, double ms) {
        char c[32];
        if (has) std::snprintf(c, sizeof c, " %12.3f", ms);
        else std::snprintf(c, sizeof c, " %12s", "-");
        return std::string(c);
      };
      std::snprintf(serv, sizeof serv, "%s%s", cell(r.has_ttft(), r.ttft_ms).c_str(), cell(r.has_tpot(), r.tpot_ms).c_str());
    }
    if (show_slo) {
      const size_t n = std::strlen(serv);
      std::snprintf(serv + n, sizeof serv - n, " %9.3f %6.1f", r.goodput_rps, r.slo_attained_pct);
    }
    if (show_mfu) std::snprintf(serv, sizeof serv, " %4d %3s %6.1f", r.zero, r.recompute ? "yes" : "no", r.mfu_pct);
    char mem[48];
    std::snprintf(mem, sizeof mem, "%6.1f/%-4.0f%s", r.memory_gb, r.gpu_memory_gb, r.fits ? "" : " NO");
    char cost[80] = "";
    if (priced) {
      if (r.usd_per_m_tokens > 0) std::snprintf(cost, sizeof cost, "  %12.4f", r.usd_per_m_tokens);
      else std::snprintf(cost, sizeof cost, "  %12s", "no price");
    }
    if (show_run) {
      const size_t n = std::strlen(cost);
      std::snprintf(cost + n, sizeof cost - n, "  %8.2f", r.train_days);
      if (priced) {
        const size_t n2 = std::strlen(cost);
        if (r.train_usd > 0) std::snprintf(cost + n2, sizeof cost - n2, "  %10.0f", r.train_usd);
        else std::snprintf(cost + n2, sizeof cost - n2, "  %10s", "no price");
      }
    }
    std::snprintf(buf, sizeof buf, "%4d %-16s %-20s %-*s %6lld %6lld %3lld %3lld %3lld%s %3lld %12.3f%s %12.0f %14s%s\n",
                  ++rank, r.model.c_str(), r.gpu.c_str(), dw, shown_dtype(r).c_str(), (long long)r.batch, (long long)r.seq,
                  (long long)r.dp, (long long)r.tp, (long long)r.pp, ep, (long long)r.microbatches, r.step_ms, serv,
                  r.tokens_per_s, mem, cost);
    os << buf;
  }
  os << "(memory GB (1e9 B): forecast per GPU / the GPU's, whose sheet states GiB; NO = above "
     << static_cast<int>(kUsableMemoryFraction * 100) << " % of it)\n";
  if (expert_split) os << "(dtype D/E: GEMMs and attention in D, the routed experts in E)\n";
  if (show_dpa)
    os << "(dpa: SGLang's DP attention, each tp rank attending and caching its own sequences"
       << (std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.moe_a2a; })
               ? "; a2a: with DeepEP's all-to-all MoE"
               : "")
       << ")\n";
  if (show_pre)
    os << "(pre: the prefill instances beside each replica's decode instance of tp (disaggregated): P one of tp P, "
          "NxP N of tp P, :M beside M decode instances of tp, - none; "
          "tokens/s are all replicas', GPUs and costs count every instance; memory GB is a decode instance's)\n";
  else if (const auto it = std::find_if(rows.begin(), rows.end(), [](const CompareRow& r) { return r.disagg.active(); });
      it != rows.end())
    os << "(disaggregated: each row's tp is " << (it->disagg.decode_instances > 1 ? "each decode instance's" : "the decode instance")
       << ", beside " << prefill_instances_text(it->disagg)
       << "; tokens/s are one replica's, its GPUs and costs count all; memory GB is a decode instance's)\n";
  std::set<std::string> drafts;
  for (const auto& r : rows)
    if (!r.spec_draft.empty() && r.error.empty()) drafts.insert(r.spec_draft);
  if (!drafts.empty()) {
    std::string names;
    for (const auto& d : drafts) names += (names.empty() ? "" : ", ") + d;
    const CompareRow& any = *std::find_if(rows.begin(), rows.end(), [](const CompareRow& r) { return !r.spec_draft.empty(); });
    char line[160];
    std::snprintf(line, sizeof line, "(speculative decoding: %lld draft tokens a round, each accepted with p %.2f; draft ",
                  static_cast<long long>(any.spec_tokens), any.spec_accept);
    os << line << names << ")\n";
  }
  if (std::any_of(rows.begin(), rows.end(), [](const CompareRow& r) { return r.hf_eager; }))
    os << "(Hugging Face eager: transformers' modules with SDPA, each kernel unfused, as predict --hf-eager)\n";
  if (priced) os << "prices: " << prices->source << (prices->date.empty() ? "" : ", " + prices->date) << "\n";
  return os.str();
}

std::vector<CapacityRow> run_capacity(const ForecastRequest& base, const std::vector<std::string>& gpus,
                                      const std::vector<int64_t>& tps, const std::vector<Disaggregation>& layouts,
                                      double attainment_pct, const GpuRegistry& reg, const KernelPredictor& kp,
                                      const Prices* prices) {
  if (tps.empty()) throw ConfigError("--tp: no size given");
  if (layouts.empty()) throw std::logic_error("run_capacity: no disaggregation layout (aggregated is one)");
  check_capacity_request(base, attainment_pct);  // the same for every row: one error, not one a row
  check_dp_attention(base.par.dp_attention, base.mode, *std::max_element(tps.begin(), tps.end()), "a --tp of");
  check_moe_a2a(base.par.moe_all_to_all, base.par.dp_attention, base.mode);
  if (base.par.moe_all_to_all) {
    if (base.model->num_experts == 0)
      throw ConfigError("--moe-a2a deepep: " + base.model->name +
                        " has no experts (DeepEP dispatches tokens to MoE experts)");
    if (base.par.ep < 2 || std::find(tps.begin(), tps.end(), base.par.ep) == tps.end())
      throw ConfigError("--moe-a2a deepep needs a --tp equal to --ep (" + std::to_string(base.par.ep) +
                        "), of 2 or more: DeepEP spreads the experts over every rank");
  }
  std::vector<CapacityRow> rows;
  for (const GpuSpec* gpu : resolve_gpus(gpus, reg)) {
    for (int64_t tp : tps) {
      for (const Disaggregation& d : layouts) {
        CapacityRow r;
        r.request = base;
        r.request.disagg = d;
        r.request.gpu = gpu;
        r.request.par.tp = tp;
        r.request.par.dp_attention = base.par.dp_attention && tp > 1;  // a tp 1 row has no group to spread over
        r.request.par.moe_all_to_all = base.par.moe_all_to_all && tp == base.par.ep;  // DeepEP's layout
        r.usd_per_gpu_hour = prices ? prices->of(gpu->name) : 0.0;
        r.result.attainment_pct = attainment_pct;
        r.result.requests = base.batch;
        try {
          r.result = find_capacity(r.request, attainment_pct, kp);
        } catch (const ConfigError& e) {
          r.error = e.what();
        }
        rows.push_back(std::move(r));
      }
    }
  }
  return rows;
}

void rank_capacity(std::vector<CapacityRow>& rows) {
  auto group = [](const CapacityRow& r) { return !r.error.empty() ? 2 : (r.result.max_rate_rps > 0 ? 0 : 1); };
  const bool by_cost = std::all_of(rows.begin(), rows.end(), [&](const CapacityRow& r) {
    return group(r) != 0 || r.usd_per_gpu_hour > 0;
  });
  std::stable_sort(rows.begin(), rows.end(), [&](const CapacityRow& a, const CapacityRow& b) {
    if (group(a) != group(b)) return group(a) < group(b);
    if (group(a) != 0) return false;
    if (by_cost)
      return capacity_usd_per_m_requests(a.result, replica_gpus(a.request), a.usd_per_gpu_hour) <
             capacity_usd_per_m_requests(b.result, replica_gpus(b.request), b.usd_per_gpu_hour);
    return a.per_gpu_rps() > b.per_gpu_rps();
  });
}

std::string capacity_rows_json(const std::vector<CapacityRow>& rows, double target_rate, const Prices* prices) {
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : rows) {
    if (!r.error.empty()) {
      j["rows"].push_back({{"gpu", r.request.gpu->name}, {"tp", r.request.par.tp}, {"error", r.error}});
      continue;
    }
    nlohmann::json row = nlohmann::json::parse(capacity_json(r.request, r.result, target_rate, r.usd_per_gpu_hour));
    row["per_gpu_rps"] = r.per_gpu_rps();
    j["rows"].push_back(std::move(row));
  }
  if (prices && !prices->usd_per_gpu_hour.empty())
    j["prices"] = {{"date", prices->date}, {"source", prices->source}, {"usd_per_gpu_hour", prices->usd_per_gpu_hour}};
  return j.dump(2) + "\n";
}

std::string capacity_rows_table(const std::vector<CapacityRow>& rows, double target_rate, const Prices* prices) {
  if (rows.size() == 1 && rows.front().error.empty())
    return capacity_table(rows.front().request, rows.front().result, target_rate, rows.front().usd_per_gpu_hour);
  std::ostringstream os;
  char buf[512];
  const ForecastRequest& q = rows.front().request;
  const bool dpa = std::any_of(rows.begin(), rows.end(), [](const CapacityRow& r) { return r.request.par.dp_attention; });
  const bool a2a = std::any_of(rows.begin(), rows.end(), [](const CapacityRow& r) { return r.request.par.moe_all_to_all; });
  // Rows of several disaggregated layouts (capacity's lists) show each one's in a column.
  const bool show_pre = std::any_of(rows.begin(), rows.end(), [&](const CapacityRow& r) {
    return r.request.disagg.prefill_instances != q.disagg.prefill_instances ||
           r.request.disagg.decode_instances != q.disagg.decode_instances;
  });
  const std::string disagg =
      !q.disagg.active() ? std::string()
      : show_pre         ? ", each tp a decode instance's, beside prefill instances of tp " + std::to_string(q.disagg.prefill_tp) +
                       " (pre: NxP N prefill instances of tp P, P one, :M beside M decode instances, as compare's)"
                         : ", each tp the decode instance beside " + prefill_instances_text(q.disagg);
  std::snprintf(buf, sizeof buf, "%s, %lld-token prompts, %lld output tokens, %s for %g %% of %lld requests%s%s%s\n",
                q.model->name.c_str(), static_cast<long long>(q.tokens), static_cast<long long>(q.gen),
                q.limits.slo_text().c_str(), rows.front().result.attainment_pct, static_cast<long long>(q.batch),
                dpa ? ", DP attention where tp > 1" : "", a2a ? ", DeepEP where tp = ep" : "", disagg.c_str());
  os << buf;
  const bool priced = prices && !prices->usd_per_gpu_hour.empty();
  const int pw = pre_width(rows, [](const CapacityRow& r) -> const Disaggregation& { return r.request.disagg; });
  std::snprintf(buf, sizeof buf, "%4s %-20s %3s%s%*s %12s %12s %12s %12s %s%s\n", "rank", "gpu", "tp", show_pre ? " " : "",
                show_pre ? pw : 0, show_pre ? "pre" : "",
                "max_rate/s", "per_gpu/s", "ttft_p99_ms", "tpot_p99_ms", target_rate > 0 ? "    GPUs" : "",
                priced ? "   $/1M requests" : "");
  os << buf;
  int rank = 0;
  for (const auto& r : rows) {
    const CapacityResult& c = r.result;
    char pre[40] = "";
    if (show_pre) std::snprintf(pre, sizeof pre, " %*s", pw, pre_text(r.request.disagg).c_str());
    if (!r.error.empty() || c.max_rate_rps <= 0) {
      std::snprintf(buf, sizeof buf, "%4s %-20s %3lld%s  %s\n", "-", r.request.gpu->name.c_str(),
                    static_cast<long long>(r.request.par.tp), pre,
                    !r.error.empty() ? ("cannot run: " + r.error).c_str() : "no rate meets the objectives");
      os << buf;
      continue;
    }
    char fleet[32] = "", cost[32] = "";
    if (target_rate > 0)
      std::snprintf(fleet, sizeof fleet, " %7lld",
                    static_cast<long long>(capacity_replicas(c, target_rate) * replica_gpus(r.request)));
    if (priced) {
      const double per_m = capacity_usd_per_m_requests(c, replica_gpus(r.request), r.usd_per_gpu_hour);
      if (per_m > 0) std::snprintf(cost, sizeof cost, " %16.4f", per_m);
      else std::snprintf(cost, sizeof cost, " %16s", "no price");
    }
    std::snprintf(buf, sizeof buf, "%4d %-20s %3lld%s %12.3f%s %12.3f %12.3f %12.3f%s%s\n", ++rank,
                  r.request.gpu->name.c_str(), static_cast<long long>(r.request.par.tp), pre, c.max_rate_rps,
                  c.unbounded ? "+" : " ", r.per_gpu_rps(), c.at_max->ttft.p99_ms, c.at_max->tpot.p99_ms, fleet, cost);
    os << buf;
  }
  if (target_rate > 0) {
    std::snprintf(buf, sizeof buf, "(GPUs: for %g requests/s at each row's capacity; + : every rate tried met them)\n", target_rate);
    os << buf;
  }
  if (priced) os << "prices: " << prices->source << (prices->date.empty() ? "" : ", " + prices->date) << "\n";
  return os.str();
}

std::vector<CompareRow> run_plan(const PlanRequest& req, const GpuRegistry& reg, const KernelPredictor& kp,
                                 const std::string& models_dir, const Prices* prices, std::vector<CompareRow>* skipped) {
  const std::string mode = canonical_mode(req.mode);
  const bool serving = is_serving_mode(mode);
  const int64_t gpus = req.gpus, global_batch = req.global_batch;
  if (gpus < 1 || gpus > 4096) throw ConfigError("--gpus: expected 1..4096, got " + std::to_string(gpus));
  if (global_batch < 1) throw ConfigError("--global-batch: expected >= 1");
  if (req.seq < 1) throw ConfigError(std::string(mode == "decode" ? "--context" : "--seq") + ": expected >= 1");
  if (mode == "generate" && req.gen < 2) throw ConfigError("--mode generate needs --gen T (>= 2)");
  check_scheduler_options(mode, req.limits, req.cached_prefix);
  const DType train_dtype = serving ? DType::kFp32 : eager_dtype(mode, req.dtype);
  ModelConfig m = load_model_config(req.model, models_dir);
  apply_expert_dtype(m, req.expert_dtype, mode);
  req.spec.check(mode);
  check_dp_attention(req.dp_attention, mode, gpus, "--gpus");
  check_moe_a2a(req.moe_a2a, req.dp_attention, mode);
  if (req.moe_a2a && m.num_experts == 0)
    throw ConfigError("--moe-a2a deepep: " + m.name + " has no experts (DeepEP dispatches tokens to MoE experts)");
  if (req.moe_a2a && !req.spec.draft.empty())
    throw ConfigError("--moe-a2a deepep with --spec-draft: speculative decoding is modelled with the gathered MoE only");
  if (req.disaggregate) {
    if (mode != "generate") throw ConfigError("--disaggregate applies to --mode generate (a prefill and a decode instance)");
    if (gpus < 2) throw ConfigError("--disaggregate needs --gpus 2 or more (a prefill and a decode instance)");
    check_disaggregation_options("--disaggregate", req.limits, req.cached_prefix, !req.spec.draft.empty());
  }
  std::optional<ModelConfig> draft;
  if (!req.spec.draft.empty()) draft = req.spec.draft_for(m, models_dir);
  const GpuSpec& g = reg.resolve(req.gpu);
  auto divisors = [](int64_t n) {
    std::vector<int64_t> d;
    for (int64_t i = 1; i <= n; ++i)
      if (n % i == 0) d.push_back(i);
    return d;
  };
  const bool search_zero = req.training.zero == TrainingArgs::kZeroAuto, search_recompute = req.training.recompute == "auto";
  if ((search_zero || search_recompute) && train_dtype == DType::kFp32)
    throw ConfigError(std::string(search_zero ? "--zero" : "--recompute") +
                      " auto applies to mixed-precision training (--mode training --dtype bf16|fp16|fp8)");
  std::vector<CompareRow> rows;
  std::string first_error;
  // One layout's row: forecast, then kept, or set aside with its reason.
  auto add = [&](const Parallelism& par, const TrainingArgs& training, const Disaggregation& disagg) {
    const int64_t dp = par.dp;
    ForecastRequest c;
    c.model = &m, c.gpu = &g, c.mode = mode;
    c.disagg = disagg;
    c.batch = global_batch, c.tokens = req.seq, c.gen = req.gen, c.limits = req.limits;
    c.cached_prefix = req.cached_prefix;
    if (draft) c.spec = req.spec.with(*draft);
    c.par = par;
    c.optimizer_state = req.optimizer_state;
    c.train_dtype = train_dtype;
    c.hf_eager = req.hf_eager;
    training.apply(c, true);
    c.routing_alpha = req.routing_alpha;
    if (serving) {
      c.batch = global_batch / dp;  // one replica's sequences
      c.par.dp = 1;
      c.dtypes = serving_dtypes(m, req.dtype, "");
      // The requests arrive at the request's rate over all replicas, spread evenly.
      c.limits.request_rate = req.limits.request_rate / double(dp);
    }
    CompareRow r = forecast_one(c, kp, prices);
    if (!r.error.empty()) {
      if (first_error.empty()) first_error = r.error;
      if (skipped) {
        r.dp = dp;
        skipped->push_back(r);
      }
      return;
    }
    if (serving) {  // all replicas together
      r.dp = dp;
      r.batch = global_batch;
      r.limits.request_rate = req.limits.request_rate;
      r.goodput_rps *= double(dp);
      r.tokens_per_s *= double(dp);
      r.max_sequences *= dp;
      r.usd_per_hour *= double(dp);  // usd_per_m_tokens is unchanged: dp x the price for dp x the tokens
    }
    rows.push_back(r);
  };
  const bool mixed_training = !serving && train_dtype != DType::kFp32;
  // A layout's variants, one row each: an MoE model's expert-parallel sizes (of the tp group when
  // serving, of the dp x cp ranks as training allows them), the interleaved schedules `vpps`,
  // serving's DP attention (tp > 1, one stage) and, with req.moe_a2a, DeepEP where ep = tp; and
  // each training choice.
  auto add_variants = [&](Parallelism layout, const std::vector<int64_t>& vpps,
                          const std::vector<TrainingArgs>& trainings, const Disaggregation& disagg) {
    std::vector<int64_t> eps{1};
    if (m.num_experts > 0 && (serving || mixed_training))
      for (int64_t ep : divisors(serving ? layout.tp : layout.dp * layout.cp)) {
        layout.ep = ep;
        if (ep > 1 && (serving ? m.num_experts % ep == 0 : training_expert_parallel_error(m, layout).empty()))
          eps.push_back(ep);
      }
    std::vector<bool> dpas{false};
    if (serving && req.dp_attention && layout.tp > 1 && layout.pp == 1) dpas.push_back(true);  // one stage only
    for (int64_t ep : eps)
      for (int64_t vpp : vpps)
        for (bool dpa : dpas) {
          layout.ep = ep, layout.vpp = vpp, layout.dp_attention = dpa;
          layout.moe_all_to_all = false;
          for (const TrainingArgs& t : trainings) add(layout, t, disagg);
          if (req.moe_a2a && dpa && ep == layout.tp) {
            layout.moe_all_to_all = true;
            for (const TrainingArgs& t : trainings) add(layout, t, disagg);
          }
        }
  };
  if (!mixed_training && std::any_of(req.vpps.begin(), req.vpps.end(), [](int64_t v) { return v != 1; }))
    throw ConfigError("--vpp applies to mixed-precision training (--mode training --dtype bf16|fp16|fp8)");
  for (int64_t dp : divisors(gpus)) {
    if (global_batch % dp) continue;
    // Mixed-precision training: each context-parallel size the model and sequence allow.
    std::vector<int64_t> cps{1};
    if (mixed_training)
      for (int64_t cp : divisors(gpus / dp)) {
        Parallelism layout;
        layout.cp = cp;
        if (cp > 1 && training_context_parallel_error(m, req.seq, layout).empty()) cps.push_back(cp);
      }
    for (int64_t cp : cps) {
      // Mixed-precision training with --zero auto / --recompute auto: each ZeRO stage (beyond 0
      // where there are data- or context-parallel peers) and each choice.
      std::vector<TrainingArgs> trainings;
      for (int zero : search_zero ? (dp * cp > 1 ? std::vector<int>{0, 1, 2, 3} : std::vector<int>{0})
                                  : std::vector<int>{req.training.zero})
        for (const char* recompute : search_recompute ? std::vector<const char*>{"none", "full"}
                                                      : std::vector<const char*>{req.training.recompute.c_str()}) {
          TrainingArgs t = req.training;
          t.zero = zero, t.recompute = recompute;
          trainings.push_back(t);
        }
      for (int64_t tp : divisors(gpus / dp / cp)) {
        const int64_t pp = gpus / dp / cp / tp;
        // Serving layouts: replicas of tp x pp groups (the engines choose the microbatches).
        // Eager inference and training: the microbatches a replica's batch splits into: a
        // pipeline's, or in training on one stage gradient accumulation, tried only until a
        // count fits (it trades time for activation memory, so more than that is not a layout
        // anyone would pick).
        std::vector<int64_t> mbs{1};
        if (!serving && (pp > 1 || mode == "training")) {
          mbs.clear();
          for (int64_t mb : divisors(global_batch / dp))
            if (mb <= 64) mbs.push_back(mb);
        }
        Parallelism layout;
        layout.dp = dp, layout.tp = tp, layout.pp = pp, layout.cp = cp;
        const auto first_row = static_cast<std::ptrdiff_t>(rows.size());  // this layout's rows start here
        for (int64_t mb : mbs) {
          if (pp == 1 && mb > 1 &&
              std::any_of(rows.begin() + first_row, rows.end(), [](const CompareRow& r) { return r.fits; }))
            break;
          layout.microbatches = mb;
          // The interleaved schedules the request lists, where Megatron-LM allows them.
          std::vector<int64_t> vpps{1};
          if (mixed_training && pp > 1)
            for (int64_t v : req.vpps) {
              layout.vpp = v;
              if (v > 1 && virtual_pipeline_error(m, layout).empty()) vpps.push_back(v);
            }
          add_variants(layout, vpps, trainings, Disaggregation{});
        }
      }
    }
  }
  // Disaggregated layouts: dp replicas of R GPUs, each N prefill instances of tp P beside M
  // decode instances of tp (R - N x P) / M (one stage each, the decode instances' variants as
  // above; the prefill instances' experts split over their tp).
  if (req.disaggregate)
    for (int64_t dp : divisors(gpus)) {
      const int64_t r = gpus / dp;
      if (global_batch % dp || r < 2) continue;
      for (int64_t p = 1; p < r; ++p)
        for (int64_t n = 1; n * p < r; ++n)
          for (int64_t decoders : divisors(r - n * p)) {
            Parallelism layout;
            layout.dp = dp, layout.tp = (r - n * p) / decoders;
            add_variants(layout, {1}, {req.training}, Disaggregation{p, 1, n, decoders});
          }
    }
  if (rows.empty())
    throw ConfigError("plan: no layout of " + std::to_string(gpus) + " GPUs runs the model with the global batch " +
                      std::to_string(global_batch) +
                      (first_error.empty() ? std::string(" (none divides them)") : "; the first: " + first_error));
  rank_rows(rows, mode == "generate" && req.limits.has_slo() ? "goodput"
                  : serving && mode != "prefill"              ? "throughput"
                                                              : "time");
  return rows;
}

std::string skipped_layouts_text(const std::vector<CompareRow>& skipped) {
  std::vector<std::pair<std::string, std::vector<std::string>>> reasons;  // in first-seen order
  for (const auto& r : skipped) {
    std::string layout = "dp " + std::to_string(r.dp) + " x tp " + std::to_string(r.tp) + " x pp " + std::to_string(r.pp);
    if (r.cp > 1) layout += " (cp " + std::to_string(r.cp) + ")";
    if (r.vpp > 1) layout += " (vpp " + std::to_string(r.vpp) + ")";
    if (r.ep > 1) layout += " (ep " + std::to_string(r.ep) + ")";
    if (r.dp_attention) layout += r.moe_a2a ? " (DP attention, DeepEP)" : " (DP attention)";
    if (r.microbatches > 1) layout += " (" + std::to_string(r.microbatches) + " microbatches)";
    if (r.zero > 0) layout += " (zero " + std::to_string(r.zero) + ")";
    if (r.recompute) layout += " (recompute)";
    if (r.disagg.active()) layout += " (beside " + prefill_instances_text(r.disagg) + ")";
    auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& p) { return p.first == r.error; });
    if (it == reasons.end()) reasons.push_back({r.error, {layout}});
    else it->second.push_back(layout);
  }
  std::string out;
  for (const auto& [error, layouts] : reasons) {
    std::string list;
    for (size_t i = 0; i < layouts.size() && i < 3; ++i) list += (i ? ", " : "") + layouts[i];
    if (layouts.size() > 3) list += " and " + std::to_string(layouts.size() - 3) + " more";
    out += "  " + list + ": " + error + "\n";
  }
  return out;
}

}  // namespace tilecast::predictor
