#pragma once
#include <gtest/gtest.h>

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

inline std::string data_path(const std::string& rel) { return std::string(TILECAST_TEST_DATA) + "/" + rel; }
inline std::string gpu_dir() { return std::string(TILECAST_SOURCE_DIR) + "/configs/gpus"; }
