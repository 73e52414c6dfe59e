#include "trainer/weights_manifest.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <fcntl.h>
#include <stdio.h>

#include "core/error.h"
#include "core/fs_util.h"
#include "core/kernel.h"
#include "core/log.h"

namespace fs = std::filesystem;

namespace tilecast::trainer {

namespace {
std::string manifest_path(const std::string& dir) { return (fs::path(dir) / "manifest.yaml").string(); }

// A fitted roofline of a family entry (its `prior`, or the `fallback_prior` of a fallback kernel
// library), range-checked.
FittedRoofline read_prior(const YAML::Node& p, const std::string& path, const std::string& name, const char* key) {
  FittedRoofline r;
  r.floor_us = p["floor_us"].as<double>();
  r.wave_us = p["wave_us"].as<double>();
  r.eta_compute = p["eta_compute"].as<double>();
  r.eta_memory = p["eta_memory"].as<double>();
  if (p["floor_kcycles"]) r.floor_kcycles = p["floor_kcycles"].as<double>();
  if (p["wave_kcycles"]) r.wave_kcycles = p["wave_kcycles"].as<double>();
  const std::string where = path + ": family '" + name + "': " + key;
  if (!(r.floor_kcycles >= 0 && r.floor_kcycles < 1e6) || !(r.wave_kcycles >= 0 && r.wave_kcycles < 1e6))
    throw ConfigError(where + " out of range (floor_kcycles and wave_kcycles in [0, 1e6))");
  if (!(r.floor_us >= 0 && r.floor_us < 1e6) || !(r.wave_us >= 0 && r.wave_us < 1e6) ||
      !(r.eta_compute > 0 && r.eta_compute <= 10) || !(r.eta_memory > 0 && r.eta_memory <= 10))
    throw ConfigError(where + " out of range (floor_us and wave_us in [0, 1e6), eta_compute and eta_memory in (0, 10])");
  return r;
}

// A per-kernel-library map of a family entry (library_cta_ns, library_sm_bytes_per_cycle,
// library_floor_kcycles):
// library: a positive number below 1e6 in `unit`.
std::map<std::string, double> read_library_map(const YAML::Node& lib, const std::string& path, const std::string& name,
                                               const char* key, const char* unit) {
  const std::string where = path + ": family '" + name + "': " + key;
  if (!lib.IsMap()) throw ConfigError(where + ": expected a map of library: " + unit);
  std::map<std::string, double> out;
  for (const auto& kv : lib) {
    double v = 0;
    try {
      v = kv.second.as<double>();
    } catch (const YAML::Exception&) {
      throw ConfigError(where + ": " + kv.first.as<std::string>() + ": expected a number in " + unit);
    }
    if (!(v > 0 && v < 1e6))
      throw ConfigError(where + ": " + kv.first.as<std::string>() + " out of range (0, 1e6) " + unit);
    out[kv.first.as<std::string>()] = v;
  }
  return out;
}

void write_library_map(YAML::Emitter& out, const char* key, const std::map<std::string, double>& m) {
  if (m.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  for (const auto& [lib, v] : m) out << YAML::Key << lib << YAML::Value << v;
  out << YAML::EndMap;
}

// A network's members (a family's, or its fallback network's): checkpoints, torch-free copies,
// their checksums and layer widths; absent lists read as empty (the callers check them).
template <class Members>
void read_members(const YAML::Node& n, Members& m) {
  for (const auto& f : n["files"]) m.files.push_back(f.as<std::string>());
  for (const auto& f : n["sha256"]) m.sha256.push_back(f.as<std::string>());
  for (const auto& f : n["net_files"]) m.net_files.push_back(f.as<std::string>());
  for (const auto& f : n["net_sha256"]) m.net_sha256.push_back(f.as<std::string>());
  for (const auto& w : n["layer_widths"]) m.layer_widths.push_back(w.as<std::vector<int64_t>>());
}

template <class Members>
void write_members(YAML::Emitter& out, const Members& m) {
  out << YAML::Key << "files" << YAML::Value << YAML::Flow << m.files;
  out << YAML::Key << "sha256" << YAML::Value << m.sha256;
  if (!m.net_files.empty()) {
    out << YAML::Key << "net_files" << YAML::Value << YAML::Flow << m.net_files;
    out << YAML::Key << "net_sha256" << YAML::Value << m.net_sha256;
  }
  out << YAML::Key << "layer_widths" << YAML::Value << YAML::BeginSeq;
  for (const auto& w : m.layer_widths) out << YAML::Flow << w;
  out << YAML::EndSeq;
}

void write_prior(YAML::Emitter& out, const char* key, const FittedRoofline& p) {
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "floor_us" << YAML::Value << p.floor_us;
  out << YAML::Key << "wave_us" << YAML::Value << p.wave_us;
  out << YAML::Key << "eta_compute" << YAML::Value << p.eta_compute;
  if (p.floor_kcycles > 0 || p.wave_kcycles > 0) {
    out << YAML::Key << "floor_kcycles" << YAML::Value << p.floor_kcycles;
    out << YAML::Key << "wave_kcycles" << YAML::Value << p.wave_kcycles;
  }
  out << YAML::Key << "eta_memory" << YAML::Value << p.eta_memory;
  out << YAML::EndMap;
}
}  // namespace

WeightsManifest load_manifest(const std::string& dir, const std::set<std::string>& replaced) {
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
  std::string current;  // the family entry being read, for the error line
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
        if (replaced.count(name)) continue;
        current = name;
        const YAML::Node n = kv.second;
        FamilyEntry e;
        read_members(n, e);
        if (e.files.empty()) throw ConfigError(path + ": family '" + name + "': field 'files' is empty");
        for (const auto& f : n["features"]) e.features.push_back(f.as<std::string>());
        const std::string fam = path + ": family '" + name + "': field ";
        if (!n["sha256"] || !n["layer_widths"])
          throw ConfigError(fam + "'sha256'/'layer_widths' missing (weights from an older tilecast: retrain)");
        if (n["feature_min"]) e.feature_min = n["feature_min"].as<std::vector<double>>();
        if (n["feature_max"]) e.feature_max = n["feature_max"].as<std::vector<double>>();
        if (n["clamp_features"]) e.clamp_features = n["clamp_features"].as<bool>();
        if (e.feature_min.size() != e.feature_max.size() ||
            (!e.feature_min.empty() && e.feature_min.size() != e.features.size()))
          throw ConfigError(fam + "'feature_min'/'feature_max': one value per feature expected");
        if (e.sha256.size() != e.files.size() || e.layer_widths.size() != e.files.size())
          throw ConfigError(fam + "'sha256'/'layer_widths': one entry per file expected");
        if ((n["net_files"] || n["net_sha256"]) &&
            (e.net_files.size() != e.files.size() || e.net_sha256.size() != e.files.size()))
          throw ConfigError(fam + "'net_files'/'net_sha256': one entry per file expected");
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
        if (c["launch_floor"]) e.config.launch_floor = c["launch_floor"].as<bool>();
        if (c["prior"]) e.config.prior = c["prior"].as<bool>();
        if (c["prior_floor"]) e.config.prior_floor = c["prior_floor"].as<std::string>();
        if (c["prior_cap_memory"]) e.config.prior_cap_memory = c["prior_cap_memory"].as<bool>();
        if (c["prior_cta_by_library"]) e.config.prior_cta_by_library = c["prior_cta_by_library"].as<bool>();
        if (c["prior_sm_rate_by_library"]) e.config.prior_sm_rate_by_library = c["prior_sm_rate_by_library"].as<bool>();
        if (c["prior_floor_by_library"]) e.config.prior_floor_by_library = c["prior_floor_by_library"].as<bool>();
        if (c["prior_base_by_library"]) e.config.prior_base_by_library = c["prior_base_by_library"].as<bool>();
        if (c["network_gpus"]) e.config.network_gpus = c["network_gpus"].as<std::string>();
        if (c["unseen_prior_weight"]) e.config.unseen_prior_weight = c["unseen_prior_weight"].as<double>();
        if (c["gemm_composite_weight"]) e.config.gemm_composite_weight = c["gemm_composite_weight"].as<double>();
        if (const std::string why = config_conflict(e.config); !why.empty())
          throw ConfigError(path + ": family '" + name + "': config: " + why);
        if (c["ignore_features"]) e.config.ignore_features = c["ignore_features"].as<std::vector<std::string>>();
        if (n["launch_floor_us"]) {
          e.launch_floor_us = n["launch_floor_us"].as<double>();
          if (!(e.launch_floor_us >= 0 && e.launch_floor_us < 1e6))
            throw ConfigError(path + ": family '" + name + "': launch_floor_us out of range [0, 1e6)");
        }
        if (n["prior"]) e.prior = read_prior(n["prior"], path, name, "prior");
        if (const YAML::Node lib = n["library_cta_ns"])
          e.library_cta_ns = read_library_map(lib, path, name, "library_cta_ns", "ns");
        if (const YAML::Node lib = n["library_sm_bytes_per_cycle"])
          e.library_sm_bytes_per_cycle = read_library_map(lib, path, name, "library_sm_bytes_per_cycle", "bytes per cycle");
        if (const YAML::Node lib = n["library_floor_kcycles"])
          e.library_floor_kcycles = read_library_map(lib, path, name, "library_floor_kcycles", "kcycles");
        if (const YAML::Node lib = n["library_prior"]) {
          if (!e.config.prior_base_by_library)
            throw ConfigError(path + ": family '" + name +
                              "': library_prior without config.prior_base_by_library (the networks were trained on "
                              "the shared fit; retrain)");
          if (!lib.IsMap())
            throw ConfigError(path + ": family '" + name + "': library_prior: expected a map of library: fitted roofline");
          for (const auto& kv : lib) {
            const std::string key = "library_prior: " + kv.first.as<std::string>();
            e.library_prior[kv.first.as<std::string>()] = read_prior(kv.second, path, name, key.c_str());
          }
        }
        if (n["fallback_prior"]) {
          e.fallback_prior = read_prior(n["fallback_prior"], path, name, "fallback_prior");
          e.has_fallback_prior = true;
        }
        if (const YAML::Node f = n["fallback_network"]) {
          const std::string fn = path + ": family '" + name + "': fallback_network: field ";
          if (!e.has_fallback_prior) throw ConfigError(fn + "'fallback_prior' missing (the base the network corrects)");
          auto& fb = e.fallback_network;
          read_members(f, fb);
          for (const auto& v : f["member_val_mape_pct"]) fb.member_val_mape_pct.push_back(v.as<double>());
          for (const auto& g : f["training_gpus"]) fb.training_gpus.push_back(g.as<std::string>());
          fb.feature_min = f["feature_min"].as<std::vector<double>>();
          fb.feature_max = f["feature_max"].as<std::vector<double>>();
          fb.rows_train = f["rows_train"].as<int64_t>();
          fb.rows_val = f["rows_val"].as<int64_t>();
          if (fb.files.empty()) throw ConfigError(fn + "'files' is empty");
          if (fb.sha256.size() != fb.files.size() || fb.net_files.size() != fb.files.size() ||
              fb.net_sha256.size() != fb.files.size() || fb.layer_widths.size() != fb.files.size())
            throw ConfigError(fn + "'sha256'/'net_files'/'net_sha256'/'layer_widths': one entry per file expected");
          if (fb.feature_min.size() != e.features.size() || fb.feature_max.size() != e.features.size())
            throw ConfigError(fn + "'feature_min'/'feature_max': one value per feature expected");
          for (const auto& w : fb.layer_widths)
            if (w.size() < 2 || w.front() != static_cast<int64_t>(e.features.size()) || w.back() != 1)
              throw ConfigError(fn + "'layer_widths': [features, hidden..., 1] expected");
        }
        if (e.config.fits_roofline() != static_cast<bool>(n["prior"]))
          throw ConfigError(path + ": family '" + name + "': config (prior, network_gpus) and the 'prior' entry disagree");
        e.rows_train = n["rows_train"].as<int64_t>();
        e.rows_val = n["rows_val"].as<int64_t>();
        e.val_mape_pct = n["val_mape_pct"].as<double>();
        for (const auto& v : n["member_val_mape_pct"]) e.member_val_mape_pct.push_back(v.as<double>());
        e.best_epoch = n["best_epoch"].as<int>();
        e.train_seconds = n["train_seconds"].as<double>();
        e.data_hash = n["data_hash"].as<std::string>();
        for (const auto& g : n["training_gpus"]) e.training_gpus.push_back(g.as<std::string>());
        for (const auto& g : n["training_gpu_specs"]) {
          GpuSpec s;
          s.cuda_name = g["cuda_name"].as<std::string>();
          s.vendor = g["vendor"].as<std::string>();
          s.compute_capability = g["compute_capability"].as<double>();
          s.num_sms = g["num_sms"].as<int>();
          s.mem_bw_gbps = g["mem_bw_gbps"].as<double>();
          if (!(s.compute_capability >= 0 && s.compute_capability < 100) || !(s.num_sms > 0 && s.num_sms < 100000) ||
              !(s.mem_bw_gbps > 0 && s.mem_bw_gbps < 1e6))
            throw ConfigError(path + ": family '" + name + "': training_gpu_specs: '" + s.cuda_name +
                              "' out of range (compute_capability in [0, 100), num_sms in (0, 1e5), mem_bw_gbps in (0, 1e6))");
          e.training_gpu_specs.push_back(s);
        }
        if (e.config.network_gpus == "twins" && e.training_gpu_specs.size() != e.training_gpus.size())
          throw ConfigError(path + ": family '" + name + "': config.network_gpus: twins needs training_gpu_specs for every training GPU (retrain)");
        e.trained_at = n["trained_at"].as<std::string>();
        if (n["holdout_shapes_pct"]) e.holdout_shapes_pct = n["holdout_shapes_pct"].as<int>();
        if (e.features != feature_names(e.config.family))
          throw ConfigError(path + ": family '" + name + "': feature list differs from this build's schema (retrain)");
        // The recorded architecture must agree with the config the network is rebuilt from.
        for (const auto& w : e.layer_widths) {
          bool ok = static_cast<int>(w.size()) == e.config.num_layers + 1 && w.front() == static_cast<int64_t>(e.features.size()) &&
                    w.back() == 1;
          for (size_t i = 1; ok && i + 1 < w.size(); ++i) ok = w[i] == e.config.hidden_size;
          if (!ok)
            throw ConfigError(fam + "'config': num_layers " + std::to_string(e.config.num_layers) + " / hidden_size " +
                              std::to_string(e.config.hidden_size) + " disagree with 'layer_widths' (edited manifest?)");
        }
        m.families[name] = e;
      }
    }
    if (const YAML::Node n = root["call_overhead_us"]) {
      current = "";
      if (!n.IsMap()) throw ConfigError(path + ": field 'call_overhead_us': expected a map of family: microseconds");
      for (const auto& kv : n) {
        const std::string fam = kv.first.as<std::string>();
        if (std::none_of(kAllFamilies.begin(), kAllFamilies.end(),
                         [&](Family f) { return is_mlp_family(f) && fam == family_name(f); }))
          throw ConfigError(path + ": field 'call_overhead_us': '" + fam + "' is not a network family");
        double us = -1;
        try {
          us = kv.second.as<double>();
        } catch (const YAML::Exception&) {  // not a number: the range message below
        }
        if (!(us >= 0 && us <= kMaxCallOverheadUs))
          throw ConfigError(path + ": field 'call_overhead_us': '" + fam + "': expected 0.." +
                            std::to_string(int(kMaxCallOverheadUs)) + " microseconds");
        m.call_overhead_us[fam] = us;
      }
    }
    if (root["memory_ops"] && !replaced.count("memory_op")) {
      current = "memory_op";
      const YAML::Node n = root["memory_ops"];
      MemoryOpEntry& e = m.memory_ops;
      for (const auto& kv : n["coefficients"]) {
        const std::string op = kv.first.as<std::string>();
        OpKind k;
        if (!try_op_kind_from_string(op, &k) || op_family(k) != Family::kMemoryOp)
          throw ConfigError(path + ": memory_ops: '" + op + "' is not a memory op");
        MemoryOpCoeffs c;
        // Fitted before session 77: a floor in microseconds, a model this build does not run.
        if (kv.second["floor_us"] && !kv.second["floor_kcycles"])
          throw ConfigError(path + ": memory_ops: '" + op +
                            "': floor_us is the floor in microseconds of before session 77, not this build's "
                            "floor in SM cycles (retrain: tilecast train --family memory_op)");
        c.floor_kcycles = kv.second["floor_kcycles"].as<double>();
        c.dram_factor = kv.second["dram_factor"].as<double>();
        c.sm_cycles_per_byte = kv.second["sm_cycles_per_byte"].as<double>();
        c.rows = kv.second["rows"].as<int64_t>();
        // Absent in manifests fitted before session 26: every byte at DRAM speed.
        if (kv.second["l2_resident_fraction"]) c.l2_resident_fraction = kv.second["l2_resident_fraction"].as<double>();
        // Absent in manifests fitted before session 40: no latency-bound term.
        if (kv.second["thread_cycles_per_byte"])
          c.thread_cycles_per_byte = kv.second["thread_cycles_per_byte"].as<double>();
        if (!(c.l2_resident_fraction >= 0 && c.l2_resident_fraction <= 1))
          throw ConfigError(path + ": memory_ops: '" + op + "': field 'l2_resident_fraction': expected 0..1");
        if (!(c.floor_kcycles >= 0 && c.floor_kcycles < 1e6) || !(c.dram_factor >= 0 && c.dram_factor < 1e3) ||
            !(c.sm_cycles_per_byte >= 0 && c.sm_cycles_per_byte < 1e3) ||
            !(c.thread_cycles_per_byte >= 0 && c.thread_cycles_per_byte < 1e6) ||
            !(c.floor_kcycles > 0 || c.dram_factor > 0 || c.sm_cycles_per_byte > 0 || c.thread_cycles_per_byte > 0))
          // A floor alone is what fit_memory_op gives rows whose latency does not grow with
          // their bytes (a loaded CPU's, say); all four 0 is no model.
          throw ConfigError(path + ": memory_ops: '" + op + "': coefficients out of range (floor_kcycles in [0, 1e6), "
                            "dram_factor and sm_cycles_per_byte in [0, 1e3), thread_cycles_per_byte in [0, 1e6), "
                            "not all four 0)");
        e.ops[op] = c;
      }
      e.data_hash = n["data_hash"].as<std::string>();
      for (const auto& g : n["training_gpus"]) e.training_gpus.push_back(g.as<std::string>());
      e.fitted_at = n["fitted_at"].as<std::string>();
    }
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ": malformed manifest" + (current.empty() ? "" : " (family '" + current + "')") +
                      ": " + e.msg);
  }
  return m;
}

