#include "collector/kernel_record.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "core/units.h"

namespace tilecast::collector {

std::map<uint64_t, ConfigKernels> group_by_config(const std::vector<KernelRecord>& kernels,
                                                  const std::vector<ExternalCorrelation>& ext,
                                                  uint64_t stride) {
  std::unordered_map<uint32_t, uint64_t> ext_of;
  for (const auto& e : ext) ext_of[e.correlation_id] = e.external_id;

  using Interval = std::pair<int64_t, int64_t>;
  std::map<uint64_t, std::map<uint64_t, std::vector<Interval>>> runs;  // config -> repeat -> kernels
  std::map<uint64_t, ConfigKernels> out;
  std::map<uint64_t, int64_t> longest;
  for (const auto& k : kernels) {
    auto it = ext_of.find(k.correlation_id);
    if (it == ext_of.end()) continue;
    const uint64_t config = it->second / stride, rep = it->second % stride;
    ConfigKernels& c = out[config];
    if (k.start_ns == 0 && k.end_ns == 0) {
      ++c.dropped;
      continue;
    }
    runs[config][rep].emplace_back(k.start_ns, k.end_ns);
    if (std::find(c.kernels.begin(), c.kernels.end(), k.name) == c.kernels.end()) c.kernels.push_back(k.name);
    const int64_t dur = k.end_ns - k.start_ns;
    if (!longest.count(config) || dur > longest[config]) {
      longest[config] = dur;
      c.main_kernel = k.name;
      std::copy(k.grid, k.grid + 3, c.grid);
      std::copy(k.block, k.block + 3, c.block);
      c.regs_per_thread = k.regs_per_thread;
      c.static_smem_bytes = k.static_smem_bytes;
      c.dynamic_smem_bytes = k.dynamic_smem_bytes;
    }
  }
  for (auto& kv : runs)
    for (auto& r : kv.second) {
      std::vector<Interval>& v = r.second;
      std::sort(v.begin(), v.end());
      // Busy time: the union of the intervals (kernels of two streams may overlap).
      int64_t busy = 0, cur_start = v.front().first, cur_end = v.front().second;
      for (const Interval& iv : v) {
        if (iv.first > cur_end) {
          busy += cur_end - cur_start;
          cur_start = iv.first;
        }
        cur_end = std::max(cur_end, iv.second);
      }
      busy += cur_end - cur_start;  // cur_end: the last kernel's end
      out[kv.first].repeat_ms.push_back(ns_to_ms(busy));
      out[kv.first].repeat_span_ms.push_back(ns_to_ms(cur_end - v.front().first));
    }
  return out;
}

double median_ms(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string host_time_summary(const std::map<std::string, std::vector<double>>& host_us_by_family) {
  std::string out;
  for (const auto& [family, us] : host_us_by_family) {
    if (us.empty()) continue;
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s %.1f us (%zu configs)", family.c_str(), median_ms(us), us.size());
    out += (out.empty() ? "host time per call (call_ms - busy_ms), median: " : ", ") + std::string(buf);
  }
  return out;
}

double spread_ms(std::vector<double> v) {
  if (v.size() < 2) return 0;
  std::sort(v.begin(), v.end());
  auto at = [&](double p) { return v[static_cast<size_t>(p * (v.size() - 1) + 0.5)]; };
  return at(0.9) - at(0.1);
}

double blocks_per_sm(const int32_t grid[3], int num_sms) {
  return num_sms > 0 ? double(grid[0]) * grid[1] * grid[2] / num_sms : 0;
}

double warps_per_sm(const int32_t grid[3], const int32_t block[3], int num_sms) {
  return blocks_per_sm(grid, num_sms) * double(block[0]) * block[1] * block[2] / 32.0;
}

}  // namespace tilecast::collector
