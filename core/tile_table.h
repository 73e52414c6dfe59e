#pragma once
// Which GEMM tile (and split-K) the vendor library picks for a shape, learned from the
// training GPUs' measured kernels. A forecast for any GPU reads tiles from here, never from
// the row being forecast. For a GPU without measurements, its spec's `tile_reference`
// (a training GPU of the same or nearest architecture) stands in.
#include <array>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/kernel.h"
#include "core/kernel_dataset.h"

namespace tilecast {

class TileTable {
 public:
  // Adds the measured tiles of GEMM samples (rows without a parsed tile are ignored).
  void add_samples(const std::vector<KernelSample>& samples);
  // Majority tile of the nearest populated shape bin for this GPU (or its reference).
  GemmTile lookup(const GpuSpec& gpu, const KernelQuery& q) const;
  // Device whose measurements serve `gpu` (its own, its tile_reference, or the default).
  std::string reference_device(const GpuSpec& gpu) const;
  bool empty() const { return entries_.empty(); }
  // True if any device has measured tiles for the family. Without any (CPU-backend data),
  // lookup() returns the default 128x128 tile.
  bool has_family(Family f) const;
  size_t size() const;

  // CSV: device,family,bin_b,bin_m,bin_n,bin_k,tile_m,tile_k,split_k,count
  void save(const std::string& path) const;
  static TileTable load(const std::string& path);

 private:
  using Key = std::array<int, 4>;  // log2 bins of B, M, N, K
  struct Cell {
    std::map<std::array<int, 3>, int> votes;  // (tm, tk, split_k) -> count
    GemmTile best;
    int count = 0;
  };
  static Key bin_key(const KernelQuery& q);
  void finalize();
  std::map<std::string, std::map<Key, Cell>> entries_;  // "<device>|<family>" -> bins
  mutable std::unordered_map<std::string, GemmTile> memo_;
};

}  // namespace tilecast
