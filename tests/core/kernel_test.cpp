#include "core/kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/featurize.h"
#include "core/kernel_dataset.h"
#include "core/op_graph.h"
#include "test_util.h"

using namespace tilecast;

namespace {
const GpuSpec& a100() {
  static GpuRegistry reg(gpu_dir());
  return reg.resolve("A100-PCIE-40GB");
}
KernelQuery bmm(int64_t b, int64_t m, int64_t n, int64_t k) { return bmm_q(b, m, n, k); }
KernelQuery vec(OpKind op, int64_t b, int64_t h) { return vec_q(op, b, h); }
}  // namespace

TEST(OpKind, NamesRoundTripAndUnknownIsAnError) {
  for (const auto& info : kOpTable) EXPECT_EQ(op_kind_from_string(info.name), info.kind);
  EXPECT_EQ(op_kind_from_string("layernorm"), OpKind::kLayerNorm);
  EXPECT_EQ(op_family(OpKind::kGelu), Family::kElementwise);
  expect_error<DataError>([] { op_kind_from_string("conv2d"); }, {"unknown op 'conv2d'"});
  expect_error<ConfigError>([] { family_from_string("attention"); }, {"unknown predictor family"});
}

TEST(Kernel, FlopsAndBytes) {
  auto q = bmm(2, 3, 4, 5);
  EXPECT_DOUBLE_EQ(query_flops(q), 2.0 * 2 * 3 * 4 * 5);
  EXPECT_DOUBLE_EQ(query_bytes(q), 4.0 * 2 * (3 * 4 + 4 * 5 + 3 * 5));
  auto add = vec(OpKind::kAdd, 10, 100);
  EXPECT_DOUBLE_EQ(query_bytes(add), 12.0 * 1000);
  EXPECT_DOUBLE_EQ(query_bytes(vec(OpKind::kAddU, 10, 100)), 8.0 * 1000);
  EXPECT_DOUBLE_EQ(query_bytes(vec(OpKind::kLayerNorm, 10, 100)), 8.0 * 1000 + 8.0 * 100);
  // Rows of 101 elements cannot take PyTorch's vectorized kernel: the moments kernel reads the
  // 10 x 101 input, then the forward kernel reads it again with gamma and beta and writes it.
  EXPECT_FALSE(layernorm_two_kernels(vec(OpKind::kLayerNorm, 10, 100)));
  EXPECT_TRUE(layernorm_two_kernels(vec(OpKind::kLayerNorm, 10, 101)));
  EXPECT_FALSE(layernorm_two_kernels(vec(OpKind::kAdd, 10, 101)));
  EXPECT_DOUBLE_EQ(query_bytes(vec(OpKind::kLayerNorm, 10, 101)), 4.0 * 1010 + 8.0 * 1010 + 8.0 * 101);
  EXPECT_DOUBLE_EQ(query_bytes(vec(OpKind::kLayerNorm, 10, 102)), 12.0 * 1020 + 8.0 * 102);
  EXPECT_DOUBLE_EQ(query_bytes(vec(OpKind::kAdd, 10, 101)), 12.0 * 1010);
}

TEST(Kernel, GemmLaunchMatchesMeasuredGrid) {
  // Measured on A100: bmm (6,27,21,390) ran ampere_sgemm_128x128 with grid 4x1x6 = 24 CTAs.
  auto li = launch_info(bmm(6, 27, 21, 390), a100(), GemmTile{128, 128, 1});
  EXPECT_EQ(li.num_ctas, 24);
  EXPECT_EQ(li.num_waves, 1);
  EXPECT_NEAR(li.last_wave_fill, 24.0 / 108, 1e-12);
  // 1000 CTAs on 108 SMs: 10 waves, the last one 28/108 full.
  auto li2 = launch_info(bmm(1000, 128, 64, 128), a100(), GemmTile{128, 128, 1});
  EXPECT_EQ(li2.num_waves, 10);
  EXPECT_NEAR(li2.last_wave_fill, (1000 - 9 * 108) / 108.0, 1e-12);
  // Split-K multiplies the CTAs.
  auto li3 = launch_info(bmm(1, 1024, 2560, 2560), a100(), GemmTile{64, 128, 3});
  EXPECT_EQ(li3.num_ctas, 16 * 20 * 3);
}

TEST(Kernel, VectorLaunchIsOccupancyAware) {
  // 52,428,800 elements / 512 per CTA = 102,400 CTAs (the measured grid); 16 CTAs of 128
  // threads fit an A100 SM (2048 threads).
  auto li = launch_info(vec(OpKind::kAdd, 32768, 1600), a100());
  EXPECT_EQ(li.num_ctas, 102400);
  EXPECT_EQ(li.ctas_per_sm, 16);
  EXPECT_EQ(li.num_waves, 60);  // 108 SMs x 16 = 1728 CTAs per wave: 59 full waves and a partial one
  // Layer norm: one row per CTA. Softmax: 4 rows per CTA up to 1024 columns, then one.
  EXPECT_EQ(launch_info(vec(OpKind::kLayerNorm, 4100, 556), a100()).num_ctas, 4100);
  EXPECT_EQ(launch_info(vec(OpKind::kSoftmax, 4100, 556), a100()).num_ctas, 1025);
  auto wide = launch_info(vec(OpKind::kSoftmax, 100, 2000), a100());
  EXPECT_EQ(wide.num_ctas, 100);
  EXPECT_EQ(wide.threads_per_cta, 256);
}

TEST(Kernel, BoundsAndRoofline) {
  const GpuSpec& g = a100();
  auto q = bmm(1, 4096, 4096, 4096);
  double roof = roofline_s(q, g);
  // Hand-derived: 2 x 4096^3 = 1.374e11 FLOP at the A100-PCIE's 19,492 GFLOP/s = 7.051 ms.
  EXPECT_NEAR(roof, 7.0510e-3, 1e-7);
  auto li = launch_info(q, g, GemmTile{128, 128, 1});
  auto kb = kernel_bounds(q, g, li);
  EXPECT_GE(kb.compute_s, roof * 0.999);  // padding to full waves only adds work
  EXPECT_EQ(kb.base_s, std::max(kb.compute_s, kb.memory_s));
  auto add = vec(OpKind::kAdd, 32768, 1600);
  // 32768 x 1600 elements x (two 4-byte reads + one write) = 629.1 MB at 1555 GB/s = 0.4046 ms.
  EXPECT_NEAR(roofline_s(add, g), 4.0460e-4, 1e-8);
}

TEST(Kernel, FeaturesAreFiniteAndSized) {
  TileTable empty_tiles;
  for (auto q : {vec(OpKind::kGelu, 1, 1), vec(OpKind::kSoftmax, 8192, 16384),
                 vec(OpKind::kLayerNorm, 3, 7)}) {
    std::vector<float> f(num_features(op_family(q.op)));
    featurize(q, a100(), empty_tiles, f.data());
    for (size_t i = 0; i < f.size(); ++i) EXPECT_TRUE(std::isfinite(f[i])) << feature_names(op_family(q.op))[i];
  }
  // The GEMM feature table in docs/architecture.md lists 16 inputs (three alignment ones).
  EXPECT_EQ(num_features(Family::kBmm), 16u);
}

TEST(Kernel, ParseQueryValidatesShapes) {
  auto q = parse_query(OpKind::kLinear, "1024,2560,2560");
  EXPECT_EQ(q.b, 1);
  EXPECT_EQ(q.m, 1024);
  EXPECT_EQ(parse_query(OpKind::kLinear, "8,512,1024,4096").m, 8 * 512);  // leading dims fold
  EXPECT_EQ(parse_query(OpKind::kSoftmax, "64,128").h, 128);
  expect_error<DataError>([] { parse_query(OpKind::kBmm, "1,-5,3,4"); }, {"dimension M", "out of range"});
  expect_error<DataError>([] { parse_query(OpKind::kBmm, "1,0,3,4"); }, {"dimension M"});
  expect_error<ConfigError>([] { parse_query(OpKind::kBmm, "1,2,3"); }, {"B,M,N,K"});
  expect_error<ConfigError>([] { parse_query(OpKind::kAdd, "1,x"); }, {"not an integer"});
  expect_error<DataError>([] { parse_query(OpKind::kBmm, "4294967296,2,3,4"); }, {"dimension B"});
  expect_error<DataError>([] { parse_query(OpKind::kAdd, "2000000000,2000000"); }, {"2^40"});
}

