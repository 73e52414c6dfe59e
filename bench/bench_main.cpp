// tilecast_bench: forecast latency and throughput (no LibTorch, as `tilecast` runs them).
// Training throughput is bench/bench_train.cpp. Not a test: run it by hand and record the
// output in docs/performance.md.
//   tilecast_bench [--weights DIR]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/kernel_dataset.h"
#include "core/tile_table.h"
#include "core/model_config.h"
#include "core/op_graph.h"
#include "predictor/graph_predictor.h"
#include "predictor/dense_mlp.h"
#include "predictor/kernel_predictor.h"
#include "trainer/weights_manifest.h"

using namespace tilecast;
using Clock = std::chrono::steady_clock;

namespace {
double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::vector<KernelQuery> random_queries(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> e(4, 12), pick(0, 4);
  std::vector<KernelQuery> qs;
  for (int i = 0; i < n; ++i) {
    KernelQuery q;
    switch (pick(rng)) {
      case 0: q.op = OpKind::kBmm; q.b = 1 << (e(rng) / 2); q.m = 1 << e(rng); q.n = 1 << (e(rng) / 2 + 3); q.k = 1 << e(rng); break;
      case 1: q.op = OpKind::kLinear; q.m = 1 << e(rng); q.n = 1 << e(rng); q.k = 1 << e(rng); break;
      case 2: q.op = OpKind::kGelu; q.b = 1 << e(rng); q.h = 1 << e(rng); break;
      case 3: q.op = OpKind::kSoftmax; q.b = 1 << e(rng); q.h = 1 << e(rng); break;
      default: q.op = OpKind::kLayerNorm; q.b = 1 << e(rng); q.h = 1 << e(rng); break;
    }
    // Distinct shapes so the tile memo does not make it look cheaper than it is.
    if (q.op == OpKind::kBmm || q.op == OpKind::kLinear) q.m += i % 97; else q.h += i % 97;
    qs.push_back(q);
  }
  return qs;
}
}  // namespace

int main(int argc, char** argv) {
  std::string weights;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--weights") && i + 1 < argc) weights = argv[++i];
    else { std::fprintf(stderr, "usage: tilecast_bench [--weights DIR]\n"); return 1; }
  }
  try {
    GpuRegistry reg(trainer::config_dir() + "/gpus");
    const GpuSpec& h100 = reg.resolve("H100-SXM");
    predictor::KernelPredictor pred(trainer::weights_dir(weights));
    std::printf("metric,threads,value,unit\n");
    std::fprintf(stderr, "BLAS: %s\n", predictor::blas_name().c_str());
    for (int threads : {1, 0}) {
      const int nthreads = predictor::set_blas_threads(threads);
      // Single-kernel latency: one query per call.
      auto qs = random_queries(2000, 1);
      for (int i = 0; i < 50; ++i) pred.predict(qs[i], h100);  // warm-up
      auto t0 = Clock::now();
      for (const auto& q : qs) pred.predict(q, h100);
      auto t1 = Clock::now();
      std::printf("single_prediction_latency_us,%d,%.1f,us\n", nthreads, 1e6 * secs(t0, t1) / qs.size());
      // Batched throughput.
      auto big = random_queries(20000, 2);
      pred.predict(big, h100);
      t0 = Clock::now();
      const int reps = 3;
      for (int r = 0; r < reps; ++r) pred.predict(big, h100);
      t1 = Clock::now();
      std::printf("batched_predictions_per_s,%d,%.0f,1/s\n", nthreads, reps * big.size() / secs(t0, t1));
    }
    const int all_threads = predictor::set_blas_threads(0);
    // Fused-MoE kernel forecasts (expected expert loads per query), batched: Mixtral- and
    // Qwen3-MoE-like layers, balanced and power-law routing, tokens 1-8192.
    {
      std::mt19937_64 rng(3);
      std::uniform_int_distribution<int> e(0, 13), pick(0, 2);
      std::vector<KernelQuery> moe;
      for (int i = 0; i < 20000; ++i) {
        const bool qwen = i % 2;
        const double alpha = pick(rng) == 0 ? 0.0 : pick(rng) == 1 ? 1.01 : 1.2;
        moe.push_back(moe_q((int64_t{1} << e(rng)) + i % 7, qwen ? 2048 : 4096, qwen ? 768 : 14336, qwen ? 8 : 2,
                            qwen ? 128 : 8, 1, 1, DType::kBf16, alpha));
      }
      pred.predict(moe, h100);  // warm-up
      const int reps = 3;
      auto t0 = Clock::now();
      for (int r = 0; r < reps; ++r) pred.predict(moe, h100);
      auto t1 = Clock::now();
      std::printf("batched_moe_predictions_per_s,%d,%.0f,1/s\n", all_threads, reps * moe.size() / secs(t0, t1));
    }
    // Whole-model forecast: GPT3-2.7B training step (batch 2, seq 2048) on H100, warm.
    {
      ModelConfig mc = load_model_config("gpt3-2.7b", trainer::config_dir() + "/models");
      predictor::forecast_model(build_op_graph(mc, 2, 2048, Mode::kTraining), h100, pred);  // warm-up
      const int reps = 50;
      auto t0 = Clock::now();
      double sink = 0;
      for (int r = 0; r < reps; ++r)
        sink += predictor::forecast_model(build_op_graph(mc, 2, 2048, Mode::kTraining), h100, pred).total_ms;
      auto t1 = Clock::now();
      std::printf("model_forecast_gpt3_2.7b_train_ms,%d,%.3f,ms\n", all_threads, 1e3 * secs(t0, t1) / reps);
      if (sink <= 0) return 1;
    }
    // Serving forecast: Llama-3.1-70B generate (batch 8, prompt 2048, 256 tokens, tp 4) on
    // H100: one prefill graph and 33 decode graphs.
    {
      ModelConfig mc = load_model_config("llama-3.1-70b", trainer::config_dir() + "/models");
      auto run = [&] {
        return predictor::forecast_generate(mc, h100, pred, 8, 2048, 256, DType::kBf16, DType::kBf16, Parallelism{1, 4}).e2e_ms;
      };
      run();  // warm-up
      const int reps = 10;
      double sink = 0;
      auto t0 = Clock::now();
      for (int r = 0; r < reps; ++r) sink += run();
      auto t1 = Clock::now();
      std::printf("generate_forecast_llama_3.1_70b_tp4_ms,%d,%.3f,ms\n", all_threads, 1e3 * secs(t0, t1) / reps);
      if (sink <= 0) return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilecast_bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
