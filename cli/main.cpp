// tilecast: forecast deep-learning kernel latency on GPUs you do not have.
// Dispatches to subcommands; all logic lives in the libraries.
//
// Two executables are built from this file (docs/architecture.md): `tilecast`, which
// forecasts and never loads LibTorch, and `tilecast-torch` (TILECAST_TORCH_TOOL), which
// trains, collects and exports weights. `tilecast train|collect|merge|export-weights`
// replaces its process with `tilecast-torch` from the same folder (execv, same arguments),
// so users keep one command.
#include <boost/program_options.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <iostream>
#include <exception>
#include <filesystem>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/fs_util.h"
#include "core/log.h"
#include "predictor/dense_mlp.h"

namespace po = boost::program_options;
using namespace tilecast;

namespace {

struct Command {
  int (*run)(const cli::Args&, const cli::GlobalOptions&);  // nullptr: runs in the other executable
  const char* help;
  bool torch;  // needs LibTorch: runs in tilecast-torch
};

#ifdef TILECAST_TORCH_TOOL
#define TC_TORCH_CMD(fn) fn
#define TC_LIGHT_CMD(fn) nullptr
#else
#define TC_TORCH_CMD(fn) nullptr
#define TC_LIGHT_CMD(fn) fn
#endif

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> cmds = {
      {"collect", {TC_TORCH_CMD(cli::run_collect), "profile LibTorch kernels of a sweep (CUPTI, or the CPU backend)", true}},
      {"merge", {TC_TORCH_CMD(cli::run_merge), "join the outputs of sharded collect runs", true}},
      {"train", {TC_TORCH_CMD(cli::run_train), "train the per-family MLPs on the training GPUs' kernel data", true}},
      {"export-weights", {TC_TORCH_CMD(cli::run_export_weights), "write the torch-free network files of a weights folder", true}},
      {"gpus", {TC_LIGHT_CMD(cli::run_gpus), "list the known GPU specs (or show one)", false}},
      {"models", {TC_LIGHT_CMD(cli::run_models), "list the bundled model configs and their sizes", false}},
      {"predict-kernel", {TC_LIGHT_CMD(cli::run_predict_kernel), "forecast one kernel on a GPU", false}},
      {"eval-kernels", {TC_LIGHT_CMD(cli::run_eval_kernels), "forecast NeuSight-format kernel rows and report MAPE", false}},
      {"predict", {TC_LIGHT_CMD(cli::run_predict), "forecast a whole model (inference or a training step) on a GPU", false}},
      {"compare", {TC_LIGHT_CMD(cli::run_compare), "forecast many GPUs x configs x parallel layouts in one call; rank by time, throughput or cost", false}},
      {"plan", {TC_LIGHT_CMD(cli::run_plan), "search dp x tp x pp layouts of N GPUs that fit, fastest first", false}},
      {"capacity", {TC_LIGHT_CMD(cli::run_capacity), "the highest request rate a serving replica meets latency objectives at (goodput capacity), and the GPUs a target rate takes", false}},
      {"eval-models", {TC_LIGHT_CMD(cli::run_eval_models), "forecast NeuSight's end-to-end labels and compare with its published errors", false}},
  };
  return cmds;
}

// Replaces this process with the sibling executable that runs `cmd` (same arguments).
[[noreturn]] void hand_over(const std::string& cmd, bool to_torch, char** argv) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv[0]);
  const fs::path other = self.parent_path() / (to_torch ? "tilecast-torch" : "tilecast");
  if (!fs::exists(other))
    throw NotBuiltError("'" + cmd + "' runs in " + other.string() + ", which was not built" +
                        (to_torch ? " (it needs LibTorch: build the tilecast-torch target)" : ""));
  flush_stdout_checked();
  if (to_torch) predictor::prefer_fast_blas_kernels();  // LibTorch loads OpenBLAS at start-up
  std::string path = other.string();
  argv[0] = path.data();
  execv(path.c_str(), argv);
  throw RuntimeError(path + ": cannot execute: " + std::strerror(errno));
}

