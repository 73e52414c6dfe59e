#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "trainer/train.h"
#include "core/kernel_dataset.h"
#include "trainer/weights_manifest.h"

namespace tilecast::cli {

int run_export_weights(const Args& args, const GlobalOptions& g) {
  po::options_description desc("export-weights options");
  std::string weights, ns, gpu_dir;
  desc.add_options()("weights", po::value(&weights),
                     "weights folder to complete (default: $TILECAST_WEIGHTS_DIR or the bundled weights/)")(
      "feature-ranges", "also record the training range of each feature for NeuSight-family entries without one "
                        "(report-only: forecasts outside it say so)")(
      "neusight-dir", po::value(&ns), "NeuSight data root for --feature-ranges (default: $TILECAST_NEUSIGHT_DIR or "
                                      "../shared/neusight)")(
      "gpu-dir", po::value(&gpu_dir), "GPU spec folder (default: configs/gpus)");
  po::variables_map vm;
  if (!parse_options(args, desc, vm, "tilecast export-weights [--weights DIR]\n"
                     "Writes the torch-free network file (.tcmlp) of every checkpoint of a weights folder\n"
                     "and lists them in its manifest.yaml; forecasting reads only those files."))
    return 0;
  const std::string dir = trainer::weights_dir(weights);
  const int n = trainer::export_networks(dir);
  if (!g.quiet) std::cout << "wrote " << n << " network file(s) in " << dir << "\n";
  if (vm.count("feature-ranges")) {
    const int f = trainer::record_feature_ranges(dir, neusight_dir(ns), load_registry(gpu_dir));
    if (!g.quiet) std::cout << "recorded the feature ranges of " << f << " family(ies)\n";
  }
  return 0;
}

}  // namespace tilecast::cli
