#include "policy/lp.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessel {
namespace {

struct OptimalCase {
  std::string name;
  LinearProgram::Sense sense;
  // Variables: (lo, hi, objective).
  std::vector<std::tuple<double, double, double>> vars;
  // Constraints: (terms, lo, hi).
  std::vector<std::tuple<std::vector<LpTerm>, double, double>> rows;
  double objective;
  std::vector<double> values;
};

class LpOptimalTest : public ::testing::TestWithParam<OptimalCase> {};

TEST_P(LpOptimalTest, SolvesExactly) {
  const OptimalCase& c = GetParam();
  LinearProgram lp(c.sense);
  for (const auto& [lo, hi, obj] : c.vars) lp.AddVariable(lo, hi, obj);
  for (const auto& [terms, lo, hi] : c.rows) lp.AddConstraint(terms, lo, hi);
  Status s = lp.Solve();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NEAR(lp.objective_value(), c.objective, 1e-9);
  ASSERT_EQ(lp.values().size(), c.values.size());
  for (size_t i = 0; i < c.values.size(); ++i) EXPECT_NEAR(lp.value(static_cast<int>(i)), c.values[i], 1e-9) << i;
}

INSTANTIATE_TEST_SUITE_P(
    Lp, LpOptimalTest,
    ::testing::Values(
        // The textbook product-mix LP: max 3x + 5y, x <= 4, 2y <= 12,
        // 3x + 2y <= 18 -> x = 2, y = 6, 36.
        OptimalCase{"ProductMix",
                    LinearProgram::kMaximize,
                    {{0, kLpInfinity, 3}, {0, kLpInfinity, 5}},
                    {{{{0, 1}}, -kLpInfinity, 4}, {{{1, 2}}, -kLpInfinity, 12}, {{{0, 3}, {1, 2}}, -kLpInfinity, 18}},
                    36,
                    {2, 6}},
        // min x + y with x + 2y >= 4, 3x + y >= 6 -> x = 1.6, y = 1.2.
        OptimalCase{"Diet",
                    LinearProgram::kMinimize,
                    {{0, kLpInfinity, 1}, {0, kLpInfinity, 1}},
                    {{{{0, 1}, {1, 2}}, 4, kLpInfinity}, {{{0, 3}, {1, 1}}, 6, kLpInfinity}},
                    2.8,
                    {1.6, 1.2}},
        // Bounds only, one variable fixed: max x + y, x in [-1, 2], y = 3.
        OptimalCase{"BoundsAndFixed",
                    LinearProgram::kMaximize,
                    {{-1, 2, 1}, {3, 3, 1}},
                    {{{{0, 1}, {1, 1}}, -kLpInfinity, 10}},
                    5,
                    {2, 3}},
        // Equality row and a free variable: min y with x - y = -2, x = 1
        // (range 1..1) -> y = 3.
        OptimalCase{"EqualityAndFree",
                    LinearProgram::kMinimize,
                    {{-kLpInfinity, kLpInfinity, 0}, {-kLpInfinity, kLpInfinity, 1}},
                    {{{{0, 1}, {1, -1}}, -2, -2}, {{{0, 1}}, 1, 1}},
                    3,
                    {1, 3}}),
    [](const ::testing::TestParamInfo<OptimalCase>& info) { return info.param.name; });

struct FailureCase {
  std::string name;
  LinearProgram::Sense sense;
  std::vector<std::tuple<double, double, double>> vars;
  std::vector<std::tuple<std::vector<LpTerm>, double, double>> rows;
  std::string message_prefix;
};

class LpFailureTest : public ::testing::TestWithParam<FailureCase> {};

TEST_P(LpFailureTest, ReportsWhy) {
  const FailureCase& c = GetParam();
  LinearProgram lp(c.sense);
  for (const auto& [lo, hi, obj] : c.vars) lp.AddVariable(lo, hi, obj);
  for (const auto& [terms, lo, hi] : c.rows) lp.AddConstraint(terms, lo, hi);
  Status s = lp.Solve();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(s.message().rfind(c.message_prefix, 0), 0u) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Lp, LpFailureTest,
    ::testing::Values(
        // x + y <= 1 and x + y >= 2.
        FailureCase{"Infeasible",
                    LinearProgram::kMaximize,
                    {{0, kLpInfinity, 1}, {0, kLpInfinity, 1}},
                    {{{{0, 1}, {1, 1}}, -kLpInfinity, 1}, {{{0, 1}, {1, 1}}, 2, kLpInfinity}},
                    "infeasible"},
        // max x + y with only x - y <= 1.
        FailureCase{"Unbounded",
                    LinearProgram::kMaximize,
                    {{0, kLpInfinity, 1}, {0, kLpInfinity, 1}},
                    {{{{0, 1}, {1, -1}}, -kLpInfinity, 1}},
                    "unbounded"},
        // min x with x free and x <= 5.
        FailureCase{"UnboundedBelow",
                    LinearProgram::kMinimize,
                    {{-kLpInfinity, kLpInfinity, 1}},
                    {{{{0, 1}}, -kLpInfinity, 5}},
                    "unbounded"}),
    [](const ::testing::TestParamInfo<FailureCase>& info) { return info.param.name; });

TEST(LpTest, ResolvesAfterChangingObjectiveAndBounds) {
  // max x + y, x + y <= 4, x <= 3 -> 4; then max x, y >= 2 -> x = 2.
  LinearProgram lp(LinearProgram::kMaximize);
  int x = lp.AddVariable(0, 3, 1);
  int y = lp.AddVariable(0, kLpInfinity, 1);
  lp.AddConstraint({{x, 1}, {y, 1}}, -kLpInfinity, 4);
  ASSERT_TRUE(lp.Solve().ok());
  EXPECT_NEAR(lp.objective_value(), 4, 1e-9);
  lp.SetObjective(y, 0);
  lp.SetVariableBounds(y, 2, kLpInfinity);
  ASSERT_TRUE(lp.Solve().ok());
  EXPECT_NEAR(lp.value(x), 2, 1e-9);
  EXPECT_NEAR(lp.value(y), 2, 1e-9);
  // And to minimisation.
  lp.SetSense(LinearProgram::kMinimize);
  ASSERT_TRUE(lp.Solve().ok());
  EXPECT_NEAR(lp.value(x), 0, 1e-9);
}

TEST(LpTest, SameProblemSameSolution) {
  auto solve = [] {
    // A degenerate LP with many optima: max x0 + x1 + x2, sum <= 1.
    LinearProgram lp(LinearProgram::kMaximize);
    for (int i = 0; i < 3; ++i) lp.AddVariable(0, 1, 1);
    lp.AddConstraint({{0, 1}, {1, 1}, {2, 1}}, -kLpInfinity, 1);
    EXPECT_TRUE(lp.Solve().ok());
    return lp.values();
  };
  EXPECT_EQ(solve(), solve());
}

TEST(LpTest, MovesOwnership) {
  LinearProgram a(LinearProgram::kMaximize);
  a.AddVariable(0, 2, 1);
  LinearProgram b = std::move(a);
  ASSERT_TRUE(b.Solve().ok());
  EXPECT_NEAR(b.value(0), 2, 1e-12);
  EXPECT_EQ(b.num_variables(), 1);
}

}  // namespace

