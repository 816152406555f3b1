// Goodput as the goodput policies (pollux, sia) see it, for any job:
//  - a job with an agent (AgentReport): its own fitted step-time model and
//    gradient noise, with the batch its agent would choose on that
//    allocation (goodput/goodput.h);
//  - any other job (no gradient statistics, e.g. the LLM jobs of the Arena
//    traces): efficiency 1 and the belief's throughput, as the Arena
//    artifact did for its Sia baseline.
// Answers are memoised for the oracle's lifetime (one decision); those of
// jobs without an agent also across decisions in a GoodputCache, if given.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/snapshot.h"

namespace tessel {

// The goodputs of jobs without an agent, kept across decisions: a policy
// owns one and hands it to each decision's GoodputOracle. Such a job's
// goodput is a function of its spec, its home type (type-blind view), the
// cluster and the belief alone, so entries stay valid while the snapshots
// name the same cluster and belief and the belief's version() is unchanged;
// the oracle forgets them all otherwise. Agent jobs' goodputs follow their
// reports, which change: those are kept for one decision only. One cache
// serves one view (type-aware or not).
class GoodputCache {
 private:
  friend class GoodputOracle;
  struct JobEntry {
    const JobSpec* spec = nullptr;
    std::vector<std::pair<uint64_t, double>> answers;  // by key, ascending
  };
  // Readies the cache for a decision on `snap` in the view `type_aware`.
  void Begin(const Snapshot& snap, bool type_aware);
  // The entry of `job`, emptied when it held another spec's answers.
  JobEntry& Entry(const JobView& job);

  const Cluster* cluster_ = nullptr;
  const ThroughputModel* belief_ = nullptr;
  uint64_t version_ = 0;
  bool type_aware_ = false;
  std::unordered_map<int, JobEntry> jobs_;  // by job index
};

class GoodputOracle {
 public:
  // `type_aware`: false gives Pollux's view, which has no notion of GPU
  // types: a job's model from its home type (where it runs, else where it
  // has measured most) stands for every type, and jobs without an agent
  // are timed on their home type too. true (Sia): each type's own model;
  // a type where the job has only its single-GPU profile borrows the
  // scaling of a type where it ran on more GPUs, scaled by the two types'
  // single-GPU goodput ratio (Sia §4.2, bootstrapping).
  // `cache` (optional, outliving the oracle): answers for jobs without an
  // agent kept from earlier decisions, and where this one's are kept.
  GoodputOracle(const Snapshot& snapshot, bool type_aware, GoodputCache* cache = nullptr);

  // Goodput (samples/s x statistical efficiency) of `job` on `gpus` GPUs of
  // `type` over `nodes` nodes; 0 when it cannot run there.
  double Goodput(const JobView& job, int type, int gpus, int nodes);

  // Samples/s of `job` on `gpus` GPUs of `type` over `nodes` when every
  // replica keeps the per-GPU batch the job was written for (init_batch,
  // accumulating where it exceeds max_atomic) and the total batch grows
  // with the replicas up to max_batch: weak scaling, what a
  // throughput-based auto-scaler counts (Or et al., MLSys 2020). Not
  // memoised. A job without an agent: its throughput (= Goodput). 0 when
  // it cannot run there.
  double WeakScalingThroughput(const JobView& job, int type, int gpus, int nodes);

  // The most GPUs worth considering for the job: its spec's max_gpus, the
  // batch limit (max_batch / min_atomic), and for agent jobs the Pollux
  // artifact's exploration cap: at most twice the most replicas it has
  // measured (at least 1; across types when type-aware, like Sia's shared
  // max_replicas), and the application's own cap (AgentReport::max_gpus).
  int MaxGpus(const JobView& job) const;

  // The type Pollux's view times a job on.
  int HomeType(const JobView& job) const;

 private:
  // The step-time model the job's goodput on `type` is evaluated with: its
  // own there, type-blind any it has; null when it has none (`any` tells
  // whether it has one on some type).
  static const goodput::ThroughputParams* OwnParams(const AgentReport& r, int type, bool type_aware, bool* any);
  double AgentGoodput(const JobView& job, const AgentReport& r, int type, int gpus, int nodes);
  double Evaluate(const AgentReport& r, const goodput::ThroughputParams& p, int gpus, int nodes) const;
  // A job without an agent: the belief's samples/s on `gpus` of `home`
  // (over `nodes`, or the fewest nodes in the type-blind view), 0 when it
  // does not fit there or, type-blind, not on `type` either.
  double BeliefGoodput(const JobView& job, int home, int type, int gpus, int nodes);

  const Snapshot& snap_;
  bool type_aware_;
  std::unordered_map<uint64_t, double> memo_;
  GoodputCache* cache_;
  // The cache's entry of the job asked last (callers ask about one job at
  // a time); the map keeps entries in place as it grows.
  const JobView* last_job_ = nullptr;
  GoodputCache::JobEntry* last_entry_ = nullptr;
};

}  // namespace tessel
