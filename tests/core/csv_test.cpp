#include "core/csv.h"

#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "test_util.h"

using namespace tilecast;

namespace {
std::string write_tmp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}
}  // namespace

TEST(Csv, ReadsQuotedFieldsWithCommasAndQuotes) {
  auto p = write_tmp("q.csv", "a,b,c\n1,\"x, y\",\"say \"\"hi\"\"\"\r\n\n2,,3\n");
  CsvReader r(p);
  ASSERT_EQ(r.header().size(), 3u);
  EXPECT_EQ(r.column("b"), 1);
  EXPECT_EQ(r.column("zz"), -1);
  std::vector<std::string> f;
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f[1], "x, y");
  EXPECT_EQ(f[2], "say \"hi\"");
  EXPECT_EQ(r.line(), 2);
  ASSERT_TRUE(r.next(f));  // blank line skipped
  EXPECT_EQ(f[0], "2");
  EXPECT_EQ(f[1], "");
  EXPECT_EQ(r.line(), 4);
  EXPECT_FALSE(r.next(f));
}

TEST(Csv, EscapeRoundTrip) {
  std::vector<std::string> fields = {"plain", "with,comma", "with \"quote\"", ""};
  auto p = write_tmp("rt.csv", "a,b,c,d\n" + csv_join(fields) + "\n");
  CsvReader r(p);
  std::vector<std::string> f;
  ASSERT_TRUE(r.next(f));
  EXPECT_EQ(f, fields);
}

TEST(Csv, TornRowNamesFileAndLine) {
  auto p = write_tmp("torn.csv", "a,b,c\n1,2,3\n4,5\n");
  CsvReader r(p);
  std::vector<std::string> f;
  ASSERT_TRUE(r.next(f));
  expect_error<DataError>([&] { r.next(f); }, {p + ":3", "expected 3 fields"});
}

TEST(Csv, UnterminatedQuoteIsAnError) {
  expect_error<DataError>(
      [&] {
        CsvReader r(data_path("bad/unterminated_quote.csv"));
        std::vector<std::string> f;
        while (r.next(f)) {
        }
      },
      {"unterminated_quote.csv:2", "unterminated"});
}

TEST(Csv, MissingAndEmptyFiles) {
  expect_error<DataError>([] { CsvReader r("/nonexistent/x.csv"); }, {"/nonexistent/x.csv", "cannot open"});
  expect_error<DataError>([] { CsvReader r(data_path("bad/empty.csv")); }, {"empty.csv", "empty"});
}

TEST(Csv, NumericFieldsAreStrict) {
  EXPECT_DOUBLE_EQ(parse_double_field("1.5", "f", 3, "Latency"), 1.5);
  EXPECT_EQ(parse_int_field("12", "f", 3, "B"), 12);
  EXPECT_EQ(parse_int_field("12.0", "f", 3, "B"), 12);
  expect_error<DataError>([] { parse_double_field("nan", "f.csv", 7, "Latency"); }, {"f.csv:7", "Latency", "non-finite"});
  expect_error<DataError>([] { parse_double_field("inf", "f.csv", 7, "Latency"); }, {"non-finite"});
  expect_error<DataError>([] { parse_double_field("1.5ms", "f.csv", 7, "Latency"); }, {"not a number"});
  expect_error<DataError>([] { parse_int_field("12.5", "f.csv", 9, "M"); }, {"f.csv:9", "'M'"});
  expect_error<DataError>([] { parse_int_field("", "f.csv", 9, "M"); }, {"not an integer"});
}
