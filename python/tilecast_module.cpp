// `import tilecast`: the forecasting engine as a Python module (pybind11, no LibTorch).
// Every function returns what the matching CLI command prints with --format json, parsed by
// Python's json module, so a notebook and a shell script see the same numbers and keys.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/gpu_spec.h"
#include "predictor/api.h"
#include "predictor/compare.h"
#include "predictor/kernel_predictor.h"
#include "trainer/weights_manifest.h"

namespace py = pybind11;
using namespace tilecast;

namespace {

// Loaded once per weights folder / GPU folder: repeated calls in a notebook pay nothing.
struct Engine {
  GpuRegistry reg;
  predictor::KernelPredictor kp;
  std::string models_dir;
  Engine(const std::string& weights, const std::string& gpu_dir)
      : reg(gpu_dir.empty() ? trainer::config_dir() + "/gpus" : gpu_dir),
        kp(trainer::weights_dir(weights)),
        models_dir(trainer::config_dir() + "/models") {}
};

Engine& engine(const std::string& weights, const std::string& gpu_dir) {
  static std::mutex mu;
  static std::map<std::pair<std::string, std::string>, std::unique_ptr<Engine>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& e = cache[{weights, gpu_dir}];
  if (!e) e = std::make_unique<Engine>(weights, gpu_dir);
  return *e;
}

py::object json_to_py(const std::string& s) { return py::module_::import("json").attr("loads")(s); }

// A list argument: a Python list/tuple, or a comma-separated string ("H100,A100").
std::vector<std::string> names(const py::object& o, const char* arg) {
  if (py::isinstance<py::str>(o)) return predictor::split_list(arg, o.cast<std::string>());
  std::vector<std::string> out;
  for (const auto& x : o) out.push_back(py::str(x).cast<std::string>());
  if (out.empty()) throw ConfigError(std::string(arg) + ": empty list");
  return out;
}

std::vector<int64_t> ints(const py::object& o, const char* arg) {
  if (py::isinstance<py::int_>(o)) return {o.cast<int64_t>()};
  std::vector<int64_t> out;
  for (const auto& x : o) {
    if (!py::isinstance<py::int_>(x)) throw ConfigError(std::string(arg) + ": expected whole numbers");
    out.push_back(x.cast<int64_t>());
  }
  if (out.empty()) throw ConfigError(std::string(arg) + ": empty list");
  return out;
}

// prefill_instances / decode_instances of compare and capacity: None, an int or a list (every
// combination a row), as their --prefill-instances / --decode-instances.
std::vector<int64_t> instance_counts(const py::object& o, const char* arg) {
  return o.is_none() ? std::vector<int64_t>{} : ints(o, arg);
}

std::string shape_string(const py::object& o) {
  if (py::isinstance<py::str>(o)) return o.cast<std::string>();
  std::string s;
  for (const auto& x : o) s += (s.empty() ? "" : ",") + std::to_string(x.cast<int64_t>());
  return s;
}

// max_seqs: None, a count or "auto" -> the CLI's spelling (None: no cap).
std::optional<std::string> max_seqs_text(const py::object& max_seqs) {
  if (max_seqs.is_none()) return std::nullopt;
  if (py::isinstance<py::str>(max_seqs)) return max_seqs.cast<std::string>();
  return std::to_string(max_seqs.cast<int64_t>());
}

// The scheduler's keyword arguments (None: not given; max_seqs a count or "auto"), checked as
// the CLI checks its flags, errors naming the keyword.
predictor::SchedulerArgs scheduler_args(std::optional<int64_t> max_batched_tokens, const py::object& max_seqs,
                                        std::optional<std::string> schedule, std::optional<double> request_rate,
                                        std::optional<std::string> arrivals, std::optional<double> slo_ttft_ms,
                                        std::optional<double> slo_tpot_ms, std::optional<double> range_ratio) {
  predictor::SchedulerArgs s;
  s.max_batched_tokens = max_batched_tokens, s.max_seqs = max_seqs_text(max_seqs), s.schedule = std::move(schedule);
  s.request_rate = request_rate, s.arrivals = std::move(arrivals);
  s.slo_ttft_ms = slo_ttft_ms, s.slo_tpot_ms = slo_tpot_ms;
  s.range_ratio = range_ratio;
  return s;
}

// zero=: a ZeRO stage 0-3, or "auto" (plan), as --zero reads them.
int zero_keyword(const py::object& zero) {
  if (py::isinstance<py::str>(zero)) return predictor::zero_flag(zero.cast<std::string>());
  return predictor::zero_flag(std::to_string(zero.cast<int64_t>()));
}

// The mixed-precision training keywords (zero=, sequence_parallel=, recompute=, train_tokens=).
predictor::TrainingArgs training_args(const py::object& zero, bool sequence_parallel, const std::string& recompute,
                                      double train_tokens) {
  return {zero_keyword(zero), sequence_parallel, recompute, train_tokens};
}

py::object predict(const std::string& model, const std::string& gpu, int64_t batch, std::optional<int64_t> seq,
                   const std::string& mode, std::optional<int64_t> context, std::optional<int64_t> gen,
                   const std::string& dtype, const std::string& kv_dtype, int64_t dp, int64_t tp, int64_t pp,
                   int64_t microbatches, bool fusion, const std::string& optimizer, double host_gap_us,
                   const std::string& weights, const std::string& gpu_dir, int64_t ep, const std::string& routing,
                   std::optional<int64_t> max_batched_tokens, const py::object& max_seqs,
                   std::optional<int64_t> cached_prefix, std::optional<std::string> schedule,
                   const std::string& spec_draft, std::optional<int64_t> spec_tokens,
                   std::optional<double> spec_accept, std::optional<double> request_rate,
                   std::optional<std::string> arrivals, std::optional<double> slo_ttft_ms,
                   std::optional<double> slo_tpot_ms, const py::object& zero, const std::string& recompute,
                   bool sequence_parallel, double train_tokens, int64_t cp, int64_t vpp,
                   const std::string& expert_dtype, bool dp_attention, const std::string& moe_a2a,
                   std::optional<int64_t> prefill_tp, std::optional<int64_t> prefill_ep,
                   std::optional<int64_t> prefill_instances,
                   std::optional<int64_t> decode_instances, std::optional<double> range_ratio, bool hf_eager) {
  Engine& e = engine(weights, gpu_dir);
  predictor::PredictArgs a;
  a.hf_eager = hf_eager;
  a.disagg = predictor::disaggregation_flags(prefill_tp, prefill_ep, prefill_instances, decode_instances);
  a.expert_dtype = expert_dtype;
  a.training = training_args(zero, sequence_parallel, recompute, train_tokens);
  a.cached_prefix = cached_prefix;
  a.sched = scheduler_args(max_batched_tokens, max_seqs, schedule, request_rate, arrivals, slo_ttft_ms, slo_tpot_ms,
                           range_ratio);
  a.spec = predictor::SpecRequest::from_flags(spec_draft, spec_tokens, spec_accept);
  a.par.ep = ep, a.routing = routing;
  a.host_gap_us = host_gap_us;
  a.model = model, a.gpu = gpu, a.batch = batch, a.seq = seq, a.mode = mode, a.context = context, a.gen = gen;
  a.dtype = dtype, a.kv_dtype = kv_dtype, a.fusion = fusion, a.optimizer = optimizer;
  a.par.dp = dp, a.par.tp = tp, a.par.pp = pp, a.par.microbatches = microbatches, a.par.cp = cp;
  a.par.vpp = vpp;
  a.par.dp_attention = dp_attention;
  a.par.moe_all_to_all = predictor::parse_moe_a2a(moe_a2a);
  std::string out;
  {
    py::gil_scoped_release nogil;
    out = predictor::predict_result_json(predictor::run_predict(a, e.reg, e.kp, e.models_dir));
  }
  return json_to_py(out);
}

py::object predict_kernel(const std::string& op, const py::object& shape, const std::string& gpu,
                          const std::string& dtype, const std::string& kv_dtype, int64_t window, int64_t moe_tp,
                          int64_t moe_ep, const std::string& routing, const std::string& weights,
                          const std::string& gpu_dir, int64_t prefix, int64_t weight_group, bool sustained) {
  Engine& e = engine(weights, gpu_dir);
  predictor::KernelArgs a;
  a.op = op, a.shape = shape_string(shape), a.dtype = dtype, a.kv_dtype = kv_dtype, a.window = window;
  a.moe_tp = moe_tp, a.moe_ep = moe_ep, a.routing = routing, a.prefix = prefix, a.weight_group = weight_group;
  a.sustained = sustained;
  const KernelQuery q = predictor::build_kernel_query(a);
  const GpuSpec& spec = e.reg.resolve(gpu);
  const auto r = e.kp.predict(q, spec);
  return json_to_py(predictor::kernel_forecast_json(q, r, spec, e.kp).dump());
}

py::object compare(const py::object& model, const py::object& gpus, const std::string& mode, const py::object& batch,
                   const py::object& seq, const py::object& context, std::optional<int64_t> gen,
                   const std::string& dtype, const std::string& kv_dtype, const py::object& dp, const py::object& tp,
                   const py::object& pp, const py::object& microbatches, const py::object& ep,
                   const std::string& routing, const std::string& optimizer,
                   const std::map<std::string, double>& prices, const std::string& sort, const std::string& weights,
                   const std::string& gpu_dir, std::optional<int64_t> max_batched_tokens,
                   const py::object& max_seqs, int64_t cached_prefix, std::optional<std::string> schedule,
                   std::optional<double> request_rate, std::optional<std::string> arrivals,
                   std::optional<double> slo_ttft_ms, std::optional<double> slo_tpot_ms, const py::object& zero,
                   const std::string& recompute, bool sequence_parallel, double train_tokens, const py::object& cp,
                   const py::object& vpp, const std::string& expert_dtype, const std::string& spec_draft,
                   std::optional<int64_t> spec_tokens, std::optional<double> spec_accept, bool dp_attention,
                   const std::string& moe_a2a, std::optional<int64_t> prefill_tp, std::optional<int64_t> prefill_ep,
                   const py::object& prefill_instances, const py::object& decode_instances,
                   std::optional<double> range_ratio, bool hf_eager) {
  Engine& e = engine(weights, gpu_dir);
  predictor::CompareRequest req;
  req.hf_eager = hf_eager;
  req.dp_attention = dp_attention;
  req.moe_a2a = predictor::parse_moe_a2a(moe_a2a);
  req.disaggs = predictor::disaggregation_layouts(prefill_tp, prefill_ep, instance_counts(prefill_instances, "prefill_instances"),
                                                  instance_counts(decode_instances, "decode_instances"));
  req.spec = predictor::SpecRequest::from_flags(spec_draft, spec_tokens, spec_accept);
  req.training = training_args(zero, sequence_parallel, recompute, train_tokens);
  req.models = names(model, "model");
  req.gpus = names(gpus, "gpus");
  req.mode = predictor::canonical_mode(mode);
  req.dtype = dtype, req.kv_dtype = kv_dtype, req.expert_dtype = expert_dtype;
  req.batches = ints(batch, "batch");
  if (req.mode == "decode") {
    if (context.is_none()) throw ConfigError("mode decode needs context");
    req.seqs = ints(context, "context");
  } else {
    if (seq.is_none()) throw ConfigError("mode " + req.mode + " needs seq");
    req.seqs = ints(seq, "seq");
  }
  req.gen = gen.value_or(0);
  req.limits =
      scheduler_args(max_batched_tokens, max_seqs, schedule, request_rate, arrivals, slo_ttft_ms, slo_tpot_ms, range_ratio)
          .limits(true);
  req.cached_prefix = cached_prefix;
  req.dps = ints(dp, "dp"), req.tps = ints(tp, "tp"), req.pps = ints(pp, "pp");
  req.microbatches = ints(microbatches, "microbatches");
  req.eps = ints(ep, "ep");
  req.cps = ints(cp, "cp");
  req.vpps = ints(vpp, "vpp");
  if (!routing.empty()) req.routing_alpha = predictor::routing_flag(routing);
  predictor::check_optimizer(optimizer);
  req.optimizer_state = optimizer == "adamw";
  predictor::Prices p;
  p.source = "compare(prices=...)";
  for (const auto& kv : prices) predictor::add_price(p, kv.first + "=" + std::to_string(kv.second), e.reg);
  std::vector<predictor::CompareRow> rows;
  {
    py::gil_scoped_release nogil;
    rows = predictor::run_compare(req, e.reg, e.kp, e.models_dir, &p);
    predictor::rank_rows(rows, sort);
  }
  py::list out;
  for (const auto& r : rows) out.append(json_to_py(predictor::compare_row_json(r)));
  return std::move(out);
}

// `tilecast capacity`: per GPU x tp, the highest request rate one replica serves within the
// objectives, ranked as the CLI ranks them (its --format json rows).
py::object capacity(const std::string& model, const py::object& gpus, int64_t seq, int64_t gen,
                    std::optional<double> slo_ttft_ms, std::optional<double> slo_tpot_ms, double attainment,
                    int64_t requests, std::optional<double> target_rate, const std::map<std::string, double>& prices,
                    std::optional<int64_t> max_batched_tokens, const py::object& max_seqs,
                    std::optional<std::string> schedule, std::optional<std::string> arrivals, int64_t cached_prefix,
                    const py::object& tp, int64_t ep, const std::string& dtype, const std::string& kv_dtype,
                    const std::string& routing, const std::string& weights, const std::string& gpu_dir,
                    bool dp_attention, const std::string& moe_a2a, std::optional<int64_t> prefill_tp,
                    std::optional<int64_t> prefill_ep, const py::object& prefill_instances,
                    const py::object& decode_instances, std::optional<double> range_ratio) {
  Engine& e = engine(weights, gpu_dir);
  predictor::check_capacity_options(requests, target_rate);
  const std::vector<predictor::Disaggregation> layouts =
      predictor::disaggregation_layouts(prefill_tp, prefill_ep, instance_counts(prefill_instances, "prefill_instances"),
                                        instance_counts(decode_instances, "decode_instances"));
  const ModelConfig mc = load_model_config(model, e.models_dir);
  predictor::ForecastRequest q = predictor::capacity_request(
      mc, requests, seq, gen, predictor::serving_dtypes(mc, dtype, kv_dtype), ep,
      routing.empty() ? kUniformRouting : predictor::routing_flag(routing),
      scheduler_args(max_batched_tokens, max_seqs, schedule, std::nullopt, arrivals, slo_ttft_ms, slo_tpot_ms,
                     range_ratio),
      cached_prefix, true);
  q.par.dp_attention = dp_attention;  // run_capacity: on the rows with tp > 1
  q.par.moe_all_to_all = predictor::parse_moe_a2a(moe_a2a);  // run_capacity: on the rows with tp = ep
  predictor::Prices p;
  p.source = "capacity(prices=...)";
  for (const auto& kv : prices) predictor::add_price(p, kv.first + "=" + std::to_string(kv.second), e.reg);
  const std::vector<std::string> gpu_names = names(gpus, "gpus");
  const std::vector<int64_t> tps = ints(tp, "tp");
  std::string out;
  {
    py::gil_scoped_release nogil;
    auto rows = predictor::run_capacity(q, gpu_names, tps, layouts, attainment, e.reg, e.kp, &p);
    predictor::rank_capacity(rows);
    out = predictor::capacity_rows_json(rows, target_rate.value_or(0), &p);
  }
  return json_to_py(out)["rows"];
}

// `tilecast plan`: the layouts of `gpus` GPUs, ranked as the CLI ranks them (every layout, as
// its --format json).
py::object plan(const std::string& model, const std::string& gpu, int64_t gpus, int64_t global_batch,
                const py::object& seq, const std::string& mode, const py::object& context, std::optional<int64_t> gen,
                const std::string& dtype, const std::string& optimizer, const std::map<std::string, double>& prices,
                const std::string& routing, const std::string& weights, const std::string& gpu_dir,
                std::optional<int64_t> max_batched_tokens, const py::object& max_seqs, int64_t cached_prefix,
                std::optional<std::string> schedule, std::optional<double> request_rate,
                std::optional<std::string> arrivals, std::optional<double> slo_ttft_ms,
                std::optional<double> slo_tpot_ms, const py::object& zero, const std::string& recompute,
                bool sequence_parallel, double train_tokens, const py::object& vpp, const std::string& expert_dtype,
                const std::string& spec_draft, std::optional<int64_t> spec_tokens, std::optional<double> spec_accept,
                bool dp_attention, const std::string& moe_a2a, bool disaggregate, std::optional<double> range_ratio,
                bool hf_eager) {
  Engine& e = engine(weights, gpu_dir);
  const predictor::SpecRequest spec = predictor::SpecRequest::from_flags(spec_draft, spec_tokens, spec_accept);
  const predictor::TrainingArgs training = training_args(zero, sequence_parallel, recompute, train_tokens);
  const std::vector<int64_t> vpps = ints(vpp, "vpp");
  const std::string m = predictor::canonical_mode(mode);
  const predictor::SchedulerLimits lim =
      scheduler_args(max_batched_tokens, max_seqs, schedule, request_rate, arrivals, slo_ttft_ms, slo_tpot_ms, range_ratio)
          .limits(true);
  int64_t tokens = 0;
  if (m == "decode") {
    if (context.is_none() || !seq.is_none()) throw ConfigError("mode decode takes context (not seq)");
    tokens = context.cast<int64_t>();
  } else {
    if (seq.is_none() || !context.is_none()) throw ConfigError("mode " + m + " takes seq (not context)");
    tokens = seq.cast<int64_t>();
  }
  if (m != "generate" && gen) throw ConfigError("gen applies to mode generate only");
  predictor::check_optimizer(optimizer);
  predictor::Prices p;
  p.source = "plan(prices=...)";
  for (const auto& kv : prices) predictor::add_price(p, kv.first + "=" + std::to_string(kv.second), e.reg);
  std::vector<predictor::CompareRow> rows;
  {
    py::gil_scoped_release nogil;
    predictor::PlanRequest req;
    req.model = model, req.gpu = gpu, req.mode = m, req.dtype = dtype, req.expert_dtype = expert_dtype;
    req.gpus = gpus, req.global_batch = global_batch, req.seq = tokens, req.gen = gen.value_or(0);
    req.limits = lim;
    req.cached_prefix = cached_prefix;
    req.spec = spec;
    req.hf_eager = hf_eager;
    req.optimizer_state = optimizer == "adamw";
    req.training = training;
    req.vpps = vpps;
    req.dp_attention = dp_attention;
    req.moe_a2a = predictor::parse_moe_a2a(moe_a2a);
    req.disaggregate = disaggregate;
    if (!routing.empty()) req.routing_alpha = predictor::routing_flag(routing);
    rows = predictor::run_plan(req, e.reg, e.kp, e.models_dir, &p);
  }
  py::list out;
  for (const auto& r : rows) out.append(json_to_py(predictor::compare_row_json(r)));
  return std::move(out);
}

py::object gpus(const std::string& gpu_dir) {
  Engine& e = engine("", gpu_dir);
  return json_to_py(predictor::gpus_json(e.reg, e.kp).dump());
}

py::object models(const std::string& models_dir) {
  Engine& e = engine("", "");
  return json_to_py(predictor::models_json(models_dir.empty() ? e.models_dir : models_dir).dump());
}

// "--max-seqs: ..." -> "max_seqs: ...": a CLI flag in an error line as the Python keyword.
std::string keyword_names(const std::string& message) {
  std::string out;
  for (size_t i = 0; i < message.size(); ++i) {
    const bool flag = message.compare(i, 2, "--") == 0 && i + 2 < message.size() &&
                      std::islower(static_cast<unsigned char>(message[i + 2])) &&
                      (i == 0 || !std::isalnum(static_cast<unsigned char>(message[i - 1])));
    if (!flag) {
      out += message[i];
      continue;
    }
    for (i += 2; i < message.size() && (std::isalnum(static_cast<unsigned char>(message[i])) || message[i] == '-'); ++i)
      out += message[i] == '-' ? '_' : message[i];
    --i;
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(tilecast, m) {
  m.doc() = "tilecast: forecast deep-learning kernel and model latency on GPUs you do not have (no LibTorch).";
  // tilecast's own errors (bad model, GPU, shape, layout...) are ValueError with the CLI's one line.
  // The checks are the CLI's, whose lines name its flags: each --flag-name becomes the keyword
  // flag_name that carries it here.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tilecast::Error& e) {
      PyErr_SetString(PyExc_ValueError, keyword_names(e.what()).c_str());
    }
  });
  m.def("predict", &predict, "Whole-model forecast; the dict `tilecast predict --format json` prints.",
        py::arg("model"), py::arg("gpu"), py::arg("batch"), py::arg("seq") = py::none(), py::arg("mode") = "inference",
        py::arg("context") = py::none(), py::arg("gen") = py::none(), py::arg("dtype") = "", py::arg("kv_dtype") = "",
        py::arg("dp") = 1, py::arg("tp") = 1, py::arg("pp") = 1, py::arg("microbatches") = 1, py::arg("fusion") = false,
        py::arg("optimizer") = "adamw", py::arg("host_gap_us") = 0.0, py::arg("weights") = "",
        py::arg("gpu_dir") = "", py::arg("ep") = 1, py::arg("routing") = "", py::arg("max_batched_tokens") = py::none(),
        py::arg("max_seqs") = py::none(), py::arg("cached_prefix") = py::none(), py::arg("schedule") = py::none(),
        py::arg("spec_draft") = "", py::arg("spec_tokens") = py::none(), py::arg("spec_accept") = py::none(),
        py::arg("request_rate") = py::none(), py::arg("arrivals") = py::none(),
        py::arg("slo_ttft_ms") = py::none(), py::arg("slo_tpot_ms") = py::none(),
        py::arg("zero") = 0, py::arg("recompute") = "",
        py::arg("sequence_parallel") = false, py::arg("train_tokens") = 0.0, py::arg("cp") = 1, py::arg("vpp") = 1,
        py::arg("expert_dtype") = "", py::arg("dp_attention") = false, py::arg("moe_a2a") = "none",
        py::arg("prefill_tp") = py::none(), py::arg("prefill_ep") = py::none(),
        py::arg("prefill_instances") = py::none(), py::arg("decode_instances") = py::none(),
        py::arg("range_ratio") = py::none(), py::arg("hf_eager") = false);
  m.def("predict_kernel", &predict_kernel, "One kernel; the dict `tilecast predict-kernel --format json` prints.",
        py::arg("op"), py::arg("shape"), py::arg("gpu"), py::arg("dtype") = "", py::arg("kv_dtype") = "",
        py::arg("window") = 0, py::arg("moe_tp") = 1, py::arg("moe_ep") = 1, py::arg("routing") = "balanced",
        py::arg("weights") = "", py::arg("gpu_dir") = "", py::arg("prefix") = 0, py::arg("weight_group") = 0,
        py::arg("sustained") = false);
  m.def("compare", &compare,
        "Every model x GPU x batch x seq x dp x tp x pp (x ep for MoE, x cp and vpp in training) combination: a list of dicts (one per row of "
        "`tilecast compare --format json`), ready for pandas.DataFrame.",
        py::arg("model"), py::arg("gpus"), py::arg("mode") = "inference", py::arg("batch") = 1,
        py::arg("seq") = py::none(), py::arg("context") = py::none(), py::arg("gen") = py::none(),
        py::arg("dtype") = "", py::arg("kv_dtype") = "", py::arg("dp") = 1, py::arg("tp") = 1, py::arg("pp") = 1,
        py::arg("microbatches") = 1, py::arg("ep") = 1, py::arg("routing") = "", py::arg("optimizer") = "adamw",
        py::arg("prices") = std::map<std::string, double>{}, py::arg("sort") = "time", py::arg("weights") = "",
        py::arg("gpu_dir") = "", py::arg("max_batched_tokens") = py::none(), py::arg("max_seqs") = py::none(),
        py::arg("cached_prefix") = 0, py::arg("schedule") = py::none(),
        py::arg("request_rate") = py::none(), py::arg("arrivals") = py::none(),
        py::arg("slo_ttft_ms") = py::none(), py::arg("slo_tpot_ms") = py::none(),
        py::arg("zero") = 0, py::arg("recompute") = "",
        py::arg("sequence_parallel") = false, py::arg("train_tokens") = 0.0, py::arg("cp") = 1, py::arg("vpp") = 1,
        py::arg("expert_dtype") = "", py::arg("spec_draft") = "", py::arg("spec_tokens") = py::none(),
        py::arg("spec_accept") = py::none(), py::arg("dp_attention") = false,
        py::arg("moe_a2a") = "none", py::arg("prefill_tp") = py::none(), py::arg("prefill_ep") = py::none(),
        py::arg("prefill_instances") = py::none(), py::arg("decode_instances") = py::none(),
        py::arg("range_ratio") = py::none(), py::arg("hf_eager") = false);
  m.def("capacity", &capacity,
        "Per GPU x tp, the highest request rate one replica serves with `attainment` % of `requests` requests "
        "within the objectives, ranked as `tilecast capacity` ranks them: a list of dicts (its --format json rows).",
        py::arg("model"), py::arg("gpus"), py::arg("seq"), py::arg("gen"), py::arg("slo_ttft_ms") = py::none(),
        py::arg("slo_tpot_ms") = py::none(), py::arg("attainment") = 90.0, py::arg("requests") = 200,
        py::arg("target_rate") = py::none(), py::arg("prices") = std::map<std::string, double>{},
        py::arg("max_batched_tokens") = py::none(), py::arg("max_seqs") = py::none(), py::arg("schedule") = py::none(),
        py::arg("arrivals") = py::none(), py::arg("cached_prefix") = 0, py::arg("tp") = 1, py::arg("ep") = 1,
        py::arg("dtype") = "", py::arg("kv_dtype") = "", py::arg("routing") = "", py::arg("weights") = "",
        py::arg("gpu_dir") = "", py::arg("dp_attention") = false, py::arg("moe_a2a") = "none",
        py::arg("prefill_tp") = py::none(), py::arg("prefill_ep") = py::none(),
        py::arg("prefill_instances") = py::none(), py::arg("decode_instances") = py::none(),
        py::arg("range_ratio") = py::none());
  m.def("plan", &plan,
        "Every dp x tp x pp layout of `gpus` GPUs (serving: replicas x tp x pp, x ep for MoE models), ranked as "
        "`tilecast plan` ranks them: a list of dicts (its --format json rows).",
        py::arg("model"), py::arg("gpu"), py::arg("gpus"), py::arg("global_batch"), py::arg("seq") = py::none(),
        py::arg("mode") = "training", py::arg("context") = py::none(), py::arg("gen") = py::none(),
        py::arg("dtype") = "", py::arg("optimizer") = "adamw", py::arg("prices") = std::map<std::string, double>{},
        py::arg("routing") = "", py::arg("weights") = "", py::arg("gpu_dir") = "",
        py::arg("max_batched_tokens") = py::none(), py::arg("max_seqs") = py::none(), py::arg("cached_prefix") = 0,
        py::arg("schedule") = py::none(), py::arg("request_rate") = py::none(), py::arg("arrivals") = py::none(),
        py::arg("slo_ttft_ms") = py::none(), py::arg("slo_tpot_ms") = py::none(),
        py::arg("zero") = 0, py::arg("recompute") = "",
        py::arg("sequence_parallel") = false, py::arg("train_tokens") = 0.0, py::arg("vpp") = 1,
        py::arg("expert_dtype") = "", py::arg("spec_draft") = "", py::arg("spec_tokens") = py::none(),
        py::arg("spec_accept") = py::none(), py::arg("dp_attention") = false,
        py::arg("moe_a2a") = "none", py::arg("disaggregate") = false, py::arg("range_ratio") = py::none(),
        py::arg("hf_eager") = false);
  m.def("gpus", &gpus, "The GPU specs, as `tilecast gpus --format json`.", py::arg("gpu_dir") = "");
  m.def("models", &models, "The bundled model configs, as `tilecast models --format json`.", py::arg("models_dir") = "");
  m.attr("__version__") = TILECAST_VERSION;
}
