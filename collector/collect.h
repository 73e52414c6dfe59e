#pragma once
// `tilecast collect`: run a sweep's ops with LibTorch and write one row per config.
#include <cstdint>
#include <string>

#include "collector/sweep.h"

namespace tilecast::collector {

struct CollectOptions {
  std::string sweep_path;
  std::string out_dir;
  std::string backend = "cuda";  // "cuda" (CUPTI) | "cpu" (steady clock, no kernel fields)
  int device = 0;
  Shard shard;
  bool resume = false;
  int64_t limit = 0;  // 0 = no limit: stop after this many new configs
  bool quiet = false;
};

struct CollectSummary {
  int64_t total = 0;      // configs in this shard
  int64_t skipped_existing = 0;  // written by an earlier run (--resume)
  int64_t drawn_twice = 0;       // identical to a config measured earlier in this run
  int64_t host_bound = 0;        // measured configs whose kernels waited on the host (collect.cpp)
  int64_t measured = 0, failed = 0;
  double seconds = 0;
  bool interrupted = false;
};

// Throws ConfigError / RuntimeError / NotBuiltError; per-config failures (out of memory,
// unsupported dtype) become rows with status != ok and the sweep goes on.
CollectSummary run_collect(const CollectOptions& opt);

}  // namespace tilecast::collector
