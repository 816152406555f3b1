#include "sim/report_series.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tessel {
namespace {

JobRecord Finished(double jct_s) {
  JobRecord j;
  j.outcome = JobOutcome::kFinished;
  j.submit = 0;
  j.finish = Seconds(jct_s);
  return j;
}

TimelinePoint At(double t_s, int pending) {
  TimelinePoint p;
  p.time = Seconds(t_s);
  p.pending_jobs = pending;
  return p;
}

TEST(ReportSeries, CdfKeepsEveryJobWhenFew) {
  std::vector<JobRecord> jobs = {Finished(7200), Finished(3600), Finished(10800)};
  JobRecord pending;
  pending.outcome = JobOutcome::kPending;
  jobs.push_back(pending);
  ReportSeries s = JctCdfSeries(jobs);
  EXPECT_EQ(s.x, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(s.y, (std::vector<double>{0.33333, 0.66667, 1}));
}

TEST(ReportSeries, CdfOfManyJobsIsBoundedAndKeepsTheExtremes) {
  std::vector<JobRecord> jobs;
  for (int i = 1; i <= 10000; ++i) jobs.push_back(Finished(36.0 * i));  // 0.01 h .. 100 h
  ReportSeries s = JctCdfSeries(jobs, 300);
  ASSERT_EQ(s.x.size(), 300u);
  EXPECT_DOUBLE_EQ(s.x.front(), 0.01);
  EXPECT_DOUBLE_EQ(s.x.back(), 100);
  EXPECT_DOUBLE_EQ(s.y.front(), 0.0001);
  EXPECT_DOUBLE_EQ(s.y.back(), 1);
  EXPECT_TRUE(std::is_sorted(s.x.begin(), s.x.end()));
  EXPECT_TRUE(std::adjacent_find(s.y.begin(), s.y.end()) == s.y.end());  // distinct ranks
}

TEST(ReportSeries, ShortTimelineDropsRepeatsAndEndsAtTheRunsEnd) {
  std::vector<TimelinePoint> tl = {At(0, 1), At(3600, 1), At(7200, 4), At(9000, 4), At(10800, 0)};
  tl[1].allocated_gpus = 8;  // another field changed; pending did not
  ReportSeries s = TimelineSeries(tl, &TimelinePoint::pending_jobs, Seconds(14400));
  EXPECT_EQ(s.x, (std::vector<double>{0, 2, 3, 4}));
  EXPECT_EQ(s.y, (std::vector<double>{1, 4, 0, 0}));
}

// A long series: at most 3 points per bucket (+ the end), every extreme
// kept, and the value at each bucket's end exact. Changes are an hour
// apart, so rounding times to 5 digits keeps them apart.
TEST(ReportSeries, LongTimelineKeepsExtremesAndBucketEnds) {
  const int n = 100000, buckets = 50;
  std::vector<TimelinePoint> tl;
  for (int i = 0; i < n; ++i) tl.push_back(At(i * 3600.0, (i * 7919) % 1000 + (i == 54321 ? 5000 : 0)));
  ReportSeries s = TimelineSeries(tl, &TimelinePoint::pending_jobs, Seconds(3600.0 * n), buckets);
  EXPECT_LE(s.x.size(), static_cast<size_t>(3 * buckets + 1));
  EXPECT_GT(s.x.size(), static_cast<size_t>(2 * buckets));
  EXPECT_TRUE(std::is_sorted(s.x.begin(), s.x.end()));
  EXPECT_EQ(*std::max_element(s.y.begin(), s.y.end()), 5000 + (54321 * 7919) % 1000);
  EXPECT_EQ(*std::min_element(s.y.begin(), s.y.end()), 0);
  EXPECT_DOUBLE_EQ(s.x.back(), n);
  EXPECT_EQ(s.y.back(), tl.back().pending_jobs);
  // Bucket b covers hours [2000 b, 2000 (b + 1)); its last change is kept.
  for (int b = 0; b < buckets; ++b) {
    int last = (b + 1) * (n / buckets) - 1;
    auto it = std::find(s.x.begin(), s.x.end(), static_cast<double>(last));
    ASSERT_NE(it, s.x.end()) << "bucket " << b;
    EXPECT_EQ(s.y[it - s.x.begin()], tl[last].pending_jobs) << "bucket " << b;
  }
}

TEST(ReportSeries, RoundSignificant) {
  EXPECT_DOUBLE_EQ(RoundSignificant(123.456789, 5), 123.46);
  EXPECT_DOUBLE_EQ(RoundSignificant(0.000123456, 3), 0.000123);
  EXPECT_EQ(RoundSignificant(0, 5), 0);
}

}  // namespace
}  // namespace tessel
