#include "predictor/kernel_predictor.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "core/featurize.h"
#include "core/fs_util.h"
#include "core/units.h"
#include "predictor/dense_mlp.h"

namespace fs = std::filesystem;

namespace tilecast::predictor {

namespace {
// Whether a family's network corrects forecasts on a GPU of this standing (config network_gpus:
// all, trained, twins).
bool network_corrects(const std::string& gate, const GpuStanding& s) {
  return gate == "all" || s.trained_on || (gate == "twins" && s.twin);
}

// Features of one row outside the training range [lo, hi]: named in r.out_of_range and, with
// `clamp`, moved into it (a ReLU network extrapolates linearly in log space).
void check_training_range(float* row, const std::vector<double>& lo, const std::vector<double>& hi,
                          const std::vector<std::string>& names, bool clamp, KernelPrediction& r) {
  for (size_t c = 0; c < names.size(); ++c) {
    const double v = row[c];
    if (v < lo[c] - 1e-6 || v > hi[c] + 1e-6) {
      r.out_of_range.push_back(names[c]);
      r.clamped = clamp;
      if (clamp) row[c] = static_cast<float>(std::min(std::max(v, lo[c]), hi[c]));
    }
  }
}

// An ensemble's output over n rows of features: per row the mean of the members' log-slowdowns
// (each clamped to [kMinLogSlowdown, kMaxLogSlowdown]; the mean is a geometric mean of their
// latencies) and their range; all 0 without members.
struct EnsembleOutput {
  std::vector<double> mean, lo, hi;
};
EnsembleOutput run_ensemble(const std::vector<DenseMlp>& members, const float* x, size_t n) {
  EnsembleOutput e{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
  std::vector<float> om(n);
  for (size_t k = 0; k < members.size(); ++k) {
    members[k].forward(x, static_cast<int64_t>(n), om.data());
    for (size_t j = 0; j < n; ++j) {
      const double v = std::min(std::max(static_cast<double>(om[j]), kMinLogSlowdown), kMaxLogSlowdown);
      e.mean[j] += v / static_cast<double>(members.size());
      e.lo[j] = k ? std::min(e.lo[j], v) : v;
      e.hi[j] = k ? std::max(e.hi[j], v) : v;
    }
  }
  return e;
}

// The fitted roofline's weight in a blend on a GPU outside network_gpus. Where the fitted
// roofline is the network's base (`prior` in the config), its fixed costs (floor and cost per
// wave, fitted in cycles as a compromise over the training GPUs: their fastest GEMMs run in 4.3-5.6
// thousand cycles, the folds fit 6-10 thousand for a floor and one wave) are what the network
// learned to correct on every training GPU, so they take the network's forecast: the family's
// weight w scales by the share of the fitted forecast beyond them. Leave one GPU out, GEMM, seeds
// 0 / 1: the eleven cells' mean 26.5 / 26.4 -> 26.1 / 26.1 % (docs/accuracy.md, "The fitted
// roofline's fixed costs take no share"). MoE, whose network corrects the plain bound, keeps w.
// `fixed_ms`: the base's fixed costs (fitted_fixed_s), 0 where the base is no fitted roofline.
double blend_weight(double w, double fixed_ms, double base_ms) {
  if (w <= 0 || w >= 1 || !(base_ms > 0)) return w;
  return w * std::max(0.0, 1.0 - fixed_ms / base_ms);
}

// In log space: (1 - w) x the network's forecast (base x exp(log_slowdown)) + w x the fitted
// roofline alone (prior).
double blend_ms(double base_ms, double prior_ms, double w, double log_slowdown) {
  if (w <= 0) return base_ms * std::exp(log_slowdown);
  if (w >= 1) return prior_ms;
  return std::exp((1 - w) * (std::log(base_ms) + log_slowdown) + w * std::log(prior_ms));
}
}  // namespace

// Networks and the tile table are read when a forecast first needs them (a forecast of
// one GEMM reads one family's files, not all 26 MB): the manifest and the presence of every
// listed file are checked up front; a file's sha256 and format when it is read.
struct KernelPredictor::Impl {
  std::string dir;
  trainer::WeightsManifest manifest;
  std::string tile_path;
  std::optional<TileTable> tiles;
  std::vector<const trainer::FamilyEntry*> entries;  // by Family index; nullptr if absent
  int64_t moe_trained_tokens = 0;  // KernelPredictor::moe_trained_tokens of this set
  std::vector<std::optional<std::vector<DenseMlp>>> models;  // by Family index, once loaded
  std::vector<std::optional<std::vector<DenseMlp>>> fallback_models;  // their fallback networks, likewise
  // <dir>/amd: the AMD predictor set, if bundled; opened at the first AMD forecast (an NVIDIA
  // forecast does not read its manifest).
  std::string amd_dir;
  // <dir>/gpus: the specs of the training GPUs as training read them (hold_in_spec_order).
  std::optional<GpuRegistry> recorded;
  // <dir>/forecast_errors.json: the families' recorded errors, if any.
  ForecastErrors errors;
  std::unique_ptr<KernelPredictor> amd;
  std::once_flag amd_once;
  const KernelPredictor* amd_set() {
    if (amd_dir.empty()) return nullptr;
    std::call_once(amd_once, [&] { amd = std::make_unique<KernelPredictor>(amd_dir); });
    return amd.get();
  }
  // The recorded spec of a training GPU of any network family in this folder, by CUDA name.
  const GpuSpec* training_spec(const std::string& cuda_name) const {
    for (const trainer::FamilyEntry* e : entries)
      if (e)
        for (const GpuSpec& s : e->training_gpu_specs)
          if (s.cuda_name == cuda_name) return &s;
    return nullptr;
  }
  std::mutex mu;
  // MemoScope's memo: (GpuSpec address, query) -> forecast; `memo_scopes` open scopes.
  std::mutex memo_mu;
  int memo_scopes = 0;
  int64_t memo_hits = 0, memo_misses = 0;
  std::map<std::pair<const GpuSpec*, KernelQueryKey>, KernelPrediction> memo;

