#pragma once
// Kernel timing rows in NeuSight's CSV layout (also what `tilecast collect` writes), and
// where NeuSight's public data lives.
#include <cstdint>
#include <string>
#include <vector>

#include "core/kernel.h"

namespace tilecast {

struct KernelSample {
  KernelQuery query;
  std::string device;       // CUDA device name from the `Device` column
  double latency_ms = 0;    // measured latency (label)
  std::string kernel_name;  // measured kernel (empty if unknown); never used to forecast
  std::string library;      // aiconfigurator's kernel_source (training keeps the spec's choice)
  // An SGLang attention row whose file has a window_size column and whose window is 0: what it
  // measured depends on the GPU's library (sglang_window_zero_is_own_key, resolve_sglang_window_zero).
  bool sglang_window_zero = false;
  int64_t grid[3] = {0, 0, 0};
  int64_t block[3] = {0, 0, 0};
  bool has_tile = false;  // measured_tile parsed from the kernel name + grid
  GemmTile measured_tile;
  std::string file;
  long line = 0;
};

// A measured kernel latency above this (about 2.8 hours) is a unit or data error.
constexpr double kMaxKernelLatencyMs = 1e7;

// Reads one CSV in NeuSight's column layout. Unknown columns, unknown op names, bad
// numbers, latencies outside (0, kMaxKernelLatencyMs], bad dims, and rows whose `dtype`
// is not fp32 throw DataError naming file, line and column.
// Also reads the aiconfigurator layout of ../shared/llm-kernels (detected from the header:
// `framework,version,device,op_name,...`): gemm rows (m tokens, k in-, n out-features, dtype);
// rows of a dtype without a model (moe's w4a8_mxfp4_mxfp8) are skipped and counted in a warning; other op_names
// are refused until their family exists.
// Also reads vidur's per-layer mlp.csv (../shared/llm-kernels/vidur/<a100|a40>/<org>/<model>/,
// detected from its columns): FP16 cuBLAS GEMMs (gemm) and the memory ops of Llama-like models
// (rmsnorm, rope, silu_mul, residual_add), per tensor-parallel rank; and LLMServingSim's vLLM
// dense.csv (the same ops, GPU and dims from meta.yaml), attention.csv (pure decode and
// fresh-prefill rows) and per_sequence.csv (the sampler over FP32 logits by sequences).
std::vector<KernelSample> read_kernel_csv(const std::string& path);

// aiconfigurator's CSV layout (../shared/llm-kernels/aiconfigurator/<GPU>/<op>_perf.csv; `tilecast
// collect` writes attention and MoE in it, so that one reader takes both): per family, its
// op_name, the columns between `kernel_source` and `latency`, how a row becomes a query and a
// query a row. The reader and the collector's writer both read this table, so they cannot
// drift apart; a family gains the layout by a row here.
class AicRow {  // one data row's fields by column name; errors name file, line and column
 public:
  virtual ~AicRow() = default;
  virtual bool has(const char* column) const = 0;           // present in the header and non-empty
  virtual const std::string& str(const char* column) const = 0;
  virtual int64_t dim(const char* column, int64_t lo) const = 0;  // an integer in [lo, 2^31]
  [[noreturn]] virtual void fail(const char* column, const std::string& why) const = 0;
};
struct AicLayout {
  Family family;
  const char* op_name;                // the files' op_name
  std::vector<std::string> columns;   // written in this order (the reader also takes optional ones)
  bool collected;                     // `tilecast collect` writes the family in this layout
  // The row's query, or false with `skip` saying what is not modelled (a dtype, a beam width).
  bool (*parse)(const AicRow& row, KernelQuery* q, std::string* skip);
  std::vector<std::string> (*values)(const KernelQuery& q);  // `columns`' values for a query
};
const std::vector<AicLayout>& aic_layouts();
const AicLayout* aic_layout(Family f);  // nullptr: the family has no aiconfigurator layout

// Parses (Tile1, Tile2) from a cuBLAS/cutlass/Tensile kernel name as NeuSight does:
// `_mt<a>x<b>`, `sgemm_<a>x<b>`, `tilesize<a>x<b>`. Returns false if none matches.
bool parse_tile_from_kernel_name(const std::string& kernel_name, int* tile1, int* tile2);

// The LLM-era data root: `flag`, else $TILECAST_LLM_KERNELS_DIR, else ../shared/llm-kernels.
std::string llm_kernels_dir(const std::string& flag = "");
// Training files of an LLM-era family: aiconfigurator/{A100-SXM4-80GB,L40S,B200}/<op>_perf.csv.
std::vector<std::string> llm_training_files(const std::string& root, Family f);
const std::vector<std::string>& llm_training_gpu_dirs();

// NeuSight data root: `flag` if non-empty, else $TILECAST_NEUSIGHT_DIR, else
// ../shared/neusight (relative to the working directory, then to the source tree).
std::string neusight_dir(const std::string& flag = "");
// True if `dir` looks like NeuSight's data folder.
bool neusight_dir_present(const std::string& dir);

// The training GPUs (CUDA names), fixed by the protocol: never train on others. NVIDIA: the
// five old GPUs; AMD (the separate AMD predictor set, issue 9): MI100 and MI210.
const std::vector<std::string>& training_gpus(const std::string& vendor = "nvidia");
// Training CSVs for a family under the data root. NVIDIA: kernels/nvidia/train/<op>/p2.1.0/
// <GPU>.csv. AMD: kernels/amd/train/collect/<op>/p2.4.1/<GPU>.csv for the vector families and
// kernels/amd/test/collect/{bmm,linear}/p2.4.1/<GPU>.csv, the only AMD GEMM rows published
// (neither GPU is a held-out one).
std::vector<std::string> training_files(const std::string& root, Family f, const std::string& vendor = "nvidia");

// 64-bit FNV-1a over the bytes of the files, hex: the data hash in weight manifests.
std::string files_hash(const std::vector<std::string>& paths);

// Several kernel libraries measured the same shapes on one GPU (B200 attention: trtllm_mha and
// Triton; B200 MoE: flashinfer and Triton): keeps, per GPU, the rows of the library its spec
// implies (kernel_library) when it has any, else all of its rows (a lab's own collect run);
// drops attention rows that implausible_row calls impossible (measurement artefacts), SGLang's
// window-0 rows that ran each query against its own key alone (sglang_window_zero_is_own_key: not
// the full attention a window of 0 means here, and trained on as 1-key windows they made leave
// one GPU out worse) and other full-attention rows no faster than their windowed twins
// (not_full_attention), and the expert-parallel MoE rows of a file whose ranks ran about the
// whole layer (moe_ep_not_rank_local). Rows of GPUs without a spec are kept. Returns what it
// removed.
struct LibraryFilterCounts {
  int64_t other_library = 0, impossible_compute = 0, impossible_memory = 0, sglang_own_key = 0,
          not_full_attention = 0, moe_ep_not_rank_local = 0;
};

// Why a measured latency cannot be the kernel its row describes, from physics alone:
// kCompute: more than `compute_slack` times faster than the dtype's compute roofline at the
// clock a kernel alone runs at (fastest_s; e.g. L40S prefill of 16,384 tokens in 0.05 ms); kMemory: more than 1.5x faster than reading, at the
// DRAM bandwidth, the bytes that do not fit in L2 (a benchmark that repeats one call may serve
// up to the L2's size from cache, never more: e.g. L40S decode rows of 1 GB of KV cache in 27
// us). Evaluation counts rows with the default slack of 1.5 as implausible (the tables'
// `implausible_rows`, unchanged since they were introduced); training leaves out every row
// faster than the compute peak (kTrainingComputeSlack: no slack), which leave-one-GPU-out
// preferred (docs/accuracy.md).
enum class Implausible { kNone, kCompute, kMemory };
constexpr double kTrainingComputeSlack = 1.0;
Implausible implausible_row(const KernelQuery& q, double latency_ms, const GpuSpec& gpu,
                            double compute_slack = 1.5);
LibraryFilterCounts filter_spec_library(std::vector<KernelSample>& rows, const GpuRegistry& gpus);

// Gives the SGLang window-0 rows that measured each query attending to its own key alone
// (sglang_window_zero_is_own_key on the row's GPU) that window: 1 key. Returns how many it changed;
// rows of a GPU without a spec are left as they are. eval-kernels forecasts what the rows ran;
// training leaves them out (filter_spec_library).
int64_t resolve_sglang_window_zero(std::vector<KernelSample>& rows, const GpuRegistry& gpus);
// A row of a fallback kernel library that says it ran it (fallback_attention, and the row's
// library is that one): training fits such rows a roofline and a network of their own. A lab's
// own collect run of the same shapes (another library, its GPU's only rows) is not one.
bool fallback_library_row(const KernelSample& s, const GpuSpec& gpu);

// Full-attention rows (window_size 0) that are not full attention, judged by their own file: a
// kernel attending to every cached key does all the work of the same shape with a sliding
// window and reads at least 16x the keys when the span is 16x the window, so it cannot run in
// about the same time. Per (device, op, library), over the pairs of a window-0 row and the same
// shape with a window w <= span / 16: when the median of t(window 0) / t(window w) is below
// kFullAttentionMinRatio (over at least kFullAttentionMinPairs pairs), every window-0 row of the
// group is flagged. Pairs of equal latencies (one measurement filed twice) are not counted.
// The L40S's prefill and decode files and the B200's TRT-LLM prefill file measure their window-0
// rows at a median 0.74-1.00x of the 128-key window (scripts/llm-data-checks.py): those kernels
// attended to a few keys, whatever the row says. Returns one flag per row.
constexpr double kFullAttentionMinRatio = 1.25;
constexpr int kFullAttentionMinPairs = 10;
constexpr int64_t kFullAttentionSpanOverWindow = 16;
std::vector<bool> not_full_attention(const std::vector<KernelSample>& rows);

// MoE rows at an expert-parallel degree above 1 that did not run rank 0's share of the layer.
// tilecast reads such a row as rank 0 of moe_ep ranks: E / moe_ep experts and the pairs routed to
// them, about 1 / moe_ep of the layer's work at balanced routing. Per (device, library, dtype),
// over the balanced layers of >= kMoeEpProbeMinTokens tokens timed at ep kMoeEpProbeDegree and at
// ep 1 (same shape, tokens and moe_tp): when the median of t(ep 8) / t(ep 1) is above
// kMoeEpMaxRatio (over at least kMoeEpMinPairs pairs), every row of the group with moe_ep > 1 is
// flagged. The A100's file (SGLang 0.5.10) keeps 0.85 of the ep-1 time at ep 8 (BF16, Triton):
// its ranks ran about the whole layer's tensor work through ep 8; the L40S's and B200's (0.5.14)
// keep 0.38 (Triton) and 0.23 (TRT-LLM) (`python3 scripts/moe-scaling.py`, its third table;
// docs/accuracy.md, "Two SGLang versions' expert parallelism"). Training leaves the flagged rows
// out; eval-kernels scores them as measured. Returns one flag per row.
constexpr double kMoeEpMaxRatio = 0.5;
constexpr int kMoeEpMinPairs = 10;
constexpr int64_t kMoeEpProbeDegree = 8;
constexpr int64_t kMoeEpProbeMinTokens = 4096;
std::vector<bool> moe_ep_not_rank_local(const std::vector<KernelSample>& rows);

// Held-out shapes (train --holdout-shapes, eval-kernels --holdout-shapes): a row is held out
// when a stable hash (FNV-1a) of its op, shape and dtype falls in the lowest `percent` of 100
// buckets; the same rows in every process, whatever the file order. percent in [0, 100].
bool shape_held_out(const KernelQuery& q, int percent);
// ConfigError naming the flag unless 1 <= percent <= 50.
void check_holdout_percent(int percent);

}  // namespace tilecast
