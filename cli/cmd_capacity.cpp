#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "predictor/api.h"
#include "trainer/weights_manifest.h"

namespace tilecast::cli {

int run_capacity(const Args& args, const GlobalOptions&) {
  po::options_description desc("capacity options");
  std::string model, gpu, dtype, kv_dtype, format, routing;
  ForecastPaths paths;
  int64_t requests = 200, seq = 0, gen = 0;
  double attainment = 90, target_rate = 0, usd_per_gpu_hour = 0;
  Parallelism par;
  SchedulerOptions sched;
  desc.add_options()("model", po::value(&model)->required(), "bundled name or config.json path")(
      "gpu", po::value(&gpu)->required(), "GPU: YAML/JSON path, name, alias or CUDA device name")(
      "seq", po::value(&seq)->required(), "prompt tokens per request")(
      "gen", po::value(&gen)->required(), "output tokens per request (>= 2)")(
      "requests", po::value(&requests)->default_value(200),
      "requests each trial sends (as a serving benchmark's --num-prompts; more: a longer run, closer to steady state)")(
      "attainment", po::value(&attainment)->default_value(90), "% of the requests that must meet the objectives")(
      "target-rate", po::value(&target_rate),
      "requests a second to serve: the replicas (and GPUs) that takes at the capacity found")(
      "usd-per-gpu-hour", po::value(&usd_per_gpu_hour), "with --target-rate: the GPU's price, for the fleet's cost")(
      "dtype", po::value(&dtype), "serving GEMM dtype (default: the config's torch_dtype, else bf16)")(
      "kv-dtype", po::value(&kv_dtype), "KV cache dtype (default: bf16 for fp8, else --dtype)")(
      "tp", po::value(&par.tp)->default_value(1), "tensor-parallel GPUs of one replica")(
      "ep", po::value(&par.ep)->default_value(1), "MoE: expert-parallel ranks of the tp group")(
      "routing", po::value(&routing), "MoE: balanced (default) or power_law_<a>")(
      "format", po::value(&format)->default_value("table"), "table|json");
  sched.add_to(desc);
  add_forecast_path_options(desc, paths);
  po::variables_map vm;
  if (!parse_options(args, desc, vm,
                     "tilecast capacity --model M --gpu G --seq S --gen T (--slo-ttft-ms T | --slo-tpot-ms P) "
                     "[--attainment 90] [--requests 200]\n"
                     "         [--max-batched-tokens N] [--max-seqs N|auto] [--schedule mixed|prefill-first] [--tp N] "
                     "[--target-rate R [--usd-per-gpu-hour USD]]\n"
                     "The highest request rate (Poisson arrivals unless --arrivals uniform) at which one replica serves "
                     "--attainment % of --requests requests within the objectives (DistServe's per-GPU goodput), "
                     "searched over forecasts of `predict --mode generate --request-rate R`. Without --max-seqs the "
                     "replica runs as many sequences as its KV room holds (--max-seqs auto)."))
    return 0;
  check_format(format, {"table", "json"});
  if (vm.count("request-rate")) throw ConfigError("--request-rate: capacity searches the rate itself");
  predictor::check_capacity_options(requests, vm.count("target-rate") ? std::optional<double>(target_rate) : std::nullopt,
                                    vm.count("usd-per-gpu-hour") ? std::optional<double>(usd_per_gpu_hour) : std::nullopt);
  if (!sched.args.max_seqs) sched.args.max_seqs = "auto";
  GpuRegistry reg = load_registry(paths.gpu_dir);
  predictor::KernelPredictor kp(trainer::weights_dir(paths.weights));
  const ModelConfig mc = load_model_config(model, paths.models());
  predictor::ForecastRequest q;
  q.model = &mc;
  q.gpu = &reg.resolve(gpu);
  q.mode = "generate";
  q.batch = requests, q.tokens = seq, q.gen = gen;
  q.dtypes = predictor::serving_dtypes(mc, dtype, kv_dtype);
  q.par = par;
  if (!routing.empty()) q.routing_alpha = predictor::routing_flag(routing);
  sched.args.request_rate = 1;  // checks --arrivals; the search sets the rate
  q.limits = sched.args.limits();
  q.limits.request_rate = 0;
  q.cached_prefix = sched.cached_prefix.value_or(0);
  const predictor::CapacityResult c = predictor::find_capacity(q, attainment, kp);
  if (format == "json") std::cout << predictor::capacity_json(q, c, target_rate, usd_per_gpu_hour);
  else std::cout << predictor::capacity_table(q, c, target_rate, usd_per_gpu_hour);
  return 0;
}

}  // namespace tilecast::cli
