#pragma once
// GPU public specifications: the only thing tilecast knows about a target GPU.
// One YAML per GPU lives in configs/gpus/ (the single source of truth); NeuSight's device
// JSONs are read too, through an explicit key map.
#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "core/units.h"

namespace tilecast {

struct GpuSpec {
  std::string name;       // our canonical name, e.g. "H100-SXM" (= the YAML file stem)
  std::string cuda_name;  // torch.cuda.get_device_name(), e.g. "NVIDIA H100 80GB HBM3"
  std::vector<std::string> aliases;
  std::string vendor;  // "nvidia" | "amd" | "cpu" (the collector's CPU backend)
  std::string arch;    // "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna1".."cdna3"
  double compute_capability = 0;  // CUDA compute capability (e.g. 10.0, 12.0); 0 = not stated
  int num_sms = 0;     // SMs (NVIDIA) or CUs (AMD) visible to one device
  int cores_per_sm = 0;           // FP32 lanes per SM
  double boost_clock_mhz = 0;     // boost clock used for the peaks
  // The clock the sheet states its dense tensor-core peaks at, where it is below the boost
  // clock: the sheet's tensor peak / (SMs x the SM's tensor FLOP per clock). Hopper's sheets
  // rate tensor work at 1,830 MHz (H100 SXM) beside FP32 at the 1,980 MHz boost: the clock the
  // vendor rates a full-SM compute load at. 0 = the boost clock (sheets that state one clock,
  // and those whose SM tensor rate is not published with their clocks: Blackwell's).
  double compute_clock_mhz = 0;
  // The SM clock a lab measured during seconds of back-to-back tensor-core work (a GPU at its
  // board-power limit lowers its clock; scripts/measure-sustained.py, the median of its
  // `sm_mhz_sustained`), for whole-model forecasts. 0 = not measured: the sheet's rated clock
  // (compute_clock_mhz), else the boost clock. No bundled spec states one: it is a
  // measurement of one board, not a sheet's figure.
  double sustained_clock_mhz = 0;
  double fp32_peak_gflops = 0;    // FP32 non-tensor (SIMT / vector) peak, GFLOP/s
  double fp32_matrix_peak_gflops = 0;  // AMD: FP32 on matrix cores (0 = none)
  std::map<std::string, double> tensor_peak_gflops;  // dense tensor-core peaks per dtype
  double mem_bw_gbps = 0;         // DRAM bandwidth, GB/s (1e9 bytes/s)
  // Memory capacity in GiB (2^30 B). Vendor sheets' "80 GB" is binary: DRAM parts come in
  // binary sizes, and CUDA's totalGlobalMem reports the sheet's GiB less the driver's reserve
  // (an "80 GB" A100 81,920 MiB, an "80 GB" H100 81,559 MiB). A spec file may state `mem_gb`
  // (1e9 B) instead; it is converted.
  double mem_gib = 0;
  // GDDR memory whose ECC is on by default keeps its check bits in the DRAM itself: 1/16 of it,
  // so CUDA sees 15/16 of the sheet (a T4's 16 GiB as 15,360 MiB, an L4's 24 GiB as 23,034 MiB,
  // an L40S's 48 GiB as 46,068 MiB). HBM keeps ECC beside the data (no loss).
  bool inband_ecc = false;
  // The memory CUDA can allocate from: the sheet's, less in-band ECC.
  double mem_bytes() const { return mem_gib * kBytesPerGib * (inband_ecc ? 15.0 / 16.0 : 1.0); }
  double mem_gb() const { return mem_bytes() / kBytesPerGb; }  // the same in GB (1e9 B)
  double l2_cache_mb = 0;         // nominal last-level (L2) cache as the vendor states it
  int max_threads_per_sm = 2048;  // occupancy limit (resident threads per SM)
  int max_blocks_per_sm = 32;     // occupancy limit (resident CTAs per SM)
  double interconnect_gbps = 0;   // GPU-to-GPU bandwidth per direction (NVLink/xGMI, else PCIe), GB/s; 0 = unknown
  // The link that bandwidth is over: "nvlink", "xgmi" (AMD Infinity Fabric) or "pcie"; "" = not
  // stated (interconnect_link() then reads a bandwidth above PCIe 5.0 x16's 64 GB/s as NVLink).
  std::string interconnect;
  // A point-to-point mesh instead of a switch (AMD Infinity Fabric): the GPU has one link of
  // interconnect_gbps to each of this many peers, so a collective over k <= peers + 1 GPUs of
  // the mesh drives k - 1 links at once (a larger group: one link). 0 = a switched fabric
  // (NVSwitch) or a single link: every group gets interconnect_gbps.
  int interconnect_mesh_peers = 0;
  // The node that link joins: GPUs per NVLink domain (an HGX board: 8; GB200/GB300 NVL72: 72),
  // 0 = not stated (collectives are then costed on the link for any group size). Beyond it,
  // ranks talk over the cluster network at `network_gbps` per GPU (its NICs' bandwidth per
  // direction in the vendor's reference system, GB/s), 0 = not stated.
  int gpus_per_node = 0;
  double network_gbps = 0;
  double tdp_w = 0;               // board power limit (TDP/TBP), W; 0 = unknown
  int warp_schedulers_per_sm = 0;  // SM partitions, one warp scheduler each; 0 = not stated (4)
  int dispatch_per_scheduler = 0;  // instructions a scheduler issues per clock; 0 = not stated (by arch)
  // Exponentials (MUFU.EX2) the SM's special-function units return per clock: 16 (the CUDA C++
  // Programming Guide's arithmetic-instruction throughput table, the compute capabilities it
  // lists from 5.0), 32 on Blackwell Ultra (B300, GB300), which doubles them for attention.
  // 0 = not stated (16).
  int sfu_exp_per_sm_clock = 0;
  std::string tile_reference;     // training GPU whose kernel (tile) choices stand in for this one
  std::vector<std::string> sources;
  std::string notes;
  std::string origin;  // file it was read from

