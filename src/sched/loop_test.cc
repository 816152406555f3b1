// The scheduling loop and the policy contract check, against a scripted
// backend and policy (no simulator).
#include "sched/loop.h"

#include <gtest/gtest.h>

#include <map>

#include "policy/policy_test_util.h"

namespace tessel {
namespace {

using testing::MakeJob;
using testing::PolicyFixture;

// --- CheckDecision -------------------------------------------------------------

class CheckDecisionTest : public ::testing::Test {
 protected:
  CheckDecisionTest() : f_("demo") {
    a100_ = f_.Type("a100-80g");
    h100_ = f_.Type("h100-sxm");
  }
  PolicyFixture f_;
  int a100_ = -1, h100_ = -1;
};

TEST_F(CheckDecisionTest, AcceptsGpusPassedFromOneJobToAnother) {
  JobView& a = f_.AddJob(MakeJob("a").Gpus(8));
  JobView& b = f_.AddJob(MakeJob("b").Gpus(8));
  // Every A100 node busy but a's.
  Allocation all = f_.Place(a100_, 48);
  Allocation mine{all.type, {all.parts.front()}};
  f_.Run(a, mine);
  Allocation rest{all.type, {all.parts.begin() + 1, all.parts.end()}};
  JobView& c = f_.AddJob(MakeJob("c").Gpus(40));
  f_.Run(c, rest);
  Decision d;
  d.assign = {{a.index, {}}, {b.index, mine}};
  EXPECT_TRUE(CheckDecision(f_.Snap(0), d, "p").ok());
}

TEST_F(CheckDecisionTest, KeepingAnAllocationTakesNothing) {
  JobView& a = f_.AddJob(MakeJob("a").Gpus(8));
  Allocation alloc = f_.Place(h100_, 16);
  f_.Run(a, alloc);
  Decision d;
  d.assign = {{a.index, alloc}};
  EXPECT_TRUE(CheckDecision(f_.Snap(0), d, "p").ok());
}

struct BadCase {
  std::string name;
  std::string message;
};

TEST_F(CheckDecisionTest, RefusesContractViolations) {
  JobView& a = f_.AddJob(MakeJob("a").Gpus(8));
  JobView& b = f_.AddJob(MakeJob("b").Gpus(8));
  Allocation h = f_.Place(h100_, 8);
  f_.Run(a, h);
  Allocation wrong_type = h;
  wrong_type.type = a100_;
  Allocation too_many{h100_, {{h.parts[0].node, 8}}};
  Allocation bad_node{h100_, {{999, 1}}};
  std::vector<std::pair<BadCase, Decision>> cases;
  auto add = [&](std::string name, std::string message, Decision d) {
    cases.push_back({{std::move(name), std::move(message)}, std::move(d)});
  };
  Decision d;
  d.reject = {{7, "x"}};
  add("reject unknown", "policy p rejected job index 7, which is not active", d);
  d = {};
  d.reject = {{b.index, "x"}, {b.index, "y"}};
  add("reject twice", "policy p rejected job index 1, which is not active", d);
  d = {};
  d.reject = {{b.index, "x"}};
  d.assign = {{b.index, too_many}};
  add("assign after reject", "policy p assigned job index 1, which is not active", d);
  d = {};
  d.assign = {{-1, too_many}};
  add("assign unknown", "policy p assigned job index -1, which is not active", d);
  d = {};
  d.assign = {{b.index, Allocation{42, {{0, 1}}}}};
  add("no such type", "policy p gave job b an allocation without a valid GPU type", d);
  d = {};
  d.assign = {{b.index, too_many}};
  add("GPUs held by another job", "policy p gave job b " + too_many.ToString(f_.cluster()) + ", but node " +
                                      std::to_string(h.parts[0].node) + " has 0 free GPUs of that type", d);
  d = {};
  d.assign = {{b.index, bad_node}};
  add("node out of range", "policy p gave job b " + bad_node.ToString(f_.cluster()) +
                               ", but node 999 has no free GPUs of that type", d);
  d = {};
  d.assign = {{a.index, {}}, {b.index, wrong_type}};
  add("node of another type", "policy p gave job b " + wrong_type.ToString(f_.cluster()) + ", but node " +
                                  std::to_string(h.parts[0].node) + " has 8 free GPUs of that type", d);
  for (const auto& [c, decision] : cases) {
    Status s = CheckDecision(f_.Snap(0), decision, "p");
    EXPECT_EQ(s.code(), StatusCode::kInternal) << c.name;
    EXPECT_EQ(s.message(), c.message) << c.name;
  }
}

TEST_F(CheckDecisionTest, FailedNodeGivesNothingBack) {
  JobView& a = f_.AddJob(MakeJob("a").Gpus(8));
  JobView& b = f_.AddJob(MakeJob("b").Gpus(8));
  Allocation h = f_.Place(h100_, 8);
  f_.Run(a, h);
  // The node a runs on fails: its GPUs are not free, and a's release of
  // them gives nothing back.
  Snapshot snap = f_.Snap(0);
  std::vector<int> free(snap.free_gpus.begin(), snap.free_gpus.end());
  std::vector<uint8_t> up(snap.node_up.begin(), snap.node_up.end());
  up[h.parts[0].node] = 0;
  free[h.parts[0].node] = 0;
  snap.free_gpus = free;
  snap.node_up = up;
  Decision d;
  d.assign = {{a.index, {}}, {b.index, h}};
  EXPECT_EQ(CheckDecision(snap, d, "p").code(), StatusCode::kInternal);
}

// --- the loop ------------------------------------------------------------------

// A backend whose events are scripted: at each time, whether a policy should
// be asked and whether a job became active. Jobs live in a PolicyFixture.
class ScriptedBackend : public Backend {
 public:
  explicit ScriptedBackend(PolicyFixture& f) : f_(f) {}
  std::map<SimTime, BackendEvents> script;
  bool finished = false;
  bool quiescent = false;
  std::vector<SimTime> applied;
  std::vector<SimTime> settled;
  SimTime snap_time = -1;
  Snapshot snap;

