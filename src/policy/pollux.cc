#include "policy/pollux.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <queue>
#include <unordered_map>
#include <utility>

#include "policy/goodput_alloc.h"
#include "policy/goodput_oracle.h"
#include "policy/placement.h"

namespace tessel {
namespace {

class PolluxPolicy : public Policy {
 public:
  PolluxPolicy(double p, double restart_penalty_s, int max_gpus, bool avoid_interference, PlanMode mode)
      : p_(p),
        restart_penalty_s_(restart_penalty_s),
        max_gpus_(max_gpus),
        avoid_interference_(avoid_interference),
        utility_none_(Utility(0)) {
    traits_.uses_rounds = true;
    traits_.plan_mode = mode;
    traits_.adapts_batch = true;
    traits_.prices_cluster_size = true;
  }
  std::string_view name() const override { return "pollux"; }
  PolicyTraits traits() const override { return traits_; }

  Decision Decide(const Snapshot& snap) override {
    // Pollux re-allocates once per round; events wait for it.
    if (!snap.at_round) return {};
    GoodputOracle oracle(snap, /*type_aware=*/false, &cache_);
    // Capacity: every GPU on an up node (Pollux re-allocates everything).
    std::vector<int> capacity = UpGpusByType(snap);
    if (!BuildCurves(snap, oracle, capacity)) return {};
    std::vector<GoodputGrant> grants = AllocateByMarginalUtility(curves_, capacity);
    PlaceOptions place;
    place.avoid_spread_sharing = avoid_interference_;
    // A placement is worth its term of the power mean at the nodes it
    // spans, a move discounted as a re-allocation (the curves' terms).
    place.price = [&](const JobView& job, int type, int gpus, int nodes, bool moved) {
      auto it = terms_.find(job.index);
      if (it == terms_.end()) return utility_none_;
      const auto [base, factor] = it->second;
      return Utility(oracle.Goodput(job, type, gpus, nodes) / base * (moved ? factor : 1.0));
    };
    return PlaceGrants(snap, grants, place);
  }

  // The artifact's Cluster.get_utility numerator (simulator/simulator.py):
  // each job's speedup_fn at its allocation, the speedup over one GPU
  // (by throughput alone for a throughput-based auto-scaler). The
  // allocations priced are pollux's either way.
  std::optional<double> TotalSpeedup(const Snapshot& snap, std::span<const int> capacity,
                                     SpeedupBasis basis) override {
    GoodputOracle oracle(snap, /*type_aware=*/false, &cache_);
    const Cluster& cluster = *snap.cluster;
    auto rate = [&](const JobView& job, int type, int gpus, int nodes) {
      return basis == SpeedupBasis::kGoodput ? oracle.Goodput(job, type, gpus, nodes)
                                             : oracle.WeakScalingThroughput(job, type, gpus, nodes);
    };
    auto speedup = [&](const JobView& job, int type, int gpus, int nodes) {
      double one = rate(job, oracle.HomeType(job), 1, 1);
      return one > 0 ? rate(job, type, gpus, nodes) / one : 0.0;
    };
    double sum = 0;
    if (capacity.empty()) {
      for (const JobView* job : snap.jobs)
        if (!job->alloc.empty())
          sum += speedup(*job, job->alloc.type, job->alloc.gpus(), job->alloc.nodes());
      return sum;
    }
    std::vector<int> cap(capacity.begin(), capacity.end());
    if (!BuildCurves(snap, oracle, cap)) return 0.0;
    for (const GoodputGrant& g : AllocateByMarginalUtility(curves_, cap))
      sum += speedup(*g.job, g.type, g.gpus, MinNodes(cluster, g.type, g.gpus));
    return sum;
  }

