#include "core/kernel_dataset.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/csv.h"
#include "core/error.h"
#include "core/log.h"

namespace fs = std::filesystem;

namespace tilecast {
namespace {

// Columns NeuSight's CSVs carry plus the extra ones our collector appends.
const std::set<std::string>& known_columns() {
  static const std::set<std::string> cols = {
      "OPName", "Latency", "Device", "Torch Version", "CUDNN Version", "Kernel Name",
      "Warps per SM", "Blocks per SM", "Grid x", "Grid y", "Grid z", "Block x", "Block y",
      "Block z", "CUDA Version", "Kernels", "B", "M", "N", "K", "H", "large",
      // tilecast collector extras
      "dtype", "registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes",
      "latency_spread_ms", "status", "error_message", "tilecast_version", "git_commit",
      "collected_at", "config_id"};
  return cols;
}

bool parse_ax_b(const std::string& s, size_t pos, int* a, int* b) {
  size_t i = pos;
  auto digits = [&](int* out) {
    size_t start = i;
    long v = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && i - start < 6)
      v = v * 10 + (s[i++] - '0');
    if (i == start) return false;
    *out = static_cast<int>(v);
    return true;
  };
  if (!digits(a)) return false;
  if (i >= s.size() || s[i] != 'x') return false;
  ++i;
  return digits(b);
}

}  // namespace

bool parse_tile_from_kernel_name(const std::string& kernel_name, int* tile1, int* tile2) {
  std::string s;
  for (char c : kernel_name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* marker : {"_mt", "sgemm_", "tilesize"}) {
    size_t pos = 0;
    while ((pos = s.find(marker, pos)) != std::string::npos) {
      pos += std::char_traits<char>::length(marker);
      if (parse_ax_b(s, pos, tile1, tile2) && *tile1 > 0 && *tile2 > 0) return true;
    }
  }
  return false;
}

