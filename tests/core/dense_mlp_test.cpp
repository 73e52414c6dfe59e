// The torch-free network (predictor/dense_mlp.h): file format round trip, malformed files
// as one-line errors, and the forward pass on a network small enough to compute by hand.
// cli.dense_mlp_plain_loops runs these again with TILECAST_BLAS=none (the path without BLAS).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/error.h"
#include "core/fs_util.h"
#include "predictor/dense_mlp.h"
#include "test_util.h"

using namespace tilecast;
using predictor::DenseLayer;
using predictor::DenseMlp;

namespace {

// 2 inputs -> 2 hidden (ReLU) -> 1 output, with standardisation.
DenseMlp tiny() {
  DenseMlp m;
  m.mean = {1.0f, -1.0f};
  m.inv_std = {0.5f, 2.0f};
  DenseLayer h;
  h.in = 2, h.out = 2;
  h.weight = {1.0f, 2.0f,    // hidden 0
              -3.0f, 1.0f};  // hidden 1
  h.bias = {0.5f, -0.25f};
  DenseLayer o;
  o.in = 2, o.out = 1;
  o.weight = {2.0f, -1.0f};
  o.bias = {0.125f};
  m.layers = {h, o};
  return m;
}

std::string tmp(const std::string& name) { return ::testing::TempDir() + name; }

}  // namespace

// x = (3, 0): standardised (1, 2); hidden = relu(1 + 4 + 0.5, -3 + 2 - 0.25) = (5.5, 0);
// out = 11 + 0.125. x = (1, -2): (0, -2); hidden = relu(-4 + 0.5, -2 - 0.25) = (0, 0); out 0.125.
// x = (-1, -1): (-1, 0); hidden = relu(-0.5, 3 - 0.25) = (0, 2.75); out = -2.75 + 0.125.
TEST(DenseMlp, ForwardMatchesHandComputedValues) {
  const DenseMlp m = tiny();
  const float x[] = {3, 0, 1, -2, -1, -1};
  float out[3];
  m.forward(x, 3, out);
  EXPECT_FLOAT_EQ(out[0], 11.125f);
  EXPECT_FLOAT_EQ(out[1], 0.125f);
  EXPECT_FLOAT_EQ(out[2], -2.625f);
  EXPECT_EQ(m.layer_widths(), (std::vector<int64_t>{2, 2, 1}));
}

// More rows than one block (2048): every row still gets its own value.
TEST(DenseMlp, ForwardOverManyBlocks) {
  const DenseMlp m = tiny();
  const size_t rows = 5000;
  std::vector<float> x(rows * 2), out(rows);
  for (size_t r = 0; r < rows; ++r) x[2 * r] = 3.0f + static_cast<float>(r % 7), x[2 * r + 1] = 0;
  m.forward(x.data(), rows, out.data());
  // x0 = 3 + j: standardised (1 + j/2, 2); hidden 0 = 1 + j/2 + 4 + 0.5, hidden 1 = relu(-3 - 1.5 j - 0.25) = 0.
  for (size_t r = 0; r < rows; ++r) EXPECT_FLOAT_EQ(out[r], 2.0f * (5.5f + 0.5f * (r % 7)) + 0.125f) << r;
}

// A block of at most 4 rows runs one matrix-vector product per row (sgemv), a larger one a
// matrix product (sgemm): a network of 16 hidden units gives each row the same value, to float
// rounding, whether it comes alone, among 4 or among 5.
TEST(DenseMlp, FewRowsAndManyRowsAgree) {
  DenseMlp m;
  m.mean.assign(7, 0.5f);
  m.inv_std.assign(7, 2.0f);
  DenseLayer h, o;
  h.in = 7, h.out = 16, o.in = 16, o.out = 1;
  for (int i = 0; i < 7 * 16; ++i) h.weight.push_back(0.1f * static_cast<float>((i * 37) % 19) - 0.9f);
  for (int i = 0; i < 16; ++i) h.bias.push_back(0.05f * static_cast<float>(i % 5) - 0.1f);
  for (int i = 0; i < 16; ++i) o.weight.push_back(0.2f * static_cast<float>((i * 11) % 7) - 0.6f);
  o.bias = {0.3f};
  m.layers = {h, o};
  std::vector<float> x(5 * 7);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * static_cast<float>((i * 13) % 11) - 1.0f;
  float five[5], four[4], one;
  m.forward(x.data(), 5, five);
  m.forward(x.data(), 4, four);
  for (int r = 0; r < 5; ++r) {
    m.forward(x.data() + 7 * r, 1, &one);
    EXPECT_NEAR(one, five[r], 1e-5f * std::max(1.0f, std::fabs(five[r]))) << r;
    if (r < 4) EXPECT_NEAR(four[r], five[r], 1e-5f * std::max(1.0f, std::fabs(five[r]))) << r;
  }
  EXPECT_NE(five[0], five[1]);  // the rows differ: the check compares something
}

