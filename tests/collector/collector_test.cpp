// Collector pieces that need no GPU: sweeps, CUPTI record processing (hand-built records),
// the crash-safe CSV writer, merge.
#include <filesystem>
#include <fstream>
#include <set>

#include "../core/test_util.h"
#include "collector/dataset_writer.h"
#include "collector/kernel_record.h"
#include "collector/sweep.h"
#include "core/csv.h"
#include "core/error.h"
#include "core/kernel_dataset.h"

using namespace tilecast;
using namespace tilecast::collector;
namespace fs = std::filesystem;

namespace {
std::string sweep_path(const std::string& name) {
  return std::string(TILECAST_SOURCE_DIR) + "/configs/sweeps/" + name + ".yaml";
}
std::string write_tmp(const std::string& name, const std::string& text) {
  std::string p = ::testing::TempDir() + name;
  std::ofstream(p) << text;
  return p;
}
CollectedRow row(const std::string& id, int64_t b, int64_t h) {
  CollectedRow r;
  r.op_name = "add";
  r.device = "cpu";
  r.latency_ms = 0.5;
  r.dims = {b, h};
  r.dtype = "fp32";
  r.config_id = id;
  return r;
}
}  // namespace

TEST(Sweep, SmokeAndDefaultSizes) {
  Sweep smoke = load_sweep(sweep_path("smoke"));
  EXPECT_EQ(sweep_size(smoke), 200);
  Sweep def = load_sweep(sweep_path("default"));
  EXPECT_EQ(sweep_size(def), 19440 + 6400 + 19250 + 1750 + 1400);
  std::set<int> families;
  for (int64_t i = 0; i < sweep_size(smoke); ++i) {
    SweepConfig c = sweep_config(smoke, i);
    families.insert(static_cast<int>(op_family(c.query.op)));
    validate_query(c.query, c.id);
  }
  EXPECT_EQ(families.size(), 5u);
  // The bundled LLM-era sweeps load; the sampler's: 2 x 3 cells x 2 draws, all fp32 samplers over
  // the three vocabularies (hand count of configs/sweeps/llm-sampler.yaml).
  for (const char* name : {"llm-smoke", "llm-gpu"}) EXPECT_GT(sweep_size(load_sweep(sweep_path(name))), 0) << name;
  Sweep sampler = load_sweep(sweep_path("llm-sampler"));
  ASSERT_EQ(sweep_size(sampler), 12);
  std::set<int64_t> vocab;
  for (int64_t i = 0; i < sweep_size(sampler); ++i) {
    const SweepConfig c = sweep_config(sampler, i);
    EXPECT_EQ(c.query.op, OpKind::kSampler) << c.id;
    EXPECT_EQ(c.query.dtype, DType::kFp32) << c.id;
    vocab.insert(c.query.h);
  }
  EXPECT_EQ(vocab, (std::set<int64_t>{32000, 128256, 151936}));
}

TEST(Sweep, DecodingIsDeterministicAndInsideCells) {
  Sweep s = load_sweep(sweep_path("default"));
  for (int64_t i : {0L, 1L, 777L, 19439L, 19440L, 40000L, 48239L}) {
    SweepConfig a = sweep_config(s, i), b = sweep_config(s, i);
    EXPECT_EQ(a.id, b.id);
    if (a.query.op == OpKind::kBmm) {
      for (int64_t d : {a.query.b, a.query.m, a.query.n, a.query.k}) {
        EXPECT_GE(d, 1);
        EXPECT_LE(d, 1025);
      }
    }
  }
  EXPECT_EQ(sweep_config(s, 19440).query.op, OpKind::kLinear);
}

TEST(Sweep, ShardsPartitionTheSweep) {
  Sweep s = load_sweep(sweep_path("smoke"));
  Shard a = parse_shard("0/3"), b = parse_shard("1/3"), c = parse_shard("2/3");
  for (int64_t i = 0; i < sweep_size(s); ++i) EXPECT_EQ(a.owns(i) + b.owns(i) + c.owns(i), 1);
  expect_error<ConfigError>([] { parse_shard("3/3"); }, {"--shard"});
  expect_error<ConfigError>([] { parse_shard("x"); }, {"--shard", "I/N"});
}

