#include "core/featurize.h"

namespace tilecast {

PreparedKernel featurize(const KernelQuery& q, const GpuSpec& gpu, const TileTable& tiles,
                         float* features) {
  PreparedKernel p;
  GemmTile tile;
  if (is_gemm(op_family(q.op))) tile = tiles.lookup(gpu, q);
  p.launch = launch_info(q, gpu, tile);
  p.bounds = kernel_bounds(q, gpu, p.launch);
  kernel_features(q, gpu, p.launch, p.bounds, features);
  return p;
}

}  // namespace tilecast
