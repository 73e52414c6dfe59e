#include "predictor/model_eval.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <tuple>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "core/csv.h"
#include "core/config_io.h"
#include "core/error.h"
#include "core/fs_util.h"
#include "core/model_config.h"
#include "core/op_graph.h"
#include "core/units.h"
#include "predictor/graph_predictor.h"

namespace fs = std::filesystem;

namespace tilecast::predictor {
namespace {

std::string cell_key(const std::string& model, int64_t seq, int64_t batch, const std::string& dev,
                     const std::string& mode, const std::string& option) {
  return model + "|" + std::to_string(seq) + "|" + std::to_string(batch) + "|" + dev + "|" + mode + "|" + option;
}

std::map<std::string, double> load_published(const std::string& path) {
  std::map<std::string, double> out;
  if (path.empty()) return out;
  CsvReader csv(path);
  const int c_model = csv.column("model_name"), c_seq = csv.column("seqlen"), c_batch = csv.column("batch"),
            c_dev = csv.column("device"), c_mode = csv.column("mode"), c_opt = csv.column("option"),
            c_err = csv.column("neusight_all_e2e_err");
  if (c_model < 0 || c_err < 0) throw DataError(path + ": not a NeuSight summary.csv (needs model_name, neusight_all_e2e_err)");
  std::vector<std::string> f;
  while (csv.next(f)) {
    if (f[c_err].empty()) continue;
    out[cell_key(f[c_model], parse_int_field(f[c_seq], path, csv.line(), "seqlen"),
                 parse_int_field(f[c_batch], path, csv.line(), "batch"), f[c_dev], f[c_mode], f[c_opt])] =
        parse_double_field(f[c_err], path, csv.line(), "neusight_all_e2e_err");
  }
  return out;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}

// The mean as a short table cell ("12.34"), "-" for none.
std::string mean_or_dash(const std::vector<double>& v) { return v.empty() ? "-" : std::to_string(mean(v)).substr(0, 5); }

// NeuSight OpName -> our report kind; empty for nodes that launch no real kernel.
std::string kind_of(const std::string& op_name) {
  if (op_name == "Linear") return "linear";
  if (op_name == "BMM") return "bmm";
  if (op_name == "VECsoftmax") return "softmax";
  if (op_name == "VECln") return "layernorm";
  if (op_name.rfind("VEC", 0) == 0) return "elementwise";
  return "";  // embeddings, dropout, copies: NeuSight's naming groups these differently from ours
}

// One label CSV's nodes (NeuSight's per-node timings of a one-layer model), read once: name,
// latency (forward + backward when trained) and the forward / backward + accumulation parts.
struct LabelNode {
  std::string name;
  long line = 0;  // in the CSV, for errors
  double latency_ms = 0, fw_ms = 0, bw_ms = 0;
  bool has_latency = false;
};
struct LabelNodes {
  std::vector<LabelNode> nodes;
  bool has_phases = false;  // fw_latency, bw_latency and acc_latency columns present
};
LabelNodes read_label_nodes(const std::string& label_csv) {
  CsvReader l(label_csv);
  const int c_name = l.column("Name"), c_lat = l.column("latency");
  const int c_fw = l.column("fw_latency"), c_bw = l.column("bw_latency"), c_acc = l.column("acc_latency");
  if (c_name < 0 || c_lat < 0) throw DataError(label_csv + ": missing Name/latency columns");
  LabelNodes out;
  out.has_phases = c_fw >= 0 && c_bw >= 0 && c_acc >= 0;
  std::vector<std::string> f;
  while (l.next(f)) {
    auto ms = [&](int c, const char* name) {
      if (f[c].empty()) return 0.0;
      const double v = parse_double_field(f[c], label_csv, l.line(), name);
      if (!(v >= 0) || v > 1e9)
        throw DataError(where(label_csv, l.line()) + ": column '" + name + "': " + f[c] + " outside [0, 1e9] ms");
      return v;
    };
    LabelNode n;
    n.name = f[c_name];
    n.line = l.line();
    n.has_latency = !f[c_lat].empty();
    if (n.has_latency) n.latency_ms = ms(c_lat, "latency");
    if (out.has_phases) n.fw_ms = ms(c_fw, "fw_latency"), n.bw_ms = ms(c_bw, "bw_latency") + ms(c_acc, "acc_latency");
    out.nodes.push_back(std::move(n));
  }
  return out;
}

// The label's nodes joined with NeuSight's parsed graph (Name -> OpName): ms per kind.
std::map<std::string, double> label_per_kind(const LabelNodes& label, const std::string& label_csv,
                                             const std::string& opgraph_csv) {
  std::map<std::string, std::string> op_of;
  {
    CsvReader g(opgraph_csv);
    const int c_name = g.column("Name"), c_op = g.column("OpName");
    if (c_name < 0 || c_op < 0) throw DataError(opgraph_csv + ": missing Name/OpName columns");
    std::vector<std::string> f;
    while (g.next(f)) op_of[f[c_name]] = f[c_op];
  }
  std::map<std::string, double> out;
  for (const auto& n : label.nodes) {
    auto it = op_of.find(n.name);
    if (it == op_of.end() || !n.has_latency) continue;
    const std::string kind = kind_of(it->second);
    if (kind.empty()) continue;
    if (!(n.latency_ms > 0))
      throw DataError(where(label_csv, n.line) + ": column 'latency': 0 ms for a " + kind + " node (" + n.name + ")");
    out[kind] += n.latency_ms;
  }
  return out;
}

// Sums of the nodes' forward and backward + accumulation latencies (ms).
std::pair<double, double> label_node_phases_ms(const LabelNodes& label, const std::string& label_csv) {
  if (!label.has_phases) throw DataError(label_csv + ": missing fw_latency/bw_latency/acc_latency columns");
  double fw = 0, bw = 0;
  for (const auto& n : label.nodes) fw += n.fw_ms, bw += n.bw_ms;
  return {fw, bw};
}

}  // namespace

std::string phase_split(const ModelEvalRow& r) {
  if (!(r.label_fw_ms > 0 && r.label_bw_ms > 0)) return "";
  if (r.phase_ratio_vs_nodes < 0) return "unchecked";
  return r.phase_ratio_vs_nodes >= kPhaseRatioLo && r.phase_ratio_vs_nodes <= kPhaseRatioHi ? "consistent"
                                                                                              : "inconsistent";
}

ModelEvalResult eval_models(const std::string& labels_dir, const std::string& models_dir,
                            const std::string& published_summary, const std::string& opgraphs_dir,
                            const GpuRegistry& gpus, const KernelPredictor& kp, double host_gap_us,
                            const LiEtAlBaseline* li) {
  if (!fs::is_directory(labels_dir)) throw ConfigError(labels_dir + ": labels folder not found");
  const auto published = load_published(published_summary);
  static const std::regex name_re(R"(^(.+)-(inf|train)-(\d+)-(\d+)(-([A-Za-z0-9_]+))?\.json$)");
  ModelEvalResult res;
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(labels_dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    std::smatch m;
    const std::string fname = p.filename().string();
    if (!std::regex_match(fname, m, name_re)) {
      res.skipped.push_back(p.string() + ": name does not follow <model>-<inf|train>-<seq>-<batch>[-option].json");
      continue;
    }
    ModelEvalRow row;
    row.device_dir = p.parent_path().filename().string();
    row.model = m[1];
    row.mode = m[2];
    // Whole-string, range-checked numbers from the file name (a 20-digit batch is an error).
    auto name_int = [&](const std::string& text, const char* field) {
      // The regex matched digits only; more than 10 of them cannot be in range.
      const long long v = text.size() > 10 ? -1 : std::stoll(text);
      if (v < 1 || v > (1LL << 31))
        throw DataError(p.string() + ": file name field '" + field + "': " + text + " out of range [1, 2^31]");
      return static_cast<int64_t>(v);
    };
    row.seq = name_int(m[3], "seq");
    row.batch = name_int(m[4], "batch");
    row.option = m[6];
    Parallelism par;
    static const std::regex par_re(R"(^(dp|tp|pp)(\d+)(?:_(\d+))?$)");
    std::smatch pm;
    if (!row.option.empty() && row.option != "fusion") {
      if (!std::regex_match(row.option, pm, par_re)) {
        res.skipped.push_back(p.string() + ": option '" + row.option + "' is not modelled");
        continue;
      }
      const int64_t n = name_int(pm[2], "option");
      if (pm[1] == "dp") par.dp = n;
      else if (pm[1] == "tp") par.tp = n;
      else par.pp = n, par.microbatches = pm[3].matched ? name_int(pm[3], "microbatches") : 1;
    }
    if (row.option == "fusion" && row.mode != "inf") {
      res.skipped.push_back(p.string() + ": fusion is modelled for inference only");
      continue;
    }
    const GpuSpec* gpu = gpus.find(row.device_dir);
    if (!gpu) throw ConfigError(p.string() + ": no GPU spec for folder '" + row.device_dir + "'");
    row.gpu = gpu->name;
    const EndToEndLabel label = read_end_to_end_label(p.string());
    row.label_ms = label.e2e_ms;
    ModelConfig mc;
    try {
      mc = load_model_config(row.model, models_dir);
    } catch (const ConfigError& e) {
      res.skipped.push_back(p.string() + ": " + e.what());
      continue;
    }
    OpGraph g;
    try {
      g = build_op_graph(mc, row.batch, row.seq, row.mode == "train" ? Mode::kTraining : Mode::kInference, par);
    } catch (const ConfigError& e) {
      res.skipped.push_back(p.string() + ": " + e.what());
      continue;
    }
    if (row.option == "fusion") g = fuse_op_graph(g);
    ModelForecast f = forecast_model(g, *gpu, kp, host_gap_us);
    row.predicted_ms = f.total_ms;
    row.error_pct = 100.0 * std::abs(row.predicted_ms - row.label_ms) / row.label_ms;
    auto it = published.find(cell_key(row.model, row.seq, row.batch, row.device_dir, row.mode, row.option));
    if (it != published.end()) row.neusight_error_pct = it->second;
    const fs::path label_csv = fs::path(p).replace_extension(".csv");
    std::optional<LabelNodes> nodes;  // the per-node CSV, read once for both uses below
    auto label_nodes = [&]() -> const LabelNodes& {
      if (!nodes) nodes = read_label_nodes(label_csv.string());
      return *nodes;
    };
    if (row.mode == "train" && label.has_phases() && par.gpus() == 1) {
      row.label_fw_ms = label.fw_ms, row.label_bw_ms = label.bw_ms;
      row.forecast_fw_ms = f.forward_ms, row.forecast_bw_ms = f.backward_ms;
      if (fs::exists(label_csv)) {
        const auto [node_fw, node_bw] = label_node_phases_ms(label_nodes(), label_csv.string());
        if (node_fw > 0 && node_bw > 0) row.phase_ratio_vs_nodes = (label.bw_ms / label.fw_ms) / (node_bw / node_fw);
      }
    }
    if (par.tp == 1 && par.pp == 1 && row.option != "fusion") {
      row.roofline_ms = graph_sum_ms(g, *gpu, [&](const KernelQuery& q) { return s_to_ms(roofline_s(q, *gpu)); });
      if (li) row.li_ms = graph_sum_ms(g, *gpu, [&](const KernelQuery& q) { return li->kernel_ms(row.device_dir, q); });
    }
    res.rows.push_back(row);

    const fs::path graph_csv = fs::path(opgraphs_dir) / (p.stem().string() + ".csv");
    if (row.option.empty() && !opgraphs_dir.empty() && fs::exists(label_csv) && fs::exists(graph_csv) &&
        mc.model_type != "switch_transformers") {
      ModelConfig one = mc;  // the label CSVs time a one-layer model
      one.layers = 1;
      // Each node of those CSVs is timed alone: isolated latencies, as the kernel data.
      ModelForecast f1 = forecast_model(build_op_graph(one, row.batch, row.seq, g.mode), *gpu, kp, 0, true);
      std::map<std::string, double> mine;
      for (const auto& o : f1.ops)
        if (!o.unnamed_by_neusight) mine[o.kind] += (o.fw_ms + o.bw_ms + o.acc_ms) * o.count;
      for (const auto& kv : label_per_kind(label_nodes(), label_csv.string(), graph_csv.string()))
        res.per_op.push_back({row.gpu, row.model, row.mode, kv.first, row.seq, row.batch, kv.second, mine[kv.first]});
    }
  }
  if (res.rows.empty()) throw DataError(labels_dir + ": no single-GPU label JSON found");
  return res;
}

namespace {

// Per GPU, its training labels timed in parts (phase_split not empty): every one's whole-step
// error, the consistent ones', and how many had no per-node CSV. They are single-GPU training
// steps, so each GPU's is its ("train", no option) group of model_eval_json.
struct PhaseGroup {
  std::vector<double> all, consistent;
  int unchecked = 0;
};
std::map<std::string, PhaseGroup> phase_groups(const ModelEvalResult& r) {
  std::map<std::string, PhaseGroup> out;
  for (const auto& x : r.rows) {
    const std::string split = phase_split(x);
    if (split.empty()) continue;
    PhaseGroup& g = out[x.gpu];
    g.all.push_back(x.error_pct);
    if (split == "consistent") g.consistent.push_back(x.error_pct);
    if (split == "unchecked") ++g.unchecked;
  }
  return out;
}

// The training labels timed in parts, for model_eval_table.
std::string phase_table(const ModelEvalResult& r) {
  std::ostringstream os;
  char buf[320];
  bool any = false;
  for (const auto& x : r.rows) {
    const std::string split = phase_split(x);
    if (split.empty()) continue;
    if (!any) {
      os << "\ntraining steps timed in parts (label JSON fw_latency / bwall_latency), forecast forward / backward;\n"
            "split: the label's backward/forward ratio over its per-node CSV's (each node timed alone) within ["
         << kPhaseRatioLo << ", " << kPhaseRatioHi << "]\n";
      std::snprintf(buf, sizeof buf, "%-16s %-12s %5s %10s %10s %7s %10s %10s %7s %8s %8s  %s\n", "gpu", "model",
                    "batch", "label_fw", "fc_fw", "fw_err%", "label_bw", "fc_bw", "bw_err%", "bw/fw", "vs_nodes",
                    "split");
      os << buf;
      any = true;
    }
    auto signed_err = [](double fc, double label) { return 100.0 * (fc - label) / label; };
    const std::string vs = x.phase_ratio_vs_nodes >= 0 ? std::to_string(x.phase_ratio_vs_nodes).substr(0, 4) : "-";
    std::snprintf(buf, sizeof buf, "%-16s %-12s %5lld %10.2f %10.2f %+7.1f %10.2f %10.2f %+7.1f %8.2f %8s  %s\n",
                  x.gpu.c_str(), x.model.c_str(), static_cast<long long>(x.batch), x.label_fw_ms, x.forecast_fw_ms,
                  signed_err(x.forecast_fw_ms, x.label_fw_ms), x.label_bw_ms, x.forecast_bw_ms,
                  signed_err(x.forecast_bw_ms, x.label_bw_ms), x.label_bw_ms / x.label_fw_ms, vs.c_str(),
                  split.c_str());
    os << buf;
  }
  if (!any) return "";
  os << "mean error of the whole step per GPU: all these labels, and those whose split is consistent\n";
  std::snprintf(buf, sizeof buf, "%-16s %6s %10s %11s %12s %10s\n", "gpu", "labels", "mean_err%", "consistent",
                "mean_err%", "unchecked");
  os << buf;
  for (const auto& [gpu, g] : phase_groups(r)) {
    std::snprintf(buf, sizeof buf, "%-16s %6zu %10.2f %11zu %12s %10d\n", gpu.c_str(), g.all.size(), mean(g.all),
                  g.consistent.size(), mean_or_dash(g.consistent).c_str(), g.unchecked);
    os << buf;
  }
  return os.str();
}

}  // namespace

std::string model_eval_table(const ModelEvalResult& r) {
  std::ostringstream os;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-16s %-12s %-6s %-7s %5s %5s %12s %12s %8s %10s\n", "gpu", "model", "mode",
                "option", "seq", "batch", "label_ms", "forecast_ms", "err%", "neusight%");
  os << buf;
  std::map<std::string, std::vector<double>> ours, theirs, ours_paired;
  for (const auto& x : r.rows) {
    std::string ns = x.neusight_error_pct >= 0 ? std::to_string(x.neusight_error_pct).substr(0, 5) : "-";
    std::snprintf(buf, sizeof buf, "%-16s %-12s %-6s %-7s %5lld %5lld %12.2f %12.2f %8.1f %10s\n", x.gpu.c_str(),
                  x.model.c_str(), x.mode.c_str(), x.option.empty() ? "-" : x.option.c_str(),
                  static_cast<long long>(x.seq), static_cast<long long>(x.batch), x.label_ms, x.predicted_ms,
                  x.error_pct, ns.c_str());
    os << buf;
    const std::string k = x.gpu + " " + x.mode + (x.option.empty() ? "" : "-" + x.option);
    ours[k].push_back(x.error_pct);
    if (x.neusight_error_pct >= 0) {
      theirs[k].push_back(x.neusight_error_pct);
      ours_paired[k].push_back(x.error_pct);
    }
  }
  os << "\nmean error per GPU and mode (NeuSight: mean of its published errors on the rows it has)\n";
  std::snprintf(buf, sizeof buf, "%-34s %5s %10s %10s %12s %10s\n", "gpu mode", "rows", "mean_err%", "max_err%",
                "paired_rows", "neusight%");
  os << buf;
  for (const auto& kv : ours) {
    const auto& t = theirs[kv.first];
    std::snprintf(buf, sizeof buf, "%-34s %5zu %10.2f %10.2f %12zu %10s\n", kv.first.c_str(), kv.second.size(),
                  mean(kv.second), *std::max_element(kv.second.begin(), kv.second.end()), t.size(),
                  mean_or_dash(t).c_str());
    os << buf;
  }
  std::vector<double> all;
  for (const auto& x : r.rows) all.push_back(x.error_pct);
  std::snprintf(buf, sizeof buf, "%-34s %5zu %10.2f %10.2f\n", "all", all.size(), mean(all),
                *std::max_element(all.begin(), all.end()));
  os << buf;
  os << phase_table(r);
  for (const auto& s : r.skipped) os << "skipped: " << s << "\n";
  return os.str();
}

