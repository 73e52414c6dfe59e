#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/model_config.h"
#include "core/op_graph.h"
#include "predictor/graph_predictor.h"

namespace tilecast::cli {

int run_predict(const Args& args, const GlobalOptions&) {
  po::options_description desc("predict options");
  std::string model, gpu, mode, format, weights, gpu_dir, models_dir;
  int64_t batch = 0, seq = 0;
  int top = 10;
  Parallelism par;
  desc.add_options()("model", po::value(&model)->required(),
                     "Hugging Face config.json path or bundled name (see configs/models/)")(
      "gpu", po::value(&gpu)->required(), "GPU: YAML/JSON path, name, alias or CUDA device name")(
      "batch", po::value(&batch)->required(), "batch size")(
      "seq", po::value(&seq)->required(), "sequence length")(
      "mode", po::value(&mode)->default_value("inference"), "inference|training (NeuSight's inf|train too)")(
      "fusion", "model torch.compile fusion (inference)")(
      "dp", po::value(&par.dp)->default_value(1), "data-parallel GPUs (DDP; --batch is the global batch)")(
      "tp", po::value(&par.tp)->default_value(1), "tensor-parallel GPUs (Megatron-LM column/row split)")(
      "pp", po::value(&par.pp)->default_value(1), "pipeline stages")(
      "microbatches", po::value(&par.microbatches)->default_value(1), "microbatches per step (pipeline)")(
      "format", po::value(&format)->default_value("table"), "table|json|csv")(
      "top", po::value(&top)->default_value(10), "operators listed in the table")(
      "weights", po::value(&weights), "weights folder (default: bundled weights/)")(
      "gpu-dir", po::value(&gpu_dir), "GPU spec folder (default: configs/gpus)")(
      "models-dir", po::value(&models_dir), "bundled model configs (default: configs/models)");
  po::variables_map vm;
  if (!parse_options(args, desc, vm,
                     "tilecast predict --model M --gpu G --batch N --seq S [--mode inference|training] "
                     "[--fusion] [--format table|json|csv]"))
    return 0;
  check_format(format, {"table", "json", "csv"});
  if (top < 0) throw ConfigError("--top: expected >= 0, got " + std::to_string(top));
  if (mode == "inf") mode = "inference";
  if (mode == "train") mode = "training";
  if (mode != "inference" && mode != "training")
    throw ConfigError("--mode: expected inference or training, got '" + mode + "'");
  const std::string mdir = models_dir.empty() ? (std::filesystem::path(trainer::config_dir()) / "models").string() : models_dir;
  ModelConfig mc = load_model_config(model, mdir);
  GpuRegistry reg = load_registry(gpu_dir);
  const GpuSpec& spec = reg.resolve(gpu);
  OpGraph g = build_op_graph(mc, batch, seq, mode == "training" ? Mode::kTraining : Mode::kInference, par);
  if (vm.count("fusion")) g = fuse_op_graph(g);
  predictor::KernelPredictor kp(trainer::weights_dir(weights));
  auto f = predictor::forecast_model(g, spec, kp);
  if (format == "json") std::cout << predictor::forecast_json(f);
  else if (format == "csv") std::cout << predictor::forecast_csv(f);
  else std::cout << predictor::forecast_table(f, top);
  return 0;
}

}  // namespace tilecast::cli
