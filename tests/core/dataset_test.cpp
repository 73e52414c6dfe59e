#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "core/error.h"
#include "core/kernel_dataset.h"
#include "core/tile_table.h"
#include "test_util.h"

using namespace tilecast;

namespace {
// Rows a cross-row rule flagged, per device; `each` states what every flagged row must be.
std::map<std::string, int> flagged_per_device(const std::vector<KernelSample>& rows, const std::vector<bool>& flag,
                                              const std::function<void(const KernelSample&)>& each) {
  EXPECT_EQ(flag.size(), rows.size());
  std::map<std::string, int> n;
  for (size_t i = 0; i < rows.size() && i < flag.size(); ++i) {
    if (flag[i]) {
      each(rows[i]);
      ++n[rows[i].device];
    }
  }
  return n;
}

// filter_spec_library over configs/gpus; `removed`: how many rows it took out.
LibraryFilterCounts filter_rows(std::vector<KernelSample>& rows, size_t* removed) {
  static GpuRegistry reg(gpu_dir());
  const size_t before = rows.size();
  const LibraryFilterCounts n = filter_spec_library(rows, reg);
  *removed = before - rows.size();
  return n;
}
}  // namespace

TEST(TileNames, ParsesNeuSightPatterns) {
  int a = 0, b = 0;
  EXPECT_TRUE(parse_tile_from_kernel_name("ampere_sgemm_128x64_tn", &a, &b));
  EXPECT_EQ(a, 128);
  EXPECT_EQ(b, 64);
  EXPECT_TRUE(parse_tile_from_kernel_name("cutlass_80_simt_sgemm_256x128_8x4_nn_align1", &a, &b));
  EXPECT_EQ(a, 256);
  EXPECT_TRUE(parse_tile_from_kernel_name("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x32x8_stage3", &a, &b));
  EXPECT_EQ(b, 32);
  EXPECT_TRUE(parse_tile_from_kernel_name("Cijk_Ailk_Bljk_SB_MT64x32x16_MI32x32x2x1", &a, &b));
  EXPECT_EQ(a, 64);
  EXPECT_FALSE(parse_tile_from_kernel_name("void at::native::vectorized_elementwise_kernel<4>", &a, &b));
}

TEST(Dataset, ReadsNeuSightLayoutAndDerivesTiles) {
  auto rows = read_kernel_csv(data_path("bmm_small.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].device, "NVIDIA A100-PCIE-40GB");
  EXPECT_EQ(rows[0].query.k, 390);
  EXPECT_TRUE(rows[0].has_tile);
  EXPECT_EQ(rows[0].measured_tile, (GemmTile{128, 128, 1}));
  EXPECT_EQ(rows[2].measured_tile, (GemmTile{64, 64, 1}));
  EXPECT_EQ(rows[2].line, 4);
  auto lin = read_kernel_csv(data_path("linear_small.csv"));
  // grid 20x16x3 for M=1024, K=2560 with 128x64 tiles: split-K of 3.
  EXPECT_EQ(lin[0].measured_tile, (GemmTile{64, 128, 3}));
  auto v = read_kernel_csv(data_path("vec_small.csv"));
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[3].query.op, OpKind::kLayerNorm);
  EXPECT_EQ(v[3].query.h, 556);
}

TEST(Dataset, BadRowsNameFileLineAndColumn) {
  expect_error<DataError>([] { read_kernel_csv(data_path("bad/nan_latency.csv")); },
                          {"nan_latency.csv:2", "Latency"});
  expect_error<DataError>([] { read_kernel_csv(data_path("bad/truncated.csv")); },
                          {"truncated.csv:3", "fields"});
  expect_error<DataError>([] { read_kernel_csv(data_path("bad/negative_dim.csv")); },
                          {"negative_dim.csv:2", "'M'"});
  expect_error<DataError>([] { read_kernel_csv(data_path("bad/unknown_op.csv")); },
                          {"unknown_op.csv:2", "unknown op 'conv9'"});
  expect_error<DataError>([] { read_kernel_csv(data_path("bad/unknown_column.csv")); },
                          {"unknown_column.csv:1", "unknown column 'Extra'"});
  expect_error<DataError>([] { read_kernel_csv(data_path("bad/empty.csv")); }, {"empty.csv"});
  // A dtype its family does not model (kFamilyTable's dtype sets) is one line naming the
  // column, never rows silently mixed into the family.
  auto write = [](const std::string& name, const std::string& row) {
    const std::string p = ::testing::TempDir() + name;
    std::ofstream(p) << "OPName,Latency,Device,B,H,dtype\n" << row << "\n";
    return p;
  };
  const std::string fp8_norm = write("fp8_rmsnorm.csv", "rmsnorm,0.01,NVIDIA L4,16,4096,fp8");
  expect_error<DataError>([&] { read_kernel_csv(fp8_norm); },
                          {"fp8_rmsnorm.csv:2", "column 'dtype'", "'fp8' rows are not modelled",
                           "memory_op) is modelled in fp32, fp16, bf16"});
  const std::string bf16_softmax = write("bf16_softmax.csv", "softmax,0.01,NVIDIA L4,16,4096,bf16");
  expect_error<DataError>([&] { read_kernel_csv(bf16_softmax); },
                          {"bf16_softmax.csv:2", "column 'dtype'", "(family softmax) is modelled in fp32"});
  const std::string no_dtype = write("norm_no_dtype.csv", "rmsnorm,0.01,NVIDIA L4,16,4096,");
  expect_error<DataError>([&] { read_kernel_csv(no_dtype); }, {"norm_no_dtype.csv:2", "column 'dtype': required"});
  // A CUDA row of a NeuSight family from a collect file without call_ms: its Latency is the
  // GPU's busy time, not NeuSight's quantity (one line). The same file from the CPU backend (no
  // kernel name) and a dtyped family's row (busy time is its quantity) read as before.
  auto write_collected = [](const std::string& name, const std::string& row) {
    const std::string p = ::testing::TempDir() + name;
    std::ofstream(p) << "OPName,Latency,Device,Kernel Name,B,H,dtype,status,tilecast_version,config_id\n"
                     << row << "\n";
    return p;
  };
  const std::string busy = write_collected("busy_softmax.csv", "softmax,0.002,NVIDIA L4,softmax_warp_forward,16,4096,fp32,ok,0.1.0,s1");
  expect_error<DataError>([&] { read_kernel_csv(busy); },
                          {"busy_softmax.csv:2", "column 'Latency'", "busy time", "softmax", "collect it again"});
  EXPECT_EQ(read_kernel_csv(write_collected("cpu_softmax.csv", "softmax,0.002,cpu,,16,4096,fp32,ok,0.1.0,s1")).size(), 1u);
  EXPECT_EQ(read_kernel_csv(write_collected("busy_rmsnorm.csv", "rmsnorm,0.002,NVIDIA L4,k,16,4096,bf16,ok,0.1.0,r1")).size(), 1u);
  const std::string ok = write("bf16_rmsnorm.csv", "rmsnorm,0.01,NVIDIA L4,16,4096,bf16");
  const auto rows = read_kernel_csv(ok);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].query.dtype, DType::kBf16);
}

