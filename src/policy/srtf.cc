#include "policy/srtf.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "policy/placement.h"
#include "policy/priority_alloc.h"

namespace tessel {
namespace {

class SrtfPolicy : public BaselinePolicy {
 public:
  explicit SrtfPolicy(PlanMode mode) : BaselinePolicy("srtf", false, mode) {}

  Decision Decide(const Snapshot& snap) override {
    Decision d;
    struct Ranked {
      double remaining_s;
      PriorityEntry entry;
    };
    std::vector<Ranked> ranked;
    ranked.reserve(snap.jobs.size());
    for (const JobView* job : snap.jobs) {
      const JobSpec& spec = *job->spec;
      std::optional<std::vector<int>> types = PriorityTypesOrReject(*job, snap, d);
      if (!types) continue;
      int t = types->front();
      const JobRate& r = snap.belief->Rate(spec, t, spec.requested_gpus,
                                           MinNodes(*snap.cluster, t, spec.requested_gpus));
      double remaining = r.fits ? job->remaining_iterations() * r.iteration_time_s : 1e300;
      ranked.push_back({remaining, {job, spec.requested_gpus, std::move(*types)}});
    }
    std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
      return std::tie(a.remaining_s, a.entry.job->index) < std::tie(b.remaining_s, b.entry.job->index);
    });
    std::vector<PriorityEntry> order;
    order.reserve(ranked.size());
    for (Ranked& r : ranked) order.push_back(std::move(r.entry));
    AllocateByPriority(snap, order, d);
    return d;
  }
};

}  // namespace

void RegisterSrtfPolicy(PolicyRegistry& registry) {
  Status s = registry.Register(
      {"srtf",
       "preemptive shortest-remaining-time-first on the requested GPUs (remaining time by the belief)",
       {},
       [](const PolicyOptions&, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
         return std::unique_ptr<Policy>(new SrtfPolicy(ctx.baseline_plan_mode));
       }});
  assert(s.ok());
  (void)s;
}

}  // namespace tessel
