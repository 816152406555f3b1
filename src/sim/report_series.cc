#include "sim/report_series.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tessel {
namespace {

double Hours(SimTime t) { return RoundSignificant(ToSeconds(t) / 3600.0, 5); }

}  // namespace

double RoundSignificant(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::strtod(buf, nullptr);
}

ReportSeries JctCdfSeries(const std::vector<JobRecord>& jobs, int max_points) {
  std::vector<double> jct;
  for (const JobRecord& j : jobs) {
    if (j.outcome == JobOutcome::kFinished) jct.push_back(j.jct_s() / 3600.0);
  }
  std::sort(jct.begin(), jct.end());
  ReportSeries out;
  size_t n = jct.size();
  if (n == 0) return out;
  size_t m = std::min(n, static_cast<size_t>(std::max(2, max_points)));
  for (size_t k = 0; k < m; ++k) {
    // Evenly spaced ranks, 0 and n - 1 included.
    size_t i = m == 1 ? n - 1 : (k * (n - 1) + (m - 1) / 2) / (m - 1);
    out.x.push_back(RoundSignificant(jct[i], 5));
    out.y.push_back(RoundSignificant(static_cast<double>(i + 1) / n, 5));
  }
  return out;
}

ReportSeries TimelineSeries(const std::vector<TimelinePoint>& timeline, int TimelinePoint::*field, SimTime end,
                            int buckets) {
  // The changes of this field alone.
  std::vector<std::pair<SimTime, int>> changes;
  for (const TimelinePoint& p : timeline) {
    int v = p.*field;
    if (!changes.empty() && changes.back().first == p.time) {
      changes.back().second = v;
      if (changes.size() >= 2 && changes[changes.size() - 2].second == v) changes.pop_back();
      continue;
    }
    if (!changes.empty() && changes.back().second == v) continue;
    changes.emplace_back(p.time, v);
  }
  ReportSeries out;
  if (changes.empty()) return out;
  SimTime start = changes.front().first;
  end = std::max(end, changes.back().first);
  auto add = [&](const std::pair<SimTime, int>& c) {
    out.x.push_back(Hours(c.first));
    out.y.push_back(c.second);
  };
  buckets = std::max(1, buckets);
  if (changes.size() <= static_cast<size_t>(3 * buckets + 1) || end <= start) {
    for (const auto& c : changes) add(c);
  } else {
    // In integers (128 bits: times reach 2^63 µs), so that bucket edges
    // are exact.
    auto bucket_of = [&](SimTime t) {
      __int128 b = static_cast<__int128>(t - start) * buckets / (end - start);
      return std::min<int64_t>(buckets - 1, static_cast<int64_t>(b));
    };
    size_t i = 0;
    while (i < changes.size()) {
      // changes[i] and every later change in its bucket.
      int64_t b = bucket_of(changes[i].first);
      size_t lo = i, hi = i;
      while (hi < changes.size() && bucket_of(changes[hi].first) == b) ++hi;
      size_t min_i = lo, max_i = lo;
      for (size_t k = lo; k < hi; ++k) {
        if (changes[k].second < changes[min_i].second) min_i = k;
        if (changes[k].second > changes[max_i].second) max_i = k;
      }
      size_t keep[3] = {min_i, max_i, hi - 1};
      std::sort(keep, keep + 3);
      for (int k = 0; k < 3; ++k) {
        if (k > 0 && keep[k] == keep[k - 1]) continue;
        add(changes[keep[k]]);
      }
      i = hi;
    }
  }
  if (end > changes.back().first) add({end, changes.back().second});
  return out;
}

SimTime RunEnd(const SimResult& r) {
  SimTime first_submit = kNever;
  for (const JobRecord& j : r.jobs) first_submit = std::min(first_submit, j.submit);
  if (first_submit == kNever) first_submit = r.timeline.empty() ? 0 : r.timeline.front().time;
  SimTime end = first_submit + static_cast<SimTime>(std::llround(r.summary.makespan_s * 1e6));
  if (!r.timeline.empty()) end = std::max(end, r.timeline.back().time);
  return end;
}

}  // namespace tessel
