#include <sstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/csv.h"
#include "core/error.h"
#include "core/fs_util.h"
#include "predictor/kernel_eval.h"

namespace tilecast::cli {

int run_eval_kernels(const Args& args, const GlobalOptions& g) {
  po::options_description desc("eval-kernels options");
  std::vector<std::string> data;
  std::string weights, gpu_dir, format, rows_csv, li_dir;
  int holdout = 0;
  desc.add_options()("data", po::value(&data)->required()->multitoken(),
                     "NeuSight-format kernel CSV(s); repeat or list several")(
      "weights", po::value(&weights), "weights folder (default: bundled weights/)")(
      "gpu-dir", po::value(&gpu_dir), "GPU spec folder (default: configs/gpus)")(
      "rows-csv", po::value(&rows_csv), "also write per-row forecasts to this CSV (device, op, shape, dtype, measured, forecast, roofline, fitted-roofline ms)")(
      "li-dir", po::value(&li_dir),
      "Li et al.'s published coefficients (NeuSight's baselines/li_et_al): adds its re-run per row to --rows-csv")(
      "holdout-shapes", po::value(&holdout),
      "score only the rows `train --holdout-shapes PCT` left out (and of the library the GPU's spec implies)")(
      "format", po::value(&format)->default_value("table"), "table|json|csv");
  po::variables_map vm;
  if (!parse_options(args, desc, vm,
                     "tilecast eval-kernels --data CSV [--data CSV ...] [--weights DIR] [--format table|json|csv]"))
    return 0;
  check_format(format, {"table", "json", "csv"});
  if (vm.count("holdout-shapes")) check_holdout_percent(holdout);
  if (!li_dir.empty() && rows_csv.empty()) throw ConfigError("--li-dir: needs --rows-csv (the re-run is per row)");
  std::unique_ptr<predictor::LiEtAlBaseline> li;
  if (!li_dir.empty()) li = std::make_unique<predictor::LiEtAlBaseline>(li_dir);
  if (!rows_csv.empty()) check_output_not_input(rows_csv, data, "--rows-csv");
  GpuRegistry reg = load_registry(gpu_dir);
  predictor::KernelPredictor pred(trainer::weights_dir(weights));
  std::vector<predictor::KernelEvalRow> rows;
  auto rep = predictor::eval_kernels(data, pred, reg, rows_csv.empty() ? nullptr : &rows, g.quiet, holdout, li.get());
  if (!rows_csv.empty()) {
    std::ostringstream out;
    // prior_ms: the family's fitted roofline alone (empty for families without one).
    out << "device,op,shape,dtype,measured_ms,predicted_ms,roofline_ms,prior_ms" << (li ? ",li_et_al_ms" : "") << "\n";
    for (const auto& r : rows) {
      out << csv_escape(r.device) << ',' << r.op << ',' << csv_escape(r.shape) << ',' << r.dtype << ',' << r.measured_ms
          << ',' << r.predicted_ms << ',' << r.roofline_ms << ',';
      if (r.prior_ms > 0) out << r.prior_ms;
      if (li) {
        out << ',';
        if (r.li_ms >= 0) out << r.li_ms;
      }
      out << '\n';
    }
    write_file_atomic(rows_csv, out.str());
  }
  std::cout << (format == "json"  ? predictor::eval_report_json(rep)
                : format == "csv" ? predictor::eval_report_csv(rep)
                                  : predictor::eval_report_table(rep));
  return 0;
}

}  // namespace tilecast::cli