// Each aiconfigurator layout row writes a query as values its own parser reads back as that
// query (what the collector writes, train reads), and names every column it writes.
TEST(Dataset, AiconfiguratorLayoutsRoundTrip) {
  struct MapRow : AicRow {
    std::map<std::string, std::string> v;
    bool has(const char* c) const override { return v.count(c) && !v.at(c).empty(); }
    const std::string& str(const char* c) const override { return v.at(c); }
    int64_t dim(const char* c, int64_t) const override { return std::stoll(v.at(c)); }
    [[noreturn]] void fail(const char* c, const std::string& why) const override {
      throw DataError(std::string(c) + ": " + why);
    }
  };
  const std::vector<KernelQuery> queries = {
      gemm_q(96, 4096, 1024, DType::kFp8Block),
      attention_prefill_q(2, 512, 32, 8, 128, DType::kBf16, DType::kBf16),
      attention_decode_q(3, 300, 16, 16, 64, DType::kFp16, DType::kFp8),
      moe_q(64, 1024, 512, 2, 8, 2, 4, DType::kFp8, 1.2)};
  ASSERT_EQ(aic_layouts().size(), queries.size());
  for (const KernelQuery& q : queries) {
    const AicLayout* l = aic_layout(op_family(q.op));
    ASSERT_NE(l, nullptr) << op_name(q.op);
    MapRow row;
    row.v["op_name"] = l->op_name;
    const auto vals = l->values(q);
    ASSERT_EQ(vals.size(), l->columns.size()) << l->op_name;
    for (size_t i = 0; i < vals.size(); ++i) row.v[l->columns[i]] = vals[i];
    KernelQuery back;
    std::string skip;
    ASSERT_TRUE(l->parse(row, &back, &skip)) << l->op_name << ": " << skip;
    EXPECT_EQ(query_shape_string(back), query_shape_string(q)) << l->op_name;
    EXPECT_EQ(back.op, q.op);
    EXPECT_EQ(back.dtype, q.dtype) << l->op_name;
    EXPECT_EQ(back.kv_dtype, q.kv_dtype) << l->op_name;
    EXPECT_DOUBLE_EQ(back.routing_alpha, q.routing_alpha) << l->op_name;
  }
  EXPECT_EQ(aic_layout(Family::kSoftmax), nullptr);
}

// Every family's default dtype is one it models; the sets read as the help and errors print them.
TEST(Kernel, FamilyDtypeSets) {
  for (Family f : kAllFamilies) EXPECT_TRUE(family_models_dtype(f, family_traits(f).default_dtype)) << family_name(f);
  EXPECT_EQ(dtype_set_names(family_traits(Family::kGemm).dtypes),
            "fp32, tf32, fp16, bf16, fp8, fp8_block, fp8_static, nvfp4");
  EXPECT_EQ(dtype_set_names(family_traits(Family::kMoe).dtypes), "fp32, fp16, bf16, fp8, fp8_block, int4, mxfp4, nvfp4, mxfp4_mxfp8");
  EXPECT_EQ(dtype_refusal(OpKind::kGemm, DType::kFp8Static), "");
  EXPECT_EQ(dtype_refusal(OpKind::kAttnPrefill, DType::kFp8Static),
            "op 'context_attention' (family context_attention) is modelled in fp32, tf32, fp16, bf16, fp8");
  // The weight-only formats are the experts' alone: a GEMM in int4 is refused.
  EXPECT_EQ(dtype_refusal(OpKind::kGemm, DType::kInt4),
            "op 'gemm' (family gemm) is modelled in fp32, tf32, fp16, bf16, fp8, fp8_block, fp8_static, nvfp4");
  EXPECT_NE(dtype_refusal(OpKind::kAttnDecode, DType::kNvfp4), "");
  EXPECT_EQ(dtype_refusal(OpKind::kMoe, DType::kMxfp4), "");
  // W4A8 (MXFP4 x MXFP8) is the experts' alone too.
  EXPECT_EQ(dtype_refusal(OpKind::kMoe, DType::kMxfp4Mxfp8), "");
  EXPECT_NE(dtype_refusal(OpKind::kGemm, DType::kMxfp4Mxfp8), "");
}

// The weight-only formats: 4 bits a weight plus the scales (a 16-bit one per 128 INT4 weights,
// an 8-bit one per 32 MXFP4 weights), BF16 activations, the BF16 tensor peak; the data's
// spellings read back; Marlin's kernel for int4 off datacenter Blackwell, Triton for mxfp4.
TEST(Kernel, WeightOnlyDtypes) {
  EXPECT_DOUBLE_EQ(weight_bytes_per_elem(DType::kInt4), 66.0 / 128);
  EXPECT_DOUBLE_EQ(weight_bytes_per_elem(DType::kMxfp4), 17.0 / 32);
  EXPECT_DOUBLE_EQ(weight_bytes_per_elem(DType::kFp8Block), 1);
  EXPECT_EQ(dtype_size(DType::kInt4), 2);
  EXPECT_EQ(activation_dtype(DType::kMxfp4), DType::kBf16);
  EXPECT_EQ(dtype_from_string("int4_wo"), DType::kInt4);
  EXPECT_EQ(dtype_from_string("w4a16_mxfp4"), DType::kMxfp4);
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& l40s = reg.resolve("L40S");
  const GpuSpec& b200 = reg.resolve("B200");
  EXPECT_DOUBLE_EQ(gemm_peak_gflops(l40s, DType::kInt4), gemm_peak_gflops(l40s, DType::kBf16));
  EXPECT_STREQ(moe_library(l40s, DType::kInt4), "sglang_marlin_moe");
  EXPECT_STREQ(moe_library(l40s, DType::kMxfp4), "sglang_fused_moe_triton");
  EXPECT_STREQ(moe_library(b200, DType::kInt4), "sglang_flashinfer_trtllm_moe");
  // A layer's bytes by hand: 48 tokens x top-8 of 128 experts, 2,816 x 704 each, balanced (the
  // 384 picks on distinct experts until all 128 are hit, as the collector routes them). The
  // experts hit hold 3 x 2,816 x 704 weights each; per routed token (384) its BF16 input
  // (2 x 2,816), 10 B per FFN column of intermediates and the 2 x 2,816 output; the combined
  // output 48 x 2 x 2,816.
  const KernelQuery q = moe_q(48, 2816, 704, 8, 128, 1, 1, DType::kInt4);
  const double hit = 128;
  const double acts = 384.0 * (2 * 2816 + 10 * 704 + 2 * 2816) + 48.0 * 2 * 2816;
  EXPECT_NEAR(query_bytes(q), hit * 3 * 2816 * 704 * 66.0 / 128 + acts, 1e-3);
  EXPECT_NEAR(query_bytes(moe_q(48, 2816, 704, 8, 128, 1, 1, DType::kBf16)), hit * 3 * 2816 * 704 * 2 + acts, 1e-3);
  // int4 at scale groups of 32 (Kimi-K2-Thinking's): 4 bits and 16 bits a 32 = 18 / 32 B a weight.
  KernelQuery g32 = q;
  g32.weight_group = 32;
  EXPECT_NEAR(query_bytes(g32), hit * 3 * 2816 * 704 * 18.0 / 32 + acts, 1e-3);
  EXPECT_EQ(query_shape_string(g32), "48,2816,704,8,128,g32");
  EXPECT_NE(query_key(g32), query_key(q));
  validate_query(g32, "ctx");
  // Only int4 has the groups, and a group divides both widths (704 = 22 x 32, not a multiple of 128).
  KernelQuery bad = g32;
  bad.dtype = DType::kBf16;
  expect_error<DataError>([&] { validate_query(bad, "ctx"); }, {"ctx", "weight scale group (32)", "int4"});
  bad = g32;
  bad.weight_group = 128;
  expect_error<DataError>([&] { validate_query(bad, "ctx"); }, {"ctx", "weight scale group (128)", "dividing"});
}

// W4A8 (the B200's w4a8_mxfp4_mxfp8 MoE rows, gpt-oss's experts on Blackwell): MXFP4 weights
// (17 / 32 B a weight, as mxfp4), the BF16 activation quantised to MXFP8 inside the layer, the
// FP8 tensor peak; refused with one line on a sheet without an FP4 peak (no block-scaled MXFP4
// x MXFP8 MMA before Blackwell), on the H100 and A100 alike.
TEST(Kernel, Mxfp4Mxfp8Dtype) {
  EXPECT_EQ(dtype_from_string("w4a8_mxfp4_mxfp8"), DType::kMxfp4Mxfp8);
  EXPECT_EQ(dtype_from_string("mxfp4_mxfp8"), DType::kMxfp4Mxfp8);
  EXPECT_STREQ(dtype_name(DType::kMxfp4Mxfp8), "mxfp4_mxfp8");
  EXPECT_DOUBLE_EQ(weight_bytes_per_elem(DType::kMxfp4Mxfp8), 17.0 / 32);
  EXPECT_EQ(dtype_size(DType::kMxfp4Mxfp8), 2);
  EXPECT_EQ(activation_dtype(DType::kMxfp4Mxfp8), DType::kBf16);
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& b200 = reg.resolve("B200");
  EXPECT_DOUBLE_EQ(gemm_peak_gflops(b200, DType::kMxfp4Mxfp8), b200.tensor_peak_gflops.at("fp8"));
  EXPECT_LT(gemm_peak_gflops(b200, DType::kMxfp4Mxfp8), gemm_peak_gflops(b200, DType::kNvfp4));
  EXPECT_STREQ(moe_library(b200, DType::kMxfp4Mxfp8), "sglang_flashinfer_trtllm_moe");
  for (const char* g : {"H100-SXM", "A100-80GB-SXM"})
    expect_error<ConfigError>([&] { gemm_peak_gflops(reg.resolve(g), DType::kMxfp4Mxfp8); },
                              {g, "no fp4 tensor-core peak", "mxfp4_mxfp8", "Blackwell"});
  // The layer's bytes: its weights at MXFP4's, the activations in BF16 as every 4-bit format's.
  const KernelQuery w4a8 = moe_q(8, 2880, 2880, 4, 128, 1, 1, DType::kMxfp4Mxfp8);
  EXPECT_DOUBLE_EQ(query_bytes(w4a8), query_bytes(moe_q(8, 2880, 2880, 4, 128, 1, 1, DType::kMxfp4)));
}

