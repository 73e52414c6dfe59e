// Trainer + predictor tests (links torch). Tiny configs only: no big training here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "../core/test_util.h"
#include "core/error.h"
#include "core/units.h"
#include "core/model_config.h"
#include "core/op_graph.h"
#include "predictor/graph_predictor.h"
#include "predictor/kernel_eval.h"
#include "predictor/kernel_predictor.h"
#include "predictor/model_eval.h"
#include "trainer/mlp.h"
#include "trainer/train.h"
#include "core/featurize.h"
#include "core/fs_util.h"

namespace fs = std::filesystem;
using namespace tilecast;

namespace {

const GpuRegistry& registry() {
  static GpuRegistry reg(gpu_dir());
  return reg;
}

// A kernel as a whole model's step runs it: inside a sustained load (KernelQuery::sustained).
KernelQuery in_step(KernelQuery q) {
  q.sustained = true;
  return q;
}

// Synthetic elementwise rows: latency = 5 us launch + bytes at 80 % of DRAM bandwidth.
std::vector<KernelSample> synthetic_rows(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> lb(4, 15), lh(4, 13);
  std::vector<KernelSample> rows;
  for (const char* dev : {"Tesla T4", "Tesla V100-PCIE-32GB"}) {
    const GpuSpec& g = *registry().find(dev);
    for (int i = 0; i < n; ++i) {
      KernelSample s;
      s.query.op = (i % 2) ? OpKind::kAdd : OpKind::kRelu;
      s.query.b = int64_t{1} << lb(rng);
      s.query.h = int64_t{1} << lh(rng);
      s.device = dev;
      s.latency_ms = 0.005 + s_to_ms(transfer_s(query_bytes(s.query), 0.8 * g.mem_bw_gbps));
      rows.push_back(s);
    }
  }
  return rows;
}

trainer::PredictorConfig tiny_config(Family f) {
  trainer::PredictorConfig c;
  c.family = f;
  c.num_layers = 3;
  c.hidden_size = 32;
  c.lr = 3e-3;
  c.batch_size = 32;
  c.epochs = 40;
  c.val_fraction = 0.2;
  c.seed = 1;
  return c;
}

// An empty weights folder `name` under the test's temp dir holding `tiles`.
std::string fresh_weights_dir(const std::string& name, const TileTable& tiles) {
  const std::string dir = ::testing::TempDir() + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  tiles.save(dir + "/tiles.csv");
  return dir;
}

// A manifest entry of one network, `<family>.pt` / `.tcmlp` in `dir`, trained with `cfg`.
trainer::FamilyEntry one_network_entry(const std::string& dir, Family family, const trainer::PredictorConfig& cfg,
                                       const std::vector<int64_t>& layer_widths) {
  trainer::FamilyEntry e;
  const std::string stem = family_name(family);
  trainer::add_member(e, dir, stem + ".pt", stem + ".tcmlp", layer_widths);
  e.features = feature_names(family);
  e.config = cfg;
  return e;
}

// one_network_entry with the trained network's feature range and its training GPUs.
trainer::FamilyEntry trained_entry(const std::string& dir, Family family, const trainer::PredictorConfig& cfg,
                                   const trainer::FamilyResult& r, const std::vector<std::string>& gpus) {
  trainer::FamilyEntry e = one_network_entry(dir, family, cfg, r.layer_widths);
  e.feature_min = r.feature_min;
  e.feature_max = r.feature_max;
  e.training_gpus = gpus;
  return e;
}

// Writes a complete weights folder with a tiny elementwise model.
std::string tiny_weights_dir(const std::string& name, trainer::FamilyResult* result = nullptr, double floor_ms = 0) {
  TileTable tiles;
  tiles.add_samples(read_kernel_csv(data_path("bmm_small.csv")));
  const std::string dir = fresh_weights_dir(name, tiles);
  auto cfg = tiny_config(Family::kElementwise);
  cfg.launch_floor = floor_ms > 0;
  auto r = trainer::train_family(cfg, synthetic_rows(150, 7), tiles, registry(), dir + "/elementwise.pt", true,
                                 floor_ms);
  if (result) *result = r;
  trainer::WeightsManifest m;
  m.feature_schema_version = kFeatureSchemaVersion;
  trainer::FamilyEntry e = one_network_entry(dir, Family::kElementwise, cfg, r.layer_widths);
  e.training_gpus = {"Tesla T4", "Tesla V100-PCIE-32GB"};
  e.launch_floor_us = floor_ms * 1e3;
  m.families["elementwise"] = e;
  trainer::save_manifest(dir, m);
  return dir;
}

}  // namespace

// The launch floor: fitted as the median over GPUs of each GPU's 1st-percentile latency (the
// synthetic rows are 5 us + bytes at 80 % of DRAM bandwidth, so it lies just above 5 us);
// forecasts of kernels whose bound is below it start from the floor and say "launch".
TEST(LaunchFloor, FittedFromTheRowsAndAppliedToForecasts) {
  const auto rows = synthetic_rows(150, 7);
  const double floor_ms = trainer::fit_launch_floor_ms(rows);
  EXPECT_GE(floor_ms, 0.005);
  EXPECT_LT(floor_ms, 0.0052);
  // Two GPUs whose 1st percentiles are 1 and 5 ms: the median of the two is 3.
  std::vector<KernelSample> two;
  for (int i = 0; i < 100; ++i) {
    KernelSample a, b;
    a.device = "A", a.latency_ms = 1 + i;
    b.device = "B", b.latency_ms = 5 + i;
    two.push_back(a), two.push_back(b);
  }
  EXPECT_DOUBLE_EQ(trainer::fit_launch_floor_ms(two), 3.0);
  trainer::FamilyResult r;
  const std::string dir = tiny_weights_dir("floor_weights", &r, floor_ms);
  EXPECT_LT(r.val_mape_pct, 30.0);
  predictor::KernelPredictor p(dir);
  const auto tiny = p.predict(std::vector<KernelQuery>{vec_q(OpKind::kAdd, 16, 16)}, *registry().find("Tesla T4"));
  EXPECT_EQ(tiny[0].bound, "launch");
  EXPECT_DOUBLE_EQ(tiny[0].base_ms, floor_ms);
  EXPECT_GT(tiny[0].latency_ms, 0.5 * floor_ms);
  const auto big = p.predict(std::vector<KernelQuery>{vec_q(OpKind::kAdd, 1 << 14, 1 << 12)}, *registry().find("Tesla T4"));
  EXPECT_EQ(big[0].bound, "memory");
  EXPECT_GT(big[0].base_ms, floor_ms);
  // The manifest keeps the floor and the config flag.
  const auto m = trainer::load_manifest(dir);
  EXPECT_NEAR(m.families.at("elementwise").launch_floor_us, floor_ms * 1e3, 1e-9);
  EXPECT_TRUE(m.families.at("elementwise").config.launch_floor);
}

namespace {
// The fitted roofline both library-cost tests hold while fitting a library's own number: a 5 us
// floor, no cost per wave, `eta_memory` of DRAM bandwidth.
FittedRoofline decode_floor_and_eta(double eta_memory) {
  FittedRoofline p;
  p.floor_us = 5;
  p.wave_us = 0;
  p.eta_memory = eta_memory;
  return p;
}

// 600 synthetic decode rows on each of the A100-SXM4-80GB and L40S (FlashAttention by their specs)
// and the B200 (TRT-LLM's): 2^b sequences (b uniform in log_batch) x 2^c cached tokens (c in
// log_ctx), 32 heads over 8 KV heads of 128, BF16, timed by `truth`.
std::vector<KernelSample> timed_decode_rows(const FittedRoofline& truth, uint64_t seed, std::pair<int, int> log_batch,
                                            std::pair<int, int> log_ctx) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> lb(log_batch.first, log_batch.second), lc(log_ctx.first, log_ctx.second);
  std::vector<KernelSample> rows;
  const TileTable no_tiles;
  std::vector<float> scratch(num_features(Family::kAttnDecode));
  for (const char* dev : {"NVIDIA A100-SXM4-80GB", "NVIDIA L40S", "NVIDIA B200"}) {
    const GpuSpec& g = *registry().find(dev);
    for (int i = 0; i < 600; ++i) {
      KernelSample s;
      s.query = attention_decode_q(int64_t{1} << lb(rng), int64_t{1} << lc(rng), 32, 8, 128, DType::kBf16, DType::kBf16);
      s.device = dev;
      s.latency_ms = s_to_ms(fitted_roofline_s(featurize(s.query, g, no_tiles, scratch.data()).bounds, truth));
      rows.push_back(s);
    }
  }
  return rows;
}

// Trains a tiny decode network (2 epochs, network_gpus trained) on the FlashAttention GPUs' rows
// of timed_decode_rows (the first 1,200) over `held`, and saves a manifest of that entry with
// `held` as its prior, after `finish` sets the library fields under test.
std::string library_cost_weights(const char* name, const std::vector<KernelSample>& rows, const FittedRoofline& held,
                                 const std::function<void(trainer::FamilyEntry&)>& finish) {
  const TileTable no_tiles;
  const std::string dir = fresh_weights_dir(name, no_tiles);
  auto cfg = tiny_config(Family::kAttnDecode);
  cfg.epochs = 2;
  cfg.prior = true;
  cfg.network_gpus = "trained";
  const std::vector<KernelSample> fa(rows.begin(), rows.begin() + 1200);
  auto r = trainer::train_family(cfg, fa, no_tiles, registry(), dir + "/generation_attention.pt", true, 0, &held);
  trainer::WeightsManifest m;
  m.feature_schema_version = kFeatureSchemaVersion;
  trainer::FamilyEntry e = trained_entry(dir, Family::kAttnDecode, cfg, r, {"NVIDIA A100-SXM4-80GB", "NVIDIA L40S"});
  e.prior = held;
  finish(e);
  m.families["generation_attention"] = e;
  trainer::save_manifest(dir, m);
  return dir;
}

// Rewrites the first "flash_attention: " line of dir's manifest to `value`, and expects loading it
// to fail with one error naming `field`, the library and `why` (the range, by default).
void expect_bad_library_value(const std::string& dir, const std::string& value, const std::string& field,
                              const std::string& why = "out of range") {
  std::string text;
  {
    std::ifstream in(dir + "/manifest.yaml");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t at = text.find("flash_attention: ");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, text.find('\n', at) - at, "flash_attention: " + value);
  {
    std::ofstream out(dir + "/manifest.yaml");
    out << text;
  }
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {field, "flash_attention", why});
}

// The library-cost tests' common part: weights of library_cost_weights with one library field
// set (the config flag `flag` and the manifest map `field` = `values`), the manifest read back
// (the map as written, the flag on, the other library maps empty), and `q` forecast on the H100
// (FlashAttention by its spec, outside network_gpus: the fitted roofline alone, with the
// library's numbers). A training GPU's forecast keeps the shared fit as its base whatever the
// library fields: checked here on the A100-SXM4-80GB.
using LibraryMap = std::map<std::string, double>;
struct LibraryRoundTrip {
  std::string dir;
  predictor::KernelPrediction on_h100;
};
LibraryRoundTrip library_round_trip(const char* name, const std::vector<KernelSample>& rows, const FittedRoofline& held,
                                    bool trainer::PredictorConfig::*flag, LibraryMap trainer::FamilyEntry::*field,
                                    const LibraryMap& values, const KernelQuery& q) {
  LibraryRoundTrip t;
  t.dir = library_cost_weights(name, rows, held, [&](trainer::FamilyEntry& e) {
    e.config.*flag = true;
    e.*field = values;
  });
  const trainer::FamilyEntry back = trainer::load_manifest(t.dir).families.at("generation_attention");
  EXPECT_EQ(back.*field, values);
  EXPECT_TRUE(back.config.*flag);
  for (LibraryMap trainer::FamilyEntry::*other : {&trainer::FamilyEntry::library_cta_ns,
                                                  &trainer::FamilyEntry::library_sm_bytes_per_cycle,
                                                  &trainer::FamilyEntry::library_floor_kcycles})
    if (other != field) EXPECT_TRUE((back.*other).empty());
  predictor::KernelPredictor p(t.dir);
  t.on_h100 = p.predict(std::vector<KernelQuery>{q}, *registry().find("H100-SXM"))[0];
  EXPECT_FALSE(t.on_h100.corrected);
  const auto on_a100 = p.predict(std::vector<KernelQuery>{q}, *registry().find("NVIDIA A100-SXM4-80GB"));
  EXPECT_TRUE(on_a100[0].corrected);
  EXPECT_EQ(on_a100[0].prior_cta_ns, 0.0);
  EXPECT_EQ(on_a100[0].prior_sm_bytes_per_cycle, 0.0);
  EXPECT_EQ(on_a100[0].prior_floor_kcycles, 0.0);
  EXPECT_DOUBLE_EQ(on_a100[0].prior_ms, on_a100[0].base_ms);
  return t;
}
}  // namespace

// The rows a library's own numbers are fitted on (rows_by_library): grouped by the library each
// row's GPU runs (FlashAttention on the A100 and the L40S, TRT-LLM's on the B200), a library of
// fewer than kMinLibraryRows rows left to the shared fit, a GEMM row (no library) in none.
TEST(FittedPrior, RowsByLibraryKeepLibrariesOfEnoughRows) {
  std::vector<KernelSample> rows = timed_decode_rows(decode_floor_and_eta(0.8), 3, {0, 11}, {1, 13});
  ASSERT_EQ(rows.size(), 1800u);  // 600 a GPU: 1,200 FlashAttention, 600 TRT-LLM
  KernelSample gemm;
  gemm.query = gemm_q(64, 4096, 4096, DType::kBf16);
  gemm.device = "NVIDIA A100-SXM4-80GB";
  gemm.latency_ms = 0.02;
  rows.push_back(gemm);
  auto groups = trainer::rows_by_library(rows, registry());
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups.count("flash_attention"), 1u);
  ASSERT_EQ(groups.at("flash_attention").size(), 1200u);
  for (const KernelSample* s : groups.at("flash_attention")) EXPECT_NE(s->device, "NVIDIA B200");
  // 400 more B200 rows: TRT-LLM's 1,000 reach the threshold.
  for (int i = 0; i < 400; ++i) {
    const KernelSample b200 = rows[1200 + i];
    rows.push_back(b200);
  }
  ASSERT_EQ(trainer::kMinLibraryRows, 1000u);
  groups = trainer::rows_by_library(rows, registry());
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups.at("trtllm_mha").size(), 1000u);
  for (const KernelSample* s : groups.at("trtllm_mha")) EXPECT_EQ(s->device, "NVIDIA B200");
  EXPECT_EQ(groups.at("flash_attention").size(), 1200u);
}

// A kernel library's own fitted roofline as the networks' base (config prior_base_by_library):
// the manifest keeps it per library, and refuses a bad one naming it; a query in that library
// (FlashAttention on the A100-SXM4-80GB, a training GPU) takes it as its base and prior_ms, named
// in prior_library; a query in a library without one (TRT-LLM's on the B200) keeps the shared
// fit. The own fit here reads at half the shared fit's DRAM bandwidth, so a memory-bound decode's
// base is slower by nearly 2x (the 5 us floor aside).
TEST(FittedPrior, LibraryOwnFitIsTheBase) {
  const FittedRoofline held = decode_floor_and_eta(0.8);
  const FittedRoofline fa = decode_floor_and_eta(0.4);
  const std::vector<KernelSample> rows = timed_decode_rows(held, 3, {0, 11}, {1, 13});
  const std::string dir = library_cost_weights("libbase_weights", rows, held, [&](trainer::FamilyEntry& e) {
    e.config.prior_base_by_library = true;
    e.library_prior["flash_attention"] = fa;
  });
  const trainer::FamilyEntry back = trainer::load_manifest(dir).families.at("generation_attention");
  EXPECT_TRUE(back.config.prior_base_by_library);
  ASSERT_EQ(back.library_prior.size(), 1u);
  EXPECT_TRUE(back.library_prior.at("flash_attention") == fa);
  EXPECT_TRUE(back.prior == held);

  const KernelQuery q = attention_decode_q(64, 8192, 32, 8, 128, DType::kBf16, DType::kBf16);
  std::vector<float> scratch(num_features(Family::kAttnDecode));
  predictor::KernelPredictor p(dir);
  const GpuSpec& a100 = *registry().find("NVIDIA A100-SXM4-80GB");
  const KernelBounds on_a100 = featurize(q, a100, TileTable{}, scratch.data()).bounds;
  const auto r = p.predict(std::vector<KernelQuery>{q}, a100)[0];
  EXPECT_TRUE(r.corrected);
  EXPECT_EQ(r.prior_library, "flash_attention");
  EXPECT_NEAR(r.prior_ms, s_to_ms(fitted_roofline_s(on_a100, fa)), 1e-12);
  EXPECT_DOUBLE_EQ(r.base_ms, r.prior_ms);
  EXPECT_GT(r.prior_ms, 1.8 * s_to_ms(fitted_roofline_s(on_a100, held)));
  const GpuSpec& b200 = *registry().find("NVIDIA B200");
  const auto t = p.predict(std::vector<KernelQuery>{q}, b200)[0];
  EXPECT_TRUE(t.prior_library.empty());
  EXPECT_NEAR(t.prior_ms, s_to_ms(fitted_roofline_s(featurize(q, b200, TileTable{}, scratch.data()).bounds, held)),
              1e-12);

  std::string text;
  {
    std::ifstream in(dir + "/manifest.yaml");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Own fits without the flag (networks trained on the shared fit): refused, not used.
  const std::string flag = "      prior_base_by_library: true\n";
  const size_t at = text.find(flag);
  ASSERT_NE(at, std::string::npos);
  {
    std::ofstream out(dir + "/manifest.yaml");
    out << std::string(text).erase(at, flag.size());
  }
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); },
                            {"library_prior without config.prior_base_by_library", "retrain"});
  // A bad own fit: one line naming the field and the library.
  const size_t lib = text.find("library_prior:");
  ASSERT_NE(lib, std::string::npos);
  const size_t eta = text.find("eta_memory: ", lib);
  ASSERT_NE(eta, std::string::npos);
  text.replace(eta, text.find('\n', eta) - eta, "eta_memory: 20");
  {
    std::ofstream out(dir + "/manifest.yaml");
    out << text;
  }
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); },
                            {"library_prior: flash_attention", "eta_memory", "out of range"});
  fs::remove_all(dir);
}

// A kernel library's cost per CTA (config prior_cta_by_library). Synthetic decode rows on the
// A100-SXM4-80GB and the L40S (FlashAttention by their specs), 1,200 of them, timed as 5 us +
// max(40 ns x CTAs, their bytes at 80 % of DRAM bandwidth), and 600 rows on the B200 (TRT-LLM's
// library; too few to fit a cost): with that floor and efficiency held, the fitted cost is the
// grid point nearest 40 ns (10^(3 x 64 / 120) = 39.81 ns) for FlashAttention, none for TRT-LLM.
// The manifest keeps it (a bad value is refused naming the field); a GPU outside network_gpus
// whose library has a cost gets it in prior_ms (the H100: 5 us + 16,384 CTAs x 39.81 ns for
// 2,048 sequences x 8 KV heads at one cached token), a training GPU's base does not change.
TEST(FittedPrior, LibraryCostPerCta) {
  const FittedRoofline held = decode_floor_and_eta(0.8);
  FittedRoofline truth = held;
  truth.cta_ns = 40;
  const std::vector<KernelSample> rows = timed_decode_rows(truth, 3, {0, 11}, {1, 13});
  const auto fitted = trainer::fit_library_costs(rows, TileTable{}, registry(), held, true, false);
  ASSERT_EQ(fitted.size(), 1u);
  EXPECT_NEAR(fitted.at("flash_attention").cta_ns, std::pow(10.0, 1.6), 1e-9);
  EXPECT_EQ(fitted.at("flash_attention").sm_bytes_per_cycle, 0.0);
  const std::map<std::string, double> costs = {{"flash_attention", fitted.at("flash_attention").cta_ns}};

  const LibraryRoundTrip t = library_round_trip(
      "cta_weights", rows, held, &trainer::PredictorConfig::prior_cta_by_library, &trainer::FamilyEntry::library_cta_ns,
      costs, attention_decode_q(2048, 2, 32, 8, 128, DType::kBf16, DType::kBf16));
  EXPECT_NEAR(t.on_h100.prior_cta_ns, costs.at("flash_attention"), 1e-12);
  EXPECT_NEAR(t.on_h100.latency_ms, 0.005 + 16384 * costs.at("flash_attention") * 1e-6, 1e-9);

  // A cost out of range in the manifest: one error naming the field.
  expect_bad_library_value(t.dir, "-3", "library_cta_ns");
}

// A family without kernel libraries (GEMM; kernel_library is null for its queries) fits no
// library cost, whatever its rows: there is no library to key one by (before session 69 such rows
// threw std::logic_error, a std::string built from a null name).
TEST(FittedPrior, LibraryCostsNeedALibrary) {
  std::vector<KernelSample> rows;
  for (int i = 0; i < 1200; ++i) {
    KernelSample s;
    s.query = gemm_q(16 + i, 4096, 4096, DType::kBf16);
    s.device = "NVIDIA A100-SXM4-80GB";
    s.latency_ms = 0.05 + 1e-4 * i;
    rows.push_back(s);
  }
  EXPECT_TRUE(trainer::fit_library_costs(rows, TileTable{}, registry(), decode_floor_and_eta(0.8), true, true).empty());
}

// A kernel library's rate of loads per SM (config prior_sm_rate_by_library). Synthetic decode
// rows on the A100-SXM4-80GB and the L40S (FlashAttention by their specs), 1,200 of them, timed
// as 5 us + their bytes at 90 % of DRAM bandwidth and again at 10 bytes per SM-cycle, and 600 on
// the B200 (TRT-LLM's, too few): with the floor and efficiency held, the fitted rate is 10
// (10^(-0.5 + 4 x 36 / 96), a grid point) for FlashAttention and no cost per CTA is added (none
// lowers the loss), none for TRT-LLM. An unseen GPU whose library has the rate gets it in
// prior_ms: on the H100, 64 sequences x 4,096 cached tokens x 8 KV heads of 128 (BF16) read
// 2 x 64 x 4,096 x 8 x 128 x 2 = 1,073,741,824 bytes of cache and write and read 64 x 32 x 128 x
// (2 + 2) = 1,048,576 of query and output; 3,352 GB/s on 132 SMs at 1,980 MHz is 12.825 bytes per
// SM-cycle. A training GPU's base does not change; a bad rate in the manifest is refused.
TEST(FittedPrior, LibraryLoadRatePerSm) {
  const FittedRoofline held = decode_floor_and_eta(0.9);
  FittedRoofline truth = held;
  truth.sm_bytes_per_cycle = 10;
  const std::vector<KernelSample> rows = timed_decode_rows(truth, 5, {0, 9}, {6, 15});
  const TileTable no_tiles;
  const auto rate_only = trainer::fit_library_costs(rows, no_tiles, registry(), held, false, true);
  ASSERT_EQ(rate_only.size(), 1u);
  EXPECT_NEAR(rate_only.at("flash_attention").sm_bytes_per_cycle, 10.0, 1e-9);
  const auto both = trainer::fit_library_costs(rows, no_tiles, registry(), held, true, true);
  ASSERT_EQ(both.size(), 1u);
  EXPECT_NEAR(both.at("flash_attention").sm_bytes_per_cycle, 10.0, 1e-9);
  EXPECT_EQ(both.at("flash_attention").cta_ns, 0.0);

  const std::map<std::string, double> rates = {{"flash_attention", 10.0}};
  const LibraryRoundTrip t = library_round_trip(
      "sm_rate_weights", rows, held, &trainer::PredictorConfig::prior_sm_rate_by_library,
      &trainer::FamilyEntry::library_sm_bytes_per_cycle, rates,
      attention_decode_q(64, 4096, 32, 8, 128, DType::kBf16, DType::kBf16));
  EXPECT_EQ(t.on_h100.prior_sm_bytes_per_cycle, 10.0);
  const double bytes = 1073741824.0 + 1048576.0;
  const double at_dram_ms = bytes / 3352e9 * 1e3;
  const double per_sm_cycle = 3352e9 / (132 * 1980e6);  // 12.825
  EXPECT_NEAR(t.on_h100.latency_ms, 0.005 + at_dram_ms * (1 / 0.9 + per_sm_cycle / 10), 1e-9);

  expect_bad_library_value(t.dir, "0", "library_sm_bytes_per_cycle");
}

// A kernel library's own per-launch floor in SM cycles (config prior_floor_by_library). Synthetic
// decode rows timed with a floor of 0.2 x 10^(72 / 40) = 12.619 thousand cycles at each GPU's
// boost clock (8.95 us on the A100-SXM4-80GB at 1,410 MHz, 5.01 us on the L40S at 2,520) and
// their bytes at 80 % of DRAM bandwidth; the shared fit held at 5 us. The fitted floor is that
// grid point for FlashAttention (1,200 rows), none for TRT-LLM's 600 rows, and no cost per CTA
// (none lowers the loss). An unseen GPU whose library has a floor takes it in place of the
// shared one: the H100 (1,980 MHz), 64 sequences x 4,096 cached tokens x 8 KV heads of 128
// (1,074,790,400 bytes, as in LibraryLoadRatePerSm), 12.619 / 1.98 us + the bytes at 0.8 x 3,352
// GB/s. A training GPU's base keeps the shared floor; a bad floor in the manifest is refused.
TEST(FittedPrior, LibraryFloorInCycles) {
  const FittedRoofline held = decode_floor_and_eta(0.8);
  const double floor_kcycles = 0.2 * std::pow(10.0, 72.0 / 40.0);
  FittedRoofline truth = held;
  truth.floor_us = 0;
  truth.floor_kcycles = floor_kcycles;
  const std::vector<KernelSample> rows = timed_decode_rows(truth, 7, {0, 9}, {0, 13});
  const auto fitted = trainer::fit_library_costs(rows, TileTable{}, registry(), held, true, false, true);
  ASSERT_EQ(fitted.size(), 1u);
  EXPECT_NEAR(fitted.at("flash_attention").floor_kcycles, floor_kcycles, 1e-9);
  EXPECT_EQ(fitted.at("flash_attention").cta_ns, 0.0);
  // Without the flag no library gets a floor (a cost per CTA stands in for the A100's longer one).
  const auto no_floor = trainer::fit_library_costs(rows, TileTable{}, registry(), held, true, false, false);
  ASSERT_EQ(no_floor.size(), 1u);
  EXPECT_EQ(no_floor.at("flash_attention").floor_kcycles, 0.0);
  EXPECT_GT(no_floor.at("flash_attention").cta_ns, 0.0);

  const std::map<std::string, double> floors = {{"flash_attention", floor_kcycles}};
  const LibraryRoundTrip t = library_round_trip(
      "floor_weights", rows, held, &trainer::PredictorConfig::prior_floor_by_library,
      &trainer::FamilyEntry::library_floor_kcycles, floors,
      attention_decode_q(64, 4096, 32, 8, 128, DType::kBf16, DType::kBf16));
  EXPECT_EQ(t.on_h100.prior_floor_kcycles, floor_kcycles);
  const double bytes = 1073741824.0 + 1048576.0;
  EXPECT_NEAR(t.on_h100.latency_ms, floor_kcycles / 1980.0 + bytes / (0.8 * 3352e9) * 1e3, 1e-9);

  expect_bad_library_value(t.dir, "1e7", "library_floor_kcycles");
  expect_bad_library_value(t.dir, "abc", "library_floor_kcycles", "expected a number in kcycles");
}

// The fitted roofline of the synthetic rows (5 us + bytes at 80 % of DRAM bandwidth, on the T4
// and V100) recovers those two numbers; a family trained with it and `network_gpus: trained`
// corrects its training GPUs with the network and forecasts any other GPU by the fitted
// roofline alone (hand check on the A100: 5 us + bytes / (0.8 x 1,555 GB/s)); the manifest
// keeps all of it, and a column named in ignore_features reaches the network as 0.
TEST(FittedPrior, RecoversSyntheticPhysicsAndStaysOnItsTrainingGpus) {
  const auto rows = synthetic_rows(150, 7);
  const TileTable no_tiles;
  const FittedRoofline fit = trainer::fit_family_roofline(rows, no_tiles, registry());
  EXPECT_NEAR(fit.floor_us, 5.0, 0.5);
  EXPECT_NEAR(fit.eta_memory, 0.8, 0.04);
  EXPECT_LT(fit.wave_us, 0.1);

  const std::string dir = fresh_weights_dir("prior_weights", no_tiles);
  auto cfg = tiny_config(Family::kElementwise);
  cfg.prior = true;
  cfg.network_gpus = "trained";
  cfg.ignore_features = {"log2_memory_us"};
  auto r = trainer::train_family(cfg, rows, no_tiles, registry(), dir + "/elementwise.pt", true, 0, &fit);
  EXPECT_LT(r.val_mape_pct, 30.0);
  const size_t mem_col = feature_columns(Family::kElementwise, {"log2_memory_us"}).at(0);
  EXPECT_EQ(r.feature_min.at(mem_col), 0.0);
  EXPECT_EQ(r.feature_max.at(mem_col), 0.0);
  trainer::WeightsManifest m;
  m.feature_schema_version = kFeatureSchemaVersion;
  trainer::FamilyEntry e = trained_entry(dir, Family::kElementwise, cfg, r, {"Tesla T4", "Tesla V100-PCIE-32GB"});
  ASSERT_TRUE(e.has_prior());  // network_gpus: trained fits the roofline
  e.prior = fit;
  m.families["elementwise"] = e;
  trainer::save_manifest(dir, m);
  const auto back = trainer::load_manifest(dir).families.at("elementwise");
  EXPECT_TRUE(back.has_prior());
  EXPECT_TRUE(back.prior == fit);
  EXPECT_EQ(back.config.network_gpus, "trained");
  EXPECT_EQ(back.config.ignore_features, std::vector<std::string>{"log2_memory_us"});

  predictor::KernelPredictor p(dir);
  const KernelQuery q = vec_q(OpKind::kAdd, 1 << 14, 1 << 12);  // 268 MB
  const auto on_t4 = p.predict(std::vector<KernelQuery>{q}, *registry().find("Tesla T4"));
  EXPECT_TRUE(on_t4[0].corrected);
  EXPECT_GT(on_t4[0].prior_ms, 0);
  EXPECT_NE(on_t4[0].latency_ms, on_t4[0].prior_ms);
  const GpuSpec& a100 = *registry().find("NVIDIA A100-PCIE-40GB");
  const auto on_a100 = p.predict(std::vector<KernelQuery>{q}, a100);
  EXPECT_FALSE(on_a100[0].corrected);
  EXPECT_DOUBLE_EQ(on_a100[0].latency_ms, on_a100[0].prior_ms);
  const double hand_ms = 0.005 + 12.0 * (1 << 14) * (1 << 12) / (0.8 * a100.mem_bw_gbps * 1e9) * 1e3;
  EXPECT_NEAR(on_a100[0].latency_ms / hand_ms, 1.0, 0.06);
  EXPECT_STREQ(on_a100[0].bound, "memory");

  // network_gpus: twins also corrects a GPU of a training GPU's die and memory system (here a
  // T4 under another name), from the training GPUs' specs the manifest keeps.
  const GpuSpec& t4 = *registry().find("Tesla T4");
  GpuSpec t4_twin = t4;
  t4_twin.name = "T4-twin";
  t4_twin.cuda_name = "NVIDIA T4 Twin";
  t4_twin.compute_capability = 7.5;
  t4_twin.mem_bw_gbps = t4.mem_bw_gbps * 1.05;
  m.families["elementwise"].config.network_gpus = "twins";
  for (const char* name : {"Tesla T4", "Tesla V100-PCIE-32GB"}) {
    GpuSpec s = *registry().find(name);
    s.compute_capability = std::string(name) == "Tesla T4" ? 7.5 : 7.0;
    m.families["elementwise"].training_gpu_specs.push_back(s);
  }
  m.families["elementwise"].prior.floor_kcycles = 9.5;  // a cycle-based prior round-trips too
  m.families["elementwise"].prior.wave_kcycles = 0.25;
  trainer::save_manifest(dir, m);
  const auto twins_back = trainer::load_manifest(dir).families.at("elementwise");
  EXPECT_TRUE(twins_back.prior == m.families["elementwise"].prior);
  ASSERT_EQ(twins_back.training_gpu_specs.size(), 2u);
  EXPECT_EQ(twins_back.training_gpu_specs[0].cuda_name, "Tesla T4");
  EXPECT_DOUBLE_EQ(twins_back.training_gpu_specs[0].compute_capability, 7.5);
  EXPECT_EQ(twins_back.training_gpu_specs[0].num_sms, t4.num_sms);
  predictor::KernelPredictor pt(dir);
  const auto on_twin = pt.predict(std::vector<KernelQuery>{q}, t4_twin);
  EXPECT_TRUE(on_twin[0].corrected);
  EXPECT_NE(on_twin[0].latency_ms, on_twin[0].prior_ms);
  t4_twin.mem_bw_gbps = t4.mem_bw_gbps * 1.3;  // another memory system: not a twin
  EXPECT_FALSE(pt.predict(std::vector<KernelQuery>{q}, t4_twin)[0].corrected);
  EXPECT_FALSE(pt.predict(std::vector<KernelQuery>{q}, a100)[0].corrected);
  // unseen_prior_weight w: on a GPU outside network_gpus the forecast is the geometric mean
  // prior^w x network^(1-w); w = 0 gives the network's own forecast, w = 1 the prior alone, and
  // the training GPU is unaffected. Checked against the two ends, for a few widths of the row,
  // first with a fitted roofline of no fixed costs (its peak and bandwidth alone).
  const FittedRoofline with_fixed = m.families["elementwise"].prior;
  FittedRoofline no_fixed = with_fixed;
  no_fixed.floor_us = no_fixed.wave_us = no_fixed.floor_kcycles = no_fixed.wave_kcycles = 0;
  auto forecast_with = [&](double w, const GpuSpec& g, const KernelQuery& qh) {
    m.families["elementwise"].config.network_gpus = "trained";
    m.families["elementwise"].config.unseen_prior_weight = w;
    trainer::save_manifest(dir, m);
    return predictor::KernelPredictor(dir).predict(std::vector<KernelQuery>{qh}, g)[0];
  };
  m.families["elementwise"].prior = no_fixed;
  for (int64_t h : {int64_t{1} << 8, int64_t{1} << 12}) {
    const KernelQuery qh = vec_q(OpKind::kAdd, 1 << 14, h);
    const auto net = forecast_with(0.0, a100, qh), alone = forecast_with(1.0, a100, qh), mixed = forecast_with(0.25, a100, qh);
    EXPECT_DOUBLE_EQ(alone.latency_ms, alone.prior_ms);
    EXPECT_NE(net.latency_ms, net.prior_ms);
    EXPECT_NEAR(mixed.latency_ms, std::pow(alone.latency_ms, 0.25) * std::pow(net.latency_ms, 0.75), 1e-9 * mixed.latency_ms);
    EXPECT_FALSE(mixed.corrected);
    EXPECT_DOUBLE_EQ(mixed.network_weight, 0.75);
    EXPECT_DOUBLE_EQ(mixed.fitted_roofline_weight, 0.25);
    EXPECT_DOUBLE_EQ(forecast_with(0.25, t4, qh).latency_ms, forecast_with(1.0, t4, qh).latency_ms);
    EXPECT_DOUBLE_EQ(forecast_with(0.25, t4, qh).network_weight, 1.0);
  }
  // The fitted roofline is this network's base: where its fixed costs (floor, waves) are part of
  // its forecast, they are the network's to correct and the fitted roofline's weight shrinks
  // with their share (blend_weight): none left under a 100 ms floor, the full 0.25 without fixed
  // costs (above), and with the round-tripped prior (5 us, 9.5 thousand cycles, 0.25 a wave) in
  // between, smaller on a 50 MB row than on a 268 MB one, whose bytes outweigh the floor. The
  // forecast is the blend at the weight reported: log(mixed / alone) = (1 - it) log(net / alone).
  {
    const KernelQuery small = vec_q(OpKind::kAdd, 1 << 14, 1 << 8), large = vec_q(OpKind::kAdd, 1 << 14, 1 << 12);
    FittedRoofline all_floor = no_fixed;
    all_floor.floor_us = 1e5;
    m.families["elementwise"].prior = all_floor;
    EXPECT_LT(forecast_with(0.25, a100, small).fitted_roofline_weight, 1e-3);
    EXPECT_DOUBLE_EQ(forecast_with(0.25, a100, small).network_weight, 0.75);  // the family's share, as the basis says
    m.families["elementwise"].prior = with_fixed;
    for (const KernelQuery& qq : {small, large}) {
      const auto net = forecast_with(0.0, a100, qq), alone = forecast_with(1.0, a100, qq), mixed = forecast_with(0.25, a100, qq);
      EXPECT_GT(mixed.fitted_roofline_weight, 0.0);
      EXPECT_LT(mixed.fitted_roofline_weight, 0.25);
      ASSERT_NE(net.latency_ms, alone.latency_ms);
      EXPECT_NEAR(std::log(mixed.latency_ms / alone.latency_ms) / std::log(net.latency_ms / alone.latency_ms),
                  1 - mixed.fitted_roofline_weight, 1e-6);
    }
    EXPECT_LT(forecast_with(0.25, a100, small).fitted_roofline_weight, forecast_with(0.25, a100, large).fitted_roofline_weight);
  }
  m.families["elementwise"].config.network_gpus = "twins";
  m.families["elementwise"].config.unseen_prior_weight = 1.0;
  // A twins manifest without the training GPUs' specs is refused (it was written before them).
  m.families["elementwise"].training_gpu_specs.clear();
  trainer::save_manifest(dir, m);
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"manifest.yaml", "twins needs training_gpu_specs"});
}

