#include "policy/fcfs.h"

#include <gtest/gtest.h>

#include "policy/policy_test_util.h"

namespace tessel {
namespace {

using testing::MakeJob;
using testing::PolicyFixture;

std::unique_ptr<Policy> Make(const std::string& spec, bool arena_artifact = false) {
  PolicyContext ctx;
  ctx.arena_artifact = arena_artifact;
  auto p = PolicyRegistry::Builtin().Create(spec, ctx);
  EXPECT_TRUE(p.ok()) << spec << ": " << p.status().ToString();
  return p.ok() ? std::move(p).value() : nullptr;
}

bool Starts(const Decision& d, const JobView& j) {
  for (const auto& [idx, alloc] : d.assign)
    if (idx == j.index && !alloc.empty()) return true;
  return false;
}

// 316 of 320 A100s busy. h (8 A100s) cannot start. Under block=all it holds
// up everything behind it; under block=type (the Arena artifact's FCFS)
// only the jobs for A100s: the A40 job k starts, the small A100 job m
// still waits behind h though 4 A100s are free.
TEST(FcfsTest, BlockPerTypeHoldsUpOnlyTheBlockedType) {
  PolicyFixture f("arena-1280");
  const int a100 = f.Type("a100-40g");
  JobView& busy = f.AddJob(MakeJob("busy").Model("gpt3-350m").Gpus(316).Type("a100-40g"));
  f.Run(busy, f.Place(a100, 316));
  JobView& h = f.AddJob(MakeJob("h").Model("gpt3-350m").Gpus(8).Type("a100-40g").Submit(Seconds(1)));
  JobView& k = f.AddJob(MakeJob("k").Model("gpt3-350m").Gpus(2).Type("a40").Submit(Seconds(2)));
  JobView& m = f.AddJob(MakeJob("m").Model("gpt3-350m").Gpus(2).Type("a100-40g").Submit(Seconds(3)));
  Snapshot snap = f.Snap(Seconds(10));

  auto strict = Make("fcfs");
  Decision all = strict->Decide(snap);
  EXPECT_FALSE(Starts(all, h));
  EXPECT_FALSE(Starts(all, k));
  EXPECT_FALSE(Starts(all, m));

  for (bool artifact : {false, true}) {
    auto policy = artifact ? Make("fcfs", /*arena_artifact=*/true) : Make("fcfs:block=type");
    Decision per_type = policy->Decide(snap);
    EXPECT_FALSE(Starts(per_type, h));
    EXPECT_TRUE(Starts(per_type, k));
    EXPECT_FALSE(Starts(per_type, m));
  }
}

TEST(FcfsTest, BlockOptionIsCheckedAndNamesWhatIsAccepted) {
  auto bad = PolicyRegistry::Builtin().Create("fcfs:block=some", PolicyContext{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected all or type"), std::string::npos) << bad.status().message();
  auto mixed = PolicyRegistry::Builtin().Create("fcfs:block=type:backfill=easy", PolicyContext{});
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("backfill=none"), std::string::npos) << mixed.status().message();
  // Under the artifact's setting a backfilling FCFS keeps its own rule.
  PolicyContext artifact;
  artifact.arena_artifact = true;
  EXPECT_TRUE(PolicyRegistry::Builtin().Create("fcfs:backfill=easy", artifact).ok());
}

// What a simulator hands the belief ahead (LikelyQuestions) covers every
// question fcfs asks of pending jobs, with and without EASY backfilling:
// jobs on any type, on a requested type, on allowed types, one too large
// for most types, and a head job blocked so that the reservation is priced.
TEST(FcfsTest, LikelyQuestionsCoverWhatItAsks) {
  for (const std::string spec : {"fcfs", "fcfs:backfill=easy", "fcfs:block=type"}) {
    SCOPED_TRACE(spec);
    PolicyFixture f("arena-1280");
    f.Run(f.AddJob(MakeJob("big").Model("gpt3-1.3b").Gpus(300)), f.Place(f.Type("a100-40g"), 300));
    f.AddJob(MakeJob("head").Model("gpt3-350m").Gpus(32).Type("a100-40g"));
    f.AddJob(MakeJob("any").Model("bert__1.3B").Batch(128).Gpus(4));
    f.AddJob(MakeJob("allowed").Model("gpt3-1.3b").Gpus(8).Allowed({"v100-32g", "a10"}));
    f.AddJob(MakeJob("wide").Model("moe__690M").Batch(256).Gpus(128));
    auto policy = Make(spec);
    ASSERT_NE(policy, nullptr);
    const size_t asked = testing::ExpectLikelyQuestionsCover(*policy, f, {Seconds(0)});
    // Without backfilling the blocked head stops the queue: its question alone.
    EXPECT_GE(asked, spec == "fcfs" ? 1u : 4u);
  }
}

}  // namespace
}  // namespace tessel