TEST(Sweep, BadFilesNameTheField) {
  expect_error<ConfigError>([] { load_sweep(write_tmp("s1.yaml", "name: x\nfamilies: {convolution: {}}\n")); },
                            {"s1.yaml", "families.convolution", "unknown family"});
  expect_error<ConfigError>([] { load_sweep(write_tmp("s2.yaml", "families: {bmm: {b: [1, 2], m: [1, 2], n: [5, 1], k: [1, 2]}}\n")); },
                            {"s2.yaml", "families.bmm.n"});
  expect_error<ConfigError>([] { load_sweep(write_tmp("s3.yaml", "dtypes: [fp8]\nfamilies: {softmax: {b: [1, 2], h: [1, 2]}}\n")); },
                            {"s3.yaml", "dtypes", "unknown dtype 'fp8'", "fp8_static"});
  expect_error<ConfigError>([] { load_sweep(write_tmp("s4.yaml", "families: {elementwise: {ops: [softmax], b: [1, 2], h: [1, 2]}}\n")); },
                            {"s4.yaml", "'softmax' is not an op of family elementwise"});
  expect_error<ConfigError>([] { load_sweep(write_tmp("s5.yaml", "repeat: 3\nfamilies: {}\n")); }, {"unknown field 'repeat'"});
  // A dtype one of its families does not model would write rows that train refuses.
  expect_error<ConfigError>([] { load_sweep(write_tmp("s6.yaml", "dtypes: [fp32, bf16]\nfamilies: {softmax: {b: [1, 2], h: [1, 2]}}\n")); },
                            {"s6.yaml", "families.softmax", "dtype bf16 is not modelled", "is modelled in fp32"});
  // FP8 is collected for GEMMs only (a static cast and torch._scaled_mm).
  expect_error<ConfigError>(
      [] {
        load_sweep(write_tmp("s7.yaml", "dtypes: [fp8_static]\nfamilies: {attention_prefill: {b: [1, 2], s: [128, 256], "
                                        "kv_heads: [8, 8], group: [1, 1], head_dim: [128, 128]}}\n"));
      },
      {"s7.yaml", "families.attention_prefill", "dtype fp8_static is not modelled"});
}

TEST(Sweep, Fp8GemmConfigs) {
  const Sweep s = load_sweep(write_tmp("fp8.yaml", "dtypes: [bf16, fp8_static]\nfamilies: {gemm: {samples_per_cell: 1, "
                                                    "m: {values: [16, 64]}, n: {values: [4096]}, k: {values: [2048]}}}\n"));
  ASSERT_EQ(sweep_size(s), 4);  // 2 cells x 1 sample x 2 dtypes
  int fp8 = 0;
  for (int64_t i = 0; i < sweep_size(s); ++i) {
    const SweepConfig c = sweep_config(s, i);
    EXPECT_EQ(c.query.n, 4096) << c.id;
    EXPECT_EQ(c.query.k, 2048) << c.id;
    if (c.dtype == "fp8_static") {
      ++fp8;
      EXPECT_EQ(c.query.dtype, DType::kFp8Static) << c.id;
      EXPECT_NE(c.id.find("gemm/fp8_static/"), std::string::npos) << c.id;
    }
  }
  EXPECT_EQ(fp8, 2);
}

