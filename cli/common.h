#pragma once
#include <boost/program_options.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/gpu_spec.h"
#include "core/kernel.h"
#include "predictor/api.h"
#include "predictor/graph_predictor.h"

namespace tilecast::cli {

namespace po = boost::program_options;

// Parses subcommand options; returns false (after printing usage to stdout) on --help.
// Unknown options, bad values and a word that is no option's value throw ConfigError naming it;
// `positional`, where given, is the option that one such word stands for (`gpus H100`).
bool parse_options(const std::vector<std::string>& args, po::options_description& desc,
                   po::variables_map& vm, const std::string& usage, const std::string& positional = "");

// configs/gpus from --gpu-dir (if given) or the default config folder.
GpuRegistry load_registry(const std::string& gpu_dir_flag = "");

// Validates --format against the allowed set; throws ConfigError.
void check_format(const std::string& fmt, const std::vector<std::string>& allowed);

// "1,8,16" -> {1, 8, 16}: every item a whole number in [lo, hi]; ConfigError naming the flag.
std::vector<int64_t> parse_int_list(const std::string& flag, const std::string& value, int64_t lo, int64_t hi);

// The folders every forecasting command reads: --weights, --gpu-dir, --models-dir.
struct ForecastPaths {
  std::string weights, gpu_dir, models_dir;
  std::string models() const;  // --models-dir or configs/models
};
void add_forecast_path_options(po::options_description& desc, ForecastPaths& p);
// --models-dir alone (`tilecast models`), into p.models_dir.
void add_models_dir_option(po::options_description& desc, ForecastPaths& p);

// --call-overhead-us (predict, eval-models): the host time per call taken off each FP32 kernel
// of a whole model, instead of the weights manifests' call_overhead_us.
struct CallOverheadOption {
  std::optional<double> us;
  void add_to(po::options_description& desc);
  void apply(predictor::KernelPredictor& kp) const;  // if given
};

// --host-gap-us (predict, eval-models): host time added per kernel launch in whole-model
// forecasts, into *us (default 0); checked (predictor::check_host_gap_us) when parsed.
void add_host_gap_option(po::options_description& desc, double* us);

// --expert-dtype (predict, compare, plan): a serving forecast's routed experts' dtype, into *dtype
// (predictor::apply_expert_dtype checks it); the help lists the MoE family's dtypes.
void add_expert_dtype_option(po::options_description& desc, std::string* dtype);
// --kv-dtype of a serving forecast (predict, compare, capacity), into *dtype
// (predictor::serving_dtypes checks it and states the defaults the help gives).
void add_serving_kv_dtype_option(po::options_description& desc, std::string* dtype);
// --dp-attention (predict, compare, plan, capacity): SGLang's DP attention, read with
// vm.count("dp-attention"); `which` says which of the command's forecasts take it.
void add_dp_attention_option(po::options_description& desc, const std::string& which);
// --prefill-tp, --prefill-ep, --prefill-instances and --decode-instances (predict, compare,
// capacity): read with disaggregation_flags(vm); `which` says what the prefill instances stand
// beside. `lists`: the instance counts take comma-separated lists, read with
// disaggregation_layouts(vm) (compare's and capacity's).
void add_disaggregation_options(po::options_description& desc, const std::string& which, bool lists = false);
predictor::Disaggregation disaggregation_flags(const po::variables_map& vm);
// Every combination of the listed instance counts (add_disaggregation_options with lists).
std::vector<predictor::Disaggregation> disaggregation_layouts(const po::variables_map& vm);
// --moe-a2a none|deepep into *value (predictor::parse_moe_a2a reads it); `which`: the rows or
// layouts it applies to.
void add_moe_a2a_option(po::options_description& desc, std::string* value, const std::string& which);

// The serving engine's scheduler (predict, compare, plan): --max-batched-tokens, --max-seqs,
// --schedule, --request-rate, --arrivals and the objectives --slo-ttft-ms, --slo-tpot-ms into `args`, --cached-prefix into `cached_prefix`,
// each where given; checked by SchedulerArgs::limits.
struct SchedulerOptions {
  predictor::SchedulerArgs args;
  std::optional<int64_t> cached_prefix;
  void add_to(po::options_description& desc);
};

// Speculative decoding (predict, compare, plan): --spec-draft (a draft model or "mtp"),
// --spec-tokens, --spec-accept, checked by SpecRequest.
struct SpecOptions {
  std::string draft;
  std::optional<int64_t> tokens;
  std::optional<double> accept;
  void add_to(po::options_description& desc);
  predictor::SpecRequest request() const;  // SpecRequest::from_flags
};

// Mixed-precision training (predict, compare, plan): --zero (ZeRO stage over the dp ranks),
// --sequence-parallel, --recompute (none|full) and --train-tokens into `args`, checked by the
// forecast (TrainingArgs::apply, forecast()).
struct TrainingOptions {
  predictor::TrainingArgs args;
  void add_to(po::options_description& desc);
};

}  // namespace tilecast::cli
