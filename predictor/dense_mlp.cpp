#include "predictor/dense_mlp.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <thread>

extern "C" {
#include <cblas.h>  // declarations only: the library is opened at run time (blas() below)
}

#include "core/error.h"
#include "core/fs_util.h"

namespace tilecast::predictor {

namespace {

constexpr char kMagic[8] = {'T', 'C', 'M', 'L', 'P', '\0', '\0', '\1'};
constexpr uint32_t kMaxLayers = 64;
constexpr uint32_t kMaxWidth = 1u << 16;

static_assert(sizeof(float) == 4, "float32 expected");

bool little_endian() {
  const uint32_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

class Reader {
 public:
  Reader(const std::string& data, const std::string& path) : d_(data), path_(path) {}
  void bytes(void* dst, size_t n, const char* what) {
    if (d_.size() - pos_ < n)
      throw ConfigError(path_ + ": truncated network file (ends inside " + what + ")");
    std::memcpy(dst, d_.data() + pos_, n);
    pos_ += n;
  }
  uint32_t u32(const char* what) {
    uint32_t v;
    bytes(&v, 4, what);
    return v;
  }
  std::vector<float> floats(size_t n, const char* what) {
    // Checked before allocating: a header claiming 65536 x 65536 weights in a short file is
    // refused without reserving 16 GiB.
    if ((d_.size() - pos_) / 4 < n) throw ConfigError(path_ + ": truncated network file (ends inside " + what + ")");
    std::vector<float> v(n);
    bytes(v.data(), n * 4, what);
    for (float f : v)
      if (!std::isfinite(f)) throw ConfigError(path_ + ": non-finite number in " + what);
    return v;
  }
  bool at_end() const { return pos_ == d_.size(); }

 private:
  const std::string& d_;
  const std::string& path_;
  size_t pos_ = 0;
};

void append(std::string& s, const void* p, size_t n) { s.append(static_cast<const char*>(p), n); }

// The BLAS is opened on first use (dlopen), not linked: processes that never run a network
// (`tilecast gpus`) do not load it, and OPENBLAS_CORETYPE can be set before OpenBLAS reads it.
struct Blas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_sgemv) sgemv = nullptr;  // a block of a few rows: no packing of the weights
  void (*set_threads)(int) = nullptr;
  int (*get_threads)() = nullptr;
  std::string name = "none (plain loops)";
};

const Blas& blas() {
  static const Blas b = [] {
    Blas r;
    const char* want = std::getenv("TILECAST_BLAS");
    if (want && std::string(want) == "none") return r;
    prefer_fast_blas_kernels();
    void* h = nullptr;
    for (const char* lib : {"libblas.so.3", "libopenblas.so.0", "libcblas.so.3"})
      if ((h = dlopen(lib, RTLD_NOW | RTLD_LOCAL))) {
        r.name = lib;
        break;
      }
    if (!h) return r;
    r.sgemm = reinterpret_cast<decltype(&cblas_sgemm)>(dlsym(h, "cblas_sgemm"));
    r.sgemv = reinterpret_cast<decltype(&cblas_sgemv)>(dlsym(h, "cblas_sgemv"));
    r.set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
    r.get_threads = reinterpret_cast<int (*)()>(dlsym(h, "openblas_get_num_threads"));
    if (auto corename = reinterpret_cast<char* (*)()>(dlsym(h, "openblas_get_corename")))
      r.name += std::string(" (OpenBLAS, ") + corename() + ")";
    if (!r.sgemm) r.name = "none (plain loops)";
    return r;
  }();
  return b;
}

// c (n x out) = a (n x in) * w^T, w out x in: what cblas_sgemm computes below, for machines
// without a BLAS (and to test that path).
void plain_gemm(const float* a, const float* w, float* c, size_t n, int64_t in, int64_t out) {
  for (size_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < out; ++o) {
      const float* ar = a + i * in;
      const float* wr = w + o * in;
      float acc = 0;
      for (int64_t k = 0; k < in; ++k) acc += ar[k] * wr[k];
      c[i * out + o] = acc;
    }
}

}  // namespace

void prefer_fast_blas_kernels() {
  // OpenBLAS 0.3.21 picks its kernels from the CPU model and falls back to Prescott (SSE3)
  // on CPUs it does not know, e.g. a virtual "Intel Xeon Processor" with AVX-512: measured
  // 4-5x slower forecasts on this project's machines. The user's own setting wins.
  if (std::getenv("OPENBLAS_CORETYPE")) return;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl"))
    setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    setenv("OPENBLAS_CORETYPE", "Haswell", 0);
#endif
}

std::string blas_name() { return blas().name; }

DenseMlp DenseMlp::load(const std::string& path) {
  std::string data;
  try {
    data = read_file(path);
  } catch (const DataError& e) {
    throw ConfigError(e.what());
  }
  return parse(data, path);
}