std::string per_op_table(const ModelEvalResult& r) {
  if (r.per_op.empty()) return "";
  std::map<std::string, std::vector<double>> by_kind, by_kind_mode;
  for (const auto& x : r.per_op) {
    if (x.label_ms <= 0) continue;
    const double ape = 100.0 * std::abs(x.forecast_ms - x.label_ms) / x.label_ms;
    by_kind[x.kind].push_back(ape);
    by_kind_mode[x.kind + " (" + x.mode + ")"].push_back(ape);
  }
  std::ostringstream os;
  char buf[160];
  os << "per-op error: one-layer label CSVs (nodes timed in isolation) vs. our one-layer forecast, summed per kind\n";
  std::snprintf(buf, sizeof buf, "%-26s %6s %10s\n", "kind", "rows", "mean_err%");
  os << buf;
  for (const auto* m : {&by_kind, &by_kind_mode})
    for (const auto& kv : *m) {
      std::snprintf(buf, sizeof buf, "%-26s %6zu %10.2f\n", kv.first.c_str(), kv.second.size(), mean(kv.second));
      os << buf;
    }
  return os.str();
}

std::string model_eval_json(const ModelEvalResult& r) {
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> by;
  for (const auto& x : r.rows) {
    nlohmann::json row = {{"device", x.device_dir}, {"gpu", x.gpu}, {"model", x.model}, {"mode", x.mode},
                          {"option", x.option}, {"seq", x.seq}, {"batch", x.batch}, {"label_ms", x.label_ms},
                          {"forecast_ms", x.predicted_ms}, {"error_pct", x.error_pct}};
    row["roofline_ms"] = x.roofline_ms >= 0 ? nlohmann::json(x.roofline_ms) : nlohmann::json(nullptr);
    row["li_et_al_ms"] = x.li_ms >= 0 ? nlohmann::json(x.li_ms) : nlohmann::json(nullptr);
    row["neusight_error_pct"] = x.neusight_error_pct >= 0 ? nlohmann::json(x.neusight_error_pct) : nlohmann::json();
    const std::string split = phase_split(x);
    auto timed = [&](double v) { return split.empty() ? nlohmann::json(nullptr) : nlohmann::json(v); };
    row["label_fw_ms"] = timed(x.label_fw_ms);
    row["label_bw_ms"] = timed(x.label_bw_ms);
    row["forecast_fw_ms"] = timed(x.forecast_fw_ms);
    row["forecast_bw_ms"] = timed(x.forecast_bw_ms);
    row["phase_ratio_vs_nodes"] = x.phase_ratio_vs_nodes >= 0 ? nlohmann::json(x.phase_ratio_vs_nodes) : nlohmann::json();
    row["phase_split"] = split.empty() ? nlohmann::json(nullptr) : nlohmann::json(split);
    j["rows"].push_back(row);
    by[{x.gpu, x.mode, x.option}].push_back(x.error_pct);
  }
  // One object per GPU, mode and option (plain keys, no composite strings).
  j["by_gpu_mode"] = nlohmann::json::array();
  // Groups with training steps timed in parts also give the mean over the labels whose split
  // agrees with their per-node timings (phase_split "consistent"; null when none does).
  const auto phases = phase_groups(r);
  for (const auto& kv : by) {
    nlohmann::json g = {{"gpu", std::get<0>(kv.first)},
                        {"mode", std::get<1>(kv.first)},
                        {"option", std::get<2>(kv.first)},
                        {"rows", kv.second.size()},
                        {"mean_error_pct", mean(kv.second)}};
    const auto ph = phases.find(std::get<0>(kv.first));
    if (std::get<1>(kv.first) == "train" && std::get<2>(kv.first).empty() && ph != phases.end()) {
      const auto& c = ph->second.consistent;
      g["phase_consistent_rows"] = c.size();
      g["phase_consistent_mean_error_pct"] = c.empty() ? nlohmann::json(nullptr) : nlohmann::json(mean(c));
    }
    j["by_gpu_mode"].push_back(g);
  }
  j["per_op"] = nlohmann::json::array();
  for (const auto& x : r.per_op)
    j["per_op"].push_back({{"gpu", x.gpu}, {"model", x.model}, {"mode", x.mode}, {"seq", x.seq},
                           {"batch", x.batch}, {"kind", x.kind}, {"label_ms", x.label_ms},
                           {"forecast_ms", x.forecast_ms}});
  j["skipped"] = r.skipped;
  return j.dump(2) + "\n";
}