TEST(TileTable, LookupUsesOwnOrReferenceGpuAndRoundTrips) {
  GpuRegistry reg(gpu_dir());
  TileTable t;
  t.add_samples(read_kernel_csv(data_path("bmm_small.csv")));
  EXPECT_FALSE(t.empty());
  KernelQuery q;
  q.op = OpKind::kBmm;
  q.b = 5, q.m = 100, q.n = 300, q.k = 120;
  EXPECT_EQ(t.lookup(reg.resolve("T4"), q), (GemmTile{64, 64, 1}));
  // H100 has no measurements: its tile_reference (the A100) stands in.
  EXPECT_EQ(t.reference_device(reg.resolve("H100-SXM")), "NVIDIA A100-PCIE-40GB");
  EXPECT_EQ(t.lookup(reg.resolve("H100-SXM"), q), (GemmTile{128, 128, 1}));
  std::string path = ::testing::TempDir() + "tiles.csv";
  t.save(path);
  TileTable back = TileTable::load(path);
  EXPECT_EQ(back.size(), t.size());
  EXPECT_EQ(back.lookup(reg.resolve("T4"), q), (GemmTile{64, 64, 1}));
  KernelQuery lin;
  lin.op = OpKind::kLinear;
  lin.m = lin.n = lin.k = 64;
  // No linear kernel names at all (e.g. CPU-backend data): the default tile.
  EXPECT_EQ(t.lookup(reg.resolve("T4"), lin), (GemmTile{128, 128, 1}));
  // A reference this table does not hold (the AMD set's MI210 seen from the NVIDIA set's
  // table) falls back to the A100; a reference naming no GPU at all is refused when the spec
  // folder is read.
  GpuSpec orphan = reg.resolve("T4");
  orphan.cuda_name = "Orphan GPU";
  orphan.tile_reference = "AMD Instinct MI210";
  EXPECT_EQ(t.reference_device(orphan), "NVIDIA A100-PCIE-40GB");
  const std::string dir = ::testing::TempDir() + "gpus_bad_ref";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(gpu_dir() + "/T4.yaml", dir + "/T4.yaml");
  {
    std::ofstream f(dir + "/T4.yaml", std::ios::app);
    f << "tile_reference: \"Nowhere GPU\"\n";
  }
  expect_error<ConfigError>([&] { GpuRegistry bad(dir); }, {"T4.yaml", "field 'tile_reference'", "Nowhere GPU"});
}

// The AMD predictor set's data: MI100 and MI210 only, every GEMM row with its Tensile macro
// tile parsed from the kernel name (MT64x32x32 -> 64 x 32).
TEST(NeuSightData, AmdTrainingFilesAreMi100AndMi210Only) {
  std::string root = neusight_dir();
  TC_REQUIRE_NEUSIGHT(root);
  for (Family f : kNeuSightFamilies) {
    const auto files = training_files(root, f, "amd");
    ASSERT_FALSE(files.empty()) << family_name(f);
    size_t rows = 0, tiles = 0;
    for (const auto& file : files)
      for (const auto& r : read_kernel_csv(file)) {
        ++rows;
        tiles += r.has_tile;
        EXPECT_TRUE(r.device == "AMD Instinct MI100" || r.device == "AMD Instinct MI210") << file << ": " << r.device;
      }
    EXPECT_GT(rows, 1000u) << family_name(f);
    if (is_gemm(f)) EXPECT_EQ(tiles, rows) << family_name(f);
  }
  EXPECT_EQ(training_files(root, Family::kElementwise, "amd").size(), 22u);  // 11 ops x 2 GPUs
  expect_error<ConfigError>([&] { training_gpus("intel"); }, {"--vendor", "intel"});
}

