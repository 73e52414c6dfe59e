#pragma once
// weights/manifest.yaml: what a weights folder holds and how it was made.
#include <map>
#include <string>
#include <vector>

#include "trainer/predictor_config.h"

namespace tilecast::trainer {

struct FamilyEntry {
  std::vector<std::string> files;     // ensemble members, e.g. "bmm.pt", "bmm.s1.pt" (relative)
  std::vector<std::string> features;  // feature names in input order
  PredictorConfig config;
  int64_t rows_train = 0, rows_val = 0;
  double val_mape_pct = 0;   // mean over members of the best validation MAPE (held-out rows)
  std::vector<double> member_val_mape_pct;
  int best_epoch = 0;
  double train_seconds = 0;
  std::string data_hash;     // FNV-1a of the training CSVs
  std::vector<std::string> training_gpus;
  std::string trained_at;    // ISO-8601 UTC
};

struct WeightsManifest {
  int feature_schema_version = 0;
  std::string tile_table = "tiles.csv";
  std::map<std::string, FamilyEntry> families;  // by family name
};

// Throws ConfigError for a missing/malformed manifest or a schema version other than
// kFeatureSchemaVersion ("retrain with `tilecast train`").
WeightsManifest load_manifest(const std::string& dir);
// Missing manifest -> empty manifest with the current schema version.
WeightsManifest load_manifest_or_empty(const std::string& dir);
// Writes atomically (temp file + rename).
void save_manifest(const std::string& dir, const WeightsManifest& m);

// Weights folder: `flag`, else $TILECAST_WEIGHTS_DIR, else the source tree's weights/.
std::string weights_dir(const std::string& flag = "");
// Config folder (gpus/, predictors/): $TILECAST_CONFIG_DIR, else the source tree's configs/.
std::string config_dir();

}  // namespace tilecast::trainer
