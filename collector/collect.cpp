#include "collector/collect.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unordered_set>
#include <cstring>
#include <unistd.h>

#include "collector/cupti_activity.h"
#include "collector/dataset_writer.h"
#include "collector/kernel_record.h"
#include "core/config_io.h"
#include "core/error.h"
#include "core/units.h"
#include "core/fs_util.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/progress.h"
#include "trainer/mlp.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace tilecast::collector {
namespace {

// LibTorch >= 2.5: torch._scaled_mm in the form the FP8 GEMMs call it, and SDPA's enable_gqa.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
#define TILECAST_TORCH_2_5 1
#else
#define TILECAST_TORCH_2_5 0
#endif

// The dtype the inputs are drawn in (FP8 operands are drawn in BF16, then cast).
torch::Dtype torch_dtype(const std::string& d) {
  if (d == "fp16") return torch::kHalf;
  if (d == "bf16" || d == "fp8_static") return torch::kBFloat16;
  return torch::kFloat32;
}

// The LibTorch op of a config, inputs allocated once (NeuSight's collector: torch.bmm,
// nn.Linear, binary ops on two tensors, "u" variants with a Python scalar, activations,
// nn.LayerNorm, softmax over the last dim). Everything under NoGradGuard.
std::function<void()> make_op(const SweepConfig& c, torch::Device dev) {
  const auto opts = torch::TensorOptions().dtype(torch_dtype(c.dtype)).device(dev);
  const KernelQuery& q = c.query;
  switch (q.op) {
    case OpKind::kBmm: {
      auto a = torch::randn({q.b, q.m, q.n}, opts), b = torch::randn({q.b, q.n, q.k}, opts);
      return [a, b] { torch::bmm(a, b); };
    }
    case OpKind::kLinear: {
      auto x = torch::randn({1, q.m, q.n}, opts);
      auto w = torch::randn({q.k, q.n}, opts), bias = torch::randn({q.k}, opts);
      return [x, w, bias] { torch::nn::functional::linear(x, w, bias); };
    }
    case OpKind::kGemm: {  // a projection without bias: (M tokens x N in) x (N in -> K out)
      auto x = torch::randn({q.m, q.n}, opts), w = torch::randn({q.k, q.n}, opts);
      // FP8 (dtype fp8_static) as TensorRT-LLM's and vLLM's per-tensor FP8 linear with a calibrated
      // (static) scale: torch._scaled_mm on an activation already in E4M3, as the training data
      // time it (activation_quant_bytes, core/kernel.cpp); SGLang's cast before it is a pass of
      // its own in a model's step (serving_gemm, core/op_graph.cpp).
      if (c.dtype == "fp8_static") {
#if TILECAST_TORCH_2_5
        // The activation and the weight in E4M3 once, the weight as (N in x K out) column-major
        // (the transpose of its row-major (K, N) storage), as _scaled_mm takes its second operand;
        // FP32 per-tensor scales (1); BF16 out. Timed: the GEMM alone (until session 72 the
        // activation's cast too: datasets/measured/h200-third-run/validate-fp8).
        auto x8 = x.to(torch::kFloat8_e4m3fn), w8 = w.to(torch::kFloat8_e4m3fn);
        auto sx = torch::ones({}, torch::TensorOptions().dtype(torch::kFloat32).device(dev)), sw = sx.clone();
        return [x8, w8, sx, sw] {
          at::_scaled_mm(x8, w8.t(), sx, sw, std::nullopt, std::nullopt, at::kBFloat16, false);
        };
#else
        throw RuntimeError("fp8_static GEMMs need LibTorch >= 2.5 (torch._scaled_mm); this one is " TORCH_VERSION);
#endif
      }
      return [x, w] { torch::nn::functional::linear(x, w); };
    }
    // The LLM layer ops as eager LibTorch composes them (vLLM fuses each into one kernel; the
    // collector records whatever kernels the op launches).
    case OpKind::kRmsNorm: {
      auto x = torch::randn({q.b, q.h}, opts), w = torch::ones({q.h}, opts);
      return [x, w] { (x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6)) * w; };
    }
    case OpKind::kSiluMul: {  // (tokens, 2F) -> (tokens, F)
      auto gu = torch::randn({q.b, 2 * q.h}, opts);
      const int64_t h = q.h;
      return [gu, h] { torch::silu(gu.slice(-1, 0, h)) * gu.slice(-1, h, 2 * h); };
    }
    case OpKind::kRope: {  // (tokens, heads x 64): rotate halves of each 64-wide head
      auto x = torch::randn({q.b, q.h / 64, 64}, opts);
      auto cos = torch::rand({q.b, 1, 64}, opts), sin = torch::rand({q.b, 1, 64}, opts);
      return [x, cos, sin] {
        auto rot = torch::cat({-x.slice(-1, 32, 64), x.slice(-1, 0, 32)}, -1);
        x* cos + rot * sin;
      };
    }
    // Attention as a serving engine's prefill and decode see it: (batch, heads, tokens,
    // head_dim) queries over (batch, kv_heads, keys, head_dim) keys and values; prefill causal.
    // LibTorch >= 2.5 runs scaled_dot_product_attention with enable_gqa (FlashAttention or
    // cuDNN kernels on CUDA, as the kernel names then say); 2.0-2.4 expand the GQA groups
    // first (HF's repeat_kv); LibTorch 1.x composes it (matmul, mask, softmax, matmul).
    case OpKind::kAttnPrefill:
    case OpKind::kAttnDecode: {
      const bool prefill = q.op == OpKind::kAttnPrefill;
      const int64_t tq = prefill ? q.m : 1, tk = prefill ? q.m : q.ctx;
      auto qt = torch::randn({q.b, q.k, tq, q.n}, opts);
#if TILECAST_TORCH_2_5
      // SDPA's enable_gqa: keys and values stay at kv_heads and each is read once, as serving
      // engines' kernels read them (expanded, an H200's decode rows moved the cache at a
      // median 985 GB/s; with enable_gqa at 4,497 GB/s: docs/collector.md).
      auto kt = torch::randn({q.b, q.h, tk, q.n}, opts), vt = torch::randn({q.b, q.h, tk, q.n}, opts);
      return [qt, kt, vt, prefill] {
        at::scaled_dot_product_attention(qt, kt, vt, {}, 0.0, prefill, std::optional<double>{}, /*enable_gqa=*/true);
      };
#else
      const int64_t group = q.k / q.h;
      auto kt = torch::randn({q.b, q.h, tk, q.n}, opts).repeat_interleave(group, 1);
      auto vt = torch::randn({q.b, q.h, tk, q.n}, opts).repeat_interleave(group, 1);
#if TORCH_VERSION_MAJOR >= 2
      return [qt, kt, vt, prefill] { at::scaled_dot_product_attention(qt, kt, vt, {}, 0.0, prefill); };
#else
      const double scale = 1.0 / std::sqrt(double(q.n));
      torch::Tensor mask;  // true above the diagonal: keys after the query
      if (prefill) mask = torch::ones({tq, tk}, torch::TensorOptions().dtype(torch::kBool).device(dev)).triu(1);
      return [qt, kt, vt, mask, scale] {
        auto s = torch::matmul(qt, kt.transpose(-2, -1)) * scale;
        if (mask.defined()) s = s.masked_fill(mask, -std::numeric_limits<double>::infinity());
        torch::matmul(torch::softmax(s, -1), vt);
      };
#endif
#endif
    }
    // Fused MoE as eager PyTorch runs it (HF Mixtral's loop): for each expert, gather its
    // tokens, gate_up GEMM, SiLU-mul, down GEMM, weighted scatter-add. Routing is the data's
    // "balanced": token t picks experts (t k + j) mod E, j < k, with equal weights; the router
    // GEMM and top-k are not part of the timed kernel (as in aiconfigurator's MoE rows).
    case OpKind::kMoe: {
      const int64_t t = q.b, e = q.experts, k = q.topk, f = q.n;
      auto x = torch::randn({t, q.h}, opts);
      auto w1 = torch::randn({e, 2 * f, q.h}, opts) * 0.02, w2 = torch::randn({e, q.h, f}, opts) * 0.02;
      std::vector<torch::Tensor> tokens_of(e);
      {
        std::vector<std::vector<int64_t>> lists(e);
        for (int64_t i = 0; i < t; ++i)
          for (int64_t j = 0; j < k; ++j) lists[(i * k + j) % e].push_back(i);
        for (int64_t i = 0; i < e; ++i)
          if (!lists[i].empty()) tokens_of[i] = torch::tensor(lists[i], torch::TensorOptions().dtype(torch::kLong)).to(dev);
      }
      const double gate = 1.0 / double(k);
      return [x, w1, w2, tokens_of, f, gate] {
        auto out = torch::zeros_like(x);
        for (size_t i = 0; i < tokens_of.size(); ++i) {
          if (!tokens_of[i].defined()) continue;
          auto xe = x.index_select(0, tokens_of[i]);
          auto gu = torch::matmul(xe, w1[i].t());
          auto h = torch::silu(gu.slice(-1, 0, f)) * gu.slice(-1, f, 2 * f);
          out.index_add_(0, tokens_of[i], torch::matmul(h, w2[i].t()) * gate);
        }
      };
    }
    case OpKind::kResidualAdd: {
      auto x = torch::randn({q.b, q.h}, opts), r = torch::randn({q.b, q.h}, opts);
      return [x, r] { x + r; };
    }
    // vLLM's random sampling of (sequences, vocab) logits: temperature, softmax, then the
    // exponential race (probs / Exp(1) draws, argmax) it uses instead of torch.multinomial.
    case OpKind::kSampler: {
      auto logits = torch::randn({q.b, q.h}, opts);
      return [logits] {
        auto probs = torch::softmax(logits / 0.8, -1);
        (probs / torch::empty_like(probs).exponential_()).argmax(-1);
      };
    }
    default: break;
  }
  auto x = torch::rand({q.b, q.h}, opts) + 0.5, y = torch::rand({q.b, q.h}, opts) + 0.5;
  const double s = 0.731;
  switch (q.op) {
    case OpKind::kAdd: return [x, y] { torch::add(x, y); };
    case OpKind::kAddU: return [x, s] { torch::add(x, s); };
    case OpKind::kMul: return [x, y] { torch::mul(x, y); };
    case OpKind::kMulU: return [x, s] { torch::mul(x, s); };
    case OpKind::kDiv: return [x, y] { torch::div(x, y); };
    case OpKind::kDivU: return [x, s] { torch::div(x, s); };
    case OpKind::kPow: return [x, y] { torch::pow(x, y); };
    case OpKind::kPowU: return [x, s] { torch::pow(x, s); };
    case OpKind::kRelu: return [x] { torch::relu(x); };
    case OpKind::kGelu: return [x] { torch::gelu(x); };
    case OpKind::kTanh: return [x] { torch::tanh(x); };
    case OpKind::kSoftmax: return [x] { torch::softmax(x, -1); };
    case OpKind::kLayerNorm: {
      auto g = torch::ones({q.h}, x.options()), b = torch::zeros({q.h}, x.options());
      const int64_t h = q.h;
      return [x, g, b, h] { torch::layer_norm(x, {h}, g, b); };
    }
    default: break;
  }
  throw InternalError("no LibTorch op for " + std::string(op_name(q.op)));
}