// A fallback library's network (train_family with fallback_base): synthetic Triton prefill rows
// on the B200 whose time is a known roofline of the work the kernel does (the window dropped,
// BF16), times a window effect that roofline cannot see (x1 at window 128 up to x1.3 at 1,024).
// The fitted roofline alone forecasts every window alike; with the network trained on the rows
// (its base that roofline on the fallback's work, its features the query as asked) the window
// effect comes back and the rows' error falls. The manifest round-trips the network; an entry
// without the fallback_prior it corrects, or with a network file missing, is refused.
TEST(FallbackNetwork, CorrectsTheFallbackRooflineOnItsOwnRows) {
  const GpuSpec& b200 = registry().resolve("B200");
  const TileTable no_tiles;
  FittedRoofline truth;
  truth.floor_us = 20, truth.eta_compute = 0.04, truth.eta_memory = 0.05;
  auto window_factor = [](int64_t w) { return 1.0 + 0.1 * std::log2(static_cast<double>(w) / 128.0); };
  std::vector<KernelSample> rows;
  std::vector<float> scratch(num_features(Family::kAttnPrefill));
  for (int64_t b : {1, 2, 4, 8})
    for (int64_t seq : {512, 1024, 2048, 4096, 8192})
      for (int64_t h : {16, 32})
        for (int64_t w : {128, 256, 512, 1024})
          for (DType d : {DType::kBf16, DType::kFp8}) {
            KernelSample s;
            s.query = attention_prefill_q(b, seq, h, 8, 192, d, d, w);
            s.device = b200.cuda_name, s.library = "triton";
            ASSERT_TRUE(fallback_library_row(s, b200));
            const KernelBounds kb = featurize(fallback_physics_query(s.query), b200, no_tiles, scratch.data()).bounds;
            s.latency_ms = fitted_roofline_s(kb, truth) * 1e3 * window_factor(w);
            rows.push_back(s);
          }
  ASSERT_GE(rows.size(), trainer::kMinFallbackNetworkRows);
  std::vector<KernelSample> physics = rows;
  for (auto& s : physics) s.query = fallback_physics_query(s.query);
  const FittedRoofline fit = trainer::fit_family_roofline(physics, no_tiles, registry(), false, false, 0.005);

  const std::string dir = fresh_weights_dir("fallback_network_weights", no_tiles);
  auto cfg = tiny_config(Family::kAttnPrefill);
  cfg.prior = true;
  cfg.epochs = 60;
  // The family's own network (any rows do here), then the fallback's.
  const auto main = trainer::train_family(cfg, physics, no_tiles, registry(), dir + "/context_attention.pt", true, 0, &fit);
  const auto fb = trainer::train_family(cfg, rows, no_tiles, registry(), dir + "/context_attention.fallback.pt", true, 0,
                                        &fit, true);
  trainer::WeightsManifest m;
  m.feature_schema_version = kFeatureSchemaVersion;
  trainer::FamilyEntry e = one_network_entry(dir, Family::kAttnPrefill, cfg, main.layer_widths);
  e.training_gpus = {b200.cuda_name};
  e.training_gpu_specs = {b200};
  e.prior = fit;
  e.fallback_prior = fit;
  e.has_fallback_prior = true;
  m.families["context_attention"] = e;
  trainer::save_manifest(dir, m);
  const predictor::KernelPredictor alone(dir);
  auto& fbn = m.families["context_attention"].fallback_network;
  trainer::add_member(fbn, dir, "context_attention.fallback.pt", "context_attention.fallback.tcmlp", fb.layer_widths);
  fbn.feature_min = fb.feature_min, fbn.feature_max = fb.feature_max;
  fbn.rows_train = fb.rows_train, fbn.rows_val = fb.rows_val;
  fbn.member_val_mape_pct = {fb.val_mape_pct};
  fbn.training_gpus = {b200.cuda_name};
  trainer::save_manifest(dir, m);
  const auto back = trainer::load_manifest(dir).families.at("context_attention");
  ASSERT_TRUE(back.has_fallback_network());
  EXPECT_EQ(back.fallback_network.files, fbn.files);
  EXPECT_EQ(back.fallback_network.net_sha256, fbn.net_sha256);
  EXPECT_EQ(back.fallback_network.feature_max, fbn.feature_max);
  EXPECT_EQ(back.fallback_network.training_gpus, fbn.training_gpus);
  const predictor::KernelPredictor with(dir);

  auto q = [](int64_t w) { return attention_prefill_q(4, 4096, 32, 8, 192, DType::kBf16, DType::kBf16, w); };
  const auto a128 = alone.predict(q(128), b200), a1024 = alone.predict(q(1024), b200);
  EXPECT_TRUE(a1024.fallback);
  EXPECT_EQ(a1024.network_weight, 0);
  EXPECT_DOUBLE_EQ(a1024.latency_ms, a128.latency_ms);  // the roofline sees no window
  const auto n128 = with.predict(q(128), b200), n1024 = with.predict(q(1024), b200);
  EXPECT_TRUE(n1024.fallback);
  EXPECT_EQ(n1024.network_weight, 1);
  EXPECT_TRUE(n1024.prior_is_base);
  EXPECT_DOUBLE_EQ(n1024.prior_ms, a1024.prior_ms);
  EXPECT_NEAR(n1024.latency_ms / n128.latency_ms, window_factor(1024), 0.1);
  // Over the rows: the network's error is a fraction of the roofline's alone.
  std::vector<KernelQuery> qs;
  for (const auto& s : rows) qs.push_back(s.query);
  const auto fa = alone.predict(qs, b200), fn = with.predict(qs, b200);
  double ape_alone = 0, ape_net = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    ape_alone += std::abs(fa[i].latency_ms / rows[i].latency_ms - 1) / rows.size();
    ape_net += std::abs(fn[i].latency_ms / rows[i].latency_ms - 1) / rows.size();
  }
  EXPECT_GT(ape_alone, 0.05);
  EXPECT_LT(ape_net, 0.5 * ape_alone);
  // A TRT-LLM head dim on the same GPU is the family's own network's.
  EXPECT_FALSE(with.predict(attention_prefill_q(4, 4096, 32, 8, 128, DType::kBf16, DType::kBf16, 1024), b200).fallback);

  // Refused: a network without the fallback_prior it corrects; a network file gone.
  m.families["context_attention"].has_fallback_prior = false;
  trainer::save_manifest(dir, m);
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); },
                            {"manifest.yaml", "fallback_network", "'fallback_prior' missing"});
  m.families["context_attention"].has_fallback_prior = true;
  trainer::save_manifest(dir, m);
  fs::remove(dir + "/context_attention.fallback.tcmlp");
  expect_error<ConfigError>([&] { predictor::KernelPredictor{dir}; },
                            {"context_attention.fallback.tcmlp", "missing"});
  // `export-weights` writes it again from its checkpoint, with the family's own network.
  EXPECT_EQ(trainer::export_networks(dir), 2);
  EXPECT_DOUBLE_EQ(predictor::KernelPredictor(dir).predict(q(1024), b200).latency_ms, n1024.latency_ms);
}

// The manifest's call_overhead_us round-trips, and a bad entry is one line naming the field.
TEST(Manifest, CallOverheadRoundTripsAndIsChecked) {
  const std::string dir = ::testing::TempDir() + "call_overhead_manifest";
  fs::create_directories(dir);
  trainer::WeightsManifest m;
  m.feature_schema_version = kFeatureSchemaVersion;
  m.call_overhead_us = {{"linear", 20.0}, {"elementwise", 12.5}};
  trainer::save_manifest(dir, m);
  EXPECT_EQ(trainer::load_manifest(dir).call_overhead_us, m.call_overhead_us);
  auto write = [&](const std::string& entry) {
    std::ofstream(dir + "/manifest.yaml") << "feature_schema_version: " << kFeatureSchemaVersion
                                          << "\ntile_table: tiles.csv\ncall_overhead_us: " << entry << "\n";
  };
  write("{memory_op: 3}");
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"call_overhead_us", "'memory_op' is not a network family"});
  write("{ln: 3}");  // an alias is not the family's name
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"call_overhead_us", "'ln'"});
  write("{linear: -3}");
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"call_overhead_us", "'linear'", "0..1000"});
  write("20");
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"call_overhead_us", "expected a map"});
  write("{linear: fast}");
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"call_overhead_us", "'linear'", "0..1000"});
  write("{linear: .nan}");
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"call_overhead_us", "'linear'", "0..1000"});
}

// A writer of predictor configs in a fresh temporary folder: write(body) puts "family: F" and
// the body into <folder>/F.yaml and returns its path.
static std::function<std::string(const std::string&)> config_writer(const std::string& folder, const std::string& family) {
  const std::string dir = ::testing::TempDir() + folder;
  fs::create_directories(dir);
  return [dir, family](const std::string& body) {
    const std::string path = dir + "/" + family + ".yaml";
    std::ofstream(path) << "family: " << family << "\n" << body;
    return path;
  };
}

// memory_op's config holds one field; its manifest entry round-trips the L2 share and refuses
// one out of range, naming the op and the field.
TEST(MemoryOpConfig, OneFieldAndManifestRoundTrip) {
  const std::string dir = ::testing::TempDir() + "memop_cfg";
  const auto write = config_writer("memop_cfg", "memory_op");
  EXPECT_DOUBLE_EQ(trainer::load_predictor_config(write("l2_resident_fraction: 0.5\n")).l2_resident_fraction, 0.5);
  EXPECT_DOUBLE_EQ(trainer::load_predictor_config(write("")).l2_resident_fraction, 0.0);
  EXPECT_NE(trainer::predictor_config_to_yaml(trainer::load_predictor_config(write("l2_resident_fraction: 0.25\n")))
                .find("l2_resident_fraction: 0.25"),
            std::string::npos);
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("l2_resident_fraction: 1.5\n")); },
                            {"memory_op.yaml", "l2_resident_fraction", "outside [0, 1]"});
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("l2_resident_fraction: .nan\n")); },
                            {"l2_resident_fraction"});
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("num_layers: 8\n")); }, {"memory_op.yaml", "num_layers"});
  {  // the field belongs to memory_op alone
    const std::string path = dir + "/gemm.yaml";
    std::ofstream(path) << "family: gemm\nl2_resident_fraction: 0.5\n";
    expect_error<ConfigError>([&] { trainer::load_predictor_config(path); }, {"gemm.yaml", "l2_resident_fraction"});
  }
  trainer::WeightsManifest m;
  m.feature_schema_version = kFeatureSchemaVersion;
  MemoryOpCoeffs c;
  c.floor_kcycles = 2, c.dram_factor = 0.8, c.sm_cycles_per_byte = 0.1, c.l2_resident_fraction = 0.5, c.rows = 10;
  c.thread_cycles_per_byte = 250;
  m.memory_ops.ops["rmsnorm"] = c;
  m.memory_ops.data_hash = "x", m.memory_ops.fitted_at = "t", m.memory_ops.training_gpus = {"NVIDIA L4"};
  trainer::save_manifest(dir, m);
  EXPECT_DOUBLE_EQ(trainer::load_manifest(dir).memory_ops.ops.at("rmsnorm").l2_resident_fraction, 0.5);
  EXPECT_DOUBLE_EQ(trainer::load_manifest(dir).memory_ops.ops.at("rmsnorm").thread_cycles_per_byte, 250);
  EXPECT_DOUBLE_EQ(trainer::load_manifest(dir).memory_ops.ops.at("rmsnorm").floor_kcycles, 2);
  auto entry = [&](const std::string& fields) {
    std::ofstream(dir + "/manifest.yaml") << "feature_schema_version: " << kFeatureSchemaVersion
                                          << "\ntile_table: tiles.csv\nmemory_ops:\n  coefficients:\n    rmsnorm: {floor_kcycles: 2, "
                                             "dram_factor: 0.8, sm_cycles_per_byte: 0.1, rows: 10"
                                          << fields << "}\n  data_hash: x\n  training_gpus: [NVIDIA L4]\n  fitted_at: t\n";
  };
  entry("");  // written before session 26: every byte at DRAM speed, and (session 40) no latency-bound term
  EXPECT_DOUBLE_EQ(trainer::load_manifest(dir).memory_ops.ops.at("rmsnorm").l2_resident_fraction, 0.0);
  EXPECT_DOUBLE_EQ(trainer::load_manifest(dir).memory_ops.ops.at("rmsnorm").thread_cycles_per_byte, 0.0);
  entry(", l2_resident_fraction: 2");
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"memory_ops", "'rmsnorm'", "l2_resident_fraction", "0..1"});
  entry(", thread_cycles_per_byte: -3");
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"memory_ops", "'rmsnorm'", "thread_cycles_per_byte"});
  // Fitted before session 77 (a floor in microseconds): refused with one line, not read as cycles.
  std::ofstream(dir + "/manifest.yaml") << "feature_schema_version: " << kFeatureSchemaVersion
                                        << "\ntile_table: tiles.csv\nmemory_ops:\n  coefficients:\n    rmsnorm: {floor_us: 2, "
                                           "dram_factor: 0.8, sm_cycles_per_byte: 0.1, rows: 10}\n  data_hash: x\n  "
                                           "training_gpus: [NVIDIA L4]\n  fitted_at: t\n";
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"memory_ops", "'rmsnorm'", "floor_us", "retrain"});
  // Rows whose latency falls as the bytes grow (a loaded CPU's timings, say): the fit is a floor
  // alone, and the manifest `train` writes with it loads. All four coefficients 0 is refused.
  const GpuSpec& l4 = registry().resolve("L4");
  const MemoryOpCoeffs floor_only = fit_memory_op({{&l4, 1e6, 3e-6}, {&l4, 2e6, 2e-6}, {&l4, 3e6, 1e-6}});
  ASSERT_GT(floor_only.floor_kcycles, 0);
  ASSERT_EQ(floor_only.dram_factor + floor_only.sm_cycles_per_byte + floor_only.thread_cycles_per_byte, 0.0);
  m.memory_ops.ops["sampler"] = floor_only;
  trainer::save_manifest(dir, m);
  EXPECT_DOUBLE_EQ(trainer::load_manifest(dir).memory_ops.ops.at("sampler").floor_kcycles, floor_only.floor_kcycles);
  m.memory_ops.ops["sampler"].floor_kcycles = 0;
  trainer::save_manifest(dir, m);
  expect_error<ConfigError>([&] { trainer::load_manifest(dir); }, {"memory_ops", "'sampler'", "not all four 0"});
}

// Predictor-config fields of the prior: one clear line for each misuse.
TEST(FittedPrior, ConfigErrors) {
  const auto write = config_writer("prior_cfg", "generation_attention");
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("prior: true\nnetwork_gpus: some\n")); },
                            {"network_gpus", "expected all, trained or twins"});
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("prior: true\nprior_floor: hours\n")); },
                            {"prior_floor", "expected us or cycles"});
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("prior_floor: cycles\n")); },
                            {"prior_floor", "needs a fitted roofline"});
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("prior_floor_by_library: true\n")); },
                            {"prior_floor_by_library", "needs a fitted roofline"});
  expect_error<ConfigError>(
      [&] { trainer::load_predictor_config(write("network_gpus: trained\nprior_base_by_library: true\n")); },
      {"prior_base_by_library", "needs the fitted roofline as the networks' base"});
  EXPECT_NE(trainer::predictor_config_to_yaml(
                trainer::load_predictor_config(write("prior: true\nprior_base_by_library: true\n")))
                .find("prior_base_by_library: true"),
            std::string::npos);
  EXPECT_NE(trainer::predictor_config_to_yaml(
                trainer::load_predictor_config(write("prior: true\nprior_floor_by_library: true\n")))
                .find("prior_floor_by_library: true"),
            std::string::npos);
  // A fitted roofline only for the GPUs outside network_gpus (the network's base stays the
  // bound): network_gpus without prior, and the weight of that roofline there.
  const auto fallback =
      trainer::load_predictor_config(write("network_gpus: twins\nprior_floor: cycles\nunseen_prior_weight: 0.25\n"));
  EXPECT_FALSE(fallback.prior);
  EXPECT_TRUE(fallback.fits_roofline());
  EXPECT_DOUBLE_EQ(fallback.unseen_prior_weight, 0.25);
  EXPECT_NE(trainer::predictor_config_to_yaml(fallback).find("unseen_prior_weight: 0.25"), std::string::npos);
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("prior: true\nunseen_prior_weight: 0.5\n")); },
                            {"unseen_prior_weight", "needs network_gpus"});
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("network_gpus: trained\nunseen_prior_weight: 1.5\n")); },
                            {"unseen_prior_weight': value 1.5 outside [0, 1]"});
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("network_gpus: trained\nunseen_prior_weight: .nan\n")); },
                            {"unseen_prior_weight': value ", "nan outside [0, 1]"});
  const auto cyc = trainer::load_predictor_config(write("prior: true\nprior_floor: cycles\n"));
  EXPECT_EQ(cyc.prior_floor, "cycles");
  EXPECT_NE(trainer::predictor_config_to_yaml(cyc).find("prior_floor: cycles"), std::string::npos);
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("prior: true\nignore_features: [log2_m]\n")); },
                            {"ignore_features", "'log2_m' is not a feature of family generation_attention"});
  expect_error<ConfigError>([&] { trainer::load_predictor_config(write("prior: true\nlaunch_floor: true\n")); },
                            {"launch_floor", "prior", "choose one"});
  const auto ok = trainer::load_predictor_config(write("prior: true\nnetwork_gpus: trained\nignore_features: [log2_ctx]\n"));
  EXPECT_TRUE(ok.prior);
  EXPECT_EQ(ok.network_gpus, "trained");
  EXPECT_NE(trainer::predictor_config_to_yaml(ok).find("network_gpus: trained"), std::string::npos);
}

TEST(Mlp, ShapesAndNormalizer) {
  trainer::Mlp m(4, 16, 8);
  int linear_layers = 0;
  for (const auto& mod : m->net->children()) linear_layers += mod->as<torch::nn::Linear>() != nullptr;
  EXPECT_EQ(linear_layers, 8);
  auto x = torch::randn({10, 4}) * 5 + 3;
  m->fit_normalizer(x);
  auto z = (x - m->mean) * m->inv_std;
  EXPECT_NEAR(z.mean().item<double>(), 0.0, 1e-5);
  EXPECT_EQ(m->forward(x).sizes(), (std::vector<int64_t>{10}));
}

TEST(Mlp, SmapeLoss) {
  auto y = torch::tensor({1.0, 2.0});
  EXPECT_NEAR(trainer::smape_loss(y, y).item<double>(), 0.0, 1e-9);
  // |3-1| * 2 / (3+1) = 1 ; second term 0 -> mean 0.5
  EXPECT_NEAR(trainer::smape_loss(torch::tensor({3.0, 2.0}), y).item<double>(), 0.5, 1e-6);
}

TEST(Trainer, TinyTrainingReducesValidationErrorAndKeepsBestCheckpoint) {
  trainer::FamilyResult r;
  std::string dir = tiny_weights_dir("tiny_train", &r);
  EXPECT_EQ(r.epochs_run, 40);
  EXPECT_LT(r.val_mape_pct, r.first_val_mape_pct);
  EXPECT_LT(r.val_mape_pct, 25.0);
  EXPECT_GE(r.best_epoch, 1);
  EXPECT_TRUE(fs::exists(dir + "/elementwise.pt"));
  EXPECT_FALSE(fs::exists(dir + "/elementwise.pt.tmp"));
}

TEST(Trainer, RejectsRowsOfAnotherFamilyAndUnknownDevices) {
  TileTable tiles;
  auto rows = synthetic_rows(10, 1);
  rows[3].query.op = OpKind::kSoftmax;
  expect_error<DataError>([&] {
    trainer::train_family(tiny_config(Family::kElementwise), rows, tiles, registry(),
                          ::testing::TempDir() + "x.pt", true);
  }, {"does not belong to family elementwise"});
  rows = synthetic_rows(10, 1);
  rows[0].device = "Mystery GPU";
  rows[0].file = "f.csv";
  rows[0].line = 12;
  expect_error<DataError>([&] {
    trainer::train_family(tiny_config(Family::kElementwise), rows, tiles, registry(),
                          ::testing::TempDir() + "x.pt", true);
  }, {"Device", "Mystery GPU"});
}

TEST(Predictor, LoadsTrainedWeightsAndForecasts) {
  std::string dir = tiny_weights_dir("tiny_predict");
  predictor::KernelPredictor p(dir);
  EXPECT_TRUE(p.has_family(Family::kElementwise));
  EXPECT_FALSE(p.has_family(Family::kBmm));
  const GpuSpec& t4 = registry().resolve("T4");
  KernelQuery q;
  q.op = OpKind::kAdd;
  q.b = 4096, q.h = 1024;
  auto r = p.predict(q, t4);
  const double truth = 0.005 + s_to_ms(transfer_s(query_bytes(q), 0.8 * t4.mem_bw_gbps));
  EXPECT_NEAR(r.latency_ms / truth, 1.0, 0.25);
  EXPECT_NEAR(r.utilisation, r.base_ms / r.latency_ms, 1e-9);
  // Batched and single forecasts agree.
  auto batch = p.predict(std::vector<KernelQuery>{q, q}, t4);
  EXPECT_NEAR(batch[1].latency_ms, r.latency_ms, 1e-6 * r.latency_ms);  // float32 BLAS: batch size changes the summation order
  KernelQuery g;
  g.op = OpKind::kBmm;
  g.b = g.m = g.n = g.k = 64;
  expect_error<ConfigError>([&] { p.predict(g, t4); }, {"no trained weights for family 'bmm'"});
}

TEST(Predictor, EnsembleAveragesMembersInLogSpace) {
  std::string dir = tiny_weights_dir("tiny_ensemble");
  predictor::KernelPredictor one(dir);
  KernelQuery q = vec_q(OpKind::kAdd, 2048, 512);
  const GpuSpec& v100 = registry().resolve("V100-PCIE-32GB");
  const double single = one.predict(q, v100).latency_ms;
  // A second, different member: the ensemble forecast is the geometric mean of the two.
  auto cfg = tiny_config(Family::kElementwise);
  cfg.seed = 99;
  TileTable tiles;
  trainer::train_family(cfg, synthetic_rows(150, 7), tiles, registry(), dir + "/elementwise.s1.pt", true);
  auto m = trainer::load_manifest(dir);
  auto& e = m.families["elementwise"];
  const auto widths = e.layer_widths[0];
  e.files.clear(), e.sha256.clear(), e.layer_widths.clear(), e.net_files.clear(), e.net_sha256.clear();
  trainer::add_member(e, dir, "elementwise.s1.pt", "elementwise.s1.tcmlp", widths);
  trainer::save_manifest(dir, m);
  const double other = predictor::KernelPredictor(dir).predict(q, v100).latency_ms;
  e.files.clear(), e.sha256.clear(), e.layer_widths.clear(), e.net_files.clear(), e.net_sha256.clear();
  trainer::add_member(e, dir, "elementwise.pt", "elementwise.tcmlp", widths);
  trainer::add_member(e, dir, "elementwise.s1.pt", "elementwise.s1.tcmlp", widths);
  trainer::save_manifest(dir, m);
  const double both = predictor::KernelPredictor(dir).predict(q, v100).latency_ms;
  EXPECT_NE(single, other);
  EXPECT_NEAR(both, std::sqrt(single * other), 1e-6 * both);
  auto r = predictor::KernelPredictor(dir).predict(q, v100);
  EXPECT_NEAR(r.member_min_ms, std::min(single, other), 1e-6 * both);
  EXPECT_NEAR(r.member_max_ms, std::max(single, other), 1e-6 * both);
}

TEST(Predictor, RefusesOtherSchemaAndMissingFiles) {
  std::string dir = tiny_weights_dir("tiny_schema");
  auto m = trainer::load_manifest(dir);
  m.feature_schema_version = kFeatureSchemaVersion - 1;
  trainer::save_manifest(dir, m);
  expect_error<ConfigError>([&] { predictor::KernelPredictor p(dir); }, {"manifest.yaml", "schema"});
  expect_error<ConfigError>([&] { predictor::KernelPredictor p("/nonexistent/weights"); }, {"manifest"});
  std::string dir2 = tiny_weights_dir("tiny_missing");
  fs::remove(dir2 + "/elementwise.tcmlp");
  expect_error<ConfigError>([&] { predictor::KernelPredictor p(dir2); }, {"elementwise.tcmlp", "missing"});
  std::string dir3 = tiny_weights_dir("tiny_corrupt");
  std::ofstream(dir3 + "/elementwise.tcmlp") << "not a network";
  // Network files are read at the family's first forecast.
  const KernelQuery add = vec_q(OpKind::kAdd, 2048, 512);
  const GpuSpec& t4 = registry().resolve("T4");
  expect_error<ConfigError>([&] { predictor::KernelPredictor(dir3).predict(add, t4); }, {"elementwise.tcmlp", "sha256"});
}

// Weights are verified at load: a flipped byte, a member copied from another network and an
// edited architecture in manifest.yaml are each refused with one line naming the file.
TEST(Predictor, VerifiesChecksumsAndArchitectureAtLoad) {
  const std::string dir = tiny_weights_dir("tiny_verify");
  const KernelQuery add = vec_q(OpKind::kAdd, 2048, 512);
  const GpuSpec& t4 = registry().resolve("T4");
  EXPECT_GT(predictor::KernelPredictor(dir).predict(add, t4).latency_ms, 0);  // the untouched folder loads
  const std::string pt = dir + "/elementwise.tcmlp";
  const std::string original = read_file(pt);

  std::string flipped = original;
  flipped[flipped.size() / 2] ^= 0x01;
  { std::ofstream(pt, std::ios::binary) << flipped; }
  expect_error<ConfigError>([&] { predictor::KernelPredictor(dir).predict(add, t4); }, {"elementwise.tcmlp", "sha256"});

  // Another trained network (other seed, same architecture) copied over the member.
  auto cfg = tiny_config(Family::kElementwise);
  cfg.seed = 5;
  TileTable tiles;
  trainer::train_family(cfg, synthetic_rows(60, 3), tiles, registry(), dir + "/other.pt", true);
  fs::copy_file(dir + "/other.tcmlp", pt, fs::copy_options::overwrite_existing);
  expect_error<ConfigError>([&] { predictor::KernelPredictor(dir).predict(add, t4); }, {"elementwise.tcmlp", "sha256"});

  { std::ofstream(pt, std::ios::binary) << original; }
  auto m = trainer::load_manifest(dir);
  m.families["elementwise"].config.num_layers += 1;
  trainer::save_manifest(dir, m);
  expect_error<ConfigError>([&] { predictor::KernelPredictor p(dir); }, {"manifest.yaml", "num_layers", "layer_widths"});
}

// A failed training run leaves the previous weights folder exactly as it was.
TEST(Trainer, FailedRunLeavesWeightsFolderUnchanged) {
  const std::string dir = tiny_weights_dir("tiny_staging");
  std::map<std::string, std::string> before;
  for (const auto& e : fs::directory_iterator(dir)) before[e.path().filename().string()] = read_file(e.path().string());
  // Header-only collected data: no rows to train on.
  const std::string data = ::testing::TempDir() + "tiny_staging_data";
  fs::remove_all(data);
  fs::create_directories(data);
  {
    std::ofstream f(data + "/softmax.csv");
    f << "OPName,Latency,Device,B,H\n";
  }
  trainer::TrainOptions opt;
  opt.data_dirs = {data};
  opt.out_dir = dir;
  opt.predictor_config_dir = std::string(TILECAST_SOURCE_DIR) + "/configs/predictors";
  opt.quiet = true;
  expect_error<DataError>([&] { trainer::run_training(opt, registry()); }, {"too few rows", "softmax"});
  std::map<std::string, std::string> after;
  for (const auto& e : fs::directory_iterator(dir)) after[e.path().filename().string()] = read_file(e.path().string());
  EXPECT_EQ(before, after);
  EXPECT_FALSE(fs::exists(fs::path(dir).parent_path() / ".tiny_staging.staging"));
  // A non-empty folder that is not a weights folder is refused without --force.
  opt.out_dir = data;
  expect_error<ConfigError>([&] { trainer::run_training(opt, registry()); }, {"would overwrite the input"});
  const std::string foreign = ::testing::TempDir() + "tiny_staging_foreign";
  fs::create_directories(foreign);
  std::ofstream(foreign + "/notes.txt") << "mine";
  opt.out_dir = foreign;
  expect_error<ConfigError>([&] { trainer::run_training(opt, registry()); }, {"not a tilecast weights folder", "--force"});
  EXPECT_EQ(read_file(foreign + "/notes.txt"), "mine");
}

// Retraining one family keeps the others' manifest entries, even when the retrained family's
// entry cannot be read any more (its features changed); a kept entry that cannot be read
// stops the run instead of being dropped.
TEST(Trainer, PartialRetrainKeepsTheOtherFamilies) {
  const std::string dir = tiny_weights_dir("tiny_partial");
  const std::string data = ::testing::TempDir() + "tiny_partial_data";
  fs::remove_all(data);
  fs::create_directories(data);
  {
    std::ofstream f(data + "/softmax.csv");
    f << "OPName,Latency,Device,B,H\n";
    for (int i = 1; i <= 40; ++i) f << "softmax," << 0.01 * i << ",Tesla T4," << 64 * i << "," << 32 * (i % 7 + 1) << "\n";
  }
  auto add_stale_entry = [&](const std::string& fam) {
    std::ofstream m(dir + "/manifest.yaml", std::ios::app);
    m << "  " << fam << ":\n    files: [x.pt]\n    sha256: [0]\n    layer_widths: [[1, 1]]\n    features: [old_feature]\n";
  };
  add_stale_entry("softmax");  // an entry from an older feature schema, about to be retrained
  trainer::TrainOptions opt;
  opt.data_dirs = {data};
  opt.out_dir = dir;
  opt.predictor_config_dir = std::string(TILECAST_SOURCE_DIR) + "/configs/predictors";
  opt.families = {Family::kSoftmax};
  opt.epochs = 1;
  opt.quiet = true;
  // A sub-folder (the AMD set lives in weights/amd) survives the retrain of its parent.
  fs::create_directories(dir + "/amd");
  { std::ofstream(dir + "/amd/marker") << "kept"; }
  trainer::run_training(opt, registry());
  EXPECT_EQ(read_file(dir + "/amd/marker"), "kept");
  {  // The training GPU's spec as training read it, for forecasts on GPUs that better it.
    const GpuSpec recorded = load_gpu_yaml(dir + "/" + trainer::kRecordedGpuDir + "/T4.yaml");
    EXPECT_EQ(recorded.cuda_name, "Tesla T4");
    EXPECT_EQ(recorded.num_sms, registry().resolve("T4").num_sms);
    EXPECT_DOUBLE_EQ(recorded.mem_bw_gbps, registry().resolve("T4").mem_bw_gbps);
  }
  {  // The host time per call of the data's timings is not learned by train: a retrain keeps it.
    auto mo = trainer::load_manifest(dir);
    mo.call_overhead_us = {{"softmax", 15.0}, {"elementwise", 12.0}};
    trainer::save_manifest(dir, mo);
    trainer::run_training(opt, registry());
    EXPECT_EQ(trainer::load_manifest(dir).call_overhead_us, mo.call_overhead_us);
    mo = trainer::load_manifest(dir);
    mo.call_overhead_us.clear();
    trainer::save_manifest(dir, mo);
  }
  auto m = trainer::load_manifest(dir);
  ASSERT_EQ(m.families.count("elementwise"), 1u);
  ASSERT_EQ(m.families.count("softmax"), 1u);
  EXPECT_EQ(m.families["softmax"].features, feature_names(Family::kSoftmax));
  predictor::KernelPredictor p(dir);
  EXPECT_TRUE(p.has_family(Family::kElementwise));
  // A NeuSight family records its training range and only reports queries outside it: the
  // forecast equals the one made without any range (no clamp).
  const auto& sm = m.families["softmax"];
  ASSERT_EQ(sm.feature_min.size(), feature_names(Family::kSoftmax).size());
  EXPECT_FALSE(sm.clamp_features);
  const KernelQuery far = vec_q(OpKind::kSoftmax, 1 << 20, 4096);  // rows far beyond 40 x 64
  const GpuSpec& t4 = registry().resolve("T4");
  const auto with_range = p.predict(far, t4);
  EXPECT_FALSE(with_range.out_of_range.empty());
  EXPECT_FALSE(with_range.clamped);
  {
    auto m2 = m;
    m2.families["softmax"].feature_min.clear();
    m2.families["softmax"].feature_max.clear();
    trainer::save_manifest(dir, m2);
    const auto without = predictor::KernelPredictor(dir).predict(far, t4);
    EXPECT_TRUE(without.out_of_range.empty());
    EXPECT_DOUBLE_EQ(without.latency_ms, with_range.latency_ms);
    trainer::save_manifest(dir, m);
  }
  // Now a kept family's entry (layernorm, not retrained) is unreadable: the run stops and
  // installs nothing.
  add_stale_entry("layernorm");
  const std::string before = read_file(dir + "/manifest.yaml");
  expect_error<ConfigError>([&] { trainer::run_training(opt, registry()); },
                            {"manifest.yaml", "layernorm", "retrain them too"});
  EXPECT_EQ(read_file(dir + "/manifest.yaml"), before);
}