  SimTime NextEvent() const override {
    auto it = script.upper_bound(last_);
    return it == script.end() ? kNever : it->first;
  }
  Result<BackendEvents> Advance(SimTime now) override {
    BackendEvents out;
    for (auto it = script.upper_bound(last_); it != script.end() && it->first <= now; ++it) {
      out.decide |= it->second.decide;
      out.activated |= it->second.activated;
      ++events_;
    }
    last_ = now;
    return out;
  }
  void Observe(SimTime now, Snapshot* s) override {
    *s = f_.Snap(now);
    snap_time = now;
  }
  Status Apply(const Decision& d, SimTime now) override {
    applied.push_back(now);
    return Status::Ok();
  }
  void Settle(SimTime now) override { settled.push_back(now); }
  bool HasActiveJobs() const override { return !f_.jobs().empty(); }
  bool Finished() const override { return finished; }
  bool Quiescent() const override { return quiescent; }
  std::string Outstanding() const override { return "2 jobs unfinished"; }
  int64_t events() const override { return events_; }

 private:
  PolicyFixture& f_;
  SimTime last_ = -1;
  int64_t events_ = 0;
};

// Records when it was asked and whether at a round; returns `next`.
class RecordingPolicy : public Policy {
 public:
  explicit RecordingPolicy(bool rounds) { traits_.uses_rounds = rounds; }
  std::string_view name() const override { return "recording"; }
  PolicyTraits traits() const override { return traits_; }
  Decision Decide(const Snapshot& s) override {
    calls.push_back({s.now, s.at_round});
    Decision d = next;
    next = {};
    return d;
  }
  std::vector<std::pair<SimTime, bool>> calls;
  Decision next;

 private:
  PolicyTraits traits_;
};

TEST(SchedulerLoop, DecidesOnEventsAndRoundsFromTheFirstActivation) {
  PolicyFixture f("demo");
  f.AddJob(MakeJob("a"));
  ScriptedBackend backend(f);
  backend.script[Seconds(100)] = {true, true};
  backend.script[Seconds(700)] = {true, false};
  backend.script[Seconds(1000)] = {false, false};
  RecordingPolicy policy(/*rounds=*/true);
  ManualClock clock;
  SchedulerLoop loop(policy, backend, clock, LoopConfig{Seconds(300), Seconds(1000)});
  ASSERT_TRUE(loop.Run().ok());
  // Rounds at 300, 600, 900 (the first multiple after the activation at
  // 100), events at 100 and 700; the horizon ends it.
  std::vector<std::pair<SimTime, bool>> want = {{Seconds(100), false}, {Seconds(300), true}, {Seconds(600), true},
                                                {Seconds(700), false}, {Seconds(900), true}};
  EXPECT_EQ(policy.calls, want);
  EXPECT_EQ(loop.decisions(), 5);
  EXPECT_EQ(loop.timer_events(), 3);
  EXPECT_EQ(backend.applied.size(), 5u);
}

TEST(SchedulerLoop, WakesWhenThePolicyAsks) {
  PolicyFixture f("demo");
  f.AddJob(MakeJob("a"));
  ScriptedBackend backend(f);
  backend.script[Seconds(10)] = {true, true};
  backend.script[Seconds(500)] = {false, false};
  RecordingPolicy policy(/*rounds=*/false);
  policy.next.wake_at = Seconds(42);
  ManualClock clock;
  SchedulerLoop loop(policy, backend, clock, LoopConfig{Seconds(300), Seconds(400)});
  ASSERT_TRUE(loop.Run().ok());
  std::vector<std::pair<SimTime, bool>> want = {{Seconds(10), false}, {Seconds(42), false}};
  EXPECT_EQ(policy.calls, want);
  EXPECT_EQ(loop.timer_events(), 1);
}

TEST(SchedulerLoop, ContractViolationIsAnInternalErrorNamingThePolicy) {
  PolicyFixture f("demo");
  f.AddJob(MakeJob("a"));
  ScriptedBackend backend(f);
  backend.script[Seconds(1)] = {true, true};
  RecordingPolicy policy(false);
  policy.next.reject = {{5, "no"}};
  ManualClock clock;
  SchedulerLoop loop(policy, backend, clock, LoopConfig{});
  Status s = loop.Run();
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "policy recording rejected job index 5, which is not active");
  EXPECT_TRUE(backend.applied.empty()) << "a refused decision never reaches the backend";
}

TEST(SchedulerLoop, StallWithNothingScheduledIsReported) {
  PolicyFixture f("demo");
  f.AddJob(MakeJob("a"));
  ScriptedBackend backend(f);
  RecordingPolicy policy(false);
  ManualClock clock;
  SchedulerLoop loop(policy, backend, clock, LoopConfig{});
  Status s = loop.Run();
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "simulation stalled at 00:00:00 with 2 jobs unfinished and nothing scheduled");
}

