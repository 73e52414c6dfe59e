#include "collector/dataset_writer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "core/csv.h"
#include "core/error.h"
#include "core/fs_util.h"
#include "core/kernel_dataset.h"
#include "core/op_kind.h"

namespace fs = std::filesystem;

namespace tilecast::collector {
namespace {

std::string num(double v) {
  std::ostringstream os;
  os.precision(10);
  os << v;
  return os.str();
}

// busy_ms / call_ms: empty where the row failed or the backend could not time it.
std::string timing(bool ok, double ms) { return ok && ms >= 0 ? num(ms) : ""; }

// Cuts a torn final line (no trailing newline) so that appends start on a fresh line.
void repair_tail(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return;
  const std::streamoff size = in.tellg();
  if (size <= 0) return;
  std::string data(static_cast<size_t>(size), '\0');
  in.seekg(0);
  in.read(&data[0], size);
  if (data.back() == '\n') return;
  const size_t last_nl = data.rfind('\n');
  fs::resize_file(path, last_nl == std::string::npos ? 0 : last_nl + 1);
}

// Why a file's header is not this version's collect header for `f`: written by another version
// (the columns it lacks and adds, by name), or not by tilecast collect at all.
std::string header_mismatch(const std::vector<std::string>& header, Family f) {
  const std::vector<std::string> want = collect_header(f);
  if (std::find(header.begin(), header.end(), "tilecast_version") == header.end())
    return "not a tilecast collect file of " + std::string(family_name(f)) + " rows";
  auto missing = [](const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::string out;
    for (const auto& c : a)
      if (std::find(b.begin(), b.end(), c) == b.end()) out += (out.empty() ? "" : ", ") + c;
    return out;
  };
  const std::string lacks = missing(want, header), adds = missing(header, want);
  return "written by another tilecast version (its columns differ from this version's" +
         (lacks.empty() ? "" : "; it lacks " + lacks) + (adds.empty() ? "" : "; it adds " + adds) +
         (lacks.empty() && adds.empty() ? ": their order" : "") + ")";
}

}  // namespace

// Families `tilecast collect` writes in aiconfigurator's layout (kernel_dataset.h: aic_layouts).
static const AicLayout* collected_aic_layout(Family f) {
  const AicLayout* l = aic_layout(f);
  return l && l->collected ? l : nullptr;
}

std::vector<std::string> collect_header(Family f) {
  if (const AicLayout* l = collected_aic_layout(f)) {
    std::vector<std::string> h = {"framework", "version", "device", "op_name", "kernel_source"};
    h.insert(h.end(), l->columns.begin(), l->columns.end());
    h.insert(h.end(), {"latency", "Kernels", "latency_spread_ms", "busy_ms", "call_ms", "status", "error_message",
                       "tilecast_version", "config_id"});
    return h;
  }
  std::vector<std::string> h = {"OPName", "Latency", "Device", "Torch Version", "CUDNN Version",
                                "Kernel Name", "Warps per SM", "Blocks per SM", "Grid x", "Grid y",
                                "Grid z", "Block x", "Block y", "Block z", "CUDA Version", "Kernels"};
  if (has_mnk(f)) h.insert(h.end(), {"B", "M", "N", "K"});
  else h.insert(h.end(), {"B", "H"});
  h.insert(h.end(), {"dtype", "registers_per_thread", "static_smem_bytes", "dynamic_smem_bytes",
                     "latency_spread_ms", "busy_ms", "call_ms", "status", "error_message", "tilecast_version",
                     "config_id"});
  return h;
}

std::string format_row(Family f, const CollectedRow& r) {
  const bool ok = r.status == "ok";
  if (const AicLayout* l = collected_aic_layout(f)) {
    // The row's query from its dims (the family's --shape order) and dtype; the layout writes it.
    const KernelQuery q = query_from_dims(family_ops(f).front(), r.dims, dtype_from_string(r.dtype), "collected row " + r.config_id);
    std::vector<std::string> v = {"tilecast-collect", r.torch_version, r.device, l->op_name, r.kernel_source};
    const std::vector<std::string> cols = l->values(q);
    TC_CHECK(cols.size() == l->columns.size(), "aiconfigurator layout: values do not match its columns");
    v.insert(v.end(), cols.begin(), cols.end());
    v.insert(v.end(), {ok ? num(r.latency_ms) : "", r.kernels, ok ? num(r.latency_spread_ms) : "",
                       timing(ok, r.busy_ms), timing(ok, r.call_ms), r.status, r.error_message, TILECAST_VERSION,
                       r.config_id});
    return csv_join(v) + "\n";
  }
  std::vector<std::string> v = {r.op_name, ok ? num(r.latency_ms) : "", r.device, r.torch_version,
                                r.cudnn_version, r.kernel_name};
  if (r.has_launch) {
    v.insert(v.end(), {num(r.warps_per_sm), num(r.blocks_per_sm)});
    for (int i = 0; i < 3; ++i) v.push_back(std::to_string(r.grid[i]));
    for (int i = 0; i < 3; ++i) v.push_back(std::to_string(r.block[i]));
  } else {
    v.insert(v.end(), 8, "");
  }
  v.push_back(r.cuda_version);
  v.push_back(r.kernels);
  const size_t ndims = has_mnk(f) ? 4 : 2;
  TC_CHECK(r.dims.size() == ndims, "row dims do not match the family");
  for (int64_t d : r.dims) v.push_back(std::to_string(d));
  v.push_back(r.dtype);
  if (r.has_launch) {
    v.insert(v.end(), {std::to_string(r.regs_per_thread), std::to_string(r.static_smem_bytes),
                       std::to_string(r.dynamic_smem_bytes)});
  } else {
    v.insert(v.end(), 3, "");
  }
  v.insert(v.end(), {ok ? num(r.latency_spread_ms) : "", timing(ok, r.busy_ms), timing(ok, r.call_ms)});
  v.insert(v.end(), {r.status, r.error_message, TILECAST_VERSION, r.config_id});
  return csv_join(v) + "\n";
}

std::string DatasetWriter::file_name(Family f) { return std::string(family_name(f)) + ".csv"; }

DatasetWriter::DatasetWriter(const std::string& dir, const std::vector<Family>& families, bool resume)
    : dir_(dir) {
  fs::create_directories(dir);
  for (Family f : families) {
    const std::string path = (fs::path(dir) / file_name(f)).string();
    const bool exists = fs::exists(path) && fs::file_size(path) > 0;
    if (exists && !resume)
      throw ConfigError(path + ": already exists (use --resume to continue it, or another --out)");
    if (exists) {
      repair_tail(path);
      if (fs::file_size(path) > 0) {
        CsvReader csv(path);
        if (csv.header() != collect_header(f))
          throw DataError(path + ":1: " + header_mismatch(csv.header(), f) + "; cannot resume into it");
        const int c_id = csv.column("config_id");
        std::vector<std::string> row;
        while (csv.next(row)) done_.insert(row[c_id]);
      }
    }
    std::FILE* fp = std::fopen(path.c_str(), "ab");
    if (!fp) throw RuntimeError(path + ": cannot open for writing");
    if (fs::file_size(path) == 0) {
      const std::string h = csv_join(collect_header(f)) + "\n";
      if (std::fwrite(h.data(), 1, h.size(), fp) != h.size() || std::fflush(fp) != 0) {
        std::fclose(fp);
        throw RuntimeError(path + ": write failed (disk full?)");
      }
    }
    files_[f] = fp;
  }
}

DatasetWriter::~DatasetWriter() {
  for (auto& kv : files_) std::fclose(kv.second);
}

void DatasetWriter::append(Family f, const CollectedRow& row) {
  auto it = files_.find(f);
  TC_CHECK(it != files_.end(), "no output file for family");
  // One fwrite of the whole line, then flush: a kill leaves at most one torn line at the
  // end, which the next --resume cuts off.
  const std::string line = format_row(f, row);
  if (std::fwrite(line.data(), 1, line.size(), it->second) != line.size() || std::fflush(it->second) != 0)
    throw RuntimeError(dir_ + "/" + file_name(f) + ": write failed (disk full?)");
  done_.insert(row.config_id);
}

int64_t merge_datasets(const std::vector<std::string>& in_dirs, const std::string& out_dir) {
  if (in_dirs.empty()) throw ConfigError("merge: no input folders");
  // Every input must be a collect folder; the output may not be (or lie inside) one of them.
  for (const auto& d : in_dirs) {
    if (!fs::is_directory(d)) throw ConfigError("--in '" + d + "': folder not found");
    bool has = false;
    for (Family f : kAllFamilies) has = has || fs::exists(fs::path(d) / DatasetWriter::file_name(f));
    if (!has) throw ConfigError("--in '" + d + "': no <family>.csv written by `tilecast collect` in it");
  }
  check_output_not_input(out_dir, in_dirs, "--out");
  for (const auto& d : in_dirs) check_output_not_input(d, {out_dir}, "--in");
  fs::create_directories(out_dir);
  FileLock lock((fs::path(out_dir) / ".lock").string(), "merge output folder '" + out_dir + "'");
  int64_t written = 0;
  // Each output file is built in a temp file and renamed into place only when complete.
  std::vector<std::unique_ptr<AtomicFile>> outputs;
  for (Family f : kAllFamilies) {
    const std::string name = DatasetWriter::file_name(f);
    std::set<std::string> seen;
    std::unique_ptr<AtomicFile> out;
    for (const auto& d : in_dirs) {
      const std::string path = (fs::path(d) / name).string();
      if (!fs::exists(path)) continue;
      CsvReader csv(path);
      if (csv.header() != collect_header(f)) throw DataError(path + ":1: " + header_mismatch(csv.header(), f));
      if (!out) {
        out = std::make_unique<AtomicFile>((fs::path(out_dir) / name).string());
        out->write(csv_join(collect_header(f)) + "\n");
      }
      const int c_id = csv.column("config_id");
      std::vector<std::string> row;
      while (csv.next(row))
        if (seen.insert(row[c_id]).second) {
          out->write(csv_join(row) + "\n");
          ++written;
        }
    }
    if (out) outputs.push_back(std::move(out));
  }
  // The local GPU's spec travels with the rows (train --data reads DIR/gpu.yaml).
  for (const auto& d : in_dirs) {
    const fs::path spec = fs::path(d) / "gpu.yaml";
    if (fs::exists(spec)) {
      auto g = std::make_unique<AtomicFile>((fs::path(out_dir) / "gpu.yaml").string());
      g->write(read_file(spec.string()));
      outputs.push_back(std::move(g));
      break;
    }
  }
  for (auto& o : outputs) o->commit();
  return written;
}

}  // namespace tilecast::collector