// Tensor-core GEMM launch and bounds, hand-derived for a BF16 4096^3 GEMM on an H100 SXM:
// 128 x 256 output tiles -> 32 x 16 = 512 CTAs over 132 SMs = 4 waves, the last 116/132 full;
// 2 x 4096^3 FLOP at 989.4 TFLOP/s (the sheet's, rated at 1,830 MHz) = 0.1389 ms, padded to 4
// full waves x 1.03125 = 0.1433 ms: the bound inside a sustained load; a kernel alone runs at
// the 1,980 MHz boost clock, 0.1433 x 1830 / 1980 = 0.13240 ms. 3 x 4096^2 x 2 B = 100.7 MB at
// 3352 GB/s = 0.0300 ms.
TEST(Kernel, TensorCoreGemmLaunchAndBounds) {
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& h100 = reg.resolve("H100-SXM");
  const KernelQuery q = gemm_q(4096, 4096, 4096, DType::kBf16);
  auto li = launch_info(q, h100);
  EXPECT_EQ(li.tile.tm, 128);
  EXPECT_EQ(li.tile.tk, 256);
  EXPECT_EQ(li.num_ctas, 512);
  EXPECT_EQ(li.num_waves, 4);
  EXPECT_NEAR(li.last_wave_fill, 116.0 / 132, 1e-12);
  auto kb = kernel_bounds(q, h100, li);
  EXPECT_NEAR(kb.compute_s, 1.3240e-4, 1e-7);
  EXPECT_NEAR(kb.memory_s, 3.003e-5, 1e-7);
  KernelQuery in_load = q;
  in_load.sustained = true;
  EXPECT_NEAR(kernel_bounds(in_load, h100, li).compute_s, 1.4325e-4, 1e-7);
  // The plain roofline is the sheet's, alone or not; no kernel beats the peak at its clock.
  EXPECT_NEAR(roofline_s(q, h100), 1.3891e-4, 1e-7);
  EXPECT_NEAR(roofline_s(in_load, h100), 1.3891e-4, 1e-7);
  EXPECT_NEAR(fastest_s(q, h100), 2.0 * 4096 * 4096 * 4096 / 989.4e12 * 1830 / 1980, 1e-12);
  EXPECT_NEAR(fastest_s(in_load, h100), 1.3891e-4, 1e-7);
  // A sheet rated at the boost clock (the A100's, 312 TFLOP/s at 1,410 MHz): the same either way.
  const GpuSpec& at_boost = reg.resolve("A100-SXM4-80GB");
  EXPECT_EQ(kernel_bounds(q, at_boost, launch_info(q, at_boost)).compute_s,
            kernel_bounds(in_load, at_boost, launch_info(in_load, at_boost)).compute_s);
  EXPECT_EQ(fastest_s(q, at_boost), fastest_s(in_load, at_boost));
  // A measured sustained clock (1,450 MHz) in the spec is the step's: 0.13240 x 1980 / 1450 ms.
  GpuSpec measured = h100;
  measured.sustained_clock_mhz = 1450;
  EXPECT_NEAR(kernel_bounds(in_load, measured, li).compute_s, 1.3240e-4 * 1980 / 1450, 2e-7);
  EXPECT_NEAR(kernel_bounds(q, measured, li).compute_s, 1.3240e-4, 1e-7);
  EXPECT_NEAR(fastest_s(in_load, measured), 2.0 * 4096 * 4096 * 4096 / (989.4e12 * 1450 / 1830), 1e-12);
  // FP32 SIMT GEMMs are at the rated clock either way (GpuSpec::fp32_simt_gemm_gflops).
  KernelQuery fp32 = gemm_q(4096, 4096, 4096, DType::kFp32), fp32_in_load = fp32;
  fp32_in_load.sustained = true;
  EXPECT_EQ(kernel_bounds(fp32, h100, launch_info(fp32, h100)).compute_s,
            kernel_bounds(fp32_in_load, h100, launch_info(fp32_in_load, h100)).compute_s);
  // FP8 halves the compute bound and the input bytes; decode-sized M takes a small tile.
  EXPECT_NEAR(roofline_s(gemm_q(4096, 4096, 4096, DType::kFp8), h100), 1.3891e-4 / 2, 2e-7);
  EXPECT_EQ(launch_info(gemm_q(8, 4096, 4096, DType::kBf16), h100).tile.tm, 16);
  // Split-K (gemm_q(m, reduction, output)). A100-SXM4-80GB, 108 SMs, 128 x 128 tiles: 96
  // tokens x 512 outputs are 1 x 4 tiles; 108 / 4 = 27 splits would fill the SMs, but 4096 /
  // 256 allows 16: 64 CTAs, one wave. H100, 132 SMs, 128 x 256 tiles: 16 tokens x 4096
  // outputs are 16 tiles, 132 / 16 = 8 splits of the 8192 reduction (32 allowed): 128 CTAs.
  // A 128-wide reduction cannot split; 512 tiles already fill the SMs (the 4096^3 case above).
  // (The split-K rule is in tensor_core_tile, core/kernel.cpp.)
  const GpuSpec& a100_sxm = reg.resolve("A100-80GB-SXM");
  const auto s1 = launch_info(gemm_q(96, 4096, 512, DType::kBf16), a100_sxm);
  EXPECT_EQ(s1.tile.split_k, 16);
  EXPECT_EQ(s1.num_ctas, 64);
  EXPECT_EQ(s1.num_waves, 1);
  const auto s2 = launch_info(gemm_q(16, 8192, 4096, DType::kBf16), h100);
  EXPECT_EQ(s2.tile.split_k, 8);
  EXPECT_EQ(s2.num_ctas, 128);
  EXPECT_EQ(launch_info(gemm_q(16, 128, 4096, DType::kBf16), h100).tile.split_k, 1);
  // The FP8 scaled-mm kernels do not split: the same 16 x 8192 x 4096 GEMM is 16 CTAs.
  const auto s3 = launch_info(gemm_q(16, 8192, 4096, DType::kFp8), h100);
  EXPECT_EQ(s3.tile.split_k, 1);
  EXPECT_EQ(s3.num_ctas, 16);
  EXPECT_EQ(li.tile.split_k, 1);
  // The split keeps the padded work: 96 -> 128 rows x 4096 x 512 x 2 FLOPs over 64 of the 108
  // SMs' per-SM peak (312 TFLOP/s / 108) = 2 x 128 x 4096 x 512 / 64 / 2.8889e12 s = 2.9037 us.
  EXPECT_NEAR(kernel_bounds(gemm_q(96, 4096, 512, DType::kBf16), a100_sxm, s1).compute_s, 2.9037e-6, 1e-9);
  std::vector<float> f(num_features(Family::kGemm));
  featurize(gemm_q(8, 4096, 14336, DType::kFp8Block), h100, TileTable{}, f.data());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_TRUE(std::isfinite(f[i])) << feature_names(Family::kGemm)[i];
  // DRAM bytes per SM-cycle, from the H100's sheet: 3,352 GB/s / (132 SMs x 1.98 GHz) = 12.825
  // bytes, log2 3.6809; the same for any shape or dtype.
  {
    const auto& gn = feature_names(Family::kGemm);
    const size_t at = std::find(gn.begin(), gn.end(), "log2_dram_bytes_per_sm_cycle") - gn.begin();
    ASSERT_LT(at, gn.size());
    EXPECT_NEAR(f[at], 3.6809, 1e-4);
    featurize(gemm_q(4096, 4096, 4096, DType::kBf16), h100, TileTable{}, f.data());
    EXPECT_NEAR(f[at], 3.6809, 1e-4);
  }
  // An A100 has no FP8 tensor cores: one line naming the GPU and dtype.
  expect_error<ConfigError>([&] { roofline_s(gemm_q(64, 64, 64, DType::kFp8), a100()); }, {"A100-PCIE-40GB", "fp8"});
  DType d;
  EXPECT_TRUE(try_dtype_from_string("bfloat16", &d));
  EXPECT_EQ(d, DType::kBf16);
  expect_error<ConfigError>([] { dtype_from_string("int3"); }, {"unknown dtype 'int3'"});
}

// Attention FLOPs, bytes and tasks, hand-derived.
// Prefill, 2 prompts x 256 tokens, 8 heads over 2 KV heads, head_dim 64, BF16, causal:
// 256 x 257 / 2 = 32,896 (query, key) pairs per head; 4 x 64 FLOPs each x 2 x 8 heads
// = 134,742,016 FLOPs. Bytes: Q and O 2 x 256 x 8 x 64 x (2 + 2) = 1,048,576, K and V
// 2 x 2 x 256 x 2 x 64 x 2 = 262,144: 1,310,720. CTAs: 2 x 8 x 2 query blocks = 32.
// A 64-token window: 64 x 65 / 2 + 192 x 64 = 14,368 pairs -> 58,851,328 FLOPs.
// Decode, 4 sequences x 1000 cached tokens, 32 heads over 8 KV heads, head_dim 128, FP8 KV:
// 4 x 4 x 32 x 128 x 1000 = 65,536,000 FLOPs; 4 x (32 x 128 x 4 + 2 x 1000 x 8 x 128 x 1)
// = 8,257,536 bytes; 32 (sequence, KV head) tasks split 4 ways (1000 / 256) on an H100.
TEST(Kernel, AttentionWorkAndTasks) {
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& h100 = reg.resolve("H100-SXM");
  const auto p = attention_prefill_q(2, 256, 8, 2, 64, DType::kBf16, DType::kBf16);
  EXPECT_DOUBLE_EQ(query_flops(p), 134742016.0);
  EXPECT_DOUBLE_EQ(query_bytes(p), 1310720.0);
  EXPECT_EQ(launch_info(p, h100).num_ctas, 32);
  EXPECT_DOUBLE_EQ(query_flops(attention_prefill_q(2, 256, 8, 2, 64, DType::kBf16, DType::kBf16, 64)), 58851328.0);
  const auto d = attention_decode_q(4, 1000, 32, 8, 128, DType::kBf16, DType::kFp8);
  EXPECT_DOUBLE_EQ(query_flops(d), 65536000.0);
  EXPECT_DOUBLE_EQ(query_bytes(d), 8257536.0);
  EXPECT_EQ(launch_info(d, h100).num_ctas, 128);
  EXPECT_EQ(parse_query(OpKind::kAttnDecode, "4,1000,32,8,128").ctx, 1000);
  // A chunk of 128 queries after 256 cached tokens (chunked prefill): queries 257..384 of the
  // prompt attend (257 + 384) x 128 / 2 = 41,024 keys per head: 4 x 64 x 8 x 41,024 =
  // 84,017,152 FLOPs. Bytes: Q and O 128 x 8 x 64 x 4 = 262,144, K and V of all 384 tokens
  // 2 x 384 x 2 x 64 x 2 = 196,608: 458,752. CTAs: 8 heads x 1 query block. With a 64-token
  // window every query attends 64 keys: 128 x 64 x 4 x 64 x 8 = 16,777,216 FLOPs.
  const auto chunk = attention_chunk_q(1, 128, 256, 8, 2, 64, DType::kBf16, DType::kBf16);
  EXPECT_DOUBLE_EQ(query_flops(chunk), 84017152.0);
  EXPECT_DOUBLE_EQ(query_bytes(chunk), 458752.0);
  EXPECT_EQ(launch_info(chunk, h100).num_ctas, 8);
  EXPECT_DOUBLE_EQ(query_flops(attention_chunk_q(1, 128, 256, 8, 2, 64, DType::kBf16, DType::kBf16, 64)), 16777216.0);
  EXPECT_EQ(query_shape_string(chunk), "1,128,8,2,64,p256");
  // The chunks of a prompt do its work: 0..256 and 256..384 together are the 384-token prompt.
  EXPECT_DOUBLE_EQ(query_flops(attention_prefill_q(1, 256, 8, 2, 64, DType::kBf16, DType::kBf16)) + query_flops(chunk),
                   query_flops(attention_prefill_q(1, 384, 8, 2, 64, DType::kBf16, DType::kBf16)));
  auto bad_prefix = attention_decode_q(1, 100, 8, 2, 64, DType::kBf16, DType::kBf16);
  bad_prefix.prefix = 5;
  expect_error<DataError>([&] { validate_query(bad_prefix, "q"); }, {"prefix 5", "prefill chunks only"});
  expect_error<DataError>([] { parse_query(OpKind::kAttnPrefill, "1,128,32,5,128"); }, {"32 query heads", "5 KV heads"});
  expect_error<ConfigError>([] { parse_query(OpKind::kAttnPrefill, "1,128,32"); }, {"B,S,H,KV,D"});
  std::vector<float> f(num_features(Family::kAttnPrefill));
  featurize(p, h100, TileTable{}, f.data());
  for (size_t i = 0; i < f.size(); ++i) EXPECT_TRUE(std::isfinite(f[i])) << feature_names(Family::kAttnPrefill)[i];
  // The window fraction: a prefill's window in whole 128-key blocks over the prompt (1 and 128
  // keys over 4,096 tokens: 128 / 4,096; 129 keys: 256 / 4,096; none: 1); a decode's keys over
  // its context (1 and 128 of 4,096 cached tokens: 1 / 4,096 and 128 / 4,096).
  auto fraction = [&](const KernelQuery& q) {
    const Family fam = op_family(q.op);
    std::vector<float> v(num_features(fam));
    featurize(q, h100, TileTable{}, v.data());
    return v[feature_columns(fam, {"window_fraction"}).at(0)];
  };
  auto pre = [](int64_t window) { return attention_prefill_q(1, 4096, 32, 8, 128, DType::kBf16, DType::kBf16, window); };
  auto dec = [](int64_t window) { return attention_decode_q(8, 4096, 32, 8, 128, DType::kBf16, DType::kBf16, window); };
  EXPECT_FLOAT_EQ(fraction(pre(1)), 128.f / 4096);
  EXPECT_FLOAT_EQ(fraction(pre(128)), 128.f / 4096);
  EXPECT_FLOAT_EQ(fraction(pre(129)), 256.f / 4096);
  EXPECT_FLOAT_EQ(fraction(pre(0)), 1.f);
  EXPECT_FLOAT_EQ(fraction(dec(1)), 1.f / 4096);
  EXPECT_FLOAT_EQ(fraction(dec(128)), 128.f / 4096);
}

