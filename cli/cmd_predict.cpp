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
  std::string model, gpu, mode, format, weights, gpu_dir, models_dir, dtype_s, kv_dtype_s, optimizer;
  int64_t batch = 0, seq = -1, context = -1, gen = 0;
  int top = 10;
  Parallelism par;
  desc.add_options()("model", po::value(&model)->required(),
                     "Hugging Face config.json path or bundled name (see configs/models/)")(
      "gpu", po::value(&gpu)->required(), "GPU: YAML/JSON path, name, alias or CUDA device name")(
      "batch", po::value(&batch)->required(), "batch size (serving: sequences)")(
      "seq", po::value(&seq), "sequence length; prefill/generate: prompt tokens per sequence")(
      "mode", po::value(&mode)->default_value("inference"),
      "inference|training (eager FP32 PyTorch; NeuSight's inf|train too), or LLM serving: prefill (time to first "
      "token), decode (one step), generate (prefill + decode steps)")(
      "context", po::value(&context), "decode: tokens already in each sequence's KV cache")(
      "gen", po::value(&gen), "generate: output tokens per sequence (>= 2)")(
      "dtype", po::value(&dtype_s),
      "fp32|fp16|bf16|fp8|fp8_block: serving GEMM dtype (default: the config's torch_dtype, else bf16); "
      "inference/training are fp32")(
      "kv-dtype", po::value(&kv_dtype_s), "serving: KV cache dtype (default: bf16 for fp8, else --dtype)")(
      "fusion", "model torch.compile fusion (inference)")(
      "optimizer", po::value(&optimizer)->default_value("adamw"),
      "training: adamw (its step time apart, its two FP32 moments in memory) or none (forward and backward "
      "only, as NeuSight's training labels were measured)")(
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
                     "[--fusion] [--format table|json|csv]\n"
                     "       tilecast predict --model M --gpu G --mode prefill --batch B --seq S [--dtype D] [--tp N]\n"
                     "       tilecast predict --model M --gpu G --mode decode --batch B --context L [--dtype D] [--tp N]\n"
                     "       tilecast predict --model M --gpu G --mode generate --batch B --seq S --gen T [--dtype D] [--tp N]"))
    return 0;
  check_format(format, {"table", "json", "csv"});
  if (top < 0) throw ConfigError("--top: expected >= 0, got " + std::to_string(top));
  if (optimizer != "adamw" && optimizer != "none")
    throw ConfigError("--optimizer: expected adamw or none, got '" + optimizer + "'");
  if (mode == "inf") mode = "inference";
  if (mode == "train") mode = "training";
  const bool serving = mode == "prefill" || mode == "decode" || mode == "generate";
  if (mode != "inference" && mode != "training" && !serving)
    throw ConfigError("--mode: expected inference, training, prefill, decode or generate, got '" + mode + "'");
  auto need = [&](const char* flag, bool ok) {
    if (!ok) throw ConfigError(std::string("--mode ") + mode + " needs " + flag);
  };
  auto refuse = [&](const char* flag, bool given) {
    if (given) throw ConfigError(std::string(flag) + " does not apply to --mode " + mode);
  };
  refuse("--context", mode != "decode" && vm.count("context"));
  refuse("--gen", mode != "generate" && vm.count("gen"));
  refuse("--seq", mode == "decode" && vm.count("seq"));
  if (mode == "decode") need("--context L", vm.count("context") > 0);
  else need("--seq S", vm.count("seq") > 0);
  if (mode == "generate") need("--gen T", vm.count("gen") > 0);
  const std::string mdir = models_dir.empty() ? (std::filesystem::path(trainer::config_dir()) / "models").string() : models_dir;
  ModelConfig mc = load_model_config(model, mdir);
  DType dtype = DType::kFp32, kv_dtype = DType::kFp32;
  if (serving) {
    refuse("--fusion", vm.count("fusion") > 0);
    if (par.dp != 1 || par.pp != 1 || par.microbatches != 1)
      throw ConfigError("--mode " + mode + ": serving forecasts take --tp only (one tensor-parallel replica)");
    if (dtype_s.empty()) {
      DType d;
      dtype = !mc.torch_dtype.empty() && try_dtype_from_string(mc.torch_dtype, &d) ? d : DType::kBf16;
    } else {
      dtype = parse_dtype_flag("--dtype", dtype_s);
    }
    const bool fp8 = dtype == DType::kFp8 || dtype == DType::kFp8Block;
    kv_dtype = kv_dtype_s.empty() ? (fp8 ? DType::kBf16 : dtype) : parse_dtype_flag("--kv-dtype", kv_dtype_s);
  } else {
    refuse("--kv-dtype", !kv_dtype_s.empty());
    if (!dtype_s.empty() && parse_dtype_flag("--dtype", dtype_s) != DType::kFp32)
      throw ConfigError("--dtype " + dtype_s + ": --mode " + mode +
                        " models eager FP32 PyTorch (NeuSight's data); BF16/FP16/FP8 forecasts are the serving "
                        "modes (--mode prefill|decode|generate)");
  }
  GpuRegistry reg = load_registry(gpu_dir);
  const GpuSpec& spec = reg.resolve(gpu);
  predictor::KernelPredictor kp(trainer::weights_dir(weights));
  if (mode == "generate") {
    auto f = predictor::forecast_generate(mc, spec, kp, batch, seq, gen, dtype, kv_dtype, par.tp);
    if (format == "json") std::cout << predictor::generate_json(f);
    else if (format == "csv") std::cout << predictor::forecast_csv(f.prefill);
    else std::cout << predictor::generate_table(f, top);
    return 0;
  }
  OpGraph g;
  MemoryEstimate memory;
  if (serving) {
    const Mode phase = mode == "prefill" ? Mode::kPrefill : Mode::kDecode;
    const int64_t tokens = phase == Mode::kPrefill ? seq : context;
    g = build_serving_graph(mc, phase, batch, tokens, dtype, kv_dtype, par.tp);
    memory = predictor::serving_memory(mc, dtype, kv_dtype, par.tp, batch, tokens + (phase == Mode::kDecode ? 1 : 0), spec);
  } else {
    const bool training = mode == "training";
    g = build_op_graph(mc, batch, seq, training ? Mode::kTraining : Mode::kInference, par);
    if (vm.count("fusion")) g = fuse_op_graph(g);
    memory = training ? training_memory(mc, batch, seq, par, spec, optimizer == "adamw")
                      : inference_memory(mc, batch, seq, par, spec);
  }
  refuse("--optimizer", mode != "training" && !vm["optimizer"].defaulted());
  auto f = predictor::forecast_model(g, spec, kp);
  if (optimizer == "none") f.optimizer_ms = 0;
  const MemoryEstimate* mem = &memory;
  if (format == "json") std::cout << predictor::forecast_json(f, mem);
  else if (format == "csv") std::cout << predictor::forecast_csv(f);
  else std::cout << predictor::forecast_table(f, top, mem);
  return 0;
}

}  // namespace tilecast::cli
