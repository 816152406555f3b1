#include "policy/profiling.h"

#include <gtest/gtest.h>

#include <sstream>

#include "policy/policy.h"
#include "sim/engine.h"

namespace tessel {
namespace {

// 2 types: 2 x 4 A100 and 1 x 4 V100.
Cluster TwoTypes() {
  const char* yaml = R"(name: two
pools:
  - {name: a100, gpu: a100-80g, nodes: 2, gpus_per_node: 4, intra: nvswitch, network_gbps: 200}
  - {name: v100, gpu: v100-32g, nodes: 1, gpus_per_node: 4, intra: nvlink-mesh, network_gbps: 100}
)";
  return Cluster::Build(ParseClusterYaml(yaml, "two.yaml").value()).value();
}

JobSpec Job(std::string id, SimTime submit, std::string model = "gpt3-350m", int batch = 32) {
  JobSpec j;
  j.id = std::move(id);
  j.submit = submit;
  j.model = std::move(model);
  j.global_batch = batch;
  j.iterations = 200;
  j.requested_gpus = 2;
  j.min_gpus = 1;
  j.max_gpus = 8;
  j.requested_gpu_type = "a100-80g";
  return j;
}

TEST(Profiling, CountsConfigurations) {
  Cluster c = TwoTypes();
  JobSpec j = Job("a", 0);  // 24 layers: stage counts 1, 2, 4, 8
  ProfilingModel m;
  m.kind = ProfilingKind::kDisaggregated;
  // One GPU per type per stage count the type can hold: a100 (8 GPUs) 1, 2,
  // 4, 8; v100 (4 GPUs) 1, 2, 4.
  EXPECT_EQ(m.Configurations(j, c), 4 + 3);
  EXPECT_DOUBLE_EQ(m.Seconds(j, c), 4 * 60.0);  // the two types at once
  m.parallel_types = false;
  EXPECT_DOUBLE_EQ(m.Seconds(j, c), 7 * 60.0);
  m.all_types = false;
  EXPECT_EQ(m.Configurations(j, c), 4);
  ProfilingModel direct;
  direct.kind = ProfilingKind::kDirect;
  // a100 (8 GPUs): p=1: 1,2,4,8; p=2: 2,4,8; p=4: 4,8; p=8: 8 -> 10;
  // v100 (4 GPUs): p=1: 1,2,4; p=2: 2,4; p=4: 4 -> 6.
  EXPECT_EQ(direct.Configurations(j, c), 16);
  EXPECT_DOUBLE_EQ(direct.Seconds(j, c), 16 * 60.0);
  EXPECT_EQ(ProfilingModel{}.Configurations(j, c), 0);
}

// The stage counts a job's grids admit, which the daemon profiles one run
// each of and the simulator charges for: powers of two up to max_stages,
// the layers and the GPUs the job may hold on the type.
TEST(Profiling, StageCountsAreWhatTheGridsAdmit) {
  ProfilingModel m;
  m.kind = ProfilingKind::kDisaggregated;
  EXPECT_EQ(m.StageCounts(24, 8), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(m.StageCounts(24, 6), (std::vector<int>{1, 2, 4})) << "no more stages than GPUs";
  EXPECT_EQ(m.StageCounts(3, 64), (std::vector<int>{1, 2})) << "no more stages than layers";
  m.max_stages = 2;
  EXPECT_EQ(m.StageCounts(24, 64), (std::vector<int>{1, 2}));
  m.max_stages = 8;
  Cluster c = TwoTypes();
  JobSpec j = Job("a", 0);  // gpt3-350m, 24 layers, up to 8 GPUs
  int a100 = c.FindType("a100-80g"), v100 = c.FindType("v100-32g");
  EXPECT_EQ(m.StageCountsFor(j, c, a100), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(m.StageCountsFor(j, c, v100), (std::vector<int>{1, 2, 4})) << "the type's 4 GPUs";
  EXPECT_EQ(m.Configurations(j, c),
            static_cast<int>(m.StageCountsFor(j, c, a100).size() + m.StageCountsFor(j, c, v100).size()));
  j.max_gpus = 1;
  j.requested_gpus = 2;
  EXPECT_EQ(m.StageCountsFor(j, c, a100), (std::vector<int>{1, 2})) << "its requested GPUs count too";
}

TEST(Profiling, ParsesKinds) {
  EXPECT_EQ(ParseProfilingKind("direct").value(), ProfilingKind::kDirect);
  EXPECT_EQ(ParseProfilingKind("disaggregated").value(), ProfilingKind::kDisaggregated);
  EXPECT_EQ(ParseProfilingKind("none").value(), ProfilingKind::kNone);
  auto bad = ParseProfilingKind("sometimes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("disaggregated"), std::string::npos);
  EXPECT_FALSE(PolicyRegistry::Builtin().Create("arena:profiling=sometimes", PolicyContext{}).ok());
}

// The engine holds a new job back for its profile; a job of the same model
// reuses it (a disaggregated profile serves every batch, a direct one only
// its own); direct profiling takes longer.
TEST(Profiling, EngineDelaysFirstStartAndReusesProfiles) {
  Cluster c = TwoTypes();
  Workload w;
  JobSpec d = Job("d", Seconds(30));
  d.global_batch *= 2;
  w.jobs = {Job("a", 0), Job("b", Seconds(10)), Job("c", Seconds(20), "gpt3-1.3b"), d};
  auto first_start = [&](const std::string& spec) {
    auto policy = PolicyRegistry::Builtin().Create(spec, PolicyContext{}).value();
    EstimatorThroughput belief(c, policy->traits().plan_mode);
    Simulator sim(c, w, *policy, belief, belief, SimConfig{});
    std::ostringstream log;
    sim.set_event_log(&log);
    auto r = sim.Run();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::vector<double> out;
    for (const JobRecord& j : r->jobs) {
      EXPECT_EQ(j.outcome, JobOutcome::kFinished) << j.id;
      out.push_back(ToSeconds(j.first_start));
    }
    return std::make_pair(out, log.str());
  };
  auto [none, none_log] = first_start("arena:profiling=none");
  auto [dis, dis_log] = first_start("arena");
  auto [dir, dir_log] = first_start("arena:profiling=direct");
  EXPECT_LT(none[0], 1.0);
  EXPECT_GE(dis[0], 240.0) << dis_log;  // 4 stage counts x 60 s, types at once
  EXPECT_GE(dis[1], 240.0);             // waits for a's profile ...
  EXPECT_LT(dis[1], 240.0 + 300.0);     // ... and no more than a round after it
  EXPECT_NE(dis_log.find("profiling_s=240"), std::string::npos) << dis_log;
  EXPECT_NE(dis_log.find("profiling_s=230"), std::string::npos) << "b reuses a's profile: " << dis_log;
  EXPECT_NE(dis_log.find("job=d profiling_s=210"), std::string::npos) << "d (another batch) reuses it: " << dis_log;
  // Starts carry arena's plan set for the executor; none without one.
  EXPECT_NE(dis_log.find(" plan_set=4 first=d"), std::string::npos) << dis_log;
  EXPECT_EQ(first_start("arena:plan_set=0").second.find("plan_set="), std::string::npos);
  EXPECT_GE(dir[0], 960.0) << dir_log;  // 16 configurations x 60 s
  EXPECT_NE(dir_log.find("job=d profiling_s=960"), std::string::npos) << "direct: d profiles its own batch: " << dir_log;
  EXPECT_GT(dir[2], dis[2]);
}

}  // namespace
}  // namespace tessel