TEST(KernelRecords, GroupByConfigTwoPass) {
  // Config 7, three repeats (external id = 7 * 10 + rep); repeat 1 launches two kernels.
  std::vector<ExternalCorrelation> ext = {{1, 70}, {2, 71}, {3, 71}, {4, 72}, {5, 80}, {6, 72}};
  auto k = [](uint32_t corr, const char* name, int64_t s, int64_t e) {
    KernelRecord r;
    r.name = name;
    r.correlation_id = corr;
    r.start_ns = s;
    r.end_ns = e;
    r.grid[0] = 4, r.grid[1] = 2, r.grid[2] = 1;
    r.block[0] = 256, r.block[1] = 1, r.block[2] = 1;
    return r;
  };
  std::vector<KernelRecord> recs = {k(1, "sgemm_128x64", 1000, 3000), k(2, "splitk_reduce", 5000, 5500),
                                    k(3, "sgemm_128x64", 5500, 9000), k(4, "sgemm_128x64", 10000, 12000),
                                    k(5, "other_config", 20000, 21000), k(6, "sgemm_128x64", 0, 0),
                                    k(99, "not_ours", 0, 100)};
  auto g = group_by_config(recs, ext, 10);
  ASSERT_EQ(g.size(), 2u);
  const ConfigKernels& c = g.at(7);
  ASSERT_EQ(c.repeat_ms.size(), 3u);
  EXPECT_DOUBLE_EQ(c.repeat_ms[0], 2000e-6);
  EXPECT_DOUBLE_EQ(c.repeat_ms[1], 4000e-6);  // 5000 -> 9000: both kernels, back to back
  EXPECT_EQ(c.repeat_span_ms, c.repeat_ms);     // no kernel waited for the host
  EXPECT_EQ(c.main_kernel, "sgemm_128x64");
  EXPECT_EQ(c.kernels, (std::vector<std::string>{"sgemm_128x64", "splitk_reduce"}));
  EXPECT_EQ(c.dropped, 1);
  EXPECT_EQ(c.grid[0], 4);
  EXPECT_EQ(g.at(8).main_kernel, "other_config");
  EXPECT_DOUBLE_EQ(median_ms({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median_ms({4, 1, 2, 3}), 2.5);
  int32_t grid[3] = {216, 1, 1}, block[3] = {128, 1, 1};
  EXPECT_DOUBLE_EQ(blocks_per_sm(grid, 108), 2.0);
  EXPECT_DOUBLE_EQ(warps_per_sm(grid, block, 108), 8.0);
}

TEST(KernelRecords, LatencyIsTheGpusBusyTime) {
  // Repeat 0: a 1 us cast, then a 3 us GEMM launched 30 us later by a slow host: busy 4 us,
  // span 34 us. Repeat 1: kernels of two streams overlapping (0-3, 1-2 and 2.5-4 us) and a
  // last one after a 1 us gap (5-6 us): busy 4 + 1 = 5 us, span 6 us.
  std::vector<ExternalCorrelation> ext = {{1, 30}, {2, 30}, {3, 31}, {4, 31}, {5, 31}, {6, 31}};
  auto k = [](uint32_t corr, int64_t s, int64_t e) {
    KernelRecord r;
    r.name = "k" + std::to_string(corr);
    r.correlation_id = corr;
    r.start_ns = s;
    r.end_ns = e;
    return r;
  };
  // Records arrive in completion order, not start order.
  std::vector<KernelRecord> recs = {k(2, 1'031'000, 1'034'000), k(1, 1'000'000, 1'001'000), k(4, 1000, 2000),
                                    k(3, 0, 3000),  k(6, 5000, 6000), k(5, 2500, 4000)};
  const ConfigKernels c = group_by_config(recs, ext, 10).at(3);
  ASSERT_EQ(c.repeat_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(c.repeat_ms[0], 4000e-6);
  EXPECT_DOUBLE_EQ(c.repeat_span_ms[0], 34000e-6);
  EXPECT_DOUBLE_EQ(c.repeat_ms[1], 5000e-6);
  EXPECT_DOUBLE_EQ(c.repeat_span_ms[1], 6000e-6);
  EXPECT_EQ(c.main_kernel, "k2");  // the longest: 3 us, the first of two at 3 us to arrive
}

// The run's log line on the host's share of a call: each family's median (an even count takes
// the mean of the middle two), in the map's order, families without configs left out.
TEST(KernelRecords, HostTimeSummary) {
  EXPECT_EQ(host_time_summary({}), "");
  EXPECT_EQ(host_time_summary({{"bmm", {}}}), "");
  EXPECT_EQ(host_time_summary({{"bmm", {30.0, 10.0, 20.0}}, {"elementwise", {9.0, 11.0}}, {"gemm", {}}}),
            "host time per call (call_ms - busy_ms), median: bmm 20.0 us (3 configs), elementwise 10.0 us (2 configs)");
}

TEST(DatasetWriter, RowsReadBackThroughTheImporter) {
  std::string dir = ::testing::TempDir() + "dw1";
  fs::remove_all(dir);
  {
    DatasetWriter w(dir, {Family::kElementwise}, false);
    w.append(Family::kElementwise, row("add/fp32/4,8", 4, 8));
    CollectedRow bad = row("add/fp32/9,9", 9, 9);
    bad.status = "oom";
    bad.error_message = "CUDA out of memory, tried to allocate";
    w.append(Family::kElementwise, bad);
  }
  auto rows = read_kernel_csv(dir + "/elementwise.csv");  // failed rows are skipped on import
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].query.h, 8);
  EXPECT_DOUBLE_EQ(rows[0].latency_ms, 0.5);
  expect_error<ConfigError>([&] { DatasetWriter w(dir, {Family::kElementwise}, false); }, {"already exists", "--resume"});
}

// Both timings behind a GPU row's latency are written beside it: the GPU's busy time and one
// call timed alone; a failed row and a timing not taken (the CPU backend's busy time) are empty.
TEST(DatasetWriter, WritesBusyAndCallTimes) {
  const std::string dir = ::testing::TempDir() + "dw_timings";
  fs::remove_all(dir);
  {
    DatasetWriter w(dir, {Family::kElementwise, Family::kAttnDecode}, false);
    CollectedRow gpu = row("add/fp32/4,8", 4, 8);
    gpu.busy_ms = 0.0021;
    gpu.call_ms = 0.0125;
    gpu.latency_ms = gpu.call_ms;
    w.append(Family::kElementwise, gpu);
    CollectedRow cpu = row("add/fp32/5,8", 5, 8);
    cpu.call_ms = 0.5;
    w.append(Family::kElementwise, cpu);
    CollectedRow failed = gpu;
    failed.config_id = "add/fp32/6,8";
    failed.status = "oom";
    w.append(Family::kElementwise, failed);
    CollectedRow dec = row("generation_attention/bf16/3x300x32x8x128", 0, 0);
    dec.dims = {3, 300, 32, 8, 128};
    dec.dtype = "bf16";
    dec.busy_ms = 0.25;
    dec.call_ms = 0.3;
    w.append(Family::kAttnDecode, dec);
  }
  auto read = [](const std::string& path) {
    CsvReader csv(path);
    std::vector<std::pair<std::string, std::string>> out;  // (busy_ms, call_ms) per row
    std::vector<std::string> f;
    while (csv.next(f)) out.emplace_back(f.at(csv.column("busy_ms")), f.at(csv.column("call_ms")));
    return out;
  };
  const auto e = read(dir + "/elementwise.csv");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0], std::make_pair(std::string("0.0021"), std::string("0.0125")));
  EXPECT_EQ(e[1], std::make_pair(std::string(""), std::string("0.5")));
  EXPECT_EQ(e[2], std::make_pair(std::string(""), std::string("")));
  const auto d = read(dir + "/generation_attention.csv");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], std::make_pair(std::string("0.25"), std::string("0.3")));
  // The importer takes the columns (a file it rejected would fail here) and keeps Latency.
  const auto rows = read_kernel_csv(dir + "/elementwise.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_DOUBLE_EQ(rows[0].latency_ms, 0.0125);
}