TEST(Eval, ReportsPerOpAndDeviceAndRejectsUnknownGpus) {
  std::string dir = tiny_weights_dir("tiny_eval");
  predictor::KernelPredictor p(dir);
  // Only the elementwise rows of the fixture can be forecast by the tiny model.
  std::string csv = ::testing::TempDir() + "elem_only.csv";
  {
    std::ifstream in(data_path("vec_small.csv"));
    std::ofstream out(csv);
    std::string line;
    int n = 0;
    while (std::getline(in, line))
      if (n++ < 3) out << line << "\n";
  }
  auto rep = predictor::eval_kernels({csv}, p, registry());
  EXPECT_EQ(rep.overall.rows, 2);
  EXPECT_EQ(rep.by_op.at("elementwise").rows, 2);
  EXPECT_EQ(rep.by_device.at("Tesla V100-PCIE-32GB").rows, 2);
  EXPECT_GT(rep.overall.roofline_mape_pct(), 0);
  auto json = predictor::eval_report_json(rep);
  EXPECT_NE(json.find("\"by_op\""), std::string::npos);
  EXPECT_NE(json.find("\"roofline_mape_pct\""), std::string::npos);
  expect_error<DataError>([&] { predictor::eval_kernels({data_path("bad/unknown_gpu.csv")}, p, registry()); },
                          {"unknown_gpu.csv:2", "Imaginary GPU 9000"});
}

// Hand-derived: APEs, their mean and the signed bias (median forecast / measured).
TEST(Eval, ErrorStatsBiasAndPrior) {
  predictor::ErrorStats s;
  s.add(2.0, 1.0, 1.0);         // forecast twice the measured: APE 100 %, roofline exact
  s.add(1.0, 1.0, 2.0, false);  // half: APE 50 %, roofline 50 %, an implausible row
  s.add(3.0, 6.0, 3.0, true, 4.5);  // exact; the prior 50 % off, roofline 100 %
  EXPECT_EQ(s.rows, 3);
  EXPECT_DOUBLE_EQ(s.mape_pct(), 50.0);
  EXPECT_DOUBLE_EQ(s.plausible_mape_pct(), 50.0);  // (100 + 0) / 2
  EXPECT_DOUBLE_EQ(s.roofline_mape_pct(), 50.0);   // (0 + 50 + 100) / 3
  EXPECT_DOUBLE_EQ(s.bias_median(), 1.0);          // ratios 2, 0.5, 1
  EXPECT_EQ(s.prior.rows, 1);
  EXPECT_DOUBLE_EQ(s.prior.mape_pct(), 50.0);
  s.add(4.0, 1.0, 1.0);  // ratios 0.5, 1, 2, 4: the median is the mean of the middle two
  EXPECT_DOUBLE_EQ(s.bias_median(), 1.5);
  EXPECT_DOUBLE_EQ(predictor::ErrorStats().bias_median(), 0.0);
}

TEST(BundledWeights, ForecastEveryFamilyOnAnUnseenGpu) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(dir + "/manifest.yaml")) << "bundled weights missing from " << dir;
  predictor::KernelPredictor p(dir);
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  for (const char* spec : {"bmm:64,512,64,512", "linear:1,4096,1280,3840", "gelu:8192,5120",
                           "softmax:1280,1024", "ln:8192,1280"}) {
    std::string s(spec);
    auto colon = s.find(':');
    OpKind op = op_kind_from_string(s.substr(0, colon));
    KernelQuery small = parse_query(op, s.substr(colon + 1));
    KernelQuery big = small;
    big.b *= 8;
    auto r = p.predict(std::vector<KernelQuery>{small, big}, h100);
    EXPECT_TRUE(std::isfinite(r[0].latency_ms)) << spec;
    EXPECT_GT(r[0].latency_ms, 0) << spec;
    EXPECT_GT(r[1].latency_ms, r[0].latency_ms) << spec << ": 8x the work must take longer";
  }
}

// The bundled tensor-core GEMM model on a GPU it never saw (Hopper): more tokens take longer,
// FP8 beats BF16 on a large compute-bound GEMM, and a query far outside the training range
// is clamped and reported.
TEST(BundledWeights, TensorCoreGemmOnAnUnseenGpu) {
  predictor::KernelPredictor p(trainer::weights_dir());
  ASSERT_TRUE(p.has_family(Family::kGemm));
  const GpuSpec& h200 = registry().resolve("NVIDIA H200");
  auto r = p.predict(std::vector<KernelQuery>{gemm_q(64, 4096, 4096, DType::kBf16),
                                              gemm_q(8192, 4096, 4096, DType::kBf16),
                                              gemm_q(8192, 8192, 8192, DType::kBf16),
                                              gemm_q(8192, 8192, 8192, DType::kFp8)},
                     h200);
  for (const auto& x : r) EXPECT_TRUE(std::isfinite(x.latency_ms) && x.latency_ms > 0);
  EXPECT_GT(r[1].latency_ms, r[0].latency_ms);
  EXPECT_LT(r[3].latency_ms, r[2].latency_ms);
  // 8192^3 BF16 at H200's 989 TFLOP/s is 1.11 ms at peak: the forecast may not beat the roofline.
  EXPECT_GT(r[2].latency_ms, 1.11);
  EXPECT_TRUE(r[2].out_of_range.empty());
  auto far = p.predict(gemm_q(int64_t{1} << 26, 8192, 8192, DType::kBf16), h200);
  EXPECT_FALSE(far.out_of_range.empty());
  // Attention: a prompt twice as long costs more; an FP8 KV cache reads half the bytes of a
  // long BF16 one and is forecast faster; no forecast beats the compute or memory roofline
  // by more than the training data's 1.5x slack.
  auto a = p.predict(std::vector<KernelQuery>{
                         attention_prefill_q(1, 4096, 32, 8, 128, DType::kBf16, DType::kBf16),
                         attention_prefill_q(1, 8192, 32, 8, 128, DType::kBf16, DType::kBf16),
                         attention_decode_q(64, 8192, 32, 8, 128, DType::kBf16, DType::kBf16),
                         attention_decode_q(64, 8192, 32, 8, 128, DType::kBf16, DType::kFp8)},
                     h200);
  EXPECT_GT(a[1].latency_ms, a[0].latency_ms);
  EXPECT_LT(a[3].latency_ms, a[2].latency_ms);
  for (const auto& x : a) EXPECT_GT(x.latency_ms * 1.5, x.roofline_ms);
  // No forecast beats the compute peak: an 8,192-token causal prompt, 32 heads of 128, is 4 x 32
  // x 128 x (8,192 x 8,193 / 2) = 5.4978e11 FLOPs, 0.55566 ms at the H200's 989.4 TFLOP/s, the
  // sheet's, rated at 1,830 MHz: inside a sustained load; a kernel alone runs at the 1,980 MHz
  // boost clock. A forecast the network put below it is raised to it and says so (at_peak).
  const double prompt_flops = 4.0 * 32 * 128 * (8192.0 * 8193 / 2);
  EXPECT_NEAR(a[1].peak_ms, prompt_flops / (989.4e12 * 1980 / 1830) * 1e3, 1e-9);
  KernelQuery in_load = attention_prefill_q(1, 8192, 32, 8, 128, DType::kBf16, DType::kBf16);
  in_load.sustained = true;
  const auto sustained = p.predict(in_load, h200);
  EXPECT_NEAR(sustained.peak_ms, prompt_flops / 989.4e12 * 1e3, 1e-9);
  EXPECT_GT(sustained.latency_ms, a[1].latency_ms);
  a.push_back(p.predict(attention_prefill_q(2, 16384, 64, 8, 256, DType::kBf16, DType::kBf16), h200));
  for (const auto& x : a) {
    EXPECT_GE(x.latency_ms, x.peak_ms);
    EXPECT_GE(x.member_min_ms, x.peak_ms);
    if (x.at_peak) EXPECT_DOUBLE_EQ(x.latency_ms, x.peak_ms);
  }
  for (const auto& x : r) EXPECT_GE(x.latency_ms, x.peak_ms);
  // Per-row results (eval-kernels --rows-csv) carry each row's dtype.
  std::vector<predictor::KernelEvalRow> rows;
  predictor::eval_kernels({data_path("aiconfigurator_gemm_small.csv")}, p, registry(), &rows, true);
  std::multiset<std::string> dtypes;
  for (const auto& row : rows) dtypes.insert(row.dtype);
  EXPECT_EQ(dtypes, (std::multiset<std::string>{"bf16", "fp8", "fp8_static", "nvfp4", "fp8_block"}));
}

namespace {
// The graph of the host-time tests: GPT-2 Large training, batch 4 x 256, two microbatches.
OpGraph gpt2_in_two_microbatches() {
  ModelConfig m = load_model_config("gpt2-large", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  Parallelism par;
  par.microbatches = 2;
  return build_op_graph(m, 4, 256, Mode::kTraining, par);
}
// The calls of a graph that `keep` selects, counted from the graph itself (every op's forward,
// backward and accumulation calls, times its count and the microbatches); their queries too.
int64_t count_calls(const OpGraph& g, const std::function<bool(const KernelCall&)>& keep,
                    std::vector<KernelQuery>* queries = nullptr) {
  int64_t n = 0;
  for (const auto& op : g.ops)
    for (const auto* calls : {&op.fw, &op.bw, &op.acc})
      for (const auto& c : *calls)
        if (keep(c)) {
          n += op.count;
          if (queries) queries->push_back(c.query);
        }
  return n * g.par.microbatches;
}
}  // namespace

// Host gap per launch (predict --host-gap-us): every kernel and copy adds the gap.
TEST(BundledWeights, HostGapAddsOneGapPerLaunch) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(dir + "/manifest.yaml")) << "bundled weights missing from " << dir;
  predictor::KernelPredictor p(dir);
  const GpuSpec& gpu = registry().resolve("V100-PCIE-32GB");
  const OpGraph g = gpt2_in_two_microbatches();
  const int64_t launches = count_calls(g, [](const KernelCall& c) { return c.collective != Collective::kAllReduce; });
  const auto none = predictor::forecast_model(g, gpu, p);
  const auto gap = predictor::forecast_model(g, gpu, p, 10.0);
  EXPECT_EQ(none.kernel_launches, launches);
  EXPECT_GT(launches, 36 * 10);  // at least ten kernels per layer
  EXPECT_NEAR(gap.total_ms - none.total_ms, launches * 0.010, 1e-6);
  EXPECT_NEAR(gap.forward_ms + gap.backward_ms - none.forward_ms - none.backward_ms, launches * 0.010, 1e-6);
  expect_error<ConfigError>([&] { predictor::forecast_model(g, gpu, p, -1.0); }, {"--host-gap-us", "0..10000"});
  expect_error<ConfigError>([&] { predictor::forecast_model(g, gpu, p, std::nan("")); }, {"--host-gap-us"});
}

// Call overhead (manifest call_overhead_us, predict --call-overhead-us): NeuSight's isolated
// kernel timings carry a host time per call that a whole model's stream of kernels hides. The
// difference between two overheads is one overhead per FP32 kernel call, counted from the
// graph (copies and collectives have none); LLM-era families keep their latency.
TEST(BundledWeights, CallOverheadComesOffEachFp32Kernel) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(dir + "/manifest.yaml")) << "bundled weights missing from " << dir;
  predictor::KernelPredictor p(dir), none(dir);
  none.set_call_overhead_us(0);
  p.set_call_overhead_us(15);
  const GpuSpec& gpu = registry().resolve("V100-PCIE-32GB");
  const OpGraph g = gpt2_in_two_microbatches();
  std::vector<KernelQuery> queries;
  const int64_t kernels = count_calls(g, [](const KernelCall& c) { return c.is_kernel(); }, &queries);
  // Every kernel of this graph is forecast above 15 + 2 us, so no overhead is cut short.
  for (const auto& r : none.predict(queries, gpu)) ASSERT_GT(r.latency_ms, 0.017);
  const auto a = predictor::forecast_model(g, gpu, none), b = predictor::forecast_model(g, gpu, p);
  EXPECT_GT(kernels, 36 * 10);
  EXPECT_NEAR(a.total_ms - b.total_ms, kernels * 0.015, 1e-6 * a.total_ms);
  // One kernel: its stream time is its latency less the overhead, never below 2 us.
  const auto fw = p.predict(linear_q(1024, 1280, 5120), gpu);
  EXPECT_NEAR(fw.stream_ms, fw.latency_ms - 0.015, 1e-12);
  p.set_call_overhead_us(1000);
  const auto cut = p.predict(vec_q(OpKind::kAdd, 8, 8), gpu);
  EXPECT_DOUBLE_EQ(cut.stream_ms, std::min(cut.latency_ms, predictor::kMinStreamUs * 1e-3));
  const auto tc = p.predict(gemm_q(64, 4096, 4096, DType::kBf16), *registry().find("NVIDIA H200"));
  EXPECT_DOUBLE_EQ(tc.stream_ms, tc.latency_ms);
  expect_error<ConfigError>([&] { p.set_call_overhead_us(-1); }, {"--call-overhead-us", "0..1000"});
  expect_error<ConfigError>([&] { p.set_call_overhead_us(std::nan("")); }, {"--call-overhead-us"});
}

// The FP32 linear's input and weight gradients are costed at the forward GEMM's rate (equal
// FLOPs: twice the forward), the bias gradient as a memory pass; the graph keeps their own
// shapes (for the baselines), and bmm's backward GEMMs are forecast at their own shapes.
TEST(BundledWeights, LinearBackwardAtTheForwardRate) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(dir + "/manifest.yaml")) << "bundled weights missing from " << dir;
  predictor::KernelPredictor p(dir);
  ModelConfig m = load_model_config("gpt2-large", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  const GpuSpec& gpu = registry().resolve("V100-PCIE-32GB");
  const OpGraph g = build_op_graph(m, 2, 512, Mode::kTraining);
  const auto f = predictor::forecast_model(g, gpu, p);
  auto graph_op = [&](const std::string& name) -> const GraphOp& {
    for (const auto& op : g.ops)
      if (op.name == name) return op;
    throw std::runtime_error("no op " + name);
  };
  auto forecast_op = [&](const std::string& name) -> const predictor::OpForecast& {
    for (const auto& o : f.ops)
      if (o.name == name) return o;
    throw std::runtime_error("no forecast " + name);
  };
  // c_fc: 1,024 tokens x 1,280 -> 5,120. dX (1024, 5120 -> 1280), dW (5120 rows, 1,024 -> 1280).
  const GraphOp& fc = graph_op("h.mlp.c_fc");
  ASSERT_EQ(fc.bw.size(), 3u);
  EXPECT_EQ(std::vector<int64_t>({fc.bw[0].query.m, fc.bw[0].query.n, fc.bw[0].query.k}),
            std::vector<int64_t>({1024, 5120, 1280}));
  EXPECT_EQ(std::vector<int64_t>({fc.bw[1].query.m, fc.bw[1].query.n, fc.bw[1].query.k}),
            std::vector<int64_t>({5120, 1024, 1280}));
  const double fw_ms = p.predict(linear_q(1024, 1280, 5120), gpu).stream_ms;
  const double bias_ms = s_to_ms(transfer_s(4.0 * (1024.0 * 5120 + 5120), gpu.mem_bw_gbps));
  EXPECT_NEAR(forecast_op("h.mlp.c_fc").fw_ms, fw_ms, 1e-6 * fw_ms);
  EXPECT_NEAR(forecast_op("h.mlp.c_fc").bw_ms, 2 * fw_ms + bias_ms, 1e-6 * fw_ms);
  // The attention scores' bmm: (B x heads, S, D) x (D, S); its two backward GEMMs as forecast.
  const GraphOp& scores = graph_op("h.attn.scores");
  ASSERT_EQ(scores.bw.size(), 2u);
  const auto bw = p.predict(std::vector<KernelQuery>{scores.bw[0].query, scores.bw[1].query}, gpu);
  EXPECT_NEAR(forecast_op("h.attn.scores").bw_ms, bw[0].stream_ms + bw[1].stream_ms, 1e-6 * bw[0].stream_ms);
  // Inference graphs have no backward.
  for (const auto& o : predictor::forecast_model(build_op_graph(m, 2, 512, Mode::kInference), gpu, p).ops)
    EXPECT_EQ(o.bw_ms, 0) << o.name;
}

TEST(BundledWeights, MultiGpuForecastsAddCommunication) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(dir + "/manifest.yaml")) << "bundled weights missing from " << dir;
  predictor::KernelPredictor p(dir);
  ModelConfig m = load_model_config("gpt2-large", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  const GpuSpec& gpu = registry().resolve("A100-SXM4-40GB");
  auto single = predictor::forecast_model(build_op_graph(m, 4, 1024, Mode::kTraining), gpu, p);
  EXPECT_EQ(single.communication_ms, 0);
  Parallelism dp;
  dp.dp = 4;
  auto d = predictor::forecast_model(build_op_graph(m, 4, 1024, Mode::kTraining, dp), gpu, p);
  EXPECT_GT(d.communication_ms, 0);
  EXPECT_LT(d.total_ms, single.total_ms);  // four GPUs share the batch
  Parallelism pp;
  pp.pp = 4;
  auto q = predictor::forecast_model(build_op_graph(m, 4, 1024, Mode::kTraining, pp), gpu, p);
  EXPECT_GT(q.total_ms, single.total_ms);  // one microbatch: no overlap, plus transfers
  // Ring all-reduce as NCCL's model prices it (hand-derived from its tables): 1 GB over 4
  // A100-SXM4s (NVLink, 300 GB/s) goes Simple, 2 (n-1)/n of the bytes at 80 % of the link +
  // 8.4 us + 6 steps x 3.4 us; 16 KB goes LL: 6.6 + 6 x 0.6 us + the bytes at half of 80 %.
  EXPECT_NEAR(predictor::all_reduce_ms(1e9, 4, gpu), 1.5e9 / (0.8 * 300e9) * 1e3 + 0.0288, 1e-9);
  EXPECT_NEAR(predictor::all_reduce_ms(16384, 4, gpu), 0.0102 + 1.5 * 16384 / (0.5 * 0.8 * 300e9) * 1e3, 1e-9);
  // Over PCIe (the L40S, 32 GB/s) no LL128, slower steps: 16 KB by LL at 6.6 + 6 x 1.0 us; 64 MB
  // by Simple at 8.4 + 6 x 5.7 us.
  const GpuSpec& l40s = registry().resolve("L40S");
  EXPECT_EQ(l40s.interconnect_link(), "pcie");
  EXPECT_NEAR(predictor::all_reduce_ms(16384, 4, l40s), 0.0126 + 1.5 * 16384 / (0.5 * 0.8 * 32e9) * 1e3, 1e-9);
  EXPECT_NEAR(predictor::all_reduce_ms(64e6, 4, l40s), 0.0426 + 1.5 * 64e6 / (0.8 * 32e9) * 1e3, 1e-9);
  EXPECT_EQ(predictor::all_reduce_ms(1e9, 1, gpu), 0);
  GpuSpec no_link = gpu;
  no_link.interconnect_gbps = 0;
  // Pipeline stages hold 36 / pp layers: with 16 microbatches, more stages mean a shorter
  // slowest stage and a faster step for every even split; 11 stages are refused.
  double prev = std::numeric_limits<double>::infinity();
  for (int64_t n : {1, 2, 3, 4, 6, 9, 12}) {
    Parallelism par;
    par.pp = n;
    par.microbatches = 16;
    auto f = predictor::forecast_model(build_op_graph(m, 64, 1024, Mode::kTraining, par), gpu, p);
    EXPECT_LT(f.total_ms, prev) << "pp " << n;
    EXPECT_GT(f.forward_ms, 0) << "pp " << n;
    prev = f.total_ms;
  }
  Parallelism uneven;
  uneven.pp = 11;
  uneven.microbatches = 16;
  expect_error<ConfigError>([&] { build_op_graph(m, 64, 1024, Mode::kTraining, uneven); }, {"--pp 11", "36 layers"});
  expect_error<ConfigError>([&] { predictor::all_reduce_ms(1e6, 2, no_link); }, {"interconnect_gbps"});
}

// Groups beyond one node (the sheet's gpus_per_node) cross the cluster network: NCCL's NET ring
// latencies (LL 2.7, LL128 4.0, Simple 14.0 us per step) on 2 x nodes of the 2 (n-1) steps,
// and at most ranks-per-node x network_gbps of bandwidth. Hand-derived from NCCL's tables and
// the DGX H100 sheet (8 GPUs per node, one 400 Gb/s NIC = 50 GB/s per GPU).
// AMD's Infinity Fabric is a mesh: one link to each peer (MI300X: 64 GB/s to each of 7 in an
// 8-GPU platform; MI210: 100 GB/s to each of 3 in a 4-GPU hive), so a collective drives k - 1
// links at once. 1 GB over 8 MI300Xs goes Simple: 8.4 + 14 x 3.4 = 56 us + 2 x 7/8 of the bytes
// at 80 % of 7 x 64 GB/s; over 2, one link: 8.4 + 2 x 3.4 = 15.2 us + the bytes at 80 % of 64.
// 8 MI210s span two hives: one link, 56 us + 1.75e9 B at 80 % of 100; 4 of them 3 links.
TEST(Multi, MeshDrivesOneLinkPerPeer) {
  const GpuSpec& mi300x = registry().resolve("MI300X");
  ASSERT_EQ(mi300x.interconnect_mesh_peers, 7);
  EXPECT_NEAR(predictor::all_reduce_ms(1e9, 8, mi300x), 0.056 + 1.75e9 / (0.8 * 448e9) * 1e3, 1e-9);
  EXPECT_NEAR(predictor::all_reduce_ms(1e9, 2, mi300x), 0.0152 + 1e9 / (0.8 * 64e9) * 1e3, 1e-9);
  const GpuSpec& mi210 = registry().resolve("MI210");
  EXPECT_NEAR(predictor::all_reduce_ms(1e9, 8, mi210), 0.056 + 1.75e9 / (0.8 * 100e9) * 1e3, 1e-9);
  EXPECT_NEAR(predictor::all_reduce_ms(1e9, 4, mi210), 0.0288 + 1.5e9 / (0.8 * 300e9) * 1e3, 1e-9);
  // A switched fabric gives every group the same link: the H100's 450 GB/s for 2 and for 8.
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  EXPECT_EQ(h100.interconnect_mesh_peers, 0);
  EXPECT_NEAR(predictor::all_reduce_ms(1e9, 2, h100), 0.0152 + 1e9 / (0.8 * 450e9) * 1e3, 1e-9);
}

// Gradient accumulation reduces the gradients once, under the last microbatch's backward: 8
// ranks of Llama-3.1-8B (32 GB of FP32 gradients a rank, about 156 ms to all-reduce over
// NVLink) hide it under a 64-sequence step's backward taken whole, not under an eighth of it.
TEST(Multi, GradientsReduceUnderTheLastMicrobatch) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const ModelConfig m = load_model_config("llama-3.1-8b", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  Parallelism par;
  par.dp = 8;
  const auto one = predictor::forecast_model(build_llm_training_graph(m, 64, 2048, DType::kBf16, par), h100, p);
  par.microbatches = 8;
  const auto eight = predictor::forecast_model(build_llm_training_graph(m, 64, 2048, DType::kBf16, par), h100, p);
  const double ar = predictor::all_reduce_ms(4.0 * model_parameters(m), 8, h100);
  const double bucket = predictor::all_reduce_ms(25e6, 8, h100);
  ASSERT_LT(ar, one.backward_ms);          // hidden by a whole step's backward
  ASSERT_GT(ar, eight.backward_ms / 8);    // not by one microbatch's
  EXPECT_NEAR(one.communication_ms, bucket, 1e-9);
  EXPECT_NEAR(eight.communication_ms, ar - eight.backward_ms / 8 + bucket, 1e-6 * ar);
  // ZeRO-1 (Megatron-LM's distributed optimizer): the FP32 gradients' reduce-scatter (half the
  // all-reduce) hides under the last microbatch's backward, the BF16 weights' all-gather (half an
  // all-reduce of 2 B a parameter) under the next step's first microbatch forward.
  par.zero = 1;
  const auto z1 = predictor::forecast_model(build_llm_training_graph(m, 64, 2048, DType::kBf16, par), h100, p);
  const double ag = 0.5 * predictor::all_reduce_ms(2.0 * model_parameters(m), 8, h100);
  // Here both halves fit: 78 ms of reduce-scatter under a 109 ms microbatch backward, 39 ms of
  // all-gather under a 55 ms forward, so only the last bucket shows (48 ms under DDP above).
  ASSERT_LT(ar / 2, z1.backward_ms / 8);
  ASSERT_LT(ag, z1.forward_ms / 8);
  EXPECT_NEAR(z1.communication_ms, bucket, 1e-9);
  // Over the network (dp 8 of tp 8 replicas, one rank a node at 50 GB/s) neither half fits; the
  // layout's tp all-reduces and last bucket are the same with ZeRO 0 and 1, so the difference
  // is the exposed halves against DDP's exposed all-reduce.
  Parallelism wide = par;
  wide.tp = 8;
  const auto zw = predictor::forecast_model(build_llm_training_graph(m, 64, 2048, DType::kBf16, wide), h100, p);
  wide.zero = 0;
  const auto dw = predictor::forecast_model(build_llm_training_graph(m, 64, 2048, DType::kBf16, wide), h100, p);
  const double ar_w = predictor::all_reduce_ms(4.0 * model_parameters(m) / 8, 8, h100, 8);
  const double ag_w = 0.5 * predictor::all_reduce_ms(2.0 * model_parameters(m) / 8, 8, h100, 8);
  ASSERT_NEAR(zw.backward_ms, dw.backward_ms, 1e-9);
  ASSERT_GT(ar_w / 2, zw.backward_ms / 8);
  ASSERT_GT(ag_w, zw.forward_ms / 8);
  EXPECT_NEAR(zw.communication_ms - dw.communication_ms,
              (ar_w / 2 - zw.backward_ms / 8) + (ag_w - zw.forward_ms / 8) - (ar_w - dw.backward_ms / 8), 1e-6 * ar_w);
  EXPECT_LT(zw.communication_ms, dw.communication_ms);  // the BF16 all-gather moves half the bytes
  par.microbatches = 1;
  const auto z1_one = predictor::forecast_model(build_llm_training_graph(m, 64, 2048, DType::kBf16, par), h100, p);
  EXPECT_NEAR(z1_one.communication_ms, bucket, 1e-9);  // a whole step's passes hide both
}

// A MoE layer timed alone reads a working set that fits the L2 from there, as the L40S's data do
// (one token of Qwen3-30B-A3B's layer, 8 experts: 75,628,544 bytes within its 96 MiB, measured
// 30.5 us, under the 87.5 us its 864 GB/s take for them), and the bundled forecast follows. In a
// model's step (sustained) the other layers have evicted its experts: the forecast cannot beat
// DRAM for them. Two tokens (146 MB) do not fit: alone or in a step, the same forecast (a
// memory-bound layer, so the step's lower tensor clock does not show).
TEST(Multi, MoeInAModelStepReadsItsExpertsFromDram) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const GpuSpec& l40s = registry().resolve("L40S");
  ASSERT_EQ(l40s.mem_bw_gbps, 864);
  const double dram_ms = 75628544.0 / 864e9 * 1e3;
  KernelQuery one = moe_q(1, 2048, 768, 8, 128, 1, 1, DType::kBf16);
  EXPECT_NEAR(query_bytes(one), 75628544.0, 1e-3);
  const double alone_ms = p.predict(one, l40s).latency_ms;
  EXPECT_LT(alone_ms, 0.5 * dram_ms);
  one.sustained = true;
  EXPECT_GT(p.predict(one, l40s).latency_ms, dram_ms);
  KernelQuery two = moe_q(2, 2048, 768, 8, 128, 1, 1, DType::kBf16);
  const double two_alone_ms = p.predict(two, l40s).latency_ms;
  two.sustained = true;
  EXPECT_DOUBLE_EQ(p.predict(two, l40s).latency_ms, two_alone_ms);
}

// FP8 training: the layers' dense GEMMs at the FP8 peak, the weights' casts once a step (by hand
// from the spec's bandwidth), the rest as BF16 training, and MFU against the BF16 peak.
TEST(Multi, Fp8TrainingCastsTheWeightsOnceAStep) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const ModelConfig m = load_model_config("llama-3.1-8b", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  ASSERT_EQ(h100.mem_bw_gbps, 3352);
  Parallelism par;
  par.microbatches = 4;
  const OpGraph gb = build_llm_training_graph(m, 8, 4096, DType::kBf16, par);
  const OpGraph g8 = build_llm_training_graph(m, 8, 4096, DType::kFp8, par);
  auto b = predictor::forecast_model(gb, h100, p), f = predictor::forecast_model(g8, h100, p);
  // 4 B (BF16 read, FP8 and its transpose written) x 6,979,321,856 weights at 3,352 GB/s, once
  // for the four microbatches.
  EXPECT_NEAR(f.fp8_weight_cast_ms, 4 * 6979321856.0 / 3352e9 * 1e3, 1e-9);
  EXPECT_EQ(b.fp8_weight_cast_ms, 0);
  // Every op but the FP8 GEMMs costs what BF16 training's does (per op, all microbatches).
  double fp8_gemms_b = 0, fp8_gemms_f = 0;
  ASSERT_EQ(b.ops.size(), f.ops.size());
  for (size_t i = 0; i < b.ops.size(); ++i) {
    const bool fp8 = b.ops[i].kind == "gemm" && b.ops[i].name != "lm_head";
    if (fp8) {
      fp8_gemms_b += (b.ops[i].fw_ms + b.ops[i].bw_ms) * b.ops[i].count;
      fp8_gemms_f += (f.ops[i].fw_ms + f.ops[i].bw_ms) * f.ops[i].count;
    } else {
      EXPECT_DOUBLE_EQ(f.ops[i].fw_ms, b.ops[i].fw_ms) << b.ops[i].name;
      EXPECT_DOUBLE_EQ(f.ops[i].bw_ms, b.ops[i].bw_ms) << b.ops[i].name;
    }
  }
  // 8,192-token GEMMs of a 7B model: FP8 forecast faster than BF16, above half its time.
  EXPECT_LT(fp8_gemms_f, 0.9 * fp8_gemms_b);
  EXPECT_GT(fp8_gemms_f, 0.5 * fp8_gemms_b);
  EXPECT_NEAR(f.total_ms - b.total_ms, (fp8_gemms_f - fp8_gemms_b) + f.fp8_weight_cast_ms, 1e-6 * b.total_ms);
  // MFU: the same FLOPs against the same (BF16) peak, so the ratio is the steps' inverse ratio.
  predictor::set_training_throughput(b, gb, h100);
  predictor::set_training_throughput(f, g8, h100);
  EXPECT_NEAR(f.mfu_pct / b.mfu_pct, (b.total_ms + b.optimizer_ms) / (f.total_ms + f.optimizer_ms), 1e-9);
  // No FP8 tensor cores: one line naming the GPU and the dtype.
  expect_error<ConfigError>([&] { predictor::forecast_model(g8, registry().resolve("A100-80GB-SXM"), p); },
                            {"A100-80GB-SXM", "no fp8 tensor-core peak"});
}

// FP8 fused MoE on a GPU whose MoE kernel is Triton's: the same layer's BF16 forecast x
// kTritonFp8MoeFactor + kTritonFp8MoeFloorUs (scripts/eval-moe-fp8.py fits them on the B200's
// Triton pairs); datacenter Blackwell (TRT-LLM's kernels, the networks' own FP8 rows) keeps the
// network's FP8 forecast. In a batch with other kernels, each answer stays in its place.
TEST(MoeFp8, TritonGpusForecastFromTheBf16Layer) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const GpuSpec& b200 = registry().resolve("B200");
  const KernelQuery gemm = gemm_q(256, 4096, 4096, DType::kBf16);
  for (DType d : {DType::kFp8Block, DType::kFp8}) {
    const KernelQuery fp8 = moe_q(4096, 4096, 14336, 2, 8, 1, 1, d);
    const KernelQuery bf16 = moe_q(4096, 4096, 14336, 2, 8, 1, 1, DType::kBf16);
    const auto r = p.predict(std::vector<KernelQuery>{gemm, fp8, bf16}, h100);
    ASSERT_EQ(r.size(), 3u);
    EXPECT_DOUBLE_EQ(r[0].latency_ms, p.predict(gemm, h100).latency_ms);
    EXPECT_FALSE(r[2].fp8_from_bf16);
    EXPECT_TRUE(r[1].fp8_from_bf16);
    // The FP8 layer's BF16 forecast is made in a batch of its own: the networks run in float32
    // (BLAS), whose sums may round differently with the batch's size, so "the same" is to a few
    // float32 ulps.
    const double f32 = 1e-6;
    EXPECT_NEAR(r[1].bf16_ms, r[2].latency_ms, f32 * r[2].latency_ms);
    EXPECT_NEAR(r[1].latency_ms, 0.01339 + 0.4916 * r[1].bf16_ms, 1e-12);
    EXPECT_NEAR(r[1].latency_ms, 0.01339 + 0.4916 * r[2].latency_ms, f32 * r[1].latency_ms);
    EXPECT_GT(r[1].latency_ms, r[1].peak_ms);
    EXPECT_NEAR(r[1].utilisation, r[1].bound_ms / r[1].latency_ms, 1e-12);
    EXPECT_NEAR(r[1].member_min_ms, 0.01339 + 0.4916 * r[2].member_min_ms, f32 * r[1].member_min_ms);
    // The roofline is the FP8 layer's own: half the BF16 layer's compute bound.
    EXPECT_NEAR(r[1].roofline_ms, r[2].roofline_ms / 2, 0.05 * r[2].roofline_ms);
    EXPECT_FALSE(predictor::triton_fp8_moe(fp8, b200));
    EXPECT_FALSE(p.predict(fp8, b200).fp8_from_bf16);
  }
}

// A fused MoE of more tokens than the bundled moe family was trained on (16,384): equal chunks
// within that range, forecast and summed (the data's latency doubles with the tokens at the top
// of the range); the FP8 rule of a Triton GPU applies to each chunk. Within the range nothing
// changes.
TEST(MoeChunks, BeyondTheTrainedTokensSumEqualChunks) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  EXPECT_EQ(p.moe_trained_tokens(h100), 16384);
  for (DType d : {DType::kBf16, DType::kFp8Block}) {
    const KernelQuery big = moe_q(40000, 2048, 768, 8, 128, 1, 1, d);
    const KernelQuery chunk = moe_q(13334, 2048, 768, 8, 128, 1, 1, d);  // ceil(40,000 / 3)
    const KernelQuery gemm = gemm_q(256, 4096, 4096, DType::kBf16);
    const auto r = p.predict(std::vector<KernelQuery>{gemm, big}, h100);
    const auto c = p.predict(chunk, h100);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_DOUBLE_EQ(r[0].latency_ms, p.predict(gemm, h100).latency_ms);
    EXPECT_EQ(r[0].moe_chunks, 1);
    EXPECT_EQ(r[1].moe_chunks, 3);
    EXPECT_EQ(r[1].moe_chunk_tokens, 13334);
    EXPECT_EQ(c.moe_chunks, 1);
    EXPECT_DOUBLE_EQ(r[1].latency_ms, 3 * c.latency_ms);
    EXPECT_DOUBLE_EQ(r[1].stream_ms, 3 * c.stream_ms);
    EXPECT_DOUBLE_EQ(r[1].member_max_ms, 3 * c.member_max_ms);
    EXPECT_EQ(r[1].fp8_from_bf16, d == DType::kFp8Block);
    EXPECT_TRUE(r[1].out_of_range.empty());  // the chunks lie inside the trained range
    // The layer's own physics: its plain roofline, which reads the experts' weights once where
    // three chunks read them three times.
    EXPECT_DOUBLE_EQ(r[1].roofline_ms, s_to_ms(roofline_s(big, h100)));
    EXPECT_LE(r[1].roofline_ms, 3 * c.roofline_ms);
    EXPECT_GT(r[1].roofline_ms, c.roofline_ms);
  }
  const KernelQuery edge = moe_q(16384, 2048, 768, 8, 128, 1, 1, DType::kBf16);
  EXPECT_EQ(p.predict(edge, h100).moe_chunks, 1);
}

