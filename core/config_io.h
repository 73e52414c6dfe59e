#pragma once
// Loading YAML/JSON config files with one-line errors naming the file and field.
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <type_traits>

#include "core/error.h"

namespace tilecast {

// Parses a YAML file that must be a mapping; throws ConfigError (cannot open / malformed at
// line N / not a mapping).
YAML::Node load_yaml_map(const std::string& path);
// Parses a JSON file that must be an object; throws ConfigError.
nlohmann::json load_json_object(const std::string& path);
// A mapping key as a string; ConfigError "<where>: a key is not a plain name" for a
// complex (sequence/mapping) or null key.
std::string yaml_key(const YAML::Node& key, const std::string& where);
// Throws ConfigError "<where>: unknown field 'k'" for a key outside `known`.
void reject_unknown_keys(const YAML::Node& map, const std::set<std::string>& known, const std::string& where);

// node.as<T>() with "<where>: field 'key': expected a <type>" on a type mismatch.
template <typename T>
T yaml_get(const YAML::Node& node, const std::string& key, const std::string& where) {
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    const char* what = std::is_same<T, std::string>::value ? "a string"
                       : std::is_integral<T>::value        ? "an integer"
                       : std::is_floating_point<T>::value  ? "a number"
                                                           : "a list of values";
    throw ConfigError(where + ": field '" + key + "': expected " + what);
  }
}
// A NeuSight end-to-end label JSON: an object with `e2e_latency` in ms, checked to (0, 1e9],
// and, where the step was timed in parts, `fw_latency` and `bwall_latency` (the forward pass
// and everything after it; 0 or absent when not timed, e.g. inference and parallel runs),
// checked to [0, 1e9]. DataError naming the file and field otherwise.
struct EndToEndLabel {
  double e2e_ms = 0;
  double fw_ms = 0, bw_ms = 0;  // both > 0: the step's forward / backward split is known
  bool has_phases() const { return fw_ms > 0 && bw_ms > 0; }
};
EndToEndLabel read_end_to_end_label(const std::string& path);

// Throws "<where>: field 'key': v outside [lo, hi]" unless lo <= v <= hi (and finite).
void check_range(double v, double lo, double hi, const std::string& key, const std::string& where);

}  // namespace tilecast