TEST(DatasetWriter, ResumeCutsATornLineAndSkipsWrittenConfigs) {
  std::string dir = ::testing::TempDir() + "dw2";
  fs::remove_all(dir);
  {
    DatasetWriter w(dir, {Family::kElementwise}, false);
    w.append(Family::kElementwise, row("a", 1, 1));
    w.append(Family::kElementwise, row("b", 2, 2));
  }
  {
    std::ofstream torn(dir + "/elementwise.csv", std::ios::app);
    torn << "add,0.1,cpu,p1,,";  // killed mid-write
  }
  DatasetWriter w(dir, {Family::kElementwise}, true);
  EXPECT_TRUE(w.done("a"));
  EXPECT_TRUE(w.done("b"));
  EXPECT_EQ(w.done_count(), 2u);
  w.append(Family::kElementwise, row("c", 3, 3));
  auto rows = read_kernel_csv(dir + "/elementwise.csv");
  EXPECT_EQ(rows.size(), 3u);
  // A file of another layout is refused.
  std::string other = ::testing::TempDir() + "dw3";
  fs::remove_all(other);
  fs::create_directories(other);
  std::ofstream(other + "/elementwise.csv") << "a,b\n1,2\n";
  expect_error<DataError>([&] { DatasetWriter x(other, {Family::kElementwise}, true); },
                          {"elementwise.csv:1", "not a tilecast collect file of elementwise rows", "cannot resume"});
  // A file of an earlier version (before busy_ms and call_ms) is named so, with what it lacks.
  std::vector<std::string> old_header;
  for (const auto& c : collect_header(Family::kElementwise))
    if (c != "busy_ms" && c != "call_ms") old_header.push_back(c);
  std::ofstream(other + "/elementwise.csv") << csv_join(old_header) << "\n";
  expect_error<DataError>([&] { DatasetWriter x(other, {Family::kElementwise}, true); },
                          {"written by another tilecast version", "it lacks busy_ms, call_ms", "cannot resume"});
  const std::string fresh = ::testing::TempDir() + "dw3_fresh", merged = ::testing::TempDir() + "dw3_out";
  fs::remove_all(fresh);
  fs::remove_all(merged);
  { DatasetWriter(fresh, {Family::kElementwise}, false).append(Family::kElementwise, row("d", 4, 4)); }
  expect_error<DataError>([&] { merge_datasets({fresh, other}, merged); },
                          {"dw3/elementwise.csv:1", "written by another tilecast version", "it lacks busy_ms, call_ms"});
  EXPECT_FALSE(fs::exists(merged + "/elementwise.csv")) << "a refused merge writes no output file";
}

