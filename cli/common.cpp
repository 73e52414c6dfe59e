#include "cli/common.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "predictor/api.h"
#include "predictor/graph_predictor.h"
#include "predictor/kernel_predictor.h"
#include "trainer/weights_manifest.h"

namespace tilecast::cli {

bool parse_options(const std::vector<std::string>& args, po::options_description& desc,
                   po::variables_map& vm, const std::string& usage, const std::string& positional) {
  desc.add_options()("help,h", "show this help");
  try {
    po::parsed_options parsed = po::command_line_parser(args).options(desc).run();
    // A word that is no option's value: Boost keeps it under no name, and store() would drop it.
    // The first such word may stand for `positional`; any other is an error naming it.
    bool taken = positional.empty();
    const bool help = std::any_of(parsed.options.begin(), parsed.options.end(),
                                  [](const po::option& o) { return o.string_key == "help"; });
    for (auto& o : parsed.options) {
      if (!o.string_key.empty() || help) continue;  // --help answers whatever else is there
      const std::string word = o.original_tokens.empty() ? std::string() : o.original_tokens[0];
      if (taken)
        throw ConfigError("unexpected argument '" + word + "': " +
                          (positional.empty() ? std::string("this command takes only --options")
                                              : "it takes one word, for --" + positional) +
                          " (see --help)");
      o.string_key = positional;
      taken = true;
    }
    po::store(parsed, vm);
    if (vm.count("help")) {
      std::cout << "usage: " << usage << "\n\n" << desc << "\n";
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(std::string(e.what()) + " (see --help)");
  }
  return true;
}

GpuRegistry load_registry(const std::string& gpu_dir_flag) {
  std::string dir = gpu_dir_flag.empty()
                        ? (std::filesystem::path(trainer::config_dir()) / "gpus").string()
                        : gpu_dir_flag;
  return GpuRegistry(dir);
}

void check_format(const std::string& fmt, const std::vector<std::string>& allowed) {
  for (const auto& a : allowed)
    if (fmt == a) return;
  std::string all;
  for (const auto& a : allowed) all += (all.empty() ? "" : "|") + a;
  throw ConfigError("--format: unknown format '" + fmt + "' (" + all + ")");
}

std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& value, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  for (const auto& item : predictor::split_list(flag, value)) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < lo || v > hi)
      throw ConfigError(flag + " '" + value + "': '" + item + "' is not a whole number in [" + std::to_string(lo) + ", " +
                        std::to_string(hi) + "]");
    out.push_back(v);
  }
  return out;
}

std::string ForecastPaths::models() const {
  return models_dir.empty() ? (std::filesystem::path(trainer::config_dir()) / "models").string() : models_dir;
}

void add_models_dir_option(po::options_description& desc, ForecastPaths& p) {
  desc.add_options()("models-dir", po::value(&p.models_dir), "bundled model configs (default: configs/models)");
}

void add_forecast_path_options(po::options_description& desc, ForecastPaths& p) {
  desc.add_options()("weights", po::value(&p.weights), "weights folder (default: bundled weights/)")(
      "gpu-dir", po::value(&p.gpu_dir), "GPU spec folder (default: configs/gpus)");
  add_models_dir_option(desc, p);
}

void CallOverheadOption::add_to(po::options_description& desc) {
  desc.add_options()("call-overhead-us", po::value<double>()->notifier([this](double v) { us = v; }),
                     "host time per call that the FP32 families' isolated kernel timings include, taken off each "
                     "of their kernels in a whole model, us (default: the weights manifests' call_overhead_us; 0: "
                     "sum the isolated timings; fitted by scripts/fit-host-gap.sh); also the host time per call an "
                     "eager forward is held to (host_floor_ms)");
}

void CallOverheadOption::apply(predictor::KernelPredictor& kp) const {
  if (us) kp.set_call_overhead_us(*us);
}

void add_host_gap_option(po::options_description& desc, double* us) {
  desc.add_options()("host-gap-us", po::value(us)->default_value(0)->notifier(predictor::check_host_gap_us),
                     "host time added per kernel launch in whole-model forecasts, us (eager dispatch when the GPU "
                     "waits for the host; 0: none, as fitted on the training GPUs' labels by "
                     "scripts/fit-host-gap.sh); an eager forward is held to its kernel calls at the call overhead "
                     "either way (host_floor_ms)");
}

