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

ParallelPlan Pipeline(int pp, int micro_batch) {
  ParallelPlan p;
  p.pp = pp;
  p.micro_batch = micro_batch;
  p.num_micro_batches = 8;
  return p;
}

// Each level of the precedence, set from the bottom up and unset from the
// top down: exactly this plan > its pipeline depth's profile > the type's
// latest measurement > 1.
TEST(CorrectedThroughput, FactorPrecedencePlanThenDepthThenTypeThenEstimate) {
  testing::PolicyFixture f("demo");
  EstimatorThroughput base(f.cluster(), PlanMode::kBest);
  CorrectedThroughput belief(base);
  int h100 = f.Type("h100-sxm"), a100 = f.Type("a100-80g");
  ParallelPlan a = Pipeline(2, 4), b = Pipeline(2, 2), c = Pipeline(4, 4);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &a), 1.0) << "nothing measured: the estimate";
  belief.SetFactor("j", h100, 1.5);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &a), 1.5);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &c), 1.5);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100), 1.5);
  belief.SetStageFactor("j", h100, 2, 1.2);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &a), 1.2) << "its depth's profile beats the type's";
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &b), 1.2);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &c), 1.5) << "another depth: the type's";
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100), 1.5) << "no plan: the type's";
  belief.SetPlanFactor("j", h100, a, 0.9);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &a), 0.9) << "the plan's own beats its depth's";
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &b), 1.2);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &c), 1.5);
  EXPECT_DOUBLE_EQ(belief.Factor("j", a100, &a), 1.0) << "another type: nothing";
  EXPECT_DOUBLE_EQ(belief.Factor("k", h100, &a), 1.0) << "another job: nothing";
  // The store's form of the plan key is the same key.
  belief.SetPlanFactor("j", h100, a.ToString(), 0.8);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &a), 0.8);
  belief.SetPlanFactor("j", h100, a, 1.0);  // unset: the next level again
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &a), 1.2);
  belief.SetStageFactor("j", h100, 2, 0);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &a), 1.5);
  belief.SetFactor("j", h100, 1.0);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &a), 1.0);
}

// The daemon, measuring a running plan A, sets A's factor and the type's
// fallback: plan B of a profiled depth keeps its profile's factor, a plan
// of an unprofiled depth takes the new measurement.
TEST(CorrectedThroughput, MeasuringOnePlanLeavesAnotherPlansProfileFactorAlone) {
  testing::PolicyFixture f("demo");
  EstimatorThroughput base(f.cluster(), PlanMode::kBest);
  CorrectedThroughput belief(base);
  int h100 = f.Type("h100-sxm");
  ParallelPlan a = Pipeline(2, 4), b = Pipeline(2, 1), other = Pipeline(1, 4);
  belief.SetStageFactor("j", h100, 1, 1.1);
  belief.SetStageFactor("j", h100, 2, 1.3);
  belief.SetPlanFactor("j", h100, a, 0.7);
  belief.SetFactor("j", h100, 0.7);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &a), 0.7);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &b), 1.3);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &other), 1.1);
  ParallelPlan deep = Pipeline(8, 1);
  EXPECT_DOUBLE_EQ(belief.Factor("j", h100, &deep), 0.7) << "no profile of 8 stages: the latest measurement";
}

