#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "predictor/api.h"
#include "predictor/kernel_predictor.h"
#include "trainer/weights_manifest.h"

namespace tilecast::cli {

int run_gpus(const Args& args, const GlobalOptions&) {
  po::options_description desc("gpus options");
  std::string show, gpu_dir, format, weights;
  desc.add_options()("show", po::value(&show), "print one GPU's full spec as YAML (any --gpu form; `gpus NAME` too)")(
      "gpu-dir", po::value(&gpu_dir), "GPU spec folder (default: configs/gpus)")(
      "weights", po::value(&weights), "weights folder whose training GPUs the 'trained' column names (default: bundled weights/)")(
      "format", po::value(&format)->default_value("table"), "table|csv|json");
  po::variables_map vm;
  if (!parse_options(args, desc, vm, "tilecast gpus [[--show] NAME] [--format table|csv|json]", "show")) return 0;
  check_format(format, {"table", "csv", "json"});
  GpuRegistry reg = load_registry(gpu_dir);
  if (!show.empty()) {
    std::cout << gpu_spec_to_yaml(reg.resolve(show));
    return 0;
  }
  const predictor::KernelPredictor kp(trainer::weights_dir(weights));
  if (format == "json") {
    std::cout << predictor::gpus_json(reg, kp).dump(2) << "\n";
    return 0;
  }
  if (format == "csv")
    std::cout << "name,cuda_name,arch,num_sms,boost_clock_mhz,fp32_peak_gflops,mem_bw_gbps,mem_gib,l2_cache_mb,trained\n";
  else
    std::printf("%-16s %-30s %-9s %5s %8s %10s %8s %7s %6s  %s\n", "name", "cuda_name", "arch", "SMs",
                "clk_mhz", "fp32_gflops", "bw_gbps", "mem_gib", "l2_mb", "trained");
  for (const auto& s : reg.all()) {
    const std::string trained = predictor::training_summary(s, kp);
    if (format == "csv")
      std::printf("%s,\"%s\",%s,%d,%g,%g,%g,%g,%g,%s\n", s.name.c_str(), s.cuda_name.c_str(),
                  s.arch.c_str(), s.num_sms, s.boost_clock_mhz, s.fp32_peak_gflops, s.mem_bw_gbps,
                  s.mem_gib, s.l2_cache_mb, trained.c_str());
    else
      std::printf("%-16s %-30s %-9s %5d %8g %10g %8g %7g %6g  %s\n", s.name.c_str(), s.cuda_name.c_str(),
                  s.arch.c_str(), s.num_sms, s.boost_clock_mhz, s.fp32_peak_gflops, s.mem_bw_gbps,
                  s.mem_gib, s.l2_cache_mb, trained.c_str());
  }
  if (format == "table")
    std::printf("(trained: the kernel families whose bundled models trained on the GPU, '~' on a twin of it (the "
                "same die and memory system); fp32: NeuSight's five FP32 families; the rest forecast it from its "
                "spec alone)\n");
  return 0;
}

}  // namespace tilecast::cli