WeightsManifest load_manifest_or_empty(const std::string& dir, const std::set<std::string>& replaced) {
  if (!fs::exists(manifest_path(dir))) {
    WeightsManifest m;
    m.feature_schema_version = kFeatureSchemaVersion;
    return m;
  }
  return load_manifest(dir, replaced);
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
    write_members(out, e);
    out << YAML::Key << "features" << YAML::Value << YAML::Flow << e.features;
    if (!e.feature_min.empty()) {
      out << YAML::Key << "feature_min" << YAML::Value << YAML::Flow << e.feature_min;
      out << YAML::Key << "feature_max" << YAML::Value << YAML::Flow << e.feature_max;
      if (!e.clamp_features) out << YAML::Key << "clamp_features" << YAML::Value << false;
    }
    out << YAML::Key << "config" << YAML::Value << YAML::Load(predictor_config_to_yaml(e.config));
    out << YAML::Key << "rows_train" << YAML::Value << e.rows_train;
    out << YAML::Key << "rows_val" << YAML::Value << e.rows_val;
    out << YAML::Key << "val_mape_pct" << YAML::Value << e.val_mape_pct;
    out << YAML::Key << "member_val_mape_pct" << YAML::Value << YAML::Flow << e.member_val_mape_pct;
    out << YAML::Key << "best_epoch" << YAML::Value << e.best_epoch;
    out << YAML::Key << "train_seconds" << YAML::Value << e.train_seconds;
    out << YAML::Key << "data_hash" << YAML::Value << e.data_hash;
    out << YAML::Key << "training_gpus" << YAML::Value << YAML::Flow << e.training_gpus;
    if (!e.training_gpu_specs.empty()) {
      out << YAML::Key << "training_gpu_specs" << YAML::Value << YAML::BeginSeq;
      for (const auto& s : e.training_gpu_specs) {
        char cc[16];
        std::snprintf(cc, sizeof cc, "%.1f", s.compute_capability);  // as the GPU sheets write it
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "cuda_name" << YAML::Value << s.cuda_name << YAML::Key
            << "vendor" << YAML::Value << s.vendor << YAML::Key << "compute_capability" << YAML::Value << cc
            << YAML::Key << "num_sms" << YAML::Value << s.num_sms << YAML::Key << "mem_bw_gbps" << YAML::Value
            << s.mem_bw_gbps << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
    out << YAML::Key << "trained_at" << YAML::Value << e.trained_at;
    if (e.holdout_shapes_pct > 0) out << YAML::Key << "holdout_shapes_pct" << YAML::Value << e.holdout_shapes_pct;
    if (e.launch_floor_us > 0) out << YAML::Key << "launch_floor_us" << YAML::Value << e.launch_floor_us;
    if (e.has_prior()) write_prior(out, "prior", e.prior);
    write_library_map(out, "library_cta_ns", e.library_cta_ns);
    write_library_map(out, "library_sm_bytes_per_cycle", e.library_sm_bytes_per_cycle);
    write_library_map(out, "library_floor_kcycles", e.library_floor_kcycles);
    if (!e.library_prior.empty()) {
      out << YAML::Key << "library_prior" << YAML::Value << YAML::BeginMap;
      for (const auto& [library, p] : e.library_prior) write_prior(out, library.c_str(), p);
      out << YAML::EndMap;
    }
    if (e.has_fallback_prior) write_prior(out, "fallback_prior", e.fallback_prior);
    if (e.has_fallback_network()) {
      const auto& fb = e.fallback_network;
      out << YAML::Key << "fallback_network" << YAML::Value << YAML::BeginMap;
      write_members(out, fb);
      out << YAML::Key << "feature_min" << YAML::Value << YAML::Flow << fb.feature_min;
      out << YAML::Key << "feature_max" << YAML::Value << YAML::Flow << fb.feature_max;
      out << YAML::Key << "rows_train" << YAML::Value << fb.rows_train;
      out << YAML::Key << "rows_val" << YAML::Value << fb.rows_val;
      out << YAML::Key << "member_val_mape_pct" << YAML::Value << YAML::Flow << fb.member_val_mape_pct;
      out << YAML::Key << "training_gpus" << YAML::Value << YAML::Flow << fb.training_gpus;
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  if (!m.call_overhead_us.empty()) {
    out << YAML::Key << "call_overhead_us" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& kv : m.call_overhead_us) out << YAML::Key << kv.first << YAML::Value << kv.second;
    out << YAML::EndMap;
  }
  if (!m.memory_ops.ops.empty()) {
    out << YAML::Key << "memory_ops" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "coefficients" << YAML::Value << YAML::BeginMap;
    for (const auto& kv : m.memory_ops.ops) {
      out << YAML::Key << kv.first << YAML::Value << YAML::Flow << YAML::BeginMap;
      out << YAML::Key << "floor_kcycles" << YAML::Value << kv.second.floor_kcycles;
      out << YAML::Key << "dram_factor" << YAML::Value << kv.second.dram_factor;
      out << YAML::Key << "sm_cycles_per_byte" << YAML::Value << kv.second.sm_cycles_per_byte;
      out << YAML::Key << "thread_cycles_per_byte" << YAML::Value << kv.second.thread_cycles_per_byte;
      out << YAML::Key << "l2_resident_fraction" << YAML::Value << kv.second.l2_resident_fraction;
      out << YAML::Key << "rows" << YAML::Value << kv.second.rows;
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
    out << YAML::Key << "data_hash" << YAML::Value << m.memory_ops.data_hash;
    out << YAML::Key << "training_gpus" << YAML::Value << YAML::Flow << m.memory_ops.training_gpus;
    out << YAML::Key << "fitted_at" << YAML::Value << m.memory_ops.fitted_at;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  fs::create_directories(dir);
  write_file_atomic(manifest_path(dir), std::string(out.c_str()) + "\n");
}

namespace {
template <class Members>
void append_member(Members& e, const std::string& dir, const std::string& file, const std::string& net_file,
                   const std::vector<int64_t>& layer_widths) {
  e.files.push_back(file);
  e.sha256.push_back(sha256_file((fs::path(dir) / file).string()));
  e.net_files.push_back(net_file);
  e.net_sha256.push_back(sha256_file((fs::path(dir) / net_file).string()));
  e.layer_widths.push_back(layer_widths);
}
}  // namespace

void add_member(FamilyEntry& e, const std::string& dir, const std::string& file, const std::string& net_file,
                const std::vector<int64_t>& layer_widths) {
  append_member(e, dir, file, net_file, layer_widths);
}

void add_member(FamilyEntry::FallbackNetwork& e, const std::string& dir, const std::string& file,
                const std::string& net_file, const std::vector<int64_t>& layer_widths) {
  append_member(e, dir, file, net_file, layer_widths);
}

std::string net_file_for(const std::string& checkpoint_file) {
  return fs::path(checkpoint_file).replace_extension(".tcmlp").string();
}

namespace {

bool is_weights_folder(const fs::path& p) { return fs::is_regular_file(p / "manifest.yaml"); }

std::string bundled_weights_dir() { return std::string(TILECAST_SOURCE_DIR) + "/weights"; }

}  // namespace

std::unique_ptr<FileLock> lock_weights_folder(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const fs::path p = fs::absolute(d);
  return std::make_unique<FileLock>((p.parent_path() / ("." + p.filename().string() + ".lock")).string(),
                                    "weights folder '" + d + "'");
}

bool check_weights_out(const std::string& out_dir, bool force) {
  std::string d = out_dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const fs::path out(d);
  if (fs::exists(out) && !fs::is_directory(out)) throw ConfigError("--out '" + d + "': exists and is not a folder");
  if (!force && same_or_inside(d, bundled_weights_dir()))
    throw ConfigError("--out '" + d + "': is the bundled weights folder; pass --force to replace it");
  const bool non_empty = fs::is_directory(out) && !fs::is_empty(out);
  if (non_empty && !is_weights_folder(out)) {
    if (!force)
      throw ConfigError("--out '" + d + "': folder is not empty and is not a tilecast weights folder "
                        "(no manifest.yaml); pass --force to write into it");
    return true;
  }
  return false;
}

WeightsStaging::WeightsStaging(const std::string& out_dir, bool force) : out_(out_dir) {
  while (out_.size() > 1 && out_.back() == '/') out_.pop_back();
  const fs::path out(out_);
  foreign_ = check_weights_out(out_, force);
  const bool non_empty = fs::is_directory(out) && !fs::is_empty(out);
  const fs::path parent = fs::absolute(out).parent_path();
  fs::create_directories(parent);
  const std::string name = out.filename().string();
  lock_ = lock_weights_folder(out_);
  staging_ = (parent / ("." + name + ".staging")).string();
  if (fs::exists(staging_)) {
    TC_LOG(Warn) << "removing " << staging_ << " left by an earlier train that did not finish";
    fs::remove_all(staging_);
  }
  fs::create_directories(staging_);
  // Families that are not retrained keep their checkpoints: start from the current folder.
  // Sub-folders (the AMD set in weights/amd) are kept too.
  if (non_empty && !foreign_)
    for (const auto& e : fs::directory_iterator(out)) {
      if (e.is_regular_file()) fs::copy_file(e.path(), fs::path(staging_) / e.path().filename());
      else if (e.is_directory() && !e.is_symlink() && e.path().filename().string().rfind('.', 0) != 0)
        fs::copy(e.path(), fs::path(staging_) / e.path().filename(), fs::copy_options::recursive);
    }
}

WeightsStaging::~WeightsStaging() {
  if (!done_) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
}

void WeightsStaging::install() {
  TC_CHECK(!done_, "install twice");
  const fs::path out(out_);
  if (foreign_) {
    // --force into a folder that holds other things: move our files in, manifest last.
    for (const auto& e : fs::directory_iterator(staging_))
      if (e.path().filename() != "manifest.yaml") fs::rename(e.path(), out / e.path().filename());
    fs::rename(fs::path(staging_) / "manifest.yaml", out / "manifest.yaml");
    fs::remove_all(staging_);
  } else if (!fs::exists(out)) {
    fs::rename(staging_, out);
  } else if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, out_.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(staging_);  // now holds the previous weights
  } else {
    // Filesystems without RENAME_EXCHANGE: two renames (a window where out_dir is absent).
    const std::string old = staging_ + ".old";
    fs::remove_all(old);
    fs::rename(out, old);
    fs::rename(staging_, out);
    fs::remove_all(old);
  }
  done_ = true;
}

std::string WeightsStaging::keep_interrupted() {
  TC_CHECK(!done_, "keep after install");
  const std::string dst = out_ + ".interrupted";
  fs::remove_all(dst);
  fs::rename(staging_, dst);
  done_ = true;
  return dst;
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
