#include <algorithm>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "predictor/api.h"
#include "predictor/compare.h"
#include "trainer/weights_manifest.h"

namespace tilecast::cli {

namespace {

void read_prices(const std::string& file, const std::vector<std::string>& items, const GpuRegistry& reg,
                 predictor::Prices& p) {
  if (!file.empty()) p = predictor::load_prices(file, reg);
  for (const auto& i : items) predictor::add_price(p, i, reg);
}

void print_rows(const std::vector<predictor::CompareRow>& rows, const std::string& format, const predictor::Prices& p) {
  if (format == "json") std::cout << predictor::compare_json(rows, &p);
  else if (format == "csv") std::cout << predictor::compare_csv(rows);
  else std::cout << predictor::compare_table(rows, &p);
}

}  // namespace

int run_compare(const Args& args, const GlobalOptions&) {
  po::options_description desc("compare options");
  std::string models, gpus, mode, dtype, kv_dtype, expert_dtype, batch = "1", seq, context, dp = "1", tp = "1", pp = "1", mb = "1", ep = "1", cp = "1", vpp = "1", routing;
  std::string format, sort, prices_file, optimizer;
  ForecastPaths paths;
  std::vector<std::string> price_items;
  int64_t gen = 0;
  SchedulerOptions sched;
  TrainingOptions train;
  desc.add_options()("model", po::value(&models)->required(), "model(s), comma-separated: bundled names or config.json paths")(
      "gpus", po::value(&gpus)->required(), "GPUs, comma-separated (names, aliases, CUDA names), or 'all'")(
      "mode", po::value(&mode)->default_value("inference"), "inference|training|prefill|decode|generate (inf|train too)")(
      "batch", po::value(&batch), "batch size(s), comma-separated (default 1; global batch with --dp)")(
      "seq", po::value(&seq), "sequence / prompt length(s), comma-separated")(
      "context", po::value(&context), "decode: cached tokens per sequence, comma-separated")(
      "gen", po::value(&gen), "generate: output tokens per sequence")(
      "dtype", po::value(&dtype),
      "serving dtype (default: the config's torch_dtype); inference is fp32, training fp32 (eager) or bf16|fp16|fp8 "
      "(mixed precision; fp8: Transformer Engine's FP8 GEMMs)")(
      "dp", po::value(&dp), "data-parallel sizes, comma-separated")("tp", po::value(&tp), "tensor-parallel sizes")(
      "pp", po::value(&pp), "pipeline stages")("microbatches", po::value(&mb), "microbatches per step (pipeline)")(
      "ep", po::value(&ep),
      "MoE: expert-parallel sizes, comma-separated (default 1): within the tp group (serving) or the dp (x cp) "
      "ranks (mixed-precision training)")(
      "cp", po::value(&cp), "mixed-precision training: context-parallel sizes, comma-separated (default 1)")(
      "vpp", po::value(&vpp),
      "mixed-precision training with pipeline stages: model chunks per rank (interleaved 1F1B), comma-separated "
      "(default 1)")(
      "routing", po::value(&routing), "serving MoE: token routing, uniform (default: each token's picks at random), balanced (every pick a different expert until all are hit, as the kernel benchmark spreads them) or power_law_<a> (the most loaded rank)")(
      "optimizer", po::value(&optimizer)->default_value("adamw"), "training memory: adamw or none")(
      "hf-eager",
      "prefill and mixed-precision training: the model as Hugging Face transformers runs it without compilation "
      "(predict --hf-eager); rows with --tp, --pp or other layouts say why they cannot")(
      "price", po::value(&price_items)->multitoken(), "GPU=USD_PER_GPU_HOUR (repeatable): adds $/hour and $/1M tokens")(
      "prices", po::value(&prices_file), "YAML: date, source, usd_per_gpu_hour {GPU: USD} (your prices, your date)")(
      "sort", po::value(&sort)->default_value("time"), "time|throughput|cost|goodput (fitting rows first; goodput: generate with --slo-ttft-ms/--slo-tpot-ms)")(
      "format", po::value(&format)->default_value("table"), "table|json|csv");
  sched.add_to(desc);
  train.add_to(desc);
  SpecOptions spec;
  spec.add_to(desc);
  add_forecast_path_options(desc, paths);
  add_expert_dtype_option(desc, &expert_dtype);
  add_serving_kv_dtype_option(desc, &kv_dtype);
  add_dp_attention_option(desc, "the rows with tp > 1 take it");
  std::string moe_a2a;
  add_moe_a2a_option(desc, &moe_a2a, "the DP-attention rows with --ep equal to --tp take it");
  add_disaggregation_options(desc, "each row's decode instance (its tp); GPUs and costs count every instance", true);
  po::variables_map vm;
  if (!parse_options(args, desc, vm,
                     "tilecast compare --model M[,M2] --gpus G1,G2,...|all [--mode M] [--batch 1,8] [--seq 512,2048] "
                     "[--dp/--tp/--pp/--ep/--cp/--vpp lists] [--routing R] [--price G=USD ...|--prices FILE] [--sort time|throughput|cost|goodput]\n"
                     "Forecasts every combination in one process; one row each (tokens/s: training and inference "
                     "count batch x seq per step, prefill prompt tokens, decode and generate output tokens)."))
    return 0;
  check_format(format, {"table", "json", "csv"});
  predictor::check_optimizer(optimizer);
  mode = predictor::canonical_mode(mode);
  predictor::CompareRequest req;
  req.models = predictor::split_list("--model", models);
  req.gpus = predictor::split_list("--gpus", gpus);
  req.mode = mode;
  req.dtype = dtype;
  req.kv_dtype = kv_dtype;
  req.expert_dtype = expert_dtype;
  req.batches = parse_int_list("--batch", batch, 1, 1 << 20);
  if (mode == "decode") {
    if (!seq.empty()) throw ConfigError("--seq does not apply to --mode decode (use --context)");
    if (context.empty()) throw ConfigError("--mode decode needs --context L");
    req.seqs = parse_int_list("--context", context, 1, 1 << 24);
  } else {
    if (!context.empty()) throw ConfigError("--context applies to --mode decode only");
    if (seq.empty()) throw ConfigError("--mode " + mode + " needs --seq S");
    req.seqs = parse_int_list("--seq", seq, 1, 1 << 24);
  }
  if (mode != "generate" && vm.count("gen")) throw ConfigError("--gen applies to --mode generate only");
  req.gen = gen;
  req.limits = sched.args.limits();
  req.cached_prefix = sched.cached_prefix.value_or(0);
  req.spec = spec.request();
  req.dps = parse_int_list("--dp", dp, 1, 4096);
  req.tps = parse_int_list("--tp", tp, 1, 4096);
  req.pps = parse_int_list("--pp", pp, 1, 4096);
  req.microbatches = parse_int_list("--microbatches", mb, 1, 1 << 20);
  req.eps = parse_int_list("--ep", ep, 1, 4096);
  req.cps = parse_int_list("--cp", cp, 1, 4096);
  req.vpps = parse_int_list("--vpp", vpp, 1, 4096);
  if (!routing.empty()) req.routing_alpha = predictor::routing_flag(routing);
  req.dp_attention = vm.count("dp-attention") > 0;
  req.moe_a2a = predictor::parse_moe_a2a(moe_a2a);
  req.disaggs = disaggregation_layouts(vm);
  req.optimizer_state = optimizer == "adamw";
  req.hf_eager = vm.count("hf-eager") > 0;
  req.training = train.args;
  GpuRegistry reg = load_registry(paths.gpu_dir);
  predictor::Prices prices;
  read_prices(prices_file, price_items, reg, prices);
  predictor::KernelPredictor kp(trainer::weights_dir(paths.weights));
  auto rows = predictor::run_compare(req, reg, kp, paths.models(), &prices);
  // Nothing can run: that is bad input, not a table of refusals.
  if (std::all_of(rows.begin(), rows.end(), [](const predictor::CompareRow& r) { return !r.error.empty(); }))
    throw ConfigError("compare: no combination can run (" + rows.front().error + ")");
  predictor::rank_rows(rows, sort);
  print_rows(rows, format, prices);
  return 0;
}

int run_plan(const Args& args, const GlobalOptions&) {
  po::options_description desc("plan options");
  std::string model, gpu, mode, format, prices_file, optimizer;
  ForecastPaths paths;
  std::vector<std::string> price_items;
  int64_t gpus = 0, global_batch = 0, seq = 0, context = 0, gen = 0;
  SchedulerOptions sched;
  TrainingOptions train;
  std::string dtype, expert_dtype, routing, vpp = "1";
  int top = 10;
  desc.add_options()("model", po::value(&model)->required(), "bundled name or config.json path")(
      "gpu", po::value(&gpu)->required(), "GPU type")("gpus", po::value(&gpus)->required(), "number of GPUs")(
      "global-batch", po::value(&global_batch)->required(), "sequences per training step, over all replicas")(
      "seq", po::value(&seq), "sequence length (serving: prompt tokens)")(
      "context", po::value(&context), "decode: cached tokens per sequence")(
      "gen", po::value(&gen), "generate: output tokens per sequence")(
      "dtype", po::value(&dtype),
      "serving dtype (default: the config's torch_dtype); training: fp32 (eager, default) or bf16|fp16|fp8 (mixed "
      "precision; fp8: Transformer Engine's FP8 GEMMs)")(
      "routing", po::value(&routing), "serving MoE: token routing, uniform (default: each token's picks at random), balanced (every pick a different expert until all are hit, as the kernel benchmark spreads them) or power_law_<a> (the most loaded rank)")(
      "mode", po::value(&mode)->default_value("training"),
      "training|inference (dp x tp x pp), or prefill|decode|generate (replicas x tp x pp, x ep for MoE models; ranked by tokens/s)")(
      "optimizer", po::value(&optimizer)->default_value("adamw"), "training memory: adamw or none")(
      "vpp", po::value(&vpp),
      "mixed-precision training: interleaved pipeline chunks a rank to try beside 1, comma-separated (layouts with "
      "pipeline stages whose layers and microbatches allow them)")(
      "top", po::value(&top)->default_value(10), "layouts listed (table)")(
      "price", po::value(&price_items)->multitoken(), "GPU=USD_PER_GPU_HOUR")(
      "prices", po::value(&prices_file), "prices YAML (see compare --help)")(
      "format", po::value(&format)->default_value("table"), "table|json|csv");
  sched.add_to(desc);
  train.add_to(desc);
  SpecOptions spec;
  spec.add_to(desc);
  add_forecast_path_options(desc, paths);
  add_expert_dtype_option(desc, &expert_dtype);
  add_dp_attention_option(desc, "each one-stage layout with tp > 1 is tried with and without it");
  std::string moe_a2a;
  add_moe_a2a_option(desc, &moe_a2a, "each DP-attention layout with ep equal to tp is also tried with it");
  desc.add_options()("disaggregate",
                     "generate: also split each replica's GPUs into N prefill instances of tp P and M decode "
                     "instances of the rest (prefill-decode disaggregation, every N, P and M), beside the aggregated "
                     "layouts")(
      "hf-eager",
      "prefill and mixed-precision training: the model as Hugging Face transformers runs it without compilation "
      "(predict --hf-eager), on one GPU or data parallelism; other layouts are listed as unable to run");
  po::variables_map vm;
  if (!parse_options(args, desc, vm,
                     "tilecast plan --model M --gpu G --gpus N --global-batch B --seq S [--mode training]\n"
                     "       tilecast plan --model M --gpu G --gpus N --global-batch B --mode generate --seq S --gen T [--dtype D]\n"
                     "Searches dp x tp x pp (x microbatches) over N GPUs (serving: replicas x tp x pp, and for MoE models each expert-parallel size of the tp group); layouts that fit first, "
                     "fastest first (decode/generate: highest tokens/s first; generate with --slo-ttft-ms/--slo-tpot-ms: highest "
                     "goodput). --request-rate is the traffic of all replicas, spread evenly. With the scheduler's limits "
                     "(--max-batched-tokens, --max-seqs, --request-rate) layouts with pipeline stages are listed as unable to run."))
    return 0;
  check_format(format, {"table", "json", "csv"});
  if (top < 1) throw ConfigError("--top: expected >= 1, got " + std::to_string(top));
  predictor::check_optimizer(optimizer);
  mode = predictor::canonical_mode(mode);
  if (mode == "decode") {
    if (vm.count("seq") || !vm.count("context")) throw ConfigError("--mode decode takes --context L (not --seq)");
    seq = context;
  } else if (!vm.count("seq") || vm.count("context")) {
    throw ConfigError("--mode " + mode + " takes --seq S (not --context)");
  }
  if (mode != "generate" && vm.count("gen")) throw ConfigError("--gen applies to --mode generate only");
  GpuRegistry reg = load_registry(paths.gpu_dir);
  predictor::Prices prices;
  read_prices(prices_file, price_items, reg, prices);
  predictor::KernelPredictor kp(trainer::weights_dir(paths.weights));
  predictor::PlanRequest req;
  req.model = model, req.gpu = gpu, req.mode = mode, req.dtype = dtype, req.expert_dtype = expert_dtype;
  req.gpus = gpus, req.global_batch = global_batch, req.seq = seq, req.gen = gen;
  req.limits = sched.args.limits();
  req.cached_prefix = sched.cached_prefix.value_or(0);
  req.spec = spec.request();
  req.optimizer_state = optimizer == "adamw";
  req.training = train.args;
  req.vpps = parse_int_list("--vpp", vpp, 1, 4096);
  req.dp_attention = vm.count("dp-attention") > 0;
  req.moe_a2a = predictor::parse_moe_a2a(moe_a2a);
  req.disaggregate = vm.count("disaggregate") > 0;
  req.hf_eager = vm.count("hf-eager") > 0;
  if (!routing.empty()) req.routing_alpha = predictor::routing_flag(routing);
  std::vector<predictor::CompareRow> skipped;
  auto rows = predictor::run_plan(req, reg, kp, paths.models(), &prices, &skipped);
  if (format == "table" && static_cast<int>(rows.size()) > top) rows.resize(top);
  print_rows(rows, format, prices);
  if (format == "table" && !skipped.empty())
    std::cout << "layouts that cannot run (" << skipped.size() << "):\n" << predictor::skipped_layouts_text(skipped);
  return 0;
}

}  // namespace tilecast::cli

