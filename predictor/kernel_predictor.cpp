#include "predictor/kernel_predictor.h"

#include <filesystem>

#include "core/error.h"
#include "core/featurize.h"
#include "core/fs_util.h"
#include "core/units.h"
#include "trainer/mlp.h"

namespace fs = std::filesystem;

namespace tilecast::predictor {

struct KernelPredictor::Impl {
  trainer::WeightsManifest manifest;
  TileTable tiles;
  std::vector<std::vector<trainer::Mlp>> models;  // by Family index: ensemble members; empty if absent
  std::vector<std::vector<double>> feature_min, feature_max;  // by Family index; empty = no clamp
};

KernelPredictor::KernelPredictor(const std::string& dir) : impl_(std::make_unique<Impl>()) {
  trainer::configure_torch_threads();
  impl_->manifest = trainer::load_manifest(dir);
  const std::string tile_path = (fs::path(dir) / impl_->manifest.tile_table).string();
  if (!fs::exists(tile_path)) throw ConfigError(tile_path + ": tile table missing from weights folder");
  impl_->tiles = TileTable::load(tile_path);
  impl_->models.resize(static_cast<size_t>(Family::kCount));
  impl_->feature_min.resize(static_cast<size_t>(Family::kCount));
  impl_->feature_max.resize(static_cast<size_t>(Family::kCount));
  for (const auto& kv : impl_->manifest.families) {
    impl_->feature_min[static_cast<size_t>(kv.second.config.family)] = kv.second.feature_min;
    impl_->feature_max[static_cast<size_t>(kv.second.config.family)] = kv.second.feature_max;
  }
  for (const auto& kv : impl_->manifest.families) {
    const auto& e = kv.second;
    for (size_t i = 0; i < e.files.size(); ++i) {
      const std::string path = (fs::path(dir) / e.files[i]).string();
      if (!fs::exists(path)) throw ConfigError(path + ": checkpoint listed in manifest.yaml is missing");
      // A flipped byte or a checkpoint copied in from elsewhere is refused before it is read.
      if (sha256_file(path) != e.sha256[i])
        throw ConfigError(path + ": sha256 differs from manifest.yaml (corrupt or replaced checkpoint; "
                          "restore it or retrain)");
      trainer::Mlp m(static_cast<int64_t>(e.features.size()), e.config.hidden_size, e.config.num_layers);
      try {
        torch::load(m, path);
      } catch (const c10::Error& err) {
        throw ConfigError(path + ": cannot load checkpoint (trained with another architecture than "
                          "manifest.yaml says)");
      }
      if (trainer::layer_widths(m) != e.layer_widths[i])
        throw ConfigError(path + ": layer widths differ from manifest.yaml's 'layer_widths'");
      m->eval();
      impl_->models[static_cast<size_t>(e.config.family)].push_back(m);
    }
  }
}

KernelPredictor::~KernelPredictor() = default;
KernelPredictor::KernelPredictor(KernelPredictor&&) noexcept = default;

bool KernelPredictor::has_family(Family f) const {
  if (f == Family::kMemoryOp) return !impl_->manifest.memory_ops.ops.empty();
  return !impl_->models[static_cast<size_t>(f)].empty();
}
const trainer::WeightsManifest& KernelPredictor::manifest() const { return impl_->manifest; }
const TileTable& KernelPredictor::tiles() const { return impl_->tiles; }

std::vector<KernelPrediction> KernelPredictor::predict(const std::vector<KernelQuery>& queries,
                                                       const GpuSpec& gpu) const {
  std::vector<KernelPrediction> out(queries.size());
  std::vector<std::vector<size_t>> by_family(static_cast<size_t>(Family::kCount));
  for (size_t i = 0; i < queries.size(); ++i)
    by_family[static_cast<size_t>(op_family(queries[i].op))].push_back(i);

  torch::NoGradGuard no_grad;
  for (Family fam : kAllFamilies) {
    const auto& idx = by_family[static_cast<size_t>(fam)];
    if (idx.empty()) continue;
    if (fam == Family::kMemoryOp) {
      predict_memory_ops(queries, idx, gpu, out);
      continue;
    }
    const auto& members = impl_->models[static_cast<size_t>(fam)];
    const int64_t nf = static_cast<int64_t>(num_features(fam));
    auto x = torch::empty({static_cast<int64_t>(idx.size()), nf}, torch::kFloat32);
    float* xp = x.data_ptr<float>();
    for (size_t j = 0; j < idx.size(); ++j) {
      const KernelQuery& q = queries[idx[j]];
      validate_query(q, "query");
      PreparedKernel p = featurize(q, gpu, impl_->tiles, xp + j * nf);
      KernelPrediction& r = out[idx[j]];
      r.launch = p.launch;
      r.base_ms = s_to_ms(p.bounds.base_s);
      r.bound = p.bounds.compute_s >= p.bounds.memory_s ? "compute" : "memory";
      r.roofline_ms = s_to_ms(roofline_s(q, gpu));
      // LLM-era families: a feature outside the training range is clamped to it (a ReLU
      // network extrapolates linearly in log space) and reported.
      const auto& lo = impl_->feature_min[static_cast<size_t>(fam)];
      const auto& hi = impl_->feature_max[static_cast<size_t>(fam)];
      if (!lo.empty()) {
        const auto& names = feature_names(fam);
        float* row = xp + j * nf;
        for (int64_t c = 0; c < nf; ++c) {
          const double v = row[c];
          if (v < lo[c] - 1e-6 || v > hi[c] + 1e-6) {
            r.out_of_range.push_back(names[c]);
            row[c] = static_cast<float>(std::min(std::max(v, lo[c]), hi[c]));
          }
        }
      }
    }
    // After featurising, so that a query the GPU cannot run (FP8 on an A100) says so first.
    if (members.empty())
      throw ConfigError(std::string("no trained weights for family '") + family_name(fam) +
                        "' in the weights folder (run `tilecast train --family " + family_name(fam) + "`)");
    // Ensemble: mean of the members' log-slowdowns (a geometric mean of their latencies).
    torch::Tensor o, lo, hi;
    for (auto m : members) {
      auto om = m->forward(x).clamp(trainer::kMinLogSlowdown, trainer::kMaxLogSlowdown);
      o = o.defined() ? o + om : om;
      lo = lo.defined() ? torch::minimum(lo, om) : om;
      hi = hi.defined() ? torch::maximum(hi, om) : om;
    }
    o = o / static_cast<double>(members.size());
    auto slow = torch::exp(o.to(torch::kFloat64)), slow_lo = torch::exp(lo.to(torch::kFloat64)),
         slow_hi = torch::exp(hi.to(torch::kFloat64));
    const double* sp = slow.data_ptr<double>();
    const double* sl = slow_lo.data_ptr<double>();
    const double* sh = slow_hi.data_ptr<double>();
    for (size_t j = 0; j < idx.size(); ++j) {
      KernelPrediction& r = out[idx[j]];
      r.latency_ms = r.base_ms * sp[j];
      r.utilisation = 1.0 / sp[j];
      r.member_min_ms = r.base_ms * sl[j];
      r.member_max_ms = r.base_ms * sh[j];
    }
  }
  return out;
}

void KernelPredictor::predict_memory_ops(const std::vector<KernelQuery>& queries, const std::vector<size_t>& idx,
                                         const GpuSpec& gpu, std::vector<KernelPrediction>& out) const {
  for (size_t i : idx) {
    const KernelQuery& q = queries[i];
    validate_query(q, "query");
    KernelPrediction& r = out[i];
    r.launch = launch_info(q, gpu);
    const KernelBounds kb = kernel_bounds(q, gpu, r.launch);
    r.base_ms = s_to_ms(kb.base_s);
    r.bound = "memory";
    r.roofline_ms = s_to_ms(roofline_s(q, gpu));
    const auto& ops = impl_->manifest.memory_ops.ops;
    auto it = ops.find(op_name(q.op));
    if (it == ops.end())
      throw ConfigError(std::string("no fitted coefficients for memory op '") + op_name(q.op) +
                        "' in the weights folder (run `tilecast train --family memory_op`)");
    r.latency_ms = s_to_ms(memory_op_latency_s(q, gpu, it->second));
    r.utilisation = r.base_ms / r.latency_ms;
    r.member_min_ms = r.member_max_ms = r.latency_ms;
  }
}

KernelPrediction KernelPredictor::predict(const KernelQuery& q, const GpuSpec& gpu) const {
  return predict(std::vector<KernelQuery>{q}, gpu).front();
}

}  // namespace tilecast::predictor
