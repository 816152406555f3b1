#include "policy/corrected_throughput.h"

#include <gtest/gtest.h>

#include "policy/policy_test_util.h"

namespace tessel {
namespace {

TEST(CorrectedThroughput, ScalesOnlyTheMeasuredJobOnTheMeasuredType) {
  testing::PolicyFixture f("demo");
  EstimatorThroughput base(f.cluster(), PlanMode::kBest);
  CorrectedThroughput belief(base);
  JobSpec a = testing::MakeJob("a").Model("gpt3-1.3b").Gpus(8).spec();
  JobSpec b = testing::MakeJob("b").Model("gpt3-1.3b").Gpus(8).spec();
  int h100 = f.Type("h100-sxm"), a100 = f.Type("a100-80g");
  double est = base.Rate(a, h100, 8, 1).iteration_time_s;
  ASSERT_GT(est, 0);
  belief.SetFactor("a", h100, 1.5);
  EXPECT_DOUBLE_EQ(belief.Rate(a, h100, 8, 1).iteration_time_s, 1.5 * est);
  EXPECT_DOUBLE_EQ(belief.Rate(a, h100, 8, 1).samples_per_s, base.Rate(a, h100, 8, 1).samples_per_s / 1.5);
  EXPECT_DOUBLE_EQ(belief.Rate(b, h100, 8, 1).iteration_time_s, est) << "another job keeps the estimate";
  EXPECT_DOUBLE_EQ(belief.Rate(a, a100, 8, 1).iteration_time_s, base.Rate(a, a100, 8, 1).iteration_time_s)
      << "another type keeps the estimate";
  EXPECT_DOUBLE_EQ(belief.PlanSet(a, h100, 8, 1, 2).front().iteration_time_s,
                   1.5 * base.PlanSet(a, h100, 8, 1, 2).front().iteration_time_s);
  belief.SetFactor("a", h100, 0.5);
  EXPECT_DOUBLE_EQ(belief.Rate(a, h100, 8, 1).iteration_time_s, 0.5 * est) << "a new factor is a new answer";
  belief.Forget("a");
  EXPECT_DOUBLE_EQ(belief.Rate(a, h100, 8, 1).iteration_time_s, est);
  EXPECT_DOUBLE_EQ(belief.Factor("a", h100), 1.0);
}

}  // namespace
}  // namespace tessel
