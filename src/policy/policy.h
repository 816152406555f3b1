// The policy interface and its registry. A policy is a decision function:
// given a read-only Snapshot it returns a Decision. Implementations must
//  - not mutate the snapshot (it is const) or keep pointers into it;
//  - return the same Decision for the same snapshot (they may memoise, e.g.
//    an LP solution keyed by the set of jobs, but never depend on call
//    history in a way the snapshot does not determine). Where the policy's
//    definition carries state, it is the policy's own and documented:
//    elasticflow remembers which jobs it admitted (admission happens once,
//    at arrival), gavel keeps its last LP solution between rounds (Gavel
//    allocates at round boundaries) and re-solves from the last basis, so
//    of several optimal solutions it may pick another than a fresh solve;
//    the same sequence of snapshots still gives the same decisions;
//  - only assign GPUs that are free in the snapshot or released by the same
//    Decision (the backend checks and reports a violation as a bug);
//  - be deterministic: ties break on job index, node id, type index.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "network/network_model.h"
#include "policy/profiling.h"
#include "policy/snapshot.h"
#include "policy/throughput.h"

namespace tessel {

struct PolicyTraits {
  // Called at every scheduling round, not only on events.
  bool uses_rounds = false;
  // How jobs choose plans under this policy (the belief and truth use it).
  PlanMode plan_mode = PlanMode::kDataParallel;
  // Restarts pay the parallelism plan search time (adaptive policies).
  bool searches_plans = false;
  // ... and that search is a full one, not pruned by grids.
  bool full_plan_search = false;
  // Jobs' agents tune their batch size for goodput (pollux, sia); under
  // other policies every job keeps its trace's batch size.
  bool adapts_batch = false;
  // Each arriving job with an agent is profiled on one GPU of every type
  // (Sia's bootstrapping), so its per-type models start with those steps.
  bool profiles_types = false;
  // What profiling a new job costs before the policy sees it (arena).
  ProfilingModel profiling;
  // How the backend starts a multi-node job's transfer on busy links
  // (ada-srsf and its baselines; everyone else shares at once).
  CommSchedule comm_schedule = CommSchedule::kConcurrent;
  // ada-srsf:paper_rest_size=true, under --setting ddl-paper only: AdaDUAL
  // reads the other transfer's remaining size as Wang et al.'s code does
  // (sim/shared_gpu_sim.h).
  bool paper_rest_size = false;
  // Policy::TotalSpeedup prices a cluster size (--autoscale): the goodput
  // policies.
  bool prices_cluster_size = false;
};

// What a job's speedup counts when a cluster size is priced
// (--autoscale-by): goodput (Pollux: samples/s x statistical efficiency,
// at the batch the job would choose), or throughput alone (a
// throughput-based auto-scaler such as Or et al.'s, MLSys 2020: every
// replica keeps the job's per-GPU batch, the total batch grows with them,
// and statistical efficiency is not counted).
enum class SpeedupBasis { kGoodput, kThroughput };

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  virtual PolicyTraits traits() const = 0;
  virtual Decision Decide(const Snapshot& snapshot) = 0;
  // Cluster auto-scaling (sched/autoscaler.h; Pollux, OSDI 2021, §5): the
  // sum over active jobs of their speedup (goodput over their goodput on
  // one GPU) with their current allocations when `capacity` is empty, else
  // with the allocations the policy would give `capacity` GPUs per type
  // (nothing changes); a speedup counts `basis` (goodput or throughput over
  // the same on one GPU). nullopt: the policy has no goodput model to price
  // a cluster size with (every policy but the goodput ones).
  virtual std::optional<double> TotalSpeedup(const Snapshot& snapshot, std::span<const int> capacity,
                                             SpeedupBasis basis) {
    (void)snapshot;
    (void)capacity;
    (void)basis;
    return std::nullopt;
  }
  // The belief's questions this policy will likely ask about `job` once it
  // has arrived on `cluster` (RateShared's arguments), for a simulator to
  // hand the belief ahead of time (ThroughputModel::Anticipate). They
  // change no decision: a question the policy never asks costs only
  // background work. Default: none.
  virtual std::vector<RateQuery> LikelyQuestions(const JobSpec& job, const Cluster& cluster) const {
    (void)job;
    (void)cluster;
    return {};
  }
};

// The baselines' common base: a fixed name (a string literal) and traits
// fixed at construction (rounds or not; the plan mode is the
// --baseline-parallelism the policy was built with).
class BaselinePolicy : public Policy {
 public:
  BaselinePolicy(std::string_view name, bool uses_rounds, PlanMode plan_mode) : name_(name) {
    traits_.uses_rounds = uses_rounds;
    traits_.plan_mode = plan_mode;
  }
  std::string_view name() const override { return name_; }
  PolicyTraits traits() const override { return traits_; }

 protected:
  PolicyTraits& mutable_traits() { return traits_; }

 private:
  std::string_view name_;
  PolicyTraits traits_;
};

// Options from a policy spec "name:key=value:key=value" (e.g.
// "fcfs:backfill=easy", "tiresias:queues=2:threshold=3600").
class PolicyOptions {
 public:
  PolicyOptions() = default;
  explicit PolicyOptions(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  bool Has(const std::string& key) const { return values_.count(key) > 0; }
  std::string GetString(const std::string& key, const std::string& fallback) const;
  Result<double> GetDouble(const std::string& key, double fallback) const;
  Result<bool> GetBool(const std::string& key, bool fallback) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// Context every policy is built with.
struct PolicyContext {
  PlanMode baseline_plan_mode = PlanMode::kDataParallel;  // --baseline-parallelism
  uint64_t seed = 0;
  // --setting arena-artifact: policies take the Arena artifact's rules as
  // their defaults where they differ (fcfs: head-of-line blocking per GPU
  // type).
  bool arena_artifact = false;
  // --setting ddl-paper: Wang et al.'s shared-GPU simulator plays the
  // policy (sim/ddl_paper.h); options meaningful only there are accepted.
  bool ddl_paper = false;
};

using PolicyFactory =
    std::function<Result<std::unique_ptr<Policy>>(const PolicyOptions&, const PolicyContext&)>;

struct PolicyInfo {
  std::string name;
  std::string summary;                 // one line, with the paper
  std::vector<std::string> options;    // "backfill=none|first-fit|easy (default none)"
  PolicyFactory factory;
};

class PolicyRegistry {
 public:
  // The registry with every built-in policy (policy/builtin.cc).
  static const PolicyRegistry& Builtin();

  // InvalidArgument on a duplicate name.
  Status Register(PolicyInfo info);
  const std::vector<PolicyInfo>& policies() const { return policies_; }
  // "fcfs:backfill=easy" -> the policy. Unknown names list the known ones;
  // unknown option keys list the policy's options.
  Result<std::unique_ptr<Policy>> Create(std::string_view spec, const PolicyContext& ctx) const;
  // A comma-separated list of specs ("fcfs,tiresias:thresholds=3200,25600,
  // gavel") split into specs. A comma starts a new spec only where a policy
  // name follows; otherwise it belongs to the previous spec's last option
  // value (list-valued options such as tiresias' thresholds). Empty pieces
  // are dropped; an unknown name that cannot continue an option is kept as
  // a spec of its own, for Create to reject with the known names.
  std::vector<std::string> SplitList(std::string_view text) const;

 private:
  std::vector<PolicyInfo> policies_;
};

}  // namespace tessel
