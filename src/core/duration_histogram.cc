#include "core/duration_histogram.h"

#include <algorithm>
#include <cmath>

namespace tessel {
namespace {

constexpr double kMin = 1e-9;       // seconds, bucket 0's upper edge
constexpr double kGrowth = 1.01;    // each bucket 1% wider than the last
constexpr int kBuckets = 3000;      // up to 1e-9 * 1.01^3000, about 9.6e3 days

int Bucket(double s) {
  if (!(s > kMin)) return 0;
  // Clamped as a double: 1e300 s would overflow the int (UBSan).
  double b = std::ceil(std::log(s / kMin) / std::log(kGrowth));
  return static_cast<int>(std::clamp(b, 0.0, static_cast<double>(kBuckets - 1)));
}

}  // namespace

void DurationHistogram::Add(double seconds) {
  if (!(seconds >= 0)) seconds = 0;
  int b = Bucket(seconds);
  if (static_cast<int>(buckets_.size()) <= b) buckets_.resize(b + 1, 0);
  ++buckets_[b];
  ++count_;
  max_ = std::max(max_, seconds);
}

double DurationHistogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The smallest bucket whose cumulative count reaches ceil(q * n).
  int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * static_cast<double>(count_))));
  int64_t seen = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= rank) return std::min(max_, kMin * std::pow(kGrowth, static_cast<double>(b)));
  }
  return max_;
}

}  // namespace tessel
