// tilecast_bench_train: training throughput per NeuSight family (2 epochs on 20,000 rows
// each, LibTorch). Not a test: run it by hand and record the output in docs/performance.md.
//   tilecast_bench_train [--weights DIR] [--neusight-dir DIR]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/kernel_dataset.h"
#include "core/tile_table.h"
#include "predictor/dense_mlp.h"
#include "trainer/mlp.h"
#include "trainer/train.h"

using namespace tilecast;

int main(int argc, char** argv) {
  // LibTorch loads OpenBLAS before main: pick its kernels the way `tilecast train` does (the
  // hand-over to tilecast-torch sets OPENBLAS_CORETYPE), by starting again with it set.
  if (!std::getenv("OPENBLAS_CORETYPE")) {
    predictor::prefer_fast_blas_kernels();
    if (std::getenv("OPENBLAS_CORETYPE")) execv("/proc/self/exe", argv);
  }
  std::string weights, data;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--weights") && i + 1 < argc) weights = argv[++i];
    else if (!std::strcmp(argv[i], "--neusight-dir") && i + 1 < argc) data = argv[++i];
    else { std::fprintf(stderr, "usage: tilecast_bench_train [--weights DIR] [--neusight-dir DIR]\n"); return 1; }
  }
  try {
    GpuRegistry reg(trainer::config_dir() + "/gpus");
    const std::string root = neusight_dir(data);
    if (!neusight_dir_present(root)) {
      std::fprintf(stderr, "tilecast_bench_train: NeuSight data not found at %s\n", root.c_str());
      return 1;
    }
    std::fprintf(stderr, "OPENBLAS_CORETYPE=%s\n", std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "");
    trainer::configure_torch_threads();
    std::printf("metric,threads,value,unit\n");
    TileTable tiles = TileTable::load(trainer::weights_dir(weights) + "/tiles.csv");
    for (Family f : kNeuSightFamilies) {
      trainer::PredictorConfig cfg =
          trainer::load_predictor_config(trainer::config_dir() + "/predictors/" + family_name(f) + ".yaml");
      cfg.epochs = 2;
      cfg.max_rows = 20000;
      std::vector<KernelSample> rows;
      for (const auto& file : training_files(root, f)) {
        auto r = read_kernel_csv(file);
        rows.insert(rows.end(), r.begin(), r.end());
      }
      auto res = trainer::train_family(cfg, rows, tiles, reg, "/tmp/tilecast_bench_" + std::string(family_name(f)) + ".pt", true);
      std::printf("train_samples_per_s_%s,%d,%.0f,1/s\n", family_name(f), torch::get_num_threads(), res.samples_per_s);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilecast_bench_train: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
