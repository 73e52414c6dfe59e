#include "predictor/kernel_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/kernel_dataset.h"
#include "core/progress.h"

namespace tilecast::predictor {

void ApeTally::add(double ape, bool plausible) {
  ++rows;
  ape_sum_pct += ape;
  if (plausible)
    plausible_ape_sum_pct += ape;
  else
    ++implausible_rows;
}

void ErrorStats::add(double forecast_ms, double roofline_ms, double measured_ms, bool plausible, double prior_ms) {
  auto ape = [&](double x) { return 100.0 * std::abs(x - measured_ms) / measured_ms; };
  if (prior_ms > 0) prior.add(ape(prior_ms), plausible);
  ApeTally::add(ape(forecast_ms), plausible);
  roofline_ape_sum_pct += ape(roofline_ms);
  apes.push_back(ape(forecast_ms));
  ratios.push_back(forecast_ms / measured_ms);
}

double ErrorStats::bias_median() const {
  if (ratios.empty()) return 0;
  std::vector<double> v = ratios;
  const size_t k = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + k, v.end());
  if (v.size() % 2) return v[k];
  return 0.5 * (v[k] + *std::max_element(v.begin(), v.begin() + k));
}

double ErrorStats::percentile_pct(double p) const {
  if (apes.empty()) return 0;
  std::vector<double> v = apes;
  size_t k = static_cast<size_t>(std::min<double>(v.size() - 1, std::floor(p / 100.0 * v.size())));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

KernelEvalReport eval_kernels(const std::vector<std::string>& files, const KernelPredictor& predictor,
                              const GpuRegistry& gpus, std::vector<KernelEvalRow>* rows_out, bool quiet,
                              int holdout_shapes_pct, const LiEtAlBaseline* li) {
  KernelEvalReport rep;
  auto trained_on = [&](Family f, const GpuSpec& gpu, const std::string& device) {
    const auto& m = predictor.set_for(gpu, f).manifest();
    const std::vector<std::string>* gpus_of = nullptr;
    if (f == Family::kMemoryOp) {
      gpus_of = &m.memory_ops.training_gpus;
    } else {
      auto it = m.families.find(family_name(f));
      if (it != m.families.end()) gpus_of = &it->second.training_gpus;
    }
    return gpus_of && std::find(gpus_of->begin(), gpus_of->end(), device) != gpus_of->end();
  };
  ProgressBar bar(static_cast<int64_t>(files.size()), "eval-kernels", quiet || files.size() < 2);
  for (const auto& file : files) {
    std::vector<KernelSample> samples = read_kernel_csv(file);
    // SGLang's window-0 rows are forecast as what they ran (resolve_sglang_window_zero). Other
    // full-attention rows that ran no slower than the same shapes with a short window are not the
    // kernel they describe, judged over the whole file. Held-out scoring leaves both out with the
    // rows training leaves out (filter_spec_library); otherwise the latter count as implausible.
    std::vector<bool> partial;
    if (holdout_shapes_pct > 0) {
      filter_spec_library(samples, gpus);
      samples.erase(std::remove_if(samples.begin(), samples.end(),
                                   [&](const KernelSample& s) { return !shape_held_out(s.query, holdout_shapes_pct); }),
                    samples.end());
      partial.assign(samples.size(), false);
    } else {
      resolve_sglang_window_zero(samples, gpus);
      partial = not_full_attention(samples);
    }
    // One batched forecast per device.
    std::map<std::string, std::vector<size_t>> by_dev;
    for (size_t i = 0; i < samples.size(); ++i) by_dev[samples[i].device].push_back(i);
    for (const auto& kv : by_dev) {
      const GpuSpec* gpu = gpus.find(kv.first);
      if (!gpu) {
        const KernelSample& s = samples[kv.second.front()];
        const std::string close = gpus.closest(kv.first, 3);
        throw DataError(where(s.file, s.line) + ": column 'Device': unknown GPU '" + kv.first +
                        "' (no spec in configs/gpus/" + (close.empty() ? "" : "; closest: " + close) + ")");
      }
      std::vector<KernelQuery> qs;
      for (size_t i : kv.second) qs.push_back(samples[i].query);
      auto preds = predictor.predict(qs, *gpu);
      for (size_t j = 0; j < qs.size(); ++j) {
        const KernelSample& s = samples[kv.second[j]];
        const double y = s.latency_ms, f = preds[j].latency_ms, roof = preds[j].roofline_ms, prior = preds[j].prior_ms;
        // by_op keys are family names (the aiconfigurator files' op_name values); memory ops,
        // one physics fit each, are keyed by op.
        const std::string fam = op_family(s.query.op) == Family::kMemoryOp ? op_name(s.query.op)
                                                                           : family_name(op_family(s.query.op));
        const bool ok = !partial[kv.second[j]] && implausible_row(s.query, y, *gpu) == Implausible::kNone;
        for (ErrorStats* st : {&rep.overall,
                               trained_on(op_family(s.query.op), *gpu, s.device) ? &rep.training_gpus : &rep.unseen_gpus,
                               &rep.by_op[fam], &rep.by_op_dtype[fam + "/" + dtype_name(s.query.dtype)],
                               &rep.by_device[s.device], &rep.by_device_op[s.device][fam]})
          st->add(f, roof, y, ok, prior);
        if (const char* lib = kernel_library(s.query, *gpu)) rep.by_library[fam + "/" + lib].add(f, roof, y, ok, prior);
        if (!s.library.empty()) rep.by_row_library[fam + "/" + s.library].add(f, roof, y, ok, prior);
        if (s.sglang_window_zero && s.query.window > 0) rep.sglang_window_zero.add(f, roof, y, ok, prior);
        if (rows_out) {
          const double li_ms = li ? li->kernel_ms(s.device, s.query) : -1;
          rows_out->push_back({s.device, op_name(s.query.op), query_shape_string(s.query), dtype_name(s.query.dtype), y,
                               preds[j].latency_ms, preds[j].roofline_ms, preds[j].prior_ms,
                               std::isnan(li_ms) ? -1 : li_ms});
        }
      }
    }
    bar.tick();
  }
  if (rep.overall.rows == 0) throw DataError("eval-kernels: no rows in the given files");
  return rep;
}

namespace {
nlohmann::json stats_json(const ErrorStats& s) {
  nlohmann::json j = {{"rows", s.rows},
                      {"mape_pct", s.mape_pct()},
                      {"roofline_mape_pct", s.roofline_mape_pct()},
                      {"p50_ape_pct", s.percentile_pct(50)},
                      {"p90_ape_pct", s.percentile_pct(90)},
                      {"implausible_rows", s.implausible_rows},
                      {"plausible_mape_pct", s.plausible_mape_pct()},
                      {"bias_median", s.bias_median()}};
  if (s.prior.rows > 0) {
    j["prior_rows"] = s.prior.rows;
    j["prior_mape_pct"] = s.prior.mape_pct();
    j["prior_plausible_mape_pct"] = s.prior.plausible_mape_pct();
  }
  return j;
}
}  // namespace

std::string eval_report_json(const KernelEvalReport& r) {
  nlohmann::json j;
  j["overall"] = stats_json(r.overall);
  j["training_gpus"] = stats_json(r.training_gpus);
  j["unseen_gpus"] = stats_json(r.unseen_gpus);
  j["by_op"] = nlohmann::json::object();
  for (const auto& kv : r.by_op) j["by_op"][kv.first] = stats_json(kv.second);
  j["by_op_dtype"] = nlohmann::json::object();
  for (const auto& kv : r.by_op_dtype) j["by_op_dtype"][kv.first] = stats_json(kv.second);
  j["by_library"] = nlohmann::json::object();
  for (const auto& kv : r.by_library) j["by_library"][kv.first] = stats_json(kv.second);
  j["by_row_library"] = nlohmann::json::object();
  for (const auto& kv : r.by_row_library) j["by_row_library"][kv.first] = stats_json(kv.second);
  j["sglang_window_zero"] = stats_json(r.sglang_window_zero);
  j["by_device"] = nlohmann::json::object();
  for (const auto& kv : r.by_device) j["by_device"][kv.first] = stats_json(kv.second);
  j["by_device_op"] = nlohmann::json::object();
  for (const auto& d : r.by_device_op)
    for (const auto& kv : d.second) j["by_device_op"][d.first][kv.first] = stats_json(kv.second);
  return j.dump(2) + "\n";
}

std::string eval_report_table(const KernelEvalReport& r) {
  std::ostringstream os;
  char buf[256];
  auto line = [&](const std::string& name, const ErrorStats& s) {
    std::snprintf(buf, sizeof buf, "%-28s %7lld %10.2f %10.2f %10.2f %12.2f %12lld %12.2f %8.3f\n", name.c_str(),
                  static_cast<long long>(s.rows), s.mape_pct(), s.percentile_pct(50),
                  s.percentile_pct(90), s.roofline_mape_pct(), static_cast<long long>(s.implausible_rows),
                  s.plausible_mape_pct(), s.bias_median());
    os << buf;
  };
  std::snprintf(buf, sizeof buf, "%-28s %7s %10s %10s %10s %12s %12s %12s %8s\n", "group", "rows", "MAPE%",
                "p50 APE%", "p90 APE%", "roofline%", "implausible", "plausible%", "bias");
  os << buf;
  os << "-- bias: median forecast / measured (< 1: forecasts too fast)\n";
  os << "-- implausible: rows physics rules out (beyond the compute roofline, or beyond DRAM for the\n"
        "   bytes L2 cannot hold, by 1.5x; full attention no slower than the same shapes with a 16x\n"
        "   shorter window, except SGLang's window-0 rows, forecast as they ran: see below);\n"
        "   plausible%: MAPE over the other rows\n";
  os << "-- headline: rows on GPUs the family was trained on, and on GPUs it never saw\n";
  line("training GPUs", r.training_gpus);
  line("unseen GPUs", r.unseen_gpus);
  os << "-- by op family\n";
  for (const auto& kv : r.by_op) line(kv.first, kv.second);
  os << "-- by op family and dtype\n";
  for (const auto& kv : r.by_op_dtype) line(kv.first, kv.second);
  if (!r.by_library.empty()) {
    os << "-- by op family and the kernel library its forecast assumes on the row's GPU\n";
    for (const auto& kv : r.by_library) line(kv.first, kv.second);
  }
  if (!r.by_row_library.empty()) {
    os << "-- by op family and the kernel library the row ran (its kernel_source)\n";
    for (const auto& kv : r.by_row_library) line(kv.first, kv.second);
  }
  if (r.sglang_window_zero.rows > 0) {
    os << "-- SGLang rows of window 0 (each query attended to its own key alone; forecast so)\n";
    line("sglang window 0", r.sglang_window_zero);
  }
  os << "-- by device\n";
  for (const auto& kv : r.by_device) line(kv.first, kv.second);
  os << "-- by device and op family\n";
  for (const auto& d : r.by_device_op)
    for (const auto& kv : d.second) line(d.first + " / " + kv.first, kv.second);
  os << "-- all\n";
  line("overall", r.overall);
  return os.str();
}

std::string eval_report_csv(const KernelEvalReport& r) {
  std::ostringstream os;
  os.precision(10);
  os << "section,group,rows,mape_pct,p50_ape_pct,p90_ape_pct,roofline_mape_pct,implausible_rows,plausible_mape_pct,"
        "bias_median\n";
  auto line = [&](const std::string& section, const std::string& group, const ErrorStats& s) {
    os << section << ',' << '"' << group << '"' << ',' << s.rows << ',' << s.mape_pct() << ',' << s.percentile_pct(50)
       << ',' << s.percentile_pct(90) << ',' << s.roofline_mape_pct() << ',' << s.implausible_rows << ','
       << s.plausible_mape_pct() << ',' << s.bias_median() << '\n';
  };
  line("headline", "training_gpus", r.training_gpus);
  line("headline", "unseen_gpus", r.unseen_gpus);
  for (const auto& kv : r.by_op) line("op", kv.first, kv.second);
  for (const auto& kv : r.by_op_dtype) line("op_dtype", kv.first, kv.second);
  for (const auto& kv : r.by_library) line("library", kv.first, kv.second);
  for (const auto& kv : r.by_row_library) line("row_library", kv.first, kv.second);
  if (r.sglang_window_zero.rows > 0) line("sglang_window_zero", "own_key", r.sglang_window_zero);
  for (const auto& kv : r.by_device) line("device", kv.first, kv.second);
  for (const auto& d : r.by_device_op)
    for (const auto& kv : d.second) line("device_op", d.first + " / " + kv.first, kv.second);
  line("all", "overall", r.overall);
  return os.str();
}

}  // namespace tilecast::predictor
