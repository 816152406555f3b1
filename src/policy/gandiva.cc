#include "policy/gandiva.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "policy/placement.h"

namespace tessel {
namespace {

class GandivaPolicy : public BaselinePolicy {
 public:
  GandivaPolicy(double grow_speedup, PlanMode mode)
      : BaselinePolicy("gandiva", true, mode), grow_speedup_(grow_speedup) {}

  Decision Decide(const Snapshot& snap) override {
    Decision d;
    const int n = static_cast<int>(snap.jobs.size());
    const int num_types = static_cast<int>(snap.cluster->types().size());
    FreeMap free(snap);
    std::vector<Allocation> plan(n);
    std::vector<uint8_t> changed(n, 0);
    std::vector<std::vector<int>> types(n);
    std::vector<int> waiting;  // positions in snap.jobs
    for (int i = 0; i < n; ++i) {
      const JobView& job = *snap.jobs[i];
      plan[i] = job.alloc;
      if (!job.alloc.empty()) continue;
      types[i] = CandidateTypes(job, snap);
      if (types[i].empty()) {
        d.reject.push_back({job.index, NeverRunsReason(job, snap, job.spec->requested_gpus)});
        continue;
      }
      waiting.push_back(i);
    }
    // Longest waiting first.
    std::stable_sort(waiting.begin(), waiting.end(), [&](int a, int b) {
      return std::tie(snap.jobs[a]->alloc_since, snap.jobs[a]->index) <
             std::tie(snap.jobs[b]->alloc_since, snap.jobs[b]->index);
    });
    auto set = [&](int i, Allocation a) {
      plan[i] = std::move(a);
      changed[i] = 1;
    };

    // Start waiting jobs that fit, longest waiting first.
    auto start = [&](const std::vector<int>& jobs) {
      std::vector<int> rest;
      for (int w : jobs) {
        std::optional<Allocation> a;
        for (int t : types[w]) {
          a = free.Place(t, snap.jobs[w]->spec->requested_gpus);
          if (a) break;
        }
        if (a) {
          set(w, std::move(*a));
        } else {
          rest.push_back(w);
        }
      }
      return rest;
    };
    std::vector<int> still = start(waiting);

    // Jobs still wait: shrink grown jobs on the types they wait for, then
    // try again.
    std::vector<uint8_t> shrunk(n, 0);
    if (!still.empty()) {
      std::vector<uint8_t> wanted(num_types, 0);
      for (int w : still) {
        for (int t : types[w]) wanted[t] = 1;
      }
      for (int i = 0; i < n; ++i) {
        const JobView& job = *snap.jobs[i];
        if (plan[i].empty() || !wanted[plan[i].type] || plan[i].gpus() <= job.spec->requested_gpus) continue;
        Allocation smaller = Subset(plan[i], job.spec->requested_gpus);
        free.Release(plan[i]);
        free.Take(smaller);
        set(i, std::move(smaller));
        shrunk[i] = 1;
      }
      still = start(still);
    }

    // Time-slice: swap the rest in for jobs that have had their round.
    const SimTime quantum = snap.round_length > 0 ? snap.round_length : Seconds(300);
    Eligible eligible{std::vector<std::vector<int>>(num_types), std::vector<int>(num_types, 0)};
    for (int i = 0; i < n; ++i) {
      if (changed[i] || plan[i].empty() || snap.now - snap.jobs[i]->alloc_since < quantum) continue;
      eligible.jobs[plan[i].type].push_back(i);
      eligible.gpus[plan[i].type] += plan[i].gpus();
    }
    for (std::vector<int>& list : eligible.jobs) {
      std::stable_sort(list.begin(), list.end(), [&](int a, int b) {
        return std::tie(snap.jobs[a]->alloc_since, snap.jobs[a]->index) <
               std::tie(snap.jobs[b]->alloc_since, snap.jobs[b]->index);
      });
    }
    int left_waiting = 0;
    for (int w : still) {
      if (!SwapIn(snap, w, types[w], eligible, free, plan, changed)) ++left_waiting;
    }

    // Migrate spread jobs onto fewer nodes.
    for (int i = 0; i < n; ++i) {
      const Allocation cur = plan[i];
      if (changed[i] || cur.empty()) continue;
      const int gpus = cur.gpus();
      if (cur.nodes() <= MinNodes(*snap.cluster, cur.type, gpus)) continue;
      free.Release(cur);
      std::optional<Allocation> a = free.Place(cur.type, gpus, cur.nodes() - 1);
      if (a && Rate(snap, i, *a) >= Rate(snap, i, cur)) {
        set(i, std::move(*a));
        continue;
      }
      if (a) free.Release(*a);
      free.Take(cur);
    }

    // Grow elastic jobs into idle GPUs when nobody waits.
    for (bool grew = left_waiting == 0; grew;) {
      grew = false;
      for (int i = 0; i < n; ++i) {
        const Allocation cur = plan[i];
        if (cur.empty() || shrunk[i]) continue;
        const int gpus = cur.gpus();
        const int next = std::min(2 * gpus, snap.jobs[i]->spec->max_gpus);
        if (next <= gpus || free.free_of_type(cur.type) < next - gpus) continue;
        free.Release(cur);
        std::optional<Allocation> a = free.Place(cur.type, next);
        if (a && Rate(snap, i, *a) >= grow_speedup_ * Rate(snap, i, cur)) {
          set(i, std::move(*a));
          grew = true;
          continue;
        }
        if (a) free.Release(*a);
        free.Take(cur);
      }
    }

    for (int i = 0; i < n; ++i) {
      if (changed[i] && plan[i] != snap.jobs[i]->alloc) d.assign.push_back({snap.jobs[i]->index, std::move(plan[i])});
    }
    std::sort(d.assign.begin(), d.assign.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return d;
  }

 private:
  // The belief's samples/s for job `i` on `alloc` (0 when it does not fit).
  static double Rate(const Snapshot& snap, int i, const Allocation& alloc) {
    const JobRate& r = snap.belief->Rate(*snap.jobs[i]->spec, alloc.type, alloc.gpus(), alloc.nodes());
    return r.fits ? r.samples_per_s : 0;
  }

  // Running jobs that have had a quantum and are not yet swapped out, per
  // type, longest-running first, and their GPUs.
  struct Eligible {
    std::vector<std::vector<int>> jobs;
    std::vector<int> gpus;
  };

  // Suspends eligible jobs to make room for waiting job `w`: one of its size,
  // else one of up to twice its size, else smaller ones, longest-running
  // first. False when no type offers enough.
  static bool SwapIn(const Snapshot& snap, int w, const std::vector<int>& types, Eligible& eligible, FreeMap& free,
                     std::vector<Allocation>& plan, std::vector<uint8_t>& changed) {
    const int need = snap.jobs[w]->spec->requested_gpus;
    for (int t : types) {
      if (free.free_of_type(t) + eligible.gpus[t] < need) continue;
      FreeMap scratch = free;
      std::vector<int> released;
      auto first_of = [&](auto in_class) {
        for (int i : eligible.jobs[t]) {
          if (!changed[i] && in_class(plan[i].gpus())) return i;
        }
        return -1;
      };
      if (scratch.free_of_type(t) < need) {  // else an earlier swap left room
        int one = first_of([&](int g) { return g == need; });
        if (one < 0) one = first_of([&](int g) { return g > need && g <= 2 * need; });
        if (one >= 0) {
          scratch.Release(plan[one]);
          released.push_back(one);
        }
        for (size_t k = 0; one < 0 && k < eligible.jobs[t].size() && scratch.free_of_type(t) < need; ++k) {
          int i = eligible.jobs[t][k];
          if (changed[i] || plan[i].gpus() >= need) continue;
          scratch.Release(plan[i]);
          released.push_back(i);
        }
      }
      if (scratch.free_of_type(t) < need) continue;
      std::optional<Allocation> a = scratch.Place(t, need);
      if (!a) continue;
      for (auto it = released.rbegin(); it != released.rend(); ++it) {
        if (scratch.IsFree(plan[*it])) {
          scratch.Take(plan[*it]);
        } else {
          eligible.gpus[t] -= plan[*it].gpus();
          plan[*it] = Allocation{};
          changed[*it] = 1;
        }
      }
      free = std::move(scratch);
      plan[w] = std::move(*a);
      changed[w] = 1;
      return true;
    }
    return false;
  }

  double grow_speedup_;
};

}  // namespace

void RegisterGandivaPolicy(PolicyRegistry& registry) {
  Status s = registry.Register(
      {"gandiva",
       "Gandiva's introspective scheduling: time-slicing, grow/shrink, migration (Xiao et al., OSDI'18)",
       {"grow_speedup=X: double an elastic job when the belief expects X times its samples/s (default 1.5)"},
       [](const PolicyOptions& opts, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
         auto speedup = opts.GetDouble("grow_speedup", 1.5);
         if (!speedup.ok()) return speedup.status();
         if (*speedup < 1) return InvalidArgument("gandiva: grow_speedup must be >= 1");
         return std::unique_ptr<Policy>(new GandivaPolicy(*speedup, ctx.baseline_plan_mode));
       }});
  assert(s.ok());
  (void)s;
}

}  // namespace tessel
