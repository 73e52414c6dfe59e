// Built when CUPTI is not found: the CUDA backend reports itself unavailable.
#include "collector/cupti_activity.h"
#include "core/error.h"

namespace tilecast::collector {

struct CuptiProfiler::Impl {};

bool cupti_available(std::string* why) {
  if (why) *why = "tilecast was built without CUPTI (CUDA toolkit not found at configure time)";
  return false;
}
CuptiProfiler::CuptiProfiler(int) {
  throw NotBuiltError("--backend cuda: tilecast was built without CUPTI (reconfigure with the CUDA toolkit present)");
}
CuptiProfiler::~CuptiProfiler() = default;
void CuptiProfiler::push(uint64_t) {}
void CuptiProfiler::pop() {}
void CuptiProfiler::collect(std::vector<KernelRecord>*, std::vector<ExternalCorrelation>*) {}
int64_t CuptiProfiler::dropped_records() const { return 0; }
std::vector<double> CuptiProfiler::call_ms(const std::function<void()>&, int) {
  throw NotBuiltError("tilecast was built without the CUDA runtime");
}
GpuSpec local_gpu_spec(int) { throw NotBuiltError("tilecast was built without the CUDA runtime"); }
std::string cuda_version_string() { return ""; }

}  // namespace tilecast::collector