// The fixture tests/data/tiny.tcmlp was written by hand (Python struct) from the layout in
// dense_mlp.h: the reader and the writer agree with that description, not only with each other.
TEST(DenseMlp, ReadsAFileWrittenFromTheDocumentedLayout) {
  EXPECT_EQ(DenseMlp::load(data_path("tiny.tcmlp")).serialise(), tiny().serialise());
}

TEST(DenseMlp, ReportsWhatRunsTheForwardPass) {
  const char* env = std::getenv("TILECAST_BLAS");
  if (env && std::string(env) == "none") EXPECT_EQ(predictor::blas_name().rfind("none", 0), 0u);
  else EXPECT_FALSE(predictor::blas_name().empty());
}

TEST(DenseMlp, SaveLoadRoundTripIsExact) {
  const DenseMlp m = tiny();
  m.save(tmp("tiny.tcmlp"));
  const DenseMlp back = DenseMlp::load(tmp("tiny.tcmlp"));
  EXPECT_EQ(back.serialise(), m.serialise());
  EXPECT_EQ(back.layers[0].weight, m.layers[0].weight);
  EXPECT_EQ(back.mean, m.mean);
  // 8 magic + 4 count + 3 widths x 4 + 2 x 2 standardisation + (4 + 2) + (2 + 1) floats.
  EXPECT_EQ(read_file(tmp("tiny.tcmlp")).size(), 8u + 4 + 12 + 4 * (4 + 6 + 3));
}

TEST(DenseMlp, MalformedFilesAreOneLineErrorsNamingTheFile) {
  const std::string good = tiny().serialise();
  auto write = [](const std::string& name, const std::string& bytes) {
    std::ofstream(tmp(name), std::ios::binary) << bytes;
    return tmp(name);
  };
  expect_error<ConfigError>([&] { DenseMlp::load(tmp("absent.tcmlp")); }, {"absent.tcmlp"});
  expect_error<ConfigError>([&] { DenseMlp::load(write("t.tcmlp", good.substr(0, good.size() - 3))); },
                            {"t.tcmlp", "truncated"});
  expect_error<ConfigError>([&] { DenseMlp::load(write("x.tcmlp", good + "x")); }, {"x.tcmlp", "trailing bytes"});
  std::string magic = good;
  magic[0] = 'P';
  expect_error<ConfigError>([&] { DenseMlp::load(write("m.tcmlp", magic)); }, {"m.tcmlp", "bad magic"});
  std::string widths = good;
  const uint32_t huge = 1u << 30;
  std::memcpy(&widths[12], &huge, 4);  // first width
  expect_error<ConfigError>([&] { DenseMlp::load(write("w.tcmlp", widths)); }, {"w.tcmlp", "absurd layer width"});
  std::string nan = good;
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&nan[nan.size() - 4], &qnan, 4);  // the last bias
  expect_error<ConfigError>([&] { DenseMlp::load(write("n.tcmlp", nan)); }, {"n.tcmlp", "non-finite"});
  std::string two_out = good;
  const uint32_t two = 2;
  std::memcpy(&two_out[20], &two, 4);  // last width
  expect_error<ConfigError>([&] { DenseMlp::load(write("o.tcmlp", two_out)); }, {"o.tcmlp", "1 expected"});
}
