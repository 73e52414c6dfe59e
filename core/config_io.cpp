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
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(path + ": malformed JSON: " + std::string(e.what()));
  } catch (const std::ios_base::failure& e) {
    throw ConfigError(path + ": read error");
  }
  if (!j.is_object()) throw ConfigError(path + ": expected a JSON object");
  return j;
}

void reject_unknown_keys(const YAML::Node& map, const std::set<std::string>& known, const std::string& where) {
  for (const auto& kv : map) {
    const auto key = kv.first.as<std::string>();
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