TEST(DatasetWriter, MergeDropsDuplicates) {
  std::string a = ::testing::TempDir() + "m_a", b = ::testing::TempDir() + "m_b", out = ::testing::TempDir() + "m_out";
  for (const auto& d : {a, b, out}) fs::remove_all(d);
  {
    DatasetWriter wa(a, {Family::kElementwise}, false);
    wa.append(Family::kElementwise, row("x", 1, 1));
    wa.append(Family::kElementwise, row("y", 2, 2));
    DatasetWriter wb(b, {Family::kElementwise}, false);
    wb.append(Family::kElementwise, row("y", 2, 2));
    wb.append(Family::kElementwise, row("z", 3, 3));
  }
  EXPECT_EQ(merge_datasets({a, b}, out), 3);
  EXPECT_EQ(read_kernel_csv(out + "/elementwise.csv").size(), 3u);
}

// Attention and MoE sweeps: heads = kv_heads x group, `values` cells, decode over ctx; rows in
// aiconfigurator's layout read back through the same importer as ../shared/llm-kernels.
TEST(Sweep, AttentionAndMoeConfigs) {
  const std::string p = write_tmp("attn_moe.yaml", R"(name: t
dtypes: [bf16]
families:
  attention_decode:
    samples_per_cell: 3
    b: [1, 4]
    ctx: {edges: [100, 200]}
    kv_heads: {values: [2, 8]}
    group: {values: [4]}
    head_dim: {values: [128]}
  moe:
    t: {values: [7]}
    h: {values: [256]}
    f: {values: [96]}
    topk: {values: [2]}
    experts: {values: [8, 16]}
)");
  Sweep s = load_sweep(p);
  // decode: b cells [1,1],[2,3],[4,4] x 1 ctx cell x 2 kv cells x 3 samples = 18; moe: 2.
  ASSERT_EQ(sweep_size(s), 20);
  std::set<int64_t> kv_seen;
  for (int64_t i = 0; i < 18; ++i) {
    const KernelQuery q = sweep_config(s, i).query;
    ASSERT_EQ(q.op, OpKind::kAttnDecode);
    EXPECT_EQ(q.k, q.h * 4) << "heads = kv_heads x group";
    EXPECT_EQ(q.n, 128);
    EXPECT_GE(q.ctx, 100);
    EXPECT_LE(q.ctx, 199);
    kv_seen.insert(q.h);
  }
  EXPECT_EQ(kv_seen, (std::set<int64_t>{2, 8}));
  const KernelQuery m = sweep_config(s, 18).query;
  EXPECT_EQ(m.op, OpKind::kMoe);
  EXPECT_EQ(m.b, 7);
  EXPECT_EQ(m.topk, 2);
  EXPECT_EQ(sweep_config(s, 19).query.experts, 16);
  expect_error<ConfigError>([] {
    load_sweep(write_tmp("moe_bad.yaml", "families:\n  moe:\n    t: [1, 2]\n    h: {values: [64]}\n    f: {values: [64]}\n"
                                          "    topk: {values: [2, 8]}\n    experts: {values: [4]}\n"));
  }, {"moe_bad.yaml", "families.moe", "topk reaches 8 but experts start at 4"});
  expect_error<ConfigError>([] {
    load_sweep(write_tmp("vals_bad.yaml", "families:\n  gemm:\n    m: {values: []}\n    n: [1, 2]\n    k: [1, 2]\n"));
  }, {"vals_bad.yaml", "families.gemm.m.values: empty"});
}

