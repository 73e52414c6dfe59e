#pragma once
// The one path from (query, GPU) to MLP input, used identically by training and forecasting.
#include "core/gpu_spec.h"
#include "core/kernel.h"
#include "core/tile_table.h"

namespace tilecast {

struct PreparedKernel {
  LaunchInfo launch;
  KernelBounds bounds;
};

// Looks up the GEMM tile (TileTable, never the measured kernel), builds the launch model,
// bounds and writes num_features(family) floats to `features`.
PreparedKernel featurize(const KernelQuery& q, const GpuSpec& gpu, const TileTable& tiles,
                         float* features);

}  // namespace tilecast
