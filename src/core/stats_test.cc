#include "core/stats.h"

#include <gtest/gtest.h>

namespace tessel {
namespace {

TEST(Stats, WeightedMedianCountsWeightsNotRows) {
  EXPECT_EQ(WeightedMedian({}), 0);
  // Equal weights: the lower middle value of an even sample.
  EXPECT_EQ(WeightedMedian({{3, 1}, {1, 1}, {2, 1}, {4, 1}}), 2);
  // Nine rows of one source at 1.0 weigh as much as one row at 2.0.
  std::vector<std::pair<double, double>> v(9, {1.0, 1.0 / 9});
  v.push_back({2.0, 1.0});
  v.push_back({3.0, 1.0});
  EXPECT_EQ(WeightedMedian(v), 2.0);
  EXPECT_EQ(Median({1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3}), 1.0);
}

}  // namespace
}  // namespace tessel
