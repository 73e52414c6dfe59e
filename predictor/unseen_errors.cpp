#include "predictor/unseen_errors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs_util.h"
#include "core/log.h"

namespace tilecast::predictor {

double UnseenGpuError::mean_pct() const {
  return mape_pct.empty() ? 0.0 : std::accumulate(mape_pct.begin(), mape_pct.end(), 0.0) / double(mape_pct.size());
}
double UnseenGpuError::min_pct() const {
  return mape_pct.empty() ? 0.0 : *std::min_element(mape_pct.begin(), mape_pct.end());
}
double UnseenGpuError::max_pct() const {
  return mape_pct.empty() ? 0.0 : *std::max_element(mape_pct.begin(), mape_pct.end());
}

std::string UnseenGpuError::text() const {
  char buf[256];
  if (mape_pct.size() == 1)
    std::snprintf(buf, sizeof buf, "%s %.1f %% (%s left out)", key.c_str(), mape_pct[0], left_out[0].c_str());
  else
    std::snprintf(buf, sizeof buf, "%s %.1f %% (%.1f-%.1f %% over %zu GPUs left out in turn)", key.c_str(), mean_pct(),
                  min_pct(), max_pct(), mape_pct.size());
  return buf;
}

std::string unseen_error_key(const KernelQuery& q) {
  const Family f = op_family(q.op);
  if (f == Family::kMemoryOp) return op_name(q.op);
  return std::string(family_name(f)) + "/" + dtype_name(q.dtype);
}

namespace {
// The family a cell's key belongs to: the part before '/', memory ops' names to memory_op.
bool key_in_family(const std::string& key, const std::string& family) {
  if (family == family_name(Family::kMemoryOp)) {
    for (const auto& t : kOpTable)
      if (t.family == Family::kMemoryOp && key == t.name) return true;
    return false;
  }
  return key.rfind(family + "/", 0) == 0 && key.size() > family.size() + 1;
}

const nlohmann::json& field(const nlohmann::json& obj, const char* name, const std::string& where,
                            const std::string& path) {
  if (!obj.is_object() || !obj.contains(name))
    throw ConfigError(path + ": field '" + where + name + "' missing");
  return obj.at(name);
}
std::string string_field(const nlohmann::json& obj, const char* name, const std::string& where,
                         const std::string& path) {
  const auto& v = field(obj, name, where, path);
  if (!v.is_string() || v.get<std::string>().empty())
    throw ConfigError(path + ": field '" + where + name + "': expected a non-empty string");
  return v.get<std::string>();
}
double number_field(const nlohmann::json& obj, const char* name, const std::string& where, const std::string& path,
                    double lo, double hi, bool lo_open) {
  const auto& v = field(obj, name, where, path);
  if (!v.is_number()) throw ConfigError(path + ": field '" + where + name + "': expected a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || (lo_open ? !(x > lo) : !(x >= lo)) || x > hi)
    throw ConfigError(path + ": field '" + where + name + "': " + std::to_string(x) + " out of range " +
                      (lo_open ? "(" : "[") + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}
}  // namespace

UnseenGpuErrors UnseenGpuErrors::load(const std::string& path, const trainer::WeightsManifest& manifest) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  const auto& families = field(j, "families", "", path);
  if (!families.is_object()) throw ConfigError(path + ": field 'families': expected an object");
  UnseenGpuErrors out;
  std::map<std::string, std::shared_ptr<UnseenGpuError>> building;
  for (const auto& [fam, entry] : families.items()) {
    const std::string where = "families." + fam + ".";
    bool known = false;
    for (Family f : kAllFamilies)
      if (is_llm_kernel_family(f) && fam == family_name(f)) known = true;
    if (!known) throw ConfigError(path + ": field 'families." + fam + "': not an LLM-era kernel family");
    const std::string trained_at = string_field(entry, "trained_at", where, path);
    const std::string data_hash = string_field(entry, "data_hash", where, path);
    const auto& cells = field(entry, "cells", where, path);
    if (!cells.is_array() || cells.empty())
      throw ConfigError(path + ": field '" + where + "cells': expected a non-empty array");
    std::vector<std::shared_ptr<UnseenGpuError>> mine;
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string at = where + "cells[" + std::to_string(i) + "].";
      const auto& c = cells[i];
      const std::string key = string_field(c, "key", at, path);
      if (!key_in_family(key, fam))
        throw ConfigError(path + ": field '" + at + "key': '" + key + "' is not a key of family " + fam);
      const std::string gpu = string_field(c, "left_out", at, path);
      number_field(c, "rows", at, path, 0, 1e12, true);
      const double mape = number_field(c, "mape_pct", at, path, 0, 1e6, false);
      const double bias = number_field(c, "bias", at, path, 0, 1e6, true);
      auto& e = building[key];
      if (!e) {
        e = std::make_shared<UnseenGpuError>();
        e->family = fam;
        e->key = key;
      }
      if (std::find(e->left_out.begin(), e->left_out.end(), gpu) != e->left_out.end())
        throw ConfigError(path + ": field '" + at + "left_out': " + gpu + " appears twice for " + key);
      e->left_out.push_back(gpu);
      e->mape_pct.push_back(mape);
      e->bias.push_back(bias);
    }
    // Figures of an earlier training (or fit) of the family say nothing about this one.
    std::string now_at, now_hash;
    if (fam == family_name(Family::kMemoryOp)) {
      now_at = manifest.memory_ops.fitted_at;
      now_hash = manifest.memory_ops.data_hash;
    } else if (const auto it = manifest.families.find(fam); it != manifest.families.end()) {
      now_at = it->second.trained_at;
      now_hash = it->second.data_hash;
    }
    if (now_at != trained_at || now_hash != data_hash) {
      out.stale_.push_back(fam);
      TC_LOG(Debug) << path << ": family " << fam << " was trained at " << (now_at.empty() ? "(absent)" : now_at)
                    << " on data " << (now_hash.empty() ? "(absent)" : now_hash) << ", its leave-one-GPU-out figures at "
                    << trained_at << " on " << data_hash << ": not quoted";
      for (auto it = building.begin(); it != building.end();)
        it = it->second->family == fam ? building.erase(it) : std::next(it);
    }
  }
  for (auto& [key, e] : building) out.by_key_[key] = e;
  return out;
}

std::shared_ptr<const UnseenGpuError> UnseenGpuErrors::find(const KernelQuery& q) const {
  const auto it = by_key_.find(unseen_error_key(q));
  return it == by_key_.end() ? nullptr : it->second;
}

}  // namespace tilecast::predictor