DenseMlp DenseMlp::parse(const std::string& data, const std::string& path) {
  if (!little_endian()) throw NotBuiltError("network files are little-endian; this machine is not");
  Reader r(data, path);
  char magic[8];
  r.bytes(magic, 8, "the header");
  if (std::memcmp(magic, kMagic, 8) != 0)
    throw ConfigError(path + ": not a tilecast network file (bad magic; expected a .tcmlp written by `tilecast train`)");
  const uint32_t nl = r.u32("the header");
  if (nl < 1 || nl > kMaxLayers)
    throw ConfigError(path + ": absurd layer count " + std::to_string(nl) + " (1-" + std::to_string(kMaxLayers) + ")");
  std::vector<uint32_t> w(nl + 1);
  for (auto& v : w) {
    v = r.u32("the widths");
    if (v < 1 || v > kMaxWidth) throw ConfigError(path + ": absurd layer width " + std::to_string(v));
  }
  if (w.back() != 1) throw ConfigError(path + ": the last layer has " + std::to_string(w.back()) + " outputs, 1 expected");
  DenseMlp m;
  m.mean = r.floats(w[0], "the input means");
  m.inv_std = r.floats(w[0], "the input scales");
  for (uint32_t l = 0; l < nl; ++l) {
    DenseLayer L;
    L.in = w[l];
    L.out = w[l + 1];
    L.weight = r.floats(static_cast<size_t>(L.in) * L.out, "a weight matrix");
    L.bias = r.floats(static_cast<size_t>(L.out), "a bias");
    m.layers.push_back(std::move(L));
  }
  if (!r.at_end()) throw ConfigError(path + ": trailing bytes after the last layer (corrupt network file)");
  return m;
}

std::string DenseMlp::serialise() const {
  if (!little_endian()) throw NotBuiltError("network files are little-endian; this machine is not");
  if (layers.empty()) throw InternalError("DenseMlp::serialise: no layers");
  if (mean.size() != static_cast<size_t>(inputs()) || inv_std.size() != mean.size())
    throw InternalError("DenseMlp::serialise: standardisation size differs from the inputs");
  for (size_t l = 0; l < layers.size(); ++l) {
    const DenseLayer& L = layers[l];
    if (L.weight.size() != static_cast<size_t>(L.in * L.out) || L.bias.size() != static_cast<size_t>(L.out) ||
        (l > 0 && L.in != layers[l - 1].out))
      throw InternalError("DenseMlp::serialise: inconsistent layer " + std::to_string(l));
  }
  if (layers.back().out != 1) throw InternalError("DenseMlp::serialise: last layer must have one output");
  std::string s;
  append(s, kMagic, 8);
  const uint32_t nl = static_cast<uint32_t>(layers.size());
  append(s, &nl, 4);
  for (int64_t v : layer_widths()) {
    const uint32_t u = static_cast<uint32_t>(v);
    append(s, &u, 4);
  }
  append(s, mean.data(), mean.size() * 4);
  append(s, inv_std.data(), inv_std.size() * 4);
  for (const DenseLayer& L : layers) {
    append(s, L.weight.data(), L.weight.size() * 4);
    append(s, L.bias.data(), L.bias.size() * 4);
  }
  return s;
}

void DenseMlp::save(const std::string& path) const { write_file_atomic(path, serialise()); }

std::vector<int64_t> DenseMlp::layer_widths() const {
  std::vector<int64_t> w;
  if (layers.empty()) return w;
  w.push_back(layers.front().in);
  for (const DenseLayer& L : layers) w.push_back(L.out);
  return w;
}

void DenseMlp::forward(const float* x, size_t rows, float* out) const {
  if (layers.empty()) throw InternalError("DenseMlp::forward: no layers");
  const int64_t nin = inputs();
  int64_t widest = nin;
  for (const DenseLayer& L : layers) widest = std::max(widest, L.out);
  constexpr size_t kBlock = 2048;  // rows per block: two activations of 2048 x 256 floats at most
  constexpr size_t kGemvRows = 4;  // blocks of at most this many rows: sgemv per row
  const size_t block = std::min(kBlock, rows);
  std::vector<float> a(block * widest), b(block * widest);
  for (size_t r0 = 0; r0 < rows; r0 += block) {
    const size_t n = std::min(block, rows - r0);
    for (size_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < nin; ++c)
        a[i * nin + c] = (x[(r0 + i) * nin + c] - mean[c]) * inv_std[c];
    for (size_t l = 0; l < layers.size(); ++l) {
      const DenseLayer& L = layers[l];
      // b = a (n x in) * W^T (in x out), as torch::nn::Linear computes it. A few rows take one
      // matrix-vector product each: sgemm packs the whole weight matrix on every call, which
      // cost a forecast of one query about 0.4 ms (tilecast_bench, docs/performance.md).
      if (const auto sgemv = blas().sgemv; sgemv && n <= kGemvRows)
        for (size_t i = 0; i < n; ++i)
          sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(L.out), static_cast<int>(L.in), 1.0f,
                L.weight.data(), static_cast<int>(L.in), a.data() + i * L.in, 1, 0.0f, b.data() + i * L.out, 1);
      else if (const auto sgemm = blas().sgemm)
        sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), static_cast<int>(L.out),
              static_cast<int>(L.in), 1.0f, a.data(), static_cast<int>(L.in), L.weight.data(),
              static_cast<int>(L.in), 0.0f, b.data(), static_cast<int>(L.out));
      else
        plain_gemm(a.data(), L.weight.data(), b.data(), n, L.in, L.out);
      const bool relu = l + 1 < layers.size();
      for (size_t i = 0; i < n; ++i) {
        float* row = b.data() + i * L.out;
        for (int64_t c = 0; c < L.out; ++c) {
          const float v = row[c] + L.bias[c];
          row[c] = relu ? std::max(v, 0.0f) : v;
        }
      }
      std::swap(a, b);
    }
    for (size_t i = 0; i < n; ++i) out[r0 + i] = a[i];
  }
}

int set_blas_threads(int threads) {
  const Blas& b = blas();
  if (!b.set_threads || !b.get_threads) return 1;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  b.set_threads(threads);
  return b.get_threads();
}

}  // namespace tilecast::predictor
