#include "core/csv.h"

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

}  // namespace
}  // namespace tessel