namespace {

// ../shared/llm-kernels/aiconfigurator/<GPU>/<op>_perf.csv (SGLang kernels, BF16/FP8).
std::vector<KernelSample> read_aiconfigurator_csv(CsvReader& csv) {
  const std::string& path = csv.path();
  for (const char* req : {"device", "op_name", "latency"})
    if (csv.column(req) < 0) throw DataError(where(path, 1) + ": missing column '" + req + "'");
  const int c_dev = csv.column("device"), c_op = csv.column("op_name"), c_lat = csv.column("latency");
  const int c_dtype = csv.column("gemm_dtype"), c_m = csv.column("m"), c_n = csv.column("n"), c_k = csv.column("k");
  const int c_src = csv.column("kernel_source");
  std::vector<KernelSample> rows;
  std::map<std::string, int64_t> skipped;
  std::vector<std::string> f;
  auto col = [&](const char* name) {
    const int c = csv.column(name);
    if (c < 0) throw DataError(where(path, 1) + ": missing column '" + name + "'");
    return c;
  };
  while (csv.next(f)) {
    const long line = csv.line();
    auto dim = [&](int c, const char* name, int64_t lo) -> int64_t {
      const long long v = parse_int_field(f[c], path, line, name);
      if (v < lo || v > (int64_t{1} << 31))
        throw DataError(where(path, line) + ": column '" + name + "': " + f[c] + " out of range [" +
                        std::to_string(lo) + ", 2^31]");
      return v;
    };
    if (f[c_op] == "context_attention" || f[c_op] == "generation_attention") {
      const bool prefill = f[c_op] == "context_attention";
      DType d, kvd;
      const int c_ad = col("attn_dtype"), c_kd = col("kv_cache_dtype");
      if (!try_dtype_from_string(f[c_ad], &d) || !try_dtype_from_string(f[c_kd], &kvd)) {
        ++skipped[f[c_ad] + "/" + f[c_kd]];
        continue;
      }
      if (dim(col("beam_width"), "beam_width", 1) != 1) {
        ++skipped["beam_width>1"];
        continue;
      }
      const int c_win = csv.column("window_size");
      const int64_t window = c_win >= 0 && !f[c_win].empty() ? dim(c_win, "window_size", 0) : 0;
      const int64_t b = dim(col("batch_size"), "batch_size", 1), isl = dim(col("isl"), "isl", 1);
      const int64_t h = dim(col("num_heads"), "num_heads", 1), kv = dim(col("num_key_value_heads"), "num_key_value_heads", 1);
      const int64_t hd = dim(col("head_dim"), "head_dim", 1), step = dim(col("step"), "step", 0);
      KernelSample s;
      s.file = path;
      s.line = line;
      // Decode: `step` tokens are cached before this one; the new token attends to all of them and itself.
      s.query = prefill ? attention_prefill_q(b, isl, h, kv, hd, d, kvd, window)
                        : attention_decode_q(b, step + 1, h, kv, hd, d, kvd, window);
      validate_query(s.query, where(path, line));
      s.latency_ms = parse_double_field(f[c_lat], path, line, "latency");
      if (s.latency_ms <= 0 || s.latency_ms > kMaxKernelLatencyMs)
        throw DataError(where(path, line) + ": column 'latency': " + f[c_lat] + " ms outside (0, 1e7]");
      s.device = f[c_dev];
      if (c_src >= 0) s.library = f[c_src];
      rows.push_back(std::move(s));
      continue;
    }
    if (f[c_op] != "gemm")
      throw DataError(where(path, line) + ": column 'op_name': '" + f[c_op] +
                      "' is not modelled yet (gemm, context_attention and generation_attention are; moe is planned)");
    for (int c : {c_dtype, c_m, c_n, c_k})
      if (c < 0) throw DataError(where(path, 1) + ": gemm rows need columns gemm_dtype, m, n, k");
    DType d;
    if (!try_dtype_from_string(f[c_dtype], &d)) {
      ++skipped[f[c_dtype]];  // e.g. nvfp4: no FP4 model (counted and reported)
      continue;
    }
    KernelSample s;
    s.file = path;
    s.line = line;
    if (c_src >= 0) s.library = f[c_src];
    // F.linear(a[m, k], b[n, k]): m tokens, k in-features (our N), n out-features (our K).
    s.query = gemm_q(dim(c_m, "m", 1), dim(c_k, "k", 1), dim(c_n, "n", 1), d);
    validate_query(s.query, where(path, line));
    s.latency_ms = parse_double_field(f[c_lat], path, line, "latency");
    if (s.latency_ms <= 0 || s.latency_ms > kMaxKernelLatencyMs)
      throw DataError(where(path, line) + ": column 'latency': " + f[c_lat] + " ms outside (0, 1e7]");
    s.device = f[c_dev];
    if (s.device.empty()) throw DataError(where(path, line) + ": column 'device' is empty");
    rows.push_back(std::move(s));
  }
  for (const auto& kv : skipped)
    TC_LOG(Warn) << path << ": skipped " << kv.second << " rows of '" << kv.first
                 << "' (not modelled: dtypes fp32, tf32, fp16, bf16, fp8, fp8_block and beam width 1 are)";
  return rows;
}

}  // namespace

