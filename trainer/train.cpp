#include "trainer/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>
#include <filesystem>
#include <random>
#include <set>

#include "core/error.h"
#include "core/featurize.h"
#include "core/fs_util.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/units.h"
#include "trainer/mlp.h"

namespace fs = std::filesystem;

namespace tilecast::trainer {
namespace {

struct Tensors {
  torch::Tensor x, base_ms, y_ms;
};

// The spec of a training row's GPU; DataError naming the row when configs/gpus/ has none.
const GpuSpec& row_gpu(const KernelSample& s, const GpuRegistry& gpus) {
  const GpuSpec* gpu = gpus.find(s.device);
  if (!gpu)
    throw DataError(where(s.file, s.line) + ": column 'Device': no GPU spec for '" + s.device +
                    "' (add one to configs/gpus/)");
  return *gpu;
}

Tensors make_tensors(const std::vector<KernelSample>& samples, const std::vector<int64_t>& idx, Family family,
                     const TileTable& tiles, const GpuRegistry& gpus, const FittedRoofline* prior, double floor_ms,
                     bool fallback_base, const std::map<std::string, FittedRoofline>* library_prior) {
  const int64_t nf = static_cast<int64_t>(num_features(family));
  const int64_t n = static_cast<int64_t>(idx.size());
  Tensors t;
  t.x = torch::empty({n, nf}, torch::kFloat32);
  t.base_ms = torch::empty({n}, torch::kFloat32);
  t.y_ms = torch::empty({n}, torch::kFloat32);
  float* x = t.x.data_ptr<float>();
  float* base = t.base_ms.data_ptr<float>();
  float* y = t.y_ms.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    const KernelSample& s = samples[idx[i]];
    const GpuSpec& gpu = row_gpu(s, gpus);
    PreparedKernel p = featurize(s.query, gpu, tiles, x + i * nf);
    if (fallback_base) {  // the base on the work the fallback kernel does; the features as asked
      std::vector<float> scratch(static_cast<size_t>(nf));
      p.bounds = featurize(fallback_physics_query(s.query), gpu, tiles, scratch.data()).bounds;
    }
    const FittedRoofline* row_prior = prior ? &library_base(*prior, library_prior, kernel_library(s.query, gpu)) : nullptr;
    base[i] = static_cast<float>(s_to_ms(network_base_s(p.bounds, row_prior, floor_ms * 1e-3)));
    y[i] = static_cast<float>(s.latency_ms);
  }
  return t;
}

double mape_pct(Mlp& model, const Tensors& t, int batch) {
  torch::NoGradGuard no_grad;
  model->eval();
  double sum = 0;
  const int64_t n = t.x.size(0);
  for (int64_t i = 0; i < n; i += batch) {
    int64_t j = std::min<int64_t>(n, i + batch);
    auto pred = latency_from_output(model->forward(t.x.slice(0, i, j)), t.base_ms.slice(0, i, j));
    auto y = t.y_ms.slice(0, i, j);
    sum += ((pred - y).abs() / y).sum().item<double>();
  }
  model->train();
  return n ? 100.0 * sum / static_cast<double>(n) : 0.0;
}

// The rows' devices, each once, in order of first appearance.
std::vector<std::string> devices_of(const std::vector<KernelSample>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows)
    if (std::find(out.begin(), out.end(), r.device) == out.end()) out.push_back(r.device);
  return out;
}

