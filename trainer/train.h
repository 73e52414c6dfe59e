#pragma once
// Training of the per-family MLPs (no torch in this header).
#include <map>
#include <string>
#include <vector>

#include "core/gpu_spec.h"
#include "core/kernel_dataset.h"
#include "core/tile_table.h"
#include "trainer/predictor_config.h"
#include "trainer/weights_manifest.h"

namespace tilecast::trainer {

struct FamilyResult {
  Family family = Family::kBmm;
  int64_t rows_train = 0, rows_val = 0;
  double val_mape_pct = 0;      // best epoch's validation MAPE
  double first_val_mape_pct = 0;  // after epoch 1
  int best_epoch = 0, epochs_run = 0;
  double seconds = 0;
  double samples_per_s = 0;     // training samples processed per second
  std::vector<int64_t> layer_widths;  // of the trained network
  std::vector<double> feature_min, feature_max;  // over the training rows
  bool interrupted = false;
};

// Trains one family on `samples` (all must belong to `cfg.family` and to GPUs in `gpus`),
// writes the best checkpoint to `out_file` (atomically, whenever validation improves).
// Tiles come from `tiles`, exactly as at forecast time.
// `floor_ms` > 0: latency = max(bound, floor_ms) x exp(o) (PredictorConfig::launch_floor);
// `prior`: latency = fitted_roofline_s(bounds, *prior) x exp(o) (PredictorConfig::prior).
FamilyResult train_family(const PredictorConfig& cfg, const std::vector<KernelSample>& samples,
                          const TileTable& tiles, const GpuRegistry& gpus,
                          const std::string& out_file, bool quiet = false, double floor_ms = 0,
                          const FittedRoofline* prior = nullptr, bool fallback_base = false,
                          const std::map<std::string, FittedRoofline>* library_prior = nullptr);
// `fallback_base`: the rows are a fallback library's (fallback_attention); the base is computed
// on the work that kernel does (fallback_physics_query), the features on the query as asked.
// `library_prior` (config.prior_base_by_library): a row whose kernel library has a fit of its own
// there takes that fit as its base in place of `prior` (FamilyEntry::base_prior).
// The fewest rows of a fallback library that train a network of their own (fewer: its fitted
// roofline alone forecasts them).
constexpr size_t kMinFallbackNetworkRows = 200;
// The fewest training rows of one kernel library that fit numbers of its own (its costs,
// fit_library_costs, or its own fitted roofline, config.prior_base_by_library); fewer: the
// family's shared fit stands for it.
constexpr size_t kMinLibraryRows = 1000;
// A family's training rows by kernel library (kernel_library of each row's query on its GPU),
// the libraries with at least kMinLibraryRows rows only; rows of a family without libraries
// (GEMM) are in none.
std::map<std::string, std::vector<const KernelSample*>> rows_by_library(const std::vector<KernelSample>& rows,
                                                                        const GpuRegistry& gpus);

// Per kernel library (kernel_library of each row's query on its GPU; rows of a family without
// libraries, e.g. GEMM, are skipped) with at least kMinLibraryRows rows (rows_by_library):
// with `cta` (config.prior_cta_by_library), the cost per CTA in nanoseconds
// (FittedRoofline::cta_ns; a log grid of 121 points from 1 to 1,000); with `sm_rate`
// (config.prior_sm_rate_by_library), the rate of loads per SM (FittedRoofline::sm_bytes_per_cycle;
// a log grid of 97 points from 0.32 to 3,162 bytes per SM-cycle); each the value minimising the
// mean |log(fitted / measured)| over the library's rows with `prior`'s other numbers held, both
// fitted in turn (rate, cost, rate again); with `floor` (config.prior_floor_by_library), first
// the library's own per-launch floor in thousands of SM cycles in place of the shared floor (a
// log grid of 121 points from 0.2 to 200), and again after the others; a library appears where
// any of them lowers that mean.
struct LibraryCosts {
  double cta_ns = 0, sm_bytes_per_cycle = 0, floor_kcycles = 0;
};
std::map<std::string, LibraryCosts> fit_library_costs(const std::vector<KernelSample>& rows, const TileTable& tiles,
                                                      const GpuRegistry& gpus, const FittedRoofline& prior, bool cta,
                                                      bool sm_rate, bool floor = false);
// The fitted roofline (fit_roofline) of a family's training rows, their bounds computed as a
// forecast computes them; `in_cycles`: floor and per-wave cost in SM clock cycles; `cap_memory`:
// the DRAM efficiency at most the largest per-GPU median of time at DRAM speed / measured over
// the rows whose bytes exceed 4x the GPU's L2 (GPUs with at least 20 such rows; none: no cap).
// `min_eta`: fit_roofline's. The second form takes the rows by pointer (rows_by_library's
// groups), without a copy of them.
FittedRoofline fit_family_roofline(const std::vector<KernelSample>& rows, const TileTable& tiles,
                                   const GpuRegistry& gpus, bool in_cycles = false, bool cap_memory = false,
                                   double min_eta = kMinFittedEta);
FittedRoofline fit_family_roofline(const std::vector<const KernelSample*>& rows, const TileTable& tiles,
                                   const GpuRegistry& gpus, bool in_cycles = false, bool cap_memory = false,
                                   double min_eta = kMinFittedEta);

// The per-launch floor of a family's rows: for each GPU the 1st percentile of its measured
// latencies (a robust minimum), then the median over GPUs; ms.
// `per_gpu`, when given, receives each GPU's 1st percentile.
double fit_launch_floor_ms(const std::vector<KernelSample>& rows, std::map<std::string, double>* per_gpu = nullptr);

struct TrainOptions {
  std::string neusight_dir;         // data root (NeuSight's training GPUs), when data_dirs is empty
  std::string llm_dir;              // ../shared/llm-kernels: the LLM-era families (gemm)
  std::vector<std::string> exclude_gpus;  // device names left out (leave-one-GPU-out studies)
  std::string vendor = "nvidia";    // nvidia | amd: which training GPUs (the AMD predictor set: MI100, MI210)
  std::vector<std::string> data_dirs;  // instead: folders written by `tilecast collect`
  std::vector<std::string> added_dirs; // besides the default data: folders written by `tilecast collect`
  std::string out_dir;              // weights folder to write
  std::string predictor_config_dir; // configs/predictors
  std::vector<Family> families;     // empty = all five
  int epochs = 0;                   // >0 overrides the configs
  int64_t seed = -1;                // >=0 overrides the configs
  int64_t max_rows = -1;            // >=0 overrides the configs
  int holdout_shapes_pct = 0;       // >0: leave out this share of shapes (shape_held_out)
  bool force = false;               // allow --out onto the bundled weights or a foreign folder
  bool quiet = false;
};

// Loads NeuSight's training CSVs (five training GPUs only) and the LLM-era data, or the
// collected folders instead (data_dirs), or both (added_dirs: a lab's own GPUs beside the
// default training GPUs), builds the tile table and trains the families in turn, in a staging
// folder (WeightsStaging) that replaces out_dir only when every family succeeded. An
// interrupted run leaves out_dir as it was and keeps what it finished in OUT.interrupted.
std::vector<FamilyResult> run_training(const TrainOptions& opt, const GpuRegistry& gpus);

// Writes the torch-free network file (`.tcmlp`) of every checkpoint in the weights folder
// `dir` and records them in its manifest (weights written before tilecast 0.2 lack them).
// Each checkpoint's sha256 is verified first; the manifest is replaced atomically, under
// the folder's lock. Returns the number of networks written.
int export_networks(const std::string& dir);
// Records the feature ranges of NeuSight-family entries that lack them (weights trained before
// tilecast 0.2), from NeuSight's training rows featurised with the folder's tile table:
// report-only (clamp_features false). Returns the number of families updated.
int record_feature_ranges(const std::string& dir, const std::string& neusight_dir, const GpuRegistry& gpus);

}  // namespace tilecast::trainer