// The library attention and MoE kernels came from, read off the kernel names recorded (CUDA)
// or the path taken (CPU); the trainer keeps a GPU's rows of the library its spec implies when
// there are any (kernel_library), else all of them.
std::string kernel_source_of(OpKind op, const std::string& kernels) {
  if (op == OpKind::kMoe) return "torch_eager_loop";
  if (op != OpKind::kAttnPrefill && op != OpKind::kAttnDecode) return "";
  // cuDNN's SDPA kernels say "flash" too (cudnn_generated_..._sdpa_sm90_flash_fprop_...): PyTorch
  // >= 2.5 picks them on Hopper (seen on an H200), a library of its own.
  if (kernels.find("cudnn") != std::string::npos) return "cudnn_attention";
  if (kernels.find("flash") != std::string::npos) return "flash_attention";
  if (kernels.find("fmha") != std::string::npos || kernels.find("efficient_attention") != std::string::npos)
    return "mem_efficient_attention";
  return TORCH_VERSION_MAJOR >= 2 ? "torch_sdpa" : "torch_eager";
}

std::string one_line(std::string s) {
  for (auto& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (s.size() > 300) s = s.substr(0, 300) + "...";
  return s;
}

// The CPU as a pseudo-device, so that CPU-backend data can be trained on and forecast like a
// GPU's (the CI path collect -> train -> predict). Bandwidth is measured (memcpy).
GpuSpec local_cpu_spec() {
  GpuSpec s;
  s.name = s.cuda_name = "cpu";
  s.vendor = "cpu";
  s.arch = "cpu";
  s.num_sms = std::max(1u, std::thread::hardware_concurrency());
  s.cores_per_sm = 16;  // two 8-lane FMA units (AVX2)
  s.boost_clock_mhz = 2000;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("cpu MHz", 0) == 0) {
      s.boost_clock_mhz = std::max(100.0, std::atof(line.substr(line.find(':') + 1).c_str()));
      break;
    }
  s.fp32_peak_gflops = 2.0 * s.num_sms * s.cores_per_sm * s.boost_clock_mhz / 1000.0;
  const size_t n = size_t{64} << 20;
  std::vector<char> a(n, 1), b(n, 2);
  double best_s = 1e9;
  for (int r = 0; r < 3; ++r) {
    const auto t = Clock::now();
    std::memcpy(b.data(), a.data(), n);
    best_s = std::min(best_s, std::chrono::duration<double>(Clock::now() - t).count());
  }
  s.mem_bw_gbps = std::max(1.0, 2.0 * n / best_s / 1e9);
  s.mem_gib = std::max(1.0, static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / kBytesPerGib);
  s.l2_cache_mb = 1;
  std::ifstream l2("/sys/devices/system/cpu/cpu0/cache/index2/size");
  std::string size;
  if (l2 >> size && !size.empty())
    s.l2_cache_mb = std::max(0.1, std::atof(size.c_str()) / (size.back() == 'M' ? 1.0 : 1024.0));
  // Board power, which the MoE features need: the package power limit (RAPL) when the kernel
  // exposes it, else an assumed 10 W per hardware thread (stated in sources).
  std::string tdp_source = "tdp_w: assumed 10 W per hardware thread (no RAPL power limit readable)";
  s.tdp_w = 10.0 * s.num_sms;
  std::ifstream rapl("/sys/class/powercap/intel-rapl:0/constraint_0_power_limit_uw");
  double uw = 0;
  if (rapl >> uw && uw >= 5e6 && uw <= 1e10) {
    s.tdp_w = uw / 1e6;
    tdp_source = "tdp_w: RAPL package power limit (/sys/class/powercap/intel-rapl:0)";
  }
  s.sources = {"tilecast collect --backend cpu: hardware threads, /proc/cpuinfo clock, memcpy bandwidth, sysfs L2",
               tdp_source};
  s.notes = "A CPU described as a pseudo-GPU for the CPU collector backend (tests and CI), not for forecasts.";
  return s;
}