// Rate scales the base answer by its own plan's factor; PlanSet scales each
// plan by its own and re-sorts, dropping plans a correction made slower and
// no leaner than a faster one; version() moves with every change.
TEST(CorrectedThroughput, RateAndPlanSetUseEachPlansOwnFactor) {
  testing::PolicyFixture f("demo");
  EstimatorThroughput base(f.cluster(), PlanMode::kBest);
  CorrectedThroughput belief(base);
  JobSpec job = testing::MakeJob("j").Model("gpt3-6.7b").Batch(64).Gpus(8).spec();
  int h100 = f.Type("h100-sxm");
  const JobRate& r = base.Rate(job, h100, 8, 1);
  ASSERT_TRUE(r.fits);
  const double est = r.iteration_time_s;
  uint64_t v0 = belief.version();
  belief.SetStageFactor("j", h100, r.plan.pp + 1, 3.0);  // another depth: no effect on Rate
  EXPECT_GT(belief.version(), v0);
  EXPECT_DOUBLE_EQ(belief.Rate(job, h100, 8, 1).iteration_time_s, est);
  belief.SetStageFactor("j", h100, r.plan.pp, 2.0);
  EXPECT_DOUBLE_EQ(belief.Rate(job, h100, 8, 1).iteration_time_s, 2.0 * est);
  belief.SetPlanFactor("j", h100, r.plan, 1.1);
  EXPECT_DOUBLE_EQ(belief.Rate(job, h100, 8, 1).iteration_time_s, 1.1 * est);
  EXPECT_EQ(belief.Rate(job, h100, 8, 1).plan, r.plan) << "the base's plan, not re-picked";
  uint64_t v1 = belief.version();
  belief.SetPlanFactor("j", h100, r.plan, 1.1);
  EXPECT_EQ(belief.version(), v1) << "the same factor again is no change";
  belief.Forget("j");

  std::vector<PlanChoice> set = base.PlanSet(job, h100, 8, 1, 4);
  ASSERT_GE(set.size(), 2u) << "needs a set of two plans or more";
  // The fastest plan measured three times slower than estimated: the second
  // is first now, and the old first (more memory, now slower) is dominated.
  belief.SetPlanFactor("j", h100, set[0].plan, 3.0);
  std::vector<PlanChoice> corrected = belief.PlanSet(job, h100, 8, 1, 4);
  ASSERT_EQ(corrected.size(), set.size() - 1);
  EXPECT_EQ(corrected[0].plan, set[1].plan);
  for (size_t i = 0; i < corrected.size(); ++i) {
    EXPECT_DOUBLE_EQ(corrected[i].iteration_time_s, set[i + 1].iteration_time_s);
    if (i > 0) {
      EXPECT_GE(corrected[i].iteration_time_s, corrected[i - 1].iteration_time_s);
      EXPECT_LT(corrected[i].memory_gib_per_gpu, corrected[i - 1].memory_gib_per_gpu);
    }
  }
  // A plan made faster moves up and stays; each plan has its own factor.
  belief.Forget("j");
  const PlanChoice& last = set.back();
  double to_front = 0.5 * set[0].iteration_time_s / last.iteration_time_s;
  belief.SetPlanFactor("j", h100, last.plan, to_front);
  corrected = belief.PlanSet(job, h100, 8, 1, 4);
  ASSERT_EQ(corrected.size(), 1u) << "the leanest plan, now fastest, dominates every other";
  EXPECT_EQ(corrected[0].plan, last.plan);
  EXPECT_DOUBLE_EQ(corrected[0].iteration_time_s, last.iteration_time_s * to_front);
}

TEST(CorrectedThroughput, BasePipelinePlanIsTheFastestPurePipeline) {
  testing::PolicyFixture f("demo");
  EstimatorThroughput base(f.cluster(), PlanMode::kBest);
  int h100 = f.Type("h100-sxm");
  JobSpec job = testing::MakeJob("j").Model("gpt3-1.3b").Batch(32).spec();
  for (int p : {1, 2, 4}) {
    std::optional<PlanChoice> g = base.PipelinePlan(job, h100, p, 1);
    ASSERT_TRUE(g.has_value()) << p;
    EXPECT_EQ(g->plan.pp, p);
    EXPECT_EQ(g->plan.dp, 1);
    EXPECT_EQ(g->plan.tp, 1);
    EXPECT_EQ(g->plan.virtual_stages, 1);
    EXPECT_EQ(g->plan.micro_batch * g->plan.num_micro_batches, 32);
    EXPECT_GT(g->iteration_time_s, 0);
  }
  EXPECT_DOUBLE_EQ(base.PipelinePlan(job, h100, 1, 1)->iteration_time_s, base.Rate(job, h100, 1, 1).iteration_time_s)
      << "one stage on one GPU is the one-GPU plan";
  JobSpec huge = testing::MakeJob("h").Model("gpt3-175b").Batch(32).spec();
  EXPECT_FALSE(base.PipelinePlan(huge, h100, 1, 1).has_value()) << "175B does not fit one GPU";
}

}  // namespace
}  // namespace tessel
