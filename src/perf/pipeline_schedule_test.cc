#include "perf/pipeline_schedule.h"

#include <random>

#include <gtest/gtest.h>

namespace tessel {
namespace {

std::vector<PipelineStageTime> Equal(int p, double f, double b) { return std::vector<PipelineStageTime>(p, {f, b}); }

// Equal stages: the schedule gives the closed form, (M + (p - 1) / v)
// stage times (Narayanan et al. 2021: bubble (p - 1) / v of a micro-batch's
// forward and backward), for 1F1B with any M >= 1 and for interleaving
// with M a multiple of p.
TEST(PipelineSchedule, EqualStagesMatchTheClosedForm) {
  for (int p : {2, 4, 8, 16})
    for (int m : {1, 3, 8, 16, 64, 200}) {
      if (m < p) continue;
      const double f = 0.01, b = 0.021;
      EXPECT_NEAR(PipelineIterationTimeExact(Equal(p, f, b), m, 1), (m + p - 1) * (f + b), 1e-12) << p << " " << m;
      for (int v : {2, 3, 4}) {
        if (m % p != 0) continue;
        EXPECT_NEAR(PipelineIterationTimeExact(Equal(p, f, b), m, v), (m + (p - 1.0) / v) * (f + b), 1e-12)
            << p << " " << m << " v" << v;
      }
    }
  // One micro-batch: forward down the pipeline and backward up it.
  EXPECT_NEAR(PipelineIterationTimeExact(Equal(8, 1, 2), 1, 1), 8 * 3, 1e-12);
}

// Unequal stages: never faster than the slowest stage busy M times plus
// the others' first forward and last backward; a faster middle stage
// changes nothing the closed form would not see, a slower first or last
// stage lengthens the iteration by M times its excess.
TEST(PipelineSchedule, TheSlowestStageSetsThePace) {
  std::vector<PipelineStageTime> s = Equal(8, 1, 2);
  s.back() = {1.5, 3};  // the output layer and loss
  const int m = 32;
  double t = PipelineIterationTimeExact(s, m, 1);
  double lower = m * 4.5 + 7 * 1 + 7 * 2;  // last stage busy M times + the others' way there and back
  EXPECT_NEAR(t, lower, 1e-9);
  EXPECT_LT(t, m * 4.5 + 7 * (7 * 3 + 4.5) / 8 + 1e-9);  // the closed form with the mean stage, or less
}

// Extrapolating the steady state group by group gives what placing every
// micro-batch gives, for random stage times, schedules and M.
TEST(PipelineSchedule, ExtrapolationIsExact) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  for (int trial = 0; trial < 60; ++trial) {
    int p = 2 + trial % 7;
    int v = 1 + trial % 3;
    // Interleaving needs M to be a multiple of p (ValidatePlan, as Megatron).
    int m = p * (4 + trial % 5) + (v == 1 ? trial % p : 0);
    std::vector<PipelineStageTime> s(p);
    for (auto& st : s) st = {u(rng), 2 * u(rng)};
    double exact = PipelineIterationTimeExact(s, m, v), fast = PipelineIterationTime(s, m, v);
    ASSERT_GT(exact, 0) << "p" << p << " v" << v << " m" << m;
    EXPECT_NEAR(fast, exact, 1e-9 * exact) << "p" << p << " v" << v << " m" << m;
  }
}

TEST(PipelineSchedule, DegenerateInputs) {
  EXPECT_EQ(PipelineIterationTime({}, 4, 1), 0.0);
  EXPECT_NEAR(PipelineIterationTime(Equal(1, 1, 2), 5, 1), 15, 1e-12);
  // Fewer micro-batches than stages (1F1B): M forwards down, back up.
  EXPECT_NEAR(PipelineIterationTimeExact(Equal(8, 1, 2), 3, 1), (3 + 7) * 3, 1e-12);
}

}  // namespace
}  // namespace tessel
