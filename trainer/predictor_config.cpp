#include "trainer/predictor_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "core/config_io.h"
#include "core/error.h"
#include "core/kernel.h"

namespace tilecast::trainer {
namespace {
template <typename T>
T field(const YAML::Node& n, const std::string& key, const std::string& path) {
  return yaml_get<T>(n, key, path);
}
void range(double v, double lo, double hi, const std::string& key, const std::string& path) {
  check_range(v, lo, hi, key, path);
}
}  // namespace

std::string config_conflict(const PredictorConfig& c) {
  if (c.prior_floor != "us" && c.prior_floor != "cycles") return "field 'prior_floor': expected us or cycles";
  if (c.network_gpus != "all" && c.network_gpus != "trained" && c.network_gpus != "twins")
    return "field 'network_gpus': expected all, trained or twins";
  if (!(c.unseen_prior_weight >= 0 && c.unseen_prior_weight <= 1))
    return "field 'unseen_prior_weight': value " + g_text(c.unseen_prior_weight) + " outside [0, 1]";
  if (c.launch_floor && c.prior) return "fields 'launch_floor' and 'prior': choose one (the prior has its own floor)";
  if (c.prior_cta_by_library && !c.fits_roofline())
    return "field 'prior_cta_by_library' needs a fitted roofline ('prior: true' or network_gpus other than all)";
  if (c.prior_sm_rate_by_library && !c.fits_roofline())
    return "field 'prior_sm_rate_by_library' needs a fitted roofline ('prior: true' or network_gpus other than all)";
  if (c.prior_floor_by_library && !c.fits_roofline())
    return "field 'prior_floor_by_library' needs a fitted roofline ('prior: true' or network_gpus other than all)";
  if (c.prior_base_by_library && !c.prior)
    return "field 'prior_base_by_library' needs the fitted roofline as the networks' base ('prior: true')";
  if (c.prior_cap_memory && !c.fits_roofline())
    return "field 'prior_cap_memory' needs a fitted roofline ('prior: true' or network_gpus other than all)";
  if (c.prior_floor != "us" && !c.fits_roofline())
    return "field 'prior_floor' needs a fitted roofline ('prior: true' or network_gpus other than all)";
  if (c.unseen_prior_weight != 1.0 && c.network_gpus == "all")
    return "field 'unseen_prior_weight' needs network_gpus 'trained' or 'twins' (with 'all' no GPU is unseen)";
  if (!(c.gemm_composite_weight >= 0 && c.gemm_composite_weight < 1))
    return "field 'gemm_composite_weight': value " + g_text(c.gemm_composite_weight) + " outside [0, 1)";
  if (c.gemm_composite_weight > 0 && c.family != Family::kMoe)
    return "field 'gemm_composite_weight' applies to family moe only";
  if (c.gemm_composite_weight > 0 && c.network_gpus == "all")
    return "field 'gemm_composite_weight' needs network_gpus 'trained' or 'twins' (with 'all' no GPU is unseen)";
  return "";
}

PredictorConfig load_predictor_config(const std::string& path) {
  const YAML::Node root = load_yaml_map(path);
  static const std::set<std::string> known = {
      "family", "num_layers", "hidden_size", "lr", "weight_decay", "lr_schedule", "batch_size",
      "val_batch_size", "epochs", "val_fraction", "seed", "max_rows", "ensemble", "launch_floor", "prior", "prior_floor", "prior_cap_memory", "prior_cta_by_library", "prior_sm_rate_by_library", "prior_floor_by_library", "prior_base_by_library", "ignore_features", "network_gpus",
      "unseen_prior_weight", "gemm_composite_weight"};
  if (!root["family"]) throw ConfigError(path + ": missing field 'family'");
  PredictorConfig c;
  c.origin = path;
  c.family = family_from_string(field<std::string>(root["family"], "family", path));
  if (c.family == Family::kMemoryOp) {  // physics coefficients, no network: one field
    reject_unknown_keys(root, {"family", "l2_resident_fraction"}, path);
    if (root["l2_resident_fraction"])
      c.l2_resident_fraction = field<double>(root["l2_resident_fraction"], "l2_resident_fraction", path);
    range(c.l2_resident_fraction, 0, 1, "l2_resident_fraction", path);
    return c;
  }
  reject_unknown_keys(root, known, path);
  if (root["num_layers"]) c.num_layers = field<int>(root["num_layers"], "num_layers", path);
  if (root["hidden_size"]) c.hidden_size = field<int>(root["hidden_size"], "hidden_size", path);
  if (root["lr"]) c.lr = field<double>(root["lr"], "lr", path);
  if (root["weight_decay"]) c.weight_decay = field<double>(root["weight_decay"], "weight_decay", path);
  if (root["lr_schedule"]) c.lr_schedule = field<std::string>(root["lr_schedule"], "lr_schedule", path);
  if (root["batch_size"]) c.batch_size = field<int>(root["batch_size"], "batch_size", path);
  if (root["val_batch_size"]) c.val_batch_size = field<int>(root["val_batch_size"], "val_batch_size", path);
  if (root["epochs"]) c.epochs = field<int>(root["epochs"], "epochs", path);
  if (root["val_fraction"]) c.val_fraction = field<double>(root["val_fraction"], "val_fraction", path);
  if (root["seed"]) c.seed = field<uint64_t>(root["seed"], "seed", path);
  if (root["max_rows"]) c.max_rows = field<int64_t>(root["max_rows"], "max_rows", path);
  if (root["ensemble"]) c.ensemble = field<int>(root["ensemble"], "ensemble", path);
  if (root["launch_floor"]) c.launch_floor = field<bool>(root["launch_floor"], "launch_floor", path);
  if (root["prior"]) c.prior = field<bool>(root["prior"], "prior", path);
  if (root["prior_floor"]) c.prior_floor = field<std::string>(root["prior_floor"], "prior_floor", path);
  if (root["prior_cap_memory"]) c.prior_cap_memory = field<bool>(root["prior_cap_memory"], "prior_cap_memory", path);
  if (root["prior_cta_by_library"])
    c.prior_cta_by_library = field<bool>(root["prior_cta_by_library"], "prior_cta_by_library", path);
  if (root["prior_sm_rate_by_library"])
    c.prior_sm_rate_by_library = field<bool>(root["prior_sm_rate_by_library"], "prior_sm_rate_by_library", path);
  if (root["prior_floor_by_library"])
    c.prior_floor_by_library = field<bool>(root["prior_floor_by_library"], "prior_floor_by_library", path);
  if (root["prior_base_by_library"])
    c.prior_base_by_library = field<bool>(root["prior_base_by_library"], "prior_base_by_library", path);
  if (root["network_gpus"]) c.network_gpus = field<std::string>(root["network_gpus"], "network_gpus", path);
  if (root["unseen_prior_weight"])
    c.unseen_prior_weight = field<double>(root["unseen_prior_weight"], "unseen_prior_weight", path);
  if (root["gemm_composite_weight"])
    c.gemm_composite_weight = field<double>(root["gemm_composite_weight"], "gemm_composite_weight", path);
  if (root["ignore_features"]) {
    c.ignore_features = field<std::vector<std::string>>(root["ignore_features"], "ignore_features", path);
    const auto& names = feature_names(c.family);
    for (const auto& n : c.ignore_features)
      if (std::find(names.begin(), names.end(), n) == names.end())
        throw ConfigError(path + ": field 'ignore_features': '" + n + "' is not a feature of family " +
                          family_name(c.family));
  }
  if (const std::string why = config_conflict(c); !why.empty()) throw ConfigError(path + ": " + why);
  range(c.num_layers, 2, 64, "num_layers", path);
  range(c.hidden_size, 1, 8192, "hidden_size", path);
  range(c.lr, 1e-9, 1.0, "lr", path);
  range(c.weight_decay, 0, 10, "weight_decay", path);
  range(c.batch_size, 1, 1 << 20, "batch_size", path);
  range(c.val_batch_size, 1, 1 << 22, "val_batch_size", path);
  range(c.epochs, 1, 100000, "epochs", path);
  range(c.val_fraction, 0.01, 0.9, "val_fraction", path);
  range(static_cast<double>(c.max_rows), 0, 1e9, "max_rows", path);
  range(c.ensemble, 1, 32, "ensemble", path);
  if (c.lr_schedule != "constant" && c.lr_schedule != "cosine")
    throw ConfigError(path + ": field 'lr_schedule': expected constant or cosine");
  return c;
}

std::string predictor_config_to_yaml(const PredictorConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "family" << YAML::Value << family_name(c.family);
  if (c.family == Family::kMemoryOp) {
    out << YAML::Key << "l2_resident_fraction" << YAML::Value << c.l2_resident_fraction << YAML::EndMap;
    return out.c_str();
  }
  out << YAML::Key << "num_layers" << YAML::Value << c.num_layers;
  out << YAML::Key << "hidden_size" << YAML::Value << c.hidden_size;
  out << YAML::Key << "lr" << YAML::Value << c.lr;
  out << YAML::Key << "weight_decay" << YAML::Value << c.weight_decay;
  out << YAML::Key << "lr_schedule" << YAML::Value << c.lr_schedule;
  out << YAML::Key << "batch_size" << YAML::Value << c.batch_size;
  out << YAML::Key << "val_batch_size" << YAML::Value << c.val_batch_size;
  out << YAML::Key << "epochs" << YAML::Value << c.epochs;
  out << YAML::Key << "val_fraction" << YAML::Value << c.val_fraction;
  out << YAML::Key << "seed" << YAML::Value << c.seed;
  out << YAML::Key << "max_rows" << YAML::Value << c.max_rows;
  out << YAML::Key << "ensemble" << YAML::Value << c.ensemble;
  if (c.launch_floor) out << YAML::Key << "launch_floor" << YAML::Value << true;
  if (c.prior) out << YAML::Key << "prior" << YAML::Value << true;
  if (c.prior_floor != "us") out << YAML::Key << "prior_floor" << YAML::Value << c.prior_floor;
  if (c.prior_cap_memory) out << YAML::Key << "prior_cap_memory" << YAML::Value << true;
  if (c.prior_cta_by_library) out << YAML::Key << "prior_cta_by_library" << YAML::Value << true;
  if (c.prior_sm_rate_by_library) out << YAML::Key << "prior_sm_rate_by_library" << YAML::Value << true;
  if (c.prior_floor_by_library) out << YAML::Key << "prior_floor_by_library" << YAML::Value << true;
  if (c.prior_base_by_library) out << YAML::Key << "prior_base_by_library" << YAML::Value << true;
  if (c.network_gpus != "all") out << YAML::Key << "network_gpus" << YAML::Value << c.network_gpus;
  if (c.unseen_prior_weight != 1.0) out << YAML::Key << "unseen_prior_weight" << YAML::Value << c.unseen_prior_weight;
  if (c.gemm_composite_weight > 0)
    out << YAML::Key << "gemm_composite_weight" << YAML::Value << c.gemm_composite_weight;
  if (!c.ignore_features.empty()) out << YAML::Key << "ignore_features" << YAML::Value << YAML::Flow << c.ignore_features;
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace tilecast::trainer
