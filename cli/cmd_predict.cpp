#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "predictor/api.h"

namespace tilecast::cli {

int run_predict(const Args& args, const GlobalOptions&) {
  po::options_description desc("predict options");
  predictor::PredictArgs a;
  std::string format;
  ForecastPaths paths;
  int64_t seq = 0, context = 0, gen = 0;
  SpecOptions spec;
  SchedulerOptions sched;
  TrainingOptions train;
  int top = 10;
  CallOverheadOption call_overhead;
  desc.add_options()("model", po::value(&a.model)->required(),
                     "Hugging Face config.json path or bundled name (see configs/models/)")(
      "gpu", po::value(&a.gpu)->required(), "GPU: YAML/JSON path, name, alias or CUDA device name")(
      "batch", po::value(&a.batch)->required(), "batch size (serving: sequences)")(
      "seq", po::value(&seq), "sequence length; prefill/generate: prompt tokens per sequence")(
      "mode", po::value(&a.mode)->default_value("inference"),
      "inference|training (eager FP32 PyTorch; NeuSight's inf|train too), or LLM serving: prefill (time to first "
      "token), decode (one step), generate (prefill + decode steps)")(
      "context", po::value(&context), "decode: tokens already in each sequence's KV cache")(
      "gen", po::value(&gen), "generate: output tokens per sequence (>= 2)")(
      "dtype", po::value(&a.dtype),
      "fp32|fp16|bf16|fp8|fp8_static|fp8_block|nvfp4: serving GEMM dtype (default: the config's torch_dtype, else "
      "bf16; nvfp4: Blackwell's FP4 GEMMs, BF16 elsewhere); "
      "inference is fp32; training is fp32 (eager) unless bf16|fp16|fp8 (mixed precision, Megatron-LM style, the "
      "decoder LLMs; fp8: Transformer Engine's FP8 GEMMs, BF16 otherwise)")(
      "fusion", "model torch.compile fusion (inference)")(
      "hf-eager",
      "prefill and mixed-precision training (bf16|fp16, one GPU or --dp): the model as Hugging Face transformers "
      "runs it without compilation (attn_implementation sdpa): RMSNorm, RoPE and SiLU-mul as their separate PyTorch "
      "kernels, separate q/k/v and gate/up projections; llama, mistral, qwen2, qwen3, phi3")(
      "optimizer", po::value(&a.optimizer)->default_value("adamw"),
      "training: adamw (its step time apart, its two FP32 moments in memory) or none (forward and backward "
      "only, as NeuSight's training labels were measured)")(
      "dp", po::value(&a.par.dp)->default_value(1), "data-parallel GPUs (DDP; --batch is the global batch)")(
      "tp", po::value(&a.par.tp)->default_value(1), "tensor-parallel GPUs (Megatron-LM column/row split)")(
      "ep", po::value(&a.par.ep)->default_value(1),
      "MoE: expert-parallel ranks; serving: of the tp group (experts split over ep, each expert's FFN over tp / ep); "
      "mixed-precision training: of the dp group, or of dp x cp (experts split over ep, tokens sent to them by "
      "all-to-alls)")(
      "cp", po::value(&a.par.cp)->default_value(1),
      "mixed-precision training: context-parallel ranks (each sequence split over them, attention a ring of K and V; "
      "--seq divisible by 2 x cp)")(
      "routing", po::value(&a.routing),
      "serving MoE: token routing, uniform (default: each token's picks at random), balanced (every pick a "
      "different expert until all are hit, as the kernel benchmark spreads them) or power_law_<a> (the most loaded "
      "rank is forecast)")(
      "pp", po::value(&a.par.pp)->default_value(1),
      "pipeline stages (serving: layers split as vLLM does, min(pp, batch) microbatches in flight)")(
      "microbatches", po::value(&a.par.microbatches)->default_value(1),
      "microbatches per step (eager pipeline; serving derives them from --pp)")(
      "vpp", po::value(&a.par.vpp)->default_value(1),
      "mixed-precision training with --pp: model chunks per pipeline rank (Megatron-LM's interleaved 1F1B; "
      "layers divisible by pp x vpp, microbatches by pp)")(
      "format", po::value(&format)->default_value("table"), "table|json|csv")(
      "top", po::value(&top)->default_value(10), "operators listed in the table");
  add_forecast_path_options(desc, paths);
  sched.add_to(desc);
  train.add_to(desc);
  spec.add_to(desc);
  call_overhead.add_to(desc);
  add_host_gap_option(desc, &a.host_gap_us);
  add_expert_dtype_option(desc, &a.expert_dtype);
  add_serving_kv_dtype_option(desc, &a.kv_dtype);
  add_dp_attention_option(desc, "prefill, decode and generate with --tp 2 or more");
  std::string moe_a2a;
  add_moe_a2a_option(desc, &moe_a2a, "prefill, decode and generate");
  add_disaggregation_options(desc, "the decode instance (--tp, --ep, --dp-attention), which decodes them (generate)");
  po::variables_map vm;
  if (!parse_options(args, desc, vm,
                     "tilecast predict --model M --gpu G --batch N --seq S [--mode inference|training] "
                     "[--fusion] [--format table|json|csv]\n"
                     "       tilecast predict --model M --gpu G --mode training --dtype bf16|fp16|fp8 --batch N --seq S "
                     "[--dp D] [--zero 1] [--tp N [--sequence-parallel]] [--pp P --microbatches K [--vpp V]] [--ep N] [--cp N] [--recompute full] [--hf-eager]\n"
                     "       tilecast predict --model M --gpu G --mode prefill --batch B --seq S [--dtype D] [--tp N] [--pp P] [--hf-eager]\n"
                     "       tilecast predict --model M --gpu G --mode decode --batch B --context L [--dtype D] [--tp N] [--pp P] "
                     "[--ep N] [--routing R] [--dp-attention [--moe-a2a deepep]]\n"
                     "       tilecast predict --model M --gpu G --mode generate --batch B --seq S --gen T [--dtype D] [--tp N] [--pp P]\n"
                     "         [--max-batched-tokens N] [--max-seqs N|auto] [--schedule mixed|prefill-first] [--cached-prefix P]\n"
                     "         [--spec-draft M --spec-accept A [--spec-tokens K]] [--request-rate R [--arrivals poisson|uniform]]\n"
                     "         [--prefill-tp P [--prefill-ep E] [--prefill-instances N] [--decode-instances M]]"))
    return 0;
  check_format(format, {"table", "json", "csv"});
  if (top < 0) throw ConfigError("--top: expected >= 0, got " + std::to_string(top));
  if (vm.count("seq")) a.seq = seq;
  if (vm.count("context")) a.context = context;
  if (vm.count("gen")) a.gen = gen;
  a.sched = sched.args;
  a.training = train.args;
  a.cached_prefix = sched.cached_prefix;
  a.spec = spec.request();
  a.fusion = vm.count("fusion") > 0;
  a.hf_eager = vm.count("hf-eager") > 0;
  a.par.dp_attention = vm.count("dp-attention") > 0;
  a.par.moe_all_to_all = predictor::parse_moe_a2a(moe_a2a);
  a.disagg = disaggregation_flags(vm);
  GpuRegistry reg = load_registry(paths.gpu_dir);
  predictor::KernelPredictor kp(trainer::weights_dir(paths.weights));
  call_overhead.apply(kp);
  const auto r = predictor::run_predict(a, reg, kp, paths.models());
  if (format == "json") std::cout << predictor::predict_result_json(r);
  else if (r.generate && format == "csv") std::cout << predictor::forecast_csv(r.generate->prefill);
  else if (r.generate) std::cout << predictor::generate_table(*r.generate, top);
  else if (format == "csv") std::cout << predictor::forecast_csv(r.forecast);
  else std::cout << predictor::forecast_table(r.forecast, top, &r.memory);
  return 0;
}

}  // namespace tilecast::cli