TEST(NeuSightData, TrainingFilesReadCompletely) {
  std::string root = neusight_dir();
  TC_REQUIRE_NEUSIGHT(root);
  auto files = training_files(root, Family::kBmm);
  ASSERT_EQ(files.size(), 5u);
  size_t a100_rows = 0, with_tile = 0;
  for (const auto& f : files) {
    auto rows = read_kernel_csv(f);
    for (const auto& r : rows) with_tile += r.has_tile;
    if (f.find("A100") != std::string::npos) a100_rows = rows.size();
  }
  EXPECT_EQ(a100_rows, 16661u);  // row count documented for NeuSight's A100 bmm file
  EXPECT_GT(with_tile, 87000u);
  EXPECT_EQ(training_files(root, Family::kElementwise).size(), 55u);
  // The data hash follows the bytes, not the path: a copy hashes alike, one changed byte not.
  const std::string copy = ::testing::TempDir() + "hash_copy.csv";
  std::filesystem::copy_file(files[0], copy, std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(files_hash({copy}), files_hash({files[0]}));
  {
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('#');
  }
  EXPECT_NE(files_hash({copy}), files_hash({files[0]}));
}

// NVFP4 (W4A4): 4 bits and an FP8 scale per 16 elements for both operands, on the FP4 tensor
// peak, which only Blackwell specs state (B200: 144 PFLOPS sparse per 8 GPUs, 9 dense each);
// the activation quantised in one pass (BF16 read, NVFP4 written); no split-K, as FP8.
TEST(Kernel, Nvfp4Gemm) {
  EXPECT_DOUBLE_EQ(weight_bytes_per_elem(DType::kNvfp4), 9.0 / 16);
  EXPECT_EQ(dtype_from_string("nvfp4"), DType::kNvfp4);
  static GpuRegistry reg(gpu_dir());
  EXPECT_DOUBLE_EQ(gemm_peak_gflops(reg.resolve("B200"), DType::kNvfp4), 9e6);
  EXPECT_DOUBLE_EQ(gemm_peak_gflops(reg.resolve("B300"), DType::kNvfp4), 13.5e6);
  expect_error<ConfigError>([&] { gemm_peak_gflops(reg.resolve("H100-SXM"), DType::kNvfp4); },
                            {"GPU 'H100-SXM' has no fp4 tensor-core peak", "start with Blackwell"});
  // 256 tokens x 4,096 in x 4,096 out: A and B at 9/16 B an element, C in BF16; the
  // quantising pass reads A in BF16 and writes it at 9/16 B.
  const KernelQuery q = gemm_q(256, 4096, 4096, DType::kNvfp4);
  EXPECT_NEAR(query_bytes(q), (256.0 * 4096 + 4096.0 * 4096) * 9 / 16 + 2.0 * 256 * 4096, 1e-6);
  EXPECT_EQ(launch_info(q, reg.resolve("B200")).tile.split_k, 1);
  EXPECT_GT(launch_info(gemm_q(256, 4096, 4096, DType::kBf16), reg.resolve("B200")).tile.split_k, 1);
}

// The aiconfigurator layout of ../shared/llm-kernels: F.linear(a[m,k], b[n,k]) rows become
// gemm queries with M = m tokens, N = k (reduction), K = n (out), nvfp4 among the dtypes.
TEST(Dataset, ReadsAiconfiguratorGemmRows) {
  auto rows = read_kernel_csv(data_path("aiconfigurator_gemm_small.csv"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3].query.dtype, DType::kNvfp4);
  EXPECT_EQ(rows[3].device, "NVIDIA B200");
  rows.erase(rows.begin() + 3);
  EXPECT_EQ(rows[0].device, "NVIDIA L40S");
  EXPECT_EQ(rows[0].query.op, OpKind::kGemm);
  EXPECT_EQ(rows[0].query.dtype, DType::kBf16);
  EXPECT_EQ(rows[2].query.dtype, DType::kFp8Static);  // per-tensor scaled, calibrated activation scale
  EXPECT_EQ(rows[2].query.m, 16);
  EXPECT_EQ(rows[2].query.n, 4096);   // k column: in-features
  EXPECT_EQ(rows[2].query.k, 14336);  // n column: out-features
  EXPECT_EQ(rows[3].query.dtype, DType::kFp8Block);
  EXPECT_EQ(rows[3].query.n, 7168);
  EXPECT_DOUBLE_EQ(rows[3].latency_ms, 0.02);
  expect_error<DataError>([] { read_kernel_csv(data_path("bad/aic_unknown_op.csv")); },
                          {"aic_unknown_op.csv:2", "op_name", "'allreduce' is not modelled"});
  expect_error<DataError>([] { read_kernel_csv(data_path("bad/aic_zero_dim.csv")); },
                          {"aic_zero_dim.csv:2", "column 'k'"});
}

// Attention rows of the aiconfigurator layout: prefill from isl, decode from step (+ the new
// token), KV cache dtype, window and kernel library; beam search rows are skipped.
TEST(Dataset, ReadsAiconfiguratorAttentionRows) {
  auto rows = read_kernel_csv(data_path("aiconfigurator_attn_small.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].query.op, OpKind::kAttnPrefill);
  EXPECT_EQ(rows[0].query.m, 1024);
  EXPECT_EQ(rows[0].query.k, 32);
  EXPECT_EQ(rows[0].query.h, 8);
  EXPECT_EQ(rows[0].query.n, 128);
  EXPECT_EQ(rows[0].query.kv_dtype, DType::kFp8);
  EXPECT_EQ(rows[0].library, "trtllm_mha");
  EXPECT_EQ(rows[1].query.window, 128);
  EXPECT_EQ(rows[1].library, "triton");
  EXPECT_EQ(rows[2].query.op, OpKind::kAttnDecode);
  EXPECT_EQ(rows[2].query.ctx, 512);
  EXPECT_EQ(rows[2].query.m, 1);
}

// Full-attention (window 0) rows judged by their own file: on "A" they run at 0.9x the same
// shapes with a 128-key window over 4,096+ cached keys (the L40S's artefact), so every window-0
// row of A goes, even one without a windowed twin; on "B" they take 3x (real attention, kept;
// its 0.5x pair at 1,024 keys is under 16 windows and does not count); on "C" the pairs repeat
// one measurement (equal latencies: no evidence); on "D" nine pairs are too few to judge.
TEST(Dataset, FullAttentionNoSlowerThanItsWindowIsFlagged) {
  std::vector<KernelSample> rows;
  auto add = [&](const char* dev, int64_t batch, int64_t ctx, int64_t window, double ms) {
    KernelSample s;
    s.query = attention_decode_q(batch, ctx, 32, 8, 128, DType::kBf16, DType::kBf16, window);
    s.device = dev;
    s.library = "flash_attention";
    s.latency_ms = ms;
    rows.push_back(s);
  };
  for (int64_t b = 1; b <= 12; ++b) {
    add("A", b, 4096, 0, 0.09 * b);
    add("A", b, 4096, 128, 0.1 * b);
    add("B", b, 4096, 0, 0.3 * b);
    add("B", b, 4096, 128, 0.1 * b);
    add("C", b, 8192, 0, 0.2 * b);
    add("C", b, 8192, 128, 0.2 * b);
    if (b <= 9) {
      add("D", b, 4096, 0, 0.09 * b);
      add("D", b, 4096, 128, 0.1 * b);
    }
  }
  add("A", 64, 16, 0, 0.01);  // no twin: flagged with its group
  for (int64_t b = 1; b <= 30; ++b) {
    add("B", b, 1024, 0, 0.05);
    add("B", b, 1024, 128, 0.1);
  }
  const auto flagged = flagged_per_device(rows, not_full_attention(rows), [](const KernelSample& s) {
    EXPECT_EQ(s.query.window, 0) << s.device;
  });
  EXPECT_EQ(flagged, (std::map<std::string, int>{{"A", 13}}));
  // Training leaves them out and says how many.
  size_t removed = 0;
  EXPECT_EQ(filter_rows(rows, &removed).not_full_attention, 13);
  EXPECT_EQ(removed, 13u);
  for (const auto& s : rows) EXPECT_FALSE(s.device == "A" && s.query.window == 0);
}

// A file whose expert-parallel ranks ran about the whole layer (t(ep 8) / t(ep 1) of its
// balanced layers of >= 4,096 tokens above 0.5 at the median): every row of that device,
// library and dtype above ep 1 is flagged, at any degree and routing; a group at 1 / ep, one
// with too few pairs, and ep-1 rows are not.
TEST(Dataset, MoeRanksThatRanTheWholeLayerAreFlagged) {
  std::vector<KernelSample> rows;
  auto add = [&](const char* dev, DType d, int64_t tokens, int64_t ep, double ms, double alpha = 0) {
    KernelSample s;
    s.query = moe_q(tokens, 2048, 768, 8, 128, 1, ep, d, alpha);
    s.device = dev;
    s.library = "sglang_fused_moe_triton";
    s.latency_ms = ms;
    rows.push_back(s);
  };
  for (int64_t t = 4096; t < 4096 + 12 * 64; t += 64) {
    add("A", DType::kBf16, t, 1, 1.0);   // whole layer at ep 8: 0.9
    add("A", DType::kBf16, t, 8, 0.9);
    add("A", DType::kFp8, t, 1, 1.0);    // 1 / ep: 0.2, not flagged
    add("A", DType::kFp8, t, 8, 0.2);
    if (t < 4096 + 9 * 64) {             // nine pairs: too few
      add("B", DType::kBf16, t, 1, 1.0);
      add("B", DType::kBf16, t, 8, 0.9);
    }
  }
  add("A", DType::kBf16, 64, 2, 0.5);         // below 4,096 tokens, ep 2: flagged with its group
  add("A", DType::kBf16, 4096, 128, 0.1, 1.2);  // power law, ep 128: flagged
  add("A", DType::kBf16, 64, 1, 0.5);         // ep 1: kept
  for (int64_t t = 2048; t < 2048 + 12 * 64; t += 64) {  // layers below 4,096 tokens: no pairs
    add("C", DType::kBf16, t, 1, 1.0);
    add("C", DType::kBf16, t, 8, 0.9);
  }
  const auto flagged = flagged_per_device(rows, moe_ep_not_rank_local(rows), [](const KernelSample& s) {
    EXPECT_GT(s.query.moe_ep, 1) << s.device;
    EXPECT_EQ(s.query.dtype, DType::kBf16) << s.device;
  });
  EXPECT_EQ(flagged, (std::map<std::string, int>{{"A", 14}}));
  // Training leaves them out and says how many.
  size_t removed = 0;
  EXPECT_EQ(filter_rows(rows, &removed).moe_ep_not_rank_local, 14);
  EXPECT_EQ(removed, 14u);
}

// SGLang's window 0 is a window of no keys to the left, each query's own key alone, on its
// FlashAttention backend (prefill and decode) and TRT-LLM's prefill; TRT-LLM's decode takes it as
// no window. The reader marks an SGLang attention row of window 0 only where its file has a
// window_size column (the A100's files have none and ran full attention; a collect file is not
// SGLang's); resolve_sglang_window_zero gives the marked rows the window their GPU's library
// ran (1 key) and leaves every other row as read.
TEST(Dataset, SglangWindowZeroIsEachQuerysOwnKey) {
  static GpuRegistry reg(gpu_dir());
  const std::string head = "framework,version,device,op_name,kernel_source,batch_size,isl,num_heads,"
                           "num_key_value_heads,head_dim,beam_width,attn_dtype,kv_cache_dtype,step";
  auto write = [](const std::string& name, const std::string& text) {
    const std::string p = ::testing::TempDir() + name;
    std::ofstream(p) << text;
    return p;
  };
  const std::string windowed = write(
      "sglang_windows.csv",
      head + ",window_size,latency\n"
             "SGLang,0.5.12,NVIDIA L40S,context_attention,flash_attention,1,4096,32,8,128,1,bfloat16,bfloat16,0,0,0.05\n"
             "SGLang,0.5.12,NVIDIA L40S,context_attention,flash_attention,1,4096,32,8,128,1,bfloat16,bfloat16,0,128,0.05\n"
             "SGLang,0.5.12,NVIDIA L40S,generation_attention,flash_attention,8,1,32,8,128,1,bfloat16,bfloat16,4095,0,0.03\n"
             "SGLang,0.5.10,NVIDIA B200,context_attention,trtllm_mha,1,4096,32,8,128,1,bfloat16,bfloat16,0,0,0.02\n"
             "SGLang,0.5.10,NVIDIA B200,generation_attention,trtllm_mha,8,1,32,8,128,1,bfloat16,bfloat16,4095,0,0.02\n"
             "SGLang,0.5.14,NVIDIA H100 80GB HBM3,context_attention,flash_attention,2,2048,32,8,128,1,bfloat16,bfloat16,0,0,0.03\n"
             "SGLang,0.5.14,NVIDIA H100 80GB HBM3,generation_attention,flash_attention,8,1,32,8,128,1,bfloat16,bfloat16,1023,0,0.01\n");
  std::vector<KernelSample> rows = read_kernel_csv(windowed);
  ASSERT_EQ(rows.size(), 7u);
  const std::vector<bool> marked = {true, false, true, true, true, true, true};
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].sglang_window_zero, marked[i]) << "row " << i;
  EXPECT_EQ(resolve_sglang_window_zero(rows, reg), 5);
  // L40S prefill and decode, B200 prefill, H100 (FlashAttention by its spec) prefill and decode:
  // one key each; the windowed row keeps its 128 and the B200's decode stays full attention.
  const std::vector<int64_t> window = {1, 128, 1, 1, 0, 1, 1};
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].query.window, window[i]) << "row " << i;
  // A 4,096-token prompt whose queries attend to themselves alone does 4,096 query-key products
  // per head, where full causal attention does 4096 x 4097 / 2.
  const KernelQuery full = attention_prefill_q(1, 4096, 32, 8, 128, DType::kBf16, DType::kBf16);
  EXPECT_NEAR(query_flops(full) / query_flops(rows[0].query), 4097.0 / 2, 1e-6 * 4097.0 / 2);
  // Training leaves those five out, twins or not (not_full_attention needs ten windowed pairs to
  // judge a file): the windowed row and the B200's full-attention decode stay.
  std::vector<KernelSample> train = read_kernel_csv(windowed);
  const LibraryFilterCounts n = filter_spec_library(train, reg);
  EXPECT_EQ(n.sglang_own_key, 5);
  EXPECT_EQ(n.not_full_attention, 0);
  ASSERT_EQ(train.size(), 2u);
  EXPECT_EQ(train[0].query.window, 128);
  EXPECT_EQ(train[1].device, "NVIDIA B200");
  EXPECT_EQ(train[1].query.op, OpKind::kAttnDecode);
  // Nothing to resolve: a file without the column (the A100's) and a collect file of window 0.
  const std::string no_column = write(
      "sglang_no_window.csv",
      head + ",latency\nSGLang,0.5.10,NVIDIA A100-SXM4-80GB,context_attention,flash_attention,1,4096,32,8,128,1,"
             "bfloat16,bfloat16,0,2.9\n");
  const std::string collected = write(
      "collect_window.csv",
      head + ",window_size,latency\ntilecast-collect,p2.11.0,NVIDIA L40S,context_attention,flash_attention,1,4096,32,"
             "8,128,1,bf16,bf16,0,0,1.2\n");
  for (const std::string& path : {no_column, collected}) {
    std::vector<KernelSample> r = read_kernel_csv(path);
    ASSERT_EQ(r.size(), 1u) << path;
    EXPECT_FALSE(r[0].sglang_window_zero) << path;
    EXPECT_EQ(resolve_sglang_window_zero(r, reg), 0) << path;
    EXPECT_EQ(r[0].query.window, 0) << path;
  }
}