std::vector<Family> families_of(const Sweep& s) {
  std::vector<Family> f;
  for (const auto& fs : s.families)
    if (std::find(f.begin(), f.end(), fs.family) == f.end()) f.push_back(fs.family);
  return f;
}

std::string shard_text(const Shard& s) { return std::to_string(s.index) + "/" + std::to_string(s.count); }

void write_run_config(const CollectOptions& opt, const Sweep& s, const std::string& device) {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "sweep" << YAML::Value << opt.sweep_path;
  out << YAML::Key << "sweep_name" << YAML::Value << s.name;
  out << YAML::Key << "sweep_fingerprint" << YAML::Value << sweep_fingerprint(s);
  out << YAML::Key << "backend" << YAML::Value << opt.backend;
  out << YAML::Key << "device" << YAML::Value << device;
  out << YAML::Key << "shard" << YAML::Value << shard_text(opt.shard);
  out << YAML::Key << "seed" << YAML::Value << s.seed;
  out << YAML::Key << "warmup" << YAML::Value << s.warmup;
  out << YAML::Key << "repeats" << YAML::Value << s.repeats;
  out << YAML::Key << "torch_version" << YAML::Value << TORCH_VERSION;
  out << YAML::Key << "tilecast_version" << YAML::Value << TILECAST_VERSION;
  out << YAML::Key << "math_mode" << YAML::Value
      << "fp32: IEEE FP32, TF32 off; fp16/bf16: tensor cores, FP32 accumulate";
  out << YAML::EndMap;
  write_file_atomic((fs::path(opt.out_dir) / "run_config.yaml").string(), std::string(out.c_str()) + "\n");
}