// Prefill's compute bound is the busier of the tensor cores and the softmax's exponentials, per
// SM. One 128-query block of 148 heads (148 CTAs, one a SM on the B200, B300; two on the A100's
// 108): a block pair is 4 x 128 x 128 x D FLOPs and 16,384 exponentials. By hand: B200 (2,250
// TFLOP/s BF16 over 148 SMs, 1,965 MHz, 16 a clock): D = 128 MMA 8,388,608 / 1.5203e13 = 0.5518
// us against 16,384 / (16 x 1.965e9) = 0.5211 us: MMA; D = 64 or FP8 at D = 128 (half the MMA,
// 0.2759 us): the exponentials. B300 (32 a clock: 0.2606 us) in FP8 at D = 128: MMA again. A100
// SXM (312 TFLOP/s, 108 SMs, 1,410 MHz) at D = 64, two pairs: MMA 2 x 1.4519 us against 2 x
// 0.7262 us.
TEST(Kernel, PrefillBoundIsTheBusierOfMmaAndExponentials) {
  GpuRegistry reg(gpu_dir());
  auto bound = [&](const char* gpu, int64_t d, DType dt) {
    const GpuSpec& g = reg.resolve(gpu);
    const KernelQuery q = attention_prefill_q(1, 128, 148, 4, d, dt, DType::kBf16);
    return kernel_bounds(q, g, launch_info(q, g)).compute_s;
  };
  EXPECT_NEAR(bound("B200", 128, DType::kBf16), 0.5518e-6, 1e-10);
  EXPECT_NEAR(bound("B200", 64, DType::kBf16), 0.5211e-6, 1e-10);
  EXPECT_NEAR(bound("B200", 128, DType::kFp8), 0.5211e-6, 1e-10);
  EXPECT_NEAR(bound("B300", 128, DType::kFp8), 0.2759e-6, 1e-10);
  EXPECT_NEAR(bound("B300", 64, DType::kFp8), 0.2606e-6, 1e-10);
  EXPECT_NEAR(bound("A100-80GB-SXM", 64, DType::kBf16), 2 * 1.4519e-6, 1e-9);
  // The L40S (362 TFLOP/s over 142 SMs, 142 heads: one pair an SM) and the H100 SXM (989.4 TFLOP/s
  // rated at 1,830 MHz, 1.0705e6 GFLOP/s at its 1,980 MHz boost, 132 heads) in BF16 at head_dim
  // 128: MMA 3.2906 us against 0.4063 us of exponentials, and 1.0344 against 0.5172 us.
  auto one_pair = [&](const char* gpu, int64_t heads) {
    const GpuSpec& g = reg.resolve(gpu);
    const KernelQuery q = attention_prefill_q(1, 128, heads, 2, 128, DType::kBf16, DType::kBf16);
    return kernel_bounds(q, g, launch_info(q, g)).compute_s;
  };
  EXPECT_NEAR(one_pair("L40S", 142), 3.2906e-6, 1e-10);
  EXPECT_NEAR(one_pair("H100-SXM", 132), 1.0344e-6, 1e-10);
  // Inside a model's step (--sustained) the exponentials run at the clock the tensor rate does:
  // the H100 SXM's 1,830 MHz, not its 1,980 MHz boost. FP8 at head_dim 64 (132 heads, one pair
  // an SM): MMA 4,194,304 / (1,978.9 TFLOP/s / 132 at 1,830 MHz) = 0.2798 us against
  // exponentials 16,384 / (16 x 1.83e9) = 0.5596 us (0.5172 us alone, at 1,980 MHz).
  const GpuSpec& h100 = reg.resolve("H100-SXM");
  KernelQuery q = attention_prefill_q(1, 128, 132, 4, 64, DType::kFp8, DType::kBf16);
  EXPECT_NEAR(kernel_bounds(q, h100, launch_info(q, h100)).compute_s, 0.5172e-6, 1e-10);
  q.sustained = true;
  EXPECT_NEAR(kernel_bounds(q, h100, launch_info(q, h100)).compute_s, 0.5596e-6, 1e-10);
}

// Prefill's Q and O bytes run in series with its block pairs (each CTA loads its query block
// before its first key block and writes its output after its last), K and V under them. 2
// prompts x 4,096 tokens, 32 heads over 8 KV heads of 128: in BF16, Q in and O out are 2 x 4,096
// x 32 x 128 x (2 + 2) = 134,217,728 bytes and K and V 2 x 2 x 4,096 x 8 x 128 x 2 = 33,554,432:
// 0.8 of the memory bound in series; FP8 queries over an FP8 cache (O still BF16): 100,663,296
// of 117,440,512, 6 / 7. In the fitted roofline of a compute-bound launch, that share adds its time
// at the fitted DRAM efficiency (0.6 here) after the roofline; decode has none.
TEST(Kernel, PrefillQueriesAndOutputsInSeries) {
  GpuRegistry reg(gpu_dir());
  const GpuSpec& l40s = reg.resolve("L40S");
  auto bounds = [&](DType d) {
    const KernelQuery q = attention_prefill_q(2, 4096, 32, 8, 128, d, d);
    return kernel_bounds(q, l40s, launch_info(q, l40s));
  };
  const KernelBounds kb = bounds(DType::kBf16);
  EXPECT_NEAR(kb.series_pass_s / kb.memory_s, 0.8, 1e-12);
  EXPECT_NEAR(bounds(DType::kFp8).series_pass_s / bounds(DType::kFp8).memory_s, 6.0 / 7.0, 1e-12);
  FittedRoofline p;
  p.eta_compute = 1;
  p.eta_memory = 0.6;
  ASSERT_GT(kb.fitted_compute_s(), kb.memory_s / 0.6);  // compute-bound with or without the share
  KernelBounds without = kb;
  without.series_pass_s = 0;
  EXPECT_NEAR(fitted_roofline_s(kb, p) - fitted_roofline_s(without, p), 0.8 * kb.memory_s / 0.6, 1e-15);
  const KernelQuery d = attention_decode_q(2, 4096, 32, 8, 128, DType::kBf16, DType::kBf16);
  EXPECT_EQ(kernel_bounds(d, l40s, launch_info(d, l40s)).series_pass_s, 0);
}

