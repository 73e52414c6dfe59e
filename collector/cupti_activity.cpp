// CUPTI Activity API adapter. Rules (kineto): fixed 4 MB buffers held in an owner list; the
// buffer callbacks never throw, never call CUPTI under our lock and only copy records out;
// errors become counters reported after the flush.
#include "collector/cupti_activity.h"

#include <cuda_runtime.h>
#include <cupti.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>

#include "core/error.h"
#include "core/units.h"

namespace tilecast::collector {
namespace {

constexpr size_t kBufferBytes = 4 << 20;
constexpr CUpti_ActivityKind kActivityKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};

struct Sink {
  std::mutex mu;
  std::vector<KernelRecord> kernels;
  std::vector<ExternalCorrelation> ext;
  std::atomic<int64_t> dropped{0};
};
Sink* g_sink = nullptr;  // set while a CuptiProfiler lives (CUPTI allows one subscriber)

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : "unknown CUPTI error";
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<KernelRecord> kernels;
  std::vector<ExternalCorrelation> ext;
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      KernelRecord r;
      r.name = k->name ? k->name : "";
      r.correlation_id = k->correlationId;
      r.start_ns = static_cast<int64_t>(k->start);
      r.end_ns = static_cast<int64_t>(k->end);
      r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
      r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
      r.regs_per_thread = k->registersPerThread;
      r.static_smem_bytes = k->staticSharedMemory;
      r.dynamic_smem_bytes = k->dynamicSharedMemory;
      r.device_id = k->deviceId;
      r.stream_id = k->streamId;
      kernels.push_back(std::move(r));
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
      ext.push_back({e->correlationId, e->externalId});
    }
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::free(buffer);
  if (Sink* s = g_sink) {
    s->dropped += static_cast<int64_t>(dropped);
    std::lock_guard<std::mutex> lock(s->mu);
    s->kernels.insert(s->kernels.end(), kernels.begin(), kernels.end());
    s->ext.insert(s->ext.end(), ext.begin(), ext.end());
  }
}

}  // namespace

struct CuptiProfiler::Impl {
  Sink sink;
};

bool cupti_available(std::string* why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = std::string("no CUDA device (") + (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")";
    return false;
  }
  return true;
}

CuptiProfiler::CuptiProfiler(int device) : impl_(std::make_unique<Impl>()) {
  std::string why;
  if (!cupti_available(&why)) throw RuntimeError("--backend cuda: " + why);
  if (cudaSetDevice(device) != cudaSuccess) throw RuntimeError("--device " + std::to_string(device) + ": no such CUDA device");
  if (g_sink) throw RuntimeError("CUPTI: only one profiler per process");
  g_sink = &impl_->sink;
  // CUPTI writes an external-correlation record only in front of an API record (runtime or
  // driver call) made inside the pushed region, so both API kinds are on; their own records
  // are skipped. Without them every kernel arrives unmatched (seen on an H200, CUDA 13.0).
  for (auto kind : kActivityKinds) {
    CUptiResult r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) {
      g_sink = nullptr;
      throw RuntimeError("CUPTI unavailable: cuptiActivityEnable failed: " + cupti_error(r));
    }
  }
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    g_sink = nullptr;
    throw RuntimeError("CUPTI unavailable: " + cupti_error(r));
  }
}

CuptiProfiler::~CuptiProfiler() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (auto kind : kActivityKinds) cuptiActivityDisable(kind);
  g_sink = nullptr;
}

void CuptiProfiler::push(uint64_t id) {
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void CuptiProfiler::pop() {
  uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

void CuptiProfiler::collect(std::vector<KernelRecord>* kernels, std::vector<ExternalCorrelation>* ext) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) throw RuntimeError(std::string("cudaDeviceSynchronize: ") + cudaGetErrorString(e));
  // Forced: after the synchronise every record is complete, and partly filled buffers are
  // delivered too (a plain flush may hold back the last config's records).
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(impl_->sink.mu);
  kernels->swap(impl_->sink.kernels);
  ext->swap(impl_->sink.ext);
  impl_->sink.kernels.clear();
  impl_->sink.ext.clear();
}

