#pragma once
// RFC-4180 CSV reading/writing with file:line error messages.
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace tilecast {

class CsvReader {
 public:
  // Opens `path` and reads the header; throws DataError if missing or empty.
  explicit CsvReader(const std::string& path);
  const std::vector<std::string>& header() const { return header_; }
  // Column index of `name`, or -1.
  int column(const std::string& name) const;
  // Reads the next record into `fields`; false at end of file. Throws DataError on a
  // torn record (unterminated quote) or a field count that differs from the header.
  bool next(std::vector<std::string>& fields);
  // Line number (1-based) where the last record returned by next() started.
  long line() const { return record_line_; }
  const std::string& path() const { return path_; }

 private:
  bool read_record(std::vector<std::string>& fields);
  std::string path_;
  std::ifstream in_;
  std::vector<std::string> header_;
  std::unordered_map<std::string, int> index_;
  long line_ = 0, record_line_ = 0;
};

// Quotes a field if it contains a comma, quote, CR or LF.
std::string csv_escape(const std::string& field);
std::string csv_join(const std::vector<std::string>& fields);

// Strict numeric parsing for data fields; the error names file:line and the column.
double parse_double_field(const std::string& text, const std::string& path, long line,
                          const std::string& column);
long long parse_int_field(const std::string& text, const std::string& path, long line,
                          const std::string& column);

}  // namespace tilecast