 private:
  // Each job's utility curves for `capacity` GPUs per type, in curves_;
  // false when there is nothing to allocate.
  bool BuildCurves(const Snapshot& snap, GoodputOracle& oracle, const std::vector<int>& capacity) {
    const Cluster& cluster = *snap.cluster;
    const int ntypes = static_cast<int>(cluster.types().size());
    int total = 0;
    for (int c : capacity) total += c;
    const int njobs = static_cast<int>(snap.jobs.size());
    terms_.clear();
    if (njobs == 0 || total == 0) return false;
    int fair = std::max(1, (total + njobs - 1) / njobs);
    // Each job's curves are built in place in curves_, reusing the vectors
    // of earlier decisions; `used` of them are this decision's.
    size_t used = 0;
    // The last utility computed: a job's points on several types often
    // share a speedup (type-blind goodputs), and pow is costly.
    double last_s = std::numeric_limits<double>::quiet_NaN();
    double last_u = 0;
    auto utility = [&](double s) {
      if (!(s == last_s)) {
        last_s = s;
        last_u = Utility(s);
      }
      return last_u;
    };
    for (const JobView* job : snap.jobs) {
      int home = oracle.HomeType(*job);
      auto [lo, cap] = GoodputGpuRange(*job, std::min(oracle.MaxGpus(*job), max_gpus_));
      // Fair-share goodput: the speedup's denominator. As the artifact,
      // priced on one node (its fair_nodes = ceil(nodes / GPUs) = 1).
      int fair_gpus = std::clamp(fair, lo, std::max(lo, cap));
      double base = oracle.Goodput(*job, home, fair_gpus, 1);
      for (int g = lo; base <= 0 && g <= cap; ++g) base = oracle.Goodput(*job, home, g, MinNodes(cluster, home, g));
      if (base <= 0) continue;  // cannot run anywhere: left out
      // Pollux penalises every change, a first allocation too: a job of age
      // 0 (arriving on a round) waits one round, as in the artifact.
      double age = ToSeconds(snap.now - job->spec->submit);
      double factor = std::max(0.0, age - job->restarts * restart_penalty_s_) / (age + restart_penalty_s_);
      terms_[job->index] = {base, factor};
      if (used == curves_.size()) curves_.emplace_back();
      JobCurves& jc = curves_[used];
      jc.job = job;
      size_t types = 0;  // jc.types in use
      for (int t = 0; t < ntypes; ++t) {
        if (!job->spec->requested_gpu_type.empty() && cluster.TypeName(t) != job->spec->requested_gpu_type &&
            cluster.FindType(job->spec->requested_gpu_type) >= 0)
          continue;
        if (types == jc.types.size()) jc.types.emplace_back();
        TypeCurve& tc = jc.types[types];
        tc.type = t;
        tc.points.clear();
        tc.points.push_back({0, utility_none_});
        for (int g = lo; g <= std::min(cap, capacity[t]); ++g) {
          double gp = oracle.Goodput(*job, t, g, MinNodes(cluster, t, g));
          if (gp <= 0) continue;
          double s = gp / base;
          bool same = !job->alloc.empty() && job->alloc.type == t && job->alloc.gpus() == g;
          if (!same) s *= factor;
          tc.points.push_back({g, utility(s)});
        }
        if (tc.points.size() > 1) ++types;
      }
      jc.types.resize(types);
      if (types > 0) ++used;
    }
    curves_.resize(used);
    return true;
  }

 private:
  // Each job's term of the power mean, to maximise (monotone in s).
  double Utility(double s) const {
    constexpr double kEps = 1e-3;  // as Pollux: keeps s = 0 finite
    if (p_ == 0) return std::log(s + kEps);
    double v = std::pow(s + kEps, p_);
    return p_ < 0 ? -v : v;
  }

  double p_;
  double restart_penalty_s_;
  int max_gpus_;
  bool avoid_interference_;
  double utility_none_;  // Utility(0)
  // Per job index, the last BuildCurves's fair-share goodput (the speedup's
  // denominator) and re-allocation factor: what PlaceOptions::price reads.
  std::unordered_map<int, std::pair<double, double>> terms_;
  PolicyTraits traits_;
  GoodputCache cache_;
  std::vector<JobCurves> curves_;  // scratch: the last decision's curves
};

}  // namespace

void RegisterPolluxPolicy(PolicyRegistry& registry) {
  Status s = registry.Register(
      {"pollux",
       "Pollux (Qiao et al., OSDI 2021): each round, re-allocate for the power mean of goodput speedups "
       "(fairness p), with a re-allocation penalty; jobs' agents tune batch size for goodput",
       {"p=<exponent> (default -1; more negative = fairer)", "restart_penalty=<seconds> (default 30)",
        "max_gpus=<per job> (default 64)",
        "avoid_interference=<true|false> (default true: at most one job spread over nodes on any node)"},
       [](const PolicyOptions& o, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
         auto p = o.GetDouble("p", -1.0);
         if (!p.ok()) return p.status();
         auto penalty = o.GetDouble("restart_penalty", 30.0);
         if (!penalty.ok()) return penalty.status();
         auto max_gpus = o.GetDouble("max_gpus", 64);
         if (!max_gpus.ok()) return max_gpus.status();
         if (*max_gpus != std::floor(*max_gpus) || *max_gpus > 1e6) {
           return InvalidArgument("pollux: max_gpus must be a whole number of GPUs, got " + o.GetString("max_gpus", ""));
         }
         auto avoid = o.GetBool("avoid_interference", true);
         if (!avoid.ok()) return avoid.status();
         if (*p >= 1 || *penalty < 0 || *max_gpus < 1) {
           return InvalidArgument("pollux: expected p < 1, restart_penalty >= 0, max_gpus >= 1");
         }
         return std::unique_ptr<Policy>(
             new PolluxPolicy(*p, *penalty, static_cast<int>(*max_gpus), *avoid, ctx.baseline_plan_mode));
       }});
  assert(s.ok());
  (void)s;
}

}  // namespace tessel