int64_t CuptiProfiler::dropped_records() const { return impl_->sink.dropped.load(); }

std::vector<double> CuptiProfiler::call_ms(const std::function<void()>& op, int calls) {
  auto check = [](cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw RuntimeError(std::string(what) + ": " + cudaGetErrorString(e));
  };
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  // Timed as a run without a profiler: CUPTI's records of each API call would add to the host's time.
  for (auto kind : kActivityKinds) cuptiActivityDisable(kind);
  struct Events {
    cudaEvent_t a = nullptr, b = nullptr;
    ~Events() {
      if (a) cudaEventDestroy(a);
      if (b) cudaEventDestroy(b);
    }
  } ev;
  std::vector<double> out;
  try {
    check(cudaEventCreate(&ev.a), "cudaEventCreate");
    check(cudaEventCreate(&ev.b), "cudaEventCreate");
    for (int i = 0; i < calls; ++i) {
      // NeuSight's loop: record, one call, record, synchronise (the legacy default stream, LibTorch's).
      check(cudaEventRecord(ev.a, 0), "cudaEventRecord");
      op();
      check(cudaEventRecord(ev.b, 0), "cudaEventRecord");
      check(cudaEventSynchronize(ev.b), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, ev.a, ev.b), "cudaEventElapsedTime");
      out.push_back(ms);
    }
  } catch (...) {
    for (auto kind : kActivityKinds) cuptiActivityEnable(kind);
    throw;
  }
  for (auto kind : kActivityKinds) {
    CUptiResult r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) throw RuntimeError("CUPTI: cuptiActivityEnable failed: " + cupti_error(r));
  }
  return out;
}

GpuSpec local_gpu_spec(int device) {
  cudaDeviceProp p{};
  cudaError_t e = cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess) throw RuntimeError(std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(e));
  auto attr = [&](cudaDeviceAttr a) {
    int v = 0;
    cudaDeviceGetAttribute(&v, a, device);
    return v;
  };
  GpuSpec s;
  s.cuda_name = p.name;
  s.name = p.name;
  for (auto& c : s.name)
    if (c == ' ' || c == '/') c = '-';
  s.vendor = "nvidia";
  s.arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
  s.num_sms = p.multiProcessorCount;
  // FP32 lanes per SM by compute capability (CUDA programming guide, arithmetic throughput).
  const int cc = p.major * 10 + p.minor;
  s.cores_per_sm = (cc == 60 || (cc >= 70 && cc <= 80)) ? 64 : 128;
  s.boost_clock_mhz = attr(cudaDevAttrClockRate) / 1000.0;
  s.fp32_peak_gflops = 2.0 * s.num_sms * s.cores_per_sm * s.boost_clock_mhz / 1000.0;
  // DDR: two transfers per memory clock.
  s.mem_bw_gbps = 2.0 * attr(cudaDevAttrMemoryClockRate) * 1e3 * (attr(cudaDevAttrGlobalMemoryBusWidth) / 8.0) / 1e9;
  // totalGlobalMem is the sheet's GiB less the driver's reserve (81,559 MiB on an "80 GB" H100).
  s.mem_gib = std::round(static_cast<double>(p.totalGlobalMem) / kBytesPerGib);
  s.l2_cache_mb = attr(cudaDevAttrL2CacheSize) / 1048576.0;
  s.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  s.max_blocks_per_sm = attr(cudaDevAttrMaxBlocksPerMultiprocessor);
  s.sources = {"CUDA runtime (cudaGetDeviceProperties / cudaDeviceGetAttribute) via tilecast collect"};
  s.notes = "Read from the device; check the peaks against the vendor datasheet before committing.";
  return s;
}

std::string cuda_version_string() {
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  return "cu" + std::to_string(rt / 1000) + std::to_string((rt % 1000) / 10);
}

}  // namespace tilecast::collector
