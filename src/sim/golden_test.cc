// Golden scenarios: a tiny cluster and trace (tests/golden/<scenario>/),
// each policy's full event log and jobs.csv checked in. A change in any
// decision, timing or cost shows up as a diff here. Each scenario also runs
// twice and must be byte-identical.
//
// After an intended behaviour change, regenerate with
//   TESSEL_UPDATE_GOLDEN=1 ./build/tessel_tests --gtest_filter='Golden*'
// and review the diff of tests/golden/ before committing it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "policy/policy.h"
#include "sim/engine.h"
#include "sim/report.h"
#include "testing/test_data.h"
#include "workload/trace.h"

namespace tessel {
namespace {

struct GoldenCase {
  std::string scenario;
  std::string policy;
  std::string file_stem;  // expected files: <stem>.events.log, <stem>.jobs.csv
  double node_mtbf_h = 0;
};

std::string GoldenDir(const std::string& scenario) {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/golden/" + scenario;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs the scenario; returns {event log, jobs.csv}.
std::pair<std::string, std::string> RunScenario(const GoldenCase& c) {
  std::string dir = GoldenDir(c.scenario);
  Cluster cluster = LoadCluster(dir + "/cluster.yaml").value();
  // The pinned scenarios take the trace's iterations as written.
  TraceOptions opts;
  opts.arena_iteration_divisor = 1;
  Workload w = LoadTrace(dir + "/trace.csv", TraceFormat::kAuto, opts).value();
  auto policy = PolicyRegistry::Builtin().Create(c.policy, PolicyContext{}).value();
  EstimatorThroughput belief(cluster, policy->traits().plan_mode);
  SimConfig config;
  config.failures.node_mtbf_s = c.node_mtbf_h * 3600;
  config.failures.repair_s = 1800;
  Simulator sim(cluster, w, *policy, belief, belief, config);
  std::ostringstream log;
  sim.set_event_log(&log);
  auto r = sim.Run();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  std::string tmp = ::tessel::testing::ProcessTempDir() + "/golden_jobs_" + c.file_stem + ".csv";
  EXPECT_TRUE(WriteJobsCsv(*r, cluster, tmp).ok());
  return {log.str(), Slurp(tmp)};
}

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTest, MatchesCheckedInEventLogAndJobs) {
  const GoldenCase& c = GetParam();
  auto [log, jobs] = RunScenario(c);
  auto [log2, jobs2] = RunScenario(c);
  EXPECT_EQ(log, log2) << "not deterministic";
  EXPECT_EQ(jobs, jobs2) << "not deterministic";
  std::string base = GoldenDir(c.scenario) + "/" + c.file_stem;
  if (std::getenv("TESSEL_UPDATE_GOLDEN")) {
    std::ofstream(base + ".events.log", std::ios::binary) << log;
    std::ofstream(base + ".jobs.csv", std::ios::binary) << jobs;
    GTEST_SKIP() << "wrote " << base << ".{events.log,jobs.csv}";
  }
  ASSERT_TRUE(std::filesystem::exists(base + ".events.log"))
      << base << ".events.log missing; run with TESSEL_UPDATE_GOLDEN=1";
  EXPECT_EQ(log, Slurp(base + ".events.log")) << "event log differs from " << base << ".events.log";
  EXPECT_EQ(jobs, Slurp(base + ".jobs.csv")) << "jobs differ from " << base << ".jobs.csv";
}

INSTANTIATE_TEST_SUITE_P(Tiny, GoldenTest,
                         ::testing::Values(GoldenCase{"tiny", "fcfs", "fcfs"},
                                           GoldenCase{"tiny", "fcfs:backfill=easy", "fcfs-easy"},
                                           GoldenCase{"tiny", "fcfs", "fcfs-failures", 2.0},
                                           GoldenCase{"tiny", "srtf", "srtf"},
                                           GoldenCase{"tiny", "tiresias", "tiresias"},
                                           GoldenCase{"tiny", "gandiva", "gandiva"},
                                           GoldenCase{"tiny", "elasticflow", "elasticflow"},
                                           GoldenCase{"tiny", "gavel", "gavel"},
                                           GoldenCase{"tiny", "gavel-throughput", "gavel-throughput"}),
                         [](const auto& info) {
                           std::string s = info.param.file_stem;
                           for (char& ch : s) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace tessel
