#include "core/gpu_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/config_io.h"
#include "core/error.h"
#include "core/units.h"

namespace fs = std::filesystem;

namespace tilecast {
namespace {

template <typename T>
T get_scalar(const YAML::Node& node, const std::string& key, const std::string& path) {
  return yaml_get<T>(node, key, path);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

// Issue-bound FP32 rate of a SIMT SGEMM. The main loop of an 8x8 thread tile (cuBLAS's and
// CUTLASS's SIMT SGEMM register tile) issues, per K step, 64 FFMA and 4 LDS.128 that bring
// the 8 + 8 operands from shared memory (the global loads, barrier and loop control of each
// K block add a little more; left out, so the fraction is an upper bound). A scheduler feeding
// L FP32 lanes keeps them busy while the FFMAs take at least 1 / (L / 32) of its issue slots:
// 16-lane partitions (Volta, Turing, GA100) need an FFMA every other clock and have slots to
// spare; 32-lane partitions with one dispatch per clock (GA10x, Ada, Hopper, Blackwell) reach
// at most 64 / 68 of peak; Pascal's two dispatch units issue the loads beside the FFMAs.
double GpuSpec::fp32_issue_fraction() const {
  if (vendor != "nvidia" || fp32_matrix_peak_gflops > 0) return 1.0;
  constexpr double kFfmaPerK = 64, kOtherPerK = 4;
  const int schedulers = warp_schedulers_per_sm > 0 ? warp_schedulers_per_sm : 4;
  const bool dual = arch == "kepler" || arch == "maxwell" || arch == "pascal";
  const int dispatch = dispatch_per_scheduler > 0 ? dispatch_per_scheduler : dual ? 2 : 1;
  const double lanes = double(cores_per_sm) / schedulers;   // FP32 lanes per scheduler
  const double clocks_per_ffma = std::max(1.0, 32.0 / lanes);  // FP32 pipe clocks per warp FFMA
  const double issue_clocks = (kFfmaPerK + kOtherPerK) / dispatch;
  return std::min(1.0, kFfmaPerK * clocks_per_ffma / issue_clocks);
}

double GpuSpec::collective_gbps(int64_t group_ranks) const {
  // A group larger than the mesh also crosses whatever joins meshes (a PCIe switch between two
  // hives): costed on one link, as a switched fabric.
  if (interconnect_mesh_peers <= 0 || group_ranks <= 2 || group_ranks - 1 > interconnect_mesh_peers)
    return interconnect_gbps;
  return interconnect_gbps * double(group_ranks - 1);
}

std::string GpuSpec::interconnect_link() const {
  if (!interconnect.empty()) return interconnect == "pcie" ? "pcie" : "nvlink";
  return interconnect_gbps > 64 ? "nvlink" : "pcie";  // PCIe 5.0 x16: 63 GB/s per direction
}

bool gpu_twins(const GpuSpec& a, const GpuSpec& b) {
  if (a.vendor != b.vendor || a.compute_capability <= 0 || b.compute_capability <= 0 ||
      std::floor(a.compute_capability) != std::floor(b.compute_capability))
    return false;
  if (a.num_sms != b.num_sms || !(a.mem_bw_gbps > 0 && b.mem_bw_gbps > 0)) return false;
  const double r = a.mem_bw_gbps / b.mem_bw_gbps;
  return r >= 1.0 / 1.1 && r <= 1.1;
}

std::string normalize_gpu_key(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '_' && c != '-') out += static_cast<char>(std::tolower(c));
  return out;
}

void validate_gpu_spec(const GpuSpec& s, const std::string& origin) {
  if (s.name.empty()) throw ConfigError(origin + ": field 'name' is empty");
  check_range(s.num_sms, 1, 10000, "num_sms", origin);
  check_range(s.cores_per_sm, 1, 4096, "cores_per_sm", origin);
  check_range(s.boost_clock_mhz, 100, 10000, "boost_clock_mhz", origin);
  check_range(s.fp32_peak_gflops, 10, 1e7, "fp32_peak_gflops", origin);
  check_range(s.mem_bw_gbps, 1, 1e6, "mem_bw_gbps", origin);
  check_range(s.mem_gib, 0.5, 1e5, "mem_gib", origin);
  check_range(s.l2_cache_mb, 0.1, 1e5, "l2_cache_mb", origin);
  check_range(s.max_threads_per_sm, 32, 65536, "max_threads_per_sm", origin);
  check_range(s.max_blocks_per_sm, 1, 1024, "max_blocks_per_sm", origin);
  if (s.interconnect_gbps != 0) check_range(s.interconnect_gbps, 1, 1e5, "interconnect_gbps", origin);
  if (!s.interconnect.empty() && s.interconnect != "nvlink" && s.interconnect != "xgmi" && s.interconnect != "pcie")
    throw ConfigError(origin + ": field 'interconnect': expected nvlink, xgmi or pcie, got '" + s.interconnect + "'");
  if (s.interconnect_mesh_peers != 0) {
    check_range(s.interconnect_mesh_peers, 1, 4096, "interconnect_mesh_peers", origin);
    if (!(s.interconnect_gbps > 0))
      throw ConfigError(origin + ": field 'interconnect_mesh_peers' needs 'interconnect_gbps' (the bandwidth of each link)");
  }
  if (s.gpus_per_node != 0) check_range(s.gpus_per_node, 1, 4096, "gpus_per_node", origin);
  if (s.network_gbps != 0) check_range(s.network_gbps, 0.1, 1e5, "network_gbps", origin);
  if (s.network_gbps != 0 && s.gpus_per_node == 0)
    throw ConfigError(origin + ": field 'network_gbps' needs 'gpus_per_node' (the GPUs the network joins nodes of)");
  if (s.tdp_w != 0) check_range(s.tdp_w, 5, 1e5, "tdp_w", origin);
  if (s.warp_schedulers_per_sm != 0) check_range(s.warp_schedulers_per_sm, 1, 64, "warp_schedulers_per_sm", origin);
  if (s.dispatch_per_scheduler != 0) check_range(s.dispatch_per_scheduler, 1, 4, "dispatch_per_scheduler", origin);
  if (s.sfu_exp_per_sm_clock != 0) check_range(s.sfu_exp_per_sm_clock, 1, 1024, "sfu_exp_per_sm_clock", origin);
  // At most the boost clock: it is stated only where the sheet rates tensor peaks below it.
  if (s.compute_clock_mhz != 0) check_range(s.compute_clock_mhz, 10, s.boost_clock_mhz, "compute_clock_mhz", origin);
  if (s.sustained_clock_mhz != 0)
    check_range(s.sustained_clock_mhz, 10, s.boost_clock_mhz, "sustained_clock_mhz", origin);
  if (s.warp_schedulers_per_sm != 0 && s.cores_per_sm % s.warp_schedulers_per_sm != 0)
    throw ConfigError(origin + ": field 'warp_schedulers_per_sm': " + std::to_string(s.warp_schedulers_per_sm) +
                      " does not divide cores_per_sm (" + std::to_string(s.cores_per_sm) + ")");
  if (s.fp32_matrix_peak_gflops != 0)
    check_range(s.fp32_matrix_peak_gflops, 100, 1e7, "fp32_matrix_peak_gflops", origin);
  for (const auto& kv : s.tensor_peak_gflops)
    check_range(kv.second, 100, 1e8, "tensor_peak_gflops." + kv.first, origin);
  if (s.vendor != "nvidia" && s.vendor != "amd" && s.vendor != "cpu")
    throw ConfigError(origin + ": field 'vendor': expected nvidia, amd or cpu, got '" + s.vendor + "'");
}

GpuSpec load_gpu_yaml(const std::string& path) {
  const YAML::Node root = load_yaml_map(path);
  static const std::set<std::string> known = {
      "name",          "cuda_name",          "aliases",          "vendor",
      "arch",          "compute_capability", "num_sms",          "cores_per_sm",
      "boost_clock_mhz", "fp32_peak_gflops", "fp32_matrix_peak_gflops", "tensor_peak_gflops",
      "mem_bw_gbps",   "mem_gib",  "mem_gb",  "l2_cache_mb",      "max_threads_per_sm",
      "max_blocks_per_sm", "tile_reference", "sources",          "notes",
      "interconnect_gbps", "interconnect", "interconnect_mesh_peers", "gpus_per_node", "network_gbps", "tdp_w", "warp_schedulers_per_sm", "dispatch_per_scheduler", "compute_clock_mhz",
      "sustained_clock_mhz", "sfu_exp_per_sm_clock", "inband_ecc"};
  static const std::set<std::string> required = {"name",  "cuda_name", "vendor", "arch",
                                                 "num_sms", "cores_per_sm", "boost_clock_mhz",
                                                 "fp32_peak_gflops", "mem_bw_gbps",
                                                 "l2_cache_mb", "sources"};
  reject_unknown_keys(root, known, path);
  for (const auto& key : required)
    if (!root[key]) throw ConfigError(path + ": missing field '" + key + "'");

  GpuSpec s;
  s.origin = path;
  s.name = get_scalar<std::string>(root["name"], "name", path);
  s.cuda_name = get_scalar<std::string>(root["cuda_name"], "cuda_name", path);
  s.vendor = get_scalar<std::string>(root["vendor"], "vendor", path);
  s.arch = get_scalar<std::string>(root["arch"], "arch", path);
  s.num_sms = get_scalar<int>(root["num_sms"], "num_sms", path);
  s.cores_per_sm = get_scalar<int>(root["cores_per_sm"], "cores_per_sm", path);
  s.boost_clock_mhz = get_scalar<double>(root["boost_clock_mhz"], "boost_clock_mhz", path);
  s.fp32_peak_gflops = get_scalar<double>(root["fp32_peak_gflops"], "fp32_peak_gflops", path);
  s.mem_bw_gbps = get_scalar<double>(root["mem_bw_gbps"], "mem_bw_gbps", path);
  // Memory: the sheet's binary figure (mem_gib) or, from a file that states it so, 1e9 bytes.
  if (root["mem_gib"] && root["mem_gb"])
    throw ConfigError(path + ": fields 'mem_gib' and 'mem_gb' both given; state the memory once");
  if (root["mem_gib"]) {
    s.mem_gib = get_scalar<double>(root["mem_gib"], "mem_gib", path);
  } else if (root["mem_gb"]) {
    const double gb = get_scalar<double>(root["mem_gb"], "mem_gb", path);
    check_range(gb, 0.5, 1e5, "mem_gb", path);
    s.mem_gib = gb * kBytesPerGb / kBytesPerGib;
  } else {
    throw ConfigError(path + ": missing field 'mem_gib' (memory in GiB as the vendor's sheet states it; or 'mem_gb' in 1e9 B)");
  }
  s.l2_cache_mb = get_scalar<double>(root["l2_cache_mb"], "l2_cache_mb", path);
  if (root["fp32_matrix_peak_gflops"])
    s.fp32_matrix_peak_gflops =
        get_scalar<double>(root["fp32_matrix_peak_gflops"], "fp32_matrix_peak_gflops", path);
  if (root["max_threads_per_sm"])
    s.max_threads_per_sm = get_scalar<int>(root["max_threads_per_sm"], "max_threads_per_sm", path);
  if (root["max_blocks_per_sm"])
    s.max_blocks_per_sm = get_scalar<int>(root["max_blocks_per_sm"], "max_blocks_per_sm", path);
  if (root["interconnect_gbps"])
    s.interconnect_gbps = get_scalar<double>(root["interconnect_gbps"], "interconnect_gbps", path);
  if (root["interconnect"]) s.interconnect = get_scalar<std::string>(root["interconnect"], "interconnect", path);
  if (root["interconnect_mesh_peers"])
    s.interconnect_mesh_peers = get_scalar<int>(root["interconnect_mesh_peers"], "interconnect_mesh_peers", path);
  if (root["inband_ecc"]) s.inband_ecc = get_scalar<bool>(root["inband_ecc"], "inband_ecc", path);
  if (root["gpus_per_node"]) s.gpus_per_node = get_scalar<int>(root["gpus_per_node"], "gpus_per_node", path);
  if (root["network_gbps"]) s.network_gbps = get_scalar<double>(root["network_gbps"], "network_gbps", path);
  if (root["compute_capability"]) {
    const std::string cc = get_scalar<std::string>(root["compute_capability"], "compute_capability", path);
    char* end = nullptr;
    s.compute_capability = std::strtod(cc.c_str(), &end);
    if (cc.empty() || *end != '\0' || !(s.compute_capability >= 1 && s.compute_capability < 100))
      throw ConfigError(path + ": field 'compute_capability': expected a version like \"9.0\", got '" + cc + "'");
  }
  if (root["tdp_w"]) s.tdp_w = get_scalar<double>(root["tdp_w"], "tdp_w", path);
  if (root["warp_schedulers_per_sm"])
    s.warp_schedulers_per_sm = get_scalar<int>(root["warp_schedulers_per_sm"], "warp_schedulers_per_sm", path);
  if (root["dispatch_per_scheduler"])
    s.dispatch_per_scheduler = get_scalar<int>(root["dispatch_per_scheduler"], "dispatch_per_scheduler", path);
  if (root["compute_clock_mhz"])
    s.compute_clock_mhz = get_scalar<double>(root["compute_clock_mhz"], "compute_clock_mhz", path);
  if (root["sfu_exp_per_sm_clock"])
    s.sfu_exp_per_sm_clock = get_scalar<int>(root["sfu_exp_per_sm_clock"], "sfu_exp_per_sm_clock", path);
  if (root["sustained_clock_mhz"])
    s.sustained_clock_mhz = get_scalar<double>(root["sustained_clock_mhz"], "sustained_clock_mhz", path);
  if (root["tile_reference"])
    s.tile_reference = get_scalar<std::string>(root["tile_reference"], "tile_reference", path);
  if (root["notes"]) s.notes = get_scalar<std::string>(root["notes"], "notes", path);
  if (root["aliases"]) {
    if (!root["aliases"].IsSequence()) throw ConfigError(path + ": field 'aliases': expected a list");
    for (const auto& a : root["aliases"]) s.aliases.push_back(get_scalar<std::string>(a, "aliases", path));
  }
  if (!root["sources"].IsSequence() || root["sources"].size() == 0)
    throw ConfigError(path + ": field 'sources': expected a non-empty list");
  for (const auto& a : root["sources"]) s.sources.push_back(get_scalar<std::string>(a, "sources", path));
  if (root["tensor_peak_gflops"]) {
    if (!root["tensor_peak_gflops"].IsMap())
      throw ConfigError(path + ": field 'tensor_peak_gflops': expected a mapping dtype -> GFLOP/s");
    for (const auto& kv : root["tensor_peak_gflops"]) {
      auto dtype = yaml_key(kv.first, path + ": field 'tensor_peak_gflops'");
      static const std::set<std::string> dtypes = {"tf32", "fp16", "bf16", "fp8", "fp4", "fp32", "int8", "fp64"};
      if (!dtypes.count(dtype))
        throw ConfigError(path + ": field 'tensor_peak_gflops': unknown dtype '" + dtype + "'");
      s.tensor_peak_gflops[dtype] =
          get_scalar<double>(kv.second, "tensor_peak_gflops." + dtype, path);
    }
  }
  validate_gpu_spec(s, path);
  return s;
}

GpuSpec load_neusight_device_json(const std::string& path) {
  const nlohmann::json j = load_json_object(path);
  static const std::set<std::string> known = {"Device", "Dev_Mem", "Mem_Bw", "Num_Sm",
                                              "Core_Per_SM", "Freq", "SingleFLOPs",
                                              "SingleFLOPsMM", "SingleFLOPsVEC", "L2Cache"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) throw ConfigError(path + ": unknown field '" + it.key() + "'");
  auto num = [&](const char* key) -> double {
    if (!j.contains(key)) throw ConfigError(path + ": missing field '" + std::string(key) + "'");
    if (!j[key].is_number()) throw ConfigError(path + ": field '" + std::string(key) + "': expected a number");
    return j[key].get<double>();
  };
  GpuSpec s;
  s.origin = path;
  if (!j.contains("Device") || !j["Device"].is_string())
    throw ConfigError(path + ": missing string field 'Device'");
  s.cuda_name = j["Device"].get<std::string>();
  s.name = fs::path(path).stem().string();
  s.vendor = s.cuda_name.find("AMD") != std::string::npos ? "amd" : "nvidia";
  s.arch = "unknown";
  s.mem_gib = num("Dev_Mem");  // NeuSight's "Dev_Mem" is the sheet's figure (16 for a P100): GiB
  s.mem_bw_gbps = num("Mem_Bw");
  // Counts are checked before the conversion to int (a value beyond int's range is UB).
  auto count = [&](const char* key, double hi) {
    const double v = num(key);
    if (!(v >= 1 && v <= hi) || v != std::floor(v))
      throw ConfigError(path + ": field '" + std::string(key) + "': expected a whole number in [1, " +
                        std::to_string(static_cast<long long>(hi)) + "]");
    return static_cast<int>(v);
  };
  s.num_sms = count("Num_Sm", 10000);
  s.cores_per_sm = count("Core_Per_SM", 4096);
  s.boost_clock_mhz = num("Freq");
  s.l2_cache_mb = num("L2Cache");
  if (j.contains("SingleFLOPs")) {
    s.fp32_peak_gflops = num("SingleFLOPs");
  } else {
    s.fp32_peak_gflops = num("SingleFLOPsVEC");
    s.fp32_matrix_peak_gflops = num("SingleFLOPsMM");
  }
  s.sources = {"NeuSight device JSON " + path};
  validate_gpu_spec(s, path);
  return s;
}

std::string gpu_spec_to_yaml(const GpuSpec& s) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << s.name;
  out << YAML::Key << "cuda_name" << YAML::Value << s.cuda_name;
  if (!s.aliases.empty()) out << YAML::Key << "aliases" << YAML::Value << YAML::Flow << s.aliases;
  out << YAML::Key << "vendor" << YAML::Value << s.vendor;
  out << YAML::Key << "arch" << YAML::Value << s.arch;
  out << YAML::Key << "num_sms" << YAML::Value << s.num_sms;
  out << YAML::Key << "cores_per_sm" << YAML::Value << s.cores_per_sm;
  out << YAML::Key << "boost_clock_mhz" << YAML::Value << s.boost_clock_mhz;
  out << YAML::Key << "fp32_peak_gflops" << YAML::Value << s.fp32_peak_gflops;
  if (s.fp32_matrix_peak_gflops > 0)
    out << YAML::Key << "fp32_matrix_peak_gflops" << YAML::Value << s.fp32_matrix_peak_gflops;
  if (!s.tensor_peak_gflops.empty()) {
    out << YAML::Key << "tensor_peak_gflops" << YAML::Value << YAML::BeginMap;
    for (const auto& kv : s.tensor_peak_gflops) out << YAML::Key << kv.first << YAML::Value << kv.second;
    out << YAML::EndMap;
  }
  out << YAML::Key << "mem_bw_gbps" << YAML::Value << s.mem_bw_gbps;
  out << YAML::Key << "mem_gib" << YAML::Value << s.mem_gib;
  if (s.inband_ecc) out << YAML::Key << "inband_ecc" << YAML::Value << true;
  out << YAML::Key << "l2_cache_mb" << YAML::Value << s.l2_cache_mb;
  out << YAML::Key << "max_threads_per_sm" << YAML::Value << s.max_threads_per_sm;
  out << YAML::Key << "max_blocks_per_sm" << YAML::Value << s.max_blocks_per_sm;
  if (s.interconnect_gbps > 0) out << YAML::Key << "interconnect_gbps" << YAML::Value << s.interconnect_gbps;
  if (!s.interconnect.empty()) out << YAML::Key << "interconnect" << YAML::Value << s.interconnect;
  if (s.interconnect_mesh_peers > 0)
    out << YAML::Key << "interconnect_mesh_peers" << YAML::Value << s.interconnect_mesh_peers;
  if (s.gpus_per_node > 0) out << YAML::Key << "gpus_per_node" << YAML::Value << s.gpus_per_node;
  if (s.network_gbps > 0) out << YAML::Key << "network_gbps" << YAML::Value << s.network_gbps;
  if (s.tdp_w > 0) out << YAML::Key << "tdp_w" << YAML::Value << s.tdp_w;
  if (s.warp_schedulers_per_sm > 0)
    out << YAML::Key << "warp_schedulers_per_sm" << YAML::Value << s.warp_schedulers_per_sm;
  if (s.dispatch_per_scheduler > 0)
    out << YAML::Key << "dispatch_per_scheduler" << YAML::Value << s.dispatch_per_scheduler;
  if (s.compute_clock_mhz > 0) out << YAML::Key << "compute_clock_mhz" << YAML::Value << s.compute_clock_mhz;
  if (s.sustained_clock_mhz > 0) out << YAML::Key << "sustained_clock_mhz" << YAML::Value << s.sustained_clock_mhz;
  if (s.sfu_exp_per_sm_clock > 0)
    out << YAML::Key << "sfu_exp_per_sm_clock" << YAML::Value << s.sfu_exp_per_sm_clock;
  if (s.compute_capability > 0) {
    char cc[16];
    std::snprintf(cc, sizeof cc, "%.1f", s.compute_capability);
    out << YAML::Key << "compute_capability" << YAML::Value << std::string(cc);
  }
  if (!s.tile_reference.empty())
    out << YAML::Key << "tile_reference" << YAML::Value << s.tile_reference;
  out << YAML::Key << "sources" << YAML::Value << s.sources;
  if (!s.notes.empty()) out << YAML::Key << "notes" << YAML::Value << s.notes;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

GpuRegistry::GpuRegistry(const std::string& dir) {
  if (!fs::is_directory(dir)) throw ConfigError(dir + ": GPU spec directory not found");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml" || e.path().extension() == ".yml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) add(load_gpu_yaml(f.string()));
  // A tile_reference must name a GPU of the folder (a typo would silently borrow other tiles).
  for (const auto& s : specs_)
    if (!s.tile_reference.empty() && !find(s.tile_reference))
      throw ConfigError(s.origin + ": field 'tile_reference': unknown GPU '" + s.tile_reference + "' (not in " + dir + ")");
}

void GpuRegistry::add(GpuSpec spec) {
  for (const auto& s : specs_)
    if (normalize_gpu_key(s.name) == normalize_gpu_key(spec.name))
      throw ConfigError(spec.origin + ": GPU name '" + spec.name + "' already defined in " + s.origin);
  specs_.push_back(std::move(spec));
}

namespace {
// The spec's stem or one of its aliases is `key` (normalised).
bool named(const GpuSpec& s, const std::string& key) {
  if (normalize_gpu_key(s.name) == key) return true;
  for (const auto& a : s.aliases)
    if (normalize_gpu_key(a) == key) return true;
  return false;
}
}  // namespace

const GpuSpec* GpuRegistry::find(const std::string& query) const {
  const std::string key = normalize_gpu_key(query);
  for (const auto& s : specs_)
    if (named(s, key) || normalize_gpu_key(s.cuda_name) == key) return &s;
  // A device name of the vendor's form that CUDA does not use for this spec ("NVIDIA B300" where
  // the driver says "NVIDIA B300 SXM6 AC", "NVIDIA H200 SXM"): its name or an alias behind the
  // vendor's word, matched whole (never a prefix of a longer name: "NVIDIA H100 NVL" is not the
  // SXM board), and only where one spec has it.
  static const char* const kVendorWords[] = {"nvidia", "tesla", "amdinstinct", "amd"};
  for (const char* w : kVendorWords) {
    const std::string word(w);
    if (key.size() <= word.size() || key.compare(0, word.size(), word) != 0) continue;
    const std::string rest = key.substr(word.size());
    const GpuSpec* hit = nullptr;
    for (const auto& s : specs_) {
      if (!named(s, rest)) continue;
      if (hit) return nullptr;  // two specs claim it: not ours to pick
      hit = &s;
    }
    if (hit) return hit;
  }
  return nullptr;
}

const GpuSpec& GpuRegistry::resolve(const std::string& query) const {
  if (const GpuSpec* s = find(query)) return *s;
  fs::path p(query);
  auto ext = p.extension().string();
  if ((ext == ".yaml" || ext == ".yml" || ext == ".json") &&
      (fs::exists(p) || query.find('/') != std::string::npos)) {
    GpuSpec spec = ext == ".json" ? load_neusight_device_json(query) : load_gpu_yaml(query);
    // A NeuSight JSON for a GPU we know keeps its numbers but inherits the architecture
    // facts NeuSight's format lacks.
    if (const GpuSpec* known = find(spec.cuda_name)) {
      if (spec.arch == "unknown") {
        spec.arch = known->arch;
        spec.max_threads_per_sm = known->max_threads_per_sm;
        spec.max_blocks_per_sm = known->max_blocks_per_sm;
        spec.tile_reference = known->tile_reference;
        if (known->warp_schedulers_per_sm > 0 && spec.cores_per_sm % known->warp_schedulers_per_sm == 0)
          spec.warp_schedulers_per_sm = known->warp_schedulers_per_sm;
        spec.dispatch_per_scheduler = known->dispatch_per_scheduler;
        spec.sfu_exp_per_sm_clock = known->sfu_exp_per_sm_clock;
        // The sheet's rating of a full-SM load, where the JSON states the same boost clock.
        if (known->compute_clock_mhz > 0 && std::abs(spec.boost_clock_mhz - known->boost_clock_mhz) < 0.5)
          spec.compute_clock_mhz = known->compute_clock_mhz;
      }
    }
    loaded_files_.push_back(std::move(spec));
    return loaded_files_.back();
  }
  const std::string close = closest(query);
  throw ConfigError("unknown GPU '" + query + "'" + (close.empty() ? "" : "; closest: " + close) +
                    " (see `tilecast gpus`)");
}

std::string GpuRegistry::closest(const std::string& query, size_t n) const {
  std::vector<std::pair<size_t, std::string>> cands;
  for (const auto& s : specs_) {
    size_t d = edit_distance(normalize_gpu_key(query), normalize_gpu_key(s.name));
    for (const auto& a : s.aliases) d = std::min(d, edit_distance(normalize_gpu_key(query), normalize_gpu_key(a)));
    d = std::min(d, edit_distance(normalize_gpu_key(query), normalize_gpu_key(s.cuda_name)));
    cands.emplace_back(d, s.name);
  }
  std::sort(cands.begin(), cands.end());
  std::string close;
  for (size_t i = 0; i < cands.size() && i < n; ++i) close += (i ? ", " : "") + cands[i].second;
  return close;
}

}  // namespace tilecast
