#include "core/gpu_spec.h"

#include <cmath>
#include <map>

#include "core/error.h"
#include "test_util.h"

using namespace tilecast;

namespace {
// A spec file of `text` under the test's temp folder; its path.
std::string write(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  return path;
}
// Whether a sheet's sources cite `field` (a source line starting with the field's name).
bool cited(const GpuSpec& g, const std::string& field) {
  for (const auto& src : g.sources)
    if (src.rfind(field, 0) == 0) return true;
  return false;
}
}  // namespace

TEST(GpuSpec, BundledSpecsLoadAndCoverTheRequiredGpus) {
  GpuRegistry reg(gpu_dir());
  EXPECT_GE(reg.all().size(), 20u);
  for (const char* name : {"P4", "P100-PCIE-16GB", "V100-PCIE-32GB", "T4", "A100-PCIE-40GB",
                           "A100-SXM4-40GB", "A100-80GB-PCIe", "A100-80GB-SXM", "L4", "A10", "L40S",
                           "RTX-4090", "H100-PCIe", "H100-SXM", "H200", "B200", "MI100", "MI210",
                           "MI250", "MI300X"}) {
    const GpuSpec* s = reg.find(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_FALSE(s->sources.empty()) << name;
    // FP32 peak must agree with SMs x cores x 2 x clock within 3 % (a self-consistency check
    // of the numbers we typed in from datasheets).
    double derived = s->num_sms * s->cores_per_sm * 2.0 * s->boost_clock_mhz / 1000.0;
    EXPECT_NEAR(s->fp32_peak_gflops / derived, 1.0, 0.03) << name;
  }
  // Every NVIDIA sheet states its compute capability (the attention library and the twin rule
  // read it), consistent with its architecture's CUDA major version.
  const std::map<std::string, std::pair<double, double>> major = {
      {"pascal", {6, 7}}, {"volta", {7, 7.5}}, {"turing", {7.5, 8}}, {"ampere", {8, 8.9}},
      {"ada", {8.9, 9}}, {"hopper", {9, 10}}, {"blackwell", {10, 13}}};
  for (const auto& s : reg.all())
    if (s.vendor == "nvidia") {
      ASSERT_TRUE(major.count(s.arch)) << s.name << " " << s.arch;
      EXPECT_GE(s.compute_capability, major.at(s.arch).first) << s.name;
      EXPECT_LT(s.compute_capability, major.at(s.arch).second) << s.name;
    }
}

TEST(GpuSpec, CorrectsNeuSightDeviations) {
  GpuRegistry reg(gpu_dir());
  EXPECT_EQ(reg.resolve("P4").num_sms, 20);    // NeuSight: 40
  EXPECT_EQ(reg.resolve("L4").num_sms, 58);    // NeuSight: 60
  EXPECT_EQ(reg.resolve("H100-SXM").mem_bw_gbps, 3352);  // NeuSight: 3430
}

TEST(GpuSpec, ResolvesEveryNameForm) {
  GpuRegistry reg(gpu_dir());
  EXPECT_EQ(reg.resolve("H100-SXM").name, "H100-SXM");
  EXPECT_EQ(reg.resolve("h100").name, "H100-SXM");
  EXPECT_EQ(reg.resolve("NVIDIA H100 80GB HBM3").name, "H100-SXM");
  EXPECT_EQ(reg.resolve("NVIDIA_H100_80GB_HBM3").name, "H100-SXM");  // NeuSight file stem
  EXPECT_EQ(reg.resolve("Tesla_P4").name, "P4");
  // A vendor-form device name the driver does not report (B300's is "NVIDIA B300 SXM6 AC"):
  // the name or alias behind "NVIDIA", whole; a longer board name stays unknown.
  EXPECT_EQ(reg.resolve("NVIDIA B300").name, "B300");
  EXPECT_EQ(reg.resolve("NVIDIA H200 SXM").name, "H200");
  EXPECT_EQ(reg.resolve("NVIDIA GB200 NVL72").name, "GB200");
  EXPECT_EQ(reg.find("NVIDIA H100 NVL"), nullptr);
  EXPECT_EQ(reg.find("NVIDIA"), nullptr);
  EXPECT_EQ(reg.resolve(gpu_dir() + "/L4.yaml").cuda_name, "NVIDIA L4");
  const GpuSpec& js = reg.resolve(data_path("neusight_device.json"));
  EXPECT_EQ(js.cuda_name, "Tesla T4");
  EXPECT_EQ(js.num_sms, 40);
  EXPECT_EQ(js.max_threads_per_sm, 1024);  // inherited from our T4 spec
}

TEST(GpuSpec, UnknownGpuListsCloseNames) {
  GpuRegistry reg(gpu_dir());
  expect_error<ConfigError>([&] { reg.resolve("H10"); }, {"unknown GPU 'H10'", "closest", "H100"});
}

TEST(GpuSpec, BadFilesGiveOneLineErrorsNamingTheField) {
  expect_error<ConfigError>([] { load_gpu_yaml(data_path("gpus_bad/unknown_key.yaml")); },
                            {"unknown_key.yaml", "unknown field 'bandwidth'"});
  expect_error<ConfigError>([] { load_gpu_yaml(data_path("gpus_bad/negative_sms.yaml")); },
                            {"negative_sms.yaml", "num_sms"});
  expect_error<ConfigError>([] { load_gpu_yaml(data_path("gpus_bad/malformed.yaml")); },
                            {"malformed.yaml", "malformed YAML"});
  expect_error<ConfigError>([] { load_gpu_yaml("/nonexistent.yaml"); }, {"cannot open"});
}

TEST(GpuSpec, YamlRoundTrip) {
  GpuRegistry reg(gpu_dir());
  const GpuSpec& h = reg.resolve("H100-SXM");
  std::string path = ::testing::TempDir() + "H100-roundtrip.yaml";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::string y = gpu_spec_to_yaml(h);
    std::fwrite(y.data(), 1, y.size(), f);
    std::fclose(f);
  }
  GpuSpec back = load_gpu_yaml(path);
  EXPECT_EQ(back.cuda_name, h.cuda_name);
  EXPECT_EQ(back.num_sms, h.num_sms);
  EXPECT_DOUBLE_EQ(back.mem_bw_gbps, h.mem_bw_gbps);
  EXPECT_EQ(back.tensor_peak_gflops, h.tensor_peak_gflops);
  EXPECT_EQ(back.tile_reference, h.tile_reference);
  EXPECT_EQ(back.warp_schedulers_per_sm, 4);
  EXPECT_EQ(back.dispatch_per_scheduler, 1);
  EXPECT_DOUBLE_EQ(back.compute_clock_mhz, 1830);
  EXPECT_EQ(back.interconnect, "nvlink");
  EXPECT_EQ(back.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(back.network_gbps, 50);
}

// Memory: the sheets' "80 GB" is binary (CUDA reports an "80 GB" H100 as 81,559 MiB), stated as
// mem_gib; a file may state decimal mem_gb instead (converted), never both, never neither.
TEST(GpuSpec, MemoryIsStatedInGibOrGbOnce) {
  GpuRegistry reg(gpu_dir());
  EXPECT_DOUBLE_EQ(reg.resolve("H100-SXM").mem_bytes(), 85899345920.0);
  EXPECT_DOUBLE_EQ(reg.resolve("H200").mem_gib, 141);
  // The bundled sheets all state GiB with a source line for it.
  for (const auto& g : reg.all()) EXPECT_TRUE(cited(g, "mem_gib")) << g.origin << ": mem_gib without a source";
  // NeuSight's device JSON states the T4's 15 GiB (ECC on) as "Dev_Mem": 15; our T4 sheet states
  // its 16 GiB with in-band ECC, which leaves 15/16 of it: the same bytes.
  const GpuSpec& t4_json = reg.resolve(data_path("neusight_device.json"));
  EXPECT_DOUBLE_EQ(t4_json.mem_gib, 15);
  EXPECT_FALSE(t4_json.inband_ecc);  // a JSON states what CUDA reports: not inherited
  EXPECT_TRUE(reg.resolve("T4").inband_ecc);
  EXPECT_DOUBLE_EQ(reg.resolve("T4").mem_bytes(), t4_json.mem_bytes());
  EXPECT_DOUBLE_EQ(reg.resolve("L40S").mem_bytes(), 45.0 * 1073741824.0);
  for (const char* hbm : {"H100-SXM", "A100-80GB-SXM", "B200", "MI300X", "V100-PCIE-32GB"})
    EXPECT_FALSE(reg.resolve(hbm).inband_ecc) << hbm;
  for (const auto& g : reg.all())
    if (g.inband_ecc) EXPECT_TRUE(cited(g, "inband_ecc")) << g.origin << ": inband_ecc without a source";
  EXPECT_TRUE(load_gpu_yaml(write("l40s-roundtrip.yaml", gpu_spec_to_yaml(reg.resolve("L40S")))).inband_ecc);
  const std::string base = gpu_spec_to_yaml(reg.resolve("T4"));
  const size_t at = base.find("mem_gib: 16");
  ASSERT_NE(at, std::string::npos) << base;
  std::string decimal = base;
  decimal.replace(at, 11, "mem_gb: 16");
  EXPECT_DOUBLE_EQ(load_gpu_yaml(write("t4-decimal.yaml", decimal)).mem_bytes(), 16e9 * 15 / 16);  // ECC's 1/16 off
  std::string both = base;
  both.replace(at, 11, "mem_gib: 16\nmem_gb: 16");
  expect_error<ConfigError>([&] { load_gpu_yaml(write("t4-both.yaml", both)); },
                            {"t4-both.yaml", "'mem_gib' and 'mem_gb' both given"});
  std::string none = base;
  none.erase(at, 12);
  expect_error<ConfigError>([&] { load_gpu_yaml(write("t4-none.yaml", none)); },
                            {"t4-none.yaml", "missing field 'mem_gib'"});
  std::string tiny = base;
  tiny.replace(at, 11, "mem_gb: 0.1");
  expect_error<ConfigError>([&] { load_gpu_yaml(write("t4-tiny.yaml", tiny)); }, {"t4-tiny.yaml", "mem_gb"});
}

// The node an NVLink domain joins and the network beyond it: stated where the vendor's reference
// system states them (HGX/DGX boards of 8, NVL72 racks of 72); a network without a node size
// and a node size out of range are one line naming the field.
TEST(GpuSpec, NodeAndNetworkFields) {
  GpuRegistry reg(gpu_dir());
  EXPECT_EQ(reg.resolve("GB200").gpus_per_node, 72);
  EXPECT_EQ(reg.resolve("B200").gpus_per_node, 8);
  EXPECT_EQ(reg.resolve("L40S").gpus_per_node, 0);  // PCIe cards: not stated
  for (const auto& g : reg.all())
    if (g.gpus_per_node > 0) {
      EXPECT_TRUE(cited(g, "gpus_per_node")) << g.origin << ": gpus_per_node without a source";
    }
  std::string y = gpu_spec_to_yaml(reg.resolve("H100-SXM"));
  std::string no_node = y;
  no_node.replace(no_node.find("gpus_per_node: 8\n"), 17, "");
  const std::string p1 = write("net-no-node.yaml", no_node);
  expect_error<ConfigError>([&] { load_gpu_yaml(p1); }, {"net-no-node.yaml", "'network_gbps' needs 'gpus_per_node'"});
  std::string zero = y;
  zero.replace(zero.find("gpus_per_node: 8"), 16, "gpus_per_node: -8");
  const std::string p2 = write("node-negative.yaml", zero);
  expect_error<ConfigError>([&] { load_gpu_yaml(p2); }, {"node-negative.yaml", "gpus_per_node"});
}

// The special-function units' exponentials per SM and clock: 16 unless a sheet states otherwise
// (Blackwell Ultra's 32, with a source); written back by gpu_spec_to_yaml; inherited by a NeuSight
// JSON of a known GPU; out of range one line naming the field.
TEST(GpuSpec, ExponentialRate) {
  GpuRegistry reg(gpu_dir());
  for (const char* g : {"A100-SXM4-40GB", "L40S", "H100-SXM", "B200", "MI250"})
    EXPECT_DOUBLE_EQ(reg.resolve(g).exp_per_sm_clock(), 16) << g;
  for (const char* g : {"B300", "GB300"}) {
    EXPECT_DOUBLE_EQ(reg.resolve(g).exp_per_sm_clock(), 32) << g;
    EXPECT_TRUE(cited(reg.resolve(g), "sfu_exp_per_sm_clock")) << g;
  }
  const std::string y = gpu_spec_to_yaml(reg.resolve("B300"));
  EXPECT_EQ(load_gpu_yaml(write("b300-roundtrip.yaml", y)).sfu_exp_per_sm_clock, 32);
  std::string bad = y;
  bad.replace(bad.find("sfu_exp_per_sm_clock: 32"), 24, "sfu_exp_per_sm_clock: 0.5");
  expect_error<ConfigError>([&] { load_gpu_yaml(write("b300-half.yaml", bad)); },
                            {"b300-half.yaml", "sfu_exp_per_sm_clock"});
  bad.replace(bad.find("sfu_exp_per_sm_clock: 0.5"), 25, "sfu_exp_per_sm_clock: 4096");
  expect_error<ConfigError>([&] { load_gpu_yaml(write("b300-many.yaml", bad)); },
                            {"b300-many.yaml", "sfu_exp_per_sm_clock"});
}

// The link collectives are costed over: stated in every bundled sheet, as its source says;
// xGMI counts as a direct link; a sheet that does not say reads a bandwidth above PCIe 5.0
// x16's as NVLink; any other value is one line naming the field.
TEST(GpuSpec, InterconnectLinkFromTheSheet) {
  GpuRegistry reg(gpu_dir());
  for (const auto& g : reg.all()) EXPECT_FALSE(g.interconnect.empty()) << g.origin;
  for (const char* name : {"H100-SXM", "H200", "B200", "A100-SXM4-40GB", "MI250"})
    EXPECT_EQ(reg.resolve(name).interconnect_link(), "nvlink") << name;
  for (const char* name : {"H100-PCIe", "L40S", "RTX-4090", "A100-PCIE-40GB", "RTX-PRO-6000-Server"})
    EXPECT_EQ(reg.resolve(name).interconnect_link(), "pcie") << name;
  GpuSpec unstated = reg.resolve("H100-SXM");
  unstated.interconnect.clear();
  EXPECT_EQ(unstated.interconnect_link(), "nvlink");  // 450 GB/s
  unstated.interconnect_gbps = 64;
  EXPECT_EQ(unstated.interconnect_link(), "pcie");
  const std::string path = ::testing::TempDir() + "bad-link.yaml";
  {
    std::string y = gpu_spec_to_yaml(reg.resolve("L40S"));
    y.replace(y.find("interconnect: pcie"), 18, "interconnect: infiniband");
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fwrite(y.data(), 1, y.size(), f);
    std::fclose(f);
  }
  expect_error<ConfigError>([&] { load_gpu_yaml(path); }, {"bad-link.yaml", "field 'interconnect'", "infiniband"});
}

// A mesh's links (interconnect_mesh_peers): cited in each sheet that states them, round-tripped
// through the YAML writer, and refused without a link bandwidth or out of range.
TEST(GpuSpec, InterconnectMeshPeers) {
  GpuRegistry reg(gpu_dir());
  EXPECT_EQ(reg.resolve("MI300X").interconnect_mesh_peers, 7);
  EXPECT_EQ(reg.resolve("MI100").interconnect_mesh_peers, 3);
  EXPECT_EQ(reg.resolve("H100-SXM").interconnect_mesh_peers, 0);
  for (const auto& g : reg.all())
    if (g.interconnect_mesh_peers > 0) {
      EXPECT_TRUE(cited(g, "interconnect_mesh_peers")) << g.origin << ": interconnect_mesh_peers without a source";
    }
  const GpuSpec& mi = reg.resolve("MI300X");
  EXPECT_EQ(mi.collective_gbps(8), 7 * 64.0);
  EXPECT_EQ(mi.collective_gbps(4), 3 * 64.0);
  EXPECT_EQ(mi.collective_gbps(2), 64.0);
  EXPECT_EQ(mi.collective_gbps(9), 64.0);  // beyond the mesh: one link
  const std::string y = gpu_spec_to_yaml(mi);
  EXPECT_EQ(load_gpu_yaml(write("mesh-roundtrip.yaml", y)).interconnect_mesh_peers, 7);
  std::string no_link = y;
  no_link.replace(no_link.find("interconnect_gbps: 64\n"), 22, "");
  expect_error<ConfigError>([&] { load_gpu_yaml(write("mesh-no-link.yaml", no_link)); },
                            {"mesh-no-link.yaml", "'interconnect_mesh_peers' needs 'interconnect_gbps'"});
  std::string bad = y;
  bad.replace(bad.find("interconnect_mesh_peers: 7"), 26, "interconnect_mesh_peers: 0.5");
  expect_error<ConfigError>([&] { load_gpu_yaml(write("mesh-bad.yaml", bad)); }, {"mesh-bad.yaml", "interconnect_mesh_peers"});
}

// Issue-bound FP32 SGEMM rate, hand-derived from the whitepapers' SM layouts: 16 FP32 lanes
// per scheduler (Volta, Turing, GA100) or Pascal's two dispatch units leave issue slots for the
// 4 LDS.128 beside the 64 FFMA of a K step; 32 lanes fed by one dispatch (GA10x, Ada, Hopper,
// Blackwell) reach 64 / 68 of peak.
TEST(GpuSpec, Fp32IssueFractionFollowsTheSmLayout) {
  GpuRegistry reg(gpu_dir());
  for (const char* name : {"P4", "P100-PCIE-16GB", "V100-PCIE-32GB", "T4", "A100-PCIE-40GB", "A100-80GB-PCIe"})
    EXPECT_DOUBLE_EQ(reg.resolve(name).fp32_issue_fraction(), 1.0) << name;
  for (const char* name : {"A10", "A40", "L4", "L40S", "RTX-4090", "H100-SXM", "H100-PCIe", "B200"})
    EXPECT_NEAR(reg.resolve(name).fp32_issue_fraction(), 64.0 / 68.0, 1e-12) << name;
  for (const char* name : {"MI100", "MI250"}) EXPECT_DOUBLE_EQ(reg.resolve(name).fp32_issue_fraction(), 1.0) << name;
  const GpuSpec& l4 = reg.resolve("L4");
  EXPECT_NEAR(l4.fp32_simt_gemm_gflops(), 30286 * 64.0 / 68.0, 1e-6);
  EXPECT_DOUBLE_EQ(l4.fp32_gemm_peak_gflops(), 30286);  // the roofline keeps the spec sheet's peak
  // A NeuSight JSON inherits the layout of the GPU it names.
  GpuSpec js = reg.resolve(data_path("neusight_device.json"));
  EXPECT_EQ(js.warp_schedulers_per_sm, 4);
  EXPECT_DOUBLE_EQ(js.fp32_issue_fraction(), 1.0);
}

// Twins share the SM design (major compute capability, SM count) and the memory system (DRAM
// bandwidth within 10 %), whatever the board or revision; numbers from the bundled sheets.
// Hopper's sheets state their dense tensor peaks at a lower clock than their FP32 peak: the
// H100 SM does 4,096 dense FP16 FLOP per clock (four tensor cores x 512 FMA, the whitepaper),
// so 989.4 TFLOPS over 132 SMs is 1,830 MHz, where 67 TFLOPS over 132 x 128 lanes is 1,980.
// The sheets of the GPUs without the field state both at the boost clock (a power-of-two
// FLOP per SM per clock at it). Hand-derived: the H100's SIMT SGEMM rate from its SMs, lanes
// and the two clocks, independent of its fp32_peak_gflops field.
TEST(GpuSpec, ComputeClockIsTheClockTheSheetRatesTensorPeaksAt) {
  GpuRegistry reg(gpu_dir());
  for (const char* name : {"H100-SXM", "H200", "H800", "H100-PCIe"}) {
    const GpuSpec& g = reg.resolve(name);
    ASSERT_GT(g.compute_clock_mhz, 0) << name;
    EXPECT_LT(g.compute_clock_mhz, g.boost_clock_mhz) << name;
    EXPECT_NEAR(g.tensor_peak_gflops.at("bf16") * 1e3 / (g.num_sms * g.compute_clock_mhz), 4096, 4096 * 0.002) << name;
    EXPECT_TRUE(cited(g, "compute_clock_mhz")) << name;
  }
  const std::map<std::string, double> flop_per_sm_clock = {
      {"V100-PCIE-32GB", 1024}, {"T4", 1024}, {"A100-PCIE-40GB", 2048}, {"A100-80GB-PCIe", 2048},
      {"A10", 1024}, {"A40", 1024}, {"L4", 1024}, {"L40S", 1024}};
  for (const auto& [name, rate] : flop_per_sm_clock) {
    const GpuSpec& g = reg.resolve(name);
    EXPECT_EQ(g.compute_clock_mhz, 0) << name;
    EXPECT_DOUBLE_EQ(g.compute_clock_fraction(), 1.0) << name;
    EXPECT_NEAR(g.tensor_peak_gflops.at("fp16") * 1e3 / (g.num_sms * g.boost_clock_mhz), rate, rate * 0.015) << name;
  }
  const GpuSpec& h100 = reg.resolve("H100-SXM");
  EXPECT_NEAR(h100.compute_clock_fraction(), 1830.0 / 1980.0, 1e-12);
  EXPECT_NEAR(h100.fp32_simt_gemm_gflops(), 132 * 128 * 2 * 1.830 * 64.0 / 68.0, 1.0);
  EXPECT_DOUBLE_EQ(h100.fp32_gemm_peak_gflops(), 66908);  // the plain roofline keeps the sheet's peak
  // NeuSight's H100 JSON (the same 1,980 MHz) inherits it; one stating another clock does not.
  const std::string json = R"({"Device":"NVIDIA H100 80GB HBM3","Dev_Mem":80,"Mem_Bw":3430,"Num_Sm":132,)"
                           R"("Core_Per_SM":128,"Freq":1980,"SingleFLOPs":66908,"L2Cache":50})";
  EXPECT_DOUBLE_EQ(reg.resolve(write("h100-neusight.json", json)).compute_clock_mhz, 1830);
  std::string slower = json;
  slower.replace(slower.find("\"Freq\":1980"), 11, "\"Freq\":1755");
  EXPECT_EQ(reg.resolve(write("h100-other-clock.json", slower)).compute_clock_mhz, 0);
  // Above the boost clock: one line naming the file and the field.
  std::string y = gpu_spec_to_yaml(h100);
  y.replace(y.find("compute_clock_mhz: 1830"), 23, "compute_clock_mhz: 2100");
  expect_error<ConfigError>([&] { load_gpu_yaml(write("h100-fast-clock.yaml", y)); },
                            {"h100-fast-clock.yaml", "compute_clock_mhz", "2100"});
}

// A measured sustained clock (scripts/measure-sustained.py) is a spec field a lab adds to its
// own GPU's YAML: none of the bundled specs states one, so a model's step runs at the rated
// clock (Hopper) or the boost clock; stated, it is the step's clock, written back by
// gpu_spec_to_yaml, and above the boost clock or at 0 MHz it is one line naming the field.
TEST(GpuSpec, SustainedClockIsMeasuredNotStated) {
  GpuRegistry reg(gpu_dir());
  for (const GpuSpec& g : reg.all()) {
    EXPECT_EQ(g.sustained_clock_mhz, 0) << g.name;
    EXPECT_DOUBLE_EQ(g.sustained_clock_fraction(), g.compute_clock_fraction()) << g.name;
  }
  std::string y = gpu_spec_to_yaml(reg.resolve("H200"));
  y += "sustained_clock_mhz: 1450\n";
  const GpuSpec measured = load_gpu_yaml(write("h200-measured.yaml", y));
  EXPECT_DOUBLE_EQ(measured.sustained_clock_fraction(), 1450.0 / 1980.0);
  EXPECT_DOUBLE_EQ(measured.compute_clock_fraction(), 1830.0 / 1980.0);  // the sheet's rating stays
  EXPECT_NE(gpu_spec_to_yaml(measured).find("sustained_clock_mhz: 1450"), std::string::npos);
  std::string fast = y;
  fast.replace(fast.find("sustained_clock_mhz: 1450"), 25, "sustained_clock_mhz: 2100");
  expect_error<ConfigError>([&] { load_gpu_yaml(write("h200-fast.yaml", fast)); },
                            {"h200-fast.yaml", "sustained_clock_mhz", "2100"});
  std::string negative = y;
  negative.replace(negative.find("sustained_clock_mhz: 1450"), 25, "sustained_clock_mhz: -5");
  expect_error<ConfigError>([&] { load_gpu_yaml(write("h200-neg.yaml", negative)); }, {"h200-neg.yaml", "sustained_clock_mhz"});
}

TEST(GpuSpec, TwinsShareTheDieAndTheMemorySystem) {
  GpuRegistry reg(gpu_dir());
  auto twins = [&](const char* a, const char* b) { return gpu_twins(reg.resolve(a), reg.resolve(b)); };
  EXPECT_TRUE(twins("B200", "GB200"));                    // 10.0, 148 SMs, 8 TB/s each
  EXPECT_TRUE(twins("A100-80GB-SXM", "A100-80GB-PCIe"));  // 2,039 vs 1,935 GB/s: 5 %
  EXPECT_TRUE(twins("GB200", "B200"));
  EXPECT_FALSE(twins("L40S", "RTX-4090"));                // 8.9 both, but 142 vs 128 SMs, 864 vs 1,008 GB/s
  EXPECT_FALSE(twins("A100-80GB-SXM", "A100-SXM4-40GB")); // 2,039 vs 1,555 GB/s
  EXPECT_FALSE(twins("H100-SXM", "H200"));                // 3,350 vs 4,800 GB/s
  EXPECT_TRUE(twins("B200", "B300"));                     // 10.0 vs 10.3: one generation, 148 SMs, 8 TB/s
  EXPECT_TRUE(twins("GB300", "B200"));
  EXPECT_FALSE(twins("B200", "RTX-PRO-6000-Server"));     // 10.0 vs 12.0 (and 148 vs 188 SMs)
  EXPECT_FALSE(twins("MI210", "B200"));
  EXPECT_TRUE(twins("A800-80GB-SXM", "A100-80GB-SXM"));   // the export part: same GA100 and HBM, narrower NVLink
  EXPECT_TRUE(twins("H800", "H100-SXM"));
  EXPECT_FALSE(twins("RTX-A6000", "A40"));                // the same 84-SM GA102, but 768 vs 696 GB/s: 10.3 %
  // Only the major compute capability must agree: the same B200 sheet at 10.3 is a twin, at
  // 12.0 (another SM design) or 9.0 not.
  GpuSpec rev = reg.resolve("B200");
  rev.compute_capability = 10.3;
  EXPECT_TRUE(gpu_twins(rev, reg.resolve("B200")));
  rev.compute_capability = 12.0;
  EXPECT_FALSE(gpu_twins(rev, reg.resolve("B200")));
  rev.compute_capability = 9.0;
  EXPECT_FALSE(gpu_twins(reg.resolve("B200"), rev));
  GpuSpec unstated = reg.resolve("B200");
  unstated.compute_capability = 0;  // a sheet that does not say: never a twin
  EXPECT_FALSE(gpu_twins(unstated, unstated));
}

TEST(GpuSpec, WarpSchedulersMustDivideTheLanes) {
  GpuRegistry reg(gpu_dir());
  std::string y = gpu_spec_to_yaml(reg.resolve("L4"));
  const std::string from = "warp_schedulers_per_sm: 4";
  ASSERT_NE(y.find(from), std::string::npos);
  y.replace(y.find(from), from.size(), "warp_schedulers_per_sm: 3");
  const std::string path = ::testing::TempDir() + "L4-bad-schedulers.yaml";
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fwrite(y.data(), 1, y.size(), f);
  std::fclose(f);
  expect_error<ConfigError>([&] { load_gpu_yaml(path); },
                            {"L4-bad-schedulers.yaml", "warp_schedulers_per_sm", "does not divide cores_per_sm (128)"});
}
