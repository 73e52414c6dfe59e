#pragma once
// Kernel activity records as copied out of CUPTI, and their reduction to one dataset row per
// config. Pure C++: tested with hand-built records, no GPU.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tilecast::collector {

// One kernel launch (a POD copy of CUpti_ActivityKernel10's fields we use).
struct KernelRecord {
  std::string name;
  uint32_t correlation_id = 0;
  int64_t start_ns = 0, end_ns = 0;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t regs_per_thread = 0;
  int32_t static_smem_bytes = 0, dynamic_smem_bytes = 0;
  uint32_t device_id = 0, stream_id = 0;
};

// CUPTI external correlation: runtime correlation id -> our id (config index * repeats + rep).
struct ExternalCorrelation {
  uint32_t correlation_id = 0;
  uint64_t external_id = 0;
};

// What one config's kernels add up to.
struct ConfigKernels {
  // Per timed repeat: the time the GPU ran this config's kernels (the union of their intervals),
  // and the span from the first kernel's start to the last one's end. They differ where the
  // GPU waited between kernels, for the host to launch the next (an eager op of several small
  // kernels); that wait belongs to the host, not to the GPU, so repeat_ms leaves it out.
  std::vector<double> repeat_ms;
  std::vector<double> repeat_span_ms;
  std::string main_kernel;        // the longest kernel (what NeuSight's regexes pick)
  std::vector<std::string> kernels;  // every distinct kernel name, launch order
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  int32_t regs_per_thread = 0, static_smem_bytes = 0, dynamic_smem_bytes = 0;
  int64_t dropped = 0;  // records without timestamps
};

// Two passes (kineto): correlation -> external id, then group kernels by external id.
// External ids are `config_key * stride + repeat`; returns config_key -> kernels. Records
// with start == end == 0 are dropped and counted; records without an external id are ignored.
std::map<uint64_t, ConfigKernels> group_by_config(const std::vector<KernelRecord>& kernels,
                                                  const std::vector<ExternalCorrelation>& ext,
                                                  uint64_t stride);

// Median and spread (p90 - p10) of repeat latencies, ms.
double median_ms(std::vector<double> v);
double spread_ms(std::vector<double> v);
// The run's log line on the host's share of a call, from each family's call_ms - busy_ms in
// microseconds: "host time per call (call_ms - busy_ms), median: bmm 20.5 us (1,296 configs),
// ..." in the map's order; "" when no config had both timings (the CPU backend).
std::string host_time_summary(const std::map<std::string, std::vector<double>>& host_us_by_family);
// NeuSight's "Blocks per SM" and "Warps per SM" columns (kineto's formulas).
double blocks_per_sm(const int32_t grid[3], int num_sms);
double warps_per_sm(const int32_t grid[3], const int32_t block[3], int num_sms);

}  // namespace tilecast::collector