  // Hopper (wgmma) and datacenter Blackwell (tcgen05, compute capability 10.x): the
  // asynchronous tensor-core path with large tiles; Ada, Ampere and consumer/workstation
  // Blackwell (12.x) run mma.sync.
  bool async_tensor_cores() const {
    return arch == "hopper" || (arch == "blackwell" && (compute_capability == 0 || compute_capability < 12));
  }
  // Peak GFLOP/s a FP32 GEMM can reach with TF32 off (AMD: matrix cores when present), as the
  // spec sheet states it: the plain roofline's compute bound.
  double fp32_gemm_peak_gflops() const {
    return fp32_matrix_peak_gflops > 0 ? fp32_matrix_peak_gflops : fp32_peak_gflops;
  }
  // "nvlink" (also for xGMI: a direct GPU-to-GPU link) or "pcie": the link class collectives
  // are costed over (predictor/graph_predictor.h).
  std::string interconnect_link() const;
  // Bandwidth per direction one GPU drives into a collective over `group_ranks` GPUs joined by
  // its link (one node), GB/s: interconnect_gbps, times group_ranks - 1 within a mesh.
  double collective_gbps(int64_t group_ranks) const;
  // Fraction of the FP32 peak a SIMT SGEMM main loop can issue (NVIDIA): 1 where a scheduler's
  // FP32 lanes take more than one clock per warp instruction or it dispatches two per clock,
  // else the loop's FFMA share of issue slots (see gpu_spec.cpp). 1 for AMD and the CPU.
  double fp32_issue_fraction() const;
  // Exponentials per SM and clock (sfu_exp_per_sm_clock, else 16): FlashAttention's softmax
  // takes one per (query, key) element and head (prefill's bound, core/kernel.cpp).
  double exp_per_sm_clock() const { return sfu_exp_per_sm_clock > 0 ? sfu_exp_per_sm_clock : 16; }
  // compute_clock_mhz / boost_clock_mhz where the sheet rates full-SM compute below the boost
  // clock, else 1.
  double compute_clock_fraction() const {
    return compute_clock_mhz > 0 && boost_clock_mhz > 0 ? std::min(1.0, compute_clock_mhz / boost_clock_mhz) : 1.0;
  }
  // sustained_clock_mhz / boost_clock_mhz where measured, else compute_clock_fraction(): the
  // clock of tensor-core work inside a model's step (gemm_rate_gflops' `sustained`).
  double sustained_clock_fraction() const {
    return sustained_clock_mhz > 0 && boost_clock_mhz > 0 ? std::min(1.0, sustained_clock_mhz / boost_clock_mhz)
                                                          : compute_clock_fraction();
  }
  // The FP32 GEMM compute rate tilecast's bounds use: fp32_gemm_peak_gflops() x
  // fp32_issue_fraction() x compute_clock_fraction() (a SIMT SGEMM keeps every FP32 lane of
  // every SM busy: a full-SM compute load, at the clock the sheet rates such loads at).
  double fp32_simt_gemm_gflops() const {
    return fp32_gemm_peak_gflops() * fp32_issue_fraction() * compute_clock_fraction();
  }
};

// Reads one of our YAML specs; unknown keys, missing or out-of-range values throw ConfigError
// naming the file and field.
GpuSpec load_gpu_yaml(const std::string& path);
// Reads a NeuSight device JSON (Device, Dev_Mem, Mem_Bw, Num_Sm, Core_Per_SM, Freq,
// SingleFLOPs | SingleFLOPsMM+SingleFLOPsVEC, L2Cache).
GpuSpec load_neusight_device_json(const std::string& path);
// Range checks shared by both loaders.
void validate_gpu_spec(const GpuSpec& spec, const std::string& origin);
// Serialises to our YAML format (used by `tilecast gpus --show` and the collector).
std::string gpu_spec_to_yaml(const GpuSpec& spec);

// All specs of a directory, resolvable by stem, alias or CUDA device name.
class GpuRegistry {
 public:
  // Loads every *.yaml in `dir`; throws ConfigError for a bad file.
  explicit GpuRegistry(const std::string& dir);
  GpuRegistry() = default;
  void add(GpuSpec spec);
  // Accepts a YAML/JSON path, a file stem, an alias or a CUDA device name (case-insensitive,
  // spaces/underscores/dashes ignored). Throws ConfigError listing close names.
  const GpuSpec& resolve(const std::string& query) const;
  // Like resolve() but returns nullptr instead of throwing (paths are not accepted).
  const GpuSpec* find(const std::string& query) const;
  // The n names nearest `query` (edit distance over names, aliases and CUDA names), comma-separated.
  std::string closest(const std::string& query, size_t n = 4) const;
  const std::vector<GpuSpec>& all() const { return specs_; }

 private:
  std::vector<GpuSpec> specs_;
  mutable std::deque<GpuSpec> loaded_files_;  // specs resolved from explicit paths
};

// Twins: the same SM design and memory system under another board, name or revision (B200 and
// GB200; B200 and the Blackwell Ultra B300/GB300; the A100-SXM4-80GB and the A100 80GB PCIe):
// the same vendor and major compute capability (the architecture generation: 10.0 and 10.3
// are datacenter Blackwell, 12.0 is the workstation Blackwell with Ada's mma.sync tensor
// cores), the same SM count, and DRAM bandwidth within 10 %. A kernel library picks its
// kernels by the architecture (attention_library), and a memory-bound kernel's efficiency
// follows the memory system, so a correction learned on one carries to the other
// (`network_gpus: twins`).
bool gpu_twins(const GpuSpec& a, const GpuSpec& b);

// Lower-cases and drops spaces, '_', '-' so that "Tesla_P4", "tesla p4" and "Tesla-P4" match.
std::string normalize_gpu_key(const std::string& s);

}  // namespace tilecast
