#include "calib/comm_fit.h"

#include <gtest/gtest.h>

#include <fstream>

#include "testing/test_data.h"

namespace tessel {
namespace {

TEST(CommFit, RecoversAlphaBetaOfSyntheticCurve) {
  CommCurve c;
  c.op = "all-reduce";
  c.group_size = 4;
  double alpha = 10e-6, bw = 100e9;
  for (double bytes = 1024; bytes < 2e9; bytes *= 2) {
    double t = 2 * 3 * alpha + bytes * 2 * 3 / 4 / bw;
    c.points.push_back({bytes, t});
  }
  FitCurve(c);
  EXPECT_NEAR(c.bus_bw / bw, 1.0, 0.02);
  EXPECT_NEAR(c.step_latency_s / alpha, 1.0, 0.05);
}

TEST(CommFit, MeasuredCurvesAreReproduced) {
  TESSEL_REQUIRE_DATA();
  auto curves = LoadCommMeasurements(testing::DataDir() + "/arena/comm");
  ASSERT_TRUE(curves.ok()) << curves.status().ToString();
  EXPECT_GT(curves->size(), 200u);
  CommFitSummary s = SummarizeCommFit(*curves, DefaultPerfParams());
  // Link classes come out where the hardware says they should.
  EXPECT_GT(s.nvlink.efficiency, s.pcie.efficiency);
  EXPECT_GT(s.network_node_gbps, 5);
  EXPECT_LT(s.network_node_gbps, 200);
  // The fitted collective model against every measured point >= 1 MiB.
  EXPECT_LT(s.median_abs_error, 0.25);
  // The embedded defaults are this fit (re-run `tessel calibrate --cpp`
  // when the data or the model changes).
  EXPECT_NEAR(DefaultPerfParams().pcie.efficiency, s.pcie.efficiency, 0.01);
  EXPECT_NEAR(DefaultPerfParams().nvlink_mesh.efficiency, s.nvlink.efficiency, 0.01);
}

TEST(CommFit, BadFileNamesAndRowsAreErrors) {
  std::string dir = ::tessel::testing::ProcessTempDir() + "/comm_bad";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir + "/1_a100_1_n_2_d.csv") << "op,replica_groups,elements,dtype,seconds\n"
                                               << "all-reduce,0-1,1024,float32,1e-5\n"
                                               << "all-reduce,0-1,lots,float32,1e-5\n";
  }
  auto r = LoadCommMeasurements(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir + "/1_a100_1_n_2_d.csv:3: elements: expected a number, got 'lots'");
}

}  // namespace
}  // namespace tessel
