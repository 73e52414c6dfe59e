#include "predictor/forecast_errors.h"

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

std::string HeldoutShapesError::text() const {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %.1f %% (%lld rows)", key.c_str(), mape_pct, static_cast<long long>(rows));
  return buf;
}

std::string forecast_error_key(const KernelQuery& q) {
  const Family f = op_family(q.op);
  if (f == Family::kMemoryOp) return op_name(q.op);
  return std::string(family_name(f)) + "/" + dtype_name(q.dtype);
}

namespace {
// Whether a cell's key is one of `family`'s: "<family>/<dtype>", or for memory_op a memory op's name.
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

namespace {
// One cell of a cells array: its key (of family `fam`), GPU (field `gpu_field`), rows, MAPE, bias.
struct Cell {
  std::string key, gpu;
  int64_t rows;
  double mape_pct, bias;
};
std::vector<Cell> read_cells(const nlohmann::json& entry, const char* name, const std::string& fam,
                             const char* gpu_field, const std::string& where, const std::string& path) {
  const auto& cells = field(entry, name, where, path);
  if (!cells.is_array() || cells.empty())
    throw ConfigError(path + ": field '" + where + name + "': expected a non-empty array");
  std::vector<Cell> out;
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string at = where + name + "[" + std::to_string(i) + "].";
    const auto& c = cells[i];
    Cell x;
    x.key = string_field(c, "key", at, path);
    if (!key_in_family(x.key, fam))
      throw ConfigError(path + ": field '" + at + "key': '" + x.key + "' is not a key of family " + fam);
    x.gpu = string_field(c, gpu_field, at, path);
    x.rows = static_cast<int64_t>(number_field(c, "rows", at, path, 0, 1e12, true));
    x.mape_pct = number_field(c, "mape_pct", at, path, 0, 1e6, false);
    x.bias = number_field(c, "bias", at, path, 0, 1e6, true);
    for (const Cell& y : out)
      if (y.key == x.key && y.gpu == x.gpu)
        throw ConfigError(path + ": field '" + at + gpu_field + "': " + x.gpu + " appears twice for " + x.key);
    out.push_back(x);
  }
  return out;
}
}  // namespace

ForecastErrors ForecastErrors::load(const std::string& path, const trainer::WeightsManifest& manifest) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  const auto& families = field(j, "families", "", path);
  if (!families.is_object()) throw ConfigError(path + ": field 'families': expected an object");
  ForecastErrors out;
  std::map<std::string, UnseenGpuError> loo_by_key;
  for (const auto& [name, entry] : families.items()) {
    const std::string where = "families." + name + ".";
    Family family = Family::kCount;
    try {
      family = family_from_string(name);
    } catch (const ConfigError&) {
    }
    if (family == Family::kCount || !is_llm_kernel_family(family) || name != family_name(family))
      throw ConfigError(path + ": field 'families." + name + "': not an LLM-era kernel family");
    const std::string& fam = name;
    const std::string trained_at = string_field(entry, "trained_at", where, path);
    const std::string data_hash = string_field(entry, "data_hash", where, path);
    const std::vector<Cell> loo = read_cells(entry, "cells", fam, "left_out", where, path);
    std::vector<Cell> heldout;
    int pct = 0;
    if (entry.contains("heldout_cells")) {
      heldout = read_cells(entry, "heldout_cells", fam, "gpu", where, path);
      pct = static_cast<int>(number_field(entry, "heldout_pct", where, path, 0, 100, true));
    }
    // Figures of an earlier training (or fit) of the family say nothing about this one.
    std::string now_at, now_hash;
    if (family == Family::kMemoryOp) {
      now_at = manifest.memory_ops.fitted_at;
      now_hash = manifest.memory_ops.data_hash;
    } else if (const auto it = manifest.families.find(fam); it != manifest.families.end()) {
      now_at = it->second.trained_at;
      now_hash = it->second.data_hash;
    }
    if (now_at != trained_at || now_hash != data_hash) {
      out.stale_.push_back(fam);
      TC_LOG(Debug) << path << ": family " << fam << " was trained at " << (now_at.empty() ? "(absent)" : now_at)
                    << " on data " << (now_hash.empty() ? "(absent)" : now_hash) << ", its recorded errors at "
                    << trained_at << " on " << data_hash << ": not quoted";
      continue;
    }
    for (const Cell& c : loo) {
      UnseenGpuError& e = loo_by_key[c.key];
      e.family = fam;
      e.key = c.key;
      e.left_out.push_back(c.gpu);
      e.mape_pct.push_back(c.mape_pct);
      e.bias.push_back(c.bias);
    }
    for (const Cell& c : heldout) {
      auto e = std::make_shared<HeldoutShapesError>();
      e->family = fam;
      e->key = c.key;
      e->gpu = c.gpu;
      e->rows = c.rows;
      e->mape_pct = c.mape_pct;
      e->bias = c.bias;
      e->pct = pct;
      out.heldout_[{c.gpu, c.key}] = e;
    }
  }
  for (auto& [key, e] : loo_by_key) out.by_key_[key] = std::make_shared<const UnseenGpuError>(std::move(e));
  return out;
}

std::shared_ptr<const UnseenGpuError> ForecastErrors::find(const KernelQuery& q) const {
  const auto it = by_key_.find(forecast_error_key(q));
  return it == by_key_.end() ? nullptr : it->second;
}

std::shared_ptr<const HeldoutShapesError> ForecastErrors::find_heldout(const KernelQuery& q,
                                                                       const std::string& cuda_name) const {
  const auto it = heldout_.find({cuda_name, forecast_error_key(q)});
  return it == heldout_.end() ? nullptr : it->second;
}

}  // namespace tilecast::predictor