// A 0-1 knapsack solved as a MIP: optimal without limits; with a node
// budget the search stops deterministically (same answer every time).
TEST(LinearProgramMip, KnapsackAndNodeBudget) {
  auto build = [](int node_limit) {
    LinearProgram lp(LinearProgram::kMaximize);
    std::vector<LpTerm> weight;
    for (int i = 0; i < 24; ++i) {
      int x = lp.AddVariable(0, 1, 10.0 + (i * 7) % 13);
      lp.SetInteger(x);
      weight.push_back({x, 3.0 + (i * 5) % 11});
    }
    lp.AddConstraint(weight, -kLpInfinity, 40.5);
    if (node_limit > 0) lp.SetMipNodeLimit(node_limit);
    return lp;
  };
  LinearProgram exact = build(0);
  ASSERT_TRUE(exact.Solve().ok());
  EXPECT_FALSE(exact.mip_hit_limit());
  for (double v : exact.values()) EXPECT_TRUE(v == 0.0 || v == 1.0) << v;
  double best = exact.objective_value();
  std::vector<double> first;
  for (int run = 0; run < 2; ++run) {
    LinearProgram limited = build(2);
    Status s = limited.Solve();
    if (s.ok()) {
      EXPECT_LE(limited.objective_value(), best + 1e-9);
      if (run == 0) first = limited.values();
      else EXPECT_EQ(limited.values(), first);
    }
  }
}

}  // namespace tessel