std::vector<KernelSample> read_kernel_csv(const std::string& path) {
  CsvReader csv(path);
  if (csv.header().size() > 3 && csv.header()[0] == "framework" && csv.column("op_name") >= 0)
    return read_aiconfigurator_csv(csv);
  for (const auto& name : csv.header())
    if (!known_columns().count(name))
      throw DataError(where(path, 1) + ": unknown column '" + name + "'");
  for (const char* req : {"OPName", "Latency", "Device", "B"})
    if (csv.column(req) < 0) throw DataError(where(path, 1) + ": missing column '" + req + "'");
  const int c_op = csv.column("OPName"), c_lat = csv.column("Latency"),
            c_dev = csv.column("Device"), c_kname = csv.column("Kernel Name");
  const int c_status = csv.column("status"), c_dtype = csv.column("dtype");
  const int c_grid[3] = {csv.column("Grid x"), csv.column("Grid y"), csv.column("Grid z")};
  const int c_block[3] = {csv.column("Block x"), csv.column("Block y"), csv.column("Block z")};
  const int c_b = csv.column("B"), c_m = csv.column("M"), c_n = csv.column("N"),
            c_k = csv.column("K"), c_h = csv.column("H");

  std::vector<KernelSample> rows;
  std::vector<std::string> f;
  while (csv.next(f)) {
    const long line = csv.line();
    // Rows our collector marks as failed (OOM, unsupported) carry no latency.
    if (c_status >= 0 && !f[c_status].empty() && f[c_status] != "ok") continue;
    KernelSample s;
    s.file = path;
    s.line = line;
    OpKind op;
    if (!try_op_kind_from_string(f[c_op], &op))
      throw DataError(where(path, line) + ": column 'OPName': unknown op '" + f[c_op] + "'");
    s.query.op = op;
    s.latency_ms = parse_double_field(f[c_lat], path, line, "Latency");
    if (s.latency_ms <= 0 || s.latency_ms > kMaxKernelLatencyMs)
      throw DataError(where(path, line) + ": column 'Latency': " + f[c_lat] + " ms outside (0, " +
                      std::to_string(static_cast<long long>(kMaxKernelLatencyMs)) + "]");
    // The families model FP32 kernels (NeuSight's data); rows of another dtype would be
    // silently mixed into them.
    if (c_dtype >= 0 && !f[c_dtype].empty() && f[c_dtype] != "fp32")
      throw DataError(where(path, line) + ": column 'dtype': '" + f[c_dtype] +
                      "' rows are not modelled (these families are FP32 only); collect them into another folder");
    s.device = f[c_dev];
    if (s.device.empty()) throw DataError(where(path, line) + ": column 'Device' is empty");
    auto dim = [&](int col, const char* name) -> int64_t {
      if (col < 0) throw DataError(where(path, 1) + ": missing column '" + name + "' for op " + f[c_op]);
      long long v = parse_int_field(f[col], path, line, name);
      if (v < 1 || v > (int64_t{1} << 31))
        throw DataError(where(path, line) + ": column '" + name + "': dimension " + f[col] +
                        " out of range [1, 2^31]");
      return v;
    };
    s.query.b = dim(c_b, "B");
    if (is_gemm(op_family(op))) {
      s.query.m = dim(c_m, "M");
      s.query.n = dim(c_n, "N");
      s.query.k = dim(c_k, "K");
    } else {
      s.query.h = dim(c_h, "H");
    }
    validate_query(s.query, where(path, line));
    if (c_kname >= 0) s.kernel_name = f[c_kname];
    bool has_grid = true;
    for (int i = 0; i < 3; ++i) {
      if (c_grid[i] < 0 || c_block[i] < 0 || f[c_grid[i]].empty() || f[c_block[i]].empty()) {
        has_grid = false;
        continue;
      }
      s.grid[i] = parse_int_field(f[c_grid[i]], path, line, "Grid");
      s.block[i] = parse_int_field(f[c_block[i]], path, line, "Block");
    }
    int t1, t2;
    if (is_gemm(op_family(op)) && has_grid && parse_tile_from_kernel_name(s.kernel_name, &t1, &t2)) {
      s.measured_tile.tk = t1;
      s.measured_tile.tm = t2;
      const int64_t tiles_xy = ((s.query.k + t1 - 1) / t1) * ((s.query.m + t2 - 1) / t2);
      const int64_t gz = s.grid[2];
      // Split-K shows up as grid z > B with the x*y grid still covering the output tiles.
      if (s.grid[0] * s.grid[1] == tiles_xy && gz > s.query.b && gz % s.query.b == 0)
        s.measured_tile.split_k = static_cast<int>(gz / s.query.b);
      s.has_tile = true;
    }
    rows.push_back(std::move(s));
  }
  return rows;
}