// --resume continues the same measurement only: the sweep (every field that decides the
// configs and how they are timed), the backend and the shard must match the folder's.
void check_resume_matches(const CollectOptions& opt, const Sweep& s) {
  const std::string path = (fs::path(opt.out_dir) / "run_config.yaml").string();
  if (!fs::exists(path)) return;  // killed before the first write: nothing to compare
  const YAML::Node rc = load_yaml_map(path);
  auto field = [&](const char* k) {
    try {
      return rc[k] ? rc[k].as<std::string>() : std::string();
    } catch (const YAML::Exception&) {
      throw DataError(path + ": field '" + k + "': expected a string");
    }
  };
  if (field("sweep_fingerprint") != sweep_fingerprint(s))
    throw ConfigError("--resume: " + opt.sweep_path + " differs from the sweep this folder was collected with (" +
                      path + ": field 'sweep_fingerprint'); use another --out");
  if (field("backend") != opt.backend)
    throw ConfigError("--resume: --backend " + opt.backend + " differs from the folder's '" + field("backend") +
                      "' (" + path + ")");
  if (field("shard") != shard_text(opt.shard))
    throw ConfigError("--resume: --shard " + shard_text(opt.shard) + " differs from the folder's '" +
                      field("shard") + "' (" + path + ")");
}

}  // namespace