// All-to-all (training's expert parallelism), derived by hand from the H100 sheet (NVLink 450
// GB/s per direction, 8 GPUs a node, 50 GB/s a NIC) and the MI300X's (one 64 GB/s link to each
// of 7 peers): 1/n of the buffer to each peer at 80 % of the link, + 5 us (7.7 across nodes).
TEST(Multi, AllToAllByHand) {
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  EXPECT_EQ(predictor::all_to_all_ms(1e9, 1, h100), 0);
  // 8 ranks of one node: 7/8 of 1 GB over NVLink.
  EXPECT_NEAR(predictor::all_to_all_ms(1e9, 8, h100), 0.005 + 0.875e9 / (0.8 * 450e9) * 1e3, 1e-12);
  // 16 ranks over two nodes: 7/16 over NVLink (1.22 ms) beside 8/16 through the NIC (12.5 ms).
  EXPECT_NEAR(predictor::all_to_all_ms(1e9, 16, h100), 0.0077 + 0.5e9 / (0.8 * 50e9) * 1e3, 1e-12);
  // 2 ranks a node apart (stride 8): half the buffer through the NIC.
  EXPECT_NEAR(predictor::all_to_all_ms(1e9, 2, h100, 8), 0.0077 + 0.5e9 / (0.8 * 50e9) * 1e3, 1e-12);
  const GpuSpec& mi300x = registry().resolve("MI300X");
  EXPECT_NEAR(predictor::all_to_all_ms(8e8, 8, mi300x), 0.005 + 1e8 / (0.8 * 64e9) * 1e3, 1e-12);
}

// DeepEP's traffic by hand (DeepSeek-V3's routing, top-8 of 256 experts), a 1 MB copy of a
// rank's tokens. 16 ranks on two H100 nodes, normal kernels: each token to the other ranks of
// its node holding one of its experts (16 each; missed with probability C(240, 8) / C(256, 8))
// and, through each node's NICs, once to the other node when one of its 128 experts is picked
// (C(128, 8) / C(256, 8)), forwarded there over NVLink: link bytes 1 MB x p1 x 7 x 2 nodes,
// network 1 MB x pn. Low-latency kernels: 8 copies spread over the 16 ranks, 7/16 of them over
// NVLink and 8/16 through the NIC. Priced at 80 % of 450 and 50 GB/s, + 7.7 us.
TEST(Multi, DeepEpByHand) {
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const double p1 = 1 - 242641770336810.0 / 409663695276000.0, pn = 1 - 1429702652400.0 / 409663695276000.0;
  const KernelCall normal = KernelCall::deepep(1e6, 16, {256, 8}, false);
  const predictor::GroupSpan two_nodes{2, 8};
  auto t = predictor::deepep_traffic(normal, two_nodes);
  EXPECT_NEAR(t.link_bytes, 1e6 * p1 * 7 * 2, 1e-6);
  EXPECT_NEAR(t.network_bytes, 1e6 * pn, 1e-6);
  EXPECT_NEAR(predictor::deepep_ms(normal, h100, two_nodes), 0.0077 + 1e6 * pn / (0.8 * 50e9) * 1e3, 1e-12);
  const KernelCall low = KernelCall::deepep(1e6, 16, {256, 8}, true);
  t = predictor::deepep_traffic(low, two_nodes);
  EXPECT_NEAR(t.link_bytes, 8e6 * 7 / 16, 1e-6);
  EXPECT_NEAR(t.network_bytes, 8e6 * 8 / 16, 1e-6);
  EXPECT_NEAR(predictor::deepep_ms(low, h100, two_nodes), 0.0077 + 4e6 / (0.8 * 50e9) * 1e3, 1e-12);
  // One node of 8 (32 experts a rank, missed with probability C(224, 8) / C(256, 8)): NVLink only.
  const double p8 = 1 - 138535357316356.0 / 409663695276000.0;
  const KernelCall one = KernelCall::deepep(1e6, 8, {256, 8}, false);
  t = predictor::deepep_traffic(one, predictor::GroupSpan{1, 8});
  EXPECT_NEAR(t.link_bytes, 1e6 * p8 * 7, 1e-6);
  EXPECT_EQ(t.network_bytes, 0);
  EXPECT_NEAR(predictor::deepep_ms(one, h100, predictor::GroupSpan{1, 8}), 0.005 + 1e6 * p8 * 7 / (0.8 * 450e9) * 1e3,
              1e-12);
  // DeepSeek-V3's own routing: 4 of its 8 groups of 32 experts a token, then 8 experts of those
  // 128. Rank 0 holds half of group 0: missed when group 0 is not picked (1/2), else with
  // probability C(112, 8) / C(128, 8). Node 0 holds groups 0-3: a token picking j of them (in
  // C(4, j) C(4, 4 - j) of the 70 sets) misses its 32 j experts with probability
  // C(128 - 32 j, 8) / C(128, 8).
  const KernelCall grouped = KernelCall::deepep(1e6, 16, {256, 8, 8, 4}, false);
  const double c128 = 1429702652400.0;
  const double g1 = 1 - (0.5 + 0.5 * 475491062970.0 / c128);
  const double gn = 1 - (c128 + 16 * 132601016340.0 + 36 * 4426165368.0 + 16 * 10518300.0) / (70 * c128);
  t = predictor::deepep_traffic(grouped, two_nodes);
  EXPECT_NEAR(t.link_bytes, 1e6 * g1 * 7 * 2, 1e-3);
  EXPECT_NEAR(t.network_bytes, 1e6 * gn, 1e-3);
  EXPECT_LT(gn, pn);  // the groups keep some tokens on their node
}

// Mixtral-8x7B training on 8 H100s, dp 8, with and without ep 8 (one expert a rank): the ep
// forecast adds the four all-to-alls a layer (each priced by all_to_all_ms) to the critical
// path, reduces only the dense gradients (each expert lives on one rank), and steps AdamW over
// the rank's 7,242,780,672 parameters (see memory_test.cpp).
TEST(Multi, ExpertParallelTrainingByHand) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const ModelConfig m = load_model_config("mixtral-8x7b", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  Parallelism par;
  par.dp = 8, par.microbatches = 2;
  const auto f1 = predictor::forecast_model(build_llm_training_graph(m, 32, 1024, DType::kBf16, par), h100, p);
  par.ep = 8;
  const auto f8 = predictor::forecast_model(build_llm_training_graph(m, 32, 1024, DType::kBf16, par), h100, p);
  // 2 sequences a microbatch: 2 B x 2,048 tokens x 2 copies x 4,096 = 33,554,432 bytes a pass.
  const double a2a_ms = predictor::all_to_all_ms(33554432.0, 8, h100);
  double a2a_total = 0;
  for (const auto& o : f8.ops)
    if (o.kind == "communication") {
      EXPECT_NEAR(o.fw_ms, 2 * a2a_ms, 1e-12) << o.name;  // two microbatches
      EXPECT_NEAR(o.bw_ms, 2 * a2a_ms, 1e-12) << o.name;
      a2a_total += (o.fw_ms + o.bw_ms) * o.count;
    }
  EXPECT_NEAR(a2a_total, 4 * 32 * 2 * a2a_ms, 1e-9);
  // The gradients' reduction: 1,605,636,096 dense parameters instead of all 46,702,792,704.
  EXPECT_LT(f8.communication_ms - a2a_total, f1.communication_ms);
  EXPECT_NEAR(f8.optimizer_ms, predictor::adamw_step_ms(7242780672.0, h100), 1e-9);
  EXPECT_NEAR(f1.optimizer_ms, predictor::adamw_step_ms(46702792704.0, h100), 1e-9);
  // The eager FP32 builder takes no ep.
  expect_error<ConfigError>([&] { build_op_graph(m, 16, 16, Mode::kTraining, par); }, {"--ep applies to mixed-precision training"});
}

// Expert parallelism with context parallelism: Megatron-Core draws the ep ranks from the dp x cp
// ranks, cp first. Layouts by hand on H100 nodes of 8 (a replica is tp x cp x pp GPUs, dp peers
// a replica apart):
//   tp 2, cp 2, pp 2, ep 4: the cp pair (GPUs 0, 2) and the next replica's (8, 10): 2 nodes of 2;
//   the same with pp 1 (replica 4): GPUs 0, 2, 4, 6, one node of 4;
//   tp 1, cp 4, pp 2, ep 2: inside the cp group, GPUs 0, 1.
// An all-to-all of 80 MB over the first: 1 local and 2 remote peers, a quarter of the buffer to
// each; the remote half through the 50 GB/s NIC at 80 %: 1 ms, + 5 us + 2.7 us across nodes.
// Mixtral-8x7B, 16 x 2,048 tokens, dp 4 x cp 2, ep 8: each rank's 4 sequences of 1,024 tokens
// send 4,096 x top-2 x 4,096 x 2 B = 67,108,864 B a pass, over 8 GPUs of one node (tp 1,
// pp 1); the rank holds what dp 8 x ep 8 gives it, 7,242,780,672 parameters.
TEST(Multi, ExpertParallelWithContextParallelByHand) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  Parallelism lay;
  lay.tp = 2, lay.cp = 2, lay.pp = 2, lay.ep = 4;
  auto span = [&](const Parallelism& q) {
    const auto s = predictor::expert_parallel_span(q, h100);
    return std::make_pair(s.nodes, s.ranks_per_node);
  };
  EXPECT_EQ(span(lay), (std::pair<int64_t, int64_t>(2, 2)));
  EXPECT_NEAR(predictor::all_to_all_ms(8e7, 4, h100, predictor::expert_parallel_span(lay, h100)),
              4e7 / (0.8 * 50e9) * 1e3 + 0.005 + 0.0027, 1e-9);
  lay.pp = 1;
  EXPECT_EQ(span(lay), (std::pair<int64_t, int64_t>(1, 4)));
  lay.tp = 1, lay.cp = 4, lay.pp = 2, lay.ep = 2;
  EXPECT_EQ(span(lay), (std::pair<int64_t, int64_t>(1, 2)));

  const ModelConfig m = load_model_config("mixtral-8x7b", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  Parallelism par;
  par.dp = 4, par.cp = 2, par.ep = 8;
  const auto f = predictor::forecast_model(build_llm_training_graph(m, 16, 2048, DType::kBf16, par), h100, p);
  const double a2a_ms = predictor::all_to_all_ms(67108864.0, 8, h100);
  int passes = 0;
  for (const auto& o : f.ops)
    if (o.kind == "communication") {
      EXPECT_NEAR(o.fw_ms, a2a_ms, 1e-12) << o.name;
      EXPECT_NEAR(o.bw_ms, a2a_ms, 1e-12) << o.name;
      ++passes;
    }
  EXPECT_EQ(passes, 2);  // dispatch and combine
  EXPECT_NEAR(f.optimizer_ms, predictor::adamw_step_ms(7242780672.0, h100), 1e-9);
  // ep and cp must divide one another: 3 x 2 ranks split into ep 2 would cut across cp groups.
  par.dp = 2, par.cp = 3, par.ep = 2;
  expect_error<ConfigError>([&] { build_llm_training_graph(m, 4, 6144, DType::kBf16, par); },
                            {"--ep 2 with --cp 3", "one must divide the other"});
}

// Context parallelism's ring overlaps the attention kernels before it: on an H100 node the K/V
// hand-overs of Llama-3.1-8B's 8,192-token sequences over cp 4 hide entirely (the attention op
// costs its 4 steps' kernels), while on a copy of the sheet with a 0.01 GB/s link each of
// the 3 hand-overs of 16,777,216 bytes takes 2.1 s and the rest beyond the kernels is exposed.
TEST(Multi, ContextParallelRingOverlapsAttention) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const ModelConfig m = load_model_config("llama-3.1-8b", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  Parallelism par;
  par.cp = 4;
  const OpGraph g = build_llm_training_graph(m, 2, 8192, DType::kBf16, par);
  const GraphOp* attn = nullptr;
  for (const auto& op : g.ops)
    if (op.name == "model.layers.self_attn.core_attention") attn = &op;
  ASSERT_NE(attn, nullptr);
  const double kernels_ms = 4 * p.predict(in_step(attn->fw[0].query), h100).stream_ms;  // the ring's 4 steps
  auto attention_fw = [&](const predictor::ModelForecast& f) {
    for (const auto& o : f.ops)
      if (o.name == attn->name) return o.fw_ms;
    return -1.0;
  };
  const auto fast = predictor::forecast_model(g, h100, p);
  EXPECT_NEAR(attention_fw(fast), kernels_ms, 1e-9);
  GpuSpec slow = h100;
  slow.interconnect_gbps = 0.01;
  const auto f = predictor::forecast_model(g, slow, p);
  const double ring_ms = 3 * (16777216.0 / (0.8 * 0.01e9) * 1e3 + 0.005);
  EXPECT_NEAR(attention_fw(f), ring_ms, 1e-6 * ring_ms);  // the kernels plus what outlasts them
  EXPECT_GT(f.communication_ms, ring_ms - kernels_ms - 1e-6);
  // MFU counts each ring step's FLOPs: a rank's are a quarter of the whole sequence's (to
  // within the diagonals), so MFU x step x cp is the cp-1 step's MFU x step.
  const auto whole = predictor::forecast_model(build_llm_training_graph(m, 2, 8192, DType::kBf16, {}), h100, p);
  auto mfu_time = [&](predictor::ModelForecast f, const OpGraph& graph) {
    predictor::set_training_throughput(f, graph, h100);
    return f.mfu_pct * (f.total_ms + f.optimizer_ms);
  };
  EXPECT_NEAR(4 * mfu_time(fast, g), mfu_time(whole, build_llm_training_graph(m, 2, 8192, DType::kBf16, {})),
              2e-3 * mfu_time(whole, build_llm_training_graph(m, 2, 8192, DType::kBf16, {})));
  // ZeRO-1 over the 4 cp ranks (dp 1): AdamW steps a quarter of the 8,030,261,248 parameters.
  par.zero = 1;
  const auto z = predictor::forecast_model(build_llm_training_graph(m, 2, 8192, DType::kBf16, par), h100, p);
  EXPECT_NEAR(z.optimizer_ms, predictor::adamw_step_ms(8030261248.0 / 4, h100), 1e-9);
}

// Megatron-LM's interleaved 1F1B against the pipeline bubble counted by hand. A graph of 8
// identical layers, each a forward memory pass of T and a backward one of 2T (the sheet's
// DRAM rate), over pp 4 ranks (stages of 2 layers), 8 microbatches. Plain 1F1B: the first
// microbatch crosses 4 stages, the other 7 follow one stage time apart: forward (4 + 7) x 2T =
// 22T. Interleaved with vpp 2 (chunks of 1 layer): the fill and drain cross the ranks a chunk
// at a time, (pp - 1) / vpp = 1.5 stage times instead of 3 (Narayanan et al., SC'21): 8 x 2T +
// 1.5 x 2T = 19T; vpp 4 would need chunks of half a layer.
TEST(Multi, InterleavedPipelineShrinksTheBubbleByHand) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  OpGraph g;
  g.model = "eight-layers";
  g.batch = 8, g.seq = 1, g.micro_batch = 1, g.layers = 8, g.hidden = 1;
  g.mode = Mode::kTraining;
  g.dtype = DType::kBf16;
  GraphOp layer{"layer", "memory", 8, {KernelCall::mem(1e9)}, {KernelCall::mem(2e9)}, {}};
  g.ops = {layer};
  g.par.pp = 4, g.par.microbatches = 8;
  const double t_ms = 1e9 / (h100.mem_bw_gbps * 1e9) * 1e3;
  const auto plain = predictor::forecast_model(g, h100, p);
  EXPECT_NEAR(plain.forward_ms, 22 * t_ms, 1e-9);
  EXPECT_NEAR(plain.backward_ms, 44 * t_ms, 1e-9);
  g.par.vpp = 2;
  const auto interleaved = predictor::forecast_model(g, h100, p);
  EXPECT_NEAR(interleaved.forward_ms, 19 * t_ms, 1e-9);
  EXPECT_NEAR(interleaved.backward_ms, 38 * t_ms, 1e-9);
  // The bubble beyond 8 microbatches x the stage's 2T + 4T: 3 stage times of fill and drain each
  // way (6T + 12T), half of it interleaved.
  EXPECT_NEAR(plain.pipeline_bubble_ms, 18 * t_ms, 1e-9);
  EXPECT_NEAR(interleaved.pipeline_bubble_ms, 9 * t_ms, 1e-9);
  // The hand-overs on the critical path stay the fill's pp - 1 each way.
  EXPECT_NEAR(interleaved.communication_ms, plain.communication_ms, 1e-12);
}

TEST(Multi, CollectivesAcrossNodes) {
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  ASSERT_EQ(h100.gpus_per_node, 8);
  ASSERT_EQ(h100.network_gbps, 50);
  auto span = [&](int64_t group, int64_t stride) {
    auto s = predictor::group_span(group, stride, h100);
    return std::make_pair(s.nodes, s.ranks_per_node);
  };
  EXPECT_EQ(span(8, 1), (std::pair<int64_t, int64_t>(1, 8)));
  EXPECT_EQ(span(16, 1), (std::pair<int64_t, int64_t>(2, 8)));   // tp 16: two full nodes
  EXPECT_EQ(span(4, 2), (std::pair<int64_t, int64_t>(1, 4)));    // dp 4 of tp 2: one node
  EXPECT_EQ(span(4, 4), (std::pair<int64_t, int64_t>(2, 2)));    // dp 4 of tp 4: two per node
  EXPECT_EQ(span(2, 8), (std::pair<int64_t, int64_t>(2, 1)));    // dp 2 of tp 8: a node each
  // 16 KB over tp 16 goes LL: 6.6 + 26 x 0.6 (NVLink) + 4 x 2.7 (network) = 33.0 us, and the
  // bytes (30/16 of them) at half of 80 % of min(450, 8 x 50) GB/s.
  EXPECT_NEAR(predictor::all_reduce_ms(16384, 16, h100), 0.033 + 1.875 * 16384 / (0.5 * 0.8 * 400e9) * 1e3, 1e-9);
  // Within a node (tp 8) it stays on NVLink: 6.6 + 14 x 0.6 us.
  EXPECT_NEAR(predictor::all_reduce_ms(16384, 8, h100), 0.015 + 1.75 * 16384 / (0.5 * 0.8 * 450e9) * 1e3, 1e-9);
  // 1 GB over tp 16 goes Simple: 8.4 + 26 x 3.4 + 4 x 14.0 = 152.8 us + the bytes at 80 % of 400.
  EXPECT_NEAR(predictor::all_reduce_ms(1e9, 16, h100), 0.1528 + 1.875e9 / (0.8 * 400e9) * 1e3, 1e-9);
  // Data-parallel peers of tp 8 replicas sit on different nodes, one rank each: 50 GB/s. 1 GB:
  // Simple, 8.4 + 2 x 14.0 us (both steps cross) + 1e9 bytes at 80 % of 50.
  EXPECT_NEAR(predictor::all_reduce_ms(1e9, 2, h100, 8), 0.0364 + 1e9 / (0.8 * 50e9) * 1e3, 1e-9);
  // Point to point across nodes: the NIC at 80 % + 5 + 2.7 us; within a node, NVLink + 5 us.
  EXPECT_NEAR(predictor::send_recv_ms(1e6, h100, true), 1e6 / (0.8 * 50e9) * 1e3 + 0.0077, 1e-12);
  EXPECT_NEAR(predictor::send_recv_ms(1e6, h100, false), 1e6 / (0.8 * 450e9) * 1e3 + 0.005, 1e-12);
  // A sheet with a node size but no network (H800) refuses groups beyond the node in one line.
  const GpuSpec& h800 = registry().resolve("H800");
  expect_error<ConfigError>([&] { predictor::all_reduce_ms(1e6, 16, h800); },
                            {"H800.yaml", "network_gbps", "16 GPUs", "one node of 8"});
  EXPECT_GT(predictor::all_reduce_ms(1e6, 8, h800), 0);
  // A sheet without a node size (the L40S): any group on its link, as before.
  EXPECT_EQ(predictor::group_span(64, 1, registry().resolve("L40S")).nodes, 1);
  // Serving pipelines: Llama-3.1-70B on tp 8 x pp 2 hands over between nodes, tp 4 x pp 2
  // within one. One sequence: the hand-over of 2 x 8,192 BF16 values is latency-bound.
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  ModelConfig m = load_model_config("llama-3.1-70b", mdir);
  auto comm = [&](int64_t tp, int64_t pp) {
    const auto one = predictor::forecast_model(
        build_serving_graph(m, Mode::kDecode, 1, 512, DType::kBf16, DType::kBf16, tp, 1, 0, 1), h100, p);
    const auto piped = predictor::forecast_model(
        build_serving_graph(m, Mode::kDecode, 1, 512, DType::kBf16, DType::kBf16, tp, 1, 0, pp), h100, p);
    return piped.total_ms - one.total_ms;
  };
  const double bytes = 2.0 * 8192 * 2;
  EXPECT_NEAR(comm(8, 2), bytes / (0.8 * 50e9) * 1e3 + 0.0077, 1e-9);
  EXPECT_NEAR(comm(4, 2), bytes / (0.8 * 450e9) * 1e3 + 0.005, 1e-9);
}

// Serving memory against hand-derived counts (1 GB = 1e9 bytes; the H100's sheet states 80 GiB,
// 85,899,345,920 B, of which 90 % is 77,309,411,328 B).
TEST(Serving, MemoryMatchesHandDerivedCounts) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  ModelConfig m = load_model_config("llama-3.1-8b", mdir);
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  // BF16: every one of the 8,030,261,248 parameters in 2 bytes. KV cache of one sequence of
  // 1000 tokens: 2 (K, V) x 32 layers x 8 KV heads x 128 x 1000 x 2 bytes = 131,072,000 B.
  auto bf = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 1, 1, 1000, h100);
  EXPECT_NEAR(bf.weights_gb, 16.060522496, 1e-9);
  EXPECT_NEAR(bf.kv_cache_gb, 0.131072, 1e-12);
  EXPECT_TRUE(bf.fits());
  // KV room: 90 % of 80 GiB less the weights, 61,248,888,832 B, at 131,072 B per token (2 x 32
  // layers x 8 KV heads x 128 x 2 bytes): 467,291 tokens, 467 sequences of 1,000.
  EXPECT_EQ(bf.kv_capacity_tokens, 467291);
  EXPECT_EQ(bf.max_sequences, 467);
  EXPECT_NEAR(bf.capacity_gb, 85.89934592, 1e-12);
  // FP8 over tp 2: linear weights (8,030,261,248 - 2 x 525,336,576 embeddings - 65 x 4096
  // norms = 6,979,321,856) in 1 byte and embeddings in BF16, both halved; norms replicated.
  auto f8 = predictor::serving_memory(m, DType::kFp8, DType::kFp8, 2, 1, 1000, h100);
  EXPECT_NEAR(f8.weights_gb, (6979321856.0 + 2 * 1050673152.0) / 2 / 1e9 + 266240 * 2 / 1e9, 1e-9);
  EXPECT_NEAR(f8.kv_cache_gb, 0.032768, 1e-12);
  // NVFP4 on a B200: the linear weights at 4 bits and an FP8 scale per 16 (9/16 B), the
  // embeddings and norms in BF16; KV cache BF16 (nvfp4 has no cache format).
  auto f4 = predictor::serving_memory(m, DType::kNvfp4, DType::kBf16, 1, 1, 1000, registry().resolve("B200"));
  EXPECT_NEAR(f4.weights_gb, (6979321856.0 * 9 / 16 + 2 * 1050673152.0 + 266240 * 2) / 1e9, 1e-9);
  // Llama-3.1-70B in BF16 (141 GB of weights) does not fit one 80 GB GPU.
  ModelConfig big = load_model_config("llama-3.1-70b", mdir);
  EXPECT_FALSE(predictor::serving_memory(big, DType::kBf16, DType::kBf16, 1, 1, 128, h100).fits());
  // gpt-oss-120b as it ships (config quantization_config: MXFP4 experts): its 116,829,156,672
  // parameters (ModelConfig.ParameterCounts) less 36 layers x 128 experts x (3 x 2,880^2 + 3 x
  // 2,880 biases) = 114,701,598,720 expert parameters in BF16, those in 4 bits and an 8-bit
  // scale per 32 (0.53125 B): 65.19 GB, one 80 GB GPU's; dequantised (--expert-dtype bf16) 233.66 GB.
  ModelConfig oss = load_model_config("gpt-oss-120b", mdir);
  EXPECT_EQ(oss.expert_dtype, "mxfp4");
  const double oss_all = 116829156672.0, oss_experts = 114701598720.0;
  auto mx = predictor::serving_memory(oss, DType::kBf16, DType::kBf16, 1, 1, 1000, h100);
  EXPECT_NEAR(mx.weights_gb, ((oss_all - oss_experts) * 2 + oss_experts * 0.53125) / 1e9, 1e-9);
  EXPECT_TRUE(mx.fits());
  // int4 experts (4 bits and a 16-bit scale per 128, 0.515625 B) over tp 4: everything split
  // but the 2 x 36 + 1 norms of 2,880 (210,240 parameters, BF16 on every rank).
  oss.expert_dtype = "int4";
  EXPECT_NEAR(predictor::serving_memory(oss, DType::kBf16, DType::kBf16, 4, 1, 1000, h100).weights_gb,
              (((oss_all - oss_experts - 210240) * 2 + oss_experts * 0.515625) / 4 + 210240 * 2) / 1e9, 1e-9);
  oss.expert_dtype.clear();
  EXPECT_FALSE(predictor::serving_memory(oss, DType::kBf16, DType::kBf16, 1, 1, 1000, h100).fits());
  EXPECT_NEAR(predictor::serving_memory(oss, DType::kBf16, DType::kBf16, 1, 1, 1000, h100).weights_gb,
              oss_all * 2 / 1e9, 1e-9);
  // Qwen3-30B-A3B over tp 8: 4 KV heads, so each rank holds one, replicated on 2 ranks, with
  // its K/V projections. Parameters 30,532,122,624 - 2 x 311,164,928 embeddings - 97 x 2048
  // norms = 29,909,594,112 linear, of which K/V 2 x 48 x 2048 x 4 x 128 = 100,663,296: (the
  // rest + embeddings) / 8 + K/V of one head (25,165,824) + norms, in BF16. Cache of 64
  // sequences x 4097 tokens: 2 x 48 layers x 1 head x 128 x 4097 x 64 x 2 bytes.
  ModelConfig q = load_model_config("qwen3-30b-a3b", mdir);
  auto rq = predictor::serving_memory(q, DType::kBf16, DType::kBf16, 8, 64, 4097, h100);
  EXPECT_NEAR(rq.weights_gb, ((29909594112.0 - 100663296.0 + 622329856.0) / 8 + 25165824.0 + 198656.0) * 2 / 1e9, 1e-9);
  EXPECT_NEAR(rq.kv_cache_gb, 2.0 * 48 * 128 * 4097 * 64 * 2 / 1e9, 1e-12);
  // Mistral-7B-v0.1's 4,096-token window: 8 sequences of 10,000 tokens keep 4,096 each,
  // 2 x 32 layers x 8 KV heads x 128 x 4096 x 8 x 2 bytes.
  ModelConfig mi = load_model_config("mistral-7b-v0.1", mdir);
  const auto mw = predictor::serving_memory(mi, DType::kBf16, DType::kBf16, 1, 8, 10000, h100);
  EXPECT_NEAR(mw.kv_cache_gb, 2.0 * 32 * 8 * 128 * 4096 * 8 * 2 / 1e9, 1e-12);
  // Its KV room, 77,309,411,328 - 2 x 7,241,732,096 B at 131,072 B per token, is 479,323 tokens;
  // a sequence of 10,000 tokens holds its 4,096-token window: 117 sequences.
  EXPECT_EQ(mw.kv_capacity_tokens, 479323);
  EXPECT_EQ(mw.max_sequences, 117);
  EXPECT_NEAR(predictor::serving_memory(mi, DType::kBf16, DType::kBf16, 1, 8, 1000, h100).kv_cache_gb,
              2.0 * 32 * 8 * 128 * 1000 * 8 * 2 / 1e9, 1e-12);
  // At tp 4 the 4 KV heads split evenly: a quarter of every weight but the norms.
  auto r4 = predictor::serving_memory(q, DType::kBf16, DType::kBf16, 4, 64, 4097, h100);
  EXPECT_NEAR(r4.weights_gb, ((29909594112.0 + 622329856.0) / 4 + 198656.0) * 2 / 1e9, 1e-9);
  // The pass's transient tensors. Qwen3-30B-A3B at tp 8, 64 prompts of 4,096 tokens at once: a
  // token holds its hidden state and residual (2 x 2,048) and the larger of attention's Q, K, V
  // and output ((2 x 4 + 2 x 1) x 128 = 1,280) and fused_moe's caches for its 8 experts
  // (8 x (3 x 768 / 8 + 2,048) = 18,688): 2 B x 22,784 = 45,568 B; a sequence its logits,
  // 151,936 x (2 / 8 + 4) B = 645,728 B.
  const auto rp = predictor::serving_memory(q, DType::kBf16, DType::kBf16, 8, 64, 4097, h100, 1, 0, {0, 4096});
  EXPECT_NEAR(rp.activations_gb, (64.0 * 4096 * 45568 + 64.0 * 645728) / 1e9, 1e-12);
  EXPECT_NEAR(rp.total_gb(), rq.total_gb() + rp.activations_gb, 1e-12);
  // The KV room leaves them out: (77,309,411,328 - weights - activations) / (2 x 48 x 128 x 2 B)
  // tokens.
  EXPECT_EQ(rp.kv_capacity_tokens,
            static_cast<int64_t>((77309411328.0 - rq.weights_gb * 1e9 - rp.activations_gb * 1e9) / 24576.0));
}

// Pipeline stages' memory: the GPU of the stage holding the most. Llama-3.1-8B over 2 stages of
// 16 layers: a layer is 218,103,808 GEMM + 8,192 norm parameters (436,224,000 B in BF16); the
// first stage adds the input embedding (128,256 x 4,096 x 2 B = 1,050,673,152), the last the LM
// head and the final norm (8,192 B), so the last is the larger; the two stages sum to the
// 16,060,522,496 B of one GPU. Each GPU caches its own 16 layers.
TEST(Serving, PipelineMemoryIsTheLargestStage) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  ModelConfig m = load_model_config("llama-3.1-8b", mdir);
  auto s2 = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 1, 1, 1000, h100, 2);
  // Each GPU caches 16 layers (65,536 B per token) beside ~8.03 GB: the last stage, with the
  // head, runs out first at (77,309,411,328 - 8,030,265,344) / 65,536 = 1,057,115 tokens.
  EXPECT_EQ(s2.kv_capacity_tokens, 1057115);
  EXPECT_EQ(s2.max_sequences, 1057);
  EXPECT_NEAR(s2.weights_gb, (16 * 436224000.0 + 1050673152.0 + 8192.0) / 1e9, 1e-9);
  EXPECT_NEAR(s2.kv_cache_gb, 0.065536, 1e-12);
  // A decode step of 8 sequences runs as 2 microbatches of 4: the last stage holds 4 tokens of
  // activations (102,400 B each) and 4 sequences' logits (769,536 B each), 3,487,744 B, and
  // runs out at (77,309,411,328 - 8,030,265,344 - 3,487,744) / 65,536 = 1,057,062 tokens.
  const auto d2 = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 1, 8, 1000, h100, 2, 0, {0, 1});
  EXPECT_NEAR(d2.activations_gb, 3487744e-9, 1e-15);
  EXPECT_EQ(d2.kv_capacity_tokens, 1057062);
  // Llama-3.1-405B, 126 layers over 4 stages (31, 32, 32, 31) under tp 8: a middle stage's 32
  // layers of (3,187,671,040 / 8 GEMM + 32,768 norm) parameters outweigh the first stage's 31
  // and its 2,101,346,304 / 8 embedding rows, and the last's 31 with the head.
  ModelConfig big = load_model_config("llama-3.1-405b", mdir);
  auto s4 = predictor::serving_memory(big, DType::kBf16, DType::kBf16, 8, 1, 1000, h100, 4);
  EXPECT_NEAR(s4.weights_gb, 32 * (3187671040.0 / 8 + 32768.0) * 2 / 1e9, 1e-9);
  // A tied head on a pipeline's last stage is a second copy of the embedding (Llama-3.1-8B with
  // tied embeddings: one table on one GPU, one on each of 2 stages).
  ModelConfig tied = m;
  tied.tie_embeddings = true;
  auto t1 = predictor::serving_memory(tied, DType::kBf16, DType::kBf16, 1, 1, 1, h100, 1);
  auto t2 = predictor::serving_memory(tied, DType::kBf16, DType::kBf16, 1, 1, 1, h100, 2);
  EXPECT_NEAR(t2.weights_gb, (16 * 436224000.0 + 1050673152.0 + 8192.0) / 1e9, 1e-9);
  EXPECT_NEAR(t1.weights_gb, (32 * 436224000.0 + 1050673152.0 + 8192.0) / 1e9, 1e-9);
}

// Serving pipelines in time: the stages run one microbatch after another, so one sequence over 2
// stages costs what one GPU's step does plus the hand-over; a batch in 2 microbatches overlaps
// them (each stage busy with one while the other runs the other).
TEST(Serving, PipelineStepsOverlapMicrobatches) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  ModelConfig m = load_model_config("llama-3.1-8b", mdir);
  const GpuSpec& gpu = registry().resolve("H100-SXM");
  auto step = [&](Mode mode, int64_t batch, int64_t pp) {
    return predictor::forecast_model(
        build_serving_graph(m, mode, batch, mode == Mode::kPrefill ? 1024 : 2048, DType::kBf16, DType::kBf16, 1, 1, 0, pp),
        gpu, p);
  };
  // One sequence: the same kernels, plus one hand-over of 2 x 4,096 BF16 values (latency-bound).
  const auto d1 = step(Mode::kDecode, 1, 1), d1p = step(Mode::kDecode, 1, 2);
  EXPECT_GT(d1p.total_ms, d1.total_ms);
  EXPECT_LT(d1p.total_ms - d1.total_ms, 0.05);
  EXPECT_NEAR(d1p.communication_ms, d1p.total_ms - d1.total_ms, 1e-9);
  // Two prompts in two microbatches: the second enters the first stage while the first is in
  // the second, so the prefill ends before two one-prompt passes, after one.
  const double one = step(Mode::kPrefill, 1, 1).total_ms, two = step(Mode::kPrefill, 2, 2).total_ms;
  EXPECT_GT(two, 1.3 * one);
  EXPECT_LT(two, 1.7 * one);
  // Decoding 8 sequences as 2 microbatches of 4: a step lasts at least one microbatch's pass and
  // at most the two passes back to back.
  const double four = step(Mode::kDecode, 4, 1).total_ms, eight = step(Mode::kDecode, 8, 2).total_ms;
  EXPECT_GE(eight, four);
  EXPECT_LT(eight, 2 * four);
  // The all-reduces on the critical path follow the same path: Llama-3.1-70B on tp 2, decoding
  // 32 sequences as 2 microbatches of 16 over 2 stages, waits for about one 16-sequence step's
  // all-reduces (each stage's, twice), plus the hand-over; not for both microbatches' of every
  // stage.
  const ModelConfig big = load_model_config("llama-3.1-70b", mdir);
  auto dec = [&](int64_t batch, int64_t pp) {
    return predictor::forecast_model(
        build_serving_graph(big, Mode::kDecode, batch, 2048, DType::kBf16, DType::kBf16, 2, 1, 0, pp), gpu, p);
  };
  const auto single = dec(16, 1), piped = dec(32, 2);
  const double handover = predictor::send_recv_ms(2.0 * 16 * 8192 * 2, gpu);
  ASSERT_GT(single.communication_ms, 0);
  EXPECT_NEAR(piped.communication_ms - handover, single.communication_ms, 0.05 * single.communication_ms);
}

