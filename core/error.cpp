#include "core/error.h"

#include <cstdio>

namespace tilecast {

std::string where(const std::string& file, long line) {
  return line >= 0 ? file + ":" + std::to_string(line) : file;
}

std::string g_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

}  // namespace tilecast
