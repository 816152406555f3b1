#include "policy/optimus.h"

#include <algorithm>
#include <cmath>
#include <cassert>

#include "policy/goodput_alloc.h"
#include "policy/goodput_oracle.h"
#include "policy/placement.h"

namespace tessel {
namespace {

class OptimusPolicy : public Policy {
 public:
  OptimusPolicy(int max_gpus, PlanMode mode) : max_gpus_(max_gpus) {
    traits_.uses_rounds = true;
    traits_.plan_mode = mode;
  }
  std::string_view name() const override { return "optimus"; }
  PolicyTraits traits() const override { return traits_; }

  Decision Decide(const Snapshot& snap) override {
    if (!snap.at_round) return {};
    GoodputOracle oracle(snap, /*type_aware=*/false, &cache_);
    const Cluster& cluster = *snap.cluster;
    const int ntypes = static_cast<int>(cluster.types().size());
    std::vector<int> capacity = UpGpusByType(snap);
    // Each job's curves are built in place in curves_, reusing the vectors
    // of earlier decisions; `used` of them are this decision's.
    size_t used = 0;
    for (const JobView* job : snap.jobs) {
      const JobSpec& s = *job->spec;
      int bound = std::min(max_gpus_, std::max(1, s.max_gpus));
      if (job->agent != nullptr) {
        // The batch limit, the app's own cap and the exploration cap: a job
        // that has measured nothing yet gets one GPU (its goodput is only a
        // linear-scaling guess, not comparable across jobs).
        bound = std::min(bound, oracle.MaxGpus(*job));
      }
      auto [lo, cap] = GoodputGpuRange(*job, bound);
      // Work left in samples at the job's batch: progress units are steps
      // at the initial batch (agent jobs) or iterations at the spec's batch.
      double per_unit = job->agent ? job->agent->limits.init_batch : s.global_batch;
      double work = std::max(0.0, job->remaining_iterations()) * per_unit;
      if (used == curves_.size()) curves_.emplace_back();
      JobCurves& jc = curves_[used];
      jc.job = job;
      size_t types = 0;  // jc.types in use
      for (int t = 0; t < ntypes; ++t) {
        if (!s.requested_gpu_type.empty() && cluster.FindType(s.requested_gpu_type) >= 0 &&
            cluster.TypeName(t) != s.requested_gpu_type)
          continue;
        if (types == jc.types.size()) jc.types.emplace_back();
        TypeCurve& tc = jc.types[types];
        tc.type = t;
        tc.points.clear();
        // No GPUs: the remaining time is unbounded; a large finite stand-in
        // keeps the first GPU the most valuable step.
        double none = 1e12;
        tc.points.push_back({0, -none});
        for (int g = lo; g <= std::min(cap, capacity[t]); ++g) {
          double gp = oracle.Goodput(*job, t, g, MinNodes(cluster, t, g));
          if (gp <= 0) continue;
          tc.points.push_back({g, -std::min(none, work / gp)});
        }
        if (tc.points.size() > 1) ++types;
      }
      jc.types.resize(types);
      if (types > 0) ++used;
    }
    curves_.resize(used);
    return PlaceGrants(snap, AllocateByMarginalUtility(curves_, capacity));
  }

 private:
  int max_gpus_;
  PolicyTraits traits_;
  GoodputCache cache_;
  std::vector<JobCurves> curves_;  // scratch: the last decision's curves
};

}  // namespace

void RegisterOptimusPolicy(PolicyRegistry& registry) {
  Status s = registry.Register(
      {"optimus",
       "Optimus+Oracle (Peng et al., EuroSys 2018, as in Pollux's evaluation): each round, GPUs to the jobs whose "
       "remaining time falls most per GPU, fixed batch sizes",
       {"max_gpus=<per job> (default 64)"},
       [](const PolicyOptions& o, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
         auto max_gpus = o.GetDouble("max_gpus", 64);
         if (!max_gpus.ok()) return max_gpus.status();
         if (*max_gpus != std::floor(*max_gpus) || *max_gpus > 1e6) {
           return InvalidArgument("optimus: max_gpus must be a whole number of GPUs, got " + o.GetString("max_gpus", ""));
         }
         if (*max_gpus < 1) return InvalidArgument("optimus: expected max_gpus >= 1");
         return std::unique_ptr<Policy>(new OptimusPolicy(static_cast<int>(*max_gpus), ctx.baseline_plan_mode));
       }});
  assert(s.ok());
  (void)s;
}

}  // namespace tessel