std::string model_eval_csv(const ModelEvalResult& r) {
  std::ostringstream os;
  os << "device,gpu,model,mode,option,seq,batch,label_ms,forecast_ms,error_pct,neusight_error_pct,"
        "label_fw_ms,label_bw_ms,forecast_fw_ms,forecast_bw_ms,phase_split\n";
  for (const auto& x : r.rows) {
    os << x.device_dir << ',' << x.gpu << ',' << x.model << ',' << x.mode << ',' << x.option << ',' << x.seq
       << ',' << x.batch << ',' << x.label_ms << ',' << x.predicted_ms << ',' << x.error_pct << ','
       << (x.neusight_error_pct >= 0 ? std::to_string(x.neusight_error_pct) : "");
    const std::string split = phase_split(x);
    if (split.empty()) os << ",,,,,\n";
    else
      os << ',' << x.label_fw_ms << ',' << x.label_bw_ms << ',' << x.forecast_fw_ms << ',' << x.forecast_bw_ms << ','
         << split << '\n';
  }
  return os.str();
}

std::string neusight_layout_tables(const ModelEvalResult& r) {
  struct Col { const char* model; const char* title; int64_t inf_b[2]; int64_t train_b[2]; };
  static const Col cols[] = {{"bert_large", "BERT-Large", {8, 16}, {2, 8}},
                             {"gpt2_large", "GPT2-Large", {4, 8}, {1, 4}},
                             {"gpt3_xl", "GPT3-XL", {2, 8}, {1, 2}},
                             {"opt_13", "OPT-1.3B", {2, 8}, {1, 2}},
                             {"gpt3_27", "GPT3-2.7B", {2, 8}, {1, 2}},
                             {"switchxl4", "SwitchTrans", {1, 2}, {1, 2}}};
  std::ostringstream os;
  for (const char* mode : {"inf", "train"}) {
    std::map<std::string, std::map<std::string, const ModelEvalRow*>> by_dev;
    for (const auto& x : r.rows)
      if (x.mode == mode && x.option.empty())
        by_dev[x.device_dir][x.model + "|" + std::to_string(x.batch)] = &x;
    if (by_dev.empty()) continue;
    os << "== " << (std::string(mode) == "inf" ? "nvidia_inf" : "nvidia_train") << " layout (APE %, blank = no label)\n";
    for (const auto& dev : by_dev) {
      os << dev.first << "\nModel";
      for (const auto& c : cols) os << "," << c.title << ",";
      os << "\nBatch";
      for (const auto& c : cols) {
        const int64_t* b = std::string(mode) == "inf" ? c.inf_b : c.train_b;
        os << "," << b[0] << "," << b[1];
      }
      for (int which = 0; which < 2; ++which) {
        os << (which == 0 ? "\ntilecast" : "\nNeuSight (published)");
        for (const auto& c : cols) {
          const int64_t* b = std::string(mode) == "inf" ? c.inf_b : c.train_b;
          for (int i = 0; i < 2; ++i) {
            auto it = dev.second.find(std::string(c.model) + "|" + std::to_string(b[i]));
            os << ",";
            if (it == dev.second.end()) continue;
            double v = which == 0 ? it->second->error_pct : it->second->neusight_error_pct;
            if (v >= 0) {
              char buf[32];
              std::snprintf(buf, sizeof buf, "%.1f", v);
              os << buf;
            }
          }
        }
      }
      os << "\n\n";
    }
  }
  return os.str();
}

}  // namespace tilecast::predictor
