#include "policy/goodput_oracle.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

}  // namespace
}  // namespace tessel
