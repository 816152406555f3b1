#include "policy/srsf.h"

#include <algorithm>
#include <cassert>
#include <tuple>

#include "policy/placement.h"

namespace tessel {
namespace {

class SrsfPolicy : public BaselinePolicy {
 public:
  SrsfPolicy(std::string_view name, CommSchedule schedule, PlanMode mode, bool paper_rest_size)
      : BaselinePolicy(name, false, mode) {
    mutable_traits().comm_schedule = schedule;
    mutable_traits().paper_rest_size = paper_rest_size;
  }

  Decision Decide(const Snapshot& snap) override {
    Decision d;
    struct Waiting {
      double service;  // remaining GPU-seconds by the belief
      const JobView* job;
      std::vector<int> types;
    };
    std::vector<Waiting> waiting;
    for (const JobView* job : snap.jobs) {
      if (job->phase != JobPhase::kPending) continue;
      const JobSpec& spec = *job->spec;
      std::vector<int> types = CandidateTypes(*job, snap);
      if (types.empty()) {
        d.reject.push_back({job->index, NeverRunsReason(*job, snap, spec.requested_gpus)});
        continue;
      }
      int t = types.front();
      const JobRate& r =
          snap.belief->Rate(spec, t, spec.requested_gpus, MinNodes(*snap.cluster, t, spec.requested_gpus));
      double service = r.fits ? job->remaining_iterations() * r.iteration_time_s * spec.requested_gpus : 1e300;
      waiting.push_back({service, job, std::move(types)});
    }
    std::sort(waiting.begin(), waiting.end(), [](const Waiting& a, const Waiting& b) {
      return std::tie(a.service, a.job->index) < std::tie(b.service, b.job->index);
    });
    FreeMap free(snap);
    for (const Waiting& w : waiting) {
      for (int t : w.types) {
        if (auto a = free.Place(t, w.job->spec->requested_gpus)) {
          d.assign.push_back({w.job->index, std::move(*a)});
          break;
        }
      }
    }
    std::sort(d.assign.begin(), d.assign.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    return d;
  }
};

}  // namespace

void RegisterSrsfPolicies(PolicyRegistry& registry) {
  struct Variant {
    const char* name;
    CommSchedule schedule;
    const char* summary;
  };
  for (const Variant& v : {Variant{"ada-srsf", CommSchedule::kAdaDual,
                                   "shortest remaining service (time x GPUs) first, non-preemptive; a transfer "
                                   "overlaps another on a link only when AdaDUAL says that finishes both sooner "
                                   "(Wang et al. 2020)"},
                           Variant{"srsf-avoid", CommSchedule::kSerial,
                                   "SRSF(1): shortest remaining service first; transfers never share a link, the "
                                   "later one waits"},
                           Variant{"srsf-accept", CommSchedule::kConcurrent,
                                   "SRSF(2): shortest remaining service first; transfers always start at once "
                                   "and share links max-min"}}) {
    const char* name = v.name;
    CommSchedule schedule = v.schedule;
    const bool ada = schedule == CommSchedule::kAdaDual;
    std::vector<std::string> options;
    if (ada) {
      options.push_back(
          "paper_rest_size=true|false (default false; --setting ddl-paper only: AdaDUAL reads the other transfer's "
          "remaining size as Wang et al.'s code does, advancing it at each check)");
    }
    Status s = registry.Register(
        {name, v.summary, options,
         [name, schedule, ada](const PolicyOptions& o, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
           bool paper_rest_size = false;
           if (ada) {
             auto v = o.GetBool("paper_rest_size", false);
             if (!v.ok()) return v.status();
             paper_rest_size = *v;
             if (paper_rest_size && !ctx.ddl_paper) {
               return InvalidArgument(
                   "paper_rest_size=true is the remaining-size computation of Wang et al.'s shared-GPU simulator; "
                   "it applies under --setting ddl-paper only");
             }
           }
           return std::unique_ptr<Policy>(new SrsfPolicy(name, schedule, ctx.baseline_plan_mode, paper_rest_size));
         }});
    assert(s.ok());
    (void)s;
  }
}

}  // namespace tessel