// A tensor-core GEMM's output in series on the L40S, hand-derived (gemm_q(tokens, reduction,
// outputs)): 16 tokens x 4,096 in-features x 12,288 out-features in BF16 read A 2 x 16 x 4,096 =
// 131,072 bytes and B 2 x 4,096 x 12,288 = 100,663,296, and write C 2 x 16 x 12,288 = 393,216:
// 393,216 / 101,187,584 of the memory bound in series. FP8 inputs (C still BF16): A 65,536, B 50,331,648,
// C 393,216: 393,216 / 50,790,400. In a memory-bound launch's fitted roofline the share moves
// from under the roofline to after it: the same forecast; in a compute-bound one it adds its
// time at the fitted DRAM efficiency.
TEST(Kernel, GemmOutputInSeries) {
  GpuRegistry reg(gpu_dir());
  const GpuSpec& l40s = reg.resolve("L40S");
  auto bounds = [&](int64_t m, DType d) {
    const KernelQuery q = gemm_q(m, 4096, 12288, d);
    return kernel_bounds(q, l40s, launch_info(q, l40s));
  };
  const KernelBounds kb = bounds(16, DType::kBf16);
  EXPECT_NEAR(kb.series_pass_s / kb.memory_s, 393216.0 / 101187584.0, 1e-12);
  const KernelBounds fp8 = bounds(16, DType::kFp8);
  EXPECT_NEAR(fp8.series_pass_s / fp8.memory_s, 393216.0 / 50790400.0, 1e-12);
  FittedRoofline p;
  p.eta_compute = 1;
  p.eta_memory = 0.6;
  KernelBounds without = kb;
  without.series_pass_s = 0;
  ASSERT_LT(kb.fitted_compute_s(), (kb.memory_s - kb.series_pass_s) / 0.6);  // memory-bound
  EXPECT_NEAR(fitted_roofline_s(kb, p), fitted_roofline_s(without, p), 1e-15);
  // 8,192 tokens: compute-bound; C (2 x 8,192 x 12,288 bytes) adds its time after the roofline.
  const KernelBounds big = bounds(8192, DType::kBf16);
  KernelBounds big_without = big;
  big_without.series_pass_s = 0;
  ASSERT_GT(big.fitted_compute_s(), big.memory_s / 0.6);
  EXPECT_NEAR(fitted_roofline_s(big, p) - fitted_roofline_s(big_without, p),
              2.0 * 8192 * 12288 / (l40s.mem_bw_gbps * 1e9) / 0.6, 1e-12);
}

// FP8 activation quantisation, hand-derived on the L40S (864 GB/s) for 16 tokens x 4,096
// in-features: dynamic scaling moves 5 x 16 x 4,096 = 327,680 bytes (0.379 us), block scaling
// 3 x 65,536 + 4 x 16 x 32 = 198,656; a static scale's GEMM takes the activation in FP8 (none,
// no quantising launch), as BF16 does. The matmul part of the bound is the same for every FP8
// flavour (same bytes, same peak).
TEST(Kernel, Fp8ActivationQuantisation) {
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& l40s = reg.resolve("L40S");
  auto bound = [&](DType d) { const auto q = gemm_q(16, 4096, 14336, d); return kernel_bounds(q, l40s, launch_info(q, l40s)); };
  const KernelBounds dyn = bound(DType::kFp8), stat = bound(DType::kFp8Static), blk = bound(DType::kFp8Block);
  const KernelBounds bf = bound(DType::kBf16);
  EXPECT_DOUBLE_EQ(dyn.compute_s, stat.compute_s);
  EXPECT_DOUBLE_EQ(dyn.memory_s, stat.memory_s);
  EXPECT_NEAR(dyn.base_s - std::max(dyn.compute_s, dyn.memory_s), 327680.0 / 864e9, 1e-15);
  EXPECT_DOUBLE_EQ(stat.base_s, std::max(stat.compute_s, stat.memory_s));
  EXPECT_EQ(stat.quant_s, 0.0);
  EXPECT_NEAR(blk.base_s - std::max(blk.compute_s, blk.memory_s), 198656.0 / 864e9, 1e-15);
  EXPECT_DOUBLE_EQ(bf.base_s, std::max(bf.compute_s, bf.memory_s));
  const auto& names = feature_names(Family::kGemm);
  const size_t share = std::find(names.begin(), names.end(), "quant_share") - names.begin();
  const size_t launches = std::find(names.begin(), names.end(), "quant_launches") - names.begin();
  ASSERT_LT(launches, names.size());
  std::vector<float> f(names.size());
  const std::pair<DType, float> want[] = {{DType::kFp8, 2.f}, {DType::kFp8Static, 0.f}, {DType::kFp8Block, 1.f}, {DType::kBf16, 0.f}};
  for (const auto& [d, n] : want) {
    featurize(gemm_q(16, 4096, 14336, d), l40s, TileTable{}, f.data());
    EXPECT_EQ(f[launches], n) << dtype_name(d);
    EXPECT_EQ(f[share] > 0, n > 0) << dtype_name(d);
  }
  EXPECT_EQ(dtype_from_string("fp8_static"), DType::kFp8Static);
  expect_error<ConfigError>([] { gemm_peak_gflops(reg.resolve("a100-sxm4-80gb"), DType::kFp8Static); }, {"no fp8 tensor-core peak"});
}

// Physically impossible rows, hand-derived on the L40S (96 MiB L2, 864 GB/s, 362 TFLOP/s
// BF16). Decode of 64 sequences x 8,192 cached tokens, 8 KV heads of 128: 64 x (32 x 128 x 4
// query/output bytes + 2 x 8,192 x 8 x 128 x 2 KV bytes) = 2,148,532,224 bytes; less the
// 100,663,296 an L2 can hold that is 2.370 ms at DRAM speed, so anything below 1.580 ms is
// impossible (the data's row says 0.0274 ms). Prefill of 16,384 causal tokens, 32 heads of 128:
// 4 x 32 x 128 x 16,384 x 16,385 / 2 = 2.199e12 FLOPs = 6.075 ms at peak, impossible below 4.05.
TEST(Kernel, ImplausibleRowsFromPhysics) {
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& l40s = reg.resolve("L40S");
  const auto d = attention_decode_q(64, 8192, 32, 8, 128, DType::kBf16, DType::kBf16);
  EXPECT_DOUBLE_EQ(query_bytes(d), 2148532224.0);
  EXPECT_EQ(implausible_row(d, 0.0274, l40s), Implausible::kMemory);
  EXPECT_EQ(implausible_row(d, 1.57, l40s), Implausible::kMemory);
  EXPECT_EQ(implausible_row(d, 1.59, l40s), Implausible::kNone);
  // 128 cached tokens: 34 MB, all of it servable from L2 by a benchmark repeating the call.
  EXPECT_EQ(implausible_row(attention_decode_q(64, 128, 32, 8, 128, DType::kBf16, DType::kBf16), 0.0274, l40s),
            Implausible::kNone);
  const auto p = attention_prefill_q(1, 16384, 32, 8, 128, DType::kBf16, DType::kBf16);
  EXPECT_EQ(implausible_row(p, 0.05, l40s), Implausible::kCompute);
  EXPECT_EQ(implausible_row(p, 4.0, l40s), Implausible::kCompute);
  EXPECT_EQ(implausible_row(p, 4.1, l40s), Implausible::kNone);
  // A row is a kernel alone, at the boost clock: on the H100 SXM (989.4 TFLOP/s rated at 1,830
  // MHz) a 4096^3 BF16 GEMM is 0.13891 ms at the rated peak and 0.12839 ms at the 1,980 MHz
  // boost clock; with no slack, 0.130 ms is possible and 0.127 ms is not.
  const GpuSpec& h100 = reg.resolve("H100-SXM");
  const auto g = gemm_q(4096, 4096, 4096, DType::kBf16);
  EXPECT_EQ(implausible_row(g, 0.130, h100, kTrainingComputeSlack), Implausible::kNone);
  EXPECT_EQ(implausible_row(g, 0.127, h100, kTrainingComputeSlack), Implausible::kCompute);
}

// The memory_op fit recovers known coefficients from rows generated on two GPUs whose DRAM
// bandwidth per SM-cycle differs (so the DRAM and SM terms are separable), and refuses
// fewer than three rows.
TEST(MemoryOp, FitRecoversGeneratingCoefficients) {
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& a = reg.resolve("A100-SXM4-40GB");
  const GpuSpec& l4 = reg.resolve("L4");
  MemoryOpCoeffs truth;
  truth.floor_kcycles = 2.5;  // 2,500 SM cycles at each GPU's boost clock
  truth.dram_factor = 1.2;
  truth.sm_cycles_per_byte = 0.05;
  std::vector<MemoryOpRow> rows;
  for (const GpuSpec* g : {&a, &l4})
    for (int64_t t : {1, 16, 256, 4096, 32768}) {
      KernelQuery q = vec_q(OpKind::kRmsNorm, t, 4096, DType::kBf16);
      // Hand-derived bytes: read and write t x 4096 BF16 values plus the 4096-wide weight.
      const double bytes = 2.0 * 2 * t * 4096 + 2.0 * 4096;
      EXPECT_DOUBLE_EQ(query_bytes(q), bytes);
      const double y = 2.5e3 / (g->boost_clock_mhz * 1e6) + 1.2 * bytes / (g->mem_bw_gbps * 1e9) +
                       0.05 * bytes / (double(g->num_sms) * g->boost_clock_mhz * 1e6);
      EXPECT_NEAR(memory_op_latency_s(q, *g, truth), y, 1e-15);
      rows.push_back({g, bytes, y});
    }
  MemoryOpCoeffs fit = fit_memory_op(rows);
  EXPECT_NEAR(fit.floor_kcycles, 2.5, 1e-6);
  EXPECT_NEAR(fit.dram_factor, 1.2, 1e-6);
  EXPECT_NEAR(fit.sm_cycles_per_byte, 0.05, 1e-8);
  EXPECT_EQ(fit.rows, 10);
  // A negative slope in the data is clipped to a non-negative model (a floor alone here).
  std::vector<MemoryOpRow> falling = {{&a, 1e6, 3e-6}, {&a, 2e6, 2e-6}, {&a, 3e6, 1e-6}};
  MemoryOpCoeffs f2 = fit_memory_op(falling);
  EXPECT_GE(f2.dram_factor, 0);
  EXPECT_GE(f2.sm_cycles_per_byte, 0);
  EXPECT_GT(f2.floor_kcycles, 0);
  expect_error<DataError>([&] { fit_memory_op({{&a, 1e6, 1e-6}}); }, {"fewer than 3 rows"});
  // Each GPU weighs the same: repeating one GPU's rows (here the L4's, 50 times) leaves the fit
  // as it is, on rows that no single coefficient set fits exactly (the two GPUs disagree).
  {
    std::vector<MemoryOpRow> mixed, repeated;
    for (const GpuSpec* g : {&a, &l4})
      for (int64_t t : {1, 64, 1024, 16384}) {
        const double bytes = 4.0 * t * 4096;
        const double y = (g == &a ? 2e-6 + 2.0 * bytes / (g->mem_bw_gbps * 1e9) : 1e-6 + 0.8 * bytes / (g->mem_bw_gbps * 1e9));
        mixed.push_back({g, bytes, y});
        for (int k = 0; k < (g == &l4 ? 50 : 1); ++k) repeated.push_back({g, bytes, y});
      }
    const MemoryOpCoeffs m1 = fit_memory_op(mixed), m2 = fit_memory_op(repeated);
    EXPECT_NEAR(m1.floor_kcycles, m2.floor_kcycles, 1e-9 * std::max(1.0, m1.floor_kcycles));
    EXPECT_NEAR(m1.dram_factor, m2.dram_factor, 1e-9 * std::max(1.0, m1.dram_factor));
    EXPECT_NEAR(m1.sm_cycles_per_byte, m2.sm_cycles_per_byte, 1e-9 * std::max(1.0, m1.sm_cycles_per_byte));
    EXPECT_GT(m1.dram_factor + m1.sm_cycles_per_byte, 0);
  }
  // One GPU cannot tell a DRAM rate from an SM rate (both scale with the bytes): rows that are
  // a floor plus DRAM time are fitted as that, the SM term left at 0, on either GPU alone.
  for (const GpuSpec* g : {&a, &l4}) {
    std::vector<MemoryOpRow> one;
    for (int64_t t : {1, 16, 256, 4096, 32768, 131072}) {
      const double bytes = 2.0 * 2 * t * 4096 + 2.0 * 4096;
      one.push_back({g, bytes, 1.5e3 / (g->boost_clock_mhz * 1e6) + 0.9 * bytes / (g->mem_bw_gbps * 1e9)});
    }
    const MemoryOpCoeffs f1 = fit_memory_op(one);
    EXPECT_NEAR(f1.dram_factor, 0.9, 1e-6) << g->name;
    EXPECT_EQ(f1.sm_cycles_per_byte, 0.0) << g->name;
    EXPECT_EQ(f1.thread_cycles_per_byte, 0.0) << g->name;
    EXPECT_NEAR(f1.floor_kcycles, 1.5, 1e-6) << g->name;
  }
}