std::string neusight_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("TILECAST_NEUSIGHT_DIR"); env && *env) return env;
  if (neusight_dir_present("../shared/neusight")) return "../shared/neusight";
#ifdef TILECAST_SOURCE_DIR
  std::string from_src = std::string(TILECAST_SOURCE_DIR) + "/../shared/neusight";
  if (neusight_dir_present(from_src)) return from_src;
#endif
  return "../shared/neusight";
}

bool neusight_dir_present(const std::string& dir) {
  return fs::is_directory(fs::path(dir) / "kernels" / "nvidia");
}

std::string llm_kernels_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("TILECAST_LLM_KERNELS_DIR"); env && *env) return env;
  if (fs::is_directory("../shared/llm-kernels/aiconfigurator")) return "../shared/llm-kernels";
#ifdef TILECAST_SOURCE_DIR
  std::string from_src = std::string(TILECAST_SOURCE_DIR) + "/../shared/llm-kernels";
  if (fs::is_directory(from_src + "/aiconfigurator")) return from_src;
#endif
  return "../shared/llm-kernels";
}

const std::vector<std::string>& llm_training_gpu_dirs() {
  static const std::vector<std::string> dirs = {"A100-SXM4-80GB", "L40S", "B200"};
  return dirs;
}

std::vector<std::string> llm_training_files(const std::string& root, Family f) {
  TC_CHECK(is_llm_kernel_family(f), "no LLM-era data for this family");
  const std::string file = std::string(family_name(f)) + "_perf.csv";  // gemm, context_attention, ...
  std::vector<std::string> files;
  for (const auto& gpu : llm_training_gpu_dirs()) {
    const fs::path p = fs::path(root) / "aiconfigurator" / gpu / file;
    if (!fs::exists(p)) throw DataError(p.string() + ": training file missing (set TILECAST_LLM_KERNELS_DIR or --llm-dir)");
    files.push_back(p.string());
  }
  return files;
}

const std::vector<std::string>& training_gpus() {
  static const std::vector<std::string> gpus = {"Tesla P4", "Tesla P100-PCIE-16GB",
                                                "Tesla V100-PCIE-32GB", "Tesla T4",
                                                "NVIDIA A100-PCIE-40GB"};
  return gpus;
}

std::vector<std::string> training_files(const std::string& root, Family f) {
  std::vector<std::string> ops;
  switch (f) {
    case Family::kBmm: ops = {"bmm"}; break;
    case Family::kLinear: ops = {"linear"}; break;
    case Family::kSoftmax: ops = {"softmax"}; break;
    case Family::kLayerNorm: ops = {"ln"}; break;
    case Family::kElementwise:
      ops = {"add", "addu", "mul", "mulu", "div", "divu", "pow", "powu", "relu", "gelu", "tanh"};
      break;
    case Family::kGemm:  // LLM-era data: llm_training_files()
    case Family::kAttnPrefill:
    case Family::kAttnDecode:
    case Family::kCount: break;
  }
  std::vector<std::string> files;
  for (const auto& op : ops)
    for (const auto& gpu : training_gpus()) {
      fs::path p = fs::path(root) / "kernels" / "nvidia" / "train" / op / "p2.1.0" / (gpu + ".csv");
      if (!fs::exists(p)) throw DataError(p.string() + ": training file missing");
      files.push_back(p.string());
    }
  return files;
}

std::string files_hash(const std::vector<std::string>& paths) {
  uint64_t h = 1469598103934665603ULL;
  std::vector<char> buf(1 << 16);
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw DataError(p + ": cannot open file");
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      for (std::streamsize i = 0; i < in.gcount(); ++i) {
        h ^= static_cast<unsigned char>(buf[i]);
        h *= 1099511628211ULL;
      }
    }
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace tilecast
