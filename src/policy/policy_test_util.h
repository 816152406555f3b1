// Builders for policy tests: a cluster, jobs in given phases, and a
// Snapshot over them, without the simulator.
//   PolicyFixture f("demo");                      // or any cluster spec
//   JobView& a = f.AddJob(MakeJob("a").Model("gpt3-1.3b").Gpus(8).Iterations(1000));
//   f.Run(a, f.Place(a100, 8));                    // running on 8 A100s
//   Decision d = policy->Decide(f.Snap(/*now=*/Seconds(60)));
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "policy/corrected_throughput.h"
#include "policy/placement.h"
#include "policy/policy.h"

namespace tessel::testing {

class JobBuilder {
 public:
  explicit JobBuilder(std::string id) {
    spec_.id = std::move(id);
    spec_.model = "gpt3-350m";
    spec_.global_batch = 32;
    spec_.iterations = 1000;
  }
  JobBuilder& Model(std::string m) { spec_.model = std::move(m); return *this; }
  JobBuilder& Batch(int b) { spec_.global_batch = b; return *this; }
  JobBuilder& Gpus(int g) {
    spec_.requested_gpus = g;
    spec_.min_gpus = g;
    spec_.max_gpus = g;
    return *this;
  }
  JobBuilder& Elastic(int lo, int hi) { spec_.min_gpus = lo; spec_.max_gpus = hi; return *this; }
  JobBuilder& Type(std::string t) { spec_.requested_gpu_type = std::move(t); return *this; }
  JobBuilder& Required(bool r = true) { spec_.gpu_type_required = r; return *this; }
  JobBuilder& Allowed(std::vector<std::string> types) { spec_.allowed_gpu_types = std::move(types); return *this; }
  JobBuilder& Submit(SimTime t) { spec_.submit = t; return *this; }
  JobBuilder& Iterations(double n) { spec_.iterations = n; return *this; }
  JobBuilder& Priority(int p) { spec_.priority = p; return *this; }
  JobBuilder& Deadline(SimTime t) { spec_.deadline = t; return *this; }
  const JobSpec& spec() const { return spec_; }

 private:
  JobSpec spec_;
};
inline JobBuilder MakeJob(std::string id) { return JobBuilder(std::move(id)); }

class PolicyFixture {
 public:
  explicit PolicyFixture(std::string_view cluster, PlanMode mode = PlanMode::kDataParallel)
      : cluster_(LoadCluster(cluster).value()), belief_(cluster_, mode) {
    free_.resize(cluster_.nodes().size());
    up_.assign(cluster_.nodes().size(), 1);
    for (const ClusterNode& n : cluster_.nodes()) free_[n.id] = n.gpus;
  }

  const Cluster& cluster() const { return cluster_; }
  EstimatorThroughput& belief() { return belief_; }
  int Type(std::string_view gpu) const { return cluster_.FindType(gpu); }

  // Adds a pending job (work = spec's iterations).
  JobView& AddJob(const JobBuilder& b) {
    specs_.push_back(b.spec());
    JobView v;
    v.index = static_cast<int>(views_.size());
    v.spec = &specs_.back();
    v.total_iterations = b.spec().iterations.value_or(1000);
    v.attained_gpu_s_by_type.assign(cluster_.types().size(), 0.0);
    views_.push_back(v);
    return views_.back();
  }
  // GPUs for `gpus` of `type`, consolidated, taken from the free pool.
  Allocation Place(int type, int gpus) {
    Snapshot s = Snap(0);
    FreeMap fm(s);
    Allocation a = fm.Place(type, gpus).value();
    return a;
  }
  // Marks `job` running on `alloc` since `since` (takes the GPUs).
  void Run(JobView& job, const Allocation& alloc, SimTime since = 0) {
    for (const Placement& p : alloc.parts) free_[p.node] -= p.gpus;
    job.alloc = alloc;
    job.phase = JobPhase::kRunning;
    job.first_start = job.first_start == kNever ? since : job.first_start;
    job.alloc_since = since;
  }
  Snapshot Snap(SimTime now) {
    ptrs_.clear();
    for (const JobView& v : views_) ptrs_.push_back(&v);
    Snapshot s;
    s.now = now;
    s.cluster = &cluster_;
    s.free_gpus = free_;
    s.node_up = up_;
    s.jobs = ptrs_;
    s.belief = &belief_;
    s.round_length = Seconds(300);
    return s;
  }
  std::deque<JobView>& jobs() { return views_; }