namespace {
// RMSNorm rows (t x 4,096 BF16) of `tokens` on each GPU, their latencies generated by `truth`.
std::vector<MemoryOpRow> generated_rmsnorm_rows(const MemoryOpCoeffs& truth, std::initializer_list<const GpuSpec*> gpus,
                                                std::initializer_list<int64_t> tokens) {
  std::vector<MemoryOpRow> rows;
  for (const GpuSpec* g : gpus)
    for (int64_t t : tokens) {
      const KernelQuery q = vec_q(OpKind::kRmsNorm, t, 4096, DType::kBf16);
      rows.push_back({g, query_bytes(q), memory_op_latency_s(q, *g, truth)});
    }
  return rows;
}
}  // namespace

// The latency-bound term: time per byte inverse to SMs x resident threads per SM x clock
// (Little's law), separable from the SM-cycle term only across GPUs of different resident
// threads per SM (A100: 2,048; L4 and A40: 1,536). Rows generated with it on three GPUs are
// fitted back to it, the SM term left at 0.
TEST(MemoryOp, LatencyBoundTermFollowsResidentThreads) {
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& a = reg.resolve("A100-SXM4-40GB");
  const GpuSpec& l4 = reg.resolve("L4");
  const GpuSpec& a40 = reg.resolve("A40");
  ASSERT_EQ(a.max_threads_per_sm, 2048);
  ASSERT_EQ(a40.max_threads_per_sm, 1536);
  MemoryOpCoeffs c;
  c.floor_kcycles = 2, c.dram_factor = 0, c.sm_cycles_per_byte = 0, c.thread_cycles_per_byte = 300;
  // 4,096 x 4,096 BF16 RMSNorm, 67,117,056 bytes, on the A100-SXM4-40GB (108 SMs x 2,048
  // threads x 1,410 MHz = 3.11869e14 thread-cycles/s): 300 x 67,117,056 / 3.11869e14 s =
  // 64.563 us, plus the floor, 2,000 cycles at 1,410 MHz = 1.418 us.
  const KernelQuery big = vec_q(OpKind::kRmsNorm, 4096, 4096, DType::kBf16);
  EXPECT_NEAR(memory_op_latency_s(big, a, c), 2e3 / 1410e6 + 300 * 67117056.0 / (108.0 * 2048 * 1410e6), 1e-12);
  EXPECT_NEAR(memory_op_latency_s(big, a, c), 65.981e-6, 1e-9);
  MemoryOpCoeffs truth;
  truth.floor_kcycles = 1.5, truth.dram_factor = 0.6, truth.thread_cycles_per_byte = 300, truth.l2_resident_fraction = 0.5;
  const auto rows = generated_rmsnorm_rows(truth, {&a, &l4, &a40}, {1, 64, 512, 2048, 8192, 32768});
  const MemoryOpCoeffs fit = fit_memory_op(rows, 0.5);
  EXPECT_NEAR(fit.floor_kcycles, 1.5, 1e-6);
  EXPECT_NEAR(fit.dram_factor, 0.6, 1e-6);
  EXPECT_NEAR(fit.thread_cycles_per_byte, 300, 1e-4);
  EXPECT_NEAR(fit.sm_cycles_per_byte, 0, 1e-9);
}

// The L2-resident share of the memory_op model: bytes up to l2_resident_fraction of the L2 cost
// no DRAM time (hand-derived numbers below), the fit recovers a generating share's
// coefficients on two GPUs of different caches, and one GPU's rows are fitted without it.
TEST(MemoryOp, L2ResidentBytesCostNoDramTime) {
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& a = reg.resolve("A100-SXM4-40GB");  // 40 MB L2, 1,555 GB/s
  const GpuSpec& l4 = reg.resolve("L4");             // 48 MB L2, 300 GB/s
  ASSERT_EQ(a.l2_cache_mb, 40);
  ASSERT_EQ(a.mem_bw_gbps, 1555);
  MemoryOpCoeffs c;
  c.floor_kcycles = 2.5, c.dram_factor = 1.2, c.sm_cycles_per_byte = 0, c.l2_resident_fraction = 0.5;
  // 1,024 x 4,096 BF16 RMSNorm: 16,785,408 bytes, under half of 40 MiB (20,971,520): the floor
  // alone, 2,500 cycles at 1,410 MHz = 1.77305 us.
  const KernelQuery small = vec_q(OpKind::kRmsNorm, 1024, 4096, DType::kBf16);
  EXPECT_NEAR(memory_op_latency_s(small, a, c), 1.77305e-6, 1e-11);
  // 4,096 tokens: 67,117,056 bytes, 46,145,536 beyond the resident 20,971,520; at 1,555 GB/s
  // that is 29.6756 us, x 1.2 = 35.6107 us, plus the floor.
  const KernelQuery big = vec_q(OpKind::kRmsNorm, 4096, 4096, DType::kBf16);
  EXPECT_NEAR(memory_op_latency_s(big, a, c), 37.3838e-6, 1e-10);
  c.l2_resident_fraction = 0;  // every byte at DRAM speed: 67,117,056 / 1,555 GB/s x 1.2 + floor
  EXPECT_NEAR(memory_op_latency_s(big, a, c), 53.5676e-6, 1e-10);

  MemoryOpCoeffs truth;
  truth.floor_kcycles = 1.5, truth.dram_factor = 0.9, truth.sm_cycles_per_byte = 0.08, truth.l2_resident_fraction = 0.5;
  const auto rows = generated_rmsnorm_rows(truth, {&a, &l4}, {1, 64, 512, 1024, 2048, 4096, 16384, 65536});
  const MemoryOpCoeffs fit = fit_memory_op(rows, 0.5);
  EXPECT_NEAR(fit.floor_kcycles, 1.5, 1e-6);
  EXPECT_NEAR(fit.dram_factor, 0.9, 1e-6);
  EXPECT_NEAR(fit.sm_cycles_per_byte, 0.08, 1e-8);
  EXPECT_EQ(fit.l2_resident_fraction, 0.5);
  // Fitted as if every byte went to DRAM, the same rows leave a residual: the share matters.
  const MemoryOpCoeffs flat = fit_memory_op(rows, 0);
  double worst = 0;
  for (const auto& r : rows) {
    const double y = flat.floor_kcycles * 1e3 / (r.gpu->boost_clock_mhz * 1e6) + flat.dram_factor * r.bytes / (r.gpu->mem_bw_gbps * 1e9) +
                     flat.sm_cycles_per_byte * r.bytes / (double(r.gpu->num_sms) * r.gpu->boost_clock_mhz * 1e6);
    worst = std::max(worst, std::abs(y / r.latency_s - 1));
  }
  EXPECT_GT(worst, 0.05);
  // One GPU's rows: fitted with every byte at DRAM speed whatever is asked.
  std::vector<MemoryOpRow> one(rows.begin(), rows.begin() + 8);
  EXPECT_EQ(fit_memory_op(one, 0.5).l2_resident_fraction, 0.0);
  expect_error<ConfigError>([&] { fit_memory_op(rows, 1.5); }, {"l2_resident_fraction", "[0, 1]"});
}

// The family table: every family's name and aliases resolve to it, and an unknown name lists
// the known ones (so adding a row is all a new family needs for --family and the manifest).
TEST(FamilyTable, NamesAndAliasesRoundTrip) {
  for (const auto& t : kFamilyTable) {
    EXPECT_EQ(family_from_string(t.name), t.family);
    if (*t.alias1) EXPECT_EQ(family_from_string(t.alias1), t.family);
    if (*t.alias2) EXPECT_EQ(family_from_string(t.alias2), t.family);
    EXPECT_STREQ(family_name(t.family), t.name);
  }
  EXPECT_EQ(family_from_string("ln"), Family::kLayerNorm);
  EXPECT_EQ(family_from_string("attention_decode"), Family::kAttnDecode);
  EXPECT_TRUE(is_llm_kernel_family(Family::kMoe));
  EXPECT_FALSE(is_llm_kernel_family(Family::kSoftmax));
  EXPECT_FALSE(is_mlp_family(Family::kMemoryOp));
  expect_error<ConfigError>([] { family_from_string("conv"); }, {"unknown predictor family 'conv'", "memory_op", "moe"});
}

