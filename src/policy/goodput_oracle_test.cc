#include "policy/goodput_oracle.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "goodput/goodput.h"
#include "policy/placement.h"
#include "policy/policy_test_util.h"

namespace tessel {
namespace {

using testing::MakeJob;
using testing::PolicyFixture;

// A belief that counts the rates it is asked for, with a version the test
// changes (as a correction learnt from measurement would).
class CountingBelief : public ThroughputModel {
 public:
  explicit CountingBelief(ThroughputModel& base) : base_(base) {}
  std::string_view name() const override { return "counting"; }
  uint64_t version() const override { return version_; }
  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override {
    ++calls_;
    return base_.Rate(job, type, gpus, nodes);
  }
  int calls() const { return calls_; }
  void Correct() { ++version_; }

 private:
  ThroughputModel& base_;
  int calls_ = 0;
  uint64_t version_ = 0;
};

// Every (job, type, GPUs) question on 1-8 GPUs over the fewest nodes.
std::vector<double> AskAll(GoodputOracle& oracle, const Snapshot& snap) {
  std::vector<double> out;
  for (const JobView* job : snap.jobs) {
    for (int t = 0; t < static_cast<int>(snap.cluster->types().size()); ++t) {
      for (int g = 1; g <= 8; ++g) out.push_back(oracle.Goodput(*job, t, g, MinNodes(*snap.cluster, t, g)));
    }
  }
  return out;
}

std::vector<double> Uncached(const Snapshot& snap, bool type_aware) {
  GoodputOracle oracle(snap, type_aware);
  return AskAll(oracle, snap);
}

// A cache kept across decisions answers as an oracle without one, asks the
// belief nothing it asked before, and starts over when the belief's version
// changes; in the type-blind view a job that starts running is timed on
// its new home type, and a job index naming another spec is asked afresh.
TEST(GoodputOracleTest, CacheAcrossDecisionsAnswersAsWithout) {
  for (bool type_aware : {false, true}) {
    SCOPED_TRACE(type_aware ? "type-aware" : "type-blind");
    PolicyFixture f("sia-64");
    CountingBelief belief(f.belief());
    JobView& rigid = f.AddJob(MakeJob("r").Model("resnet-50").Batch(64).Gpus(2));
    f.AddJob(MakeJob("e").Model("gpt3-350m").Batch(8).Elastic(1, 8));
    GoodputCache cache;
    auto snap_at = [&](SimTime now) {
      Snapshot s = f.Snap(now);
      s.belief = &belief;
      return s;
    };

    Snapshot snap = snap_at(Seconds(60));
    std::vector<double> want = Uncached(snap, type_aware);
    int before = belief.calls();
    GoodputOracle first(snap, type_aware, &cache);
    EXPECT_EQ(AskAll(first, snap), want);
    EXPECT_GT(belief.calls(), before);

    before = belief.calls();
    Snapshot later = snap_at(Seconds(120));
    GoodputOracle second(later, type_aware, &cache);
    EXPECT_EQ(AskAll(second, later), want);
    EXPECT_EQ(belief.calls(), before) << "answered from the cache";

    belief.Correct();
    before = belief.calls();
    GoodputOracle corrected(snap, type_aware, &cache);
    EXPECT_EQ(AskAll(corrected, snap), want);
    EXPECT_GT(belief.calls(), before) << "a new version asks again";

    // Pending, its home is the largest type (T4); now the A100s.
    const int a100 = f.Type("a100-40g");
    ASSERT_NE(a100, f.cluster().LargestType());
    f.Run(rigid, f.Place(a100, 2), Seconds(150));
    Snapshot running = snap_at(Seconds(180));
    GoodputOracle moved(running, type_aware, &cache);
    EXPECT_EQ(AskAll(moved, running), Uncached(running, type_aware));

    rigid.spec = f.jobs()[1].spec;
    Snapshot respecced = snap_at(Seconds(240));
    GoodputOracle other(respecced, type_aware, &cache);
    EXPECT_EQ(AskAll(other, respecced), Uncached(respecced, type_aware));
  }
}

// A throughput-based auto-scaler's view (Or et al.): each replica keeps the
// job's batch (split into micro-steps of at most max_atomic), the total
// capped by max_batch, and statistical efficiency is not counted.
TEST(GoodputOracleTest, WeakScalingThroughputKeepsEachReplicasBatch) {
  PolicyFixture f("pollux-64");
  const int nt = static_cast<int>(f.cluster().types().size());
  goodput::ThroughputParams p;
  p.alpha_c = 0.01;
  p.beta_c = 0.001;
  p.alpha_r = 0.002;
  p.beta_r = 0.0001;
  p.alpha_n = 0.004;
  p.beta_n = 0.0002;
  AgentReport r;
  r.grad = {1.0, 0.05};  // little noise: a larger batch barely helps
  r.limits.init_batch = 300;
  r.limits.max_batch = 4800;
  r.limits.min_atomic = 16;
  r.limits.max_atomic = 256;
  r.adaptive = true;
  r.params.assign(nt, p);
  r.max_replicas.assign(nt, 16);
  JobView& v = f.AddJob(MakeJob("a").Elastic(1, 64));
  v.agent = &r;
  Snapshot snap = f.Snap(0);
  GoodputOracle oracle(snap, /*type_aware=*/false);
  const JobView& job = *snap.jobs[0];
  // 300 per replica in two micro-steps of 150.
  EXPECT_DOUBLE_EQ(oracle.WeakScalingThroughput(job, 0, 1, 1), goodput::PredictThroughput(p, 1, 1, 150, 1));
  EXPECT_DOUBLE_EQ(oracle.WeakScalingThroughput(job, 0, 8, 2), goodput::PredictThroughput(p, 2, 8, 150, 1));
  // 32 replicas: max_batch leaves 150 each, one micro-step.
  EXPECT_DOUBLE_EQ(oracle.WeakScalingThroughput(job, 0, 32, 8), goodput::PredictThroughput(p, 8, 32, 150, 0));
  EXPECT_EQ(oracle.WeakScalingThroughput(job, 0, 0, 1), 0.0);
  // Goodput counts the efficiency lost to a larger batch; throughput does not.
  const double speedup_tput = oracle.WeakScalingThroughput(job, 0, 16, 4) / oracle.WeakScalingThroughput(job, 0, 1, 1);
  const double speedup_good = oracle.Goodput(job, 0, 16, 4) / oracle.Goodput(job, 0, 1, 1);
  EXPECT_GT(speedup_tput, 1.5 * speedup_good);
}

}  // namespace
}  // namespace tessel
