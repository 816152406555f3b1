#include "sim/metrics.h"

#include <gtest/gtest.h>

#include <sstream>

#include "sim/report.h"

namespace tessel {
namespace {

JobRecord Job(JobOutcome outcome, double submit_s, double finish_s, std::optional<double> deadline_s) {
  JobRecord j;
  j.id = "j";
  j.outcome = outcome;
  j.submit = Seconds(submit_s);
  j.finish = outcome == JobOutcome::kFinished ? Seconds(finish_s) : kNever;
  if (deadline_s) j.deadline = Seconds(*deadline_s);
  return j;
}

// Deadline metrics (issue 15): met = finished by the deadline; unfinished
// and rejected jobs count as missed; tardiness averages over the deadline
// jobs that finished, 0 for those on time.
TEST(Summarize, DeadlineMetricsCountMissedRejectedAndUnfinishedJobs) {
  std::vector<JobRecord> jobs = {
      Job(JobOutcome::kFinished, 0, 100, 100),     // met, exactly on time
      Job(JobOutcome::kFinished, 0, 400, 100),     // late by 300 s
      Job(JobOutcome::kRejected, 0, 0, 50),        // refused: missed
      Job(JobOutcome::kPending, 0, 0, 1000),       // never finished: missed
      Job(JobOutcome::kFinished, 0, 50, std::nullopt),  // no deadline: not counted
  };
  Summary s;
  Summarize(jobs, {}, 8, Seconds(500), &s);
  EXPECT_EQ(s.deadline_jobs, 4);
  EXPECT_EQ(s.deadline_met, 1);
  EXPECT_DOUBLE_EQ(s.deadline_met_fraction, 0.25);
  EXPECT_DOUBLE_EQ(s.avg_tardiness_s, 150);
  EXPECT_TRUE(jobs[0].DeadlineMet());
  EXPECT_FALSE(jobs[1].DeadlineMet());
  EXPECT_FALSE(jobs[4].DeadlineMet());
}

TEST(Summarize, NoDeadlinesGiveZeros) {
  Summary s;
  Summarize({Job(JobOutcome::kFinished, 0, 10, std::nullopt)}, {}, 8, Seconds(10), &s);
  EXPECT_EQ(s.deadline_jobs, 0);
  EXPECT_EQ(s.deadline_met_fraction, 0);
  EXPECT_EQ(s.avg_tardiness_s, 0);
}

// Cluster throughput over time: peak, time-weighted p99, per GPU-second.
TEST(Summarize, ClusterThroughputPeakP99AndPerGpu) {
  std::vector<TimelinePoint> tl(3);
  tl[0].time = Seconds(0);
  tl[0].samples_per_s = 100;
  tl[0].allocated_gpus = 4;
  tl[1].time = Seconds(990);
  tl[1].samples_per_s = 1000;  // 10 s of 1000 at the end: 1% of the time
  tl[1].allocated_gpus = 8;
  tl[2].time = Seconds(1000);
  Summary s;
  Summarize({Job(JobOutcome::kFinished, 0, 1000, std::nullopt)}, tl, 8, Seconds(1000), &s);
  EXPECT_DOUBLE_EQ(s.cluster_throughput_peak, 1000);
  EXPECT_DOUBLE_EQ(s.cluster_throughput_p99, 100);
  // (100 * 990 + 1000 * 10) samples / (4 * 990 + 8 * 10) GPU-seconds.
  EXPECT_NEAR(s.samples_per_gpu_s, 109000.0 / 4040.0, 1e-9);
}

}  // namespace
// compare's table has an "oom placed" column only when some run had an
// allocation that could not run as placed.
TEST(RenderComparison, OomColumnOnlyWhenAnyRunHadOne) {
  Summary a, b;
  a.policy = "fcfs";
  b.policy = "arena";
  std::ostringstream without;
  RenderComparison({a, b}, without);
  EXPECT_EQ(without.str().find("oom placed"), std::string::npos);
  b.oom_placements = 49;
  std::ostringstream with;
  RenderComparison({a, b}, with);
  EXPECT_NE(with.str().find("oom placed"), std::string::npos);
  EXPECT_NE(with.str().find(" 49 "), std::string::npos);
}

}  // namespace tessel