// generate = prefill + decode steps at growing context: checked against separately built
// graphs (3 tokens: every step forecast), and the sampled path (long runs) against the sum
// of every step.
// The memo a capacity search opens: a query seen before on the same spec is answered from it
// (the same forecast), a new one is forecast, and nothing is kept once the scope ends.
TEST(Predictor, MemoScopeAnswersRepeatedQueries) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const GpuSpec& h200 = registry().resolve("H200");
  const std::vector<KernelQuery> qs = {gemm_q(16, 4096, 6144, DType::kBf16), gemm_q(4096, 4096, 6144, DType::kBf16),
                                       attention_prefill_q(2, 1024, 32, 8, 128, DType::kBf16, DType::kBf16),
                                       vec_q(OpKind::kRmsNorm, 4096, 4096, DType::kBf16)};
  const auto plain = p.predict(qs, h100);
  EXPECT_EQ(p.memo_hits() + p.memo_misses(), 0);  // no scope: nothing kept
  {
    const predictor::KernelPredictor::MemoScope memo(p);
    const auto first = p.predict(qs, h100);
    EXPECT_EQ(p.memo_misses(), 4);
    EXPECT_EQ(p.memo_hits(), 0);
    const auto again = p.predict({qs[1], qs[3], gemm_q(8, 4096, 6144, DType::kBf16)}, h100);
    EXPECT_EQ(p.memo_hits(), 2);
    EXPECT_EQ(p.memo_misses(), 5);
    EXPECT_EQ(again[0].latency_ms, first[1].latency_ms);
    EXPECT_EQ(again[1].latency_ms, first[3].latency_ms);
    p.predict(qs[0], h200);  // another spec: forecast afresh
    EXPECT_EQ(p.memo_misses(), 6);
    for (size_t i = 0; i < qs.size(); ++i) EXPECT_NEAR(first[i].latency_ms, plain[i].latency_ms, 1e-5 * plain[i].latency_ms);
  }
  {
    const predictor::KernelPredictor::MemoScope memo(p);
    p.predict(qs, h100);
    EXPECT_EQ(p.memo_hits(), 0);  // dropped with the last scope
    EXPECT_EQ(p.memo_misses(), 4);
  }
}

TEST(Serving, GenerateSumsPrefillAndDecodeSteps) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  ModelConfig m = load_model_config("llama-3.1-8b", mdir);
  const GpuSpec& gpu = registry().resolve("H200");
  auto g = predictor::forecast_generate(m, gpu, p, 4, 1000, 3, DType::kBf16, DType::kBf16, Parallelism{});
  auto step = [&](Mode mode, int64_t tokens) {
    return predictor::forecast_model(build_serving_graph(m, mode, 4, tokens, DType::kBf16, DType::kBf16, 1), gpu, p).total_ms;
  };
  const double prefill = step(Mode::kPrefill, 1000), d1 = step(Mode::kDecode, 1000), d2 = step(Mode::kDecode, 1001);
  // To the float32 networks' precision: generate forecasts each kernel once (MemoScope), in a
  // batch of other queries than a step alone, and BLAS rounds a batch's rows by its blocking.
  EXPECT_NEAR(g.ttft_ms, prefill, 1e-6 * prefill);
  EXPECT_NEAR(g.tpot_ms, (d1 + d2) / 2, 1e-6 * d1);
  EXPECT_NEAR(g.e2e_ms, prefill + d1 + d2, 1e-6 * prefill);
  EXPECT_NEAR(g.tokens_per_s, 4 * 3 / (g.e2e_ms * 1e-3), 1e-6);
  EXPECT_EQ(g.decode_steps_forecast, 2);
  auto longer = predictor::forecast_generate(m, gpu, p, 4, 1000, 200, DType::kBf16, DType::kBf16, Parallelism{});
  EXPECT_EQ(longer.decode_steps_forecast, 33);
  double exact = 0;
  for (int64_t i = 1; i <= 199; ++i) exact += step(Mode::kDecode, 1000 + i - 1);
  EXPECT_NEAR(longer.tpot_ms, exact / 199, 0.01 * exact / 199);
  EXPECT_GT(step(Mode::kDecode, 8000), d1);  // a longer cache costs more
}

// What a whole-model forecast says it rests on, per kernel family (ForecastBasis). A Llama decode
// step has, by hand, 5 distinct GEMMs (the QKV, output, gate-up and down projections of every
// layer, and the LM head over the last token), one decode attention, and 4 memory ops (RMSNorm:
// the two per layer and the final norm are one shape; RoPE; SiLU-mul; the residual add). The
// GPU's standing is judged against the training GPUs the bundled manifest lists, and the
// network's share on an unseen GPU is 1 - the family's unseen_prior_weight.
TEST(Serving, ForecastBasisPerFamily) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  const ModelConfig m = load_model_config("llama-3.1-8b", mdir);
  const OpGraph g = build_serving_graph(m, Mode::kDecode, 8, 2048, DType::kBf16, DType::kBf16, 1);
  const auto& fams = p.manifest().families;
  const trainer::FamilyEntry& gemm = fams.at("gemm");
  auto basis = [&](const std::string& gpu) {
    std::map<std::string, predictor::ForecastBasis> by;
    for (const auto& b : predictor::forecast_model(g, registry().resolve(gpu), p).basis) by[family_name(b.family)] = b;
    return by;
  };
  const auto h200 = basis("H200");
  ASSERT_EQ(h200.size(), 3u);
  EXPECT_EQ(h200.at("gemm").kernels, 5);
  EXPECT_EQ(h200.at("generation_attention").kernels, 1);
  EXPECT_EQ(h200.at("memory_op").kernels, 4);
  // The H200 is none of the GEMM family's training GPUs nor a twin of one: its forecast blends.
  EXPECT_EQ(std::string(h200.at("gemm").standing.name()), "unseen");
  EXPECT_EQ(h200.at("gemm").standing.training_gpus, static_cast<int>(gemm.training_gpus.size()));
  EXPECT_NEAR(h200.at("gemm").network_weight, 1 - gemm.config.unseen_prior_weight, 1e-12);
  EXPECT_EQ(std::string(h200.at("gemm").forecast_by()), "network+fitted_roofline");
  EXPECT_TRUE(h200.at("gemm").standing.vendor_trained);
  EXPECT_EQ(std::string(h200.at("memory_op").forecast_by()), "physics");
  EXPECT_EQ(h200.at("memory_op").standing.training_gpus, static_cast<int>(p.manifest().memory_ops.training_gpus.size()));
  // A training GPU of every family here: the GEMMs by the network alone.
  const auto a100 = basis("A100-SXM4-80GB");
  for (const auto& kv : a100) EXPECT_EQ(std::string(kv.second.standing.name()), "training") << kv.first;
  EXPECT_EQ(std::string(a100.at("gemm").forecast_by()), "network");
  // The GB200 is a twin of the B200 (the same die and memory system): the GEMM network applies.
  const auto gb200 = basis("GB200");
  EXPECT_EQ(std::string(gb200.at("gemm").standing.name()), "twin");
  EXPECT_EQ(std::string(gb200.at("gemm").forecast_by()), "network");
  // No AMD GPU is among the LLM-era families' training GPUs, and the text says so.
  const auto mi300 = predictor::forecast_model(g, registry().resolve("MI300X"), p);
  for (const auto& b : mi300.basis) EXPECT_FALSE(b.standing.vendor_trained) << family_name(b.family);
  const std::string text = predictor::basis_text(mi300.basis, mi300.gpu_vendor);
  EXPECT_NE(text.find("basis         gemm (5 kernels): not one of its " + std::to_string(gemm.training_gpus.size()) +
                      " training GPUs, no AMD GPU among them: network^0.70 x fitted roofline^0.30"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("memory_op (4 kernels): not one of its"), std::string::npos) << text;
  // A prefill and a decode step as one list: the same families, kernels added.
  const OpGraph pre = build_serving_graph(m, Mode::kPrefill, 8, 2048, DType::kBf16, DType::kBf16, 1);
  const auto pb = predictor::forecast_model(pre, registry().resolve("H200"), p).basis;
  const auto merged = predictor::merge_basis(pb, predictor::forecast_model(g, registry().resolve("H200"), p).basis);
  ASSERT_EQ(merged.size(), 4u);  // context_attention joins
  for (const auto& b : merged)
    if (b.family == Family::kGemm) EXPECT_EQ(b.kernels, 10);  // the prefill's five shapes and the decode's
}

// forecast_errors.json (predictor/forecast_errors.h): a file written by hand, two GEMM GPUs of
// 10 and 30 % on bf16 (mean 20), one of 50 % on fp8, and memory_op's rmsnorm cells of 4 and 8 %
// keyed by the op whatever the dtype; stamped with the manifest's training of each family.
namespace {
std::string write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}
std::string errors_json(const std::string& gemm_at, const std::string& gemm_hash, const std::string& cells_extra = "",
                        const std::string& heldout = R"("heldout_pct": 10, "heldout_cells": [
    {"gpu": "NVIDIA A100-SXM4-80GB", "key": "gemm/bf16", "rows": 40, "mape_pct": 3.5, "bias": 1.01}], )") {
  return R"({"families": {"gemm": {)" + heldout + R"("trained_at": ")" + gemm_at + R"(", "data_hash": ")" +
         gemm_hash + R"(", "cells": [
    {"left_out": "NVIDIA A100-SXM4-80GB", "key": "gemm/bf16", "rows": 100, "mape_pct": 10.0, "bias": 0.9},
    {"left_out": "NVIDIA L40S", "key": "gemm/bf16", "rows": 200, "mape_pct": 30.0, "bias": 1.2},
    {"left_out": "NVIDIA L40S", "key": "gemm/fp8", "rows": 50, "mape_pct": 50.0, "bias": 1.1})" +
         cells_extra + R"(]},
   "memory_op": {"trained_at": "m-at", "data_hash": "m-hash", "cells": [
    {"left_out": "NVIDIA A40", "key": "rmsnorm", "rows": 10, "mape_pct": 4.0, "bias": 1.0},
    {"left_out": "NVIDIA GeForce RTX 4090", "key": "rmsnorm", "rows": 10, "mape_pct": 8.0, "bias": 0.8}]}}})";
}
}  // namespace

TEST(ForecastErrors, ReadsCellsByOpAndDtypeAndDropsAnotherTraining) {
  trainer::WeightsManifest m;
  m.families["gemm"].trained_at = "g-at";
  m.families["gemm"].data_hash = "g-hash";
  m.memory_ops.fitted_at = "m-at";
  m.memory_ops.data_hash = "m-hash";
  const std::string path = write_text(::testing::TempDir() + "unseen_errors_ok.json", errors_json("g-at", "g-hash"));
  const auto e = predictor::ForecastErrors::load(path, m);
  const auto bf16 = e.find(gemm_q(64, 4096, 4096, DType::kBf16));
  ASSERT_TRUE(bf16);
  EXPECT_EQ(bf16->left_out, (std::vector<std::string>{"NVIDIA A100-SXM4-80GB", "NVIDIA L40S"}));
  EXPECT_DOUBLE_EQ(bf16->mean_pct(), 20.0);
  EXPECT_EQ(bf16->text(), "gemm/bf16 20.0 % (10.0-30.0 % over 2 GPUs left out in turn)");
  const auto fp8 = e.find(gemm_q(64, 4096, 4096, DType::kFp8));
  ASSERT_TRUE(fp8);
  EXPECT_EQ(fp8->text(), "gemm/fp8 50.0 % (NVIDIA L40S left out)");
  EXPECT_FALSE(e.find(gemm_q(64, 4096, 4096, DType::kFp16)));  // no cell of that dtype
  EXPECT_FALSE(e.find(attention_decode_q(1, 1024, 32, 8, 128, DType::kBf16, DType::kBf16)));  // nor family
  // A memory op by its op: the bf16 RMSNorm takes both GPUs' cells, residual add none.
  const auto rms = e.find(vec_q(OpKind::kRmsNorm, 64, 4096, DType::kBf16));
  ASSERT_TRUE(rms);
  EXPECT_DOUBLE_EQ(rms->mean_pct(), 6.0);
  EXPECT_FALSE(e.find(vec_q(OpKind::kResidualAdd, 64, 4096, DType::kBf16)));
  EXPECT_TRUE(e.stale().empty());
  // Held-out shapes: per training GPU and key.
  const auto held = e.find_heldout(gemm_q(64, 4096, 4096, DType::kBf16), "NVIDIA A100-SXM4-80GB");
  ASSERT_TRUE(held);
  EXPECT_EQ(held->text(), "gemm/bf16 3.5 % (40 rows)");
  EXPECT_EQ(held->pct, 10);
  EXPECT_FALSE(e.find_heldout(gemm_q(64, 4096, 4096, DType::kBf16), "NVIDIA L40S"));
  EXPECT_FALSE(e.find_heldout(gemm_q(64, 4096, 4096, DType::kFp8), "NVIDIA A100-SXM4-80GB"));
  // The GEMM family retrained since (another time, or other data): its cells are not quoted,
  // memory_op's still are.
  for (const auto& [at, hash] : {std::pair<std::string, std::string>{"g-other", "g-hash"}, {"g-at", "g-other"}}) {
    const auto s = predictor::ForecastErrors::load(
        write_text(::testing::TempDir() + "unseen_errors_stale.json", errors_json(at, hash)), m);
    EXPECT_FALSE(s.find(gemm_q(64, 4096, 4096, DType::kBf16)));
    EXPECT_FALSE(s.find_heldout(gemm_q(64, 4096, 4096, DType::kBf16), "NVIDIA A100-SXM4-80GB"));
    EXPECT_TRUE(s.find(vec_q(OpKind::kRmsNorm, 64, 4096, DType::kBf16)));
    EXPECT_EQ(s.stale(), std::vector<std::string>{"gemm"});
  }
}

TEST(ForecastErrors, MalformedFilesNameTheirField) {
  trainer::WeightsManifest m;
  const std::string dir = ::testing::TempDir();
  auto load = [&](const std::string& name, const std::string& text) {
    return [&m, path = write_text(dir + name, text)] { predictor::ForecastErrors::load(path, m); };
  };
  expect_error<ConfigError>(load("ue_json.json", "{\"families\": "), {"ue_json.json", "not valid JSON"});
  expect_error<ConfigError>(load("ue_nofam.json", "{}"), {"ue_nofam.json", "field 'families' missing"});
  expect_error<ConfigError>(load("ue_bmm.json", R"({"families": {"bmm": {}}})"),
                            {"families.bmm", "not an LLM-era kernel family"});
  expect_error<ConfigError>(
      load("ue_key.json", errors_json("a", "h", R"(, {"left_out": "X", "key": "moe/bf16", "rows": 1, "mape_pct": 1, "bias": 1})")),
      {"ue_key.json", "families.gemm.cells[3].key", "'moe/bf16' is not a key of family gemm"});
  expect_error<ConfigError>(
      load("ue_twice.json",
           errors_json("a", "h", R"(, {"left_out": "NVIDIA L40S", "key": "gemm/bf16", "rows": 1, "mape_pct": 1, "bias": 1})")),
      {"families.gemm.cells[3].left_out", "NVIDIA L40S appears twice for gemm/bf16"});
  expect_error<ConfigError>(
      load("ue_neg.json", errors_json("a", "h", R"(, {"left_out": "Y", "key": "gemm/fp16", "rows": 1, "mape_pct": -1, "bias": 1})")),
      {"families.gemm.cells[3].mape_pct", "out of range"});
  expect_error<ConfigError>(
      load("ue_bias.json", errors_json("a", "h", R"(, {"left_out": "Y", "key": "gemm/fp16", "rows": 1, "mape_pct": 1, "bias": 0})")),
      {"families.gemm.cells[3].bias", "out of range"});
  expect_error<ConfigError>(
      load("ue_rows.json", errors_json("a", "h", R"(, {"left_out": "Y", "key": "gemm/fp16", "mape_pct": 1, "bias": 1})")),
      {"families.gemm.cells[3].rows", "missing"});
  expect_error<ConfigError>(
      load("ue_pct.json", errors_json("a", "h", "", R"("heldout_cells": [{"gpu": "G", "key": "gemm/bf16", "rows": 1,
           "mape_pct": 1, "bias": 1}], )")),
      {"families.gemm.heldout_pct", "missing"});
  expect_error<ConfigError>(load("ue_hgpu.json", errors_json("a", "h", "", R"("heldout_pct": 10, "heldout_cells": [
           {"key": "gemm/bf16", "rows": 1, "mape_pct": 1, "bias": 1}], )")),
                            {"families.gemm.heldout_cells[0].gpu", "missing"});
}

// The bundled weights with a file of their own stamps (a folder of links to them): an unseen
// GPU's GEMM quotes it, a training GPU's, a twin's and an AMD GPU's (no AMD GPU among the
// training GPUs) do not; a model's basis names each op / dtype once, in text and JSON.
TEST(ForecastErrors, QuotedWhereTheGpuIsUnseen) {
  const std::string src = trainer::weights_dir();
  const std::string dir = ::testing::TempDir() + "unseen_errors_weights";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& f : fs::directory_iterator(src))
    if (f.path().filename() != predictor::kForecastErrorsFile)
      fs::create_symlink(fs::absolute(f.path()), fs::path(dir) / f.path().filename());
  const trainer::WeightsManifest man = trainer::load_manifest(src);
  const auto& gemm = man.families.at("gemm");
  std::string text = errors_json(gemm.trained_at, gemm.data_hash);
  text.replace(text.find("m-at"), 4, man.memory_ops.fitted_at);
  text.replace(text.find("m-hash"), 6, man.memory_ops.data_hash);
  write_text(dir + "/" + predictor::kForecastErrorsFile, text);
  predictor::KernelPredictor p(dir);
  const KernelQuery q = gemm_q(64, 4096, 4096, DType::kBf16);
  const auto h200 = p.predict(q, registry().resolve("H200"));
  ASSERT_TRUE(h200.unseen_error);
  EXPECT_EQ(h200.unseen_error->key, "gemm/bf16");
  EXPECT_FALSE(h200.heldout_error);
  const auto a100 = p.predict(q, registry().resolve("A100-SXM4-80GB"));  // a training GPU
  EXPECT_FALSE(a100.unseen_error);
  ASSERT_TRUE(a100.heldout_error);
  EXPECT_EQ(a100.heldout_error->gpu, "NVIDIA A100-SXM4-80GB");
  EXPECT_FALSE(p.predict(q, registry().resolve("L40S")).heldout_error);  // a training GPU without a cell
  EXPECT_FALSE(p.predict(q, registry().resolve("GB200")).unseen_error);           // the B200's twin
  EXPECT_FALSE(p.predict(q, registry().resolve("MI300X")).unseen_error);          // no AMD GPU trained
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  const ModelConfig m = load_model_config("llama-3.1-8b", mdir);
  const OpGraph g = build_serving_graph(m, Mode::kDecode, 8, 2048, DType::kBf16, DType::kBf16, 1);
  const auto f = predictor::forecast_model(g, registry().resolve("H200"), p);
  const std::string basis = predictor::basis_text(f.basis, f.gpu_vendor);
  // The GEMM line: its standing and blend first, the error last.
  const std::string gemm_line = basis.substr(0, basis.find('\n') + 1);
  EXPECT_EQ(gemm_line.rfind("basis         gemm (5 kernels): not one of its 5 training GPUs: network^0.70 x", 0), 0u)
      << basis;
  EXPECT_NE(gemm_line.find("; leave-one-GPU-out error gemm/bf16 20.0 % (10.0-30.0 % over 2 GPUs left out in turn)\n"),
            std::string::npos)
      << basis;
  EXPECT_EQ(basis.find("generation_attention (1 kernel): not one of its 3 training GPUs: fitted roofline alone\n"),
            basis.find("generation_attention"))
      << basis;  // no cell of decode in the file: nothing quoted
  EXPECT_NE(basis.find("leave-one-GPU-out error rmsnorm 6.0 % (4.0-8.0 % over 2 GPUs left out in turn)\n"),
            std::string::npos)
      << basis;
  const nlohmann::json j = predictor::basis_json(f.basis);
  for (const auto& b : j) {
    if (b["family"] == "gemm") {
      ASSERT_EQ(b["unseen_gpu_error"].size(), 1u) << b.dump();
      EXPECT_EQ(b["unseen_gpu_error"][0]["key"], "gemm/bf16");
      EXPECT_DOUBLE_EQ(b["unseen_gpu_error"][0]["mean_mape_pct"].get<double>(), 20.0);
      EXPECT_EQ(b["unseen_gpu_error"][0]["cells"][1]["left_out"], "NVIDIA L40S");
    } else if (b["family"] == "generation_attention") {
      EXPECT_TRUE(b["unseen_gpu_error"].is_null()) << b.dump();  // the file has no decode cell
    }
    EXPECT_TRUE(b["heldout_shapes_error"].is_null()) << b.dump();
  }
  // The same step on the A100, a training GPU: its held-out shapes' error instead.
  const auto fa = predictor::forecast_model(g, registry().resolve("A100-SXM4-80GB"), p);
  const std::string on_a100 = predictor::basis_text(fa.basis, fa.gpu_vendor);
  EXPECT_EQ(on_a100.rfind("basis         gemm (5 kernels): one of its 5 training GPUs: network;", 0), 0u) << on_a100;
  EXPECT_NE(on_a100.find("; error on the 10 % of shapes left out of training gemm/bf16 3.5 % (40 rows)\n"),
            std::string::npos)
      << on_a100;
  EXPECT_EQ(on_a100.find("leave-one-GPU-out"), std::string::npos) << on_a100;
  for (const auto& b : predictor::basis_json(fa.basis))
    if (b["family"] == "gemm") {
      EXPECT_EQ(b["heldout_shapes_error"][0]["mape_pct"], 3.5) << b.dump();
      EXPECT_EQ(b["heldout_shapes_error"][0]["heldout_pct"], 10) << b.dump();
    }
}

// Continuous batching with a budget, worked by hand with a step that costs 1 ms + 1 ms per
// 1,000 tokens. Three prompts of 1,000 tokens, 4 output tokens each, 2,048 tokens a step:
//   step 1: prompts 1 and 2 whole + the first 48 tokens of prompt 3 (2,048 tokens): 3.048 ms;
//           requests 1 and 2 have their first token at 3.048;
//   step 2: 2 decoding (1,000 cached) + the other 952 of prompt 3 (954 tokens): 1.954 ms, 5.002;
//   steps 3-4: 3 decoding, mean context 1,000.67 and 1,001.67 -> 1,001, 1,002: 1.003 ms each,
//           7.008: requests 1 and 2 done, TPOT (7.008 - 3.048) / 3 = 1.32 ms;
//   step 5: request 3 alone, 1,002 cached: 1.001 ms, 8.009; TPOT (8.009 - 5.002) / 3 = 1.00233.
// TTFT mean (2 x 3.048 + 5.002) / 3 = 3.69933, last 5.002; TPOT mean 1.21411; e2e 8.009.
TEST(Serving, ScheduleChunksPromptsBesideDecodingSequences) {
  std::vector<ServingStep> steps;
  auto step_ms = [&](const ServingStep& st) {
    steps.push_back(st);
    return 1.0 + double(st.tokens()) / 1000.0;
  };
  const auto s = predictor::schedule_serving(3, 1000, 4, {2048, 0}, step_ms);
  ASSERT_EQ(steps.size(), 5u);
  ASSERT_EQ(steps[0].prefill.size(), 2u);
  EXPECT_EQ(steps[0].prefill[0].seqs, 2);
  EXPECT_EQ(steps[0].prefill[0].tokens, 1000);
  EXPECT_EQ(steps[0].prefill[1].tokens, 48);
  EXPECT_EQ(steps[0].decode_seqs, 0);
  ASSERT_EQ(steps[1].prefill.size(), 1u);
  EXPECT_EQ(steps[1].prefill[0].tokens, 952);
  EXPECT_EQ(steps[1].prefill[0].prefix, 48);
  EXPECT_EQ(steps[1].decode_seqs, 2);
  EXPECT_EQ(steps[1].decode_context, 1000);
  EXPECT_TRUE(steps[2].prefill.empty());
  EXPECT_EQ(steps[2].decode_seqs, 3);
  EXPECT_EQ(steps[2].decode_context, 1001);
  EXPECT_EQ(steps[3].decode_context, 1002);
  EXPECT_EQ(steps[4].decode_seqs, 1);
  EXPECT_EQ(steps[4].decode_context, 1002);
  EXPECT_NEAR(s.ttft_mean_ms(), (2 * 3.048 + 5.002) / 3, 1e-9);
  EXPECT_NEAR(s.ttft_max_ms(), 5.002, 1e-9);
  EXPECT_NEAR(s.tpot_mean_ms(), (2 * 1.32 + (8.009 - 5.002) / 3) / 3, 1e-9);
  EXPECT_NEAR(s.e2e_ms, 8.009, 1e-9);
  EXPECT_EQ(s.steps, 5);
  EXPECT_EQ(s.prefill_steps, 2);
  EXPECT_EQ(s.decode_steps_timed, 3);
  // Percentiles over the three requests (numpy's linear rule): TTFT 3.048, 3.048 and 5.002, so
  // p50 3.048, p90 3.048 + 0.8 x 1.954 = 4.6112, p99 3.048 + 0.98 x 1.954 = 4.96292; TPOT 1.32
  // twice and 1.00233: p50 and p99 1.32. The first two end at 3.048 + 3 x 1.32 = 7.008.
  const auto tp = predictor::request_percentiles(s.requests, &predictor::RequestTimes::ttft_ms);
  EXPECT_NEAR(tp.p50_ms, 3.048, 1e-9);
  EXPECT_NEAR(tp.p90_ms, 4.6112, 1e-9);
  EXPECT_NEAR(tp.p99_ms, 4.96292, 1e-9);
  const auto op = predictor::request_percentiles(s.requests, &predictor::RequestTimes::tpot_ms);
  EXPECT_NEAR(op.p50_ms, 1.32, 1e-9);
  EXPECT_NEAR(op.p99_ms, 1.32, 1e-9);
  EXPECT_NEAR(predictor::request_percentile(s.requests, &predictor::RequestTimes::tpot_ms, 0), (8.009 - 5.002) / 3, 1e-9);
  EXPECT_NEAR(predictor::request_percentile(s.requests, &predictor::RequestTimes::e2el_ms, 0), 7.008, 1e-9);
  EXPECT_NEAR(predictor::request_percentile(s.requests, &predictor::RequestTimes::e2el_ms, 100), 8.009, 1e-9);
  // Goodput: a 4 ms TTFT objective keeps the first two requests, 2 / 8.009 ms = 249.72 a second;
  // a 1.1 ms TPOT objective the third alone; both, none.
  predictor::SchedulerLimits slo;
  slo.slo_ttft_ms = 4;
  auto g = predictor::slo_goodput(s.requests, s.e2e_ms, slo);
  EXPECT_EQ(g.requests, 2);
  EXPECT_NEAR(g.rps, 2 / 8.009e-3, 1e-9);
  slo.slo_ttft_ms = 0, slo.slo_tpot_ms = 1.1;
  EXPECT_EQ(predictor::slo_goodput(s.requests, s.e2e_ms, slo).requests, 1);
  slo.slo_ttft_ms = 4;
  EXPECT_EQ(predictor::slo_goodput(s.requests, s.e2e_ms, slo).requests, 0);
  // Counts expand: 10 once and 20 three times are [10, 20, 20, 20]: p25 at rank 0.75 is 17.5.
  const std::vector<predictor::RequestTimes> counted{{1, 10, 0, 0}, {3, 20, 0, 0}};
  EXPECT_NEAR(predictor::request_percentile(counted, &predictor::RequestTimes::ttft_ms, 25), 17.5, 1e-12);
  EXPECT_NEAR(predictor::request_percentile(counted, &predictor::RequestTimes::ttft_ms, 50), 20, 1e-12);
  EXPECT_EQ(predictor::request_percentile({}, &predictor::RequestTimes::ttft_ms, 50), 0);
  // No budget: every prompt in the first step, then 3 decode steps of all three (1,000, 1,001
  // and 1,002 cached): TTFT 4.0 ms for all, TPOT 1.003 ms, e2e 7.009 ms.
  steps.clear();
  const auto u = predictor::schedule_serving(3, 1000, 4, {}, step_ms);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].prefill.size(), 1u);
  EXPECT_EQ(steps[0].prefill[0].seqs, 3);
  EXPECT_EQ(steps[3].decode_context, 1002);
  EXPECT_NEAR(u.ttft_mean_ms(), 4.0, 1e-9);
  EXPECT_NEAR(u.ttft_max_ms(), 4.0, 1e-9);
  EXPECT_NEAR(u.tpot_mean_ms(), 1.003, 1e-9);
  EXPECT_NEAR(u.e2e_ms, 7.009, 1e-9);
  // At most 2 sequences at once, no budget: prompts 1 and 2 (2,000 tokens, 3.0 ms), their
  // 2 decode steps (1,000 and 1,001 cached: 1.002 ms each, 5.004), then prompt 3 (2.0 ms, 7.004)
  // and its 2 steps (1.001 ms each, 9.006). TTFT (3 + 3 + 7.004) / 3, the third request
  // waiting for a slot; TPOT 1.002, 1.002 and 1.001.
  steps.clear();
  const auto c = predictor::schedule_serving(3, 1000, 3, {0, 2}, step_ms);
  ASSERT_EQ(steps.size(), 6u);
  EXPECT_EQ(steps[0].prefill[0].seqs, 2);
  EXPECT_EQ(steps[2].decode_seqs, 2);
  ASSERT_EQ(steps[3].prefill.size(), 1u);
  EXPECT_EQ(steps[3].prefill[0].seqs, 1);
  EXPECT_EQ(steps[3].decode_seqs, 0);
  EXPECT_NEAR(c.ttft_mean_ms(), (3.0 + 3.0 + 7.004) / 3, 1e-9);
  EXPECT_NEAR(c.ttft_max_ms(), 7.004, 1e-9);
  EXPECT_NEAR(c.tpot_mean_ms(), (1.002 + 1.002 + 1.001) / 3, 1e-9);
  EXPECT_NEAR(c.e2e_ms, 9.006, 1e-9);
  EXPECT_EQ(c.prefill_steps, 2);
  expect_error<ConfigError>([&] { predictor::schedule_serving(8, 100, 4, {4, 0}, step_ms); },
                            {"--max-batched-tokens: 4 is below the 8 sequences that run at once (--batch)"});
  // A cap lets a smaller budget do: 4 tokens for at most 4 sequences.
  EXPECT_GT(predictor::schedule_serving(8, 100, 4, {4, 4}, step_ms).e2e_ms, 0);
  expect_error<ConfigError>([&] { predictor::schedule_serving(64, 1 << 20, 4, {64, 0}, step_ms); },
                            {"--max-batched-tokens 64", "more than 20000 steps"});
  // Prefill first (SGLang): the same 3 requests and budget, but step 2 runs the other 952 prompt
  // tokens alone (1.952 ms, 5.000), the first two waiting; then 3 decode steps of all three
  // (1,000, 1,001, 1,002 cached: 1.003 ms each, 8.009). TTFT (2 x 3.048 + 5.0) / 3; TPOT
  // (8.009 - 3.048) / 3 for the first two, (8.009 - 5.0) / 3 for the third.
  steps.clear();
  const auto pf = predictor::schedule_serving(3, 1000, 4, {2048, 0, false, true}, step_ms);
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[1].decode_seqs, 0);
  EXPECT_EQ(steps[1].prefill[0].tokens, 952);
  EXPECT_EQ(steps[2].decode_seqs, 3);
  EXPECT_EQ(steps[2].decode_context, 1000);
  EXPECT_NEAR(pf.ttft_mean_ms(), (2 * 3.048 + 5.0) / 3, 1e-9);
  EXPECT_NEAR(pf.tpot_mean_ms(), (2 * (8.009 - 3.048) / 3 + (8.009 - 5.0) / 3) / 3, 1e-9);
  EXPECT_NEAR(pf.e2e_ms, 8.009, 1e-9);
  // Its steps hold no decodes, so a budget below the running sequences is allowed.
  EXPECT_GT(predictor::schedule_serving(8, 100, 4, {4, 0, false, true}, step_ms).e2e_ms, 0);
  predictor::SchedulerArgs sa;
  sa.schedule = "prefill-first";
  EXPECT_TRUE(sa.limits().prefill_first);
  EXPECT_STREQ(sa.first_given(), "--schedule");
  sa.schedule = "fifo";
  expect_error<ConfigError>([&] { sa.limits(); },
                            {"--schedule: expected mixed (vLLM) or prefill-first (SGLang), got 'fifo'"});
  expect_error<ConfigError>([&] { sa.limits(true); }, {"schedule: expected mixed (vLLM)"});
  // Requests arriving at 1,000 a second, 1 ms apart (uniform): the first prompt alone (2.0 ms,
  // its TTFT), then its decode beside the second prompt, which arrived at 1 ms (1,001 tokens,
  // 2.001 ms: the first is done at 4.001, the second's TTFT 4.001 - 1 = 3.001), then the second's
  // decode alone (1.001 ms, 5.002). TTFT mean 2.5005, TPOT (2.001 + 1.001) / 2.
  const auto at = predictor::arrival_times_ms(4, 4.0, true);
  EXPECT_EQ(at, (std::vector<double>{0, 250, 500, 750}));
  const auto poisson = predictor::arrival_times_ms(20000, 50.0, false);
  EXPECT_EQ(poisson.front(), 0.0);
  EXPECT_TRUE(std::is_sorted(poisson.begin(), poisson.end()));
  EXPECT_NEAR(poisson.back() / 19999, 20.0, 0.6);  // the mean gap of a Poisson process at 50/s: 20 ms
  steps.clear();
  predictor::SchedulerLimits arriving;
  arriving.request_rate = 1000, arriving.uniform_arrivals = true;
  const auto ar = predictor::schedule_serving(2, 1000, 2, arriving, step_ms);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].prefill[0].seqs, 1);
  EXPECT_EQ(steps[1].decode_seqs, 1);
  EXPECT_EQ(steps[1].prefill[0].tokens, 1000);
  EXPECT_NEAR(ar.ttft_mean_ms(), (2.0 + 3.001) / 2, 1e-9);
  EXPECT_NEAR(ar.ttft_max_ms(), 3.001, 1e-9);
  EXPECT_NEAR(ar.tpot_mean_ms(), (2.001 + 1.001) / 2, 1e-9);
  EXPECT_NEAR(ar.e2e_ms, 5.002, 1e-9);
  predictor::SchedulerArgs rate_args;
  rate_args.request_rate = 0;
  expect_error<ConfigError>([&] { rate_args.limits(); }, {"--request-rate: 0 out of range [0.001, 1e6]"});
  rate_args.request_rate = 1e-300;  // arrivals 1e303 ms apart: a step's time would vanish beside them
  expect_error<ConfigError>([&] { rate_args.limits(); }, {"--request-rate: 1e-300 out of range"});
  rate_args.request_rate = 2, rate_args.arrivals = "bursty";
  expect_error<ConfigError>([&] { rate_args.limits(); }, {"--arrivals: expected poisson or uniform, got 'bursty'"});
  rate_args.arrivals = "uniform";
  EXPECT_TRUE(rate_args.limits().uniform_arrivals);
  EXPECT_EQ(rate_args.limits().request_rate, 2.0);
  rate_args.request_rate.reset();
  expect_error<ConfigError>([&] { rate_args.limits(true); }, {"arrivals applies with request_rate only"});
  // Prefix caching: two prompts of 1,000 tokens with 600 cached run 2 x 400 tokens after the
  // prefix (1.8 ms), then one decode step of both (1,000 cached: 1.002 ms).
  steps.clear();
  const auto pre = predictor::schedule_serving(2, 1000, 2, {}, step_ms, 600);
  ASSERT_EQ(steps.size(), 2u);
  ASSERT_EQ(steps[0].prefill.size(), 1u);
  EXPECT_EQ(steps[0].prefill[0].tokens, 400);
  EXPECT_EQ(steps[0].prefill[0].prefix, 600);
  EXPECT_EQ(steps[1].decode_context, 1000);
  EXPECT_NEAR(pre.ttft_mean_ms(), 1.8, 1e-9);
  EXPECT_NEAR(pre.e2e_ms, 2.802, 1e-9);
  expect_error<ConfigError>([&] { predictor::schedule_serving(2, 1000, 2, {}, step_ms, 1000); },
                            {"--cached-prefix: 1000 out of range [0, 999]"});
}

