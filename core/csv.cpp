#include "core/csv.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/fs_util.h"

namespace tilecast {

CsvReader::CsvReader(const std::string& path) : path_(path) {
  check_readable_file(path);
  in_.open(path, std::ios::binary);
  if (!in_) throw DataError(path + ": cannot open file");
  if (!read_record(header_) || header_.empty() || (header_.size() == 1 && header_[0].empty()))
    throw DataError(path + ": empty file (no CSV header)");
  for (size_t i = 0; i < header_.size(); ++i) {
    // Tolerate a UTF-8 BOM and surrounding spaces in header names.
    std::string name = header_[i];
    if (i == 0 && name.rfind("\xEF\xBB\xBF", 0) == 0) name = name.substr(3);
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    while (!name.empty() && name.back() == ' ') name.pop_back();
    header_[i] = name;
    if (index_.count(name)) throw DataError(where(path, 1) + ": duplicate column '" + name + "'");
    index_[name] = static_cast<int>(i);
  }
}

int CsvReader::column(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? -1 : it->second;
}

bool CsvReader::read_record(std::vector<std::string>& fields) {
  fields.clear();
  std::string line;
  if (!std::getline(in_, line)) return false;
  ++line_;
  record_line_ = line_;
  std::string field;
  bool in_quotes = false;
  for (;;) {
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (in_quotes) {
        if (c == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            ++i;
          } else {
            in_quotes = false;
          }
        } else {
          field += c;
        }
      } else if (c == '"') {
        in_quotes = true;
      } else if (c == ',') {
        fields.push_back(std::move(field));
        field.clear();
      } else if (c == '\r' && i + 1 == line.size()) {
        // CRLF line ending
      } else {
        field += c;
      }
    }
    if (!in_quotes) break;
    // Quoted field spanning lines.
    if (!std::getline(in_, line))
      throw DataError(where(path_, record_line_) + ": unterminated quoted field (truncated file?)");
    ++line_;
    field += '\n';
  }
  fields.push_back(std::move(field));
  return true;
}

bool CsvReader::next(std::vector<std::string>& fields) {
  for (;;) {
    if (!read_record(fields)) return false;
    if (fields.size() == 1 && fields[0].empty()) continue;  // blank line
    if (fields.size() != header_.size())
      throw DataError(where(path_, record_line_) + ": expected " +
                      std::to_string(header_.size()) + " fields, found " +
                      std::to_string(fields.size()) + " (truncated or malformed row)");
    return true;
  }
}

std::string csv_escape(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_join(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csv_escape(fields[i]);
  }
  return out;
}

double parse_double_field(const std::string& text, const std::string& path, long line,
                          const std::string& column) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  while (end && *end == ' ') ++end;
  if (text.empty() || end == s || *end != '\0' || errno == ERANGE)
    throw DataError(where(path, line) + ": column '" + column + "': not a number: '" + text + "'");
  if (!std::isfinite(v))
    throw DataError(where(path, line) + ": column '" + column + "': non-finite value '" + text +
                    "'");
  return v;
}

long long parse_int_field(const std::string& text, const std::string& path, long line,
                          const std::string& column) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  // Accept "12.0" as written by pandas for integer columns.
  if (end && *end == '.') {
    char* frac_end = end + 1;
    while (*frac_end == '0') ++frac_end;
    if (*frac_end == '\0') end = frac_end;
  }
  if (text.empty() || end == s || *end != '\0' || errno == ERANGE)
    throw DataError(where(path, line) + ": column '" + column + "': not an integer: '" + text +
                    "'");
  return v;
}

}  // namespace tilecast
