#pragma once
// The per-family MLP as forecasting runs it: no LibTorch. The network is read from a
// plain little-endian file that `tilecast train` writes beside each torch checkpoint
// (`<member>.tcmlp`), and its forward pass is a few single-precision GEMMs (CBLAS, i.e.
// OpenBLAS on a Debian machine set up by scripts/install-deps.sh).
//
// File layout (all little-endian):
//   char[8]  magic "TCMLP\0\0\1"
//   uint32   number of Linear layers L (>= 1)
//   uint32   widths[L + 1]           inputs, the outputs of each layer (the last is 1)
//   float32  mean[widths[0]], inv_std[widths[0]]   input standardisation
//   per layer l: float32 weight[widths[l+1] * widths[l]] (row-major, out x in),
//                float32 bias[widths[l+1]]
// Nothing may follow. ReLU sits between layers, none after the last.
#include <cstdint>
#include <string>
#include <vector>

namespace tilecast::predictor {

// The network's output o is read as log(1/utilisation) and clamped to this range:
// utilisation within [exp(-kMaxLogSlowdown), exp(-kMinLogSlowdown)].
constexpr double kMinLogSlowdown = -3.0;
constexpr double kMaxLogSlowdown = 14.0;

struct DenseLayer {
  int64_t in = 0, out = 0;
  std::vector<float> weight;  // out x in, row-major (torch::nn::Linear's layout)
  std::vector<float> bias;    // out
};

struct DenseMlp {
  std::vector<float> mean, inv_std;  // per input feature
  std::vector<DenseLayer> layers;

  // Throws ConfigError naming `path` for a missing, truncated, oversized or malformed
  // file (bad magic, zero widths, a last width other than 1, non-finite numbers).
  static DenseMlp load(const std::string& path);
  // The same from the file's bytes (already read, e.g. to check their sha256); `path`
  // names the file in errors.
  static DenseMlp parse(const std::string& bytes, const std::string& path);
  // Serialises (the format above) and writes atomically; checks its own consistency first.
  void save(const std::string& path) const;
  std::string serialise() const;

  int64_t inputs() const { return layers.empty() ? 0 : layers.front().in; }
  // [inputs, outputs of each layer...], as recorded in the weights manifest.
  std::vector<int64_t> layer_widths() const;
  // x: rows x inputs raw features (row-major) -> out[rows]: the network's outputs o,
  // unclamped. Rows are processed in blocks, so memory stays bounded for any row count.
  void forward(const float* x, size_t rows, float* out) const;
};

// The forward pass opens the BLAS at its first use (dlopen libblas.so.3, i.e. OpenBLAS on a
// machine set up by scripts/install-deps.sh); without one it runs plain loops (same results
// to float tolerance, slower). TILECAST_BLAS=none forces the loops.
// Threads of the forward pass: OpenBLAS's openblas_set_num_threads (0 = all cores); a no-op
// for another BLAS. Returns the threads now in use (1 for a single-threaded BLAS).
int set_blas_threads(int threads);
// What runs the forward pass, e.g. "libblas.so.3 (OpenBLAS, SkylakeX)".
std::string blas_name();
// Sets OPENBLAS_CORETYPE from the CPU's features when the user has not (OpenBLAS falls back
// to SSE3 kernels on CPUs it does not recognise). Called before the BLAS is opened, and by
// `tilecast` before it hands a command to tilecast-torch (whose LibTorch loads OpenBLAS).
void prefer_fast_blas_kernels();

}  // namespace tilecast::predictor
