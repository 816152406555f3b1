#include "core/csv.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

namespace tessel {
namespace {

TEST(Csv, QuotedFieldsAndLineNumbers) {
  auto t = CsvTable::Parse("a,b\n\"x, y\",2\n\"multi\nline\",3\n4,5\n", "t.csv");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->rows().size(), 3u);
  EXPECT_EQ(t->Get(t->rows()[0], "a"), "x, y");
  EXPECT_EQ(t->rows()[1].line, 3);
  EXPECT_EQ(t->rows()[2].line, 5);
}

TEST(Csv, TypedErrorsNameFileLineAndColumn) {
  auto t = CsvTable::Parse("gpus,name\n8,a\nmany,b\n", "jobs.csv");
  ASSERT_TRUE(t.ok());
  auto v = t->GetInt(t->rows()[1], "gpus");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().message(), "jobs.csv:3: gpus: expected an integer, got 'many'");
}

TEST(Csv, TooManyFieldsIsAnError) {
  auto t = CsvTable::Parse("a,b\n1,2,3\n", "x.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "x.csv:2: 3 fields, header has 2");
}

TEST(Csv, UnterminatedQuote) {
  auto t = CsvTable::Parse("a\n\"open\n", "q.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "q.csv:2: unterminated quoted field");
}

// Only regular files are read as input (issue 14): /dev/zero used to
// exhaust memory, a FIFO to block forever, a directory to fail parsing.
TEST(ReadTextFile, RefusesWhatIsNotARegularFile) {
  auto zero = ReadTextFile("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("not a regular file"), std::string::npos) << zero.status().message();
  std::string dir = std::filesystem::temp_directory_path().string();
  auto d = ReadTextFile(dir);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("is a directory"), std::string::npos);
  std::string fifo = dir + "/tessel_fifo_" + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = ReadTextFile(fifo);  // must not block
  std::filesystem::remove(fifo);
  ASSERT_FALSE(f.ok());
  auto missing = ReadTextFile(dir + "/no_such_file_here.csv");
  EXPECT_FALSE(missing.ok());
}


// An optional column absent from the header reads as empty, in every build
// type (issue 14: debug builds aborted on native traces without `app`).
TEST(Csv, MissingOptionalColumnReadsEmpty) {
  auto t = CsvTable::Parse("a,b\n1,2\n", "t.csv");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Get(t->rows()[0], "b"), "2");
  EXPECT_EQ(t->Get(t->rows()[0], "app"), "");
}

// A spreadsheet's UTF-8 byte order mark is not part of the first column's
// name (issue 14: it was printed invisibly inside the quoted header).
TEST(Csv, ByteOrderMarkIsSkipped) {
  auto t = CsvTable::Parse("\xEF\xBB\xBFjob_id,b\n1,2\n", "t.csv");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->header()[0], "job_id");
  EXPECT_TRUE(t->HasColumn("job_id"));
}

// Memory stays in proportion to the file: a row of more than
// kMaxCsvColumns fields is refused, naming its line.
TEST(Csv, RowWiderThanTheBoundIsRefused) {
  std::string wide = "a\n1\n" + std::string(kMaxCsvColumns + 5, ',') + "\n";
  auto t = CsvTable::Parse(wide, "wide.csv");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "wide.csv:3: more than 1024 fields in a row");
}

}  // namespace
}  // namespace tessel
