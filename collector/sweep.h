#pragma once
// Sweeps: which kernels `tilecast collect` measures. A sweep YAML lists op families, dtypes,
// dimension ranges and sampling; every config is decoded from its index (mixed radix over
// family/op/dtype/cell/sample, dims drawn from a generator seeded by (seed, index)), so any
// process can enumerate, shard and resume the same sweep without shared state.
#include <cstdint>
#include <string>
#include <vector>

#include "core/kernel.h"

namespace tilecast::collector {

// A dimension's sampling cells, each [first, last] inclusive. In YAML either
// `[lo, hi]` (power-of-two cells: [lo, 2^a), [2^a, 2^(a+1)), ..., [2^z, hi]) or
// `{edges: [e0, e1, ..., en]}` (cells [e_i, e_(i+1) - 1], NeuSight's stratified grid), or
// `{values: [v0, v1, ...]}` (one cell per value, e.g. head_dim 64 and 128).
struct DimRange {
  std::string name;  // "b", "m", "n", "k", "h"
  std::vector<std::pair<int64_t, int64_t>> cells;
};

struct FamilySweep {
  Family family = Family::kBmm;
  std::vector<OpKind> ops;          // elementwise: several; others: one
  std::vector<DimRange> dims;       // bmm: b,m,n,k; linear, gemm: m,n,k; vector: b,h; attention:
                                    // b,s|ctx,kv_heads,group,head_dim; moe: t,h,f,topk,experts
  int samples_per_cell = 1;         // points per power-of-two cell (NeuSight: 15 bmm, 50 vec)
};

struct Sweep {
  std::string name;
  uint64_t seed = 42;
  int warmup = 3;   // untimed runs per config
  int repeats = 10; // timed runs per config (median kept, spread recorded)
  std::vector<std::string> dtypes = {"fp32"};  // fp32, fp16, bf16
  std::vector<FamilySweep> families;
  std::string origin;
};

struct SweepConfig {
  int64_t index = 0;
  std::string id;      // stable, human-readable: "bmm/fp32/12x64x48x200"
  std::string dtype;
  KernelQuery query;
};

// Largest sweep accepted (configs over all shards); larger ones are refused at load.
constexpr int64_t kMaxSweepConfigs = int64_t{1} << 40;

// Throws ConfigError naming the file and field for bad or unknown keys, and for a sweep
// whose size exceeds kMaxSweepConfigs (checked arithmetic: no int64 wrap-around).
Sweep load_sweep(const std::string& path);
int64_t sweep_size(const Sweep& s);
// Short hash of everything that decides a sweep's configs and their timing (not its name).
std::string sweep_fingerprint(const Sweep& s);
SweepConfig sweep_config(const Sweep& s, int64_t index);
// A dtype the collector runs, by its canonical name (fp32, fp16, bf16); ConfigError otherwise.
DType sweep_dtype(const std::string& dtype);

// "--shard I/N": I in [0, N). Throws ConfigError for bad text.
struct Shard {
  int64_t index = 0, count = 1;
  bool owns(int64_t config_index) const { return config_index % count == index; }
};
Shard parse_shard(const std::string& text);

}  // namespace tilecast::collector
