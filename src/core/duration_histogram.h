// Quantiles of many short durations in bounded memory: log-spaced buckets
// 1% wide from 1 ns to about 11 days (the scheduling loop's decision
// times). Quantiles are exact to the bucket (within 1%); the maximum is
// exact. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace tessel {

class DurationHistogram {
 public:
  void Add(double seconds);
  int64_t count() const { return count_; }
  double max_s() const { return max_; }
  // The q-quantile (0 <= q <= 1) in seconds; 0 when empty.
  double Quantile(double q) const;

 private:
  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  double max_ = 0;
};

}  // namespace tessel
