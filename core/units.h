#pragma once
// Unit conversions. 1 GB = 1e9 bytes everywhere (GB/s is a decimal unit); GiB (2^30 B) only for
// memory capacities as vendor sheets state them (GpuSpec::mem_gib), converted where read.
#include <cstdint>

namespace tilecast {

constexpr double kBytesPerGb = 1e9;     // decimal gigabyte
constexpr double kBytesPerMib = 1048576.0;
constexpr double kBytesPerGib = 1073741824.0;  // binary gigabyte
constexpr double kFlopsPerGflop = 1e9;
constexpr double kMsPerS = 1e3;
constexpr double kUsPerS = 1e6;

constexpr double ns_to_ms(int64_t ns) { return static_cast<double>(ns) * 1e-6; }
constexpr double s_to_ms(double s) { return s * kMsPerS; }
constexpr double s_to_us(double s) { return s * kUsPerS; }

// Seconds to move `bytes` at `gbps` GB/s.
constexpr double transfer_s(double bytes, double gbps) { return bytes / (gbps * kBytesPerGb); }
// Seconds to execute `flops` at `gflops` GFLOP/s.
constexpr double compute_s(double flops, double gflops) { return flops / (gflops * kFlopsPerGflop); }

}  // namespace tilecast