// Training keeps, per GPU, the MoE rows of the library its spec implies for each row's dtype:
// on the L40S Triton for BF16 and MXFP4, Marlin for INT4 (its BF16 Marlin rows, and MXFP4 rows
// of a Triton variant, go); a GPU without rows of that library keeps its own (a lab's collect).
TEST(Dataset, MoeLibraryPerDtype) {
  static GpuRegistry reg(gpu_dir());
  std::vector<KernelSample> rows;
  auto add = [&](const char* device, const char* lib, DType d) {
    KernelSample s;
    s.query = moe_q(64, 2048, 768, 8, 128, 1, 1, d);
    s.device = device, s.library = lib, s.latency_ms = 1;
    rows.push_back(s);
  };
  add("NVIDIA L40S", "sglang_fused_moe_triton", DType::kBf16);
  add("NVIDIA L40S", "sglang_marlin_moe", DType::kBf16);
  add("NVIDIA L40S", "sglang_marlin_moe", DType::kInt4);
  add("NVIDIA L40S", "sglang_fused_moe_triton", DType::kMxfp4);
  add("NVIDIA L40S", "sglang_fused_moe_triton_situ_as_silu", DType::kMxfp4);
  add("NVIDIA A100-SXM4-80GB", "torch_eager_loop", DType::kInt4);
  const LibraryFilterCounts n = filter_spec_library(rows, reg);
  EXPECT_EQ(n.other_library, 2);
  std::vector<std::string> kept;
  for (const auto& s : rows) kept.push_back(s.library + "/" + dtype_name(s.query.dtype));
  EXPECT_EQ(kept, (std::vector<std::string>{"sglang_fused_moe_triton/bf16", "sglang_marlin_moe/int4",
                                            "sglang_fused_moe_triton/mxfp4", "torch_eager_loop/int4"}));
}

// Prefill rows per shape on datacenter Blackwell: TRT-LLM's kernels for the head dims they are
// built for (64, 128, 256), SGLang's Triton fallback for a windowed head_dim 192 (the B200's
// rows: aiconfigurator measured those with Triton only); a Triton row of a shape TRT-LLM runs
// goes, as does a TRT-LLM row of a windowed head_dim 192. Decode and other GPUs: one library.
TEST(Dataset, PrefillLibraryPerShapeOnBlackwell) {
  static GpuRegistry reg(gpu_dir());
  std::vector<KernelSample> rows;
  auto add = [&](const char* device, const char* lib, int64_t hd, int64_t window, bool decode = false) {
    KernelSample s;
    s.query = decode ? attention_decode_q(8, 1024, 32, 8, hd, DType::kBf16, DType::kBf16, window)
                     : attention_prefill_q(8, 1024, 32, 8, hd, DType::kBf16, DType::kBf16, window);
    s.device = device, s.library = lib, s.latency_ms = 5;
    rows.push_back(s);
  };
  add("NVIDIA B200", "trtllm_mha", 128, 1024);
  add("NVIDIA B200", "triton", 128, 1024);      // goes: TRT-LLM runs head_dim 128
  add("NVIDIA B200", "triton", 192, 1024);      // kept: the fallback
  add("NVIDIA B200", "trtllm_mha", 192, 128);   // goes: not what SGLang runs there
  add("NVIDIA B200", "trtllm_mha", 192, 0);     // kept: full attention stays TRT-LLM's
  add("NVIDIA B200", "trtllm_mha", 192, 1024, true);  // kept: decode is TRT-LLM's
  add("NVIDIA L40S", "flash_attention", 192, 1024);
  const LibraryFilterCounts n = filter_spec_library(rows, reg);
  EXPECT_EQ(n.other_library, 2);
  std::vector<std::string> kept;
  for (const auto& s : rows)
    kept.push_back(s.library + "/" + std::to_string(s.query.n) + "/w" + std::to_string(s.query.window));
  EXPECT_EQ(kept, (std::vector<std::string>{"trtllm_mha/128/w1024", "triton/192/w1024", "trtllm_mha/192/w0",
                                            "trtllm_mha/192/w1024", "flash_attention/192/w1024"}));
  // Training fits the kept Triton row a roofline of its own; a lab's own SDPA row of that shape
  // on a B200 (its only rows) stays with the network.
  const GpuSpec& b200 = reg.resolve("B200");
  EXPECT_TRUE(fallback_library_row(rows[1], b200));
  KernelSample lab = rows[1];
  lab.library = "torch_sdpa";
  EXPECT_FALSE(fallback_library_row(lab, b200));
  EXPECT_FALSE(fallback_library_row(rows[0], b200));
  // The choice itself, on a twin and on a GPU without TRT-LLM kernels.
  const KernelQuery win192 = attention_prefill_q(1, 4096, 32, 8, 192, DType::kBf16, DType::kBf16, 1024);
  EXPECT_STREQ(attention_library(win192, reg.resolve("GB200")), "triton");
  EXPECT_STREQ(attention_library(win192, reg.resolve("H100-SXM")), "flash_attention");
  EXPECT_STREQ(attention_library(attention_prefill_q(1, 4096, 32, 8, 256, DType::kBf16, DType::kBf16, 1024),
                                 reg.resolve("GB200")),
               "trtllm_mha");
}

