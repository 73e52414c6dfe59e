#pragma once
// The one seam to CUPTI's Activity API and the CUDA runtime (the only files that include
// <cupti.h> / <cuda_runtime.h> are cupti_activity.cpp and, without CUPTI, cupti_stub.cpp).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collector/kernel_record.h"
#include "core/gpu_spec.h"

namespace tilecast::collector {

// True if this build has CUPTI, a CUDA device is present and kernel activity can be
// enabled; otherwise false with the reason in `why` (one line).
bool cupti_available(std::string* why);

class CuptiProfiler {
 public:
  // Enables CONCURRENT_KERNEL and EXTERNAL_CORRELATION activity on `device`; throws
  // RuntimeError (CUPTI unavailable) or NotBuiltError (built without CUPTI).
  explicit CuptiProfiler(int device);
  ~CuptiProfiler();
  CuptiProfiler(const CuptiProfiler&) = delete;
  CuptiProfiler& operator=(const CuptiProfiler&) = delete;
  // Tags the launches between push and pop with `external_id` (CUSTOM0).
  void push(uint64_t external_id);
  void pop();
  // cudaDeviceSynchronize + cuptiActivityFlushAll, then moves the records out.
  void collect(std::vector<KernelRecord>* kernels, std::vector<ExternalCorrelation>* ext);
  int64_t dropped_records() const;
  // `calls` calls of `op`, each timed alone as NeuSight's data are (a CUDA event before and
  // after it on the default stream, then a synchronise): the host's launch path and the GPU's
  // work, with this profiler's activity off meanwhile. Milliseconds per call.
  std::vector<double> call_ms(const std::function<void()>& op, int calls);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The local GPU's spec from the CUDA runtime (SMs, clocks, memory, L2; bandwidth from the
// memory clock and bus width), in configs/gpus/ format.
GpuSpec local_gpu_spec(int device);
// "cu<runtime version>" and the driver version, for the CSV's CUDA Version column.
std::string cuda_version_string();

}  // namespace tilecast::collector
