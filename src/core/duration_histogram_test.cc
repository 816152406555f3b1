#include "core/duration_histogram.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessel {
namespace {

TEST(DurationHistogram, QuantilesWithinOnePercentAndExactMax) {
  DurationHistogram h;
  EXPECT_EQ(h.Quantile(0.5), 0);
  for (int i = 1; i <= 1000; ++i) h.Add(i * 1e-3);  // 1 ms .. 1 s
  EXPECT_EQ(h.count(), 1000);
  EXPECT_DOUBLE_EQ(h.max_s(), 1.0);
  EXPECT_NEAR(h.Quantile(0.5), 0.5, 0.5 * 0.011);
  EXPECT_NEAR(h.Quantile(0.99), 0.99, 0.99 * 0.011);
  EXPECT_NEAR(h.Quantile(0.0), 1e-3, 1e-3 * 0.011);
  EXPECT_DOUBLE_EQ(h.Quantile(1.0), 1.0);
  // Negative or NaN durations count as 0; nothing throws or grows unbounded.
  h.Add(-1);
  h.Add(std::nan(""));
  h.Add(1e300);
  EXPECT_EQ(h.count(), 1003);
  EXPECT_DOUBLE_EQ(h.max_s(), 1e300);
}

}  // namespace
}  // namespace tessel
