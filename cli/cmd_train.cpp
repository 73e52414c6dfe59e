#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/kernel_dataset.h"
#include "trainer/train.h"

namespace tilecast::cli {

int run_train(const Args& args, const GlobalOptions& g) {
  po::options_description desc("train options");
  std::string data, out, cfg_dir, gpu_dir;
  std::vector<std::string> families, collected, added, exclude;
  std::string llm_dir, vendor;
  int epochs = 0;
  int64_t seed = -1;
  int64_t max_rows = -1;
  int holdout = 0;
  std::string family_help = "families to train (";
  for (Family f : kAllFamilies) family_help += std::string(f == kAllFamilies.front() ? "" : " ") + family_name(f);
  family_help += "; default all with data)";
  desc.add_options()("neusight-dir", po::value(&data),
                     "NeuSight data root (default: $TILECAST_NEUSIGHT_DIR or ../shared/neusight)")(
      "data", po::value(&collected)->multitoken(),
      "train on folders written by `tilecast collect` instead (their gpu.yaml joins the GPU list)")(
      "add-data", po::value(&added)->multitoken(),
      "train on the default data plus folders written by `tilecast collect` (a lab's own GPU beside the training "
      "GPUs; their gpu.yaml joins the GPU list)")(
      "out", po::value(&out)->required(),
      "weights folder to write; replaced only when the whole run succeeds (weights/ needs --force)")(
      "family", po::value(&families)->multitoken(),
      family_help.c_str())(
      "llm-dir", po::value(&llm_dir),
      "LLM-era kernel data root (gemm, attention, moe, memory_op; default: $TILECAST_LLM_KERNELS_DIR or "
      "../shared/llm-kernels)")(
      "vendor", po::value(&vendor)->default_value("nvidia"),
      "nvidia (the five old GPUs) or amd (the AMD predictor set: MI100, MI210; bundled in weights/amd)")(
      "exclude-gpu", po::value(&exclude)->multitoken(),
      "leave these devices' rows out (CUDA device names; leave-one-GPU-out studies)")(
      "epochs", po::value(&epochs), "override the configs' epoch count")(
      "seed", po::value(&seed), "override the configs' seed")(
      "max-rows", po::value(&max_rows), "train on a seeded subsample of this many rows")(
      "holdout-shapes", po::value(&holdout),
      "leave out PCT % of the shapes (a stable hash of op, shape and dtype; eval-kernels --holdout-shapes PCT "
      "scores exactly those rows); recorded in the manifest")(
      "config-dir", po::value(&cfg_dir), "predictor configs (default: configs/predictors)")(
      "gpu-dir", po::value(&gpu_dir), "GPU spec folder (default: configs/gpus)")(
      "force", "allow --out onto the bundled weights/ or onto a non-empty folder that is not a weights folder");
  po::variables_map vm;
  if (!parse_options(args, desc, vm, "tilecast train --out DIR [--family F ...] [--epochs N] [--data DIR ... | --add-data DIR ...]"))
    return 0;
  if (vm.count("epochs") && (epochs < 1 || epochs > 1000000))
    throw ConfigError("--epochs: expected 1..1000000, got " + std::to_string(epochs));
  if (vm.count("seed") && seed < 0) throw ConfigError("--seed: expected >= 0, got " + std::to_string(seed));
  if (vm.count("max-rows") && max_rows < 4)
    throw ConfigError("--max-rows: expected >= 4, got " + std::to_string(max_rows));
  if (vm.count("holdout-shapes")) check_holdout_percent(holdout);
  trainer::TrainOptions opt;
  opt.holdout_shapes_pct = holdout;
  opt.force = vm.count("force") > 0;
  opt.neusight_dir = neusight_dir(data);
  opt.llm_dir = llm_kernels_dir(llm_dir);
  opt.vendor = vendor;
  opt.exclude_gpus = exclude;
  opt.out_dir = out;
  opt.predictor_config_dir =
      cfg_dir.empty() ? (std::filesystem::path(trainer::config_dir()) / "predictors").string() : cfg_dir;
  for (const auto& f : families) opt.families.push_back(family_from_string(f));
  opt.epochs = epochs;
  opt.seed = seed;
  opt.max_rows = max_rows;
  opt.quiet = g.quiet;
  opt.data_dirs = collected;
  opt.added_dirs = added;
  GpuRegistry reg = load_registry(gpu_dir);
  std::vector<std::string> folders = collected;
  folders.insert(folders.end(), added.begin(), added.end());
  for (const auto& d : folders) {
    const auto spec = std::filesystem::path(d) / "gpu.yaml";
    if (std::filesystem::exists(spec) && !reg.find(load_gpu_yaml(spec.string()).cuda_name))
      reg.add(load_gpu_yaml(spec.string()));
  }
  install_interrupt_handler();
  auto results = trainer::run_training(opt, reg);
  std::cout << "family,rows_train,rows_val,val_mape_pct,best_epoch,epochs_run,seconds,samples_per_s\n";
  for (const auto& r : results)
    std::cout << family_name(r.family) << ',' << r.rows_train << ',' << r.rows_val << ','
              << r.val_mape_pct << ',' << r.best_epoch << ',' << r.epochs_run << ',' << r.seconds
              << ',' << r.samples_per_s << "\n";
  for (const auto& r : results)
    if (r.interrupted) return 130;
  return 0;
}

}  // namespace tilecast::cli
