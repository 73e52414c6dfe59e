// `tilecast models`: the bundled model configs (configs/models, or --models-dir) with the
// sizes a forecast reads from them, so that a user can see what --model takes.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/model_config.h"

namespace tilecast::cli {

int run_models(const Args& args, const GlobalOptions&) {
  po::options_description desc("models options");
  std::string models_dir, format;
  desc.add_options()("models-dir", po::value(&models_dir), "bundled model configs (default: configs/models)")(
      "format", po::value(&format)->default_value("table"), "table|csv|json");
  po::variables_map vm;
  if (!parse_options(args, desc, vm, "tilecast models [--models-dir D] [--format table|csv|json]")) return 0;
  check_format(format, {"table", "csv", "json"});
  ForecastPaths paths;
  paths.models_dir = models_dir;
  const std::string dir = paths.models();
  const std::vector<std::string> names = bundled_models(dir);
  if (names.empty()) throw ConfigError(dir + ": no model configs (*.json) in this folder");
  std::vector<ModelConfig> models;
  for (const auto& n : names) models.push_back(load_model_config(n, dir));  // a bad file: its one line
  if (format == "json") {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& m : models)
      list.push_back({{"name", m.name},
                      {"model_type", m.model_type},
                      {"parameters", model_parameters(m)},
                      {"layers", m.layers},
                      {"hidden", m.hidden},
                      {"heads", m.heads},
                      {"kv_heads", m.kv_heads},
                      {"head_dim", m.head_dim},
                      {"ffn", m.num_experts > 0 && m.moe_ffn > 0 ? m.moe_ffn : m.ffn},
                      {"experts", m.num_experts},
                      {"experts_per_token", m.experts_per_token},
                      {"vocab", m.vocab},
                      {"max_positions", m.max_positions},
                      {"sliding_window", m.sliding_window},
                      {"torch_dtype", m.torch_dtype}});
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  if (format == "csv")
    std::cout << "name,model_type,parameters,layers,hidden,heads,kv_heads,head_dim,ffn,experts,experts_per_token,vocab,"
                 "max_positions,sliding_window,torch_dtype\n";
  else
    std::printf("%-18s %-20s %9s %6s %6s %5s %4s %4s %6s %7s %7s %8s %7s\n", "name", "model_type", "params_b", "layers",
                "hidden", "heads", "kv", "hd", "ffn", "experts", "vocab", "max_pos", "dtype");
  for (const auto& m : models) {
    const int64_t ffn = m.num_experts > 0 && m.moe_ffn > 0 ? m.moe_ffn : m.ffn;
    // Top-k routing as k/E; Switch's top-1 into capacity buffers (no top-k field) as E.
    const std::string experts = m.num_experts == 0          ? "-"
                                : m.experts_per_token == 0 ? std::to_string(m.num_experts)
                                                           : std::to_string(m.experts_per_token) + "/" + std::to_string(m.num_experts);
    if (format == "csv")
      std::printf("%s,%s,%.0f,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s\n", m.name.c_str(),
                  m.model_type.c_str(), model_parameters(m), (long long)m.layers, (long long)m.hidden, (long long)m.heads,
                  (long long)m.kv_heads, (long long)m.head_dim, (long long)ffn, (long long)m.num_experts,
                  (long long)m.experts_per_token, (long long)m.vocab, (long long)m.max_positions,
                  (long long)m.sliding_window, m.torch_dtype.c_str());
    else
      std::printf("%-18s %-20s %9.2f %6lld %6lld %5lld %4lld %4lld %6lld %7s %7lld %8lld %7s\n", m.name.c_str(),
                  m.model_type.c_str(), model_parameters(m) / 1e9, (long long)m.layers, (long long)m.hidden,
                  (long long)m.heads, (long long)m.kv_heads, (long long)m.head_dim, (long long)ffn, experts.c_str(),
                  (long long)m.vocab, (long long)m.max_positions, m.torch_dtype.empty() ? "-" : m.torch_dtype.c_str());
  }
  if (format == "table")
    std::printf("(params_b: 1e9 parameters, embeddings and head included; experts: top-k/E (Switch: E, top-1 into capacity); ffn: an expert's width for "
                "MoE models; --model takes a name or a config.json path)\n");
  return 0;
}

}  // namespace tilecast::cli
