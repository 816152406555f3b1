// Order statistics over small samples (median, quantiles), for reports.
#pragma once

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace tessel {

// Linear-interpolated quantile q in [0, 1]; 0 for an empty sample.
inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double idx = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(idx));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (idx - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

inline double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

// The weighted median of (value, weight) pairs: the smallest value whose
// cumulative weight reaches half the total; 0 for an empty sample.
inline double WeightedMedian(std::vector<std::pair<double, double>> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double total = 0;
  for (const auto& [x, w] : v) total += w;
  double acc = 0;
  for (const auto& [x, w] : v)
    if ((acc += w) >= total / 2) return x;
  return v.back().first;
}

}  // namespace tessel
