#include "trainer/weights_manifest.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/kernel.h"

namespace fs = std::filesystem;

namespace tilecast::trainer {

namespace {
std::string manifest_path(const std::string& dir) { return (fs::path(dir) / "manifest.yaml").string(); }
}  // namespace

WeightsManifest load_manifest(const std::string& dir) {
  const std::string path = manifest_path(dir);
  if (!fs::exists(path))
    throw ConfigError(path + ": weights manifest not found (train with `tilecast train` or pass --weights DIR)");
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ": malformed YAML: " + e.msg);
  }
  WeightsManifest m;
  try {
    if (!root["feature_schema_version"]) throw ConfigError(path + ": missing field 'feature_schema_version'");
    m.feature_schema_version = root["feature_schema_version"].as<int>();
    if (m.feature_schema_version != kFeatureSchemaVersion)
      throw ConfigError(path + ": field 'feature_schema_version': weights use schema " +
                        std::to_string(m.feature_schema_version) + ", this build needs " +
                        std::to_string(kFeatureSchemaVersion) + " (retrain with `tilecast train`)");
    if (root["tile_table"]) m.tile_table = root["tile_table"].as<std::string>();
    if (root["families"]) {
      for (const auto& kv : root["families"]) {
        const auto name = kv.first.as<std::string>();
        const YAML::Node n = kv.second;
        FamilyEntry e;
        for (const auto& f : n["files"]) e.files.push_back(f.as<std::string>());
        if (e.files.empty()) throw ConfigError(path + ": family '" + name + "': field 'files' is empty");
        for (const auto& f : n["features"]) e.features.push_back(f.as<std::string>());
        e.config.family = family_from_string(name);
        const YAML::Node c = n["config"];
        e.config.num_layers = c["num_layers"].as<int>();
        e.config.hidden_size = c["hidden_size"].as<int>();
        e.config.lr = c["lr"].as<double>();
        e.config.weight_decay = c["weight_decay"].as<double>();
        e.config.lr_schedule = c["lr_schedule"].as<std::string>();
        e.config.batch_size = c["batch_size"].as<int>();
        e.config.val_batch_size = c["val_batch_size"].as<int>();
        e.config.epochs = c["epochs"].as<int>();
        e.config.val_fraction = c["val_fraction"].as<double>();
        e.config.seed = c["seed"].as<uint64_t>();
        e.config.max_rows = c["max_rows"].as<int64_t>();
        e.config.ensemble = c["ensemble"].as<int>();
        e.rows_train = n["rows_train"].as<int64_t>();
        e.rows_val = n["rows_val"].as<int64_t>();
        e.val_mape_pct = n["val_mape_pct"].as<double>();
        for (const auto& v : n["member_val_mape_pct"]) e.member_val_mape_pct.push_back(v.as<double>());
        e.best_epoch = n["best_epoch"].as<int>();
        e.train_seconds = n["train_seconds"].as<double>();
        e.data_hash = n["data_hash"].as<std::string>();
        for (const auto& g : n["training_gpus"]) e.training_gpus.push_back(g.as<std::string>());
        e.trained_at = n["trained_at"].as<std::string>();
        if (e.features != feature_names(e.config.family))
          throw ConfigError(path + ": family '" + name + "': feature list differs from this build's schema (retrain)");
        m.families[name] = e;
      }
    }
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ": malformed manifest: " + e.msg);
  }
  return m;
}

WeightsManifest load_manifest_or_empty(const std::string& dir) {
  if (!fs::exists(manifest_path(dir))) {
    WeightsManifest m;
    m.feature_schema_version = kFeatureSchemaVersion;
    return m;
  }
  return load_manifest(dir);
}

void save_manifest(const std::string& dir, const WeightsManifest& m) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "feature_schema_version" << YAML::Value << m.feature_schema_version;
  out << YAML::Key << "tile_table" << YAML::Value << m.tile_table;
  out << YAML::Key << "families" << YAML::Value << YAML::BeginMap;
  for (const auto& kv : m.families) {
    const FamilyEntry& e = kv.second;
    out << YAML::Key << kv.first << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "files" << YAML::Value << YAML::Flow << e.files;
    out << YAML::Key << "features" << YAML::Value << YAML::Flow << e.features;
    out << YAML::Key << "config" << YAML::Value << YAML::Load(predictor_config_to_yaml(e.config));
    out << YAML::Key << "rows_train" << YAML::Value << e.rows_train;
    out << YAML::Key << "rows_val" << YAML::Value << e.rows_val;
    out << YAML::Key << "val_mape_pct" << YAML::Value << e.val_mape_pct;
    out << YAML::Key << "member_val_mape_pct" << YAML::Value << YAML::Flow << e.member_val_mape_pct;
    out << YAML::Key << "best_epoch" << YAML::Value << e.best_epoch;
    out << YAML::Key << "train_seconds" << YAML::Value << e.train_seconds;
    out << YAML::Key << "data_hash" << YAML::Value << e.data_hash;
    out << YAML::Key << "training_gpus" << YAML::Value << YAML::Flow << e.training_gpus;
    out << YAML::Key << "trained_at" << YAML::Value << e.trained_at;
    out << YAML::EndMap;
  }
  out << YAML::EndMap << YAML::EndMap;
  fs::create_directories(dir);
  const std::string path = manifest_path(dir), tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    if (!f) throw RuntimeError(tmp + ": cannot write");
    f << out.c_str() << "\n";
  }
  fs::rename(tmp, path);
}

std::string weights_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("TILECAST_WEIGHTS_DIR"); env && *env) return env;
  return std::string(TILECAST_SOURCE_DIR) + "/weights";
}

std::string config_dir() {
  if (const char* env = std::getenv("TILECAST_CONFIG_DIR"); env && *env) return env;
  return std::string(TILECAST_SOURCE_DIR) + "/configs";
}

}  // namespace tilecast::trainer
