#pragma once
// Subcommands of the `tilecast` CLI. Each parses its own options and returns an exit code;
// errors are thrown (tilecast::Error) and mapped to one line + exit code by main.cpp.
#include <string>
#include <vector>

namespace tilecast::cli {

using Args = std::vector<std::string>;

struct GlobalOptions {
  bool quiet = false;
};

int run_gpus(const Args& args, const GlobalOptions& g);
int run_models(const Args& args, const GlobalOptions& g);
int run_predict_kernel(const Args& args, const GlobalOptions& g);
int run_train(const Args& args, const GlobalOptions& g);
int run_eval_kernels(const Args& args, const GlobalOptions& g);
int run_predict(const Args& args, const GlobalOptions& g);
int run_eval_models(const Args& args, const GlobalOptions& g);
int run_collect(const Args& args, const GlobalOptions& g);
int run_merge(const Args& args, const GlobalOptions& g);
int run_export_weights(const Args& args, const GlobalOptions& g);
int run_compare(const Args& args, const GlobalOptions& g);
int run_plan(const Args& args, const GlobalOptions& g);
int run_capacity(const Args& args, const GlobalOptions& g);

}  // namespace tilecast::cli