  const TileTable& tile_table() {
    std::lock_guard<std::mutex> lock(mu);
    if (!tiles) tiles = TileTable::load(tile_path);
    return *tiles;
  }
  // The members listed (the family's or its fallback network's), each checked against its
  // sha256 and layer widths.
  template <class Members>
  std::vector<DenseMlp> load(const Members& e) const {
    std::vector<DenseMlp> ms;
    for (size_t i = 0; i < e.net_files.size(); ++i) {
      const std::string path = (fs::path(dir) / e.net_files[i]).string();
      std::string bytes;
      try {
        bytes = read_file(path);
      } catch (const DataError& err) {
        throw ConfigError(err.what());
      }
      // A flipped byte or a file copied in from elsewhere is refused before it is parsed.
      if (sha256_hex(bytes) != e.net_sha256[i])
        throw ConfigError(path + ": sha256 differs from manifest.yaml (corrupt or replaced network file; "
                          "restore it or retrain)");
      DenseMlp m = DenseMlp::parse(bytes, path);
      if (m.layer_widths() != e.layer_widths[i])
        throw ConfigError(path + ": layer widths differ from manifest.yaml's 'layer_widths'");
      ms.push_back(std::move(m));
    }
    return ms;
  }
  const std::vector<DenseMlp>& members(Family f) {
    std::lock_guard<std::mutex> lock(mu);
    auto& slot = models[static_cast<size_t>(f)];
    if (!slot) {
      const trainer::FamilyEntry* e = entries[static_cast<size_t>(f)];
      slot = e ? load(*e) : std::vector<DenseMlp>{};
    }
    return *slot;
  }
  const std::vector<DenseMlp>& fallback_members(Family f) {
    std::lock_guard<std::mutex> lock(mu);
    auto& slot = fallback_models[static_cast<size_t>(f)];
    if (!slot) {
      const trainer::FamilyEntry* e = entries[static_cast<size_t>(f)];
      slot = e ? load(e->fallback_network) : std::vector<DenseMlp>{};
    }
    return *slot;
  }
};

KernelPredictor::KernelPredictor(const std::string& dir) : impl_(std::make_unique<Impl>()) {
  impl_->dir = dir;
  impl_->manifest = trainer::load_manifest(dir);
  impl_->tile_path = (fs::path(dir) / impl_->manifest.tile_table).string();
  if (!fs::exists(impl_->tile_path)) throw ConfigError(impl_->tile_path + ": tile table missing from weights folder");
  impl_->entries.assign(static_cast<size_t>(Family::kCount), nullptr);
  impl_->models.resize(static_cast<size_t>(Family::kCount));
  impl_->fallback_models.resize(static_cast<size_t>(Family::kCount));
  for (const auto& kv : impl_->manifest.families) {
    const auto& e = kv.second;
    if (e.net_files.empty())
      throw ConfigError((fs::path(dir) / "manifest.yaml").string() + ": family '" + kv.first +
                        "' has no torch-free network files ('net_files'; weights written before tilecast 0.2): "
                        "run `tilecast export-weights --weights " + dir + "`");
    for (const auto* files : {&e.net_files, &e.fallback_network.net_files})
      for (const auto& f : *files) {
        const std::string path = (fs::path(dir) / f).string();
        if (!fs::exists(path)) throw ConfigError(path + ": network file listed in manifest.yaml is missing");
      }
    impl_->entries[static_cast<size_t>(e.config.family)] = &e;
  }
  // The moe family's range of log2_tokens, read once (predict() consults it for every batch).
  if (const trainer::FamilyEntry* e = impl_->entries[static_cast<size_t>(Family::kMoe)]) {
    const auto name = std::find(e->features.begin(), e->features.end(), "log2_tokens");
    const auto i = static_cast<size_t>(name - e->features.begin());
    if (name != e->features.end() && i < e->feature_max.size() && e->feature_max[i] >= 0 && e->feature_max[i] < 31)
      impl_->moe_trained_tokens = static_cast<int64_t>(std::floor(std::exp2(e->feature_max[i]) + 1e-6));
  }
  const fs::path amd = fs::path(dir) / "amd";
  if (fs::exists(amd / "manifest.yaml")) impl_->amd_dir = amd.string();
  const fs::path recorded = fs::path(dir) / trainer::kRecordedGpuDir;
  if (fs::is_directory(recorded)) impl_->recorded.emplace(recorded.string());
  const fs::path errors = fs::path(dir) / kForecastErrorsFile;
  if (fs::exists(errors)) impl_->errors = ForecastErrors::load(errors.string(), impl_->manifest);
}

const GpuSpec* KernelPredictor::recorded_spec(const std::string& cuda_name) const {
  return impl_->recorded ? impl_->recorded->find(cuda_name) : nullptr;
}

bool KernelPredictor::has_amd_set() const { return !impl_->amd_dir.empty(); }

void KernelPredictor::set_call_overhead_us(double us) {
  if (!std::isfinite(us) || us < 0 || us > trainer::kMaxCallOverheadUs)
    throw ConfigError("--call-overhead-us: expected 0.." + std::to_string(int(trainer::kMaxCallOverheadUs)) +
                      " microseconds, got " + std::to_string(us));
  for (Family f : kAllFamilies)
    if (family_traits(f).data == FamilyData::kNeuSight) impl_->manifest.call_overhead_us[family_name(f)] = us;
  {
    std::lock_guard<std::mutex> lock(impl_->memo_mu);
    impl_->memo.clear();  // stream_ms follows the call overhead
  }
  if (!impl_->amd_dir.empty()) {
    impl_->amd_set();
    impl_->amd->set_call_overhead_us(us);
  }
}

double KernelPredictor::call_overhead_us(const GpuSpec& gpu, Family f) const {
  const auto& m = set_for(gpu, f).impl_->manifest.call_overhead_us;
  const auto it = m.find(family_name(f));
  return it == m.end() ? 0.0 : it->second;
}

const KernelPredictor& KernelPredictor::set_for(const GpuSpec& gpu, Family f) const {
  if (gpu.vendor != "amd") return *this;
  const KernelPredictor* amd = impl_->amd_set();
  if (amd && amd->has_family(f)) return *amd;
  return *this;
}

KernelPredictor::~KernelPredictor() = default;
KernelPredictor::KernelPredictor(KernelPredictor&&) noexcept = default;

bool KernelPredictor::has_family(Family f) const {
  if (f == Family::kMemoryOp) return !impl_->manifest.memory_ops.ops.empty();
  return impl_->entries[static_cast<size_t>(f)] != nullptr;
}
const trainer::WeightsManifest& KernelPredictor::manifest() const { return impl_->manifest; }
const TileTable& KernelPredictor::tiles() const { return impl_->tile_table(); }

namespace {
// `specs`: those of `names` whose specs the weights record (twins and the vendor are judged
// on them; none recorded: no twin, and the vendor is not questioned).
GpuStanding training_standing(const GpuSpec& gpu, const std::vector<std::string>& names,
                              const std::vector<GpuSpec>& specs) {
  GpuStanding t;
  t.training_gpus = static_cast<int>(names.size());
  t.trained_on = std::find(names.begin(), names.end(), gpu.cuda_name) != names.end();
  t.twin = !t.trained_on && std::any_of(specs.begin(), specs.end(), [&](const GpuSpec& s) { return gpu_twins(gpu, s); });
  t.vendor_trained = t.trained_on || specs.empty() ||
                     std::any_of(specs.begin(), specs.end(), [&](const GpuSpec& s) { return s.vendor == gpu.vendor; });
  return t;
}

// A prefill chunk after a cached prefix (chunked prefill) is costed from whole prompts, the
// only prefills the data times: its queries are the last `chunk` of a prompt of prefix + chunk
// tokens, so it takes what that prompt takes beyond its first `prefix` tokens, and no less
// than the chunk alone (fixed costs do not cancel) nor than reading the whole KV cache once
// (a decode step of the same sequences over prefix + chunk tokens: a short chunk, such as a
// speculative-decoding verify step, reads the cache as a decode does). Each field follows
// that rule except the physics of the chunk itself (FLOPs at the sheet's peak, the plain
// roofline, the launch).
struct ChunkParts {
  size_t whole = 0, head = 0, alone = 0, read = 0;  // indices among the expanded queries
};
// The floor a forecast is raised to: the compute peak, and on a GPU the family's network does
// not correct (neither trained on nor a twin) a Triton or Marlin MoE layer's passes over the
// pairs routed to other ranks (forecast_floor_s). A training GPU's own rows can beat those
// passes (the A100's, timed under another SGLang version): there the network's forecast stands.
double floor_ms(const KernelQuery& q, const GpuSpec& gpu, bool corrected) {
  return s_to_ms(corrected ? fastest_s(q, gpu) : forecast_floor_s(q, gpu));
}

KernelPrediction compose_chunk(const KernelQuery& q, const GpuSpec& gpu, const KernelPrediction& whole,
                               const KernelPrediction& head, const KernelPrediction& alone,
                               const KernelPrediction& read) {
  auto rest = [&](double KernelPrediction::*f) { return std::max({alone.*f, read.*f, whole.*f - head.*f}); };
  KernelPrediction r = whole;
  r.latency_ms = rest(&KernelPrediction::latency_ms);
  r.base_ms = rest(&KernelPrediction::base_ms);
  r.bound_ms = rest(&KernelPrediction::bound_ms);
  r.prior_ms = whole.prior_ms > 0 ? rest(&KernelPrediction::prior_ms) : 0;
  r.member_min_ms = std::max({alone.member_min_ms, read.member_min_ms, whole.member_min_ms - head.member_max_ms});
  r.member_max_ms = std::max({alone.member_max_ms, read.member_max_ms, whole.member_max_ms - head.member_min_ms});
  r.roofline_ms = s_to_ms(roofline_s(q, gpu));
  r.peak_ms = floor_ms(q, gpu, whole.corrected);
  r.at_peak = r.latency_ms < r.peak_ms;
  r.latency_ms = std::max(r.latency_ms, r.peak_ms);
  r.member_min_ms = std::min(std::max(r.member_min_ms, r.peak_ms), r.latency_ms);
  r.member_max_ms = std::max(r.member_max_ms, r.latency_ms);
  r.utilisation = r.bound_ms / r.latency_ms;
  // The host time per call of one kernel, as the whole prompt's.
  r.stream_ms = std::max(r.latency_ms - (whole.latency_ms - whole.stream_ms), std::min(r.latency_ms, kMinStreamUs * 1e-3));
  r.launch = launch_info(q, gpu);
  for (const auto& name : alone.out_of_range)
    if (std::find(r.out_of_range.begin(), r.out_of_range.end(), name) == r.out_of_range.end()) r.out_of_range.push_back(name);
  r.clamped = whole.clamped || alone.clamped;
  return r;
}
}  // namespace

KernelPredictor::MemoScope::MemoScope(const KernelPredictor& kp) : kp_(kp) {
  std::lock_guard<std::mutex> lock(kp_.impl_->memo_mu);
  if (kp_.impl_->memo_scopes++ == 0) kp_.impl_->memo_hits = kp_.impl_->memo_misses = 0;
}

KernelPredictor::MemoScope::~MemoScope() {
  std::lock_guard<std::mutex> lock(kp_.impl_->memo_mu);
  if (--kp_.impl_->memo_scopes == 0) kp_.impl_->memo.clear();
}

int64_t KernelPredictor::memo_hits() const {
  std::lock_guard<std::mutex> lock(impl_->memo_mu);
  return impl_->memo_hits;
}

int64_t KernelPredictor::memo_misses() const {
  std::lock_guard<std::mutex> lock(impl_->memo_mu);
  return impl_->memo_misses;
}

std::vector<KernelPrediction> KernelPredictor::predict(const std::vector<KernelQuery>& queries,
                                                       const GpuSpec& gpu) const {
  {
    std::unique_lock<std::mutex> lock(impl_->memo_mu);
    if (impl_->memo_scopes > 0) {
      // Answer what the memo holds; forecast the rest in one batch and keep them.
      std::vector<KernelPrediction> out(queries.size());
      std::vector<KernelQuery> fresh;
      std::vector<size_t> fresh_at;
      std::vector<KernelQueryKey> keys(queries.size());
      for (size_t i = 0; i < queries.size(); ++i) {
        keys[i] = query_key(queries[i]);
        const auto it = impl_->memo.find({&gpu, keys[i]});
        if (it != impl_->memo.end()) {
          out[i] = it->second;
          ++impl_->memo_hits;
        } else {
          fresh.push_back(queries[i]);
          fresh_at.push_back(i);
        }
      }
      if (fresh.empty()) return out;
      lock.unlock();
      const std::vector<KernelPrediction> r = predict_unmemoised(fresh, gpu);
      lock.lock();
      for (size_t j = 0; j < fresh.size(); ++j) {
        out[fresh_at[j]] = r[j];
        if (impl_->memo_scopes > 0) impl_->memo.emplace(std::make_pair(&gpu, keys[fresh_at[j]]), r[j]);
      }
      impl_->memo_misses += static_cast<int64_t>(fresh.size());
      return out;
    }
  }
  return predict_unmemoised(queries, gpu);
}

std::vector<KernelPrediction> KernelPredictor::predict_unbounded(const std::vector<KernelQuery>& queries,
                                                                 const GpuSpec& gpu) const {
  // Chunks after a prefix become whole prompts first (compose_chunk).
  if (std::any_of(queries.begin(), queries.end(), [](const KernelQuery& q) { return q.prefix > 0; })) {
    std::vector<KernelQuery> expanded;
    std::vector<ChunkParts> parts(queries.size());
    std::vector<size_t> plain(queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
      const KernelQuery& q = queries[i];
      if (q.prefix <= 0) {
        plain[i] = expanded.size();
        expanded.push_back(q);
        continue;
      }
      validate_query(q, "query");
      auto prompt = [&](int64_t tokens) {
        KernelQuery p = attention_prefill_q(q.b, tokens, q.k, q.h, q.n, q.dtype, q.kv_dtype, q.window);
        expanded.push_back(p);
        return expanded.size() - 1;
      };
      parts[i].whole = prompt(q.prefix + q.m);
      parts[i].head = prompt(q.prefix);
      parts[i].alone = prompt(q.m);
      expanded.push_back(attention_decode_q(q.b, q.prefix + q.m, q.k, q.h, q.n, q.dtype, q.kv_dtype, q.window));
      parts[i].read = expanded.size() - 1;
    }
    const std::vector<KernelPrediction> r = predict_unbounded(expanded, gpu);
    std::vector<KernelPrediction> out(queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
      if (queries[i].prefix <= 0) {
        out[i] = r[plain[i]];
        continue;
      }
      const ChunkParts& c = parts[i];
      out[i] = compose_chunk(queries[i], gpu, r[c.whole], r[c.head], r[c.alone], r[c.read]);
    }
    return out;
  }
  // MoE layers beyond the trained tokens: equal chunks within them (moe_trained_tokens).
  const int64_t max_tokens = moe_trained_tokens(gpu);
  auto too_many = [&](const KernelQuery& q) { return q.op == OpKind::kMoe && max_tokens > 0 && q.b > max_tokens; };
  if (std::any_of(queries.begin(), queries.end(), too_many)) {
    std::vector<KernelQuery> chunked = queries;
    std::vector<int64_t> chunks(queries.size(), 1);
    for (size_t i = 0; i < queries.size(); ++i) {
      if (!too_many(queries[i])) continue;
      validate_query(queries[i], "query");
      chunks[i] = (queries[i].b + max_tokens - 1) / max_tokens;
      chunked[i].b = (queries[i].b + chunks[i] - 1) / chunks[i];
    }
    std::vector<KernelPrediction> out = predict_unbounded(chunked, gpu);
    for (size_t i = 0; i < queries.size(); ++i) {
      if (chunks[i] == 1) continue;
      KernelPrediction& p = out[i];
      const double c = double(chunks[i]);
      for (double KernelPrediction::*f : {&KernelPrediction::latency_ms, &KernelPrediction::base_ms,
                                          &KernelPrediction::bound_ms, &KernelPrediction::prior_ms,
                                          &KernelPrediction::member_min_ms, &KernelPrediction::member_max_ms,
                                          &KernelPrediction::stream_ms, &KernelPrediction::bf16_ms,
                                          &KernelPrediction::composite_ms})
        p.*f *= c;
      // The layer's own physics (a chunk's padding aside, c chunks' of it).
      p.roofline_ms = s_to_ms(roofline_s(queries[i], gpu));
      p.peak_ms = floor_ms(queries[i], gpu, p.corrected);
      p.moe_chunks = chunks[i];
      p.moe_chunk_tokens = chunked[i].b;
    }
    return out;
  }
  // FP8 MoE layers of a Triton GPU: forecast with their BF16 twins (kTritonFp8MoeFactor).
  std::vector<size_t> fp8_moe;
  for (size_t i = 0; i < queries.size(); ++i)
    if (triton_fp8_moe(queries[i], gpu)) fp8_moe.push_back(i);
  if (fp8_moe.empty()) return predict_by_set(queries, gpu);
  std::vector<KernelQuery> with_bf16 = queries;
  for (size_t i : fp8_moe) {
    KernelQuery b = queries[i];
    b.dtype = DType::kBf16;
    with_bf16.push_back(b);
  }
  const std::vector<KernelPrediction> r = predict_by_set(with_bf16, gpu);
  std::vector<KernelPrediction> out(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(queries.size()));
  for (size_t j = 0; j < fp8_moe.size(); ++j) {
    KernelPrediction& p = out[fp8_moe[j]];
    const KernelPrediction& b = r[queries.size() + j];
    const auto rule_ms = [](double bf16_ms) { return kTritonFp8MoeFloorUs * 1e-3 + kTritonFp8MoeFactor * bf16_ms; };
    const auto from_bf16 = [&](double bf16_ms) { return std::max(rule_ms(bf16_ms), p.peak_ms); };
    p.fp8_from_bf16 = true;
    p.bf16_ms = b.latency_ms;
    p.latency_ms = from_bf16(b.latency_ms);
    p.at_peak = rule_ms(b.latency_ms) < p.peak_ms;
    p.member_min_ms = from_bf16(b.member_min_ms);
    p.member_max_ms = from_bf16(b.member_max_ms);
    p.utilisation = p.bound_ms / p.latency_ms;
    // The BF16 forecast's standing: its training range, its network's share, its call overhead.
    p.out_of_range = b.out_of_range;
    p.clamped = b.clamped;
    p.corrected = b.corrected;
    p.network_weight = b.network_weight;
    p.composite_weight = b.composite_weight;  // the BF16 layer's composite (composite_ms: of it)
    p.composite_ms = b.composite_ms;
    p.stream_ms = std::max(p.latency_ms - (b.latency_ms - b.stream_ms), std::min(p.latency_ms, kMinStreamUs * 1e-3));
  }
  return out;
}

std::vector<KernelPrediction> KernelPredictor::predict_unmemoised(const std::vector<KernelQuery>& queries,
                                                                  const GpuSpec& gpu) const {
  std::vector<KernelPrediction> out = predict_unbounded(queries, gpu);
  hold_in_spec_order(queries, gpu, out);
  // What such forecasts erred by when each training GPU was the unseen one. The AMD set's
  // families and the NeuSight families have no such record; and for a GPU of a vendor none of
  // the training GPUs is of, leaving one NVIDIA GPU out measures nothing.
  // On a training GPU, its error on the shapes training left out.
  for (size_t i = 0; i < queries.size(); ++i) {
    const GpuStanding& s = out[i].standing;
    const Family f = op_family(queries[i].op);
    if (!is_llm_kernel_family(f)) continue;
    const ForecastErrors& e = set_for(gpu, f).impl_->errors;
    if (e.empty()) continue;
    if (s.trained_on)
      out[i].heldout_error = e.find_heldout(queries[i], gpu.cuda_name);
    else if (!s.twin && s.vendor_trained && s.training_gpus > 0)
      out[i].unseen_error = e.find(queries[i]);
  }
  return out;
}

bool betters_in_every_spec(const GpuSpec& x, const GpuSpec& t, const KernelQuery& q) {
  if (x.vendor != t.vendor || x.compute_capability < t.compute_capability) return false;
  if (x.num_sms < t.num_sms || x.max_threads_per_sm < t.max_threads_per_sm || x.boost_clock_mhz < t.boost_clock_mhz ||
      x.mem_bw_gbps < t.mem_bw_gbps || x.l2_cache_mb < t.l2_cache_mb || x.fp32_peak_gflops < t.fp32_peak_gflops)
    return false;
  const bool attention = is_attention(op_family(q.op));
  for (DType d : {q.dtype, attention ? q.kv_dtype : q.dtype}) {
    if (!(gemm_peak_gflops_or_zero(x, d) > 0) || !(gemm_peak_gflops_or_zero(t, d) > 0)) return false;
    if (gemm_rate_gflops(x, d, q.sustained) < gemm_rate_gflops(t, d, q.sustained)) return false;
  }
  return true;
}

bool same_kernel_library(const GpuSpec& x, const GpuSpec& t, const KernelQuery& q) {
  const char* a = kernel_library(q, x);
  const char* b = kernel_library(q, t);
  return (a == nullptr && b == nullptr) || (a != nullptr && b != nullptr && std::string(a) == b);
}

void KernelPredictor::hold_in_spec_order(const std::vector<KernelQuery>& queries, const GpuSpec& gpu,
                                         std::vector<KernelPrediction>& out) const {
  // Per reference GPU, the queries it bounds: each query's training GPUs, in the query's library,
  // that `gpu` betters (caps) or that better `gpu` (floors).
  std::map<const GpuSpec*, std::vector<size_t>> caps, floors;
  std::map<Family, GpuStanding> standing;
  for (size_t i = 0; i < queries.size(); ++i) {
    const KernelQuery& q = queries[i];
    const Family f = op_family(q.op);
    // NeuSight's FP32 families keep their own forecast: leave one GPU out lowered their kernel
    // errors but raised their whole-model labels' (A100 fold: linear 18.7 -> 14.8 %, the
    // A100-SXM4-40GB's DP training step 5.4 -> 7.6 %; docs/accuracy.md).
    if (!is_llm_kernel_family(f)) continue;
    const KernelPredictor& set = set_for(gpu, f);
    auto it = standing.find(f);
    if (it == standing.end()) it = standing.emplace(f, set.standing(gpu, f)).first;
    if (it->second.trained_on || it->second.twin) continue;  // the GPU's own rows or its twin's
    const auto& families = set.manifest().families;
    const auto entry = families.find(family_name(f));
    if (f != Family::kMemoryOp && entry == families.end()) continue;
    const std::vector<std::string>& names =
        f == Family::kMemoryOp ? set.manifest().memory_ops.training_gpus : entry->second.training_gpus;
    for (const std::string& name : names) {
      const GpuSpec* t = set.recorded_spec(name);
      if (!t || t->cuda_name == gpu.cuda_name || !same_kernel_library(gpu, *t, q)) continue;
      if (betters_in_every_spec(gpu, *t, q)) caps[t].push_back(i);
      if (betters_in_every_spec(*t, gpu, q)) floors[t].push_back(i);
    }
  }
  const auto bound = [&](const std::map<const GpuSpec*, std::vector<size_t>>& refs, bool cap) {
    for (const auto& [t, idx] : refs) {
      std::vector<KernelQuery> sub;
      for (size_t i : idx) sub.push_back(queries[i]);
      const std::vector<KernelPrediction> ref = predict_unbounded(sub, *t);
      for (size_t j = 0; j < idx.size(); ++j) {
        KernelPrediction& p = out[idx[j]];
        const double ms = ref[j].latency_ms;
        if (cap ? !(ms < p.latency_ms) : !(ms > p.latency_ms)) continue;
        // The reference's forecast, with this one's host time per call; the ensemble's members
        // past it meet it.
        const double overhead_ms = p.latency_ms - p.stream_ms;
        p.latency_ms = ms;
        p.stream_ms = std::max(ms - overhead_ms, std::min(ms, kMinStreamUs * 1e-3));
        p.utilisation = ms > 0 ? p.bound_ms / ms : 0;
        p.member_min_ms = cap ? std::min(p.member_min_ms, ms) : std::max(p.member_min_ms, ms);
        p.member_max_ms = cap ? std::min(p.member_max_ms, ms) : std::max(p.member_max_ms, ms);
        (cap ? p.capped_by : p.lifted_by) = t->name;
        if (cap) p.lifted_by.clear();  // the cap holds over a floor it undercuts
      }
    }
  };
  bound(floors, false);
  bound(caps, true);
}

int64_t KernelPredictor::moe_trained_tokens(const GpuSpec& gpu) const {
  return set_for(gpu, Family::kMoe).impl_->moe_trained_tokens;
}

bool triton_fp8_moe(const KernelQuery& q, const GpuSpec& gpu) {
  return q.op == OpKind::kMoe && is_fp8(q.dtype) && std::string(moe_library(gpu, q.dtype)) == "sglang_fused_moe_triton";
}

std::vector<KernelPrediction> KernelPredictor::predict_by_set(const std::vector<KernelQuery>& queries,
                                                             const GpuSpec& gpu) const {
  const KernelPredictor* amd = gpu.vendor == "amd" ? impl_->amd_set() : nullptr;
  if (!amd) return predict_here(queries, gpu);
  std::vector<size_t> on_amd, here;
  for (size_t i = 0; i < queries.size(); ++i)
    (amd->has_family(op_family(queries[i].op)) ? on_amd : here).push_back(i);
  if (here.empty()) return amd->predict_here(queries, gpu);
  std::vector<KernelPrediction> out(queries.size());
  for (auto* part : {&on_amd, &here}) {
    if (part->empty()) continue;
    std::vector<KernelQuery> qs;
    for (size_t i : *part) qs.push_back(queries[i]);
    const auto r = (part == &on_amd ? amd : this)->predict_here(qs, gpu);
    for (size_t j = 0; j < part->size(); ++j) out[(*part)[j]] = r[j];
  }
  return out;
}

std::vector<KernelPrediction> KernelPredictor::predict_here(const std::vector<KernelQuery>& queries,
                                                            const GpuSpec& gpu) const {
  std::vector<KernelPrediction> out(queries.size());
  std::vector<std::vector<size_t>> by_family(static_cast<size_t>(Family::kCount));
  for (size_t i = 0; i < queries.size(); ++i)
    by_family[static_cast<size_t>(op_family(queries[i].op))].push_back(i);

  for (Family fam : kAllFamilies) {
    auto& idx = by_family[static_cast<size_t>(fam)];
    if (idx.empty()) continue;
    if (fam == Family::kMemoryOp) {
      predict_memory_ops(queries, idx, gpu, out);
      continue;
    }
    const trainer::FamilyEntry* entry = impl_->entries[static_cast<size_t>(fam)];
    static const TileTable kNoTiles;  // only the NeuSight GEMM families look tiles up (featurize)
    const TileTable& tiles = is_gemm(fam) ? impl_->tile_table() : kNoTiles;
    // A fallback library's queries: its own fitted roofline (and network), not the family's.
    if (entry && entry->has_fallback_prior) {
      const auto fb = std::stable_partition(idx.begin(), idx.end(),
                                            [&](size_t i) { return !fallback_attention(queries[i], gpu); });
      const std::vector<size_t> fb_idx(fb, idx.end());
      idx.erase(fb, idx.end());
      if (!fb_idx.empty()) predict_fallback(queries, fb_idx, gpu, *entry, tiles, out);
      if (idx.empty()) continue;
    }
    // Where the network does not correct (see below), the fitted roofline takes the GPU's
    // kernel library's cost per CTA and rate of loads per SM where training fitted them
    // (library_cta_ns, library_sm_bytes_per_cycle).
    const GpuStanding standing =
        entry ? training_standing(gpu, entry->training_gpus, entry->training_gpu_specs) : GpuStanding{};
    const bool corrected = entry && network_corrects(entry->config.network_gpus, standing);
    const int64_t nf = static_cast<int64_t>(num_features(fam));
    std::vector<float> x(idx.size() * nf);
    std::vector<double> fixed_ms(idx.size(), 0.0);  // the base's fixed costs, where it is the fitted roofline
    std::vector<double> l2_undo(idx.size(), 1.0);   // a MoE layer in a model's step: see below
    float* xp = x.data();
    const std::vector<size_t> ignored = entry ? feature_columns(fam, entry->config.ignore_features) : std::vector<size_t>{};
    for (size_t j = 0; j < idx.size(); ++j) {
      const KernelQuery& q = queries[idx[j]];
      validate_query(q, "query");
      PreparedKernel p = featurize(q, gpu, tiles, xp + j * nf);
      for (size_t c : ignored) xp[j * nf + c] = 0;  // features the network does not see
      KernelPrediction& r = out[idx[j]];
      r.launch = p.launch;
      r.bound_ms = s_to_ms(p.bounds.base_s);
      // The base the network corrects, as in training: the family's fitted roofline (prior in
      // its config), else the bound raised to its launch floor (launch_floor in its config).
      // The fitted roofline alone (prior_ms) is also what a GPU outside network_gpus leans on.
      // With prior_base_by_library, the query's kernel library's own fit where training made one.
      const char* lib = kernel_library(q, gpu);
      const FittedRoofline* prior = entry && entry->config.prior ? &entry->base_prior(lib) : nullptr;
      if (prior && prior != &entry->prior) r.prior_library = lib;
      r.base_ms = s_to_ms(network_base_s(p.bounds, prior, entry ? entry->launch_floor_us * 1e-6 : 0.0, &r.bound));
      if (entry && entry->has_prior()) r.prior_ms = prior ? r.base_ms : s_to_ms(fitted_roofline_s(p.bounds, entry->prior));
      if (prior) fixed_ms[j] = s_to_ms(fitted_fixed_s(p.bounds, *prior));
      // A kernel in a model's step that reads its working set from DRAM where, timed alone, it
      // would read it from the L2 (a MoE layer's experts: KernelBounds::alone_memory_scale): the
      // networks learned from kernels timed alone, so their share of the forecast takes that
      // speed-up back, the fitted roofline in the step over the same timed alone.
      if (entry && entry->has_prior() && p.bounds.alone_memory_scale < p.bounds.fit_memory_scale) {
        KernelBounds alone = p.bounds;
        alone.fit_memory_scale = alone.alone_memory_scale;
        l2_undo[j] = fitted_roofline_s(p.bounds, entry->prior) / fitted_roofline_s(alone, entry->prior);
      }
      if (entry && !corrected &&
          (!entry->library_cta_ns.empty() || !entry->library_sm_bytes_per_cycle.empty() ||
           !entry->library_floor_kcycles.empty())) {
        const auto cta = lib ? entry->library_cta_ns.find(lib) : entry->library_cta_ns.end();
        const auto rate = lib ? entry->library_sm_bytes_per_cycle.find(lib) : entry->library_sm_bytes_per_cycle.end();
        const auto floor = lib ? entry->library_floor_kcycles.find(lib) : entry->library_floor_kcycles.end();
        if (cta != entry->library_cta_ns.end() || rate != entry->library_sm_bytes_per_cycle.end() ||
            floor != entry->library_floor_kcycles.end()) {
          FittedRoofline alone = prior ? *prior : entry->prior;  // the query's base: its library's own fit, if any
          if (cta != entry->library_cta_ns.end()) alone.cta_ns = r.prior_cta_ns = cta->second;
          if (rate != entry->library_sm_bytes_per_cycle.end())
            alone.sm_bytes_per_cycle = r.prior_sm_bytes_per_cycle = rate->second;
          if (floor != entry->library_floor_kcycles.end()) {
            alone.floor_us = 0;
            alone.floor_kcycles = r.prior_floor_kcycles = floor->second;
          }
          r.prior_ms = s_to_ms(fitted_roofline_s(p.bounds, alone));
        }
      }
      r.prior_is_base = prior != nullptr;
      r.roofline_ms = s_to_ms(roofline_s(q, gpu));
      // A feature outside the training range is reported and, where the family clamps (LLM-era
      // families, the AMD set), clamped to it (a ReLU network extrapolates linearly in log space).
      if (entry && !entry->feature_min.empty())
        check_training_range(xp + j * nf, entry->feature_min, entry->feature_max, feature_names(fam),
                             entry->clamp_features, r);
    }
    // After featurising, so that a query the GPU cannot run (FP8 on an A100) says so first.
    if (!entry)
      throw ConfigError(std::string("no trained weights for family '") + family_name(fam) +
                        "' in the weights folder (run `tilecast train --family " + family_name(fam) + "`)");
    // A family whose network is trusted only on its training GPUs (and, with twins, on GPUs of
    // the same die and memory system) forecasts any other GPU by its fitted roofline, alone
    // (unseen_prior_weight 1: leave-one-GPU-out says the correction does not carry over; the
    // networks are then not even loaded) or as a weighted geometric mean with the network's
    // forecast (a network that extrapolates, shrunk toward the physics).
    const double prior_weight = corrected ? 0.0 : entry->config.unseen_prior_weight;
    const double overhead_ms = call_overhead_us(gpu, fam) * 1e-3;
    static const std::vector<DenseMlp> kNoMembers;
    const std::vector<DenseMlp>& members = prior_weight < 1.0 ? impl_->members(fam) : kNoMembers;
    const bool ran = !members.empty();
    const EnsembleOutput o = run_ensemble(members, xp, idx.size());
    for (size_t j = 0; j < idx.size(); ++j) {
      KernelPrediction& r = out[idx[j]];
      const double w = blend_weight(prior_weight, fixed_ms[j], r.base_ms);
      const double undo = std::pow(l2_undo[j], 1 - w);  // on the network's share (1 - w) alone
      r.in_step_l2_factor = undo;
      const auto blend = [&](double log_slowdown) { return blend_ms(r.base_ms, r.prior_ms, w, log_slowdown) * undo; };
      // No kernel beats the sheet's compute peak (the data's rows that do are measurement
      // artefacts, left out of training): a network's forecast below it is raised to it.
      r.latency_ms = blend(o.mean[j]);
      r.peak_ms = floor_ms(queries[idx[j]], gpu, corrected);
      r.at_peak = r.latency_ms < r.peak_ms;
      r.latency_ms = std::max(r.latency_ms, r.peak_ms);
      r.utilisation = r.bound_ms / r.latency_ms;
      r.corrected = corrected;
      r.network_weight = 1 - prior_weight;
      r.fitted_roofline_weight = w;
      r.standing = standing;
      if (!ran) {  // no network ran: its training range says nothing about this forecast
        r.out_of_range.clear();
        r.clamped = false;
      }
      r.member_min_ms = std::max(blend(o.lo[j]), r.peak_ms);
      r.member_max_ms = std::max(blend(o.hi[j]), r.peak_ms);
      r.stream_ms = std::max(r.latency_ms - overhead_ms, std::min(r.latency_ms, kMinStreamUs * 1e-3));
    }
    if (fam == Family::kMoe && !corrected && entry->config.gemm_composite_weight > 0)
      blend_gemm_composite(queries, idx, gpu, entry->config.gemm_composite_weight, overhead_ms, out);
  }
  return out;
}

void KernelPredictor::predict_fallback(const std::vector<KernelQuery>& queries, const std::vector<size_t>& idx,
                                       const GpuSpec& gpu, const trainer::FamilyEntry& entry, const TileTable& tiles,
                                       std::vector<KernelPrediction>& out) const {
  const Family fam = entry.config.family;
  const size_t nf = num_features(fam);
  const auto& fbn = entry.fallback_network;
  // The family's gate, judged on the GPUs of the fallback's rows (the B200: its twins are
  // corrected, under network_gpus twins; every GPU is under all).
  const std::string& gate = entry.config.network_gpus;
  // Without a network of its own: the family's standing (its fitted roofline came from them).
  const GpuStanding standing = training_standing(
      gpu, entry.has_fallback_network() ? fbn.training_gpus : entry.training_gpus, entry.training_gpu_specs);
  const bool corrected = entry.has_fallback_network() && network_corrects(gate, standing);
  const double prior_weight = !entry.has_fallback_network() ? 1.0 : corrected ? 0.0 : entry.config.unseen_prior_weight;
  static const std::vector<DenseMlp> kNoMembers;
  const std::vector<DenseMlp>& members = prior_weight < 1.0 ? impl_->fallback_members(fam) : kNoMembers;
  const double overhead_ms = call_overhead_us(gpu, fam) * 1e-3;
  const auto& names = feature_names(fam);
  std::vector<float> x(idx.size() * nf), scratch(nf);
  for (size_t j = 0; j < idx.size(); ++j) {
    const KernelQuery& q = queries[idx[j]];
    validate_query(q, "query");
    KernelPrediction& r = out[idx[j]];
    float* row = x.data() + j * nf;
    const PreparedKernel p = featurize(q, gpu, tiles, row);  // the features as asked
    const KernelBounds kb = featurize(fallback_physics_query(q), gpu, tiles, scratch.data()).bounds;
    r.launch = p.launch;
    r.bound_ms = s_to_ms(p.bounds.base_s);
    r.roofline_ms = s_to_ms(roofline_s(q, gpu));
    r.peak_ms = floor_ms(q, gpu, corrected);
    r.fallback = true;
    r.prior_ms = s_to_ms(network_base_s(kb, &entry.fallback_prior, 0.0, &r.bound));
    r.base_ms = r.prior_ms;
    r.prior_is_base = !members.empty();
    r.corrected = corrected;
    r.network_weight = members.empty() ? 0.0 : 1 - prior_weight;
    r.standing = standing;
    if (!members.empty())  // the fallback network's training range: reported and clamped
      check_training_range(row, fbn.feature_min, fbn.feature_max, names, true, r);
  }
  const EnsembleOutput o = run_ensemble(members, x.data(), idx.size());
  const double w = members.empty() ? 1.0 : prior_weight;  // the fitted roofline's share in log space
  for (size_t j = 0; j < idx.size(); ++j) {
    KernelPrediction& r = out[idx[j]];
    r.fitted_roofline_weight = w;
    const auto blend = [&](double log_slowdown) { return blend_ms(r.prior_ms, r.prior_ms, w, log_slowdown); };
    const double ms = blend(o.mean[j]);
    r.at_peak = ms < r.peak_ms;
    r.latency_ms = std::max(ms, r.peak_ms);
    r.member_min_ms = std::max(blend(o.lo[j]), r.peak_ms);
    r.member_max_ms = std::max(blend(o.hi[j]), r.peak_ms);
    r.utilisation = r.bound_ms / r.latency_ms;
    r.stream_ms = std::max(r.latency_ms - overhead_ms, std::min(r.latency_ms, kMinStreamUs * 1e-3));
  }
}

void KernelPredictor::blend_gemm_composite(const std::vector<KernelQuery>& queries, const std::vector<size_t>& idx,
                                           const GpuSpec& gpu, double w, double overhead_ms,
                                           std::vector<KernelPrediction>& out) const {
  // The layers' two stacked GEMMs, forecast together by the gemm family (on this GPU, which it
  // may not have been trained on either: its own network + fitted roofline blend).
  std::vector<KernelQuery> gemms;
  std::vector<size_t> of;  // out index of each pair
  for (size_t i : idx) {
    KernelQuery up, down;
    if (!moe_gemm_composite(queries[i], &up, &down)) continue;
    gemms.push_back(up);
    gemms.push_back(down);
    of.push_back(i);
  }
  if (of.empty()) return;
  if (!has_family(Family::kGemm))
    throw ConfigError("no trained weights for family 'gemm' in the weights folder: the moe family's "
                      "gemm_composite_weight forecasts a MoE layer on an unseen GPU with it (run `tilecast train --family gemm`)");
  const std::vector<KernelPrediction> g = predict_here(gemms, gpu);
  for (size_t j = 0; j < of.size(); ++j) {
    KernelPrediction& r = out[of[j]];
    const double c_ms = g[2 * j].latency_ms + g[2 * j + 1].latency_ms;
    const auto raw = [&](double ms) { return std::exp((1 - w) * std::log(ms) + w * std::log(c_ms)); };
    const auto blend = [&](double ms) { return std::max(raw(ms), r.peak_ms); };
    r.composite_ms = c_ms;
    r.composite_weight = w;
    r.network_weight *= 1 - w;
    r.fitted_roofline_weight *= 1 - w;
    r.at_peak = raw(r.latency_ms) < r.peak_ms;
    r.latency_ms = blend(r.latency_ms);
    r.member_min_ms = blend(r.member_min_ms);
    r.member_max_ms = blend(r.member_max_ms);
    r.utilisation = r.bound_ms / r.latency_ms;
    r.stream_ms = std::max(r.latency_ms - overhead_ms, std::min(r.latency_ms, kMinStreamUs * 1e-3));
  }
}

GpuStanding KernelPredictor::memory_op_standing(const GpuSpec& gpu) const {
  // The manifest names the fit's GPUs; their specs (twins, vendor) are those the network
  // families of the same folder record for the same GPUs.
  const auto& names = impl_->manifest.memory_ops.training_gpus;
  std::vector<GpuSpec> specs;
  for (const auto& name : names)
    if (const GpuSpec* s = impl_->training_spec(name)) specs.push_back(*s);
  return training_standing(gpu, names, specs);
}

GpuStanding KernelPredictor::standing(const GpuSpec& gpu, Family f) const {
  const KernelPredictor& set = set_for(gpu, f);
  if (!set.has_family(f)) return {false, false, true, 0};
  if (f == Family::kMemoryOp) return set.memory_op_standing(gpu);
  const trainer::FamilyEntry* e = set.impl_->entries[static_cast<size_t>(f)];
  return training_standing(gpu, e->training_gpus, e->training_gpu_specs);
}

void KernelPredictor::predict_memory_ops(const std::vector<KernelQuery>& queries, const std::vector<size_t>& idx,
                                         const GpuSpec& gpu, std::vector<KernelPrediction>& out) const {
  const GpuStanding standing = memory_op_standing(gpu);
  for (size_t i : idx) {
    const KernelQuery& q = queries[i];
    validate_query(q, "query");
    KernelPrediction& r = out[i];
    r.launch = launch_info(q, gpu);
    const KernelBounds kb = kernel_bounds(q, gpu, r.launch);
    r.base_ms = s_to_ms(kb.base_s);
    r.bound_ms = r.base_ms;
    r.bound = "memory";
    r.roofline_ms = s_to_ms(roofline_s(q, gpu));
    const auto& ops = impl_->manifest.memory_ops.ops;
    auto it = ops.find(op_name(q.op));
    if (it == ops.end())
      throw ConfigError(std::string("no fitted coefficients for memory op '") + op_name(q.op) +
                        "' in the weights folder (run `tilecast train --family memory_op`)");
    r.latency_ms = s_to_ms(memory_op_latency_s(q, gpu, it->second));
    r.l2_resident_bytes = memory_op_l2_resident_bytes(query_bytes(q), gpu, it->second.l2_resident_fraction);
    r.utilisation = r.base_ms / r.latency_ms;
    r.member_min_ms = r.member_max_ms = r.latency_ms;
    r.stream_ms = r.latency_ms;
    r.standing = standing;
  }
}

KernelPrediction KernelPredictor::predict(const KernelQuery& q, const GpuSpec& gpu) const {
  return predict(std::vector<KernelQuery>{q}, gpu).front();
}

}  // namespace tilecast::predictor