void usage(std::ostream& os, const po::options_description& global) {
  os << "usage: tilecast [global options] <command> [options]\n\ncommands:\n";
  for (const auto& kv : commands()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %-16s %s\n", kv.first.c_str(), kv.second.help);
    os << buf;
  }
  os << "\n" << global << "\n'tilecast <command> --help' shows a command's options.\n";
}

// The one error path: every exception becomes one line on stderr and a documented exit
// code (1 input/config, 2 feature not built, 3 runtime). Library messages may carry a
// backtrace after a newline (LibTorch's c10::Error): only the first line is printed.
int report_exception(std::exception_ptr ep) {
  auto first_line = [](std::string s) {
    const auto nl = s.find('\n');
    if (nl != std::string::npos) s.resize(nl);
    return s.empty() ? std::string("unknown error") : s;
  };
  auto say = [&](const std::string& msg, int rc) {
    std::cerr << "tilecast: error: " << first_line(msg) << "\n";
    return rc;
  };
  try {
    std::rethrow_exception(ep);
  } catch (const po::error& e) {
    std::cerr << "tilecast: " << first_line(e.what()) << " (see tilecast --help)\n";
    return 1;
  } catch (const ConfigError& e) {
    return say(e.what(), 1);
  } catch (const DataError& e) {
    return say(e.what(), 1);
  } catch (const NotBuiltError& e) {
    return say(e.what(), 2);
  } catch (const YAML::Exception& e) {
    return say(std::string("YAML: ") + e.what(), 1);
  } catch (const nlohmann::json::exception& e) {
    return say(std::string("JSON: ") + e.what(), 1);
  } catch (const std::filesystem::filesystem_error& e) {
    return say(e.what(), 3);
  } catch (const std::bad_alloc&) {
    return say("out of memory", 3);
  } catch (const std::invalid_argument& e) {
    return say(std::string("invalid value: ") + e.what(), 1);
  } catch (const std::out_of_range& e) {
    return say(std::string("value out of range: ") + e.what(), 1);
  } catch (const std::exception& e) {
    return say(e.what(), 3);
  } catch (...) {
    return say("unknown exception", 3);
  }
}

}  // namespace

static int run_main(int argc, char** argv) {
  po::options_description global("global options");
  global.add_options()("help,h", "show this help")(
      "log-level", po::value<std::string>()->default_value("info"), "error|warn|info|debug")(
      "quiet,q", "no progress output")("version", "print the version");
  po::options_description hidden;
  hidden.add_options()("command", po::value<std::string>())(
      "subargs", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(global).add(hidden);
  po::positional_options_description pos;
  pos.add("command", 1).add("subargs", -1);

  try {
    po::variables_map vm;
    po::parsed_options parsed =
        po::command_line_parser(argc, argv).options(all).positional(pos).allow_unregistered().run();
    po::store(parsed, vm);
    po::notify(vm);
    if (vm.count("version")) {
      std::cout << "tilecast " << TILECAST_VERSION << "\n";
      return 0;
    }
    if (!vm.count("command")) {
      usage(vm.count("help") ? std::cout : std::cerr, global);
      return vm.count("help") ? 0 : 1;
    }
    set_log_level(parse_log_level(vm["log-level"].as<std::string>()));
    cli::GlobalOptions g;
    g.quiet = vm.count("quiet") > 0;
    const std::string cmd = vm["command"].as<std::string>();
    auto it = commands().find(cmd);
    if (it == commands().end()) {
      std::cerr << "tilecast: unknown command '" << cmd << "' (see tilecast --help)\n";
      return 1;
    }
    std::vector<std::string> rest = po::collect_unrecognized(parsed.options, po::include_positional);
    if (!it->second.run) hand_over(cmd, it->second.torch, argv);
    rest.erase(rest.begin());  // the command itself
    if (vm.count("help")) rest.push_back("--help");
    return it->second.run(rest, g);
  } catch (...) {
    return report_exception(std::current_exception());
  }
}

int main(int argc, char** argv) {
  const int rc = run_main(argc, argv);
  try {
    flush_stdout_checked();  // `> /dev/full` or a closed pipe is an error, for every command
  } catch (...) {
    return report_exception(std::current_exception());
  }
  return rc;
}
