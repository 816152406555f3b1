#include "server/cluster_history.h"

#include <gtest/gtest.h>

namespace tessel {
namespace {

constexpr int64_t kS = 1'000'000;

TEST(GpuAllocationHistoryTest, SamplesAtMostOncePerIntervalAndEndsWithNow) {
  GpuAllocationHistory h(10 * kS, 100);
  h.Record(100 * kS, {{"a100-80g", 2}});
  h.Record(105 * kS, {{"a100-80g", 4}});  // within the interval: dropped
  h.Record(110 * kS, {{"a100-80g", 4}, {"v100-32g", 1}});
  EXPECT_EQ(h.size(), 2u);
  ClusterHistoryInfo info = h.Snapshot(113 * kS, {{"v100-32g", 2}}, {{"a100-80g", 4}, {"v100-32g", 4}, {"h100-sxm", 8}});
  EXPECT_EQ(info.interval_s, 10);
  EXPECT_EQ(info.gpu_types, (std::vector<std::string>{"a100-80g", "h100-sxm", "v100-32g"}));
  EXPECT_EQ(info.gpus, (std::vector<int64_t>{4, 8, 4}));
  ASSERT_EQ(info.samples.size(), 3u);
  EXPECT_EQ(info.samples[0].time_us, 100 * kS);
  EXPECT_EQ(info.samples[0].allocated, (std::vector<int64_t>{2, 0, 0}));
  EXPECT_EQ(info.samples[1].allocated, (std::vector<int64_t>{4, 0, 1}));
  EXPECT_EQ(info.samples[2].time_us, 113 * kS);  // now
  EXPECT_EQ(info.samples[2].allocated, (std::vector<int64_t>{0, 0, 2}));
}

TEST(GpuAllocationHistoryTest, KeepsOnlyTheNewestCapacitySamples) {
  GpuAllocationHistory h(1 * kS, 3);
  for (int i = 0; i < 10; ++i) h.Record(i * kS, {{"a100-80g", i}});
  EXPECT_EQ(h.size(), 3u);
  ClusterHistoryInfo info = h.Snapshot(9 * kS, {{"a100-80g", 9}}, {});
  ASSERT_EQ(info.samples.size(), 3u);  // "now" is the last sample's time: not repeated
  EXPECT_EQ(info.samples[0].allocated, std::vector<int64_t>{7});
  EXPECT_EQ(info.samples[2].allocated, std::vector<int64_t>{9});
  EXPECT_EQ(info.gpus, std::vector<int64_t>{0});  // a type no node has any more
}

TEST(GpuAllocationHistoryTest, EmptyHistoryIsJustNow) {
  GpuAllocationHistory h;
  ClusterHistoryInfo info = h.Snapshot(5 * kS, {}, {{"a100-80g", 8}});
  ASSERT_EQ(info.samples.size(), 1u);
  EXPECT_EQ(info.samples[0].allocated, std::vector<int64_t>{0});
  EXPECT_EQ(info.interval_s, 10);
}

}  // namespace
}  // namespace tessel
