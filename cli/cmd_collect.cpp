#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "collector/collect.h"
#include "collector/dataset_writer.h"
#include "collector/sweep.h"
#include "core/error.h"
#include "core/interrupt.h"

namespace tilecast::cli {

int run_collect(const Args& args, const GlobalOptions& g) {
  po::options_description desc("collect options");
  collector::CollectOptions opt;
  std::string shard = "0/1";
  desc.add_options()("sweep", po::value(&opt.sweep_path)->required(), "sweep YAML (configs/sweeps/*.yaml)")(
      "out", po::value(&opt.out_dir), "output folder: <family>.csv, gpu.yaml, run_config.yaml (required unless --list)")(
      "backend", po::value(&opt.backend)->default_value("cuda"), "cuda (CUPTI) | cpu (LibTorch CPU ops, steady clock)")(
      "device", po::value(&opt.device)->default_value(0), "CUDA device index")(
      "shard", po::value(&shard)->default_value("0/1"), "I/N: this process takes configs with index % N == I")(
      "resume", "continue an interrupted run in --out, skipping configs already written")(
      "limit", po::value(&opt.limit)->default_value(0), "stop after N new configs (0 = all)")(
      "list", "print this shard's configs (index, family, op, dtype, id; --limit caps them) and exit: runs nothing");
  po::variables_map vm;
  if (!parse_options(args, desc, vm,
                     "tilecast collect --sweep YAML --out DIR [--backend cuda|cpu] [--device N] [--shard I/N] "
                     "[--resume] [--limit N] | --sweep YAML --list"))
    return 0;
  opt.shard = collector::parse_shard(shard);
  if (opt.limit < 0) throw ConfigError("--limit: expected >= 0 (0 = all), got " + std::to_string(opt.limit));
  if (opt.device < 0) throw ConfigError("--device: expected >= 0, got " + std::to_string(opt.device));
  if (vm.count("list")) {  // a preview: what the sweep would measure, in index order
    const collector::Sweep sweep = collector::load_sweep(opt.sweep_path);
    const int64_t n = collector::sweep_size(sweep);
    std::cout << "index,family,op,dtype,id\n";
    int64_t listed = 0;
    for (int64_t i = opt.shard.index; i < n && (opt.limit == 0 || listed < opt.limit); i += opt.shard.count, ++listed) {
      const collector::SweepConfig c = collector::sweep_config(sweep, i);
      std::cout << i << ',' << family_name(op_family(c.query.op)) << ',' << op_name(c.query.op) << ',' << c.dtype << ','
                << c.id << '\n';
    }
    return 0;
  }
  if (opt.out_dir.empty()) throw ConfigError("--out: required (the output folder), unless --list");
  opt.resume = vm.count("resume") > 0;
  opt.quiet = g.quiet;
  install_interrupt_handler();
  auto s = collector::run_collect(opt);
  std::cout << "configs_in_shard,already_written,drawn_twice,measured,failed,seconds\n"
            << s.total << ',' << s.skipped_existing << ',' << s.drawn_twice << ',' << s.measured << ',' << s.failed << ','
            << s.seconds << "\n";
  return s.interrupted ? 130 : 0;
}

int run_merge(const Args& args, const GlobalOptions&) {
  po::options_description desc("merge options");
  std::vector<std::string> inputs;
  std::string out;
  desc.add_options()("in", po::value(&inputs)->required()->multitoken(), "shard output folders")(
      "out", po::value(&out)->required(), "merged output folder");
  po::variables_map vm;
  if (!parse_options(args, desc, vm, "tilecast merge --in DIR [DIR ...] --out DIR")) return 0;
  const int64_t rows = collector::merge_datasets(inputs, out);
  std::cout << "rows_written\n" << rows << "\n";
  return 0;
}

}  // namespace tilecast::cli
