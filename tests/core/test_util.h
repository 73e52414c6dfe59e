#pragma once
#include <gtest/gtest.h>

#include "core/kernel_dataset.h"

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

// Expects `fn` to throw exception type E whose message contains every `needle`.
template <typename E>
void expect_error(const std::function<void()>& fn, std::initializer_list<std::string> needles) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "message: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "error must be one line: " << msg;
  }
}

// Tests that read NeuSight's shared data skip only on a machine without any shared folder.
// Where ../shared sits beside the source tree (CI) or TILECAST_NEUSIGHT_DIR is set, data
// that cannot be found is a failure, not a silent skip.
inline bool shared_data_expected() {
  const char* env = std::getenv("TILECAST_NEUSIGHT_DIR");
  return (env && *env) || std::filesystem::is_directory(std::string(TILECAST_SOURCE_DIR) + "/../shared");
}
#define TC_REQUIRE_NEUSIGHT(root)                                                            \
  do {                                                                                       \
    if (!::tilecast::neusight_dir_present(root)) {                                           \
      if (shared_data_expected()) FAIL() << "NeuSight data expected but not found at " << (root); \
      GTEST_SKIP() << "NeuSight data not found at " << (root) << " (set TILECAST_NEUSIGHT_DIR)"; \
    }                                                                                        \
  } while (0)

inline std::string data_path(const std::string& rel) { return std::string(TILECAST_TEST_DATA) + "/" + rel; }
inline std::string gpu_dir() { return std::string(TILECAST_SOURCE_DIR) + "/configs/gpus"; }
