// The series report.html draws, reduced so that the page stays small
// whatever the trace's length (sim/report_html.h).
//
// - A JCT CDF keeps at most `max_points` of the sorted JCTs: all of them
//   when there are that few, else the order statistics at evenly spaced
//   ranks, the smallest and the largest always among them.
// - A timeline series (piecewise constant: a value from one change to the
//   next) first drops points that repeat the previous value; when more than
//   3 × `buckets` + 1 points remain, the run's span is cut into `buckets`
//   equal intervals and each keeps at most three points, at the times they
//   occur: its minimum, its maximum and its last change (the earliest on
//   ties). Every extreme of the series survives, and a step line through
//   the points has the true value at each interval's end. The last point
//   repeats the final value at the run's end.
//
// Times are hours, rounded to 5 significant digits.
#pragma once

#include <vector>

#include "core/sim_time.h"
#include "sim/metrics.h"
#include "sim/sim_backend.h"

namespace tessel {

inline constexpr int kReportCdfPoints = 300;
inline constexpr int kReportTimelineBuckets = 200;

struct ReportSeries {
  std::vector<double> x;
  std::vector<double> y;
};

// Finished jobs' JCTs in hours (x) against the fraction of finished jobs
// at or below them (y).
ReportSeries JctCdfSeries(const std::vector<JobRecord>& jobs, int max_points = kReportCdfPoints);

// One field of the timeline (e.g. &TimelinePoint::pending_jobs) from its
// first point to `end`, reduced as above.
ReportSeries TimelineSeries(const std::vector<TimelinePoint>& timeline, int TimelinePoint::*field, SimTime end,
                            int buckets = kReportTimelineBuckets);

// When the run stopped: its first submit plus its makespan (the timeline's
// last change when later).
SimTime RunEnd(const SimResult& r);

// `v` rounded to `digits` significant decimal digits (0, infinities and
// NaN unchanged).
double RoundSignificant(double v, int digits);

}  // namespace tessel
