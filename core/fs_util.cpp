#include "core/fs_util.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "core/error.h"

namespace fs = std::filesystem;

namespace tilecast {
namespace {

std::string errno_text(int e) { return e ? std::string(std::strerror(e)) : std::string("unknown error"); }

std::string temp_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const fs::path p(path);
  return (p.parent_path() / ("." + p.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                             std::to_string(counter++)))
      .string();
}

std::string canonical_or_lexical(const std::string& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) abs = p;
  fs::path c = fs::weakly_canonical(abs, ec);
  if (ec) c = abs.lexically_normal();
  std::string s = c.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  if (fs::is_directory(path_, ec)) throw ConfigError(path_ + ": is a folder, expected a file name");
  const fs::path parent = fs::path(path_).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw ConfigError(path_ + ": folder '" + parent.string() + "' does not exist");
  tmp_ = temp_name(path_);
  fp_ = std::fopen(tmp_.c_str(), "wb");
  if (!fp_) throw RuntimeError(path_ + ": cannot write: " + errno_text(errno));
}

AtomicFile::~AtomicFile() {
  if (fp_) {
    std::fclose(fp_);
    std::remove(tmp_.c_str());
  }
}

void AtomicFile::fail(const std::string& what) {
  const int e = errno;
  if (fp_) {
    std::fclose(fp_);
    fp_ = nullptr;
  }
  std::remove(tmp_.c_str());
  throw RuntimeError(path_ + ": " + what + ": " + errno_text(e) + " (nothing written)");
}

void AtomicFile::write(const std::string& data) {
  TC_CHECK(fp_ != nullptr, "write after commit");
  errno = 0;
  if (!data.empty() && std::fwrite(data.data(), 1, data.size(), fp_) != data.size()) fail("write failed");
}

void AtomicFile::commit() {
  TC_CHECK(fp_ != nullptr, "commit twice");
  errno = 0;
  if (std::fflush(fp_) != 0 || std::ferror(fp_)) fail("write failed");
  if (::fsync(::fileno(fp_)) != 0) fail("fsync failed");
  std::FILE* fp = fp_;
  fp_ = nullptr;
  if (std::fclose(fp) != 0) {
    std::remove(tmp_.c_str());
    throw RuntimeError(path_ + ": close failed: " + errno_text(errno) + " (nothing written)");
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp_.c_str());
    throw RuntimeError(path_ + ": cannot replace: " + errno_text(e));
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  AtomicFile f(path);
  f.write(content);
  f.commit();
}

void check_readable_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw DataError(path + ": is a folder, expected a file");
  if (!fs::exists(path, ec)) throw DataError(path + ": cannot open file (not found)");
}

std::string read_file(const std::string& path) {
  check_readable_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open file: " + errno_text(errno));
  // One read of the whole size, then whatever a growing file added since.
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  std::string data(ec ? 0 : static_cast<size_t>(size), '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(in.gcount()));
  if (in.bad()) throw DataError(path + ": read error");
  if (!in.eof()) {
    in.clear();
    data.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) throw DataError(path + ": read error");
  }
  return data;
}

bool same_or_inside(const std::string& inner, const std::string& outer) {
  const std::string a = canonical_or_lexical(inner), b = canonical_or_lexical(outer);
  if (a == b) return true;
  return a.size() > b.size() && a.compare(0, b.size(), b) == 0 && (b == "/" || a[b.size()] == '/');
}

void check_output_not_input(const std::string& out, const std::vector<std::string>& inputs,
                            const std::string& flag) {
  for (const auto& in : inputs) {
    std::error_code ec;
    const bool in_is_dir = fs::is_directory(in, ec);
    if (canonical_or_lexical(out) == canonical_or_lexical(in) || (in_is_dir && same_or_inside(out, in)))
      throw ConfigError(flag + " '" + out + "': would overwrite the input '" + in +
                        "' (choose an output outside the inputs)");
  }
}

FileLock::FileLock(const std::string& lock_path, const std::string& what) {
  fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw RuntimeError(lock_path + ": cannot create lock file: " + errno_text(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char buf[32] = {0};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    std::string pid = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    ::close(fd_);
    fd_ = -1;
    throw ConfigError(what + " is in use by another tilecast process (pid " + pid + "; lock " + lock_path + ")");
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] ssize_t w = ::pwrite(fd_, me.data(), me.size(), 0);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

namespace {
std::string hex(const unsigned char* d, unsigned n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; ++i) {
    s += digits[d[i] >> 4];
    s += digits[d[i] & 15];
  }
  return s;
}
struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
}  // namespace

std::string sha256_hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  if (EVP_Digest(data.data(), data.size(), md, &n, EVP_sha256(), nullptr) != 1)
    throw RuntimeError("sha256: OpenSSL digest failed");
  return hex(md, n);
}

std::string sha256_file(const std::string& path) {
  check_readable_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open file");
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw RuntimeError("sha256: OpenSSL digest failed");
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw DataError(path + ": read error");
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  return hex(md, n);
}

void flush_stdout_checked() {
  errno = 0;
  std::cout.flush();
  int e = errno;
  const bool c_ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (!e) e = errno;
  if (!std::cout.good() || !c_ok)
    throw RuntimeError("stdout: write failed" + (e ? ": " + errno_text(e) : std::string()) + " (output incomplete)");
}

}  // namespace tilecast
