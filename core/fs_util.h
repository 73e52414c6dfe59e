#pragma once
// Files that are never half-written, outputs that never overwrite inputs, folder locks and
// checksums. Every file tilecast writes goes through AtomicFile / write_file_atomic.
#include <cstdio>
#include <string>
#include <vector>

namespace tilecast {

// Writes to a temp file in the target's folder; commit() checks every write, flushes,
// fsyncs, closes and renames over `path`. Destroyed without commit() (an exception, a
// failed write), the temp file is removed and `path` is untouched. A write error (disk
// full, file size limit) throws RuntimeError naming `path`.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const std::string& data);
  void commit();
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const std::string& what);
  std::string path_, tmp_;
  std::FILE* fp_ = nullptr;
};

void write_file_atomic(const std::string& path, const std::string& content);
// Reads a whole regular file; DataError for a missing file, a folder, or a read error.
std::string read_file(const std::string& path);
// Throws DataError "<path>: is a folder, expected a file" / "cannot open file".
void check_readable_file(const std::string& path);

// True when `inner` is `outer` or lies inside it (after resolving symlinks and ..).
bool same_or_inside(const std::string& inner, const std::string& outer);
// Refuses (ConfigError) an output path equal to an input, or inside an input folder, before
// anything is written. `flag` names the option, e.g. "--out".
void check_output_not_input(const std::string& out, const std::vector<std::string>& inputs,
                            const std::string& flag);

// An exclusive advisory lock (flock) on `lock_path`, held until destruction (or process
// death, including kill -9). Throws ConfigError "<what> is in use by another tilecast
// process (pid N)" when another process holds it.
class FileLock {
 public:
  FileLock(const std::string& lock_path, const std::string& what);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// Lower-case hex SHA-256 (OpenSSL) of a file's bytes / of a string.
std::string sha256_file(const std::string& path);
std::string sha256_hex(const std::string& data);

// Flushes stdout (C and C++ streams); throws RuntimeError when the data did not reach it
// (e.g. `> /dev/full`, a closed pipe).
void flush_stdout_checked();

}  // namespace tilecast