TEST(DatasetWriter, AttentionAndMoeRowsReadBackAsTheirQueries) {
  const std::string dir = ::testing::TempDir() + "dw_llm";
  fs::remove_all(dir);
  {
    DatasetWriter w(dir, {Family::kAttnDecode, Family::kAttnPrefill, Family::kMoe}, false);
    CollectedRow d;
    d.device = "cpu";
    d.torch_version = "p1.13.0";
    d.kernel_source = "torch_eager";
    d.latency_ms = 0.25;
    d.dtype = "bf16";
    d.dims = {3, 300, 32, 8, 128};  // B, CTX, H, KV, D
    d.config_id = "generation_attention/bf16/3x300x32x8x128";
    w.append(Family::kAttnDecode, d);
    CollectedRow p = d;
    p.dims = {2, 512, 16, 16, 64};  // B, S, H, KV, D
    p.config_id = "context_attention/bf16/2x512x16x16x64";
    w.append(Family::kAttnPrefill, p);
    CollectedRow failed = p;
    failed.status = "oom";
    failed.error_message = "CUDA out of memory";
    failed.config_id = "context_attention/bf16/9x512x16x16x64";
    w.append(Family::kAttnPrefill, failed);
    CollectedRow m = d;
    m.kernel_source = "torch_eager_loop";
    m.dims = {64, 1024, 512, 2, 8};  // T, H, F, K, E
    m.config_id = "moe/bf16/64x1024x512x2x8";
    w.append(Family::kMoe, m);
  }
  const auto dec = read_kernel_csv(dir + "/generation_attention.csv");
  ASSERT_EQ(dec.size(), 1u);
  const KernelQuery want = attention_decode_q(3, 300, 32, 8, 128, DType::kBf16, DType::kBf16);
  EXPECT_EQ(dec[0].query.ctx, want.ctx);
  EXPECT_EQ(dec[0].query.k, 32);
  EXPECT_EQ(dec[0].query.h, 8);
  EXPECT_EQ(dec[0].query.n, 128);
  EXPECT_EQ(dec[0].library, "torch_eager");
  EXPECT_DOUBLE_EQ(dec[0].latency_ms, 0.25);
  const auto pre = read_kernel_csv(dir + "/context_attention.csv");
  ASSERT_EQ(pre.size(), 1u) << "the oom row carries no latency and is skipped";
  EXPECT_EQ(pre[0].query.m, 512);
  const auto moe = read_kernel_csv(dir + "/moe.csv");
  ASSERT_EQ(moe.size(), 1u);
  EXPECT_EQ(moe[0].query.b, 64);
  EXPECT_EQ(moe[0].query.h, 1024);
  EXPECT_EQ(moe[0].query.n, 512);
  EXPECT_EQ(moe[0].query.topk, 2);
  EXPECT_EQ(moe[0].query.experts, 8);
  EXPECT_EQ(moe[0].library, "torch_eager_loop");
}
