#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/fs_util.h"
#include "core/kernel_dataset.h"
#include "predictor/graph_predictor.h"
#include "predictor/model_eval.h"

namespace fs = std::filesystem;

namespace tilecast::cli {

int run_eval_models(const Args& args, const GlobalOptions&) {
  po::options_description desc("eval-models options");
  std::string labels, published, opgraphs, format, ns_dir, li_dir;
  ForecastPaths paths;
  double host_gap_us = 0;
  CallOverheadOption call_overhead;
  desc.add_options()("neusight-dir", po::value(&ns_dir),
                     "NeuSight data root (default: $TILECAST_NEUSIGHT_DIR or ../shared/neusight)")(
      "labels", po::value(&labels),
                     "label folder in NeuSight's layout (default: <neusight-dir>/labels)")(
      "published", po::value(&published),
      "NeuSight's summary.csv for the side-by-side column (default: <labels>/../published/summary.csv)")(
      "opgraphs", po::value(&opgraphs),
      "NeuSight's parsed graphs, to name label-CSV nodes for the per-op check (default: <labels>/../opgraphs)")(
      "li-dir", po::value(&li_dir),
      "Li et al.'s published coefficients, re-run on every single-GPU graph next to the plain roofline (default: "
      "<labels>/../baselines/li_et_al when present)")(
      "format", po::value(&format)->default_value("table"), "table|json|csv");
  add_forecast_path_options(desc, paths);
  call_overhead.add_to(desc);
  add_host_gap_option(desc, &host_gap_us);
  po::variables_map vm;
  if (!parse_options(args, desc, vm, "tilecast eval-models [--labels DIR] [--format table|json|csv]")) return 0;
  check_format(format, {"table", "json", "csv"});
  if (!labels.empty() && !ns_dir.empty()) throw ConfigError("--labels and --neusight-dir: give one of them");
  if (labels.empty()) labels = (fs::path(neusight_dir(ns_dir)) / "labels").string();
  while (labels.size() > 1 && labels.back() == '/') labels.pop_back();
  const fs::path root = fs::path(labels).lexically_normal().parent_path();
  // Given explicitly, these must exist; the defaults are optional (a plain labels folder).
  if (!published.empty()) check_readable_file(published);
  if (!opgraphs.empty() && !fs::is_directory(opgraphs)) throw ConfigError("--opgraphs '" + opgraphs + "': folder not found");
  if (published.empty() && fs::exists(root / "published" / "summary.csv"))
    published = (root / "published" / "summary.csv").string();
  if (opgraphs.empty() && fs::is_directory(root / "opgraphs")) opgraphs = (root / "opgraphs").string();
  if (!li_dir.empty() && !fs::is_directory(li_dir)) throw ConfigError("--li-dir '" + li_dir + "': folder not found");
  if (li_dir.empty() && fs::is_directory(root / "baselines" / "li_et_al")) li_dir = (root / "baselines" / "li_et_al").string();
  const std::string mdir = paths.models();
  GpuRegistry reg = load_registry(paths.gpu_dir);
  predictor::KernelPredictor kp(trainer::weights_dir(paths.weights));
  call_overhead.apply(kp);
  std::unique_ptr<predictor::LiEtAlBaseline> li;
  if (!li_dir.empty()) li = std::make_unique<predictor::LiEtAlBaseline>(li_dir);
  auto r = predictor::eval_models(labels, mdir, published, opgraphs, reg, kp, host_gap_us, li.get());
  if (format == "json") std::cout << predictor::model_eval_json(r);
  else if (format == "csv") std::cout << predictor::model_eval_csv(r);
  else
    std::cout << predictor::model_eval_table(r) << "\n" << predictor::per_op_table(r) << "\n"
              << predictor::neusight_layout_tables(r);
  return 0;
}

}  // namespace tilecast::cli