// Requests of their own lengths (--range-ratio): the draws, then two requests scheduled by hand
// with the step of 1 ms + 1 ms per 1,000 tokens.
TEST(Serving, RequestsOfTheirOwnLengthsByHand) {
  using predictor::RequestLength;
  using predictor::request_lengths;
  EXPECT_EQ(request_lengths(3, 100, 8, 0), (std::vector<RequestLength>{{100, 8}, {100, 8}, {100, 8}}));
  // vLLM's random dataset: integers in [floor(L (1 - r)), ceil(L (1 + r))], a uniform draw.
  const auto v = request_lengths(20000, 1000, 101, 0.5);
  EXPECT_EQ(v, request_lengths(20000, 1000, 101, 0.5));  // a fixed seed
  int64_t seq_lo = 1 << 30, seq_hi = 0, gen_lo = 1 << 30, gen_hi = 0;
  double seq_sum = 0, gen_sum = 0;
  for (const RequestLength& l : v) {
    seq_lo = std::min(seq_lo, l.seq), seq_hi = std::max(seq_hi, l.seq), seq_sum += double(l.seq);
    gen_lo = std::min(gen_lo, l.gen), gen_hi = std::max(gen_hi, l.gen), gen_sum += double(l.gen);
  }
  EXPECT_EQ(seq_lo, 500);  // 20,000 draws reach both ends of 1,001 values
  EXPECT_EQ(seq_hi, 1500);
  EXPECT_EQ(gen_lo, 50);   // floor(50.5)
  EXPECT_EQ(gen_hi, 152);  // ceil(151.5)
  EXPECT_NEAR(seq_sum / 20000, 1000, 5);  // the mean of a uniform draw over 500..1500; sd 289 / sqrt(20000) = 2
  EXPECT_NEAR(gen_sum / 20000, 101, 0.5);
  // Prompts never reach below the cached prefix + 1, outputs below 2.
  for (const RequestLength& l : request_lengths(1000, 10, 3, 0.9, 6)) {
    EXPECT_GE(l.seq, 6);
    EXPECT_GE(l.gen, 2);
  }
  predictor::SchedulerArgs args;
  args.range_ratio = 1;
  expect_error<ConfigError>([&] { args.limits(); }, {"--range-ratio: 1 out of range [0, 1)"});
  expect_error<ConfigError>([&] { args.limits(true); }, {"range_ratio: 1 out of range [0, 1)"});
  args.range_ratio = 0.25;
  EXPECT_STREQ(args.first_given(), "--range-ratio");
  const predictor::SchedulerLimits lim = args.limits();
  EXPECT_TRUE(lim.binds());

  // Two requests at once, no budget: one step of both prompts, their first tokens at its end;
  // both decode while both run (1.002 ms a step), then the longer alone (1.001 ms).
  const auto len = request_lengths(2, 1000, 20, 0.25);
  ASSERT_NE(len[0].gen, len[1].gen) << "the seed's draws: pick another pair of lengths";
  std::vector<ServingStep> steps;
  auto step_ms = [&](const ServingStep& st) {
    steps.push_back(st);
    return 1.0 + double(st.tokens()) / 1000.0;
  };
  const auto s = predictor::schedule_serving(2, 1000, 20, lim, step_ms);
  ASSERT_EQ(steps[0].prefill.size(), 2u);
  EXPECT_EQ(steps[0].prefill[0].tokens, len[0].seq);
  EXPECT_EQ(steps[0].prefill[1].tokens, len[1].seq);
  const double ttft = 1.0 + double(len[0].seq + len[1].seq) / 1000.0;
  const int64_t both = std::min(len[0].gen, len[1].gen) - 1, alone = std::abs(len[0].gen - len[1].gen);
  EXPECT_EQ(s.steps, 1 + both + alone);
  EXPECT_EQ(s.output_tokens, len[0].gen + len[1].gen);
  const double short_end = ttft + 1.002 * double(both), long_end = short_end + 1.001 * double(alone);
  EXPECT_NEAR(s.ttft_mean_ms(), ttft, 1e-9);
  EXPECT_NEAR(s.e2e_ms, long_end, 1e-9);
  const int64_t g_short = std::min(len[0].gen, len[1].gen), g_long = std::max(len[0].gen, len[1].gen);
  EXPECT_NEAR(s.tpot_mean_ms(),
              ((short_end - ttft) / double(g_short - 1) + (long_end - ttft) / double(g_long - 1)) / 2, 1e-9);
  // The decode steps' context is the mean of the sequences': each at its prompt + tokens so far.
  ASSERT_FALSE(steps[1].prefill.size());
  EXPECT_EQ(steps[1].decode_seqs, 2);
  EXPECT_EQ(steps[1].decode_context, std::llround(double(len[0].seq + len[1].seq) / 2));
  EXPECT_EQ(steps.back().decode_seqs, 1);
}

// Chunked prefill on the bundled weights: a budget no step fills is the forecast without one
// (the step graph of whole prompts is the prefill graph); chunks of a long prompt attend their
// prefix, so they cost more than the same chunk alone, and the prompt's chunks together cost at
// least the whole prompt (fixed costs repeat).
// The decodes of a mixed step in FlashAttention-2's varlen call (vLLM on Ampere and Ada):
// one CTA per request and query head walking the cache in 128-key blocks. Llama-3.1-8B on the
// RTX 4090 (128 SMs at 2,520 MHz), 64 requests over 1,024 cached tokens (1,025 keys): 64 x 32 =
// 2,048 CTAs, 16 waves, 9 blocks: 144 x 10,865 cycles = 0.620857 ms. Hopper (FA3), Blackwell
// and AMD keep the decode kernel.
TEST(Serving, VarlenDecodesOfMixedSteps) {
  const GpuSpec& ada = registry().resolve("RTX-4090");
  const KernelQuery q = attention_decode_q(64, 1025, 32, 8, 128, DType::kBf16, DType::kBf16);
  EXPECT_NEAR(predictor::varlen_decode_ms(q, ada), 144 * 10865 / 2.52e6, 1e-12);
  // One request: 32 CTAs, still one wave; head_dim 64 halves a block; a 256-key window walks 2.
  EXPECT_NEAR(predictor::varlen_decode_ms(attention_decode_q(1, 1025, 32, 8, 128, DType::kBf16, DType::kBf16), ada),
              9 * 10865 / 2.52e6, 1e-12);
  EXPECT_NEAR(predictor::varlen_decode_ms(attention_decode_q(1, 1025, 32, 8, 64, DType::kBf16, DType::kBf16), ada),
              9 * 10865 / 2.52e6 / 2, 1e-12);
  EXPECT_NEAR(predictor::varlen_decode_ms(attention_decode_q(1, 1025, 32, 8, 128, DType::kBf16, DType::kBf16, 256), ada),
              2 * 10865 / 2.52e6, 1e-12);
  for (const char* fa2 : {"RTX-4090", "A100-SXM4-80GB", "L40S", "A10"})
    EXPECT_TRUE(predictor::fa2_varlen_mixing(registry().resolve(fa2), DType::kBf16)) << fa2;
  for (const char* other : {"H100-SXM", "H200", "B200", "MI300X", "V100-PCIE-32GB"})
    EXPECT_FALSE(predictor::fa2_varlen_mixing(registry().resolve(other), DType::kBf16)) << other;
  EXPECT_FALSE(predictor::fa2_varlen_mixing(ada, DType::kFp8));  // FA2 has no FP8 cache
  // In a forecast: a mixed step's attention on the RTX 4090 is the chunk's kernel plus the
  // varlen decodes; on the H100 the chunk's and the decode kernel's forecasts.
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  const ModelConfig m = load_model_config("llama-3.1-8b", mdir);
  ServingStep st;
  st.prefill = {{1, 512, 0}};
  st.decode_seqs = 64, st.decode_context = 1024;
  const OpGraph g = build_serving_step_graph(m, st, DType::kBf16, DType::kBf16, 1);
  auto attention_ms = [&](const GpuSpec& gpu) {
    for (const auto& o : predictor::forecast_model(g, gpu, p).ops)
      if (o.name == "model.layers.self_attn.attn") return o.fw_ms;
    return -1.0;
  };
  const KernelQuery chunk = attention_chunk_q(1, 512, 0, 32, 8, 128, DType::kBf16, DType::kBf16);
  EXPECT_NEAR(attention_ms(ada), p.predict(chunk, ada).stream_ms + 144 * 10865 / 2.52e6, 1e-9);
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  EXPECT_NEAR(attention_ms(h100), p.predict(in_step(chunk), h100).stream_ms + p.predict(in_step(q), h100).stream_ms, 1e-9);
  // An FP8 KV cache is no FA2 varlen call: the decode kernel on the RTX 4090 too.
  const OpGraph g8 = build_serving_step_graph(m, st, DType::kBf16, DType::kFp8, 1);
  double fp8_attention = -1;
  for (const auto& o : predictor::forecast_model(g8, ada, p).ops)
    if (o.name == "model.layers.self_attn.attn") fp8_attention = o.fw_ms;
  const KernelQuery chunk8 = attention_chunk_q(1, 512, 0, 32, 8, 128, DType::kBf16, DType::kFp8);
  const KernelQuery q8 = attention_decode_q(64, 1025, 32, 8, 128, DType::kBf16, DType::kFp8);
  EXPECT_NEAR(fp8_attention, p.predict(chunk8, ada).stream_ms + p.predict(q8, ada).stream_ms, 1e-9);
}

TEST(Serving, ChunkedPrefillForecasts) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  const ModelConfig m = load_model_config("llama-3.1-8b", mdir);
  const GpuSpec& gpu = registry().resolve("H100-SXM");
  const auto plain = predictor::forecast_generate(m, gpu, p, 4, 1000, 40, DType::kBf16, DType::kBf16, Parallelism{});
  const auto roomy =
      predictor::forecast_generate(m, gpu, p, 4, 1000, 40, DType::kBf16, DType::kBf16, Parallelism{}, 0, 0, {8192, 0});
  EXPECT_NEAR(roomy.ttft_ms, plain.ttft_ms, 1e-9 * plain.ttft_ms);
  EXPECT_NEAR(roomy.tpot_ms, plain.tpot_ms, 1e-9 * plain.tpot_ms);
  EXPECT_NEAR(roomy.e2e_ms, plain.e2e_ms, 1e-9 * plain.e2e_ms);
  EXPECT_EQ(roomy.prefill_steps, 1);
  EXPECT_EQ(roomy.steps, 40);
  // 1,024 tokens a step: one prompt a step (1,000 + the decoding ones), the last first token
  // after 4 steps; the mean TTFT falls below the one-step prefill, the last one rises above it.
  const auto tight =
      predictor::forecast_generate(m, gpu, p, 4, 1000, 40, DType::kBf16, DType::kBf16, Parallelism{}, 0, 0, {1024, 0});
  EXPECT_EQ(tight.prefill_steps, 4);
  EXPECT_LT(tight.ttft_ms, plain.ttft_ms);
  EXPECT_GT(tight.ttft_max_ms, plain.ttft_ms);
  EXPECT_GT(tight.ttft_max_ms, tight.ttft_ms);
  expect_error<ConfigError>(
      [&] { predictor::forecast_generate(m, gpu, p, 4, 1000, 40, DType::kBf16, DType::kBf16, Parallelism{1, 1, 2}, 0, 0, {1024, 0}); },
      {"--max-batched-tokens with --pp 2", "one pipeline stage"});
  // At most 2 of the 4 at once: the KV cache of 2 sequences, half the 4's.
  const auto capped =
      predictor::forecast_generate(m, gpu, p, 4, 1000, 40, DType::kBf16, DType::kBf16, Parallelism{}, 0, 0, {0, 2});
  EXPECT_NEAR(capped.memory.kv_cache_gb, plain.memory.kv_cache_gb / 2, 1e-12);
  EXPECT_GT(capped.ttft_max_ms, plain.ttft_ms);  // the last two wait for the first two to finish
  EXPECT_GT(capped.e2e_ms, plain.e2e_ms);
  // max_seqs auto: 512 requests of 2,048 + 256 tokens on an 80 GiB GPU, whose usable
  // 77,309,411,328 B leave 61,248,888,832 B beside 16,060,522,496 B of weights. Each sequence holds 2,304
  // tokens of cache (131,072 B each) and, its prompt run with the others' in one step, 2,048
  // tokens of activations (2 B x (2 x 4,096 + 3 x 14,336) = 102,400 B a token: the hidden state,
  // the residual and the gated FFN's three tensors) and its logits (128,256 x (2 + 4) B):
  // 512,474,624 B, so 119 run at once, which fit. At 8,192 tokens a step the cache is sized beside
  // one pass of the budget (838,860,800 B), as vLLM profiles it: 301,989,888 + 769,536 B a
  // sequence, 199 at once. 8 requests all run at once (no cap).
  predictor::SchedulerLimits autocap;
  autocap.max_seqs_auto = true;
  const auto many = predictor::forecast_generate(m, gpu, p, 512, 2048, 256, DType::kBf16, DType::kBf16, Parallelism{},
                                                 0, 0, autocap);
  EXPECT_EQ(many.limits.max_seqs, 119);
  EXPECT_TRUE(many.memory.fits());
  EXPECT_NEAR(many.memory.kv_cache_gb, 119 * 2304 * 131072e-9, 1e-9);
  EXPECT_NEAR(many.memory.activations_gb, 119 * (2048.0 * 102400 + 769536) * 1e-9, 1e-9);
  predictor::SchedulerLimits budget_auto = autocap;
  budget_auto.max_batched_tokens = 8192;
  const auto budgeted = predictor::forecast_generate(m, gpu, p, 512, 2048, 256, DType::kBf16, DType::kBf16,
                                                     Parallelism{}, 0, 0, budget_auto);
  EXPECT_EQ(budgeted.limits.max_seqs, 199);
  EXPECT_NEAR(budgeted.memory.activations_gb, (8192.0 * 102400 + 199.0 * 769536) * 1e-9, 1e-9);
  const auto few =
      predictor::forecast_generate(m, gpu, p, 8, 2048, 16, DType::kBf16, DType::kBf16, Parallelism{}, 0, 0, autocap);
  EXPECT_EQ(few.limits.max_seqs, 0);
  EXPECT_TRUE(few.limits.max_seqs_auto);
  // A cap that does not bind leaves the schedule alone, pipeline stages included: 8 requests over
  // 2 stages forecast as without --max-seqs auto (the prefill in 2 microbatches, not one stage).
  Parallelism pp2;
  pp2.pp = 2;
  const auto piped = predictor::forecast_generate(m, gpu, p, 8, 2048, 16, DType::kBf16, DType::kBf16, pp2);
  const auto piped_auto =
      predictor::forecast_generate(m, gpu, p, 8, 2048, 16, DType::kBf16, DType::kBf16, pp2, 0, 0, autocap);
  EXPECT_NEAR(piped_auto.ttft_ms, piped.ttft_ms, 1e-9 * piped.ttft_ms);
  EXPECT_NEAR(piped_auto.tpot_ms, piped.tpot_ms, 1e-9 * piped.tpot_ms);
  EXPECT_EQ(piped_auto.prefill.par.pp, 2);
  predictor::SchedulerLimits rate;
  rate.request_rate = 4;
  expect_error<ConfigError>(
      [&] { predictor::forecast_generate(m, gpu, p, 8, 2048, 16, DType::kBf16, DType::kBf16, pp2, 0, 0, rate); },
      {"--request-rate with --pp 2", "one pipeline stage"});
  predictor::SchedulerArgs seq_args;
  EXPECT_EQ(seq_args.first_given(), nullptr);
  seq_args.max_seqs = "auto";
  EXPECT_TRUE(seq_args.limits().max_seqs_auto);
  seq_args.max_seqs = "64";
  EXPECT_EQ(seq_args.limits().max_seqs, 64);
  EXPECT_FALSE(seq_args.limits().max_seqs_auto);
  seq_args.max_seqs = "12x";
  expect_error<ConfigError>([&] { seq_args.limits(); },
                            {"--max-seqs: expected auto or a count in [1, 65536], got '12x'"});
  seq_args.max_seqs.reset();
  seq_args.slo_tpot_ms = -3;
  EXPECT_STREQ(seq_args.first_given(), "--slo-tpot-ms");
  expect_error<ConfigError>([&] { seq_args.limits(); }, {"--slo-tpot-ms: -3 out of range (0, 1e9] ms"});
  seq_args.slo_tpot_ms = 20;
  EXPECT_EQ(seq_args.limits().slo_tpot_ms, 20);
  EXPECT_TRUE(seq_args.limits().has_slo());
  seq_args.max_batched_tokens = 0;
  EXPECT_STREQ(seq_args.first_given(), "--max-batched-tokens");
  expect_error<ConfigError>([&] { seq_args.limits(true); }, {"max_batched_tokens: 0 out of range [1, 2^24]"});
  // A prefix every prompt shares is cached once: 8 sequences of 4,096 tokens with 3,072 shared
  // hold 3,072 + 8 x 1,024 = 11,264 tokens of 131,072 B (1.476395008 GB), and the KV room's
  // 467,291 tokens take (467,291 - 3,072) / 1,024 = 453 such sequences.
  const auto shared = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 1, 8, 4096, gpu, 1, 3072);
  EXPECT_NEAR(shared.kv_cache_gb, 1.476395008, 1e-12);
  EXPECT_EQ(shared.max_sequences, 453);
  // The kernels: 8,192 tokens of one prompt (32 heads over 8 of 128) in 2 or 4 chunks.
  auto attn = [&](int64_t chunk, int64_t prefix) {
    return p.predict(attention_chunk_q(1, chunk, prefix, 32, 8, 128, DType::kBf16, DType::kBf16), gpu).latency_ms;
  };
  const double whole = attn(8192, 0);
  EXPECT_GT(attn(2048, 6144), attn(2048, 0));
  for (int parts : {2, 4}) {
    const int64_t c = 8192 / parts;
    double sum = 0;
    for (int i = 0; i < parts; ++i) sum += attn(c, i * c);
    // Equal in exact arithmetic (the chunks telescope); the networks run in float32 and give a
    // prompt's forecast alone and inside a chunk's batch of queries to a few ulps of float32.
    EXPECT_GE(sum, whole * (1 - 1e-6)) << parts;
    EXPECT_LT(sum, whole + parts * attn(c, 0)) << parts;
  }
}

// Speculative decoding: a round's expected tokens by hand (4 drafts at 0.8: (1 - 0.8^5) / 0.2 =
// 3.3616; all accepted: 5; none: 1), and a two-token generation against separately built graphs:
// its one decoded token costs one round / 3.3616, the round being 4 draft decode steps (8
// sequences, 2,048 + 1 cached: the mean of 2,048..2,051) and the target's verify step (5 tokens a
// sequence after 2,048, logits for all 40); TTFT adds the draft's prefill to the target's.
TEST(Serving, SpeculativeDecodingRounds) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  const ModelConfig target = load_model_config("llama-3.1-70b", mdir), draft = load_model_config("llama-3.1-8b", mdir);
  const GpuSpec& gpu = registry().resolve("H100-SXM");
  predictor::SpecDecoding sd{&draft, 4, 0.8};
  EXPECT_NEAR(sd.expected_tokens(), 3.3616, 1e-12);
  EXPECT_DOUBLE_EQ((predictor::SpecDecoding{&draft, 4, 1.0}.expected_tokens()), 5.0);
  EXPECT_DOUBLE_EQ((predictor::SpecDecoding{&draft, 4, 0.0}.expected_tokens()), 1.0);
  Parallelism tp4;
  tp4.tp = 4;
  const auto g = predictor::forecast_generate(target, gpu, p, 8, 2048, 2, DType::kBf16, DType::kBf16, tp4, 0, 0, {}, 0, &sd);
  auto ms = [&](const OpGraph& graph) { return predictor::forecast_model(graph, gpu, p).total_ms; };
  const double prefill = ms(build_serving_graph(target, Mode::kPrefill, 8, 2048, DType::kBf16, DType::kBf16, 4)) +
                         ms(build_serving_graph(draft, Mode::kPrefill, 8, 2048, DType::kBf16, DType::kBf16, 4));
  ServingStep verify;
  verify.prefill = {{8, 5, 2048}};
  verify.chunk_logits_all = true;
  const OpGraph vg = build_serving_step_graph(target, verify, DType::kBf16, DType::kBf16, 4);
  std::map<std::string, int64_t> heads;
  for (const auto& op : vg.ops)
    if (op.name == "lm_head") heads[query_shape_string(op.fw.front().query)] += op.count;
  EXPECT_EQ(heads["40,8192,32064"], 1);  // 8 x 5 rows, vocab over tp 4
  const double round = 4 * ms(build_serving_graph(draft, Mode::kDecode, 8, 2049, DType::kBf16, DType::kBf16, 4)) + ms(vg);
  EXPECT_NEAR(g.ttft_ms, prefill, 1e-9 * prefill);
  EXPECT_NEAR(g.tpot_ms, round / 3.3616, 1e-9 * round);
  EXPECT_NEAR(g.spec_round_ms, round, 1e-9 * round);
  // Against plain decoding: faster at this acceptance, slower when nothing is accepted.
  const auto plain = predictor::forecast_generate(target, gpu, p, 8, 2048, 64, DType::kBf16, DType::kBf16, tp4);
  const auto good = predictor::forecast_generate(target, gpu, p, 8, 2048, 64, DType::kBf16, DType::kBf16, tp4, 0, 0, {}, 0, &sd);
  predictor::SpecDecoding bad{&draft, 4, 0.0};
  const auto none = predictor::forecast_generate(target, gpu, p, 8, 2048, 64, DType::kBf16, DType::kBf16, tp4, 0, 0, {}, 0, &bad);
  EXPECT_LT(good.tpot_ms, plain.tpot_ms);
  EXPECT_GT(none.tpot_ms, plain.tpot_ms);
  EXPECT_GT(good.memory.weights_gb, plain.memory.weights_gb);  // both models' weights
  const ModelConfig qwen = load_model_config("qwen3-32b", mdir);
  predictor::SpecDecoding other{&qwen, 4, 0.8};
  expect_error<ConfigError>(
      [&] { predictor::forecast_generate(target, gpu, p, 8, 2048, 64, DType::kBf16, DType::kBf16, tp4, 0, 0, {}, 0, &other); },
      {"--spec-draft qwen3-32b", "vocabulary (151936)", "128256"});
  expect_error<ConfigError>(
      [&] { predictor::forecast_generate(target, gpu, p, 8, 2048, 64, DType::kBf16, DType::kBf16, tp4, 0, 0, {2048, 0}, 0, &sd); },
      {"speculative decoding is modelled without --max-batched-tokens"});
}

// Speculative decoding with DeepSeek-V3's own MTP module (mtp_draft_config) on tp 8 in FP8
// blocks: a round is the module's decode steps and the target's verify step, as for a draft
// model. Its weights a rank, by hand: the routed experts 256 x 3 x 7168 x 2048 and the other
// split weights (q_b 1536 x 128 x 192, kv_b 512 x 128 x 256, o 128 x 128 x 7168, the router
// 7168 x 256, the shared expert 3 x 7168 x 2048, the latent norms 1536 + 512, enorm and hnorm
// 2 x 7168: 217,858,048) at
// 1 B over 8 ranks (the blocks' FP32 scales, 0.02 %, not counted), the replicated latent down
// projections 7168 x (1536 + 576) at the same, eh_proj 2 x 7168^2 in BF16 on every rank, three
// norms of 7168 in BF16: 1,657,221,120 B; its embedding and head are the target's.
TEST(Serving, MtpDraftOfDeepSeekV3) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  const ModelConfig target = load_model_config("deepseek-v3", mdir), draft = mtp_draft_config(target);
  const GpuSpec& gpu = registry().resolve("H200");
  const double h = 7168;
  const double by_hand = (256.0 * 3 * h * 2048 + 217858048.0) / 8 + h * (1536 + 576) + 2 * h * h * 2 + 3 * h * 2;
  EXPECT_DOUBLE_EQ(by_hand, 1657221120.0);
  EXPECT_NEAR(predictor::serving_memory(draft, DType::kFp8Block, DType::kBf16, 8, 8, 1000, gpu).weights_gb * 1e9, by_hand,
              1e-6 * by_hand);
  EXPECT_NEAR(predictor::serving_weight_bytes(draft, DType::kFp8Block, 8), by_hand, 1e-6 * by_hand);
  Parallelism tp8;
  tp8.tp = 8;
  predictor::SpecDecoding sd{&draft, 3, 0.8};
  const auto plain = predictor::forecast_generate(target, gpu, p, 8, 1024, 64, DType::kFp8Block, DType::kBf16, tp8);
  const auto mtp =
      predictor::forecast_generate(target, gpu, p, 8, 1024, 64, DType::kFp8Block, DType::kBf16, tp8, 0, 0, {}, 0, &sd);
  EXPECT_EQ(mtp.spec_draft, "deepseek-v3-mtp");
  EXPECT_LT(mtp.tpot_ms, plain.tpot_ms);
  EXPECT_NEAR(mtp.memory.weights_gb - plain.memory.weights_gb, by_hand / 1e9, 1e-6);
  // A draft step (one layer and the head) is a small part of a target decode step of 61 layers.
  EXPECT_LT(mtp.spec_draft_step_ms, 0.1 * plain.last_decode.total_ms);
  // With DP attention (SGLang runs the draft in the target's layout) each rank holds the draft's
  // attention whole: 7/8 more of its split projections, q_b, kv_b and o (1536 x 128 x 192 +
  // 512 x 128 x 256 + 128 x 128 x 7168 = 171,966,464) at 1 B; the KV room stays the group's.
  Parallelism dpa = tp8;
  dpa.dp_attention = true;
  const auto dp_plain = predictor::forecast_generate(target, gpu, p, 8, 1024, 64, DType::kFp8Block, DType::kBf16, dpa);
  const auto dp_mtp =
      predictor::forecast_generate(target, gpu, p, 8, 1024, 64, DType::kFp8Block, DType::kBf16, dpa, 0, 0, {}, 0, &sd);
  EXPECT_NEAR(dp_mtp.memory.weights_gb - dp_plain.memory.weights_gb, (by_hand + 171966464.0 * 7 / 8) / 1e9, 1e-6);
  EXPECT_EQ(dp_mtp.memory.kv_ranks, 8);
  EXPECT_EQ(dp_mtp.memory.max_sequences % 8, 0);
  EXPECT_LE(dp_mtp.memory.max_sequences, dp_plain.memory.max_sequences);
  EXPECT_GT(dp_mtp.memory.kv_capacity_tokens, 4 * mtp.memory.kv_capacity_tokens);
  EXPECT_LT(dp_mtp.tpot_ms, dp_plain.tpot_ms);
}

// A draft beside the target (speculative decoding): its weights and its cache of the same tokens
// count in the memory and the KV room. Llama-3.1-8B's cached token on one GPU, by hand: 32 layers
// x K and V x 8 heads x 128 x 2 B = 131,072 B (65,536 on tp 2); DeepSeek-V3's latent and rotary
// key, 61 x 576 x 2 B, on every rank. With a draft of 1 GB and 65,536 B a token, 1,000-token
// sequences on an H100 (no pass): the room in tokens of both caches, floor(free / 196,608 B).
TEST(Serving, DraftBesideTheTargetByHand) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  const ModelConfig m = load_model_config("llama-3.1-8b", mdir), v3 = load_model_config("deepseek-v3", mdir);
  EXPECT_DOUBLE_EQ(predictor::serving_kv_token_bytes(m, DType::kBf16, 1), 131072.0);
  EXPECT_DOUBLE_EQ(predictor::serving_kv_token_bytes(m, DType::kBf16, 2), 65536.0);
  EXPECT_DOUBLE_EQ(predictor::serving_kv_token_bytes(v3, DType::kBf16, 8), 61.0 * 576 * 2);
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const auto alone = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 1, 4, 1000, h100);
  const auto both = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 1, 4, 1000, h100, 1, 0, {}, false,
                                              {1e9, 65536.0});
  EXPECT_NEAR((both.weights_gb - alone.weights_gb) * 1e9, 1e9, 1e-3);
  EXPECT_NEAR((both.kv_cache_gb - alone.kv_cache_gb) * 1e9, 4 * 1000 * 65536.0, 1e-3);
  const double free_bytes = kUsableMemoryFraction * h100.mem_bytes() - both.weights_gb * 1e9;
  EXPECT_EQ(both.kv_capacity_tokens, static_cast<int64_t>(std::floor(free_bytes / 196608.0)));
  EXPECT_EQ(both.max_sequences, static_cast<int64_t>(std::floor(free_bytes / (1000 * 196608.0))));
}

// SGLang's DP attention on tp 2, DeepSeek-V2-Lite in BF16, 5 sequences of 1,001 cached tokens.
// By hand, against plain tp 2: each rank holds every attention projection (q 2,048 x 16 x 192,
// kv_a 2,048 x 576, kv_b 512 x 16 x 256, o 16 x 128 x 2,048; kv_a is on every rank either way),
// 27 x (6,291,456 + 2,097,152 + 4,194,304) / 2 x 2 B more, and the whole input embedding,
// 102,400 x 2,048 / 2 x 2 B more: 549,453,824 B; its cache is its 3 sequences' latents
// (3 x 1,001 x 27 x 576 x 2 B against 5 x for tp); the KV room is both ranks' rooms, in
// sequences 2 x floor(free bytes / (1,001 x 27 x 576 x 2 B)).
TEST(Serving, DpAttentionMemoryByHand) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  const ModelConfig m = load_model_config("deepseek-v2-lite", mdir);
  const GpuSpec& gpu = registry().resolve("H200");
  const auto tp = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 2, 5, 1001, gpu);
  const auto dp = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 2, 5, 1001, gpu, 1, 0, {}, true);
  EXPECT_NEAR((dp.weights_gb - tp.weights_gb) * 1e9, 549453824.0, 1.0);
  const double token = 27.0 * 576 * 2;
  EXPECT_NEAR(tp.kv_cache_gb * 1e9, 5 * 1001 * token, 1e-3);
  EXPECT_NEAR(dp.kv_cache_gb * 1e9, 3 * 1001 * token, 1e-3);
  EXPECT_EQ(tp.kv_ranks, 1);
  EXPECT_EQ(dp.kv_ranks, 2);
  const double free_bytes = kUsableMemoryFraction * gpu.mem_bytes() - dp.weights_gb * 1e9;
  EXPECT_EQ(dp.max_sequences, 2 * static_cast<int64_t>(std::floor(free_bytes / (1001 * token))));
  EXPECT_GT(dp.max_sequences, tp.max_sequences * 3 / 2);
}

// Prefill-decode disaggregation by hand. Llama-3.1-8B, 8 prompts of 1,000 tokens, 40 output
// tokens, a prefill instance of tp 2 beside a decode instance of tp 4 on one 8-GPU H100 node: the
// batch's cache, 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token, moves over 2
// GPU pairs at 80 % of 450 GB/s + 5 us; on a tp 8 decode instance the 10 GPUs span two nodes and
// it goes through 2 network ports at 80 % of 50 GB/s + 7.7 us. TTFT: the prefill instance's own
// prefill step (forecast apart, tp 2) + the move; TPOT and the decode steps the aggregated tp 4
// forecast's; memory the decode instance's with a one-token pass, the prefill instance's that of
// a tp 2 prefill. Gemma-2-9B's sliding layers (21 of 42, 4,096 tokens; 2 x 8 x 256 x 2 B a
// token) move 4,096 of 6,000 tokens; DeepSeek-V2-Lite's MLA latent (576 x 2 B a layer) once, whatever the heads.
TEST(Serving, DisaggregatedByHand) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  const ModelConfig m = load_model_config("llama-3.1-8b", mdir);
  const GpuSpec& gpu = registry().resolve("H100-SXM");
  Parallelism dec;
  dec.tp = 4;
  const predictor::Disaggregation d{2, 1};
  const auto f = predictor::forecast_disaggregated(m, gpu, p, 8, 1000, 40, DType::kBf16, DType::kBf16, dec, d);
  ASSERT_TRUE(f.disagg.has_value());
  const double bytes = 8.0 * 1000 * 131072;
  EXPECT_NEAR(f.disagg->kv_transfer_gb, bytes / 1e9, 1e-12);
  EXPECT_FALSE(f.disagg->kv_over_network);
  EXPECT_NEAR(f.disagg->kv_transfer_ms, 0.005 + bytes / (2 * 0.8 * 450e9) * 1e3, 1e-9);
  const double prefill_ms =
      predictor::forecast_model(build_serving_graph(m, Mode::kPrefill, 8, 1000, DType::kBf16, DType::kBf16, 2), gpu, p)
          .total_ms;
  EXPECT_DOUBLE_EQ(f.disagg->prefill_ms, prefill_ms);
  EXPECT_NEAR(f.ttft_ms, prefill_ms + f.disagg->kv_transfer_ms, 1e-9);
  const auto agg = predictor::forecast_generate(m, gpu, p, 8, 1000, 40, DType::kBf16, DType::kBf16, dec);
  EXPECT_DOUBLE_EQ(f.tpot_ms, agg.tpot_ms);
  EXPECT_NEAR(f.disagg->decode_ms, agg.e2e_ms - agg.ttft_ms, 1e-9);
  EXPECT_NEAR(f.e2e_ms, f.ttft_ms + f.disagg->decode_ms, 1e-9);
  EXPECT_NEAR(f.disagg->prefill_per_decode, prefill_ms / f.disagg->decode_ms, 1e-12);
  EXPECT_EQ(f.last_decode.par.tp, 4);
  EXPECT_EQ(f.prefill.par.tp, 2);
  const auto mem = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 4, 8, 1040, gpu, 1, 0, {0, 1});
  EXPECT_DOUBLE_EQ(f.memory.total_gb(), mem.total_gb());
  const auto pmem = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 2, 8, 1000, gpu, 1, 0, {0, 1000});
  EXPECT_DOUBLE_EQ(f.disagg->prefill_memory.total_gb(), pmem.total_gb());
  // Two nodes: 2 + 8 GPUs.
  dec.tp = 8;
  const auto two = predictor::forecast_disaggregated(m, gpu, p, 8, 1000, 40, DType::kBf16, DType::kBf16, dec, d);
  EXPECT_TRUE(two.disagg->kv_over_network);
  EXPECT_NEAR(two.disagg->kv_transfer_ms, 0.0077 + bytes / (2 * 0.8 * 50e9) * 1e3, 1e-9);
  // Sliding windows and MLA.
  dec.tp = 2;
  const ModelConfig gemma = load_model_config("gemma-2-9b", mdir);
  ASSERT_EQ(gemma.sliding_window, 4096);
  ASSERT_EQ(windowed_layers(gemma), 21);
  const auto g = predictor::forecast_disaggregated(gemma, gpu, p, 2, 6000, 4, DType::kBf16, DType::kBf16, dec, d);
  EXPECT_NEAR(g.disagg->kv_transfer_gb, 2.0 * 8192 * (21 * 6000.0 + 21 * 4096.0) / 1e9, 1e-12);
  const ModelConfig lite = load_model_config("deepseek-v2-lite", mdir);
  const auto l = predictor::forecast_disaggregated(lite, gpu, p, 4, 500, 4, DType::kBf16, DType::kBf16, dec, d);
  EXPECT_NEAR(l.disagg->kv_transfer_gb, 4.0 * 500 * 27 * 576 * 2 / 1e9, 1e-12);
  expect_error<ConfigError>(
      [&] { predictor::forecast_disaggregated(m, gpu, p, 8, 1000, 40, DType::kBf16, DType::kBf16, dec, {2, 2}); },
      {"--prefill-ep 2", "(it has none)"});
}