// A compute-bound SGEMM on a 32-lane-per-scheduler SM (the L4) is bounded at 64/68 of the FP32
// peak; the same SM with Pascal-style dual dispatch is not. The plain roofline keeps the peak.
TEST(Kernel, Fp32GemmComputeBoundIsIssueBound) {
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& l4 = reg.resolve("L4");
  GpuSpec dual = l4;
  dual.dispatch_per_scheduler = 2;
  const KernelQuery q = bmm(1, 4096, 4096, 4096);
  const GemmTile tile{128, 128, 1};
  const KernelBounds a = kernel_bounds(q, l4, launch_info(q, l4, tile));
  const KernelBounds b = kernel_bounds(q, dual, launch_info(q, dual, tile));
  EXPECT_GT(a.compute_s, a.memory_s);
  EXPECT_NEAR(a.compute_s / b.compute_s, 68.0 / 64.0, 1e-9);
  EXPECT_DOUBLE_EQ(roofline_s(q, l4), roofline_s(q, dual));
  // 2 x 4096^3 FLOP at the sheet's 30.286 TFLOP/s.
  EXPECT_NEAR(roofline_s(q, l4), 2.0 * 4096.0 * 4096.0 * 4096.0 / 30286e9, 1e-9);
}

// The fitted roofline recovers the numbers that generated its rows: 400 rows, compute-bound,
// memory-bound and launch-bound ones over 1-40 waves, latency = 7 us + waves x 0.5 us +
// max(c / 0.6, m / 0.8) times a deterministic +-3 % wobble. Hand check of one row: 3 waves,
// 20 us of compute: 7 + 1.5 + 20 / 0.6 = 41.83 us.
TEST(Kernel, FittedRooflineRecoversGeneratingNumbers) {
  std::vector<KernelBounds> b;
  std::vector<double> y;
  const FittedRoofline truth{7.0, 0.5, 0.6, 0.8};
  for (int i = 0; i < 400; ++i) {
    KernelBounds kb;
    const double t = 1e-7 * std::pow(10.0, 4.0 * (i % 100) / 99.0);  // 0.1 us .. 1 ms
    kb.compute_s = i % 2 ? t : t / 5;
    kb.memory_s = i % 2 ? t / 5 : t;
    kb.base_s = std::max(kb.compute_s, kb.memory_s);
    kb.waves = 1 + (i * 7) % 40;
    b.push_back(kb);
    y.push_back(fitted_roofline_s(kb, truth) * (1.0 + 0.03 * std::sin(1.7 * i)));
  }
  KernelBounds one;
  one.compute_s = 20e-6;
  one.memory_s = 1e-6;
  one.waves = 3;
  EXPECT_NEAR(fitted_roofline_s(one, truth), 41.833e-6, 1e-9);
  const char* bound = "";
  EXPECT_DOUBLE_EQ(network_base_s(one, &truth, 0, &bound), fitted_roofline_s(one, truth));
  EXPECT_STREQ(bound, "compute");
  one.compute_s = 1e-6;
  network_base_s(one, &truth, 0, &bound);
  EXPECT_STREQ(bound, "launch");
  const FittedRoofline fit = fit_roofline(b, y);
  EXPECT_NEAR(fit.floor_us, 7.0, 0.7);
  EXPECT_NEAR(fit.wave_us, 0.5, 0.05);
  EXPECT_NEAR(fit.eta_compute, 0.6, 0.03);
  EXPECT_NEAR(fit.eta_memory, 0.8, 0.04);
  // Capped below the generating 0.8 (prior_cap_memory): the fit takes the cap's grid point, the
  // largest of the grid at or below 0.5, and the other numbers still come out.
  const FittedRoofline capped = fit_roofline(b, y, false, 0.5);
  EXPECT_LE(capped.eta_memory, 0.5);
  EXPECT_GT(capped.eta_memory, 0.48);
  EXPECT_NEAR(capped.eta_compute, 0.6, 0.03);
  // Rows at 2 % of the peak (a fallback library's): the default grid stops at 0.05, a lower
  // `min_eta` reaches them.
  std::vector<double> slow;
  const FittedRoofline slow_truth{7.0, 0.5, 0.02, 0.03};
  for (const auto& kb : b) slow.push_back(fitted_roofline_s(kb, slow_truth));
  EXPECT_DOUBLE_EQ(fit_roofline(b, slow).eta_compute, kMinFittedEta);
  const FittedRoofline low = fit_roofline(b, slow, false, 1, 0.005);
  EXPECT_NEAR(low.eta_compute, 0.02, 0.001);
  EXPECT_NEAR(low.eta_memory, 0.03, 0.0015);
  expect_error<DataError>([&] { fit_roofline(b, slow, false, 1, 0); }, {"fit_roofline", "min_eta"});
  y[3] = 0;
  expect_error<DataError>([&] { fit_roofline(b, y); }, {"fit_roofline", "row 3", "> 0"});
  expect_error<DataError>([&] { fit_roofline({}, {}); }, {"fit_roofline", "at least one row"});
}

// Fixed costs in clock cycles (`prior_floor: cycles`): rows of two GPUs, at 1,000 and 2,000
// MHz, whose floor is 12,000 cycles (12 and 6 us) and whose waves cost 800 cycles each. The
// cycle fit recovers those numbers; a floor in microseconds cannot serve both GPUs and fits
// worse. Hand check: 2 waves on the 1,000 MHz GPU, 10 us of memory at 0.8: 12 + 1.6 + 12.5 us.
TEST(Kernel, FittedRooflineInClockCycles) {
  std::vector<KernelBounds> b;
  std::vector<double> y;
  FittedRoofline truth;
  truth.eta_compute = 0.6;
  truth.eta_memory = 0.8;
  truth.floor_kcycles = 12.0;
  truth.wave_kcycles = 0.8;
  for (int i = 0; i < 400; ++i) {
    KernelBounds kb;
    const double t = 1e-7 * std::pow(10.0, 4.0 * (i % 100) / 99.0);
    kb.compute_s = i % 2 ? t : t / 5;
    kb.memory_s = i % 2 ? t / 5 : t;
    kb.base_s = std::max(kb.compute_s, kb.memory_s);
    kb.waves = 1 + (i * 7) % 40;
    kb.us_per_kcycle = (i / 2) % 2 ? 1.0 : 0.5;  // 1,000 or 2,000 MHz
    b.push_back(kb);
    y.push_back(fitted_roofline_s(kb, truth));
  }
  KernelBounds one;
  one.memory_s = 10e-6;
  one.waves = 2;
  one.us_per_kcycle = 1.0;
  EXPECT_NEAR(fitted_roofline_s(one, truth), 26.1e-6, 1e-12);
  const FittedRoofline cyc = fit_roofline(b, y, true);
  // Coordinate search on log grids (6 % steps for the floor): within 15 %.
  EXPECT_NEAR(cyc.floor_kcycles, 12.0, 1.8);
  EXPECT_NEAR(cyc.wave_kcycles, 0.8, 0.12);
  EXPECT_NEAR(cyc.eta_memory, 0.8, 0.04);
  EXPECT_EQ(cyc.floor_us, 0.0);
  EXPECT_EQ(cyc.wave_us, 0.0);
  auto loss = [&](const FittedRoofline& p) {
    double sum = 0;
    for (size_t i = 0; i < b.size(); ++i) sum += std::abs(std::log(fitted_roofline_s(b[i], p) / y[i]));
    return sum / b.size();
  };
  const FittedRoofline us = fit_roofline(b, y);
  EXPECT_EQ(us.floor_kcycles, 0.0);
  EXPECT_LT(loss(cyc), 0.03);
  EXPECT_GT(loss(us), 3 * loss(cyc));
  std::printf("mean |log| loss: cycles %.4f, microseconds %.4f\n", loss(cyc), loss(us));
}

// A library's cost per CTA (FittedRoofline::cta_ns) by hand: floor 5 us, 1 us a wave, 2 waves,
// compute 10 us and memory 20 us at efficiencies 0.5: 5 + 2 + max(20, 40) = 47 us. At 1,000
// CTAs and 50 ns a CTA the launch takes at least 50 us past the floor: 55 us; at 30 ns (30 us,
// under the 42 us it runs anyway) 47 us, the same as without one; an FP8 quantisation pass (4
// us at 0.5) comes on top either way. The decode family's launch counts its CTAs into the bounds.
TEST(Kernel, FittedRooflineCtaCostByHand) {
  KernelBounds kb;
  kb.compute_s = 10e-6;
  kb.memory_s = 20e-6;
  kb.waves = 2;
  kb.ctas = 1000;
  FittedRoofline p{5.0, 1.0, 0.5, 0.5};
  EXPECT_NEAR(fitted_roofline_s(kb, p), 47e-6, 1e-15);
  p.cta_ns = 50;
  EXPECT_NEAR(fitted_roofline_s(kb, p), 55e-6, 1e-15);
  p.cta_ns = 30;
  EXPECT_NEAR(fitted_roofline_s(kb, p), 47e-6, 1e-15);
  kb.quant_s = 2e-6;
  EXPECT_NEAR(fitted_roofline_s(kb, p), 51e-6, 1e-15);
  p.cta_ns = 50;
  EXPECT_NEAR(fitted_roofline_s(kb, p), 59e-6, 1e-15);
  // 2,048 sequences x 8 KV heads at one cached token: 16,384 CTAs (no split of one key).
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& h100 = reg.resolve("H100-SXM");
  const KernelQuery q = attention_decode_q(2048, 2, 32, 8, 128, DType::kBf16, DType::kBf16);
  EXPECT_EQ(kernel_bounds(q, h100, launch_info(q, h100)).ctas, 16384.0);
}

