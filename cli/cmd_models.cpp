// `tilecast models`: the bundled model configs (configs/models, or --models-dir) with the
// sizes a forecast reads from them, so that a user can see what --model takes.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/csv.h"
#include "predictor/api.h"

namespace tilecast::cli {

int run_models(const Args& args, const GlobalOptions&) {
  po::options_description desc("models options");
  std::string format;
  ForecastPaths paths;
  add_models_dir_option(desc, paths);
  desc.add_options()("format", po::value(&format)->default_value("table"), "table|csv|json");
  po::variables_map vm;
  if (!parse_options(args, desc, vm, "tilecast models [--models-dir D] [--format table|csv|json]")) return 0;
  check_format(format, {"table", "csv", "json"});
  const nlohmann::json list = predictor::models_json(paths.models());  // a bad file: its one line
  if (format == "json") {
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  auto i = [](const nlohmann::json& m, const char* k) { return static_cast<long long>(m[k].get<int64_t>()); };
  if (format == "csv")
    std::cout << "name,model_type,parameters,layers,hidden,heads,kv_heads,head_dim,ffn,experts,experts_per_token,vocab,"
                 "max_positions,sliding_window,torch_dtype,sliding_window_layers,chunked_attention,attention,quantized_dtype,"
                 "expert_dtype\n";
  else
    std::printf("%-18s %-20s %9s %6s %6s %5s %4s %4s %6s %11s %7s %8s %9s %4s %s\n", "name", "model_type", "params_b",
                "layers", "hidden", "heads", "kv", "hd", "ffn", "experts", "vocab", "max_pos", "dtype", "attn",
                "window");
  for (const auto& m : list) {
    // The table's dtype: the config's, or the one its quantization_config implies (the default of
    // serving forecasts); the CSV keeps both.
    const std::string name = m["name"], type = m["model_type"], quantized = m["quantized_dtype"],
                      expert_dtype = m["expert_dtype"];
    const std::string dtype = format == "table" && !quantized.empty() ? quantized : m["torch_dtype"].get<std::string>();
    const double params = m["parameters"];
    const std::string attn = m["attention"];
    const bool chunked = m["chunked_attention"];
    if (format == "csv") {
      std::printf("%s,%s,%.0f,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%s,%lld,%s,%s,%s,%s\n",
                  csv_escape(name).c_str(), type.c_str(), params, i(m, "layers"), i(m, "hidden"), i(m, "heads"),
                  i(m, "kv_heads"), i(m, "head_dim"), i(m, "ffn"), i(m, "experts"), i(m, "experts_per_token"),
                  i(m, "vocab"), i(m, "max_positions"), i(m, "sliding_window"), dtype.c_str(),
                  i(m, "sliding_window_layers"), chunked ? "true" : "false", attn.c_str(), quantized.c_str(),
                  expert_dtype.c_str());
      continue;
    }
    // Local attention: "sliding 4096 in 23/46" or "chunks 8192 in 36/48" of the layers.
    const long long w = i(m, "sliding_window"), wl = i(m, "sliding_window_layers");
    const std::string window = w == 0 ? "-"
                                      : std::string(chunked ? "chunks " : "sliding ") + std::to_string(w) + " in " +
                                            std::to_string(wl) + "/" + std::to_string(i(m, "layers"));
    // Top-k routing as k/E; Switch's top-1 into capacity buffers (no top-k field) as E; the
    // experts' own format after it (gpt-oss: "4/128 mxfp4").
    const long long e = i(m, "experts"), k = i(m, "experts_per_token");
    std::string experts = e == 0 ? "-" : k == 0 ? std::to_string(e) : std::to_string(k) + "/" + std::to_string(e);
    if (!expert_dtype.empty()) experts += " " + expert_dtype;
    std::printf("%-18s %-20s %9.2f %6lld %6lld %5lld %4lld %4lld %6lld %11s %7lld %8lld %9s %4s %s\n", name.c_str(),
                type.c_str(), params / 1e9, i(m, "layers"), i(m, "hidden"), i(m, "heads"), i(m, "kv_heads"),
                i(m, "head_dim"), i(m, "ffn"), experts.c_str(), i(m, "vocab"), i(m, "max_positions"),
                dtype.empty() ? "-" : dtype.c_str(), attn.c_str(), window.c_str());
  }
  if (format == "table")
    std::printf("(params_b: 1e9 parameters, embeddings and head included; experts: top-k/E (Switch: E, top-1 into "
                "capacity), then the experts' format where the checkpoint quantises them alone; ffn: an expert's width for MoE models; dtype: the config's torch_dtype, or what its "
                "quantization_config implies (serving's default); attn: multi-head, grouped-query or multi-head latent "
                "attention; window: the layers with local attention; --model takes a name or a config.json path)\n");
  return 0;
}

}  // namespace tilecast::cli
