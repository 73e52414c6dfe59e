#include "predictor/graph_predictor.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "core/csv.h"
#include "core/units.h"

namespace tilecast::predictor {
namespace {

using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t>;
Key key_of(const KernelQuery& q) { return {static_cast<int>(q.op), q.b, q.m, q.n, q.k, q.h}; }

const char* mode_name(Mode m) { return m == Mode::kTraining ? "training" : "inference"; }

}  // namespace

double adamw_step_ms(double parameters, const GpuSpec& gpu) {
  // Reads param, grad, exp_avg, exp_avg_sq and writes param, exp_avg, exp_avg_sq (7 x 4 B),
  // plus the foreach implementation's intermediate (sqrt(v)/bias-corrected denominators):
  // about 3 more passes. 40 B per parameter at DRAM bandwidth.
  return s_to_ms(transfer_s(40.0 * parameters, gpu.mem_bw_gbps));
}

ModelForecast forecast_model(const OpGraph& g, const GpuSpec& gpu, const KernelPredictor& kp) {
  std::map<Key, size_t> index;
  std::vector<KernelQuery> unique;
  auto collect = [&](const std::vector<KernelCall>& calls) {
    for (const auto& c : calls)
      if (!c.is_mem && index.emplace(key_of(c.query), unique.size()).second) unique.push_back(c.query);
  };
  for (const auto& op : g.ops) {
    collect(op.fw);
    collect(op.bw);
    collect(op.acc);
  }
  const std::vector<KernelPrediction> preds = kp.predict(unique, gpu);
  auto cost = [&](const std::vector<KernelCall>& calls) {
    double ms = 0;
    for (const auto& c : calls)
      ms += c.is_mem ? s_to_ms(transfer_s(c.bytes, gpu.mem_bw_gbps))
                     : preds[index.at(key_of(c.query))].latency_ms;
    return ms;
  };
  ModelForecast f;
  f.model = g.model;
  f.gpu = gpu.name;
  f.batch = g.batch;
  f.seq = g.seq;
  f.mode = g.mode;
  f.fused = g.fused;
  for (const auto& op : g.ops) {
    OpForecast o{op.name, op.kind, op.count, cost(op.fw), cost(op.bw), cost(op.acc)};
    f.forward_ms += o.fw_ms * o.count;
    f.backward_ms += (o.bw_ms + o.acc_ms) * o.count;
    f.ops.push_back(o);
  }
  f.total_ms = f.forward_ms + f.backward_ms;
  f.optimizer_ms = g.mode == Mode::kTraining ? adamw_step_ms(g.parameters, gpu) : 0;
  return f;
}

std::string forecast_json(const ModelForecast& f) {
  nlohmann::json j = {{"model", f.model},       {"gpu", f.gpu},
                      {"batch", f.batch},       {"seq", f.seq},
                      {"mode", mode_name(f.mode)}, {"fusion", f.fused},
                      {"forward_ms", f.forward_ms}, {"backward_ms", f.backward_ms},
                      {"optimizer_ms", f.optimizer_ms}, {"total_ms", f.total_ms}};
  j["ops"] = nlohmann::json::array();
  for (const auto& o : f.ops)
    j["ops"].push_back({{"name", o.name}, {"kind", o.kind}, {"count", o.count},
                        {"forward_ms", o.fw_ms * o.count}, {"backward_ms", (o.bw_ms + o.acc_ms) * o.count}});
  return j.dump(2) + "\n";
}

std::string forecast_csv(const ModelForecast& f) {
  std::ostringstream os;
  os << "name,kind,count,forward_ms,backward_ms,total_ms\n";
  for (const auto& o : f.ops)
    os << csv_escape(o.name) << ',' << o.kind << ',' << o.count << ',' << o.fw_ms * o.count << ','
       << (o.bw_ms + o.acc_ms) * o.count << ',' << (o.fw_ms + o.bw_ms + o.acc_ms) * o.count << '\n';
  return os.str();
}

std::string forecast_table(const ModelForecast& f, int top_ops) {
  std::ostringstream os;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s on %s, batch %lld, seq %lld, %s%s\n", f.model.c_str(), f.gpu.c_str(),
                static_cast<long long>(f.batch), static_cast<long long>(f.seq), mode_name(f.mode),
                f.fused ? " (fused)" : "");
  os << buf;
  std::snprintf(buf, sizeof buf, "forward_ms    %10.3f\nbackward_ms   %10.3f\ntotal_ms      %10.3f\n",
                f.forward_ms, f.backward_ms, f.total_ms);
  os << buf;
  if (f.mode == Mode::kTraining) {
    std::snprintf(buf, sizeof buf, "optimizer_ms  %10.3f  (AdamW step, not in total_ms)\n", f.optimizer_ms);
    os << buf;
  }
  std::map<std::string, double> by_kind;
  for (const auto& o : f.ops) by_kind[o.kind] += (o.fw_ms + o.bw_ms + o.acc_ms) * o.count;
  std::vector<std::pair<double, std::string>> kinds;
  for (const auto& kv : by_kind) kinds.emplace_back(kv.second, kv.first);
  std::sort(kinds.rbegin(), kinds.rend());
  os << "\nby kind          ms        %\n";
  for (const auto& k : kinds) {
    std::snprintf(buf, sizeof buf, "%-12s %10.3f %7.1f%%\n", k.second.c_str(), k.first,
                  f.total_ms > 0 ? 100 * k.first / f.total_ms : 0);
    os << buf;
  }
  std::vector<const OpForecast*> ops;
  for (const auto& o : f.ops) ops.push_back(&o);
  auto total = [](const OpForecast* o) { return (o->fw_ms + o->bw_ms + o->acc_ms) * o->count; };
  std::sort(ops.begin(), ops.end(), [&](auto a, auto b) { return total(a) > total(b); });
  os << "\ntop operators                                 count   fw_ms(all)   bw_ms(all)      %\n";
  for (int i = 0; i < top_ops && i < static_cast<int>(ops.size()); ++i) {
    const OpForecast* o = ops[i];
    std::snprintf(buf, sizeof buf, "%-44s %6lld %12.3f %12.3f %6.1f%%\n", o->name.c_str(),
                  static_cast<long long>(o->count), o->fw_ms * o->count, (o->bw_ms + o->acc_ms) * o->count,
                  f.total_ms > 0 ? 100 * total(o) / f.total_ms : 0);
    os << buf;
  }
  return os.str();
}

}  // namespace tilecast::predictor