// The fitted roofline's compute of a fused MoE launch (KernelBounds::fitted_compute_s): the busiest
// SM's share of the CTAs, not a whole wave of slots. One token of Mixtral's layer at tp 8 (hidden
// 4,096, inter 14,336 / 8 = 1,792, top-2 of 8, balanced) on the A100-SXM4-80GB (108 SMs, BF16
// 312 TFLOP/s): each expert taken with probability 1/4, two M tiles of 16 rows in expectation,
// 2 x 3,584 / 128 = 56 CTAs, 2 x 16 x 6 x 4,096 x 1,792 = 1,409,286,144 padded FLOPs, charged x
// 108 / 56 (each CTA alone on its SM): 2,717,908,992 FLOPs, 8.7113 us. The network's compute_s
// charges a wave of twelve-plus CTAs an SM, at least twelve times more. 16,384 tokens (tp 1):
// 4,096 rows an expert, 8 x 32 = 256 M tiles of 128 x 224 N tiles = 57,344 CTAs, 531 on the
// busiest SM: 256 x 128 x 6 x 4,096 x 14,336 FLOPs x 108 x 531 / 57,344. A GEMM (one CTA an
// SM) is charged alike by both.
TEST(Kernel, MoeFittedComputeChargesTheBusiestSm) {
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& a100 = reg.resolve("A100-80GB-SXM");
  const KernelQuery one = moe_q(1, 4096, 14336, 2, 8, 8, 1, DType::kBf16);
  const LaunchInfo li = launch_info(one, a100);
  EXPECT_EQ(li.num_ctas, 56);
  const KernelBounds kb = kernel_bounds(one, a100, li);
  EXPECT_NEAR(kb.fitted_compute_s(), 2717908992.0 / 312e12, 1e-12);
  EXPECT_GT(kb.compute_s, 12 * kb.fitted_compute_s());
  const KernelQuery many = moe_q(16384, 4096, 14336, 2, 8, 1, 1, DType::kBf16);
  const LaunchInfo lm = launch_info(many, a100);
  EXPECT_EQ(lm.num_ctas, 57344);
  EXPECT_NEAR(kernel_bounds(many, a100, lm).fitted_compute_s(),
              256.0 * 128 * 6 * 4096 * 14336 * 108 * 531 / 57344 / 312e12, 1e-12);
  const KernelQuery g = gemm_q(4096, 4096, 4096, DType::kBf16);
  const KernelBounds gb = kernel_bounds(g, a100, launch_info(g, a100));
  EXPECT_EQ(gb.fit_compute_scale, 1.0);
  EXPECT_EQ(gb.fitted_compute_s(), gb.compute_s);
}

// A query's bounds on a GPU under its own launch, and a GPU of the bundled specs, for the MoE
// tests below.
static KernelBounds bounds_of(const KernelQuery& q, const GpuSpec& gpu) { return kernel_bounds(q, gpu, launch_info(q, gpu)); }
static const GpuSpec& test_gpu(const std::string& name) {
  static GpuRegistry reg(gpu_dir());
  return reg.resolve(name);
}

// A fitted roofline for the MoE tests below: a floor (microseconds or kilocycles) and the two
// efficiencies.
static FittedRoofline test_prior(double eta_compute, double eta_memory, double floor_us, double floor_kcycles = 0) {
  FittedRoofline p;
  p.floor_us = floor_us;
  p.floor_kcycles = floor_kcycles;
  p.eta_compute = eta_compute;
  p.eta_memory = eta_memory;
  return p;
}

// Fused MoE under expert parallelism on a Triton GPU (the L40S): the pass over the pairs routed to
// other ranks' experts is the fitted roofline's, in series after its roofline at the fitted DRAM
// efficiency. 16,384 tokens, top-8 of 128 experts, ep 128, balanced: 131,072 pairs, 1,024 of them
// on this rank's one expert, 130,048 elsewhere, each 2 bytes x (5 x 768 + 2 x 2,048) = 15,872
// bytes: 2,064,121,856 bytes. None at EP 1, none on the B200 (TRT-LLM's kernels), and the
// networks' base leaves it out.
TEST(Kernel, MoeOtherRanksPassInSeriesInTheFittedRoofline) {
  const GpuSpec& l40s = test_gpu("L40S");
  const KernelQuery ep = moe_q(16384, 2048, 768, 8, 128, 1, 128, DType::kBf16);
  const KernelBounds kb = bounds_of(ep, l40s);
  EXPECT_NEAR(kb.other_rank_s, 2064121856.0 / (l40s.mem_bw_gbps * 1e9), 1e-15);
  EXPECT_GT(kb.other_rank_s, kb.memory_s);  // the whole layer's rows against one expert's
  EXPECT_EQ(kb.base_s, std::max(kb.compute_s, kb.memory_s));
  const FittedRoofline p = test_prior(0.5, 0.6, 10);
  KernelBounds without = kb;
  without.other_rank_s = 0;
  EXPECT_NEAR(fitted_roofline_s(kb, p) - fitted_roofline_s(without, p), kb.other_rank_s / 0.6, 1e-12);
  const KernelQuery ep1 = moe_q(16384, 2048, 768, 8, 128, 1, 1, DType::kBf16);
  EXPECT_EQ(bounds_of(ep1, l40s).other_rank_s, 0);
  const GpuSpec& b200 = test_gpu("B200");
  EXPECT_EQ(bounds_of(ep, b200).other_rank_s, 0);
}

// A MoE layer timed alone reads its working set from the L2 where it fits: the fitted roofline
// (the networks' base) takes it at the L2's rate, the networks' memory input stays at DRAM
// bandwidth. One token of Qwen3-30B-A3B's layer (hidden 2,048, inter 768, top-8 of 128,
// balanced) hits 8 experts: 8 x 3 x 2,048 x 768 x 2 = 75,497,472 weight bytes, and 8 pairs x (2
// x 2,048 + 10 x 768 + 2 x 2,048) + 2 x 2,048 = 131,072 bytes of activations: 75,628,544 bytes,
// within the L40S's 96 MiB (100,663,296). From the L2 at 5,120 / 108 bytes per SM-cycle over
// 142 SMs at 2,520 MHz: 4.458 us, against 87.5 us at its 864 GB/s. Two tokens hit 16 experts
// (balanced on one rank, every pick a different expert), 151 MB: all from DRAM. Inside a model's step (sustained) the other
// layers have evicted it: DRAM. On the A100-SXM4-80GB (40 MiB) the one-token layer does not
// fit: DRAM.
TEST(Kernel, MoeWorkingSetThatFitsTheL2ReadFromIt) {
  const GpuSpec& l40s = test_gpu("L40S");
  KernelQuery one = moe_q(1, 2048, 768, 8, 128, 1, 1, DType::kBf16);
  const KernelBounds kb = bounds_of(one, l40s);
  EXPECT_NEAR(kb.memory_s, 75628544.0 / 864e9, 1e-15);
  EXPECT_NEAR(kb.fitted_memory_s(), 75628544.0 / (142 * 2520e6 * 5120.0 / 108.0), 1e-15);
  EXPECT_NEAR(kb.fitted_memory_s(), 4.458e-6, 1e-9);
  const FittedRoofline p = test_prior(10, 0.5, 20);
  ASSERT_LT(kb.fitted_compute_s() / 10, kb.fitted_memory_s() / 0.5);  // memory-bound
  KernelBounds dram = kb;
  dram.fit_memory_scale = 1;
  EXPECT_NEAR(fitted_roofline_s(dram, p) - fitted_roofline_s(kb, p), (87.533e-6 - 4.458e-6) / 0.5, 1e-8);
  const KernelQuery two = moe_q(2, 2048, 768, 8, 128, 1, 1, DType::kBf16);
  EXPECT_NEAR(moe_load(two).hit, 16, 1e-12);
  const KernelBounds kb2 = bounds_of(two, l40s);
  EXPECT_NEAR(kb2.memory_s, (16 * 9437184 + 16 * 15872 + 2 * 2 * 2048) / 864e9, 1e-15);
  EXPECT_EQ(kb2.fit_memory_scale, 1.0);
  EXPECT_EQ(bounds_of(one, test_gpu("A100-80GB-SXM")).fit_memory_scale, 1.0);
  one.sustained = true;
  EXPECT_EQ(bounds_of(one, l40s).fit_memory_scale, 1.0);
}

// Fused MoE on a Triton GPU (the L40S), ep 1: SiLU-mul and the top-k sum are kernels of their
// own, so the fitted roofline runs their bytes after the grouped GEMMs' roofline. 16,384 tokens,
// top-8 of 128 experts (hidden 2,048, inter 768), balanced: 131,072 pairs, each 2 bytes x (3 x
// 768 + 2,048), and the sum's output 2 bytes x 2,048 a token: 2 x (570,425,344 + 33,554,432) =
// 1,207,959,552 bytes. Where the GEMMs' compute bounds the launch the passes add their time at
// the fitted DRAM efficiency; where the bytes do, the forecast is memory_s's as before. None on
// the B200 (TRT-LLM's kernels), and the networks' base is unchanged.
TEST(Kernel, MoeSiluMulAndTopkSumInSeriesInTheFittedRoofline) {
  const GpuSpec& l40s = test_gpu("L40S");
  const KernelQuery q = moe_q(16384, 2048, 768, 8, 128, 1, 1, DType::kBf16);
  EXPECT_DOUBLE_EQ(moe_pass_bytes(q, l40s), 1207959552.0);
  const KernelBounds kb = bounds_of(q, l40s);
  EXPECT_NEAR(kb.series_pass_s, 1207959552.0 / (l40s.mem_bw_gbps * 1e9), 1e-15);
  EXPECT_LT(kb.series_pass_s, kb.memory_s);
  EXPECT_EQ(kb.base_s, std::max(kb.compute_s, kb.memory_s));
  KernelBounds without = kb;
  without.series_pass_s = 0;
  const FittedRoofline compute_bound = test_prior(0.05, 0.6, 10);
  ASSERT_GT(kb.fitted_compute_s() / 0.05, kb.memory_s / 0.6);
  EXPECT_NEAR(fitted_roofline_s(kb, compute_bound) - fitted_roofline_s(without, compute_bound), kb.series_pass_s / 0.6,
              1e-12);
  const FittedRoofline memory_bound = test_prior(10, 0.6, 10);
  ASSERT_LT(kb.fitted_compute_s() / 10, (kb.memory_s - kb.series_pass_s) / 0.6);
  EXPECT_NEAR(fitted_roofline_s(kb, memory_bound), fitted_roofline_s(without, memory_bound), 1e-12);
  const GpuSpec& b200 = test_gpu("B200");
  EXPECT_EQ(moe_pass_bytes(q, b200), 0);
  EXPECT_EQ(bounds_of(q, b200).series_pass_s, 0);
}

