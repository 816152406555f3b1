// Goodput as the goodput policies (pollux, sia) see it, for any job:
//  - a job with an agent (AgentReport): its own fitted step-time model and
//    gradient noise, with the batch its agent would choose on that
//    allocation (goodput/goodput.h);
//  - any other job (no gradient statistics, e.g. the LLM jobs of the Arena
//    traces): efficiency 1 and the belief's throughput, as the Arena
//    artifact did for its Sia baseline.
// Answers are memoised for the oracle's lifetime (one decision).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "policy/snapshot.h"

namespace tessel {

class GoodputOracle {
 public:
  // `type_aware`: false gives Pollux's view, which has no notion of GPU
  // types: a job's model from its home type (where it runs, else where it
  // has measured most) stands for every type, and jobs without an agent
  // are timed on their home type too. true (Sia): each type's own model;
  // a type where the job has only its single-GPU profile borrows the
  // scaling of a type where it ran on more GPUs, scaled by the two types'
  // single-GPU goodput ratio (Sia §4.2, bootstrapping).
  GoodputOracle(const Snapshot& snapshot, bool type_aware);

  // Goodput (samples/s x statistical efficiency) of `job` on `gpus` GPUs of
  // `type` over `nodes` nodes; 0 when it cannot run there.
  double Goodput(const JobView& job, int type, int gpus, int nodes);

  // The most GPUs worth considering for the job: its spec's max_gpus, the
  // batch limit (max_batch / min_atomic), and for agent jobs the Pollux
  // artifact's exploration cap: at most twice the most replicas it has
  // measured (at least 1; across types when type-aware, like Sia's shared
  // max_replicas), and the application's own cap (AgentReport::max_gpus).
  int MaxGpus(const JobView& job) const;

  // The type Pollux's view times a job on.
  int HomeType(const JobView& job) const;

 private:
  double AgentGoodput(const JobView& job, const AgentReport& r, int type, int gpus, int nodes);
  double Evaluate(const AgentReport& r, const goodput::ThroughputParams& p, int gpus, int nodes) const;

  const Snapshot& snap_;
  bool type_aware_;
  std::unordered_map<uint64_t, double> memo_;
};

}  // namespace tessel
