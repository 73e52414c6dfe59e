#include "core/config_io.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/fs_util.h"

namespace tilecast {

YAML::Node load_yaml_map(const std::string& path) {
  try {
    check_readable_file(path);
  } catch (const DataError& e) {
    throw ConfigError(e.what());
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ConfigError(path + ": cannot open file");
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ": malformed YAML at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) throw ConfigError(path + ": expected a YAML mapping");
  return root;
}

nlohmann::json load_json_object(const std::string& path) {
  try {
    check_readable_file(path);
  } catch (const DataError& e) {
    throw ConfigError(e.what());
  }
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for number overflow
    throw ConfigError(path + ": malformed JSON: " + std::string(e.what()));
  } catch (const std::ios_base::failure& e) {
    throw ConfigError(path + ": read error");
  }
  if (!j.is_object()) throw ConfigError(path + ": expected a JSON object");
  return j;
}

EndToEndLabel read_end_to_end_label(const std::string& path) {
  const std::string text = read_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for number overflow
    throw DataError(path + ": malformed JSON: " + std::string(e.what()));
  }
  if (!j.is_object()) throw DataError(path + ": expected a JSON object");
  if (!j.contains("e2e_latency") || !j["e2e_latency"].is_number())
    throw DataError(path + ": field 'e2e_latency': missing or not a number");
  EndToEndLabel l;
  l.e2e_ms = j["e2e_latency"].get<double>();
  if (!(l.e2e_ms > 0) || !std::isfinite(l.e2e_ms) || l.e2e_ms > 1e9)
    throw DataError(path + ": field 'e2e_latency': must be a positive number of ms below 1e9");
  auto part = [&](const char* key) {
    if (!j.contains(key) || j[key].is_null()) return 0.0;
    if (!j[key].is_number()) throw DataError(path + ": field '" + key + "': not a number");
    const double ms = j[key].get<double>();
    if (!(ms >= 0) || !std::isfinite(ms) || ms > 1e9)
      throw DataError(path + ": field '" + key + "': must be a number of ms in [0, 1e9]");
    return ms;
  };
  l.fw_ms = part("fw_latency");
  l.bw_ms = part("bwall_latency");
  return l;
}

std::string yaml_key(const YAML::Node& key, const std::string& where) {
  if (!key.IsScalar()) throw ConfigError(where + ": a key is not a plain name");
  return key.Scalar();
}

void reject_unknown_keys(const YAML::Node& map, const std::set<std::string>& known, const std::string& where) {
  for (const auto& kv : map) {
    const auto key = yaml_key(kv.first, where);
    if (!known.count(key)) throw ConfigError(where + ": unknown field '" + key + "'");
  }
}

void check_range(double v, double lo, double hi, const std::string& key, const std::string& where) {
  if (!std::isfinite(v) || v < lo || v > hi) {
    std::ostringstream os;
    os << where << ": field '" << key << "': value " << v << " outside [" << lo << ", " << hi << "]";
    throw ConfigError(os.str());
  }
}

}  // namespace tilecast