 private:
  Cluster cluster_;
  EstimatorThroughput belief_;
  std::deque<JobSpec> specs_;
  std::deque<JobView> views_;
  std::vector<const JobView*> ptrs_;
  std::vector<int> free_;
  std::vector<uint8_t> up_;
};

// `policy`'s decisions on `f`'s jobs at time 0 under a belief corrected over
// f's: twice as it stands, then once after SetFactor(job_id, type, factor).
// A policy that keeps answers across decisions must see the correction.
inline std::vector<Decision> DecisionsAroundACorrection(Policy& policy, PolicyFixture& f, const std::string& job_id,
                                                        int type, double factor) {
  CorrectedThroughput belief(f.belief());
  Snapshot s = f.Snap(0);
  s.belief = &belief;
  std::vector<Decision> out;
  out.push_back(policy.Decide(s));
  out.push_back(policy.Decide(s));
  belief.SetFactor(job_id, type, factor);
  out.push_back(policy.Decide(s));
  return out;
}

// The allocation a decision gives `job`, or nullptr if it does not name it.
inline const Allocation* Assigned(const Decision& d, int job) {
  for (const auto& [index, alloc] : d.assign)
    if (index == job) return &alloc;
  return nullptr;
}

// Each active job's allocation once the decision is applied (its current
// one when the decision does not name it), in snapshot order.
inline std::vector<Allocation> After(const Snapshot& snap, const Decision& d) {
  std::vector<Allocation> out;
  for (const JobView* j : snap.jobs) {
    const Allocation* a = Assigned(d, j->index);
    out.push_back(a ? *a : j->alloc);
  }
  return out;
}

// No node gives out more GPUs than it has, and every part is a positive
// count on a node of the allocation's type.
inline void ExpectNoDoubleBooking(const Snapshot& snap, const std::vector<Allocation>& allocs) {
  std::vector<int> used(snap.cluster->nodes().size(), 0);
  for (const Allocation& a : allocs) {
    for (const Placement& p : a.parts) {
      ASSERT_GE(p.node, 0);
      ASSERT_LT(p.node, static_cast<int>(used.size()));
      EXPECT_EQ(snap.cluster->nodes()[p.node].type, a.type);
      EXPECT_GT(p.gpus, 0);
      used[p.node] += p.gpus;
    }
  }
  for (const ClusterNode& n : snap.cluster->nodes()) EXPECT_LE(used[n.id], n.gpus) << "node " << n.id;
}

// Records the belief's questions (job, type, GPUs, nodes), answering as the
// model it wraps.
class QuestionRecorder : public ThroughputModel {
 public:
  explicit QuestionRecorder(ThroughputModel& base) : base_(base) {}
  std::string_view name() const override { return base_.name(); }
  const JobRate& Rate(const JobSpec& job, int type, int gpus, int nodes) override {
    asked.insert({job.id, type, gpus, nodes});
    return base_.Rate(job, type, gpus, nodes);
  }
  const JobRate& RateShared(const JobSpec& job, int type, int gpus, int nodes, double share) override {
    asked.insert({job.id, type, gpus, nodes});
    return base_.RateShared(job, type, gpus, nodes, share);
  }
  std::set<std::tuple<std::string, int, int, int>> asked;

 private:
  ThroughputModel& base_;
};

// Decides with `policy` at each of `times` on the fixture's jobs, the belief
// behind a QuestionRecorder, and checks that every question it asks is among
// its LikelyQuestions about those jobs (what a simulator hands the belief
// ahead). Returns how many distinct questions it asked.
inline size_t ExpectLikelyQuestionsCover(Policy& policy, PolicyFixture& f, std::initializer_list<SimTime> times) {
  std::set<std::tuple<std::string, int, int, int>> likely;
  for (const JobView* job : f.Snap(0).jobs)
    for (const RateQuery& q : policy.LikelyQuestions(*job->spec, f.cluster()))
      likely.insert({q.job->id, q.type, q.gpus, q.nodes});
  QuestionRecorder recorder(f.belief());
  for (SimTime now : times) {
    Snapshot snap = f.Snap(now);
    snap.belief = &recorder;
    policy.Decide(snap);
  }
  for (const auto& q : recorder.asked) {
    EXPECT_TRUE(likely.count(q)) << policy.name() << " asked about " << std::get<0>(q) << " on type " << std::get<1>(q)
                                 << " x" << std::get<2>(q) << " on " << std::get<3>(q) << " nodes";
  }
  return recorder.asked.size();
}

}  // namespace tessel::testing
