#include "cluster/hostlist.h"

#include <gtest/gtest.h>

#include <ostream>

#include "core/strings.h"

namespace tessel {
namespace {

struct ExpandCase {
  const char* name;
  const char* expression;
  const char* hosts;  // space-separated
};

// gtest (and CTest's test names) print a case as its expression.
void PrintTo(const ExpandCase& c, std::ostream* os) { *os << "'" << c.expression << "'"; }

class SlurmHostlistExpand : public ::testing::TestWithParam<ExpandCase> {};

TEST_P(SlurmHostlistExpand, Expands) {
  const ExpandCase& c = GetParam();
  auto hosts = ExpandHostlist(c.expression);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(Join(*hosts, " "), c.hosts);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SlurmHostlistExpand,
    ::testing::Values(ExpandCase{"Empty", "", ""}, ExpandCase{"Null", "(null)", ""},
                      ExpandCase{"Single", "n1", "n1"},
                      ExpandCase{"PlainList", "n1,gpu-7,x.y", "n1 gpu-7 x.y"},
                      ExpandCase{"Range", "n[1-3]", "n1 n2 n3"},
                      ExpandCase{"RangesAndSingles", "n[1-3,5]", "n1 n2 n3 n5"},
                      ExpandCase{"SquueueStyle", "n[1-2]", "n1 n2"},
                      ExpandCase{"ZeroPadding", "node[08-11]", "node08 node09 node10 node11"},
                      ExpandCase{"PaddingGrowsPastWidth", "n[8-10]", "n8 n9 n10"},
                      ExpandCase{"SuffixAfterBracket", "rack[1-2]-gpu", "rack1-gpu rack2-gpu"},
                      ExpandCase{"TwoGroupsMultiply", "r[1-2]n[1,3]", "r1n1 r1n3 r2n1 r2n3"},
                      ExpandCase{"SeveralTerms", "a[1-2],b,c[5]", "a1 a2 b c5"},
                      ExpandCase{"CommaInsideBracketsOnly", "n[1,3],m[2-3]", "n1 n3 m2 m3"},
                      ExpandCase{"DuplicatesKept", "n1,n[1-2]", "n1 n1 n2"}),
    [](const ::testing::TestParamInfo<ExpandCase>& info) { return info.param.name; });

struct ErrorCase {
  const char* name;
  const char* expression;
  const char* message;
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << "'" << c.expression << "'"; }

class SlurmHostlistError : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(SlurmHostlistError, IsInvalidArgument) {
  const ErrorCase& c = GetParam();
  auto hosts = ExpandHostlist(c.expression);
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hosts.status().message(), c.message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SlurmHostlistError,
    ::testing::Values(
        ErrorCase{"Unclosed", "n[1-3", "hostlist 'n[1-3': '[' is not closed"},
        ErrorCase{"StrayClose", "n1]", "hostlist 'n1]': ']' at position 2 has no '['"},
        ErrorCase{"Nested", "n[[1]]", "hostlist 'n[[1]]': nested '[' at position 2"},
        ErrorCase{"Backwards", "n[5-3]", "hostlist 'n[5-3]': range '5-3' runs backwards"},
        ErrorCase{"NotANumber", "n[a-b]",
                  "hostlist 'n[a-b]': 'a-b' at position 2 is not a number or range lo-hi"},
        ErrorCase{"EmptyGroupItem", "n[1,]",
                  "hostlist 'n[1,]': '' at position 4 is not a number or range lo-hi"},
        ErrorCase{"EmptyTerm", "n1,,n2", "hostlist 'n1,,n2': empty host name at position 3"},
        ErrorCase{"Whitespace", "n1, n2", "hostlist 'n1, n2': whitespace at position 3"},
        ErrorCase{"TooMany", "n[0-99999999]", "hostlist 'n[0-99999999]': more than 1000000 hosts"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

}  // namespace
}  // namespace tessel
