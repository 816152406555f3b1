#include "perf/collective.h"

#include <gtest/gtest.h>

namespace tessel {
namespace {

Topology Dgx() { return *MakeTopology(**FindGpu("a100-80g"), 0, 0); }

TEST(Collective, GroupOfOneIsFree) {
  Topology t = Dgx();
  CollectiveModel m(t, DefaultPerfParams());
  EXPECT_EQ(m.Time(Collective::kAllReduce, 1e9, {1, 1, 1}), 0.0);
}

TEST(Collective, RingAllReduceBandwidthTerm) {
  // Large messages: time ~ 2(n-1)/n * S / busbw.
  Topology t = Dgx();
  const PerfParams& p = DefaultPerfParams();
  CollectiveModel m(t, p);
  double S = 4e9;
  double bw = m.IntraBusBandwidth(8);
  double expected = 2.0 * 7 / 8 * S / bw;
  EXPECT_NEAR(m.Time(Collective::kAllReduce, S, {8, 8, 1}) / expected, 1.0, 0.02);
  // all-reduce = reduce-scatter + all-gather in bandwidth.
  double rs = m.Time(Collective::kReduceScatter, S, {8, 8, 1});
  double ag = m.Time(Collective::kAllGather, S, {8, 8, 1});
  EXPECT_NEAR((rs + ag) / m.Time(Collective::kAllReduce, S, {8, 8, 1}), 1.0, 0.01);
}

TEST(Collective, LatencyDominatesSmallMessages) {
  Topology t = Dgx();
  CollectiveModel m(t, DefaultPerfParams());
  double tiny = m.Time(Collective::kAllReduce, 8, {8, 8, 1});
  double steps = 2 * 7 * DefaultPerfParams().nvswitch.step_latency_us * 1e-6;
  EXPECT_NEAR(tiny / steps, 1.0, 0.01);
}

TEST(Collective, CrossingNodesIsSlowerAndSharesTheNic) {
  Topology t = Dgx();
  CollectiveModel m(t, DefaultPerfParams());
  double S = 1e9;
  double intra = m.Time(Collective::kAllReduce, S, {8, 8, 1});
  double inter = m.Time(Collective::kAllReduce, S, {16, 8, 1});
  EXPECT_GT(inter, intra);
  // Eight data-parallel groups (one per tensor-parallel rank) through the
  // same NICs are slower than one.
  double one = m.Time(Collective::kAllReduce, S, {16, 1, 1});
  double eight = m.Time(Collective::kAllReduce, S, {16, 1, 8});
  EXPECT_GT(eight, 4 * one);
}

TEST(Collective, TreeBeatsRingForSmallMessagesAcrossManyNodes) {
  Topology t = Dgx();
  CollectiveModel m(t, DefaultPerfParams());
  double ring_latency = 2.0 * 127 * DefaultPerfParams().network.step_latency_us * 1e-6;
  EXPECT_LT(m.Time(Collective::kAllReduce, 1024, {128, 1, 1}), ring_latency / 4);
}

TEST(Collective, PcieIsSlowerThanNvlink) {
  Topology pcie = *MakeTopology(**FindGpu("a10"), 0, 0);
  Topology nv = Dgx();
  CollectiveModel a(pcie, DefaultPerfParams()), b(nv, DefaultPerfParams());
  EXPECT_GT(a.Time(Collective::kAllReduce, 1e9, {4, 4, 1}), b.Time(Collective::kAllReduce, 1e9, {4, 4, 1}));
}

}  // namespace
}  // namespace tessel