// FP8 experts on the B200: the activation (64 tokens x 7,168) is quantised per 1 x 128 group
// before the first GEMM, by a kernel of its own: 64 x 7,168 x 3 bytes (read BF16, write FP8) + a
// float scale per group, 64 x 56 x 4: 1,390,592 bytes in series, and a second launch paying the
// fitted floor again. Per-tensor FP8 reads the activation twice (absmax, then quantise): 5 bytes a
// value, two more launches. BF16 experts: neither. The networks' base is unchanged.
TEST(Kernel, MoeFp8ActivationQuantisedInSeries) {
  const GpuSpec& b200 = test_gpu("B200");
  const KernelQuery q = moe_q(64, 7168, 2048, 8, 256, 1, 1, DType::kFp8Block);
  const KernelBounds kb = bounds_of(q, b200);
  EXPECT_NEAR(kb.quant_s, 1390592.0 / (b200.mem_bw_gbps * 1e9), 1e-15);
  EXPECT_EQ(kb.launches, 2);
  EXPECT_EQ(kb.base_s, std::max(kb.compute_s, kb.memory_s));
  const FittedRoofline p = test_prior(0.5, 0.6, 0, 20);
  KernelBounds plain = kb;
  plain.quant_s = 0;
  plain.launches = 1;
  EXPECT_NEAR(fitted_roofline_s(kb, p) - fitted_roofline_s(plain, p),
              20e3 / (b200.boost_clock_mhz * 1e6) + kb.quant_s / 0.6, 1e-12);
  const KernelQuery per_tensor = moe_q(64, 7168, 2048, 8, 256, 1, 1, DType::kFp8);
  const KernelBounds pt = bounds_of(per_tensor, b200);
  EXPECT_NEAR(pt.quant_s, 64.0 * 7168 * 5 / (b200.mem_bw_gbps * 1e9), 1e-15);
  EXPECT_EQ(pt.launches, 3);
  const KernelQuery bf16 = moe_q(64, 7168, 2048, 8, 256, 1, 1, DType::kBf16);
  const KernelBounds b = bounds_of(bf16, b200);
  EXPECT_EQ(b.quant_s, 0);
  EXPECT_EQ(b.launches, 1);
}

// moe_gemm_composite: Mixtral's layer (hidden 4,096, inter 14,336, top-2 of 8) on 4,096 tokens,
// balanced: every expert hit (1 - (3/4)^4096 = 1 to double precision), 8,192 routed tokens, 1,024
// rows an expert. Hand-derived GEMMs: gate_up 1,024 x 4,096 -> 8 x 2 x 14,336 = 229,376 out,
// down 1,024 x 14,336 -> 8 x 4,096 = 32,768 out; their FLOPs, 2 x 1,024 x (4,096 x 229,376 +
// 14,336 x 32,768) = (32,768 + 16,384) x 4,096 x 14,336, equal the layer's 6 x 8,192 x 4,096 x
// 14,336. With tp 2 the inter width halves; the 4-bit weight formats have no GEMM twin.
TEST(Kernel, MoeAsTwoStackedGemms) {
  KernelQuery up, down;
  const KernelQuery mixtral = moe_q(4096, 4096, 14336, 2, 8, 1, 1, DType::kBf16);
  ASSERT_TRUE(moe_gemm_composite(mixtral, &up, &down));
  EXPECT_EQ(up.op, OpKind::kGemm);
  EXPECT_EQ(query_dims(up), (std::vector<int64_t>{1024, 4096, 229376}));
  EXPECT_EQ(query_dims(down), (std::vector<int64_t>{1024, 14336, 32768}));
  EXPECT_EQ(up.dtype, DType::kBf16);
  EXPECT_DOUBLE_EQ(query_flops(up) + query_flops(down), 6.0 * 8192 * 4096 * 14336);
  const KernelQuery tp2 = moe_q(4096, 4096, 14336, 2, 8, 2, 1, DType::kFp8Block);
  ASSERT_TRUE(moe_gemm_composite(tp2, &up, &down));
  EXPECT_EQ(query_dims(up), (std::vector<int64_t>{1024, 4096, 114688}));
  EXPECT_EQ(query_dims(down), (std::vector<int64_t>{1024, 7168, 32768}));
  EXPECT_EQ(down.dtype, DType::kFp8Block);
  // One token, top-2 of 8: two experts hit, one row each.
  ASSERT_TRUE(moe_gemm_composite(moe_q(1, 4096, 14336, 2, 8, 1, 1, DType::kBf16), &up, &down));
  EXPECT_EQ(query_dims(up), (std::vector<int64_t>{1, 4096, 57344}));
  EXPECT_FALSE(moe_gemm_composite(moe_q(64, 2048, 768, 8, 128, 1, 1, DType::kInt4), &up, &down));
  EXPECT_FALSE(moe_gemm_composite(moe_q(64, 2048, 768, 8, 128, 1, 1, DType::kMxfp4), &up, &down));
  EXPECT_FALSE(moe_gemm_composite(gemm_q(64, 2048, 768, DType::kBf16), &up, &down));
  // 4,096 experts of 16,384 x 16,384, about 3,500 of them hit by 1,000 tokens x top-8: each
  // expert's weights pass the layer's checks, the stacked gate_up's (16,384 in x ~3,500 x 2 x
  // 16,384 out, ~1.9e12 > 2^40) do not.
  const KernelQuery wide = moe_q(1000, 16384, 16384, 8, 4096, 1, 1, DType::kBf16);
  EXPECT_NO_THROW(validate_query(wide, "moe"));
  EXPECT_FALSE(moe_gemm_composite(wide, &up, &down));
}

// The rows a Triton or Marlin MoE rank moves for pairs routed to other ranks, hand-derived:
// 16,384 tokens x top-8 of 128 experts (4,096 hidden, 1,536 inter) at EP 128, balanced: rank 0's
// one expert takes 16,384 x 8 / 128 = 1,024 pairs, the other 130,048 pairs move 2 x (5 x 1,536
// + 2 x 4,096) = 31,744 BF16 bytes each (zero gate_up and down rows, SiLU-mul's read and write,
// the top-k sum's read): 4,128,243,712 bytes, 4.778 ms at the L40S's 864 GB/s, below which no
// forecast goes. TRT-LLM's kernels (the B200), EP 1 and a layer behind DeepEP's dispatch move
// none; at TP 2 the intermediate rows halve.
TEST(Kernel, MoeOtherRankRows) {
  static GpuRegistry reg(gpu_dir());
  const GpuSpec& l40s = reg.resolve("L40S");
  const GpuSpec& b200 = reg.resolve("B200");
  const KernelQuery ep128 = moe_q(16384, 4096, 1536, 8, 128, 1, 128, DType::kBf16);
  EXPECT_DOUBLE_EQ(moe_other_rank_bytes(ep128, l40s), 130048.0 * 31744);
  EXPECT_DOUBLE_EQ(moe_other_rank_bytes(ep128, b200), 0.0);
  EXPECT_DOUBLE_EQ(moe_other_rank_bytes(moe_q(16384, 4096, 1536, 8, 128, 1, 1, DType::kBf16), l40s), 0.0);
  KernelQuery dispatched = ep128;
  dispatched.moe_dispatched = true;
  EXPECT_DOUBLE_EQ(moe_other_rank_bytes(dispatched, l40s), 0.0);
  EXPECT_NE(query_key(dispatched), query_key(ep128));
  EXPECT_EQ(query_shape_string(dispatched), "16384,4096,1536,8,128,ep128,dispatched");
  EXPECT_DOUBLE_EQ(moe_other_rank_bytes(moe_q(16384, 4096, 1536, 8, 128, 2, 128, DType::kBf16), l40s),
                   130048.0 * 2 * (5 * 768 + 2 * 4096));
  // The weights' dtype does not change the BF16 intermediates (int4 runs Marlin's kernel).
  EXPECT_DOUBLE_EQ(moe_other_rank_bytes(moe_q(16384, 4096, 1536, 8, 128, 1, 128, DType::kInt4), l40s),
                   130048.0 * 31744);
  // The floor: the passes where they exceed the compute peak (1,024 pairs of 37.7 MFLOP each
  // take 0.107 ms at 362 TFLOP/s), the compute peak where there are none.
  EXPECT_NEAR(forecast_floor_s(ep128, l40s), 4128243712.0 / 864e9, 1e-12);
  EXPECT_LT(fastest_s(ep128, l40s), 2e-4);
  EXPECT_DOUBLE_EQ(forecast_floor_s(ep128, b200), fastest_s(ep128, b200));
  EXPECT_DOUBLE_EQ(forecast_floor_s(dispatched, l40s), fastest_s(dispatched, l40s));
  // The bound the network scales is the layer's own work, without the passes.
  EXPECT_LT(kernel_bounds(ep128, l40s, launch_info(ep128, l40s)).base_s, 1e-3);
  // Not the attention or GEMM families.
  EXPECT_DOUBLE_EQ(moe_other_rank_bytes(gemm_q(64, 4096, 4096, DType::kBf16), l40s), 0.0);
  EXPECT_DOUBLE_EQ(forecast_floor_s(gemm_q(64, 4096, 4096, DType::kBf16), l40s),
                   fastest_s(gemm_q(64, 4096, 4096, DType::kBf16), l40s));
}
