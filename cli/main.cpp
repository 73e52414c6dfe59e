// tilecast: forecast deep-learning kernel latency on GPUs you do not have.
// Dispatches to subcommands; all logic lives in the libraries.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"

namespace po = boost::program_options;
using namespace tilecast;

namespace {

struct Command {
  int (*run)(const cli::Args&, const cli::GlobalOptions&);
  const char* help;
};

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> cmds = {
      {"collect", {cli::run_collect, "profile LibTorch kernels of a sweep (CUPTI, or the CPU backend)"}},
      {"merge", {cli::run_merge, "join the outputs of sharded collect runs"}},
      {"gpus", {cli::run_gpus, "list the known GPU specs (or show one)"}},
      {"predict-kernel", {cli::run_predict_kernel, "forecast one kernel on a GPU"}},
      {"train", {cli::run_train, "train the per-family MLPs on the training GPUs' kernel data"}},
      {"eval-kernels", {cli::run_eval_kernels, "forecast NeuSight-format kernel rows and report MAPE"}},
      {"predict", {cli::run_predict, "forecast a whole model (inference or a training step) on a GPU"}},
      {"eval-models", {cli::run_eval_models, "forecast NeuSight's end-to-end labels and compare with its published errors"}},
  };
  return cmds;
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

}  // namespace

int main(int argc, char** argv) {
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
    rest.erase(rest.begin());  // the command itself
    if (vm.count("help")) rest.push_back("--help");
    return it->second.run(rest, g);
  } catch (const po::error& e) {
    std::cerr << "tilecast: " << e.what() << " (see tilecast --help)\n";
    return 1;
  } catch (const ConfigError& e) {
    std::cerr << "tilecast: error: " << e.what() << "\n";
    return 1;
  } catch (const DataError& e) {
    std::cerr << "tilecast: error: " << e.what() << "\n";
    return 1;
  } catch (const NotBuiltError& e) {
    std::cerr << "tilecast: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tilecast: error: " << e.what() << "\n";
    return 3;
  }
}