// vidur's per-layer mlp.csv (the GPU from the folder name) and LLMServingSim's dense.csv +
// meta.yaml: small generated fixtures in the sources' layouts.
TEST(Dataset, ReadsVidurAndLlmServingSimLayouts) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "llm_layer_ops";
  fs::remove_all(root);
  const fs::path vdir = root / "vidur" / "a40" / "org" / "model";
  fs::create_directories(vdir);
  std::string header, row;
  for (const char* op : {"emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
                         "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"})
    for (const char* st : {"min", "max", "mean", "median", "std"}) {
      header += std::string(header.empty() ? "" : ",") + "time_stats." + op + "." + st;
      row += std::string(row.empty() ? "" : ",") + (std::string(st) == "median" ? "0.5" : "9");
    }
  header += ",n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers";
  std::ofstream(vdir / "mlp.csv") << header << "\n" << row << ",32,8,4096,14336,128256,True,64,2\n";
  auto v = read_kernel_csv((vdir / "mlp.csv").string());
  ASSERT_EQ(v.size(), 9u);  // 4 GEMMs, add, 2 RMSNorms, rope, SiLU-mul
  std::map<std::string, int> seen;
  for (const auto& s : v) {
    EXPECT_EQ(s.device, "NVIDIA A40");
    EXPECT_DOUBLE_EQ(s.latency_ms, 0.5);  // the median column
    EXPECT_EQ(s.query.dtype, DType::kFp16);
    seen[std::string(op_name(s.query.op)) + "(" + query_shape_string(s.query) + ")"]++;
  }
  EXPECT_EQ(seen["gemm(64,4096,3072)"], 1);   // QKV of one of 2 ranks: (32 + 16) x 128 / 2
  EXPECT_EQ(seen["gemm(64,2048,4096)"], 1);   // o_proj
  EXPECT_EQ(seen["gemm(64,4096,14336)"], 1);  // gate_up: 2 x 14336 / 2
  EXPECT_EQ(seen["gemm(64,7168,4096)"], 1);   // down
  EXPECT_EQ(seen["rmsnorm(64,4096)"], 2);
  EXPECT_EQ(seen["rope(64,2560)"], 1);        // (16 + 4) x 128
  EXPECT_EQ(seen["silu_mul(64,7168)"], 1);
  EXPECT_EQ(seen["residual_add(64,4096)"], 1);
  // vidur's H100 DGX folder (held out of ../shared) reads as the H100 SXM; a folder vidur does
  // not have is one error naming it.
  const fs::path hdir = root / "vidur" / "h100" / "org" / "model";
  fs::create_directories(hdir);
  fs::copy_file(vdir / "mlp.csv", hdir / "mlp.csv");
  auto hv = read_kernel_csv((hdir / "mlp.csv").string());
  ASSERT_EQ(hv.size(), 9u);
  EXPECT_EQ(hv[0].device, "NVIDIA H100 80GB HBM3");
  const fs::path bad = root / "vidur" / "tpu" / "org" / "model";
  fs::create_directories(bad);
  fs::copy_file(vdir / "mlp.csv", bad / "mlp.csv");
  expect_error<DataError>([&] { read_kernel_csv((bad / "mlp.csv").string()); }, {"GPU folder 'tpu' unknown"});

  const fs::path sdir = root / "llmservingsim" / "RTX4090" / "meta-llama" / "Llama-3.1-8B" / "bf16";
  fs::create_directories(sdir / "tp1");
  std::ofstream(sdir / "meta.yaml") << "gpu: NVIDIA GeForce RTX 4090\nmodel: meta-llama/Llama-3.1-8B\nvariant: bf16\n"
                                       "engine_effective:\n  hf_overrides:\n    intermediate_size: 14336\n"
                                       "    num_attention_heads: 32\n    num_key_value_heads: 8\n";
  std::ofstream(sdir / "tp1" / "dense.csv") << "layer,tokens,time_us\nact_fn,8,3.5\nqkv_proj,8,55\nembedding,8,2\n";
  auto d = read_kernel_csv((sdir / "tp1" / "dense.csv").string());
  ASSERT_EQ(d.size(), 2u);  // the embedding gather is not a modelled op
  EXPECT_EQ(d[0].device, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(d[0].query.op, OpKind::kSiluMul);
  EXPECT_EQ(query_shape_string(d[0].query), "8,14336");
  EXPECT_DOUBLE_EQ(d[0].latency_ms, 0.0035);
  EXPECT_EQ(query_shape_string(d[1].query), "8,4096,6144");
  EXPECT_EQ(d[1].query.dtype, DType::kBf16);
  // attention.csv: a pure decode row (4 requests, 100 cached tokens each), a fresh prefill
  // chunk of 64 tokens, a mixed batch (skipped) and a chunk of 32 tokens after 512 cached.
  std::ofstream(sdir / "tp1" / "attention.csv") << "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n"
                                                   "0,0,4,100,9.5\n64,0,0,0,10.2\n64,16,2,32,20\n32,512,0,0,25\n";
  auto at = read_kernel_csv((sdir / "tp1" / "attention.csv").string());
  ASSERT_EQ(at.size(), 3u);
  EXPECT_EQ(at[2].query.op, OpKind::kAttnPrefill);
  EXPECT_EQ(query_shape_string(at[2].query), "1,32,32,8,128,p512");
  EXPECT_EQ(at[0].query.op, OpKind::kAttnDecode);
  EXPECT_EQ(query_shape_string(at[0].query), "4,101,32,8,128");  // attends the cache + itself
  EXPECT_EQ(at[1].query.op, OpKind::kAttnPrefill);
  EXPECT_EQ(query_shape_string(at[1].query), "1,64,32,8,128");
  EXPECT_DOUBLE_EQ(at[1].latency_ms, 0.0102);
  // per_sequence.csv: the sampler over each sequence's FP32 logits (vocab from hf_overrides);
  // lm_head rows are skipped (the GEMM family has the projections of dense.csv).
  std::ofstream(sdir / "tp1" / "per_sequence.csv") << "layer,sequences,time_us\nlm_head,4,1100\nsampler,4,27.071\n";
  expect_error<DataError>([&] { read_kernel_csv((sdir / "tp1" / "per_sequence.csv").string()); },
                          {"meta.yaml", "missing field 'vocab_size'"});
  std::ofstream(sdir / "meta.yaml") << "gpu: NVIDIA GeForce RTX 4090\nmodel: meta-llama/Llama-3.1-8B\nvariant: bf16\n"
                                       "engine_effective:\n  hf_overrides:\n    intermediate_size: 14336\n"
                                       "    num_attention_heads: 32\n    num_key_value_heads: 8\n    vocab_size: 128256\n";
  auto ps = read_kernel_csv((sdir / "tp1" / "per_sequence.csv").string());
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].query.op, OpKind::kSampler);
  EXPECT_EQ(ps[0].query.dtype, DType::kFp32);
  EXPECT_EQ(query_shape_string(ps[0].query), "4,128256");
  EXPECT_DOUBLE_EQ(query_bytes(ps[0].query), 4.0 * 128256 * 4);  // each logit read once
  EXPECT_DOUBLE_EQ(ps[0].latency_ms, 0.027071);
  std::ofstream(sdir / "tp1" / "per_sequence.csv") << "layer,sequences,time_us\nsoftmax,4,20\n";
  expect_error<DataError>([&] { read_kernel_csv((sdir / "tp1" / "per_sequence.csv").string()); },
                          {"per_sequence.csv:2", "unknown layer 'softmax'"});
  std::ofstream(sdir / "tp1" / "per_sequence.csv") << "layer,sequences,time_us\nsampler,0,20\n";
  expect_error<DataError>([&] { read_kernel_csv((sdir / "tp1" / "per_sequence.csv").string()); },
                          {"per_sequence.csv:2", "column 'sequences'"});
  std::ofstream(sdir / "tp1" / "dense.csv") << "layer,tokens,time_us\nconv,8,3.5\n";
  expect_error<DataError>([&] { read_kernel_csv((sdir / "tp1" / "dense.csv").string()); }, {"dense.csv:2", "unknown layer 'conv'"});

  // Qwen3-32B: 64 heads of 128 in a hidden size of 5120 (not 5120 / 64 = 80): QKV 5120 ->
  // (64 + 2 x 8) x 128 = 10240 over tp 2 -> 5120, o_proj 64 x 128 / 2 = 4096 -> 5120.
  const fs::path qdir = root / "llmservingsim" / "H100" / "Qwen" / "Qwen3-32B" / "bf16";
  fs::create_directories(qdir / "tp2");
  auto qwen_meta = [&](const std::string& extra) {
    std::ofstream(qdir / "meta.yaml") << "gpu: NVIDIA H100 80GB HBM3\nmodel: Qwen/Qwen3-32B\nvariant: bf16\n"
                                         "engine_effective:\n  hf_overrides:\n    intermediate_size: 25600\n"
                                         "    num_attention_heads: 64\n    num_key_value_heads: 8\n" << extra;
  };
  qwen_meta("");
  std::ofstream(qdir / "tp2" / "dense.csv") << "layer,tokens,time_us\nqkv_proj,16,40\no_proj,16,30\n";
  auto qr = read_kernel_csv((qdir / "tp2" / "dense.csv").string());
  ASSERT_EQ(qr.size(), 2u);
  EXPECT_EQ(qr[0].device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(query_shape_string(qr[0].query), "16,5120,5120");
  EXPECT_EQ(query_shape_string(qr[1].query), "16,4096,5120");
  // hf_overrides that state the sizes win over the table.
  qwen_meta("    hidden_size: 2048\n    head_dim: 64\n");
  auto qo = read_kernel_csv((qdir / "tp2" / "dense.csv").string());
  EXPECT_EQ(query_shape_string(qo[0].query), "16,2048,2560");  // (64 + 16) x 64 / 2
  // A model whose sizes nothing states, and heads that are not a multiple of the KV heads: one
  // line each, naming meta.yaml.
  std::ofstream(qdir / "meta.yaml") << "gpu: NVIDIA H100 80GB HBM3\nmodel: org/Unknown-7B\nvariant: bf16\n"
                                       "engine_effective:\n  hf_overrides:\n    intermediate_size: 1024\n"
                                       "    num_attention_heads: 64\n    num_key_value_heads: 8\n";
  expect_error<DataError>([&] { read_kernel_csv((qdir / "tp2" / "dense.csv").string()); },
                          {"meta.yaml", "hidden size of 'org/Unknown-7B' unknown"});
  std::ofstream(qdir / "meta.yaml") << "gpu: NVIDIA H100 80GB HBM3\nmodel: Qwen/Qwen3-32B\nvariant: bf16\n"
                                       "engine_effective:\n  hf_overrides:\n    intermediate_size: 25600\n"
                                       "    num_attention_heads: 64\n    num_key_value_heads: 7\n";
  expect_error<DataError>([&] { read_kernel_csv((qdir / "tp2" / "dense.csv").string()); },
                          {"meta.yaml", "num_key_value_heads 7"});
}

