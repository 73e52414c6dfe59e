#include "core/tile_table.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/csv.h"
#include "core/error.h"
#include "core/fs_util.h"

namespace tilecast {
namespace {
int bin_of(int64_t x) {
  int b = 0;
  while ((int64_t{2} << b) <= x && b < 40) ++b;  // floor(log2(x))
  return b;
}
std::string table_key(const std::string& device, Family f) {
  return device + "|" + family_name(f);
}
const char* kDefaultReference = "NVIDIA A100-PCIE-40GB";
}  // namespace

TileTable::Key TileTable::bin_key(const KernelQuery& q) {
  // Linear always has B = 1; N (reduction) matters less than M and K but is kept.
  return {bin_of(q.b), bin_of(q.m), bin_of(q.n), bin_of(q.k)};
}

void TileTable::add_samples(const std::vector<KernelSample>& samples) {
  for (const auto& s : samples) {
    if (!s.has_tile || !is_gemm(op_family(s.query.op))) continue;
    Cell& c = entries_[table_key(s.device, op_family(s.query.op))][bin_key(s.query)];
    c.votes[{s.measured_tile.tm, s.measured_tile.tk, s.measured_tile.split_k}] += 1;
  }
  finalize();
}

void TileTable::finalize() {
  memo_.clear();
  for (auto& dev : entries_)
    for (auto& kv : dev.second) {
      Cell& c = kv.second;
      int best = -1;
      c.count = 0;
      for (const auto& v : c.votes) {
        c.count += v.second;
        if (v.second > best) {
          best = v.second;
          c.best = GemmTile{v.first[0], v.first[1], v.first[2]};
        }
      }
    }
}

bool TileTable::has_family(Family f) const {
  const std::string suffix = std::string("|") + family_name(f);
  for (const auto& d : entries_)
    if (d.first.size() >= suffix.size() && d.first.compare(d.first.size() - suffix.size(), suffix.size(), suffix) == 0)
      return true;
  return false;
}

size_t TileTable::size() const {
  size_t n = 0;
  for (const auto& d : entries_) n += d.second.size();
  return n;
}

std::string TileTable::reference_device(const GpuSpec& gpu) const {
  for (Family f : {Family::kBmm, Family::kLinear})
    if (entries_.count(table_key(gpu.cuda_name, f))) return gpu.cuda_name;
  // The spec's reference where this table has it (the AMD set's table has MI100/MI210, the
  // NVIDIA set's the five NVIDIA GPUs), else the A100, else the table's first device.
  for (const std::string& ref : {gpu.tile_reference, std::string(kDefaultReference)})
    if (!ref.empty())
      for (Family f : {Family::kBmm, Family::kLinear})
        if (entries_.count(table_key(ref, f))) return ref;
  if (!entries_.empty()) return entries_.begin()->first.substr(0, entries_.begin()->first.find('|'));
  return gpu.tile_reference.empty() ? kDefaultReference : gpu.tile_reference;
}

GemmTile TileTable::lookup(const GpuSpec& gpu, const KernelQuery& q) const {
  const Family fam = op_family(q.op);
  TC_CHECK(is_gemm(fam), "tile lookup for a non-GEMM op");
  const std::string dev = reference_device(gpu);
  const Key key = bin_key(q);
  std::string memo_key = table_key(dev, fam) + "|" + std::to_string(key[0]) + "," +
                         std::to_string(key[1]) + "," + std::to_string(key[2]) + "," +
                         std::to_string(key[3]);
  auto m = memo_.find(memo_key);
  if (m != memo_.end()) return m->second;

  auto it = entries_.find(table_key(dev, fam));
  if (it == entries_.end() && !has_family(fam)) {
    // No kernel names at all for this family (data from the CPU backend): one fixed tile.
    memo_.emplace(memo_key, GemmTile{});
    return GemmTile{};
  }
  if (it == entries_.end())
    throw ConfigError("tile table has no " + std::string(family_name(fam)) + " kernels for '" +
                      dev + "' (reference of GPU " + gpu.name + ")");
  // Nearest populated bin (L1 in log2 space); ties go to the better-populated bin.
  GemmTile best;
  int best_d = std::numeric_limits<int>::max(), best_n = -1;
  for (const auto& kv : it->second) {
    int d = 0;
    for (int i = 0; i < 4; ++i) d += std::abs(kv.first[i] - key[i]);
    if (d < best_d || (d == best_d && kv.second.count > best_n)) {
      best_d = d;
      best_n = kv.second.count;
      best = kv.second.best;
    }
  }
  memo_.emplace(memo_key, best);
  return best;
}

void TileTable::save(const std::string& path) const {
  std::ostringstream out;
  out << "device,family,bin_b,bin_m,bin_n,bin_k,tile_m,tile_k,split_k,count\n";
  for (const auto& dev : entries_) {
    auto bar = dev.first.find('|');
    std::string device = dev.first.substr(0, bar), fam = dev.first.substr(bar + 1);
    for (const auto& kv : dev.second)
      for (const auto& v : kv.second.votes)
        out << csv_escape(device) << ',' << fam << ',' << kv.first[0] << ',' << kv.first[1] << ','
            << kv.first[2] << ',' << kv.first[3] << ',' << v.first[0] << ',' << v.first[1] << ','
            << v.first[2] << ',' << v.second << '\n';
  }
  write_file_atomic(path, out.str());
}

TileTable TileTable::load(const std::string& path) {
  CsvReader csv(path);
  static const std::vector<std::string> cols = {"device", "family", "bin_b", "bin_m", "bin_n",
                                                "bin_k", "tile_m", "tile_k", "split_k", "count"};
  if (csv.header() != cols) throw DataError(where(path, 1) + ": unexpected tile table header");
  TileTable t;
  std::vector<std::string> f;
  while (csv.next(f)) {
    Family fam = family_from_string(f[1]);
    Key key;
    for (int i = 0; i < 4; ++i)
      key[i] = static_cast<int>(parse_int_field(f[2 + i], path, csv.line(), cols[2 + i]));
    std::array<int, 3> tile;
    for (int i = 0; i < 3; ++i) {
      tile[i] = static_cast<int>(parse_int_field(f[6 + i], path, csv.line(), cols[6 + i]));
      if (tile[i] < 1 || tile[i] > 4096)
        throw DataError(where(path, csv.line()) + ": column '" + cols[6 + i] + "' out of range");
    }
    int count = static_cast<int>(parse_int_field(f[9], path, csv.line(), "count"));
    t.entries_[table_key(f[0], fam)][key].votes[tile] += count;
  }
  t.finalize();
  return t;
}

}  // namespace tilecast
