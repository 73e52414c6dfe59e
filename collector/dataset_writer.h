#pragma once
// Per-family CSV output of `tilecast collect`, in NeuSight's column layout followed by ours.
// Crash safety: each row is written whole and flushed; on open, a torn last line (a run
// killed mid-write) is cut off, and the config ids already present are reported so that
// --resume skips them.
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/op_kind.h"

namespace tilecast::collector {

struct CollectedRow {
  std::string op_name, device, torch_version, cudnn_version, cuda_version;
  double latency_ms = 0, latency_spread_ms = 0;
  // The two timings behind latency_ms (collect.cpp says which it is per family); < 0: not measured.
  double busy_ms = -1;  // the GPU's busy time per repeat (CUPTI): the union of the op's kernels
  double call_ms = -1;  // one call timed alone, host included (NeuSight's CUDA-event window)
  std::string kernel_name, kernels;  // kernels: ';'-joined
  double warps_per_sm = 0, blocks_per_sm = 0;
  bool has_launch = false;           // grid/block known (CUDA backend)
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int32_t regs_per_thread = 0, static_smem_bytes = 0, dynamic_smem_bytes = 0;
  std::vector<int64_t> dims;         // B,M,N,K or B,H; attention B,S|CTX,H,KV,D; moe T,H,F,K,E
  std::string kernel_source;         // attention and moe: the library the kernels came from
  std::string dtype, status = "ok", error_message, config_id;
};

// Header for a family: NeuSight's columns, then dtype, registers_per_thread,
// static_smem_bytes, dynamic_smem_bytes, latency_spread_ms, busy_ms, call_ms, status,
// error_message, tilecast_version, config_id. Attention and MoE use aiconfigurator's layout
// instead (the columns of ../shared/llm-kernels/aiconfigurator/*_perf.csv, so that one reader
// takes both), then Kernels, latency_spread_ms, busy_ms, call_ms, status, error_message,
// tilecast_version, config_id.
std::vector<std::string> collect_header(Family f);
std::string format_row(Family f, const CollectedRow& r);

class DatasetWriter {
 public:
  // Opens (creating) DIR/<family>.csv for each family. With `resume`, existing files are
  // kept: a torn final line is truncated and the config ids present are loaded; a header
  // that differs is an error. Without `resume`, existing non-empty files are an error.
  DatasetWriter(const std::string& dir, const std::vector<Family>& families, bool resume);
  ~DatasetWriter();
  bool done(const std::string& config_id) const { return done_.count(config_id) > 0; }
  size_t done_count() const { return done_.size(); }
  // Appends one row and flushes it to the OS.
  void append(Family f, const CollectedRow& row);
  static std::string file_name(Family f);

 private:
  std::string dir_;
  std::map<Family, std::FILE*> files_;
  std::set<std::string> done_;
};

// Joins shard outputs (same layout) into `out_dir`, dropping duplicate config ids; returns
// the number of rows written.
int64_t merge_datasets(const std::vector<std::string>& in_dirs, const std::string& out_dir);

}  // namespace tilecast::collector