// The layer-op sources train on their training GPUs' folders only: a held-out GPU's folder
// beside them (vidur's h100, another LLMServingSim machine) is left out, as aiconfigurator's are.
TEST(Dataset, LayerOpTrainingFilesSkipHeldOutFolders) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "llm_training_files";
  fs::remove_all(root);
  const std::vector<fs::path> kept = {root / "vidur" / "a100" / "o" / "m" / "mlp.csv",
                                      root / "vidur" / "a40" / "o" / "m" / "mlp.csv",
                                      root / "llmservingsim" / "RTX4090" / "o" / "m" / "bf16" / "tp1" / "dense.csv",
                                      root / "llmservingsim" / "RTX4090" / "o" / "m" / "bf16" / "tp1" / "per_sequence.csv"};
  const std::vector<fs::path> held_out = {root / "vidur" / "h100" / "o" / "m" / "mlp.csv",
                                          root / "llmservingsim" / "H100" / "o" / "m" / "bf16" / "tp1" / "dense.csv"};
  for (const auto* group : {&kept, &held_out})
    for (const auto& f : *group) {
      fs::create_directories(f.parent_path());
      std::ofstream(f) << "x\n";
    }
  std::vector<std::string> files = llm_training_files(root.string(), Family::kMemoryOp);
  std::vector<std::string> want;
  for (const auto& f : kept) want.push_back(f.string());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(files, want);
}