TEST(SchedulerLoop, QuiescentBackendEndsAnEventPolicyAtOnceAndARoundPolicyAfterItsRound) {
  for (bool rounds : {false, true}) {
    PolicyFixture f("demo");
    f.AddJob(MakeJob("a"));
    ScriptedBackend backend(f);
    backend.script[Seconds(10)] = {true, true};
    backend.quiescent = true;
    RecordingPolicy policy(rounds);
    ManualClock clock;
    SchedulerLoop loop(policy, backend, clock, LoopConfig{Seconds(300)});
    ASSERT_TRUE(loop.Run().ok());
    EXPECT_EQ(policy.calls.size(), rounds ? 2u : 1u) << "rounds=" << rounds;
    EXPECT_EQ(loop.now(), rounds ? Seconds(300) : Seconds(10));
  }
}

// A decision that only releases GPUs (suspends a running job) and leaves
// the backend quiescent did not see the state it made: the policy decides
// once more at the same instant before the loop may stop. A decision that
// changes nothing does not.
TEST(SchedulerLoop, QuiescentAfterReleasingGpusDecidesOnceMoreAtTheSameInstant) {
  for (bool releases : {true, false}) {
    PolicyFixture f("demo");
    JobView& a = f.AddJob(MakeJob("a").Gpus(8));
    f.Run(a, f.Place(f.Type("a100-80g"), 8));
    ScriptedBackend backend(f);
    backend.script[Seconds(10)] = {true, true};
    backend.quiescent = true;
    RecordingPolicy policy(/*rounds=*/false);
    if (releases) policy.next.assign = {{a.index, Allocation{}}};
    ManualClock clock;
    SchedulerLoop loop(policy, backend, clock, LoopConfig{});
    ASSERT_TRUE(loop.Run().ok());
    std::vector<std::pair<SimTime, bool>> once = {{Seconds(10), false}};
    std::vector<std::pair<SimTime, bool>> twice = {{Seconds(10), false}, {Seconds(10), false}};
    EXPECT_EQ(policy.calls, releases ? twice : once) << "releases=" << releases;
  }
}

TEST(SchedulerLoop, StopAndPokeFromOutside) {
  PolicyFixture f("demo");
  f.AddJob(MakeJob("a"));
  ScriptedBackend backend(f);
  backend.script[Seconds(10)] = {false, false};
  backend.script[Seconds(20)] = {false, false};
  RecordingPolicy policy(false);
  ManualClock clock;
  SchedulerLoop loop(policy, backend, clock, LoopConfig{});
  loop.Poke();
  ASSERT_TRUE(loop.Step().value());
  EXPECT_EQ(policy.calls.size(), 1u) << "a poke asks for a decision";
  loop.Stop();
  EXPECT_FALSE(loop.Step().value());
  EXPECT_EQ(loop.now(), Seconds(10));
}

TEST(SystemClock, NotifyEndsAWaitEarly) {
  SystemClock clock;
  SimTime start = clock.Now();
  clock.Notify();  // before the wait: not lost
  SimTime woke = clock.WaitUntil(start + Seconds(30));
  EXPECT_LT(woke, start + Seconds(30));
  EXPECT_GE(clock.WaitUntil(start), start) << "a time in the past returns at once";
}

}  // namespace
}  // namespace tessel
