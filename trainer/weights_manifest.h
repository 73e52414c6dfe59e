#pragma once
// weights/manifest.yaml: what a weights folder holds and how it was made.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/fs_util.h"
#include "core/kernel.h"
#include "trainer/predictor_config.h"

namespace tilecast::trainer {

// The base of a row or query in `library` (nullptr: none): its own fit in `by_library` (may be
// nullptr) where there is one, else `shared`. Training and forecasting both take it from here.
inline const FittedRoofline& library_base(const FittedRoofline& shared,
                                          const std::map<std::string, FittedRoofline>* by_library,
                                          const char* library) {
  if (by_library && library) {
    const auto it = by_library->find(library);
    if (it != by_library->end()) return it->second;
  }
  return shared;
}

struct FamilyEntry {
  std::vector<std::string> files;     // ensemble members, e.g. "bmm.pt", "bmm.s1.pt" (relative)
  std::vector<std::string> sha256;    // per member: checksum of the checkpoint file, verified at load
  std::vector<std::vector<int64_t>> layer_widths;  // per member: [inputs, hidden..., 1], verified at load
  // Per member: the torch-free copy of the network that forecasting reads (`bmm.tcmlp`,
  // predictor/dense_mlp.h) and its checksum. Empty in folders written before tilecast 0.2
  // (`tilecast export-weights` adds them).
  std::vector<std::string> net_files, net_sha256;
  std::vector<std::string> features;  // feature names in input order
  // Training range of each feature: forecasts outside it say so (`outside_training_range`)
  // and, with clamp_features (the LLM-era families and the AMD set), are clamped to it. The
  // NVIDIA NeuSight families report only (a clamp was measured worse on their unseen GPUs).
  std::vector<double> feature_min, feature_max;
  bool clamp_features = true;
  PredictorConfig config;
  int64_t rows_train = 0, rows_val = 0;
  double val_mape_pct = 0;   // mean over members of the best validation MAPE (held-out rows)
  std::vector<double> member_val_mape_pct;
  int best_epoch = 0;
  double train_seconds = 0;
  std::string data_hash;     // FNV-1a of the training CSVs
  std::vector<std::string> training_gpus;
  // What network_gpus: twins compares a GPU with: per training GPU, its CUDA name, compute
  // capability, SM count and DRAM bandwidth (the other GpuSpec fields are left empty).
  std::vector<GpuSpec> training_gpu_specs;
  std::string trained_at;    // ISO-8601 UTC
  int holdout_shapes_pct = 0;  // train --holdout-shapes: this share of shapes was left out (0: none)
  double launch_floor_us = 0;  // config.launch_floor: the fitted per-launch floor (0: none)
  // config.fits_roofline(): the fitted roofline, which the network corrects (config.prior)
  // and/or which forecasts the GPUs outside config.network_gpus (config.unseen_prior_weight).
  bool has_prior() const { return config.fits_roofline(); }
  FittedRoofline prior;
  // config.prior_cta_by_library: per kernel library of the training rows, its cost per CTA in
  // nanoseconds (FittedRoofline::cta_ns), which the fitted roofline takes where it forecasts
  // alone and the GPU's library is one of these. Empty: none.
  std::map<std::string, double> library_cta_ns;
  // config.prior_sm_rate_by_library: per kernel library, its rate of loads per SM in bytes per
  // SM clock cycle (FittedRoofline::sm_bytes_per_cycle), applied as library_cta_ns is. Empty: none.
  std::map<std::string, double> library_sm_bytes_per_cycle;
  // config.prior_floor_by_library: per kernel library, its per-launch floor in thousands of SM
  // clock cycles, which replaces the shared fit's floor where the fitted roofline forecasts alone
  // and the GPU's library is one of these. Empty: none.
  std::map<std::string, double> library_floor_kcycles;
  // config.prior_base_by_library: per kernel library, its own fitted roofline, the networks' base
  // for that library's rows and queries (base_prior). Empty: the shared prior for all.
  std::map<std::string, FittedRoofline> library_prior;
  // The networks' base for a query in `library` (nullptr: none): its own fit where training
  // made one, else the shared prior.
  const FittedRoofline& base_prior(const char* library) const { return library_base(prior, &library_prior, library); }
  // The fitted roofline of a fallback kernel library's rows (fallback_attention: Triton's
  // prefill on datacenter Blackwell), which forecasts such queries alone, on the whole causal
  // triangle; no network is trained on them. Absent when training had none of those rows.
  bool has_fallback_prior = false;
  FittedRoofline fallback_prior;
  // The network of those rows (trained on them alone, with fallback_prior as the base it
  // corrects; features of the query as asked, the base on the work the fallback does), members
  // as for the family's own network. Empty: fallback_prior alone forecasts them.
  struct FallbackNetwork {
    std::vector<std::string> files, sha256, net_files, net_sha256;
    std::vector<std::vector<int64_t>> layer_widths;
    std::vector<double> member_val_mape_pct;
    std::vector<double> feature_min, feature_max;  // its training range (forecasts clamp to it)
    int64_t rows_train = 0, rows_val = 0;
    std::vector<std::string> training_gpus;  // of its rows (each also one of the family's)
  };
  FallbackNetwork fallback_network;
  bool has_fallback_network() const { return !fallback_network.files.empty(); }
};

// The memory_op family: physics coefficients per op (no network), fitted by `train`.
struct MemoryOpEntry {
  std::map<std::string, MemoryOpCoeffs> ops;  // by op name: rmsnorm, silu_mul, rope, residual_add
  std::string data_hash;
  std::vector<std::string> training_gpus;
  std::string fitted_at;  // ISO-8601 UTC
};

struct WeightsManifest {
  int feature_schema_version = 0;
  std::string tile_table = "tiles.csv";
  std::map<std::string, FamilyEntry> families;  // by family name (MLP families)
  MemoryOpEntry memory_ops;  // empty ops: no memory_op coefficients in this folder
  // By family name: the host time per call (microseconds) that the isolated kernel timings of
  // the family's training data include and that a whole model's stream of kernels hides
  // (NeuSight's benchmark times one call at a time, so every row carries the launch path; in
  // an eager model the CPU runs ahead of the GPU). Whole-model forecasts take it off each of
  // the family's kernels (KernelPrediction::stream_ms). Not learned by `train` (which keeps
  // it): chosen on the training GPUs' whole-model labels, scripts/fit-host-gap.sh.
  std::map<std::string, double> call_overhead_us;
};
constexpr double kMaxCallOverheadUs = 1000;  // the range of call_overhead_us: 0..this

// Appends checkpoint `file` (in `dir`) and its torch-free copy `net_file` to an entry with
// their sha256s and the layer widths.
void add_member(FamilyEntry& e, const std::string& dir, const std::string& file, const std::string& net_file,
                const std::vector<int64_t>& layer_widths);
void add_member(FamilyEntry::FallbackNetwork& e, const std::string& dir, const std::string& file,
                const std::string& net_file, const std::vector<int64_t>& layer_widths);
// The torch-free network file of a checkpoint: "bmm.s1.pt" -> "bmm.s1.tcmlp".
std::string net_file_for(const std::string& checkpoint_file);

// Throws ConfigError for a missing/malformed manifest or a schema version other than
// kFeatureSchemaVersion ("retrain with `tilecast train`").
// Entries of the families in `replaced` are skipped unread (a run that retrains them).
WeightsManifest load_manifest(const std::string& dir, const std::set<std::string>& replaced = {});
// Missing manifest -> empty manifest with the current schema version.
WeightsManifest load_manifest_or_empty(const std::string& dir, const std::set<std::string>& replaced = {});
// Writes atomically (temp file + rename).
void save_manifest(const std::string& dir, const WeightsManifest& m);

// A weights folder is replaced only as a whole, and only by a run that succeeded:
// `train` writes into a staging folder beside it (.NAME.staging, started as a copy of the
// current folder so that families not retrained are kept) and install() swaps the two
// atomically (renameat2 RENAME_EXCHANGE). A run that throws removes the staging folder; a
// run killed with -9 leaves it, and the next run removes it. A lock (.NAME.lock beside the
// folder) refuses a second concurrent `train` on the same --out.
// The --out checks of WeightsStaging, without touching anything (train runs them before it
// reads any data): ConfigError for a file, the bundled weights/ folder, or a non-empty folder
// without manifest.yaml, unless `force`. Returns true for a forced non-weights folder.
bool check_weights_out(const std::string& out_dir, bool force);

class WeightsStaging {
 public:
  // Refuses (ConfigError) an --out that is a file, the bundled weights/ folder, or a
  // non-empty folder without manifest.yaml, unless `force`.
  WeightsStaging(const std::string& out_dir, bool force);
  ~WeightsStaging();
  WeightsStaging(const WeightsStaging&) = delete;
  WeightsStaging& operator=(const WeightsStaging&) = delete;
  const std::string& dir() const { return staging_; }
  // Swaps the staging folder in place of out_dir (the previous contents are removed).
  void install();
  // Interrupted run: out_dir is left as it was; the partial folder is kept as
  // OUT.interrupted (returned) for inspection.
  std::string keep_interrupted();

 private:
  std::string out_, staging_;
  bool foreign_ = false;  // --force onto a non-weights folder: files are moved in one by one
  bool done_ = false;
  std::unique_ptr<FileLock> lock_;
};

// The lock of a weights folder (".NAME.lock" beside it): held by `train` and
// `export-weights` while they change the folder.
std::unique_ptr<FileLock> lock_weights_folder(const std::string& dir);

// The folder, inside a weights folder, of the training GPUs' specs as training read them (one
// YAML per GPU, gpu_spec_to_yaml), which forecasting compares an unseen GPU with
// (KernelPredictor::hold_in_spec_order). A folder without it forecasts as before it.
constexpr const char* kRecordedGpuDir = "gpus";

// Weights folder: `flag`, else $TILECAST_WEIGHTS_DIR, else the source tree's weights/.
std::string weights_dir(const std::string& flag = "");
// Config folder (gpus/, predictors/): $TILECAST_CONFIG_DIR, else the source tree's configs/.
std::string config_dir();

}  // namespace tilecast::trainer
