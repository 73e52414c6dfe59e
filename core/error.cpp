#include "core/error.h"

namespace tilecast {

std::string where(const std::string& file, long line) {
  return line >= 0 ? file + ":" + std::to_string(line) : file;
}

}  // namespace tilecast