namespace tilecast::cli {

int run_capacity(const Args& args, const GlobalOptions&) {
  po::options_description desc("capacity options");
  std::string model, gpus, tp = "1", dtype, kv_dtype, format, routing, prices_file;
  std::vector<std::string> price_items;
  ForecastPaths paths;
  int64_t requests = 200, seq = 0, gen = 0, ep = 1;
  double attainment = 90, target_rate = 0;
  SchedulerOptions sched;
  desc.add_options()("model", po::value(&model)->required(), "bundled name or config.json path")(
      "gpus", po::value(&gpus)->required(), "GPU(s), comma-separated (names, aliases, CUDA names), or 'all'")(
      "tp", po::value(&tp), "tensor-parallel GPUs of one replica, comma-separated (default 1)")(
      "seq", po::value(&seq)->required(), "prompt tokens per request")(
      "gen", po::value(&gen)->required(), "output tokens per request (>= 2)")(
      "requests", po::value(&requests)->default_value(200),
      "requests each trial sends (as a serving benchmark's --num-prompts; more: a longer run, closer to steady state)")(
      "attainment", po::value(&attainment)->default_value(90), "% of the requests that must meet the objectives")(
      "target-rate", po::value(&target_rate), "requests a second to serve: the replicas (and GPUs) that takes at each capacity")(
      "price", po::value(&price_items)->multitoken(), "GPU=USD_PER_GPU_HOUR (repeatable): USD per million requests")(
      "prices", po::value(&prices_file), "YAML: date, source, usd_per_gpu_hour {GPU: USD} (as compare --prices)")(
      "dtype", po::value(&dtype), "serving GEMM dtype (default: the config's torch_dtype, else bf16)")(
      "ep", po::value(&ep)->default_value(1), "MoE: expert-parallel ranks of the tp group")(
      "routing", po::value(&routing), "MoE: uniform (default), balanced or power_law_<a>")(
      "format", po::value(&format)->default_value("table"), "table|json");
  sched.add_to(desc);
  add_serving_kv_dtype_option(desc, &kv_dtype);
  add_dp_attention_option(desc, "the rows with tp > 1 take it");
  std::string moe_a2a;
  add_moe_a2a_option(desc, &moe_a2a, "the row with tp equal to --ep takes it");
  add_disaggregation_options(desc, "each row's decode instance (its tp); per-GPU rates and costs count every instance",
                             true);
  add_forecast_path_options(desc, paths);
  po::variables_map vm;
  if (!parse_options(args, desc, vm,
                     "tilecast capacity --model M --gpus G1,G2,...|all --seq S --gen T (--slo-ttft-ms T | --slo-tpot-ms P) "
                     "[--attainment 90] [--requests 200]\n"
                     "         [--tp 1,2] [--max-batched-tokens N] [--max-seqs N|auto] [--schedule mixed|prefill-first] "
                     "[--target-rate R] [--price G=USD ...|--prices FILE]\n"
                     "The highest request rate (Poisson arrivals unless --arrivals uniform) at which one replica serves "
                     "--attainment % of --requests requests within the objectives (DistServe's per-GPU goodput), "
                     "searched over forecasts of `predict --mode generate --request-rate R`, for every GPU x tp; ranked by "
                     "USD per million requests when every row is priced, else by requests a second per GPU. Without "
                     "--max-seqs a replica runs as many sequences as its KV room holds (--max-seqs auto)."))
    return 0;
  check_format(format, {"table", "json"});
  predictor::check_capacity_options(requests, vm.count("target-rate") ? std::optional<double>(target_rate) : std::nullopt);
  GpuRegistry reg = load_registry(paths.gpu_dir);
  predictor::Prices prices;
  read_prices(prices_file, price_items, reg, prices);
  predictor::KernelPredictor kp(trainer::weights_dir(paths.weights));
  const ModelConfig mc = load_model_config(model, paths.models());
  predictor::ForecastRequest q = predictor::capacity_request(
      mc, requests, seq, gen, predictor::serving_dtypes(mc, dtype, kv_dtype), ep,
      routing.empty() ? kUniformRouting : predictor::routing_flag(routing), sched.args, sched.cached_prefix.value_or(0));
  q.par.dp_attention = vm.count("dp-attention") > 0;  // run_capacity: on the rows with tp > 1
  q.par.moe_all_to_all = predictor::parse_moe_a2a(moe_a2a);  // run_capacity: on the rows with tp = ep
  auto rows = predictor::run_capacity(q, predictor::split_list("--gpus", gpus), parse_int_list("--tp", tp, 1, 4096),
                                      disaggregation_layouts(vm), attainment, reg, kp, &prices);
  predictor::rank_capacity(rows);
  if (format == "json") std::cout << predictor::capacity_rows_json(rows, target_rate, &prices);
  else std::cout << predictor::capacity_rows_table(rows, target_rate, &prices);
  return 0;
}

}  // namespace tilecast::cli