void add_serving_kv_dtype_option(po::options_description& desc, std::string* dtype) {
  desc.add_options()("kv-dtype", po::value(dtype),
                     "serving: KV cache dtype, fp32|fp16|bf16|fp8 (default: the config's FP8 kv_cache_scheme, else "
                     "bf16 under fp8/nvfp4 GEMMs, else --dtype)");
}

void add_dp_attention_option(po::options_description& desc, const std::string& which) {
  const std::string help =
      "serving: SGLang's DP attention (--enable-dp-attention --dp N with --tp N): each rank attends its own share of "
      "the sequences with every head and caches only theirs, the FFN/MoE split over the tp group on the gathered "
      "tokens; " + which;
  desc.add_options()("dp-attention", help.c_str());  // boost copies the text
}

void add_disaggregation_options(po::options_description& desc, const std::string& which, bool lists) {
  const std::string help = "prefill-decode disaggregation (SGLang's and Dynamo's): the prompts run on a prefill "
                           "instance of this many tensor-parallel GPUs, their KV caches move to " + which;
  const std::string each = lists ? " (comma-separated: every combination is a row)" : "";
  const std::string prefill = "with --prefill-tp: this many prefill instances of that layout feed the decode instance "
                              "(xPyD), each request sent to the next in turn (default 1)" + each;
  const std::string decode = "with --prefill-tp: this many decode instances of the serving layout (--tp) decode the "
                             "requests, each request sent to the next in turn (default 1)" + each;
  desc.add_options()("prefill-tp", po::value<int64_t>(), help.c_str())(
      "prefill-ep", po::value<int64_t>(), "with --prefill-tp, a MoE model: the prefill instance's expert-parallel ranks");
  if (lists)
    desc.add_options()("prefill-instances", po::value<std::string>(), prefill.c_str())(
        "decode-instances", po::value<std::string>(), decode.c_str());
  else
    desc.add_options()("prefill-instances", po::value<int64_t>(), prefill.c_str())(
        "decode-instances", po::value<int64_t>(), decode.c_str());
}

namespace {
// An int64 option's value where given.
std::optional<int64_t> given_int(const po::variables_map& vm, const char* name) {
  return vm.count(name) ? std::optional<int64_t>(vm[name].as<int64_t>()) : std::nullopt;
}
}  // namespace

std::vector<predictor::Disaggregation> disaggregation_layouts(const po::variables_map& vm) {
  auto list = [&](const char* name) {
    return vm.count(name) ? parse_int_list(std::string("--") + name, vm[name].as<std::string>(), 1, 1024)
                          : std::vector<int64_t>{};
  };
  return predictor::disaggregation_layouts(given_int(vm, "prefill-tp"), given_int(vm, "prefill-ep"),
                                           list("prefill-instances"), list("decode-instances"));
}

predictor::Disaggregation disaggregation_flags(const po::variables_map& vm) {
  return predictor::disaggregation_flags(given_int(vm, "prefill-tp"), given_int(vm, "prefill-ep"),
                                         given_int(vm, "prefill-instances"), given_int(vm, "decode-instances"));
}

void add_moe_a2a_option(po::options_description& desc, std::string* value, const std::string& which) {
  const std::string help =
      "serving a MoE model with --dp-attention and an --ep equal to --tp: none (the tokens gathered for the experts, "
      "an all-reduce after them) or deepep (SGLang's --moe-a2a-backend deepep: each rank routes its own tokens and "
      "sends them to their experts' ranks by all-to-all, the shared experts whole on every rank); " + which;
  desc.add_options()("moe-a2a", po::value(value)->default_value("none"), help.c_str());
}

void add_expert_dtype_option(po::options_description& desc, std::string* dtype) {
  static const std::string help = "serving MoE: the routed experts' dtype, one of " +
                                   dtype_set_names(family_traits(Family::kMoe).dtypes) +
                                   " (int4, mxfp4: 4-bit weights, BF16 activations; mxfp4_mxfp8: MXFP4 weights, the activations "
                                   "quantised to MXFP8, Blackwell's block-scaled FP8 rate; default: the config's, MXFP4 "
                                   "for gpt-oss, else --dtype)";
  desc.add_options()("expert-dtype", po::value(dtype), help.c_str());
}