// Disaggregation under arrivals, by hand. Llama-3.1-8B, prompts of 1,000 tokens, 4 output
// tokens, a tp 1 prefill instance beside a tp 1 decode instance (one H100 node). Three requests a
// second apart (uniform arrivals at 1 a second), each alone: the prefill instance's step of one
// prompt, its cache's move (131,072 B x 1,000 over one NVLink pair at 80 % of 450 GB/s + 5 us),
// then 3 decode steps of one sequence at contexts 1,000-1,002 (forecast at 1,008, the nearest
// 16).
TEST(Serving, DisaggregatedArrivalsByHand) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  const ModelConfig m = load_model_config("llama-3.1-8b", mdir);
  const GpuSpec& gpu = registry().resolve("H100-SXM");
  auto step = [&](Mode mode, int64_t n, int64_t tokens) {
    return predictor::forecast_model(build_serving_graph(m, mode, n, tokens, DType::kBf16, DType::kBf16, 1), gpu, p)
        .total_ms;
  };
  auto move = [](double requests) { return 0.005 + requests * 1000 * 131072 / (0.8 * 450e9) * 1e3; };
  predictor::SchedulerLimits lim;
  lim.request_rate = 1;
  lim.uniform_arrivals = true;
  const auto f = predictor::forecast_disaggregated(m, gpu, p, 3, 1000, 4, DType::kBf16, DType::kBf16, Parallelism{},
                                                   {1, 1}, 0, 0, lim);
  const double ttft = step(Mode::kPrefill, 1, 1000) + move(1), decode = step(Mode::kDecode, 1, 1008);
  EXPECT_NEAR(f.ttft_ms, ttft, 1e-9);
  EXPECT_NEAR(f.ttft_max_ms, ttft, 1e-9);
  EXPECT_NEAR(f.tpot_ms, decode, 1e-9);
  EXPECT_NEAR(f.e2e_ms, 2000 + ttft + 3 * decode, 1e-6);
  EXPECT_EQ(f.prefill_steps, 3);
  EXPECT_EQ(f.steps, 3 + 9);
  EXPECT_NEAR(f.disagg->prefill_ms, 3 * step(Mode::kPrefill, 1, 1000), 1e-9);
  EXPECT_NEAR(f.disagg->decode_ms, 9 * decode, 1e-9);
  EXPECT_NEAR(f.disagg->kv_transfer_ms, 3 * move(1), 1e-9);
  // A million a second: 1 us apart. The first prompt runs alone at once; the other two, arrived
  // during its step, run together next and move together.
  lim.request_rate = 1e6;
  const auto burst = predictor::forecast_disaggregated(m, gpu, p, 3, 1000, 4, DType::kBf16, DType::kBf16,
                                                       Parallelism{}, {1, 1}, 0, 0, lim);
  const double p1 = step(Mode::kPrefill, 1, 1000), p2 = step(Mode::kPrefill, 2, 1000);
  EXPECT_EQ(burst.prefill_steps, 2);
  EXPECT_NEAR(burst.disagg->prefill_ms, p1 + p2, 1e-9);
  EXPECT_NEAR(burst.disagg->kv_transfer_ms, move(1) + move(2), 1e-9);
  const double first = p1 + move(1), later = p1 + p2 + move(2);
  EXPECT_NEAR(burst.ttft_ms, (first + (later - 0.001) + (later - 0.002)) / 3, 1e-9);
  EXPECT_NEAR(burst.ttft_max_ms, later - 0.001, 1e-9);
  // Objectives count the requests that meet them.
  lim.request_rate = 1;
  lim.slo_ttft_ms = ttft * 2;
  const auto slo = predictor::forecast_disaggregated(m, gpu, p, 3, 1000, 4, DType::kBf16, DType::kBf16, Parallelism{},
                                                     {1, 1}, 0, 0, lim);
  EXPECT_EQ(slo.slo_requests, 3);
  lim.max_seqs = 2;
  expect_error<ConfigError>(
      [&] {
        predictor::forecast_disaggregated(m, gpu, p, 3, 1000, 4, DType::kBf16, DType::kBf16, Parallelism{}, {1, 1}, 0, 0,
                                          lim);
      },
      {"--prefill-tp with --max-seqs", "not modelled"});
}

// Disaggregated serving by hand. Llama-3.1-8B with 1,000-token prompts on H100s, tp 1
// instances on one node: a prefill step of n prompts, a step of prompt chunks, and the move of
// n requests' caches over one NVLink pair (131,072 B a token at 80 % of 450 GB/s + 5 us).
class Disaggregated : public ::testing::Test {
 protected:
  predictor::KernelPredictor p{trainer::weights_dir()};
  ModelConfig m = load_model_config("llama-3.1-8b", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  const GpuSpec& gpu = registry().resolve("H100-SXM");
  double prefill(int64_t n) const {
    return predictor::forecast_model(build_serving_graph(m, Mode::kPrefill, n, 1000, DType::kBf16, DType::kBf16, 1), gpu,
                                     p)
        .total_ms;
  }
  double chunks(const std::vector<ServingChunk>& c) const {
    ServingStep st;
    st.prefill = c;
    return predictor::forecast_model(build_serving_step_graph(m, st, DType::kBf16, DType::kBf16, 1), gpu, p).total_ms;
  }
  static double move(double requests) { return 0.005 + requests * 1000 * 131072 / (0.8 * 450e9) * 1e3; }
  // n requests of 1,000 + gen tokens arriving 1 us apart (a million a second, uniform).
  predictor::GenerateForecast one_us_apart(int64_t n, int64_t gen, const predictor::Disaggregation& d) const {
    predictor::SchedulerLimits lim;
    lim.request_rate = 1e6;
    lim.uniform_arrivals = true;
    return predictor::forecast_disaggregated(m, gpu, p, n, 1000, gen, DType::kBf16, DType::kBf16, Parallelism{}, d, 0,
                                             0, lim);
  }
};

// Several prefill instances (xPyD), by hand. Llama-3.1-8B, prompts of 1,000 tokens, tp 1 prefill
// instances beside a tp 1 decode instance on one H100 node; a step's caches move over one NVLink
// pair (131,072 B a token at 80 % of 450 GB/s + 5 us), one step's at a time into the decode
// instance, in the order the steps end.
TEST_F(Disaggregated, InstancesByHand) {
  const predictor::Disaggregation two{1, 1, 2};
  EXPECT_EQ(two.gpus(), 2);
  // A batch of 7 at once: shares of 4 and 3 side by side. The 3-prompt step ends first and its
  // caches move first; the 4-prompt step's follow once both it and the link are done.
  const double s4 = prefill(4), s3 = prefill(3);
  ASSERT_LT(s3, s4);
  const auto f = predictor::forecast_disaggregated(m, gpu, p, 7, 1000, 8, DType::kBf16, DType::kBf16, Parallelism{}, two);
  ASSERT_TRUE(f.disagg.has_value());
  EXPECT_EQ(f.disagg->layout.prefill_instances, 2);
  EXPECT_FALSE(f.disagg->kv_over_network);  // 3 GPUs of an 8-GPU node
  const double ttft = std::max(s3 + move(3), s4) + move(4);
  EXPECT_NEAR(f.ttft_ms, ttft, 1e-9);
  EXPECT_NEAR(f.ttft_max_ms, ttft, 1e-9);
  EXPECT_NEAR(f.disagg->prefill_ms, s3 + s4, 1e-9);
  EXPECT_NEAR(f.disagg->kv_transfer_ms, move(3) + move(4), 1e-9);
  EXPECT_NEAR(f.prefill.total_ms, s4, 1e-9);
  const auto one = predictor::forecast_disaggregated(m, gpu, p, 7, 1000, 8, DType::kBf16, DType::kBf16, Parallelism{},
                                                     {1, 1});
  EXPECT_NEAR(one.ttft_ms, prefill(7) + move(7), 1e-9);
  EXPECT_DOUBLE_EQ(f.tpot_ms, one.tpot_ms);
  EXPECT_NEAR(f.e2e_ms, ttft + one.disagg->decode_ms, 1e-9);
  const auto pmem = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 1, 4, 1000, gpu, 1, 0, {0, 1000});
  EXPECT_DOUBLE_EQ(f.disagg->prefill_memory.total_gb(), pmem.total_gb());
  // Eight instances and the decode GPU: 9 GPUs, two nodes, the caches through the network ports.
  const auto eight = predictor::forecast_disaggregated(m, gpu, p, 8, 1000, 8, DType::kBf16, DType::kBf16,
                                                       Parallelism{}, {1, 1, 8});
  EXPECT_TRUE(eight.disagg->kv_over_network);
  EXPECT_NEAR(eight.ttft_ms, prefill(1) + 8 * (0.0077 + 1000 * 131072 / (0.8 * 50e9) * 1e3), 1e-9);
  // Requests a million a second (1 us apart), in turn: requests 0 and 2 to instance 0, 1 to
  // instance 1. Instance 0 runs request 0 alone, then request 2 (arrived during that step);
  // instance 1 request 1 from its arrival. The link takes request 0's cache, then request 1's
  // (its step ended 1 us later, while the first moved), then request 2's.
  const auto burst = one_us_apart(3, 4, two);
  const double p1 = prefill(1), m1 = move(1);
  ASSERT_GT(p1, 2 * m1);
  ASSERT_GT(m1, 0.001);
  EXPECT_EQ(burst.prefill_steps, 3);
  EXPECT_NEAR(burst.disagg->prefill_ms, 3 * p1, 1e-9);
  EXPECT_NEAR(burst.disagg->kv_transfer_ms, 3 * m1, 1e-9);
  const double r0 = p1 + m1, r1 = p1 + 2 * m1 - 0.001, r2 = 2 * p1 + m1 - 0.002;
  EXPECT_NEAR(burst.ttft_ms, (r0 + r1 + r2) / 3, 1e-9);
  EXPECT_NEAR(burst.ttft_max_ms, r2, 1e-9);
  // One instance: request 0 alone, then requests 1 and 2 together (as DisaggregatedArrivalsByHand).
  const auto burst1 = one_us_apart(3, 4, {1, 1});
  EXPECT_EQ(burst1.prefill_steps, 2);
  EXPECT_GT(burst1.ttft_ms, burst.ttft_ms);
  // Refusals.
  expect_error<ConfigError>(
      [&] {
        predictor::forecast_disaggregated(m, gpu, p, 3, 1000, 4, DType::kBf16, DType::kBf16, Parallelism{}, {1, 1, 0});
      },
      {"--prefill-instances: 0 out of range [1, 1024]"});
}

// Requests of their own lengths, disaggregated (one prefill and one decode instance): both
// prompts in one prefill step (the step graph of their two chunks), their caches' bytes moved
// by their lengths, then decoded until the longer one's last token.
TEST_F(Disaggregated, RequestsOfTheirOwnLengthsByHand) {
  predictor::SchedulerLimits lim;
  lim.range_ratio = 0.5;
  const auto len = predictor::request_lengths(2, 1000, 8, 0.5);
  ASSERT_NE(len[0].seq, len[1].seq);
  const double step = chunks({{1, len[0].seq, 0}, {1, len[1].seq, 0}});
  const int64_t prompt_tokens = len[0].seq + len[1].seq;
  const double moved = move(double(prompt_tokens) / 1000);  // move() counts requests of 1,000 tokens
  const auto f = predictor::forecast_disaggregated(m, gpu, p, 2, 1000, 8, DType::kBf16, DType::kBf16, Parallelism{},
                                                   predictor::Disaggregation{1}, 0, 0, lim);
  ASSERT_TRUE(f.disagg.has_value());
  EXPECT_NEAR(f.disagg->kv_transfer_gb, double(prompt_tokens) * 131072 / 1e9, 1e-12);
  EXPECT_NEAR(f.ttft_ms, step + moved, 1e-9);
  EXPECT_NEAR(f.ttft_max_ms, step + moved, 1e-9);
  EXPECT_EQ(f.prefill_steps, 1);
  EXPECT_EQ(f.steps, 1 + std::max(len[0].gen, len[1].gen) - 1);  // the prefill step, then the decode steps
  EXPECT_NEAR(f.tokens_per_s * f.e2e_ms * 1e-3, double(len[0].gen + len[1].gen), 1e-9);
}

// A token budget on the prefill instance (--max-batched-tokens 1,500, its chunked prefill), by
// hand: three prompts of 1,000 at once run as a step of prompt 0 and the first 500 tokens of
// prompt 1, then a step of prompt 1's other 500 (after its 500 cached) and prompt 2; prompt 0's
// cache moves after the first step, the other two after the second. Then three requests 1 us
// apart: prompt 0 alone (the others not yet there), then prompt 1 and 500 of prompt 2, then
// prompt 2's rest.
TEST_F(Disaggregated, TokenBudgetByHand) {
  predictor::SchedulerLimits lim;
  lim.max_batched_tokens = 1500;
  const auto f = predictor::forecast_disaggregated(m, gpu, p, 3, 1000, 8, DType::kBf16, DType::kBf16, Parallelism{},
                                                   {1, 1}, 0, 0, lim);
  const double s1 = chunks({{1, 1000, 0}, {1, 500, 0}}), s2 = chunks({{1, 500, 500}, {1, 1000, 0}});
  ASSERT_GT(s2, move(1));
  EXPECT_NEAR(f.disagg->prefill_ms, s1 + s2, 1e-9);
  EXPECT_NEAR(f.disagg->kv_transfer_ms, move(1) + move(2), 1e-9);
  EXPECT_NEAR(f.ttft_ms, s1 + s2 + move(2), 1e-9);  // the batch decodes once every cache is there
  const auto whole = predictor::forecast_disaggregated(m, gpu, p, 3, 1000, 8, DType::kBf16, DType::kBf16,
                                                       Parallelism{}, {1, 1});
  EXPECT_NEAR(f.e2e_ms - f.ttft_ms, whole.e2e_ms - whole.ttft_ms, 1e-9);  // the same decode
  EXPECT_NEAR(whole.ttft_ms, prefill(3) + move(3), 1e-9);
  lim.request_rate = 1e6;
  lim.uniform_arrivals = true;
  const auto rate = predictor::forecast_disaggregated(m, gpu, p, 3, 1000, 8, DType::kBf16, DType::kBf16,
                                                      Parallelism{}, {1, 1}, 0, 0, lim);
  const double p1 = prefill(1), s3 = chunks({{1, 500, 500}});
  EXPECT_EQ(rate.prefill_steps, 3);
  EXPECT_NEAR(rate.disagg->prefill_ms, p1 + s1 + s3, 1e-9);
  const double r0 = p1 + move(1), r1 = p1 + s1 + move(1) - 0.001, r2 = p1 + s1 + s3 + move(1) - 0.002;
  ASSERT_LT(r0, p1 + s1);
  EXPECT_NEAR(rate.ttft_ms, (r0 + r1 + r2) / 3, 1e-9);
  EXPECT_NEAR(rate.ttft_max_ms, r2, 1e-9);
}

// Several decode instances (xPyD with y > 1), by hand. A batch of 7 at once on one prefill
// instance: requests 0, 2, 4, 6 to decode instance 0 and 1, 3, 5 to instance 1; when the
// 7-prompt step ends the prefill GPU sends decode instance 0's four caches, then instance 1's
// three (its links carry one move at a time); each instance decodes its share (4 or 3
// sequences) once its caches are there. Then two requests 1 us apart: each decode instance
// decodes its one request alone, where one decode instance batches them.
TEST_F(Disaggregated, DecodeInstancesByHand) {
  const predictor::Disaggregation two{1, 1, 1, 2};
  EXPECT_EQ(two.replica_gpus(1), 3);
  EXPECT_EQ(two.replica_gpus(4), 9);
  const auto f = predictor::forecast_disaggregated(m, gpu, p, 7, 1000, 8, DType::kBf16, DType::kBf16, Parallelism{}, two);
  ASSERT_TRUE(f.disagg.has_value());
  const auto g4 = predictor::forecast_generate(m, gpu, p, 4, 1000, 8, DType::kBf16, DType::kBf16, Parallelism{});
  const auto g3 = predictor::forecast_generate(m, gpu, p, 3, 1000, 8, DType::kBf16, DType::kBf16, Parallelism{});
  const double s7 = prefill(7), t0 = s7 + move(4), t1 = t0 + move(3);
  const double d4 = g4.e2e_ms - g4.prefill.total_ms, d3 = g3.e2e_ms - g3.prefill.total_ms;
  EXPECT_NEAR(f.ttft_ms, (4 * t0 + 3 * t1) / 7, 1e-9);
  EXPECT_NEAR(f.ttft_max_ms, t1, 1e-9);
  EXPECT_NEAR(f.tpot_ms, (4 * g4.tpot_ms + 3 * g3.tpot_ms) / 7, 1e-9);
  EXPECT_NEAR(f.e2e_ms, std::max(t0 + d4, t1 + d3), 1e-9);
  EXPECT_NEAR(f.disagg->kv_transfer_ms, move(4) + move(3), 1e-9);
  EXPECT_NEAR(f.disagg->decode_ms, d4 + d3, 1e-9);
  EXPECT_NEAR(f.disagg->prefill_ms, s7, 1e-9);
  int64_t requests = 0;
  for (const auto& r : f.requests) requests += r.n;
  EXPECT_EQ(requests, 7);
  // Two prefill and two decode instances, a prompt each: request 0 from prefill 0 to decode 0,
  // request 1 from prefill 1 to decode 1, the two moves side by side (no link in common).
  const auto pairs = predictor::forecast_disaggregated(m, gpu, p, 2, 1000, 8, DType::kBf16, DType::kBf16,
                                                       Parallelism{}, {1, 1, 2, 2});
  EXPECT_NEAR(pairs.ttft_max_ms, prefill(1) + move(1), 1e-9);
  EXPECT_NEAR(pairs.disagg->kv_transfer_ms, 2 * move(1), 1e-9);
  // The memory of a decode instance: its largest share's.
  const auto mem4 = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 1, 4, 1008, gpu, 1, 0, {0, 1});
  EXPECT_DOUBLE_EQ(f.memory.total_gb(), mem4.total_gb());
  // Two requests 1 us apart (uniform arrivals), 7 decode tokens each at a mean context of
  // 1,008 (to 16 tokens): request 0's prompt alone, then request 1's (arrived during that
  // step); each cache over its own instance's links; each instance decodes one sequence.
  const auto rate = one_us_apart(2, 8, two);
  const double p1 = prefill(1), m1 = move(1);
  const double d1 = predictor::forecast_model(build_serving_graph(m, Mode::kDecode, 1, 1008, DType::kBf16, DType::kBf16, 1),
                                              gpu, p)
                        .total_ms;
  EXPECT_EQ(rate.prefill_steps, 2);
  EXPECT_NEAR(rate.ttft_ms, ((p1 + m1) + (2 * p1 + m1 - 0.001)) / 2, 1e-9);
  EXPECT_NEAR(rate.tpot_ms, d1, 1e-9);
  EXPECT_NEAR(rate.e2e_ms, 2 * p1 + m1 + 7 * d1, 1e-9);
  EXPECT_NEAR(rate.disagg->decode_ms, 14 * d1, 1e-9);
  // One decode instance: request 1 joins request 0's decoding, its steps of two sequences.
  ASSERT_GT(p1 + m1 + 7 * d1, 2 * p1 + m1);
  const auto one = one_us_apart(2, 8, {1, 1});
  EXPECT_GT(one.tpot_ms, rate.tpot_ms);
  // Refusals.
  expect_error<ConfigError>(
      [&] {
        predictor::forecast_disaggregated(m, gpu, p, 3, 1000, 4, DType::kBf16, DType::kBf16, Parallelism{},
                                          {1, 1, 1, 0});
      },
      {"--decode-instances: 0 out of range [1, 1024]"});
}

// DeepEP's memory by hand: DeepSeek-V2-Lite's shared experts (26 MoE layers of 3 x 2,048 x
// 2,816 BF16 weights) whole on each of the 2 ranks instead of halved: 449,839,104 B more a rank;
// the cache as under DP attention.
TEST(Serving, DeepEpMemoryByHand) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  const ModelConfig m = load_model_config("deepseek-v2-lite", mdir);
  const GpuSpec& gpu = registry().resolve("H200");
  const auto dp = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 2, 5, 1001, gpu, 1, 0, {}, true);
  const auto a2a = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 2, 5, 1001, gpu, 1, 0, {}, true, {}, true);
  EXPECT_NEAR((a2a.weights_gb - dp.weights_gb) * 1e9, 449839104.0, 1.0);
  EXPECT_DOUBLE_EQ(a2a.kv_cache_gb, dp.kv_cache_gb);
  EXPECT_EQ(a2a.kv_ranks, 2);
  EXPECT_LT(a2a.max_sequences, dp.max_sequences);
  // A pass of 100 tokens a sequence: the rank's 300 tokens each with its hidden state and
  // residual and 6 copies at whole experts (2,048 in, 3 x 1,408 intermediate): 41,728 BF16
  // values a token, more than its attention block's (16 + 16 heads of 192 for q, k and their
  // grads' buffers: 2 x 2,048 + 64 x 192 = 16,384); beside the 3 sequences' logits (2 B and 4 B
  // FP32 over the 2 ranks' 102,400-entry vocab), 3 x 102,400 x (2 + 4 x 2) B.
  const predictor::ServingPass pass{0, 100};
  const auto with_pass =
      predictor::serving_memory(m, DType::kBf16, DType::kBf16, 2, 5, 1001, gpu, 1, 0, pass, true, {}, true);
  EXPECT_NEAR(with_pass.activations_gb * 1e9, 300.0 * 41728 * 2 + 3.0 * 102400 * (2 + 4 * 2), 1e-3);
}

// The torch-free forward pass (predictor/dense_mlp.h) against LibTorch on every member of
// every bundled family (NVIDIA and AMD sets): inputs drawn around the training distribution (mean +- 3 std of the
// stored standardisation), outputs within float tolerance.
TEST(DenseMlp, MatchesLibTorchOnEveryBundledNetwork) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> z(0.0f, 1.0f);
  int networks = 0;
  // The NVIDIA set and the AMD set (weights/amd).
  for (const std::string dir : {trainer::weights_dir(), trainer::weights_dir() + "/amd"}) {
  const auto m = trainer::load_manifest(dir);
  ASSERT_GE(m.families.size(), 5u) << "bundled weights incomplete in " << dir;
  // Each family's members, then its fallback network's (prefill: SGLang's Triton on Blackwell).
  std::vector<std::pair<std::string, trainer::FamilyEntry::FallbackNetwork>> sets;
  for (const auto& kv : m.families) {
    const auto& f = kv.second;
    trainer::FamilyEntry::FallbackNetwork own;
    own.files = f.files, own.sha256 = f.sha256, own.net_files = f.net_files, own.net_sha256 = f.net_sha256;
    own.layer_widths = f.layer_widths;
    sets.emplace_back(kv.first, own);
    if (f.has_fallback_network()) sets.emplace_back(kv.first + " (fallback)", f.fallback_network);
  }
  for (const auto& kv : sets) {
    const auto& e = kv.second;
    ASSERT_EQ(e.net_files.size(), e.files.size()) << kv.first;
    for (size_t i = 0; i < e.files.size(); ++i) {
      auto tm = trainer::load_checkpoint(dir + "/" + e.files[i], e.layer_widths[i]);
      auto dm = predictor::DenseMlp::load(dir + "/" + e.net_files[i]);
      ASSERT_EQ(dm.layer_widths(), e.layer_widths[i]);
      const int64_t nf = dm.inputs(), rows = 3000;  // > one 2048-row block
      std::vector<float> x(rows * nf);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < nf; ++c) x[r * nf + c] = dm.mean[c] + 3.0f * z(rng) / dm.inv_std[c];
      std::vector<float> got(rows);
      dm.forward(x.data(), rows, got.data());
      torch::NoGradGuard ng;
      auto want = tm->forward(torch::from_blob(x.data(), {rows, nf}, torch::kFloat32)).contiguous();
      const float* w = want.data_ptr<float>();
      double worst = 0;
      for (int64_t r = 0; r < rows; ++r) worst = std::max(worst, std::abs(double(got[r]) - w[r]) / (1.0 + std::abs(w[r])));
      EXPECT_LT(worst, 1e-4) << e.net_files[i];
      ++networks;
    }
  }
  }
  // NVIDIA: five NeuSight families x 3 members, gemm 1, prefill 3 and its fallback's 3 (since
  // session 77), decode 3, moe 3; AMD: 5 x 3.
  EXPECT_EQ(networks, 28 + 15);
}

// Whole forecasts of the torch-free predictor against the same forecasts computed here with
// LibTorch from the .pt checkpoints (featurise, members' outputs clamped and averaged in
// log space, times the wave-quantised base), for a NeuSight and an LLM-era family, each on a
// GPU its network corrects in full (the gemm family blends toward its fitted roofline on GPUs
// outside network_gpus; that blend is tested above).
TEST(DenseMlp, ForecastsMatchTheLibTorchPath) {
  const std::string dir = trainer::weights_dir();
  predictor::KernelPredictor p(dir);
  const auto m = trainer::load_manifest(dir);
  const GpuSpec& a100 = registry().resolve("A100-SXM4-40GB");
  const GpuSpec& a100_80 = registry().resolve("A100-80GB-SXM");  // a gemm training GPU
  std::vector<KernelQuery> qs;
  std::vector<const GpuSpec*> gpus;
  std::vector<predictor::KernelPrediction> got;
  for (int64_t s : {64, 512, 2048}) {
    KernelQuery b;
    b.op = OpKind::kBmm;
    b.b = 8, b.m = s, b.n = s, b.k = s;
    qs.push_back(b), gpus.push_back(&a100);
    qs.push_back(gemm_q(s * 4, 4096, 4096, DType::kBf16)), gpus.push_back(&a100_80);
  }
  for (size_t i = 0; i < qs.size(); ++i) got.push_back(p.predict(qs[i], *gpus[i]));
  for (size_t i = 0; i < qs.size(); ++i) {
    const Family f = op_family(qs[i].op);
    const auto& e = m.families.at(family_name(f));
    std::vector<float> x(num_features(f));
    const PreparedKernel pk = featurize(qs[i], *gpus[i], p.tiles(), x.data());
    for (size_t c : feature_columns(f, e.config.ignore_features)) x[c] = 0;  // as training saw them (gemm's tile width)
    ASSERT_FALSE(got[i].clamped) << i;  // the reference below feeds the features unclamped
    ASSERT_EQ(got[i].network_weight, 1.0) << i;
    double o = 0;
    for (size_t k = 0; k < e.files.size(); ++k) {
      auto tm = trainer::load_checkpoint(dir + "/" + e.files[k], e.layer_widths[k]);
      torch::NoGradGuard ng;
      const double om = tm->forward(torch::from_blob(x.data(), {1, (int64_t)x.size()}, torch::kFloat32)).item<double>();
      o += std::min(std::max(om, trainer::kMinLogSlowdown), trainer::kMaxLogSlowdown) / e.files.size();
    }
    // The network scales the family's fitted roofline where its config says prior (gemm), else
    // the bound (bmm and linear fit a roofline for unseen GPUs only).
    const double base_s = e.config.prior ? fitted_roofline_s(pk.bounds, e.prior) : pk.bounds.base_s;
    const double want_ms = s_to_ms(base_s) * std::exp(o);
    EXPECT_NEAR(got[i].latency_ms, want_ms, 1e-4 * want_ms) << i;
  }
}

// AMD GPUs are forecast by the bundled AMD predictor set (weights/amd, trained on MI100 and
// MI210 only) for its five families, NVIDIA GPUs never; LLM-era families on an AMD GPU fall
// back to the NVIDIA-trained set. The AMD set's tiles for the unseen MI250 come from the
// MI210 (same CDNA2 architecture), its own measured kernels never being available.
TEST(BundledWeights, AmdGpusUseTheAmdSet) {
  predictor::KernelPredictor p(trainer::weights_dir());
  ASSERT_TRUE(p.has_amd_set()) << "weights/amd missing";
  const GpuSpec& mi250 = registry().resolve("MI250");
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const auto& amd = p.set_for(mi250, Family::kBmm);
  EXPECT_NE(&amd, &p);
  EXPECT_EQ(amd.manifest().families.at("bmm").training_gpus,
            (std::vector<std::string>{"AMD Instinct MI100", "AMD Instinct MI210"}));
  EXPECT_EQ(&p.set_for(h100, Family::kBmm), &p);
  EXPECT_EQ(&p.set_for(mi250, Family::kGemm), &p);
  EXPECT_EQ(amd.tiles().reference_device(mi250), "AMD Instinct MI210");
  KernelQuery b;
  b.op = OpKind::kBmm;
  b.b = 16, b.m = 512, b.n = 64, b.k = 512;
  // The mixed batch gives each query what its own set forecasts alone.
  const auto both = p.predict(std::vector<KernelQuery>{b, gemm_q(512, 4096, 4096, DType::kBf16)}, mi250);
  EXPECT_DOUBLE_EQ(both[0].latency_ms, amd.predict(b, mi250).latency_ms);
  EXPECT_GT(both[1].latency_ms, 0);
  EXPECT_NE(both[0].latency_ms, p.predict(std::vector<KernelQuery>{b}, h100)[0].latency_ms);
}

// Baselines re-run on a graph: each kernel by the given function, each memory pass at DRAM
// bandwidth, times the op's count and the microbatches; tensor/pipeline graphs are refused.
TEST(Baselines, GraphSumAndLiEtAl) {
  const GpuSpec& v100 = *registry().find("Tesla V100-PCIE-32GB");
  OpGraph g;
  g.par.microbatches = 2;
  GraphOp op;
  op.name = "x";
  op.count = 3;
  op.fw.push_back(KernelCall::kernel(bmm_q(1, 8, 8, 8)));
  op.bw.push_back(KernelCall::mem(900e6));  // 1 ms at 900 GB/s
  g.ops.push_back(op);
  const double sum = predictor::graph_sum_ms(g, v100, [](const KernelQuery&) { return 0.5; });
  EXPECT_NEAR(sum, 2 * 3 * (0.5 + 1.0), 1e-9);
  EXPECT_EQ(predictor::graph_sum_ms(g, v100, [](const KernelQuery&) { return std::nan(""); }), -1);
  g.par.tp = 2;
  expect_error<ConfigError>([&] { predictor::graph_sum_ms(g, v100, [](const KernelQuery&) { return 0.0; }); },
                            {"single-GPU"});
  // Li et al.: seconds = coef x X + intercept; X = 2BMNK for GEMMs, B x H x 4 x (3 binary | 2).
  const std::string dir = ::testing::TempDir() + "li_fixture";
  fs::create_directories(dir);
  for (const char* f : {"bmm", "linear", "elem", "softmax", "ln"}) {
    std::ofstream out(dir + "/" + f + ".csv");
    out << "Device,coef,intercept\nGPU_A,1e-12,1e-5\nGPU_B,1e-12,-1\n";
  }
  predictor::LiEtAlBaseline li(dir);
  EXPECT_NEAR(li.kernel_ms("GPU_A", bmm_q(1, 1000, 1000, 1000)), 2.0 + 0.01, 1e-9);  // 2e9 FLOP
  EXPECT_NEAR(li.kernel_ms("GPU_A", vec_q(OpKind::kAdd, 1000, 1000)), 0.012 + 0.01, 1e-9);   // 12 MB
  EXPECT_NEAR(li.kernel_ms("GPU_A", vec_q(OpKind::kRelu, 1000, 1000)), 0.008 + 0.01, 1e-9);  // 8 MB
  EXPECT_EQ(li.kernel_ms("GPU_B", bmm_q(1, 10, 10, 10)), 0.0);  // the line crosses zero: clamped
  EXPECT_TRUE(std::isnan(li.kernel_ms("GPU_C", bmm_q(1, 10, 10, 10))));
  expect_error<DataError>([&] { predictor::LiEtAlBaseline bad(data_path("")); }, {"bmm.csv"});
}

// Per-layer windows: Gemma-2-27B windows 23 of its 46 layers, so a forecast is the mean of the
// same model windowed in every layer and in none (each layer's other ops alike), with one
// pipeline stage or two of 23 layers, in decode and prefill; its JSON names the 23. Its KV
// cache: 4 sequences of 6,000 tokens keep 4,096 in the 23 windowed layers and 6,000 in the
// others, 2 x 16 KV heads x 128 x 2 B = 8,192 B per token and layer: (23 x 4,096 + 23 x
// 6,000) x 4 x 8,192 B. Speculative decoding stays refused.
TEST(Serving, PerLayerWindowsAreTheMeanOfTheTwoKinds) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  const GpuSpec& gpu = registry().resolve("H100-SXM");
  const ModelConfig m = load_model_config("gemma-2-27b", mdir);
  ModelConfig every = m, none = m;
  every.full_attention_layers = 0;
  none.sliding_window = none.full_attention_layers = 0;
  for (const int64_t pp : {1, 2})
    for (const Mode mode : {Mode::kDecode, Mode::kPrefill}) {
      auto ms = [&](const ModelConfig& c) {
        return predictor::forecast_model(build_serving_graph(c, mode, 4, 6000, DType::kBf16, DType::kBf16, 1, 1, 0, pp),
                                         gpu, p)
            .total_ms;
      };
      const double both = ms(m), windowed = ms(every), full = ms(none);
      EXPECT_LT(windowed, full) << mode_name(mode) << " pp " << pp;
      EXPECT_NEAR(both, 0.5 * (windowed + full), 1e-9 * both) << mode_name(mode) << " pp " << pp;
    }
  const auto f = predictor::forecast_model(build_serving_graph(m, Mode::kDecode, 4, 6000, DType::kBf16, DType::kBf16, 1),
                                           gpu, p);
  const auto j = nlohmann::json::parse(predictor::forecast_json(f));
  EXPECT_EQ(j["sliding_window"], 4096);
  EXPECT_EQ(j["sliding_window_layers"], 23);
  const auto mem = predictor::serving_memory(m, DType::kBf16, DType::kBf16, 1, 4, 6000, gpu);
  EXPECT_NEAR(mem.kv_cache_gb, (23.0 * 4096 + 23.0 * 6000) * 4 * 8192 / 1e9, 1e-12);
  const ModelConfig draft = load_model_config("gemma-2-9b", mdir);
  predictor::SpecDecoding sd{&draft, 4, 0.8};
  Parallelism one;
  expect_error<ConfigError>(
      [&] { predictor::forecast_generate(m, gpu, p, 1, 128, 2, DType::kBf16, DType::kBf16, one, 0, 0, {}, 0, &sd); },
      {"--spec-draft", "sliding-window"});
}

