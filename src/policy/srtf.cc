#include "policy/srtf.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "policy/placement.h"

namespace tessel {
namespace {

// Whether every GPU of `alloc` is free in `free`.
bool IsFree(const FreeMap& free, const Allocation& alloc) {
  for (const Placement& p : alloc.parts) {
    if (free.free_on(p.node) < p.gpus) return false;
  }
  return true;
}

class SrtfPolicy : public Policy {
 public:
  explicit SrtfPolicy(PlanMode mode) : mode_(mode) {}
  std::string_view name() const override { return "srtf"; }
  PolicyTraits traits() const override {
    PolicyTraits t;
    t.plan_mode = mode_;
    return t;
  }

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
      std::vector<int> types = RunnableTypes(*job, snap);
      if (types.empty()) {
        if (job->alloc.empty()) {
          d.reject.push_back({job->index, NeverRunsReason(*job, snap, spec.requested_gpus)});
          continue;
        }
        types.push_back(job->alloc.type);  // runs somehow; keep it where it is
      }
      int t = types.front();
      const JobRate& r = snap.belief->Rate(spec, t, spec.requested_gpus,
                                           MinNodes(*snap.cluster, t, spec.requested_gpus));
      double remaining = r.fits ? job->remaining_iterations() * r.iteration_time_s : 1e300;
      ranked.push_back({remaining, {job, spec.requested_gpus, std::move(types)}});
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

 private:
  PlanMode mode_;
};

}  // namespace

void AllocateByPriority(const Snapshot& snap, std::span<const PriorityEntry> order, Decision& decision) {
  const int n = static_cast<int>(order.size());
  const int num_types = static_cast<int>(snap.cluster->types().size());
  FreeMap free(snap);
  std::vector<uint8_t> displaced(n, 0);
  std::vector<std::optional<Allocation>> placed(n);
  // Per type: positions of jobs holding GPUs (ascending), and the GPUs held
  // by those not displaced and not yet reached by the walk.
  std::vector<std::vector<int>> holders(num_types);
  std::vector<int> held_below(num_types, 0);
  for (int i = 0; i < n; ++i) {
    const Allocation& cur = order[i].job->alloc;
    if (cur.empty()) continue;
    holders[cur.type].push_back(i);
    held_below[cur.type] += cur.gpus();
  }

  for (int i = 0; i < n; ++i) {
    const PriorityEntry& e = order[i];
    const Allocation& cur = e.job->alloc;
    if (!cur.empty()) {
      if (!displaced[i]) {
        held_below[cur.type] -= cur.gpus();
        continue;
      }
      if (IsFree(free, cur)) {  // nobody used its GPUs after all
        free.Take(cur);
        displaced[i] = 0;
        continue;
      }
    }
    std::optional<Allocation> alloc;
    for (int t : e.types) {
      alloc = free.Place(t, e.gpus);
      if (alloc) break;
    }
    for (size_t k = 0; !alloc && k < e.types.size(); ++k) {
      int t = e.types[k];
      if (free.free_of_type(t) + held_below[t] < e.gpus) continue;
      FreeMap scratch = free;
      std::vector<int> released;  // descending position
      for (auto it = holders[t].rbegin(); it != holders[t].rend() && *it > i; ++it) {
        if (displaced[*it]) continue;
        scratch.Release(order[*it].job->alloc);
        released.push_back(*it);
        if (scratch.free_of_type(t) >= e.gpus) break;
      }
      alloc = scratch.Place(t, e.gpus);
      if (!alloc) continue;
      // Highest priority first, the released jobs whose GPUs it left alone
      // keep them.
      for (auto it = released.rbegin(); it != released.rend(); ++it) {
        const Allocation& va = order[*it].job->alloc;
        if (IsFree(scratch, va)) {
          scratch.Take(va);
        } else {
          displaced[*it] = 1;
          held_below[t] -= va.gpus();
        }
      }
      free = std::move(scratch);
    }
    if (alloc) placed[i] = std::move(alloc);
  }

  std::vector<std::pair<int, Allocation>> changes;
  for (int i = 0; i < n; ++i) {
    const JobView& job = *order[i].job;
    if (placed[i]) {
      if (*placed[i] != job.alloc) changes.push_back({job.index, std::move(*placed[i])});
    } else if (displaced[i]) {
      changes.push_back({job.index, Allocation{}});
    }
  }
  std::sort(changes.begin(), changes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& c : changes) decision.assign.push_back(std::move(c));
}

std::vector<int> RunnableTypes(const JobView& job, const Snapshot& snapshot) {
  std::vector<int> types = CandidateTypes(job, snapshot);
  const auto& info = snapshot.cluster->types();
  std::erase_if(types, [&](int t) { return info[t].total_gpus < job.spec->requested_gpus; });
  return types;
}

std::string NeverRunsReason(const JobView& job, const Snapshot& snapshot, int gpus) {
  const Cluster& cluster = *snapshot.cluster;
  const JobSpec& spec = *job.spec;
  std::string on = std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s");
  if (!spec.requested_gpu_type.empty()) {
    int t = cluster.FindType(spec.requested_gpu_type);
    if (t < 0) return "requested GPU type '" + spec.requested_gpu_type + "' is not in the cluster";
    const GpuTypeInfo& info = cluster.types()[t];
    if (info.total_gpus < gpus) {
      return "needs " + on + " of " + cluster.TypeName(t) + "; the cluster has " +
             std::to_string(info.total_gpus);
    }
    const JobRate& r = snapshot.belief->Rate(spec, t, gpus, MinNodes(cluster, t, gpus));
    return "does not fit on " + on + " of " + cluster.TypeName(t) + (r.reason.empty() ? "" : ": " + r.reason);
  }
  int largest = 0;
  for (const GpuTypeInfo& info : cluster.types()) largest = std::max(largest, info.total_gpus);
  if (largest < gpus) {
    return "needs " + on + "; the largest GPU type in the cluster has " + std::to_string(largest);
  }
  return "does not fit on " + on + " of any GPU type in the cluster";
}

int MinNodes(const Cluster& cluster, int type, int gpus) {
  int per = std::max(1, cluster.types()[type].max_gpus_per_node);
  return std::max(1, (gpus + per - 1) / per);
}

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