void SpecOptions::add_to(po::options_description& desc) {
  desc.add_options()("spec-draft", po::value(&draft),
                     "generate: speculative decoding with this draft model (bundled name or config.json; same "
                     "tokenizer, the target's GPUs, tp and dtypes), or 'mtp': the model's own multi-token-prediction "
                     "module (DeepSeek-V3's num_nextn_predict_layers) drafting every token, as SGLang's and vLLM's "
                     "MTP speculative decoding")(
      "spec-tokens", po::value<int64_t>()->notifier([this](int64_t v) { tokens = v; }),
      "generate, --spec-draft: draft tokens a round (1-16, default 4)")(
      "spec-accept", po::value<double>()->notifier([this](double v) { accept = v; }),
      "generate, --spec-draft: probability that the target accepts a draft token (0-1; your workload's)");
}

predictor::SpecRequest SpecOptions::request() const { return predictor::SpecRequest::from_flags(draft, tokens, accept); }

void SchedulerOptions::add_to(po::options_description& desc) {
  desc.add_options()("max-batched-tokens", po::value<int64_t>()->notifier([this](int64_t v) { args.max_batched_tokens = v; }),
                     "generate: the engine's token budget per step (vLLM's max_num_batched_tokens, SGLang's "
                     "chunked_prefill_size): prompts split into chunks beside the decoding sequences (with "
                     "--prefill-tp: the prefill instances' budget); default: no budget, every prompt in the first step")(
      "max-seqs", po::value<std::string>()->notifier([this](const std::string& v) { args.max_seqs = v; }),
      "generate: sequences the engine runs at once (vLLM's max_num_seqs, SGLang's max_running_requests), or auto "
      "(as many as the KV room holds); the rest wait for a free slot; default: every request at once")(
      "schedule", po::value<std::string>()->notifier([this](const std::string& v) { args.schedule = v; }),
      "generate, with --max-batched-tokens or --max-seqs: mixed (default; vLLM: each step decodes every running "
      "sequence, then prompt tokens) or prefill-first (SGLang: steps with prompt tokens hold no decodes)")(
      "request-rate", po::value<double>()->notifier([this](double v) { args.request_rate = v; }),
      "generate: requests arrive one by one at this rate (requests a second; Poisson arrivals from a fixed "
      "seed, as vLLM's benchmark sends them); TTFT counts from each arrival; default: all at once")(
      "arrivals", po::value<std::string>()->notifier([this](const std::string& v) { args.arrivals = v; }),
      "generate, --request-rate: poisson (default) or uniform gaps")(
      "range-ratio", po::value<double>()->notifier([this](double v) { args.range_ratio = v; }),
      "generate: each request's prompt and output tokens drawn uniformly within this fraction of --seq and --gen "
      "([0, 1); vLLM's benchmark --random-range-ratio), from a fixed seed; default 0: every request alike")(
      "slo-ttft-ms", po::value<double>()->notifier([this](double v) { args.slo_ttft_ms = v; }),
      "generate: a request's time to first token objective, ms; with --slo-tpot-ms (either or both) the forecast "
      "counts the requests that meet them and their rate (goodput, as vLLM's benchmark --goodput)")(
      "slo-tpot-ms", po::value<double>()->notifier([this](double v) { args.slo_tpot_ms = v; }),
      "generate: a request's time per output token objective, ms (goodput)")(
      "cached-prefix", po::value<int64_t>()->notifier([this](int64_t v) { cached_prefix = v; }),
      "prefill, generate: prompt tokens every request finds in the KV cache already (prefix caching, e.g. a shared "
      "system prompt): only the rest of each prompt runs, and the prefix is cached once");
}

void TrainingOptions::add_to(po::options_description& desc) {
  auto zero = [this](const std::string& v) { args.zero = predictor::zero_flag(v); };
  desc.add_options()("zero", po::value<std::string>()->notifier(zero),
                     "mixed-precision training (--mode training --dtype bf16|fp16|fp8): ZeRO stage over the dp ranks (0, "
                     "default; 1: optimizer state sharded, Megatron-LM's distributed optimizer; 2: + gradients; 3: + "
                     "weights, as FSDP; plan: auto tries each)")(
      "sequence-parallel", po::bool_switch(&args.sequence_parallel),
      "mixed-precision training with --tp: Megatron-LM's sequence parallelism (norms and residual adds split "
      "over the tp ranks by tokens)")(
      "recompute", po::value(&args.recompute),
      "mixed-precision training: none (default) or full (each layer's forward recomputed in its backward; only its "
      "input kept); plan: auto tries both")(
      "train-tokens", po::value(&args.train_tokens),
      "mixed-precision training: tokens the whole run trains on (e.g. 15e12): its days at the forecast's tokens/s "
      "(compare and plan: and its cost at --price)");
}

}  // namespace tilecast::cli