// The JSON's `by_kind` against hand sums: two GEMM ops (2 x (3 ms forward + 1 ms backward) = 8
// ms; 1 x (2 ms forward + 0.5 ms accumulation) = 2.5 ms) and one attention op (4 x 0.5 ms), a
// step of 14 ms (communication beside them): gemm 10.5 ms = 75 %, attention 2 ms = 14.2857 % of
// the step, largest first as the table prints them; with pipeline stages the shares are of the
// ops' work, 12.5 ms (`by_kind_pct_of` "work": 84 % and 16 %), as the table says of its rows.
TEST(Serving, ByKindJsonByHand) {
  predictor::ModelForecast f;
  f.model = "m";
  f.gpu = "H100-SXM";
  f.mode = Mode::kTraining;
  f.total_ms = 14;
  f.ops = {{"a.gemm", "gemm", 2, 3, 1, 0}, {"b.attn", "attention", 4, 0.5, 0, 0}, {"c.gemm", "gemm", 1, 2, 0, 0.5}};
  auto j = nlohmann::json::parse(predictor::forecast_json(f));
  EXPECT_EQ(j["by_kind_pct_of"], "step");
  EXPECT_DOUBLE_EQ(j["by_kind"]["gemm"]["ms"].get<double>(), 10.5);
  EXPECT_NEAR(j["by_kind"]["gemm"]["pct"].get<double>(), 75, 1e-12);
  EXPECT_DOUBLE_EQ(j["by_kind"]["attention"]["ms"].get<double>(), 2);
  EXPECT_NEAR(j["by_kind"]["attention"]["pct"].get<double>(), 100 / 7.0, 1e-12);
  EXPECT_EQ(j["by_kind"].size(), 2u);
  const std::string text = predictor::forecast_table(f);
  EXPECT_NE(text.find("gemm             10.500    75.0%\nattention         2.000    14.3%\n"), std::string::npos) << text;
  f.par.pp = 2;
  j = nlohmann::json::parse(predictor::forecast_json(f));
  EXPECT_EQ(j["by_kind_pct_of"], "work");
  EXPECT_NEAR(j["by_kind"]["gemm"]["pct"].get<double>(), 84, 1e-12);
  EXPECT_NEAR(j["by_kind"]["attention"]["pct"].get<double>(), 16, 1e-12);
}

// MLA decode under the decode family's fitted roofline, by hand: 64 sequences over 32,768
// latents of 576 (values 512), 16 heads, BF16 on the H100-SXM. One CTA per sequence, the cache
// split min(32,768 / 256, 2 x 132 SMs / 64) = 5 ways: 320 CTAs, 3 waves; the latents read once,
// 64 x (32,768 x 576 x 2 + 16 x 1,088 x 2) B at 3,352 GB/s, well above the compute (73 GFLOP at
// the BF16 peak): floor + 3 waves + that memory time at the fit's DRAM efficiency.
// DeepSeek-V3 in FP8 on tp 8, 4 sequences of 1,000 tokens: each rank keeps the whole latent
// cache, 61 x 4 x 1,000 x 576 x 2 B; its weights: the linear ones (671,026,404,352 less 2 x
// 926,679,040 embedding and head and 123 x 7,168 norms) split 8 ways in 1 B but the latent down
// projections (61 x 7,168 x (1,536 + 576)), which every rank holds, plus the norms in BF16 and
// the two tables split 8 ways in BF16.
TEST(Serving, MlaDecodeAndMemoryByHand) {
  const std::string mdir = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  predictor::KernelPredictor p(trainer::weights_dir());
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const FittedRoofline& prior = p.manifest().families.at("generation_attention").prior;
  const KernelQuery q = attention_decode_q(64, 32768, 16, 1, 576, DType::kBf16, DType::kBf16);
  const double memory_ms = 64.0 * (32768.0 * 576 * 2 + 16.0 * 1088 * 2) / 3352e9 * 1e3;
  const double compute_ms = 2.0 * 64 * 16 * 32768 * 1088 * (3.0 * 132 / 320) / 989400e9 * 1e3;
  ASSERT_LT(compute_ms / prior.eta_compute, memory_ms / prior.eta_memory);
  EXPECT_NEAR(predictor::mla_decode_ms(q, 512, h100, p),
              (prior.floor_us + 3 * prior.wave_us) * 1e-3 + memory_ms / prior.eta_memory, 1e-9);
  const ModelConfig m = load_model_config("deepseek-v3", mdir);
  const auto mem = predictor::serving_memory(m, DType::kFp8Block, DType::kBf16, 8, 4, 1000, h100);
  EXPECT_NEAR(mem.kv_cache_gb, 61.0 * 4 * 1000 * 576 * 2 / 1e9, 1e-12);
  const double linear = 671026404352.0 - 2 * 926679040.0 - 123.0 * 7168, latent = 61.0 * 7168 * (1536 + 576);
  EXPECT_NEAR(mem.weights_gb,
              ((linear - latent) / 8 + latent + 61.0 * 2 * 7168 * 2 + 2 * 926679040.0 * 2 / 8 + 7168.0 * 2) / 1e9, 1e-9);
  // A decode step's forecast holds that call: the graph's attention is the MLA decode's forecast.
  const auto f = predictor::forecast_model(build_serving_graph(m, Mode::kDecode, 4, 1000, DType::kFp8Block,
                                                               DType::kBf16, 8),
                                           h100, p);
  double attention_ms = 0;
  for (const auto& o : f.ops)
    if (o.name == "model.layers.self_attn.attn") attention_ms = o.fw_ms;
  EXPECT_NEAR(attention_ms,
              predictor::mla_decode_ms(in_step(attention_decode_q(4, 1001, 16, 1, 576, DType::kBf16, DType::kBf16)), 512, h100, p),
              1e-12);
}

// A lab's measured sustained clock (GpuSpec::sustained_clock_mhz, 1,450 MHz on an H200 at its
// power limit: docs/accuracy.md, "Burst and sustained") slows a model's compute-bound steps and
// leaves its memory-bound ones: Llama-3.1-8B's prefill of 8 x 2,048 tokens (GEMMs and attention
// at the tensor rate) against one decode step of 8 sequences (weights and KV cache read at the
// DRAM rate, which the clock does not set). A kernel alone is forecast the same either way.
TEST(Serving, MeasuredSustainedClockSlowsComputeBoundSteps) {
  predictor::KernelPredictor p(trainer::weights_dir());
  const ModelConfig m = load_model_config("llama-3.1-8b", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  const GpuSpec& h200 = registry().resolve("H200");
  GpuSpec measured = h200;
  measured.sustained_clock_mhz = 1450;
  auto total = [&](Mode mode, int64_t batch, int64_t len, const GpuSpec& gpu) {
    return predictor::forecast_model(build_serving_graph(m, mode, batch, len, DType::kBf16, DType::kBf16, 1), gpu, p)
        .total_ms;
  };
  const double prefill = total(Mode::kPrefill, 8, 2048, measured) / total(Mode::kPrefill, 8, 2048, h200);
  const double decode = total(Mode::kDecode, 8, 2048, measured) / total(Mode::kDecode, 8, 2048, h200);
  // Between no change and the clock ratio 1,830 / 1,450 = 1.262 (not every kernel is compute-bound).
  EXPECT_GT(prefill, 1.05);
  EXPECT_LT(prefill, 1830.0 / 1450);
  EXPECT_LT(decode, 1.02);
  EXPECT_GE(decode, 1.0);
  const KernelQuery g = gemm_q(16384, 4096, 14336, DType::kBf16);
  EXPECT_EQ(p.predict(g, measured).latency_ms, p.predict(g, h200).latency_ms);
}

// Hugging Face's eager model against the engine's fused graph, Llama-3.1-8B prefill of 4 x 2,048
// tokens on an unseen (H200) and a training (A100-SXM4-80GB) GPU: the same SDPA kernel, so the
// same attention time; the same GEMM FLOPs in more, narrower GEMMs, so GEMM time within a few
// per cent; the eager model's elementwise kernels (33 a layer against the engine's 4, an RMSNorm
// moving 9x the fused kernel's bytes) take longer than the fused ones (whose fits, vidur's and
// vLLM's kernels, cost more a byte than the plain residual add that costs the eager ones) and
// make the difference.
// An eager forward cannot beat its host: one 512-token prompt of Llama-3.1-8B in Hugging Face's
// eager model is 1,323 kernel calls (41 a layer x 32, the embedding, the final norm's 8, the last
// token's head and the sampler) whose H200 kernels take less than the calls' host time, so the
// forward is the calls at the FP32 families' host time per call; at 8 x 2,048 tokens the kernels
// outlast it and nothing is added. The FP32 eager graphs of NeuSight's labels keep their sums
// (a label size on a training GPU), and so do graphs that are not eager.
TEST(BundledWeights, AnEagerForwardTakesAtLeastItsHostCalls) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(dir + "/manifest.yaml")) << "bundled weights missing from " << dir;
  predictor::KernelPredictor p(dir);
  const std::string models = std::string(TILECAST_SOURCE_DIR) + "/configs/models";
  const ModelConfig m = load_model_config("llama-3.1-8b", models);
  const GpuSpec& h200 = registry().resolve("H200");
  const double call_us = p.call_overhead_us(h200, Family::kLinear);
  ASSERT_GT(call_us, 0);
  auto kernels_ms = [](const predictor::ModelForecast& f) {
    double ms = 0;
    for (const auto& op : f.ops)
      if (op.kind != "host") ms += (op.fw_ms + op.bw_ms + op.acc_ms) * double(op.count);
    return ms;
  };
  const auto small = predictor::forecast_model(build_hf_eager_prefill_graph(m, 1, 512, DType::kBf16), h200, p);
  EXPECT_EQ(small.kernel_launches, 1323);
  EXPECT_LT(kernels_ms(small), 1323 * call_us * 1e-3);
  EXPECT_NEAR(small.total_ms, 1323 * call_us * 1e-3, 1e-9);
  EXPECT_NEAR(small.host_floor_ms, small.total_ms - kernels_ms(small), 1e-9);
  EXPECT_EQ(small.ops.back().kind, "host");
  // Per-op timings of nodes run alone (NeuSight's per-op labels) have no floor.
  const auto alone = predictor::forecast_model(build_hf_eager_prefill_graph(m, 1, 512, DType::kBf16), h200, p, 0, true);
  EXPECT_EQ(alone.host_floor_ms, 0);
  const auto large = predictor::forecast_model(build_hf_eager_prefill_graph(m, 8, 2048, DType::kBf16), h200, p);
  EXPECT_EQ(large.host_floor_ms, 0);
  EXPECT_NEAR(large.total_ms, kernels_ms(large), 1e-9 * large.total_ms);
  // The same prompt through an engine's graph (not eager): no floor, far below the host's calls.
  const auto engine = predictor::forecast_model(
      build_serving_graph(m, Mode::kPrefill, 1, 512, DType::kBf16, DType::kBf16, 1), h200, p);
  EXPECT_EQ(engine.host_floor_ms, 0);
  EXPECT_EQ(engine.host_call_us, 0);
  // BERT-Large's FP32 training step at a label size on the V100: its kernels outlast its calls.
  const ModelConfig bert = load_model_config("bert-large", models);
  const auto v100 = predictor::forecast_model(build_op_graph(bert, 2, 512, Mode::kTraining),
                                              registry().resolve("V100-PCIE-32GB"), p);
  EXPECT_GT(v100.host_call_us, 0);
  EXPECT_EQ(v100.host_floor_ms, 0);
}

TEST(BundledWeights, HfEagerPrefillIsTheEnginesPlusItsUnfusedKernels) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(dir + "/manifest.yaml")) << "bundled weights missing from " << dir;
  predictor::KernelPredictor p(dir);
  const ModelConfig m = load_model_config("llama-3.1-8b", std::string(TILECAST_SOURCE_DIR) + "/configs/models");
  for (const char* name : {"H200", "A100-SXM4-80GB"}) {
    const GpuSpec& gpu = registry().resolve(name);
    const auto eager = predictor::forecast_model(build_hf_eager_prefill_graph(m, 4, 2048, DType::kBf16), gpu, p);
    const auto fused = predictor::forecast_model(build_serving_graph(m, Mode::kPrefill, 4, 2048, DType::kBf16,
                                                                     DType::kBf16, 1),
                                                 gpu, p);
    auto by_kind = [](const predictor::ModelForecast& f) {
      std::map<std::string, double> ms;
      for (const auto& op : f.ops) ms[op.kind] += op.fw_ms * double(op.count);
      return ms;
    };
    auto e = by_kind(eager), f = by_kind(fused);
    EXPECT_TRUE(eager.hf_eager && !fused.hf_eager);
    EXPECT_EQ(eager.kernel_launches, 41 * 32 + 1 + 8 + 1 + 1) << name;
    EXPECT_NEAR(e["attention"], f["attention"], 1e-9 * f["attention"]) << name;
    EXPECT_NEAR(e["gemm"] / f["gemm"], 1.0, 0.05) << name;
    EXPECT_GT(e["memory_op"], 1.5 * f["memory_op"]) << name;
    EXPECT_GT(eager.total_ms, fused.total_ms * 1.05) << name;
    EXPECT_NEAR(eager.total_ms - fused.total_ms, e["memory_op"] - f["memory_op"] + e["gemm"] - f["gemm"] +
                                                      e["memory"] - f["memory"],
                1e-6 * eager.total_ms)
        << name;
  }
}

namespace {
// A copy of the weights folder `dir` at `name` under the temp folder whose manifest's text
// `edit` rewrites; "" (and no copy left) when `edit` returns false.
template <typename Edit>
std::string weights_copy_edited(const std::string& dir, const char* name, Edit edit) {
  const fs::path tmp = fs::temp_directory_path() / name;
  fs::remove_all(tmp);
  fs::copy(dir, tmp, fs::copy_options::recursive);
  std::ifstream in(tmp / "manifest.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  in.close();
  std::string text = ss.str();
  if (!edit(text)) {
    fs::remove_all(tmp);
    return "";
  }
  std::ofstream(tmp / "manifest.yaml") << text;
  return tmp.string();
}
// Its manifest's lines from the first holding `first` up to and including the next holding
// `last` (the same line when `last` is empty) taken out; "" when `first` is not in the manifest.
std::string weights_copy_without(const std::string& dir, const char* name, const std::string& first,
                                 const std::string& last = "") {
  return weights_copy_edited(dir, name, [&](std::string& text) {
    const size_t at = text.find(first);
    if (at == std::string::npos) return false;
    const size_t begin = text.rfind('\n', at) + 1;
    const size_t end = text.find('\n', last.empty() ? at : text.find(last, at)) + 1;
    text.erase(begin, end - begin);
    return true;
  });
}
// `line` inserted after the first line holding `after` that follows the first holding `block`;
// "" when either is missing.
std::string weights_copy_with(const std::string& dir, const char* name, const std::string& block,
                              const std::string& after, const std::string& line) {
  return weights_copy_edited(dir, name, [&](std::string& text) {
    const size_t b = text.find(block);
    const size_t at = b == std::string::npos ? b : text.find(after, b);
    if (at == std::string::npos) return false;
    text.insert(text.find('\n', at) + 1, line);
    return true;
  });
}
// A copy of the weights folder `dir` without the training GPUs' recorded specs (gpus/): it
// forecasts as before session 83, neither capped nor raised; "" when the copy fails.
std::string weights_copy_without_recorded_gpus(const std::string& dir, const char* name) {
  const std::string bare = weights_copy_edited(dir, name, [](std::string&) { return true; });
  if (!bare.empty()) fs::remove_all(fs::path(bare) / trainer::kRecordedGpuDir);
  return bare;
}
}  // namespace

// No slower than a training GPU it betters in every spec (the LLM-era families). The H100 SXM has more SMs (132 against
// 108), a higher boost clock (1,980 against 1,410 MHz), more DRAM bandwidth (3,352 against 2,039
// GB/s), L2 (50 against 40 MB) and BF16 rate than the A100-SXM4-80GB, a training GPU of every
// LLM-era family; the H100 PCIe's 2,000 GB/s are below the A100 SXM's, no Hopper GPU has the
// L40S's 2,520 MHz clock, and the A100 runs no FP8. A decode step of 2,048 sequences over 64 KV
// heads at two cached tokens (131,072 CTAs) is forecast on the H100 by the decode family's fitted
// roofline alone, its FlashAttention cost per CTA (42.17 ns) above what the A100's own rows show
// (4.53 ms measured there, 34.6 ns a CTA); the A100's forecast is its network's. With the weights'
// recorded specs (gpus/) the H100's forecast is the A100's, to the digit; in a copy without them
// it is the fitted roofline's, over 1.1x slower. A long cache (64 x 8,192 tokens, 2.1 GB read at
// the H100's bandwidth) is the H100's own, in both.
TEST(BundledWeights, UnseenGpuNoSlowerThanATrainingGpuItBetters) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(fs::path(dir) / trainer::kRecordedGpuDir / "A100-80GB-SXM.yaml"))
      << "bundled weights without their training GPUs' specs: " << dir;
  const GpuSpec &h100 = registry().resolve("H100-SXM"), &h100_pcie = registry().resolve("H100-PCIe"),
                &h200 = registry().resolve("H200"), &a100 = registry().resolve("A100-SXM4-80GB"),
                &l40s = registry().resolve("L40S");
  const KernelQuery tiny = attention_decode_q(2048, 2, 64, 64, 128, DType::kBf16, DType::kBf16);
  const KernelQuery long_cache = attention_decode_q(64, 8192, 32, 8, 128, DType::kBf16, DType::kBf16);
  const KernelQuery bf16_gemm = gemm_q(4096, 4096, 4096, DType::kBf16), fp8_gemm = gemm_q(4096, 4096, 4096, DType::kFp8);
  EXPECT_TRUE(predictor::betters_in_every_spec(h100, a100, tiny));
  EXPECT_TRUE(predictor::betters_in_every_spec(h100, a100, bf16_gemm));
  EXPECT_TRUE(predictor::betters_in_every_spec(h200, h100, bf16_gemm));
  EXPECT_FALSE(predictor::betters_in_every_spec(a100, h100, bf16_gemm));
  EXPECT_FALSE(predictor::betters_in_every_spec(h100, a100, fp8_gemm));
  EXPECT_FALSE(predictor::betters_in_every_spec(h100_pcie, a100, bf16_gemm));
  EXPECT_FALSE(predictor::betters_in_every_spec(h100, l40s, bf16_gemm));

  predictor::KernelPredictor p(dir);
  const auto on_a100 = p.predict(tiny, a100);
  EXPECT_TRUE(on_a100.capped_by.empty());  // a training GPU: its network's forecast
  const auto capped = p.predict(tiny, h100);
  EXPECT_EQ(capped.capped_by, "A100-80GB-SXM");
  EXPECT_DOUBLE_EQ(capped.latency_ms, on_a100.latency_ms);
  EXPECT_LE(capped.member_max_ms, capped.latency_ms);
  EXPECT_LE(capped.stream_ms, capped.latency_ms);
  EXPECT_TRUE(p.predict(long_cache, h100).capped_by.empty());
  EXPECT_TRUE(p.predict(tiny, h100_pcie).capped_by.empty());
  // NeuSight's FP32 families keep their own forecast (leave one GPU out: kernels better, whole
  // models worse): an FP32 layer norm of 46 x 135 on the H200 (a row of our H200 run) is
  // forecast above the A100-PCIE-40GB's, which the H200 betters, and stays so.
  const KernelQuery ln = vec_q(OpKind::kLayerNorm, 46, 135);
  const GpuSpec& a100_pcie = registry().resolve("A100-PCIE-40GB");
  ASSERT_TRUE(predictor::betters_in_every_spec(h200, a100_pcie, ln));
  const auto ln_h200 = p.predict(ln, h200);
  EXPECT_TRUE(ln_h200.capped_by.empty());
  EXPECT_GT(ln_h200.latency_ms, 1.1 * p.predict(ln, a100_pcie).latency_ms);

  const std::string bare = weights_copy_without_recorded_gpus(dir, "tc_no_recorded_gpus");
  ASSERT_FALSE(bare.empty());
  predictor::KernelPredictor q(bare);
  const auto uncapped = q.predict(tiny, h100);
  EXPECT_TRUE(uncapped.capped_by.empty());
  EXPECT_GT(uncapped.latency_ms, 1.1 * on_a100.latency_ms);
  EXPECT_DOUBLE_EQ(q.predict(long_cache, h100).latency_ms, p.predict(long_cache, h100).latency_ms);
  fs::remove_all(bare);
}

// Nor faster than a training GPU that betters it in every spec, where both run the kernel in one
// library (session 84). The A100-SXM4-80GB, a training GPU of every LLM-era family, betters the
// A100-PCIE-40GB in every spec (the same SMs, clock, L2 and rates; 2,039 against 1,555 GB/s). A
// decode step over a long cache (64 sequences x 8,192 tokens x 8 KV heads) on the 40 GB card is
// forecast by the decode family's fitted roofline alone; without the weights' recorded specs
// that is faster than the A100-SXM4-80GB's own forecast (its network's) by over 1.1x, with them
// it is that forecast, to the digit. The B200 betters the H100 PCIe in every spec as well, but
// runs its attention in TRT-LLM, not FlashAttention: a small prefill that its forecast puts
// above the H100 PCIe's stays the H100 PCIe's own.
TEST(BundledWeights, UnseenGpuNoFasterThanATrainingGpuThatBettersIt) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(fs::path(dir) / trainer::kRecordedGpuDir / "A100-80GB-SXM.yaml"))
      << "bundled weights without their training GPUs' specs: " << dir;
  const GpuSpec &a100 = registry().resolve("A100-SXM4-80GB"), &a100_40 = registry().resolve("A100-PCIE-40GB"),
                &b200 = registry().resolve("B200"), &h100_pcie = registry().resolve("H100-PCIe");
  const KernelQuery long_cache = attention_decode_q(64, 8192, 32, 8, 128, DType::kBf16, DType::kBf16);
  const KernelQuery small_prefill = attention_prefill_q(4, 64, 64, 8, 128, DType::kBf16, DType::kBf16);
  EXPECT_TRUE(predictor::betters_in_every_spec(a100, a100_40, long_cache));
  EXPECT_TRUE(predictor::same_kernel_library(a100, a100_40, long_cache));
  EXPECT_TRUE(predictor::betters_in_every_spec(b200, h100_pcie, small_prefill));
  EXPECT_FALSE(predictor::same_kernel_library(b200, h100_pcie, small_prefill));
  EXPECT_TRUE(predictor::same_kernel_library(b200, h100_pcie, gemm_q(64, 4096, 4096, DType::kBf16)));

  predictor::KernelPredictor p(dir);
  const auto on_a100 = p.predict(long_cache, a100);
  EXPECT_TRUE(on_a100.lifted_by.empty());  // a training GPU: its network's forecast
  const auto lifted = p.predict(long_cache, a100_40);
  EXPECT_EQ(lifted.lifted_by, "A100-80GB-SXM");
  EXPECT_TRUE(lifted.capped_by.empty());
  EXPECT_DOUBLE_EQ(lifted.latency_ms, on_a100.latency_ms);
  EXPECT_GE(lifted.member_min_ms, lifted.latency_ms);
  EXPECT_LE(lifted.stream_ms, lifted.latency_ms);
  const auto on_h100_pcie = p.predict(small_prefill, h100_pcie);
  EXPECT_TRUE(on_h100_pcie.lifted_by.empty());
  EXPECT_LT(on_h100_pcie.latency_ms, p.predict(small_prefill, b200).latency_ms);

  const std::string bare = weights_copy_without_recorded_gpus(dir, "tc_no_recorded_gpus_floor");
  ASSERT_FALSE(bare.empty());
  predictor::KernelPredictor q(bare);
  const auto own = q.predict(long_cache, a100_40);
  EXPECT_TRUE(own.lifted_by.empty());
  EXPECT_LT(1.1 * own.latency_ms, on_a100.latency_ms);
  fs::remove_all(bare);
}

// Where the training GPUs' own forecasts are out of spec order, an unseen GPU between them gets
// the cap: the floor raises it to the better GPU's forecast, then the cap lowers it to the
// worse GPU's, and only the cap is reported. The bundled GEMM network forecasts a 2-token GEMM
// slower on the L40S than on the A40 (the premise, asserted); a made-up GPU that betters the A40
// and is bettered by the L40S in every spec (not a twin of either: other SM count) lies between.
TEST(BundledWeights, CapHoldsOverAFloorItUndercuts) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(fs::path(dir) / trainer::kRecordedGpuDir / "A40.yaml"))
      << "bundled weights without their training GPUs' specs: " << dir;
  const GpuSpec &a40 = registry().resolve("A40"), &l40s = registry().resolve("L40S");
  GpuSpec mid = a40;
  mid.name = "between-A40-and-L40S";
  mid.cuda_name = "Made-up GPU between the A40 and the L40S";
  mid.num_sms = 100;
  mid.boost_clock_mhz = 2000;
  mid.fp32_peak_gflops = 51200;
  mid.mem_bw_gbps = 768;
  mid.l2_cache_mb = 48;
  mid.tensor_peak_gflops["bf16"] = 200000;
  const KernelQuery q = gemm_q(2, 4096, 128, DType::kBf16);
  ASSERT_TRUE(predictor::betters_in_every_spec(mid, a40, q));
  ASSERT_TRUE(predictor::betters_in_every_spec(l40s, mid, q));
  ASSERT_FALSE(gpu_twins(mid, a40) || gpu_twins(mid, l40s));

  predictor::KernelPredictor p(dir);
  const double on_a40 = p.predict(q, a40).latency_ms, on_l40s = p.predict(q, l40s).latency_ms;
  ASSERT_GT(on_l40s, 1.2 * on_a40) << "the premise: the training GPUs' forecasts out of spec order";
  const auto r = p.predict(q, mid);
  EXPECT_DOUBLE_EQ(r.latency_ms, on_a40);
  EXPECT_EQ(r.capped_by, "A40");
  EXPECT_TRUE(r.lifted_by.empty());
  EXPECT_LE(r.member_max_ms, r.latency_ms);
  EXPECT_LE(r.stream_ms, r.latency_ms);
}

// The bundled MoE family on an unseen GPU blends its networks (0.3) with its fitted roofline
// (0.7; session 78) and gives the layer read as two stacked GEMMs nothing (gemm_composite_weight, default 0,
// since session 70). With the key set (a copy of the weights), 0.25 of the forecast comes from
// those GEMMs: exactly the gemm family's own forecasts of moe_gemm_composite's two queries, and
// the forecast lies between the blend without them and them. A training GPU (the B200) and a
// 4-bit expert format get none.
TEST(BundledWeights, MoeOnAnUnseenGpuStackedGemmsAreAnOption) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(dir + "/manifest.yaml")) << "bundled weights missing from " << dir;
  predictor::KernelPredictor p(dir);
  const GpuSpec& h100 = registry().resolve("H100-SXM");
  const KernelQuery q = moe_q(4096, 4096, 14336, 2, 8, 1, 1, DType::kBf16);
  const auto r = p.predict(q, h100);
  EXPECT_EQ(r.composite_weight, 0);
  EXPECT_NEAR(r.network_weight, 0.3, 1e-12);  // unseen_prior_weight 0.7
  const std::string tmp = weights_copy_with(dir, "tc_moe_composite", "\n  moe:\n", "      unseen_prior_weight: ",
                                            "      gemm_composite_weight: 0.25\n");
  ASSERT_FALSE(tmp.empty());
  predictor::KernelPredictor with(tmp);
  KernelQuery up, down;
  ASSERT_TRUE(moe_gemm_composite(q, &up, &down));
  const auto c = with.predict(q, h100);
  const auto g = with.predict(std::vector<KernelQuery>{up, down}, h100);
  fs::remove_all(tmp);
  EXPECT_DOUBLE_EQ(c.composite_weight, 0.25);
  EXPECT_NEAR(c.composite_ms, g[0].latency_ms + g[1].latency_ms, 1e-12);
  EXPECT_NEAR(c.network_weight, 0.3 * 0.75, 1e-12);
  EXPECT_GT(c.latency_ms, std::min(r.latency_ms, c.composite_ms));
  EXPECT_LT(c.latency_ms, std::max(r.latency_ms, c.composite_ms));
  // A training GPU: the network alone.
  const auto b200 = p.predict(q, registry().resolve("B200"));
  EXPECT_EQ(b200.composite_weight, 0);
  EXPECT_EQ(b200.network_weight, 1);
  // int4 experts: no GEMM of that format.
  const auto int4 = p.predict(moe_q(64, 2048, 768, 8, 128, 1, 1, DType::kInt4), h100);
  EXPECT_EQ(int4.composite_weight, 0);
  EXPECT_NEAR(int4.network_weight, 0.3, 1e-12);
}

// SGLang's Triton fallback on datacenter Blackwell (a windowed prefill of a head_dim TRT-LLM's
// kernels lack): forecast by the manifest's fallback_prior, on the work that kernel does (the
// whole causal triangle, at the BF16 rate), corrected by the fallback's own network, which puts
// back what the window and FP8 change, within the data's band (scripts/llm-data-checks.py, check
// 6: t(window 1,024) / t(128) 1.00-1.29, FP8 / BF16 0.83-0.94 at the 10th-90th percentiles);
// the B200's twins alike; FlashAttention GPUs and TRT-LLM's head dims keep the family's network;
// a weights folder without the fallback network forecasts by the fallback_prior alone, one
// without either (trained without Blackwell rows) on TRT-LLM's path.
TEST(BundledWeights, TritonPrefillFallbackOnBlackwell) {
  const std::string dir = trainer::weights_dir();
  ASSERT_TRUE(fs::exists(dir + "/manifest.yaml")) << "bundled weights missing from " << dir;
  const auto entry = trainer::load_manifest(dir).families.at("context_attention");
  ASSERT_TRUE(entry.has_fallback_prior);
  ASSERT_TRUE(entry.has_fallback_network());
  EXPECT_EQ(entry.fallback_network.training_gpus, std::vector<std::string>{"NVIDIA B200"});
  predictor::KernelPredictor p(dir);
  const GpuSpec& b200 = registry().resolve("B200");
  auto prefill = [](int64_t hd, int64_t window, DType d) {
    return attention_prefill_q(4, 4096, 32, 8, hd, d, d, window);
  };
  const auto w1024 = p.predict(prefill(192, 1024, DType::kBf16), b200);
  EXPECT_TRUE(w1024.fallback);
  EXPECT_EQ(w1024.network_weight, 1);
  EXPECT_TRUE(w1024.prior_is_base);
  EXPECT_NE(w1024.latency_ms, w1024.prior_ms);
  const auto w128 = p.predict(prefill(192, 128, DType::kBf16), b200);
  EXPECT_DOUBLE_EQ(w128.prior_ms, w1024.prior_ms);  // the roofline's work has no window
  EXPECT_GE(w1024.latency_ms / w128.latency_ms, 1.0);
  EXPECT_LE(w1024.latency_ms / w128.latency_ms, 1.29);
  const auto fp8 = p.predict(prefill(192, 1024, DType::kFp8), b200);
  EXPECT_TRUE(fp8.fallback);
  EXPECT_GE(fp8.latency_ms / w1024.latency_ms, 0.83);
  EXPECT_LE(fp8.latency_ms / w1024.latency_ms, 0.94);
  // The network's forecast of TRT-LLM's head_dim 128 over the same window is far faster.
  const auto trt = p.predict(prefill(128, 1024, DType::kBf16), b200);
  EXPECT_FALSE(trt.fallback);
  EXPECT_EQ(trt.network_weight, 1);
  EXPECT_LT(trt.latency_ms * 10, w1024.latency_ms);
  const auto gb200 = p.predict(prefill(192, 1024, DType::kBf16), registry().resolve("GB200"));
  EXPECT_TRUE(gb200.fallback);
  EXPECT_TRUE(gb200.standing.twin);
  EXPECT_EQ(gb200.network_weight, 1);
  const auto h100 = p.predict(prefill(192, 1024, DType::kBf16), registry().resolve("H100-SXM"));
  EXPECT_FALSE(h100.fallback);
  EXPECT_GT(h100.network_weight, 0);
  // Without the fallback network: its fitted roofline alone, window and FP8 alike.
  const std::string bare = weights_copy_without(dir, "tc_no_fallback_network", "    fallback_network:\n", "training_gpus");
  ASSERT_FALSE(bare.empty());
  const predictor::KernelPredictor pb(bare);
  const auto b1024 = pb.predict(prefill(192, 1024, DType::kBf16), b200);
  EXPECT_TRUE(b1024.fallback);
  EXPECT_EQ(b1024.network_weight, 0);
  EXPECT_DOUBLE_EQ(b1024.latency_ms, w1024.prior_ms);
  EXPECT_DOUBLE_EQ(pb.predict(prefill(192, 128, DType::kBf16), b200).latency_ms, b1024.latency_ms);
  fs::remove_all(bare);
  // Without either (as in a fold trained without the B200): TRT-LLM's path.
  const std::string tmp = weights_copy_without(dir, "tc_no_fallback_prior", "    fallback_prior:\n", "training_gpus");
  ASSERT_FALSE(tmp.empty());
  const auto plain = predictor::KernelPredictor(tmp).predict(prefill(192, 1024, DType::kBf16), b200);
  fs::remove_all(tmp);
  EXPECT_FALSE(plain.fallback);
  EXPECT_EQ(plain.network_weight, 1);
  EXPECT_LT(plain.latency_ms * 10, w1024.latency_ms);
  // eval-kernels splits its rows by the library their forecast assumes (a generated fixture in
  // aiconfigurator's layout: two TRT-LLM rows, three of head_dim 192 with a window).
  const auto rep = predictor::eval_kernels({data_path("aic_b200_prefill_libraries.csv")}, p, registry(), nullptr, true);
  ASSERT_EQ(rep.by_library.size(), 2u);
  EXPECT_EQ(rep.by_library.at("context_attention/triton").rows, 3);
  EXPECT_EQ(rep.by_library.at("context_attention/trtllm_mha").rows, 2);
  EXPECT_TRUE(predictor::eval_kernels({data_path("aiconfigurator_gemm_small.csv")}, p, registry(), nullptr, true)
                  .by_library.empty());
}
