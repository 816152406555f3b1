#include "policy/arena.h"

#include <gtest/gtest.h>

#include "testing/test_data.h"

#include <cstdio>
#include <fstream>

#include "policy/policy_test_util.h"

namespace tessel {
namespace {
using testing::MakeJob;
using testing::PolicyFixture;

std::string ClusterYaml(const std::string& name, const std::string& pools) {
  std::string path = ::tessel::testing::ProcessTempDir() + "/" + name + ".yaml";
  std::ofstream(path) << "name: " << name << "\npools:\n" << pools;
  return path;
}
std::string TwoByFourA100() {
  return ClusterYaml("arena_2x4", "  - {name: a100, gpu: a100-80g, nodes: 2, gpus_per_node: 4, intra: nvswitch}\n");
}
std::string H100AndV100() {
  return ClusterYaml("arena_h100_v100",
                     "  - {name: h100, gpu: h100-sxm, nodes: 1, gpus_per_node: 8, intra: nvswitch}\n"
                     "  - {name: v100, gpu: v100-32g, nodes: 1, gpus_per_node: 8, intra: nvlink-mesh}\n");
}

std::string Show(const Decision& d, const Cluster& c) {
  std::string s;
  for (const auto& [job, alloc] : d.assign) s += (s.empty() ? "j" : "; j") + std::to_string(job) + "=" + alloc.ToString(c);
  return s;
}

TEST(ArenaProbe, Rates) {
  PolicyFixture f(H100AndV100(), PlanMode::kBest);
  for (const char* m : {"gpt3-350m", "gpt3-1.3b", "gpt3-2.7b", "bert-large"}) {
    JobSpec s = MakeJob("x").Model(m).Batch(128).spec();
    for (int t = 0; t < 2; ++t)
      for (int g : {1, 2, 4, 8}) {
        const JobRate& r = f.belief().Rate(s, t, g, 1);
        std::printf("%s t%d g%d fits=%d iter=%.4f\n", m, t, g, r.fits, r.iteration_time_s);
      }
  }
}

}  // namespace
}  // namespace tessel