// Writes each named GPU's spec as training read it to <dir>/gpus/<name>.yaml (kRecordedGpuDir),
// replacing an older copy: what forecasting compares an unseen GPU with. GPUs without a spec
// (a collect run's device that its gpu.yaml names otherwise) are skipped.
void record_gpu_specs(const std::string& dir, const std::vector<std::string>& names, const GpuRegistry& gpus) {
  const fs::path folder = fs::path(dir) / kRecordedGpuDir;
  for (const auto& name : names)
    if (const GpuSpec* g = gpus.find(name)) {
      fs::create_directories(folder);
      write_file_atomic((folder / (g->name + ".yaml")).string(), gpu_spec_to_yaml(*g));
    }
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

double fit_launch_floor_ms(const std::vector<KernelSample>& rows, std::map<std::string, double>* per_gpu) {
  std::map<std::string, std::vector<double>> by_gpu;
  for (const auto& s : rows) by_gpu[s.device].push_back(s.latency_ms);
  std::vector<double> p1;
  for (auto& kv : by_gpu) {
    auto& v = kv.second;
    const size_t k = static_cast<size_t>(0.01 * double(v.size() - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    p1.push_back(v[k]);
    if (per_gpu) (*per_gpu)[kv.first] = v[k];
  }
  if (p1.empty()) return 0;
  std::sort(p1.begin(), p1.end());
  const size_t m = p1.size();
  return m % 2 ? p1[m / 2] : 0.5 * (p1[m / 2 - 1] + p1[m / 2]);
}

std::map<std::string, std::vector<const KernelSample*>> rows_by_library(const std::vector<KernelSample>& rows,
                                                                        const GpuRegistry& gpus) {
  std::map<std::string, std::vector<const KernelSample*>> by_library;
  for (const auto& s : rows)
    if (const char* library = kernel_library(s.query, row_gpu(s, gpus))) by_library[library].push_back(&s);
  for (auto it = by_library.begin(); it != by_library.end();)
    it = it->second.size() < kMinLibraryRows ? by_library.erase(it) : std::next(it);
  return by_library;
}

std::map<std::string, LibraryCosts> fit_library_costs(const std::vector<KernelSample>& rows, const TileTable& tiles,
                                                      const GpuRegistry& gpus, const FittedRoofline& prior, bool cta,
                                                      bool sm_rate, bool floor) {
  struct Row {
    KernelBounds kb;
    double measured_s;
  };
  std::map<std::string, LibraryCosts> out;
  std::vector<float> scratch;
  for (const auto& [library, samples] : rows_by_library(rows, gpus)) {
    std::vector<Row> lib_rows;
    for (const KernelSample* s : samples) {
      scratch.resize(num_features(op_family(s->query.op)));
      lib_rows.push_back({featurize(s->query, row_gpu(*s, gpus), tiles, scratch.data()).bounds, s->latency_ms * 1e-3});
    }
    FittedRoofline p = prior;
    auto loss = [&]() {
      double sum = 0;
      for (const Row& r : lib_rows) sum += std::abs(std::log(fitted_roofline_s(r.kb, p) / r.measured_s));
      return sum / double(lib_rows.size());
    };
    // One number's log grid (0: none), the other held; the value lowering the loss most.
    auto fit = [&](double& value, int points, double lo_log10, double hi_log10) {
      value = 0;
      double best_value = 0, best = loss();
      for (int k = 0; k < points; ++k) {
        value = std::pow(10.0, lo_log10 + (hi_log10 - lo_log10) * k / (points - 1));
        const double l = loss();
        if (l < best) best = l, best_value = value;
      }
      value = best_value;
    };
    // The library's own floor, in cycles, in place of the shared one: kept only where it lowers
    // the loss below the shared floor's (fit() keeps 0, the shared floor, otherwise).
    auto fit_floor = [&]() {
      const FittedRoofline shared = p;
      const double shared_loss = loss();
      p.floor_us = 0;
      fit(p.floor_kcycles, 121, std::log10(0.2), std::log10(200.0));  // 0.2 to 200 kcycles
      if (p.floor_kcycles <= 0 || !(loss() < shared_loss)) {
        p.floor_us = shared.floor_us;
        p.floor_kcycles = shared.floor_kcycles;
        return 0.0;
      }
      return p.floor_kcycles;
    };
    double floor_kcycles = floor ? fit_floor() : 0.0;
    // The rate first (it moves the rows whose bytes dominate), then the cost per CTA with the
    // rate held (the rows whose CTAs outlast their bytes), then the rate again with that cost.
    if (sm_rate) fit(p.sm_bytes_per_cycle, 97, -0.5, 3.5);  // 0.32 to 3,162 bytes per SM-cycle
    if (cta) fit(p.cta_ns, 121, 0.0, 3.0);                   // 1 ns to 1 us
    if (sm_rate && cta) fit(p.sm_bytes_per_cycle, 97, -0.5, 3.5);
    if (floor) {  // again, with the others in place (from the shared floor)
      p.floor_us = prior.floor_us;
      p.floor_kcycles = prior.floor_kcycles;
      floor_kcycles = fit_floor();
    }
    if (p.cta_ns > 0 || p.sm_bytes_per_cycle > 0 || floor_kcycles > 0)
      out[library] = {p.cta_ns, p.sm_bytes_per_cycle, floor_kcycles};
  }
  return out;
}

FittedRoofline fit_family_roofline(const std::vector<KernelSample>& rows, const TileTable& tiles,
                                   const GpuRegistry& gpus, bool in_cycles, bool cap_memory, double min_eta) {
  std::vector<const KernelSample*> ptrs;
  ptrs.reserve(rows.size());
  for (const auto& s : rows) ptrs.push_back(&s);
  return fit_family_roofline(ptrs, tiles, gpus, in_cycles, cap_memory, min_eta);
}

FittedRoofline fit_family_roofline(const std::vector<const KernelSample*>& rows, const TileTable& tiles,
                                   const GpuRegistry& gpus, bool in_cycles, bool cap_memory, double min_eta) {
  std::vector<KernelBounds> bounds;
  std::vector<double> measured_s;
  std::vector<float> scratch;
  std::map<std::string, std::vector<double>> large_rows_eta;  // per GPU
  for (const KernelSample* row : rows) {
    const KernelSample& s = *row;
    scratch.resize(num_features(op_family(s.query.op)));
    const GpuSpec& gpu = row_gpu(s, gpus);
    bounds.push_back(featurize(s.query, gpu, tiles, scratch.data()).bounds);
    measured_s.push_back(s.latency_ms * 1e-3);
    const double dram_bytes = bounds.back().memory_s * gpu.mem_bw_gbps * 1e9;
    if (cap_memory && dram_bytes > 4 * gpu.l2_cache_mb * kBytesPerMib)
      large_rows_eta[s.device].push_back(bounds.back().memory_s / measured_s.back());
  }
  double cap = 0;
  for (auto& [device, eta] : large_rows_eta) {
    if (eta.size() < 20) continue;
    std::nth_element(eta.begin(), eta.begin() + std::ptrdiff_t(eta.size() / 2), eta.end());
    const double median = eta[eta.size() / 2];
    TC_LOG(Info) << "prior_cap_memory: " << device << " median DRAM efficiency " << median << " over " << eta.size()
                 << " rows beyond 4x its L2";
    cap = std::max(cap, median);
  }
  return fit_roofline(bounds, measured_s, in_cycles, cap > 0 ? std::min(cap, 1.0) : 1.0, min_eta);
}

FamilyResult train_family(const PredictorConfig& cfg, const std::vector<KernelSample>& all,
                          const TileTable& tiles, const GpuRegistry& gpus,
                          const std::string& out_file, bool quiet, double floor_ms, const FittedRoofline* prior,
                          bool fallback_base, const std::map<std::string, FittedRoofline>* library_prior) {
  const auto t0 = std::chrono::steady_clock::now();
  FamilyResult r;
  r.family = cfg.family;
  torch::manual_seed(cfg.seed);
  std::mt19937_64 rng(cfg.seed);

  std::vector<int64_t> idx;
  for (int64_t i = 0; i < static_cast<int64_t>(all.size()); ++i) {
    if (op_family(all[i].query.op) != cfg.family)
      throw DataError(where(all[i].file, all[i].line) + ": op '" + op_name(all[i].query.op) +
                      "' does not belong to family " + family_name(cfg.family));
    idx.push_back(i);
  }
  std::shuffle(idx.begin(), idx.end(), rng);
  if (cfg.max_rows > 0 && static_cast<int64_t>(idx.size()) > cfg.max_rows) idx.resize(cfg.max_rows);
  if (idx.size() < 4) throw DataError(std::string("too few rows to train ") + family_name(cfg.family));
  const int64_t n_val = std::max<int64_t>(1, static_cast<int64_t>(idx.size() * cfg.val_fraction));
  std::vector<int64_t> val_idx(idx.begin(), idx.begin() + n_val), train_idx(idx.begin() + n_val, idx.end());
  Tensors tr = make_tensors(all, train_idx, cfg.family, tiles, gpus, prior, floor_ms, fallback_base, library_prior);
  Tensors va = make_tensors(all, val_idx, cfg.family, tiles, gpus, prior, floor_ms, fallback_base, library_prior);
  for (size_t c : feature_columns(cfg.family, cfg.ignore_features)) {
    tr.x.select(1, static_cast<int64_t>(c)).zero_();
    va.x.select(1, static_cast<int64_t>(c)).zero_();
  }
  r.rows_train = tr.x.size(0);
  r.rows_val = va.x.size(0);

  Mlp model(static_cast<int64_t>(num_features(cfg.family)), cfg.hidden_size, cfg.num_layers);
  model->fit_normalizer(tr.x);
  {
    auto mn = std::get<0>(tr.x.min(0)), mx = std::get<0>(tr.x.max(0));
    r.feature_min.assign(mn.data_ptr<float>(), mn.data_ptr<float>() + mn.numel());
    r.feature_max.assign(mx.data_ptr<float>(), mx.data_ptr<float>() + mx.numel());
  }
  torch::optim::AdamW opt(model->parameters(),
                          torch::optim::AdamWOptions(cfg.lr).weight_decay(cfg.weight_decay));

  fs::create_directories(fs::path(out_file).parent_path().empty() ? "." : fs::path(out_file).parent_path());
  double best = std::numeric_limits<double>::infinity();
  ProgressBar bar(cfg.epochs, std::string("train ") + family_name(cfg.family) + (fallback_base ? " (fallback)" : ""),
                  quiet, true);
  const int64_t n = r.rows_train;
  int64_t samples_seen = 0;
  double train_s = 0;
  for (int epoch = 1; epoch <= cfg.epochs; ++epoch) {
    double lr = cfg.lr;
    if (cfg.lr_schedule == "cosine")
      lr = cfg.lr * (0.01 + 0.99 * 0.5 * (1 + std::cos(M_PI * (epoch - 1) / std::max(1, cfg.epochs - 1))));
    for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);

    const auto e0 = std::chrono::steady_clock::now();
    auto perm = torch::randperm(n, torch::kLong);
    double loss_sum = 0;
    int64_t batches = 0;
    for (int64_t i = 0; i < n; i += cfg.batch_size) {
      auto b = perm.slice(0, i, std::min<int64_t>(n, i + cfg.batch_size));
      auto pred = latency_from_output(model->forward(tr.x.index_select(0, b)), tr.base_ms.index_select(0, b));
      auto loss = smape_loss(pred, tr.y_ms.index_select(0, b));
      opt.zero_grad();
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>();
      ++batches;
    }
    train_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - e0).count();
    samples_seen += n;
    const double val = mape_pct(model, va, cfg.val_batch_size);
    if (epoch == 1) r.first_val_mape_pct = val;
    if (val < best) {
      best = val;
      r.best_epoch = epoch;
      save_checkpoint(model, out_file);
    }
    r.epochs_run = epoch;
    char note[128];
    std::snprintf(note, sizeof note, "epoch %d smape=%.4f val_mape=%.2f%% best=%.2f%%", epoch,
                  loss_sum / std::max<int64_t>(1, batches), val, best);
    bar.tick(1, note);
    if (interrupted()) {
      r.interrupted = true;
      TC_LOG(Warn) << "interrupted: keeping the best checkpoint so far (epoch " << r.best_epoch << ")";
      break;
    }
  }
  if (!r.interrupted) bar.finish();
  r.val_mape_pct = best;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.samples_per_s = train_s > 0 ? samples_seen / train_s : 0;
  r.layer_widths = layer_widths(model);
  return r;
}

// <dir>/<family>.yaml, which must name that family.
static PredictorConfig load_family_config(const std::string& dir, Family fam) {
  PredictorConfig cfg = load_predictor_config((fs::path(dir) / (std::string(family_name(fam)) + ".yaml")).string());
  if (cfg.family != fam) throw ConfigError(cfg.origin + ": field 'family' does not match the file name");
  return cfg;
}

FamilyResult fit_memory_ops(const std::vector<std::string>& files, const std::vector<std::string>& exclude_gpus,
                            const GpuRegistry& gpus, MemoryOpEntry& out, int holdout_shapes_pct,
                            double l2_resident_fraction) {
  const auto t0 = std::chrono::steady_clock::now();
  if (files.empty()) throw ConfigError("no training data for family memory_op");
  std::map<OpKind, std::vector<MemoryOpRow>> by_op;
  MemoryOpEntry e;
  int64_t n = 0;
  for (const auto& f : files)
    for (const auto& s : read_kernel_csv(f)) {
      if (op_family(s.query.op) != Family::kMemoryOp) continue;
      if (std::find(exclude_gpus.begin(), exclude_gpus.end(), s.device) != exclude_gpus.end()) continue;
      if (holdout_shapes_pct > 0 && shape_held_out(s.query, holdout_shapes_pct)) continue;
      const GpuSpec* g = gpus.find(s.device);
      if (!g) throw DataError(where(s.file, s.line) + ": unknown GPU '" + s.device + "' (no spec in configs/gpus/)");
      by_op[s.query.op].push_back({g, query_bytes(s.query), s.latency_ms * 1e-3});
      if (std::find(e.training_gpus.begin(), e.training_gpus.end(), s.device) == e.training_gpus.end())
        e.training_gpus.push_back(s.device);
      ++n;
    }
  if (by_op.empty()) throw DataError("memory_op: no rmsnorm/silu_mul/rope/residual_add rows in the training files");
  for (const auto& kv : by_op) {
    e.ops[op_name(kv.first)] = fit_memory_op(kv.second, l2_resident_fraction);
    const MemoryOpCoeffs& c = e.ops[op_name(kv.first)];
    TC_LOG(Info) << "memory_op " << op_name(kv.first) << ": floor " << c.floor_kcycles << " kcycles, DRAM factor "
                 << c.dram_factor << " beyond " << c.l2_resident_fraction << " of the L2, " << c.sm_cycles_per_byte
                 << " SM cycles/byte, " << c.thread_cycles_per_byte << " resident-thread cycles/byte (" << c.rows
                 << " rows)";
  }
  e.data_hash = files_hash(files);
  e.fitted_at = utc_now();
  out = e;
  FamilyResult r;
  r.family = Family::kMemoryOp;
  r.rows_train = n;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::vector<FamilyResult> run_training(const TrainOptions& opt, const GpuRegistry& gpus) {
  configure_torch_threads();
  const bool collected = !opt.data_dirs.empty();
  std::vector<Family> fams = opt.families;
  const bool amd = opt.vendor == "amd";
  training_gpus(opt.vendor);  // validates the vendor
  // Before any data is read, a refused --out says so first: onto an input, onto the bundled
  // weights, onto a foreign folder (the full input check, with the data roots, follows below).
  {
    std::vector<std::string> given = opt.data_dirs;
    given.insert(given.end(), opt.added_dirs.begin(), opt.added_dirs.end());
    given.push_back(opt.predictor_config_dir);
    check_output_not_input(opt.out_dir, given, "--out");
    check_weights_out(opt.out_dir, opt.force);
  }
  for (const auto& d : opt.added_dirs)
    if (!fs::is_directory(d)) throw ConfigError(d + ": --add-data: not a folder (one written by tilecast collect)");
  if (collected && !opt.added_dirs.empty())
    throw ConfigError("--data and --add-data: --data trains on the collected folders alone, --add-data adds them to "
                      "the default training data; give one of them");
  if (amd && (collected || !opt.added_dirs.empty()))
    throw ConfigError(std::string("--vendor amd trains on NeuSight's AMD data; ") + (collected ? "--data" : "--add-data") +
                      " folders carry their own GPU");
  if (amd)
    for (Family f : fams)
      if (is_llm_kernel_family(f))
        throw ConfigError(std::string("--vendor amd: family '") + family_name(f) +
                          "' has no AMD data (the AMD set covers bmm, linear, elementwise, softmax, layernorm)");
  const bool only_llm = !fams.empty() && std::all_of(fams.begin(), fams.end(), is_llm_kernel_family);
  if (!collected && !only_llm && !neusight_dir_present(opt.neusight_dir))
    throw ConfigError(opt.neusight_dir + ": NeuSight data not found (pass --neusight-dir or set TILECAST_NEUSIGHT_DIR)");
  const bool llm_present = fs::is_directory(fs::path(opt.llm_dir) / "aiconfigurator");
  if (only_llm && !collected && !llm_present)
    throw ConfigError(opt.llm_dir + ": LLM kernel data not found (pass --llm-dir or set TILECAST_LLM_KERNELS_DIR)");
  // Collected data: the families present; NeuSight's: its five, plus the LLM-era families
  // from ../shared/llm-kernels when that folder is there.
  // --add-data: the collected folders' files join the default ones, family by family.
  auto collected_files = [](const std::vector<std::string>& dirs, Family f) {
    std::vector<std::string> files;
    for (const auto& d : dirs) {
      fs::path p = fs::path(d) / (std::string(family_name(f)) + ".csv");
      if (fs::exists(p)) files.push_back(p.string());
    }
    return files;
  };
  auto default_files = [&](Family f) {
    if (is_llm_kernel_family(f)) {
      if (!llm_present || amd) return std::vector<std::string>{};
      if (f == Family::kMemoryOp && !fs::is_directory(fs::path(opt.llm_dir) / "vidur")) return std::vector<std::string>{};
      return llm_training_files(opt.llm_dir, f);
    }
    return training_files(opt.neusight_dir, f, opt.vendor);
  };
  auto files_for = [&](Family f) {
    if (collected) return collected_files(opt.data_dirs, f);
    std::vector<std::string> files = default_files(f);
    const std::vector<std::string> added = collected_files(opt.added_dirs, f);
    // Added rows are meant to join the default training GPUs' (forecasts and the manifest say
    // "trained on"); with no default data for the family they would train it alone.
    if (files.empty() && !added.empty())
      throw ConfigError(added.front() + ": --add-data adds to the default training data, and family " +
                        family_name(f) + " has none here (" +
                        (is_llm_kernel_family(f) ? opt.llm_dir + ": LLM-era kernel data" : opt.neusight_dir) +
                        " not found); --data trains on the collected folders alone");
    files.insert(files.end(), added.begin(), added.end());
    return files;
  };
  if (fams.empty())
    for (Family f : kAllFamilies)
      if (!files_for(f).empty()) fams.push_back(f);
  if (fams.empty()) throw ConfigError("no training data: no <family>.csv in the --data folders");
  if (!opt.added_dirs.empty()) {
    size_t added = 0;
    for (Family f : fams) added += collected_files(opt.added_dirs, f).size();
    if (added == 0) {
      std::string names;
      for (Family f : fams) names += (names.empty() ? "" : " ") + std::string(family_name(f));
      throw ConfigError(opt.added_dirs.front() + ": --add-data: no <family>.csv of the families trained (" + names +
                        ") in the added folders");
    }
  }

  // The tile table always comes from all GEMM training rows, so that every family's
  // checkpoint sees the same tiles the predictor will use.
  TileTable tiles;
  std::vector<std::string> gemm_files;
  for (Family f : {Family::kBmm, Family::kLinear}) {
    if (only_llm) break;  // the LLM-era families use no tile table; keep the folder's
    auto files = files_for(f);
    gemm_files.insert(gemm_files.end(), files.begin(), files.end());
  }
  std::map<Family, std::vector<KernelSample>> gemm_rows;
  size_t gemm_excluded = 0;
  for (const auto& f : gemm_files) {
    auto rows = read_kernel_csv(f);
    // A left-out GPU's kernel choices stay out of the tile table too (leave-one-GPU-out).
    const size_t before = rows.size();
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](const KernelSample& s) {
                                return std::find(opt.exclude_gpus.begin(), opt.exclude_gpus.end(), s.device) !=
                                       opt.exclude_gpus.end();
                              }),
               rows.end());
    gemm_excluded += before - rows.size();
    tiles.add_samples(rows);
    auto& dst = gemm_rows[op_family(rows.empty() ? OpKind::kBmm : rows.front().query.op)];
    dst.insert(dst.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
  }
  if (!opt.exclude_gpus.empty() && !gemm_files.empty()) {
    TC_LOG(Info) << "bmm, linear: left out " << gemm_excluded
                 << " rows of the excluded GPUs, from training and from the tile table";
  }
  // Outputs never overwrite inputs; the weights folder is replaced only by a finished run.
  std::vector<std::string> inputs = opt.data_dirs;
  inputs.insert(inputs.end(), opt.added_dirs.begin(), opt.added_dirs.end());
  if (!collected) inputs.push_back(opt.neusight_dir);
  if (!collected && llm_present) inputs.push_back(opt.llm_dir);
  inputs.push_back(opt.predictor_config_dir);
  check_output_not_input(opt.out_dir, inputs, "--out");
  WeightsStaging staging(opt.out_dir, opt.force);
  const std::string dir = staging.dir();
  WeightsManifest manifest;
  std::set<std::string> replaced;
  for (Family f : fams) replaced.insert(family_name(f));
  try {
    manifest = load_manifest_or_empty(dir, replaced);
  } catch (const ConfigError& e) {
    // A whole retrain starts a new manifest; a partial one would silently drop the families
    // it keeps, so it stops (before anything is installed).
    if (!opt.families.empty())
      throw ConfigError(std::string(e.what()) + "; the families kept from it cannot be loaded: retrain them too "
                        "(add them to --family) or use another --out");
    TC_LOG(Warn) << "starting a new manifest: " << e.what();
    manifest = WeightsManifest{};
  }
  manifest.feature_schema_version = kFeatureSchemaVersion;
  const fs::path tile_path = fs::path(dir) / manifest.tile_table;
  if (!gemm_files.empty() || !fs::exists(tile_path)) {
    tiles.save(tile_path.string());
    TC_LOG(Info) << "tile table: " << tiles.size() << " shape bins from " << gemm_files.size() << " files";
  } else {
    TC_LOG(Info) << "tile table: no GEMM rows in the data, keeping " << tile_path.filename().string();
  }

  std::vector<FamilyResult> results;
  for (Family fam : fams) {
    if (fam == Family::kMemoryOp) {  // physics coefficients, no network
      const PredictorConfig mcfg = load_family_config(opt.predictor_config_dir, fam);
      FamilyResult r = fit_memory_ops(files_for(fam), opt.exclude_gpus, gpus, manifest.memory_ops,
                                      opt.holdout_shapes_pct, mcfg.l2_resident_fraction);
      save_manifest(dir, manifest);
      results.push_back(r);
      continue;
    }
    PredictorConfig cfg = load_family_config(opt.predictor_config_dir, fam);
    if (opt.epochs > 0) cfg.epochs = opt.epochs;
    if (opt.max_rows >= 0) cfg.max_rows = opt.max_rows;
    if (opt.seed >= 0) cfg.seed = static_cast<uint64_t>(opt.seed);
    auto files = files_for(fam);
    if (files.empty()) throw ConfigError(std::string("no training data for family ") + family_name(fam));
    std::vector<KernelSample> rows;
    if (is_gemm(fam)) {
      rows = std::move(gemm_rows[fam]);
    } else {
      for (const auto& f : files) {
        auto r = read_kernel_csv(f);
        rows.insert(rows.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
      }
    }
    // Layer-op files hold several families (GEMMs and memory ops): keep this one's rows.
    rows.erase(std::remove_if(rows.begin(), rows.end(), [&](const KernelSample& s) { return op_family(s.query.op) != fam; }),
               rows.end());
    // Several kernel libraries measured the same shapes on one GPU (B200 attention: trtllm_mha
    // and Triton; B200 MoE: flashinfer and Triton): train on the one a forecast for that GPU
    // assumes, chosen from its spec (kernel_library). A GPU with no rows of that library (a
    // lab's own `tilecast collect` run: eager or SDPA attention, the eager MoE loop) keeps all
    // of its rows: they are the only measurements of it. Attention rows that cannot have run
    // the attention they describe (implausible_row: beyond the compute roofline, or beyond DRAM
    // for the bytes that L2 cannot hold; not_full_attention: window-0 rows of a file whose
    // window-0 rows run as fast as its windowed ones) are measurement artefacts, left out of
    // training (forecasts never see the row). So are SGLang's window-0 rows that measured each
    // query against its own key alone (sglang_window_zero_is_own_key; eval-kernels forecasts them
    // so): trained on as such, leave one GPU out got worse (docs/accuracy.md, "What SGLang's
    // window 0 measured"). So are the expert-parallel MoE rows of a file whose ranks ran about the
    // whole layer (moe_ep_not_rank_local: the A100's SGLang 0.5.10 file).
    {
      const LibraryFilterCounts n = filter_spec_library(rows, gpus);
      if (n.other_library + n.impossible_compute + n.impossible_memory + n.sglang_own_key + n.not_full_attention +
              n.moe_ep_not_rank_local >
          0) {
        TC_LOG(Info) << family_name(fam) << ": left out " << n.other_library
                     << " rows of another kernel library than the spec's choice, " << n.sglang_own_key
                     << " SGLang window-0 rows of each query against its own key alone, " << n.not_full_attention
                     << " full-attention rows no slower than their windowed twins, " << n.moe_ep_not_rank_local
                     << " expert-parallel MoE rows whose ranks ran about the whole layer, " << n.impossible_compute
                     << " faster than the compute roofline (the sheet peak) and " << n.impossible_memory
                     << " faster than 1.5x DRAM for the bytes beyond L2";
      }
    }
    if (opt.holdout_shapes_pct > 0) {
      const auto before = rows.size();
      rows.erase(std::remove_if(rows.begin(), rows.end(),
                                [&](const KernelSample& s) { return shape_held_out(s.query, opt.holdout_shapes_pct); }),
                 rows.end());
      TC_LOG(Info) << family_name(fam) << ": held out " << before - rows.size() << " rows of "
                   << opt.holdout_shapes_pct << " % of the shapes (--holdout-shapes)";
    }
    if (!opt.exclude_gpus.empty() && !is_gemm(fam)) {  // bmm, linear: left out when read, above
      const auto before = rows.size();
      rows.erase(std::remove_if(rows.begin(), rows.end(),
                                [&](const KernelSample& s) {
                                  return std::find(opt.exclude_gpus.begin(), opt.exclude_gpus.end(), s.device) !=
                                         opt.exclude_gpus.end();
                                }),
                 rows.end());
      TC_LOG(Info) << family_name(fam) << ": left out " << before - rows.size() << " rows of the excluded GPUs";
    }
    if (!opt.added_dirs.empty()) {
      std::map<std::string, size_t> per_gpu;
      for (const auto& r : rows) ++per_gpu[r.device];
      std::string each;
      for (const auto& kv : per_gpu) each += (each.empty() ? "" : ", ") + kv.first + " " + std::to_string(kv.second);
      TC_LOG(Info) << family_name(fam) << ": rows per GPU (default data and --add-data): " << each;
    }
    // Rows of a fallback kernel library (Triton's prefill on datacenter Blackwell) train no
    // network: their own fitted roofline, on the work their kernel does, forecasts them
    // (fallback_library_row; docs/accuracy.md, "Triton's prefill on Blackwell"). Only rows that
    // say they ran it: a lab's own collect run of such shapes (SDPA) stays with the network.
    std::vector<KernelSample> fallback_rows;
    if (is_attention(fam)) {
      auto fb = std::stable_partition(rows.begin(), rows.end(), [&](const KernelSample& s) {
        return !fallback_library_row(s, row_gpu(s, gpus));
      });
      fallback_rows.assign(std::make_move_iterator(fb), std::make_move_iterator(rows.end()));
      rows.erase(fb, rows.end());
    }
    if (rows.size() < 4) {
      std::string names;
      for (const auto& f : files) names += (names.empty() ? "" : ", ") + f;
      throw DataError(names + ": too few rows to train " + family_name(fam) + " (" + std::to_string(rows.size()) +
                      " usable rows; at least 4 needed)");
    }
    TC_LOG(Info) << "training " << family_name(fam) << " on " << rows.size() << " rows ("
                 << cfg.num_layers << "x" << cfg.hidden_size << ", lr " << cfg.lr << ", batch "
                 << cfg.batch_size << ", " << cfg.epochs << " epochs, " << cfg.ensemble << " member(s))";
    FamilyEntry e;
    FamilyResult r;
    double seconds = 0;
    // One floor for every member: fitted on the family's rows of the training GPUs.
    std::map<std::string, double> p1;
    const double floor_ms = cfg.launch_floor ? fit_launch_floor_ms(rows, &p1) : 0;
    if (cfg.launch_floor) {
      std::string each;
      for (const auto& kv : p1) each += (each.empty() ? "" : ", ") + kv.first + " " + std::to_string(kv.second * 1e3);
      TC_LOG(Info) << family_name(fam) << ": launch floor " << floor_ms * 1e3 << " us (1st-percentile us per GPU: "
                   << each << ")";
    }
    e.launch_floor_us = floor_ms * 1e3;
    if (!fallback_rows.empty() && !cfg.fits_roofline()) {
      TC_LOG(Warn) << family_name(fam) << ": left out " << fallback_rows.size()
                   << " rows of a fallback library (Triton's prefill on Blackwell): the config fits no roofline "
                      "to forecast them with (prior: true), so they are forecast on the GPU's own library's path";
    }
    if (cfg.fits_roofline()) {  // the network's base (prior), or the forecast on unseen GPUs
      const bool cycles = cfg.prior_floor == "cycles";
      e.prior = fit_family_roofline(rows, tiles, gpus, cycles, cfg.prior_cap_memory);
      const char* unit = cycles ? " kcycles" : " us";
      TC_LOG(Info) << family_name(fam) << ": fitted roofline: floor "
                   << (cycles ? e.prior.floor_kcycles : e.prior.floor_us) << unit << ", "
                   << (cycles ? e.prior.wave_kcycles : e.prior.wave_us) << unit << " per wave, "
                   << e.prior.eta_compute << " of the compute peak, " << e.prior.eta_memory << " of DRAM bandwidth";
      if (cfg.prior_cta_by_library || cfg.prior_sm_rate_by_library || cfg.prior_floor_by_library) {
        const auto costs = fit_library_costs(rows, tiles, gpus, e.prior, cfg.prior_cta_by_library,
                                             cfg.prior_sm_rate_by_library, cfg.prior_floor_by_library);
        for (const auto& [library, c] : costs) {
          if (c.cta_ns > 0) {
            e.library_cta_ns[library] = c.cta_ns;
            TC_LOG(Info) << family_name(fam) << ": " << library << " costs " << c.cta_ns
                         << " ns a CTA (the fitted roofline's floor where it forecasts alone)";
          }
          if (c.floor_kcycles > 0) {
            e.library_floor_kcycles[library] = c.floor_kcycles;
            TC_LOG(Info) << family_name(fam) << ": " << library << "'s launches start in " << c.floor_kcycles
                         << " kcycles (its floor where the fitted roofline forecasts alone)";
          }
          if (c.sm_bytes_per_cycle > 0) {
            e.library_sm_bytes_per_cycle[library] = c.sm_bytes_per_cycle;
            TC_LOG(Info) << family_name(fam) << ": " << library << "'s loads sustain " << c.sm_bytes_per_cycle
                         << " bytes per SM-cycle (in series with DRAM where the fitted roofline forecasts alone)";
          }
        }
        if (costs.empty()) {
          TC_LOG(Info) << family_name(fam) << ": no library's own cost lowers the fit";
        }
      }
      if (cfg.prior_base_by_library) {
        for (const auto& [library, samples] : rows_by_library(rows, gpus)) {
          const FittedRoofline p = fit_family_roofline(samples, tiles, gpus, cycles, cfg.prior_cap_memory);
          e.library_prior[library] = p;
          TC_LOG(Info) << family_name(fam) << ": " << library << "'s own fitted roofline (the networks' base for its "
                       << samples.size() << " rows): floor " << (cycles ? p.floor_kcycles : p.floor_us) << unit
                       << ", " << (cycles ? p.wave_kcycles : p.wave_us) << unit << " per wave, " << p.eta_compute
                       << " of the compute peak, " << p.eta_memory << " of DRAM bandwidth";
        }
      }
      if (!fallback_rows.empty()) {
        std::vector<KernelSample> physics = fallback_rows;  // the work the fallback kernel does
        for (auto& s : physics) s.query = fallback_physics_query(s.query);
        e.fallback_prior = fit_family_roofline(physics, tiles, gpus, cycles, false, 0.005);
        e.has_fallback_prior = true;
        TC_LOG(Info) << family_name(fam) << ": fitted roofline of the " << fallback_rows.size()
                     << " rows of a fallback library (Triton's prefill on Blackwell; the base of a network of their own from " << kMinFallbackNetworkRows << " rows up): floor "
                     << (cycles ? e.fallback_prior.floor_kcycles : e.fallback_prior.floor_us) << unit << ", "
                     << (cycles ? e.fallback_prior.wave_kcycles : e.fallback_prior.wave_us) << unit << " per wave, "
                     << e.fallback_prior.eta_compute << " of the compute peak, " << e.fallback_prior.eta_memory
                     << " of DRAM bandwidth";
      }
    }
    // cfg.ensemble members into `m` (the family's, or its fallback network's), checkpoints
    // <family><suffix>[.sN].pt; members differ only in seed: initialisation, shuffling and
    // validation split. Returns the last member's result (its `interrupted` ends the loop).
    const auto train_members = [&](auto& m, const std::vector<KernelSample>& data, const std::string& suffix,
                                   double floor, const FittedRoofline* base, bool fallback_base,
                                   const std::map<std::string, FittedRoofline>* library_base = nullptr) {
      FamilyResult last;
      for (int member = 0; member < cfg.ensemble; ++member) {
        PredictorConfig mc = cfg;
        mc.seed = cfg.seed + static_cast<uint64_t>(member);
        const std::string file =
            std::string(family_name(fam)) + suffix + (member ? ".s" + std::to_string(member) : "") + ".pt";
        const std::string path = (fs::path(dir) / file).string();
        last = train_family(mc, data, tiles, gpus, path, opt.quiet, floor, base, fallback_base, library_base);
        seconds += last.seconds;
        if (!fs::exists(path)) throw RuntimeError(path + ": no checkpoint written (interrupted before epoch 1?)");
        add_member(m, dir, file, net_file_for(file), last.layer_widths);
        m.member_val_mape_pct.push_back(last.val_mape_pct);
        if (last.interrupted) break;
      }
      return last;
    };
    r = train_members(e, rows, "", floor_ms, cfg.prior ? &e.prior : nullptr, false,
                      cfg.prior_base_by_library ? &e.library_prior : nullptr);
    // The fallback rows' own network, correcting their fitted roofline (members as the family's;
    // a few rows train none: the roofline alone forecasts them).
    if (e.has_fallback_prior && !r.interrupted && fallback_rows.size() >= kMinFallbackNetworkRows) {
      TC_LOG(Info) << family_name(fam) << ": training the fallback library's network on " << fallback_rows.size()
                   << " rows";
      auto& fbn = e.fallback_network;
      const FamilyResult f = train_members(fbn, fallback_rows, ".fallback", 0, &e.fallback_prior, true);
      fbn.feature_min = f.feature_min;
      fbn.feature_max = f.feature_max;
      fbn.rows_train = f.rows_train;
      fbn.rows_val = f.rows_val;
      TC_LOG(Info) << family_name(fam) << ": fallback network: best val MAPE of the last member " << f.val_mape_pct
                   << "% (" << f.rows_val << " validation rows)";
      r.interrupted = f.interrupted;
      fbn.training_gpus = devices_of(fallback_rows);
    }
    e.features = feature_names(fam);
    // Forecasts clamp to the training range (extrapolation guard): the LLM-era families, and
    // the AMD set, whose few thousand rows per family leave whole-model shapes outside them
    // (MI100 <-> MI210 leave-one-out: docs/accuracy.md).
    // The other families record the range and only report queries outside it.
    e.feature_min = r.feature_min;
    e.feature_max = r.feature_max;
    e.clamp_features = is_llm_kernel_family(fam) || amd;
    e.config = cfg;
    e.config.ensemble = static_cast<int>(e.files.size());
    e.rows_train = r.rows_train;
    e.rows_val = r.rows_val;
    e.val_mape_pct = 0;
    for (double v : e.member_val_mape_pct) e.val_mape_pct += v / e.member_val_mape_pct.size();
    e.best_epoch = r.best_epoch;
    e.train_seconds = seconds;
    r.seconds = seconds;
    e.data_hash = files_hash(files);
    if (collected || !opt.added_dirs.empty() || is_llm_kernel_family(fam) || !opt.exclude_gpus.empty()) {
      e.training_gpus = devices_of(rows);
    } else {
      e.training_gpus = training_gpus(opt.vendor);
    }
    // Their specs, for network_gpus: twins (the GPUs of an LLM-era family all have one: row_gpu).
    e.training_gpu_specs.clear();
    for (const auto& name : e.training_gpus)
      if (const GpuSpec* g = gpus.find(name)) {
        GpuSpec s;
        s.cuda_name = name;
        s.vendor = g->vendor;
        s.compute_capability = g->compute_capability;
        s.num_sms = g->num_sms;
        s.mem_bw_gbps = g->mem_bw_gbps;
        e.training_gpu_specs.push_back(s);
      }
    e.trained_at = utc_now();
    e.holdout_shapes_pct = opt.holdout_shapes_pct;
    manifest.families[family_name(fam)] = e;
    save_manifest(dir, manifest);
    TC_LOG(Info) << family_name(fam) << ": best val MAPE " << e.val_mape_pct << "% (mean of "
                 << e.files.size() << " members), " << static_cast<int>(r.seconds) << " s, "
                 << static_cast<int>(r.samples_per_s) << " samples/s";
    r.val_mape_pct = e.val_mape_pct;
    results.push_back(r);
    if (r.interrupted) break;
  }
  // The training GPUs of every family the folder holds, each spec once.
  std::set<std::string> trained_on(manifest.memory_ops.training_gpus.begin(), manifest.memory_ops.training_gpus.end());
  for (const auto& kv : manifest.families) trained_on.insert(kv.second.training_gpus.begin(), kv.second.training_gpus.end());
  record_gpu_specs(dir, std::vector<std::string>(trained_on.begin(), trained_on.end()), gpus);
  if (!results.empty() && results.back().interrupted) {
    const std::string kept = staging.keep_interrupted();
    TC_LOG(Warn) << "interrupted: " << opt.out_dir << " left unchanged; what was finished is in " << kept;
  } else {
    staging.install();
    TC_LOG(Info) << "weights installed in " << opt.out_dir;
  }
  return results;
}

int record_feature_ranges(const std::string& dir, const std::string& neusight_dir, const GpuRegistry& gpus) {
  auto lock = lock_weights_folder(dir);
  WeightsManifest m = load_manifest(dir);
  const TileTable tiles = TileTable::load((fs::path(dir) / m.tile_table).string());
  int done = 0;
  for (auto& kv : m.families) {
    FamilyEntry& e = kv.second;
    const Family fam = e.config.family;
    if (!e.feature_min.empty() || is_llm_kernel_family(fam)) continue;
    if (e.training_gpus != training_gpus("nvidia"))
      throw ConfigError(dir + ": family '" + kv.first + "' was not trained on NeuSight's five NVIDIA GPUs; retrain "
                        "it to record its feature ranges");
    std::vector<KernelSample> rows;
    for (const auto& f : training_files(neusight_dir, fam)) {
      auto r = read_kernel_csv(f);
      rows.insert(rows.end(), r.begin(), r.end());
    }
    const size_t nf = num_features(fam);
    std::vector<float> x(nf);
    e.feature_min.assign(nf, std::numeric_limits<double>::infinity());
    e.feature_max.assign(nf, -std::numeric_limits<double>::infinity());
    for (const auto& s : rows) {
      const GpuSpec* gpu = gpus.find(s.device);
      if (!gpu) throw DataError(where(s.file, s.line) + ": column 'Device': no GPU spec for '" + s.device + "'");
      featurize(s.query, *gpu, tiles, x.data());
      for (size_t c = 0; c < nf; ++c) {
        e.feature_min[c] = std::min<double>(e.feature_min[c], x[c]);
        e.feature_max[c] = std::max<double>(e.feature_max[c], x[c]);
      }
    }
    e.clamp_features = false;
    ++done;
  }
  save_manifest(dir, m);
  return done;
}

int export_networks(const std::string& dir) {
  auto lock = lock_weights_folder(dir);
  WeightsManifest m = load_manifest(dir);
  int written = 0;
  for (auto& kv : m.families) {
    // The family's members, then its fallback network's (both keep their checkpoints' order).
    const auto convert = [&](auto& m) {
      m.net_files.clear();
      m.net_sha256.clear();
      for (size_t i = 0; i < m.files.size(); ++i) {
        const std::string pt = (fs::path(dir) / m.files[i]).string();
        if (!fs::exists(pt)) throw ConfigError(pt + ": checkpoint listed in manifest.yaml is missing");
        if (sha256_file(pt) != m.sha256[i])
          throw ConfigError(pt + ": sha256 differs from manifest.yaml (corrupt or replaced checkpoint; restore it "
                            "or retrain)");
        const std::string net = net_file_for(m.files[i]);
        to_dense(load_checkpoint(pt, m.layer_widths[i])).save((fs::path(dir) / net).string());
        m.net_files.push_back(net);
        m.net_sha256.push_back(sha256_file((fs::path(dir) / net).string()));
        ++written;
      }
    };
    convert(kv.second);
    if (kv.second.has_fallback_network()) convert(kv.second.fallback_network);
  }
  save_manifest(dir, m);
  return written;
}

}  // namespace tilecast::trainer
