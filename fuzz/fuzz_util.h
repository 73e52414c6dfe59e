#pragma once
// Shared by the libFuzzer targets: the parsers read files, so each input is written to a
// per-process temp file first. A parser may reject input only with tilecast::Error (the
// one-line error the CLI prints); any other exception, a crash or a sanitizer report is a
// finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/error.h"

namespace tilecast::fuzz {

inline std::string write_input(const uint8_t* data, size_t size, const char* ext) {
  const std::string path = "/tmp/tilecast-fuzz-" + std::to_string(::getpid()) + ext;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

template <typename Fn>
void expect_only_tilecast_errors(Fn&& fn) {
  try {
    fn();
  } catch (const tilecast::Error&) {
    // rejected with a one-line error: fine
  }
}

}  // namespace tilecast::fuzz