// Fused-MoE rows: dims per column, routing from `distribution`, the weight-only formats read
// (int4_wo, w4a16_mxfp4), nvfp4 and the mixed W4A8 format (w4a8_mxfp4_mxfp8); the expected
// expert loads by hand: 48 tokens x top-8 over 128 experts balanced = 3 each.
TEST(Dataset, ReadsAiconfiguratorMoeRows) {
  namespace fs = std::filesystem;
  const std::string p = ::testing::TempDir() + "aic_moe.csv";
  std::ofstream(p) << "framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,"
                      "num_experts,moe_tp_size,moe_ep_size,distribution,latency\n"
                      "SGLang,0.5,NVIDIA L40S,moe,sglang_fused_moe_triton,bfloat16,48,2816,704,8,128,1,1,balanced,2.25\n"
                      "SGLang,0.5,NVIDIA L40S,moe,sglang_marlin_moe,int4_wo,48,2816,704,8,128,1,1,balanced,1.5\n"
                      "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,fp8_block,16,7168,2048,8,256,2,4,power_law_1.2,0.3\n"
                      "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,nvfp4,16,7168,2048,8,256,1,1,balanced,0.2\n"
                      "SGLang,0.5,NVIDIA L40S,moe,sglang_fused_moe_triton,w4a16_mxfp4,8,2880,2880,4,128,1,1,balanced,0.4\n"
                      "SGLang,0.5,NVIDIA B200,moe,sglang_flashinfer_trtllm_moe,w4a8_mxfp4_mxfp8,8,2880,2880,4,128,1,1,balanced,0.1\n";
  auto rows = read_kernel_csv(p);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(rows[5].query.dtype, DType::kMxfp4Mxfp8);
  EXPECT_EQ(rows[5].query.b, 8);
  EXPECT_EQ(rows[5].library, "sglang_flashinfer_trtllm_moe");
  rows.erase(rows.begin() + 5);
  EXPECT_EQ(rows[3].query.dtype, DType::kNvfp4);
  rows.erase(rows.begin() + 3);
  EXPECT_EQ(rows[1].query.dtype, DType::kInt4);
  EXPECT_EQ(rows[1].library, "sglang_marlin_moe");
  EXPECT_EQ(rows[3].query.dtype, DType::kMxfp4);
  EXPECT_EQ(rows[3].query.h, 2880);
  rows.erase(rows.begin() + 3);
  rows.erase(rows.begin() + 1);
  const KernelQuery& a = rows[0].query;
  EXPECT_EQ(a.op, OpKind::kMoe);
  EXPECT_EQ(a.b, 48);
  EXPECT_EQ(a.h, 2816);
  EXPECT_EQ(a.n, 704);
  EXPECT_EQ(a.topk, 8);
  EXPECT_EQ(a.experts, 128);
  EXPECT_DOUBLE_EQ(a.routing_alpha, 0);
  EXPECT_EQ(rows[0].library, "sglang_fused_moe_triton");
  // Balanced on one rank as the collector routes it: token i takes experts i + 16 j (mod 128),
  // j < 8, so the 48 tokens' picks are 8 runs of 48 experts starting 16 apart, 3 on every expert.
  MoeLoad l = moe_load(a);
  EXPECT_NEAR(l.tokens, 384, 1e-9);  // 48 x 8 assignments, all on this rank
  EXPECT_NEAR(l.max_load, 3, 1e-9);
  EXPECT_NEAR(l.max_load_if_hit, 3, 1e-9);
  EXPECT_NEAR(l.hit, 128, 1e-9);  // picks at random would leave 128 x (15 / 16)^48 = 5.8 unhit
  // 20 tokens' top-4 of 128: runs of 20 from experts 0, 32, 64 and 96, 80 experts once each
  // (at random, 128 x (1 - (31 / 32)^20) = 60.3 hit).
  const MoeLoad runs = moe_load(moe_q(20, 2880, 2880, 4, 128, 1, 1, DType::kMxfp4, 0));
  EXPECT_NEAR(runs.hit, 80, 1e-9);
  EXPECT_NEAR(runs.max_load, 1, 1e-9);
  EXPECT_NEAR(runs.tiles_m, 80, 1e-9);  // one 16-row tile each
  // 100 tokens' top-6 of 128 (experts 22 apart): runs of 100 from 0, 22, 44, 66, 88 and 110;
  // expert 40 lies in the runs from 0, 22, 88 (wrapping to 59) and 110 (to 81): 4, expert 120
  // in those from 22, 44, 66, 88 and 110: 5, none in all six; every expert hit, 600 picks.
  const MoeLoad wrap = moe_load(moe_q(100, 2880, 2880, 6, 128, 1, 1, DType::kBf16, 0));
  EXPECT_NEAR(wrap.tokens, 600, 1e-9);
  EXPECT_NEAR(wrap.hit, 128, 1e-9);
  EXPECT_NEAR(wrap.max_load, 5, 1e-9);
  // Over expert-parallel ranks the picks stay random: rank 0's 32 experts of the same layer at
  // ep 4 each expect 600 / 128 tokens, hit unless no token picks them.
  const MoeLoad ranks = moe_load(moe_q(100, 2880, 2880, 6, 128, 1, 4, DType::kBf16, 0));
  EXPECT_NEAR(ranks.tokens, 150, 1e-9);
  EXPECT_NEAR(ranks.hit, 32 * (1 - std::pow(1 - 4.6875 / 100, 100)), 1e-9);
  // One token's top-8 of 384 experts: 8 experts, one token each.
  const MoeLoad one = moe_load(moe_q(1, 7168, 2048, 8, 384, 1, 1, DType::kBf16, 0));
  EXPECT_NEAR(one.max_load, 1, 1e-12);
  EXPECT_NEAR(one.max_load_if_hit, 1, 1e-9);
  EXPECT_NEAR(one.hit, 8, 1e-9);
  const KernelQuery& b = rows[1].query;
  EXPECT_EQ(b.dtype, DType::kFp8Block);
  EXPECT_EQ(b.moe_tp, 2);
  EXPECT_EQ(b.moe_ep, 4);
  EXPECT_DOUBLE_EQ(b.routing_alpha, 1.2);
  // 16 x 8 = 128 picks of 256 experts, no more picks than experts: the collector's power-law
  // rows run as their balanced twins there (check 15 of scripts/llm-data-checks.py), so the
  // load is the balanced one: rank 0's 64 experts, a quarter of the 128 assignments.
  KernelQuery b_balanced = b;
  b_balanced.routing_alpha = 0;
  const MoeLoad few = moe_load(b), few_balanced = moe_load(b_balanced);
  EXPECT_NEAR(few.tokens, 128.0 / 4, 1e-9);
  EXPECT_EQ(few.hit, few_balanced.hit);
  EXPECT_EQ(few.max_load, few_balanced.max_load);
  EXPECT_EQ(few.tiles_m, few_balanced.tiles_m);
  // 64 tokens (512 picks of 256 experts): the power law's draws. The timed rank is the most
  // loaded of the 4, so it holds at least a quarter of the assignments, and more than a balanced
  // rank; an expert takes a token at most once; 64 experts on the rank.
  KernelQuery many = b, many_balanced = b_balanced;
  many.b = many_balanced.b = 64;
  const MoeLoad pl = moe_load(many);
  EXPECT_GT(pl.tokens, moe_load(many_balanced).tokens);
  EXPECT_GE(pl.tokens, 512.0 / 4);
  EXPECT_LE(pl.tokens, 512);
  EXPECT_LE(pl.max_load, 64);
  EXPECT_GT(pl.max_load, 512.0 / 256);
  EXPECT_LE(pl.hit, 64);
  // On one rank every assignment is there (the rounding's remainder goes to the most loaded
  // experts, and none reaches 64 tokens at 512 assignments over 256 experts).
  KernelQuery all = many;
  all.moe_ep = 1;
  EXPECT_NEAR(moe_load(all).tokens, 512, 1e-9);
  // One expert a rank: the timed rank is the busiest expert, hit in every draw.
  KernelQuery each = many;
  each.moe_ep = 256;
  const MoeLoad one_expert = moe_load(each);
  EXPECT_NEAR(one_expert.tokens, one_expert.max_load, 1e-9);
  EXPECT_NEAR(one_expert.hit, 1, 1e-9);
  EXPECT_GE(one_expert.max_load, pl.max_load - 1e-9);
  // The draws are a fixed seed's: the same expectation after another query.
  (void)moe_load(a);
  const MoeLoad again = moe_load(many);
  EXPECT_EQ(again.tokens, pl.tokens);
  EXPECT_EQ(again.max_load, pl.max_load);
  EXPECT_EQ(again.hit, pl.hit);
  std::ofstream(p) << "framework,version,device,op_name,kernel_source,moe_dtype,num_tokens,hidden_size,inter_size,topk,"
                      "num_experts,moe_tp_size,moe_ep_size,distribution,latency\n"
                      "SGLang,0.5,NVIDIA L40S,moe,x,bfloat16,48,2816,704,8,128,1,1,zipf,2.25\n";
  expect_error<DataError>([&] { read_kernel_csv(p); }, {"aic_moe.csv:2", "distribution", "zipf"});
}

// Held-out shapes: a stable hash, so the same rows in every process; about PCT % of distinct
// shapes; smaller percentages hold out subsets of larger ones; bad percentages are one line.
TEST(KernelDataset, HeldOutShapesAreStableNestedAndSized) {
  int64_t n5 = 0, n10 = 0, total = 0;
  for (int64_t m = 1; m <= 60; ++m)
    for (int64_t n = 64; n <= 64 * 50; n += 64) {
      const KernelQuery q = gemm_q(m, n, 4096, DType::kBf16);
      const bool h5 = shape_held_out(q, 5), h10 = shape_held_out(q, 10);
      EXPECT_EQ(h10, shape_held_out(gemm_q(m, n, 4096, DType::kBf16), 10));
      if (h5) EXPECT_TRUE(h10) << m << "x" << n;
      n5 += h5, n10 += h10, ++total;
    }
  EXPECT_EQ(total, 3000);
  EXPECT_NEAR(double(n10) / total, 0.10, 0.02);
  EXPECT_NEAR(double(n5) / total, 0.05, 0.015);
  // The dtype is part of the shape's identity.
  int differ = 0;
  for (int64_t m = 1; m <= 200; ++m)
    differ += shape_held_out(gemm_q(m, 512, 512, DType::kBf16), 10) != shape_held_out(gemm_q(m, 512, 512, DType::kFp8), 10);
  EXPECT_GT(differ, 0);
  // fp8_static shapes hash as fp8 ones (the held-out sets recorded before it was a dtype).
  for (int64_t m = 1; m <= 200; ++m)
    EXPECT_EQ(shape_held_out(gemm_q(m, 512, 512, DType::kFp8Static), 10), shape_held_out(gemm_q(m, 512, 512, DType::kFp8), 10));
  expect_error<ConfigError>([] { check_holdout_percent(0); }, {"--holdout-shapes", "1..50", "got 0"});
  expect_error<ConfigError>([] { check_holdout_percent(60); }, {"--holdout-shapes", "got 60"});
}