CollectSummary run_collect(const CollectOptions& opt) {
  const auto t0 = Clock::now();
  if (opt.backend != "cuda" && opt.backend != "cpu")
    throw ConfigError("--backend: expected cuda or cpu, got '" + opt.backend + "'");
  const Sweep sweep = load_sweep(opt.sweep_path);
  if (std::find(sweep.dtypes.begin(), sweep.dtypes.end(), "fp8_static") != sweep.dtypes.end()) {
    if (opt.backend != "cuda")
      throw ConfigError(opt.sweep_path + ": field 'dtypes': fp8_static GEMMs need --backend cuda (a GPU with FP8 tensor cores)");
    if (!TILECAST_TORCH_2_5)
      throw ConfigError(opt.sweep_path + ": field 'dtypes': fp8_static GEMMs need LibTorch >= 2.5 (torch._scaled_mm); this one is " +
                        std::string(TORCH_VERSION));
  }
  trainer::configure_torch_threads();

  std::unique_ptr<CuptiProfiler> prof;
  GpuSpec local;
  std::string device_name = "cpu", cuda_version;
  torch::Device dev(torch::kCPU);
  if (opt.backend == "cuda") {
    prof = std::make_unique<CuptiProfiler>(opt.device);  // throws with one clear line
    if (!torch::cuda::is_available())
      throw RuntimeError("--backend cuda: this LibTorch has no CUDA support (build against a CUDA-enabled LibTorch, see README)");
    local = local_gpu_spec(opt.device);
    device_name = local.cuda_name;
    cuda_version = cuda_version_string();
    dev = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(opt.device));
    // Math modes, stated: FP32 GEMMs run as IEEE FP32 (TF32 off, as in NeuSight's data);
    // fp16/bf16 GEMMs use tensor cores with FP32 accumulation (cuBLAS default).
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setAllowTF32CuDNN(false);
  }

  // One collect per output folder: the lock is held until this process ends (kill -9 too).
  std::error_code ec;
  if (fs::exists(opt.out_dir, ec) && !fs::is_directory(opt.out_dir, ec))
    throw ConfigError("--out '" + opt.out_dir + "': exists and is not a folder");
  fs::create_directories(opt.out_dir);
  FileLock lock((fs::path(opt.out_dir) / ".lock").string(), "collect output folder '" + opt.out_dir + "'");
  if (opt.resume) check_resume_matches(opt, sweep);
  DatasetWriter writer(opt.out_dir, families_of(sweep), opt.resume);
  write_run_config(opt, sweep, device_name);
  if (opt.backend == "cpu") local = local_cpu_spec();
  write_file_atomic((fs::path(opt.out_dir) / "gpu.yaml").string(), gpu_spec_to_yaml(local));

  CollectSummary sum;
  const int64_t n = sweep_size(sweep);  // checked: load_sweep refuses sizes beyond kMaxSweepConfigs
  // The shard's configs are index, index + count, ...: never materialised as a list.
  sum.total = n > opt.shard.index ? (n - opt.shard.index + opt.shard.count - 1) / opt.shard.count : 0;
  TC_LOG(Info) << "sweep " << sweep.name << ": " << n << " configs, " << sum.total << " in shard "
               << opt.shard.index << "/" << opt.shard.count << ", " << writer.done_count() << " already written";
  ProgressBar bar(sum.total, "collect", opt.quiet);
  torch::NoGradGuard no_grad;
  const uint64_t stride = static_cast<uint64_t>(sweep.warmup + sweep.repeats + 1);
  std::unordered_set<std::string> drawn;  // config ids this run has met
  std::map<std::string, std::vector<double>> host_us;  // family -> call_ms - busy_ms per config, us
  for (int64_t idx = opt.shard.index; idx < n; idx += opt.shard.count) {
    if (interrupted()) {
      sum.interrupted = true;
      break;
    }
    if (opt.limit > 0 && sum.measured + sum.failed >= opt.limit) break;
    const SweepConfig c = sweep_config(sweep, idx);
    if (writer.done(c.id)) {
      // Written by an earlier run (--resume; counted once), or drawn again by this sweep's sampler.
      ++(drawn.insert(c.id).second ? sum.skipped_existing : sum.drawn_twice);
      bar.tick();
      continue;
    }
    CollectedRow row;
    row.op_name = op_name(c.query.op);
    row.device = device_name;
    row.torch_version = std::string("p") + TORCH_VERSION;
    row.cuda_version = cuda_version;
    row.dtype = c.dtype;
    row.config_id = c.id;
    const KernelQuery& cq = c.query;
    // NeuSight's B,M,N,K columns for every GEMM family (gemm too, B = 1); else the family's dims.
    row.dims = has_mnk(op_family(cq.op)) ? std::vector<int64_t>{cq.b, cq.m, cq.n, cq.k} : query_dims(cq);
    try {
      auto op = make_op(c, dev);
      std::vector<double> times;
      if (prof) {
        for (int r = 0; r < sweep.warmup; ++r) op();
        std::vector<KernelRecord> drop_k;
        std::vector<ExternalCorrelation> drop_e;
        prof->collect(&drop_k, &drop_e);  // discard warm-up records
        for (int r = 0; r < sweep.repeats; ++r) {
          prof->push(static_cast<uint64_t>(idx) * stride + r);
          op();
          prof->pop();
        }
        std::vector<KernelRecord> ks;
        std::vector<ExternalCorrelation> ex;
        prof->collect(&ks, &ex);
        auto grouped = group_by_config(ks, ex, stride);
        auto it = grouped.find(static_cast<uint64_t>(idx));
        if (it == grouped.end() || it->second.repeat_ms.empty())
          throw RuntimeError("no kernel recorded (" + std::to_string(ks.size()) + " kernel records, " +
                             std::to_string(ex.size()) + " external correlations in the timed repeats)");
        const ConfigKernels& ck = it->second;
        times = ck.repeat_ms;
        // The GPU waited for the host between this op's kernels for over a fifth of its span.
        if (median_ms(ck.repeat_span_ms) > 1.25 * median_ms(times)) ++sum.host_bound;
        row.kernel_name = ck.main_kernel;
        for (const auto& k : ck.kernels) row.kernels += ";" + k;
        row.has_launch = true;
        std::copy(ck.grid, ck.grid + 3, row.grid);
        std::copy(ck.block, ck.block + 3, row.block);
        row.regs_per_thread = ck.regs_per_thread;
        row.static_smem_bytes = ck.static_smem_bytes;
        row.dynamic_smem_bytes = ck.dynamic_smem_bytes;
        row.blocks_per_sm = blocks_per_sm(ck.grid, local.num_sms);
        row.warps_per_sm = warps_per_sm(ck.grid, ck.block, local.num_sms);
        row.busy_ms = median_ms(times);
        const std::vector<double> calls = prof->call_ms(op, sweep.repeats);
        row.call_ms = median_ms(calls);
        host_us[family_name(op_family(cq.op))].push_back(1000.0 * (row.call_ms - row.busy_ms));
        // NeuSight's families learned from calls timed alone, host included (its data's
        // Latency); the LLM-era families from loop means, the GPU's time.
        if (family_traits(op_family(cq.op)).data == FamilyData::kNeuSight) times = calls;
      } else {
        for (int r = 0; r < sweep.warmup; ++r) op();
        for (int r = 0; r < sweep.repeats; ++r) {
          const auto a = Clock::now();
          op();
          times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
        }
        row.call_ms = median_ms(times);  // a CPU op's call is its time; no GPU to be busy
      }
      row.kernel_source = kernel_source_of(cq.op, row.kernels);
      row.latency_ms = median_ms(times);
      row.latency_spread_ms = spread_ms(times);
      if (!(row.latency_ms > 0)) row.latency_ms = 1e-6;  // below the clock's resolution
      ++sum.measured;
    } catch (const c10::Error& e) {
      const std::string msg = e.what_without_backtrace();
      row.status = msg.find("out of memory") != std::string::npos ? "oom" : "error";
      row.error_message = one_line(msg);
      ++sum.failed;
    } catch (const Error& e) {
      row.status = "error";
      row.error_message = one_line(e.what());
      ++sum.failed;
    }
    writer.append(op_family(c.query.op), row);
    drawn.insert(c.id);
    bar.tick();
  }
  if (!sum.interrupted) bar.finish();
  if (sum.host_bound > 0) {
    TC_LOG(Info) << sum.host_bound << " of " << sum.measured
                 << " configs left the GPU idle between their kernels for over a fifth of their span (the host "
                    "launching the next kernel later than the GPU finished the last): their busy_ms (the "
                    "LLM-era families' latency) leaves those waits out, their call_ms holds them";
  }
  if (const std::string line = host_time_summary(host_us); !line.empty()) {
    TC_LOG(Info) << line;
  }
  if (prof && prof->dropped_records() > 0) {
    TC_LOG(Warn) << "CUPTI dropped " << prof->dropped_records() << " activity records";
  }
  sum.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return sum;
}

}  // namespace tilecast::collector
