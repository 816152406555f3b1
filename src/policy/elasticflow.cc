#include "policy/elasticflow.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <tuple>

#include "policy/placement.h"

namespace tessel {
namespace {

// The GPU counts a job may run on, ascending: min_gpus, the powers of two
// above it, max_gpus. A job whose request lies outside [min_gpus, max_gpus]
// is taken as rigid at its request.
std::vector<int> Sizes(const JobSpec& spec) {
  int lo = spec.min_gpus, hi = spec.max_gpus;
  if (lo < 1 || hi < lo || spec.requested_gpus < lo || spec.requested_gpus > hi) {
    return {std::max(1, spec.requested_gpus)};
  }
  std::vector<int> sizes{lo};
  int p = 1;
  while (p <= lo) p *= 2;
  for (; p < hi; p *= 2) sizes.push_back(p);
  if (hi > lo) sizes.push_back(hi);
  return sizes;
}

class ElasticFlowPolicy : public BaselinePolicy {
 public:
  ElasticFlowPolicy(double hysteresis, PlanMode mode)
      : BaselinePolicy("elasticflow", true, mode), hysteresis_(hysteresis) {}

  Decision Decide(const Snapshot& snap) override {
    Decision d;
    const Cluster& cluster = *snap.cluster;
    const int n = static_cast<int>(snap.jobs.size());
    const int num_types = static_cast<int>(cluster.types().size());

    // GPUs to hand out per type: free ones and those jobs hold.
    std::vector<int> left(num_types, 0);
    for (const ClusterNode& node : cluster.nodes()) left[node.type] += snap.free_gpus[node.id];
    for (const JobView* job : snap.jobs) {
      if (!job->alloc.empty()) left[job->alloc.type] += job->alloc.gpus();
    }

    std::vector<std::vector<int>> sizes(n);
    std::vector<int> type(n, -1), step(n, -1);  // step: index into sizes, -1 = nothing
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return std::tie(snap.jobs[a]->spec->submit, snap.jobs[a]->index) <
             std::tie(snap.jobs[b]->spec->submit, snap.jobs[b]->index);
    });

    // 1. Minimum shares in submit order.
    for (int i : order) {
      const JobView& job = *snap.jobs[i];
      sizes[i] = Sizes(*job.spec);
      // The job's real minimum is the smallest size its model fits at.
      const int smallest = sizes[i].front();
      std::vector<int> types;
      while (!sizes[i].empty() && (types = CandidateTypes(job, snap, sizes[i].front())).empty()) {
        sizes[i].erase(sizes[i].begin());
      }
      if (sizes[i].empty()) {
        if (job.alloc.empty()) {
          d.reject.push_back({job.index, NeverRunsReason(job, snap, smallest)});
          continue;
        }
        sizes[i] = {job.alloc.gpus()};
        types.push_back(job.alloc.type);
      }
      const int lo = sizes[i].front();
      int t = -1;
      if (!job.alloc.empty() && left[job.alloc.type] >= lo &&
          std::find(types.begin(), types.end(), job.alloc.type) != types.end()) {
        t = job.alloc.type;
      } else {
        for (int c : types) {
          if (left[c] >= lo && (t < 0 || left[c] > left[t])) t = c;
        }
      }
      if (t < 0) continue;
      type[i] = t;
      step[i] = 0;
      left[t] -= lo;
    }

    // 2. Leftover GPUs by marginal return per added GPU.
    using Offer = std::tuple<double, int, int>;  // gain, -job index, position
    std::priority_queue<Offer> offers;
    auto offer = [&](int i) {
      if (step[i] < 0 || step[i] + 1 >= static_cast<int>(sizes[i].size())) return;
      double gain = Gain(snap, i, type[i], sizes[i][step[i]], sizes[i][step[i] + 1]);
      if (gain > 0) offers.push({gain, -snap.jobs[i]->index, i});
    };
    for (int i = 0; i < n; ++i) offer(i);
    while (!offers.empty()) {
      auto [gain, neg_index, i] = offers.top();
      offers.pop();
      int add = sizes[i][step[i] + 1] - sizes[i][step[i]];
      if (left[type[i]] < add) continue;  // what is left only shrinks
      left[type[i]] -= add;
      ++step[i];
      offer(i);
    }

    // 3. Placement: keep what is unchanged, shrink in place, then place the
    // rest largest first.
    FreeMap free(snap);
    std::vector<std::optional<Allocation>> placed(n);
    std::vector<int> to_place;
    for (int i = 0; i < n; ++i) {
      const Allocation& cur = snap.jobs[i]->alloc;
      const int want = step[i] < 0 ? 0 : sizes[i][step[i]];
      if (cur.empty()) {
        if (want > 0) to_place.push_back(i);
        continue;
      }
      if (want == cur.gpus() && type[i] == cur.type) continue;
      free.Release(cur);
      if (want == 0) {
        placed[i] = Allocation{};
      } else if (type[i] == cur.type && want < cur.gpus()) {
        placed[i] = Subset(cur, want);
        free.Take(*placed[i]);
      } else {
        to_place.push_back(i);
      }
    }
    std::stable_sort(to_place.begin(), to_place.end(), [&](int a, int b) {
      int ga = sizes[a][step[a]], gb = sizes[b][step[b]];
      if (ga != gb) return ga > gb;
      return std::tie(snap.jobs[a]->spec->submit, snap.jobs[a]->index) <
             std::tie(snap.jobs[b]->spec->submit, snap.jobs[b]->index);
    });
    for (int i : to_place) {
      const Allocation& cur = snap.jobs[i]->alloc;
      const int want = sizes[i][step[i]];
      std::optional<Allocation> grown;  // its GPUs and more
      // Its old GPUs went back to the pool above; a larger job placed
      // before it may have taken some, and then it cannot grow in place.
      if (!cur.empty() && cur.type == type[i] && free.IsFree(cur)) {
        free.Take(cur);
        std::optional<Allocation> extra = free.Place(type[i], want - cur.gpus());
        free.Release(cur);
        if (extra) {
          free.Release(*extra);
          grown = Merge(cur, *extra);
        }
      }
      std::optional<Allocation> fresh = free.Place(type[i], want);
      if (grown && (!fresh || grown->nodes() <= fresh->nodes())) {
        if (fresh) free.Release(*fresh);
        free.Take(*grown);
        fresh = std::move(grown);
      }
      // Cannot fail: step 1 and 2 count GPUs per type. Should it, the job waits.
      placed[i] = fresh ? std::move(*fresh) : Allocation{};
    }

    for (int i = 0; i < n; ++i) {
      if (placed[i] && *placed[i] != snap.jobs[i]->alloc) {
        d.assign.push_back({snap.jobs[i]->index, std::move(*placed[i])});
      }
    }
    std::sort(d.assign.begin(), d.assign.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return d;
  }

 private:
  // Reduction of job i's remaining time per added GPU when it goes from
  // `from` to `to` GPUs of `type`; counted (1 + hysteresis) times when it
  // already holds `to` GPUs of that type.
  double Gain(const Snapshot& snap, int i, int type, int from, int to) const {
    const JobView& job = *snap.jobs[i];
    const Cluster& cluster = *snap.cluster;
    const JobRate& a = snap.belief->Rate(*job.spec, type, from, MinNodes(cluster, type, from));
    const JobRate& b = snap.belief->Rate(*job.spec, type, to, MinNodes(cluster, type, to));
    if (!a.fits || !b.fits) return 0;
    double gain = job.remaining_iterations() * (a.iteration_time_s - b.iteration_time_s) / (to - from);
    if (!job.alloc.empty() && job.alloc.type == type && job.alloc.gpus() >= to) gain *= 1 + hysteresis_;
    return gain;
  }

  double hysteresis_;
};

}  // namespace

void RegisterElasticFlowPolicy(PolicyRegistry& registry) {
  Status s = registry.Register(
      {"elasticflow",
       "ElasticFlow without deadlines: minimum shares in submit order, leftover GPUs by marginal "
       "return (Gu et al., ASPLOS'23)",
       {"hysteresis=H: steps a running job holds count 1+H times (default 0.1)"},
       [](const PolicyOptions& opts, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
         auto h = opts.GetDouble("hysteresis", 0.1);
         if (!h.ok()) return h.status();
         if (*h < 0) return InvalidArgument("elasticflow: hysteresis must be >= 0");
         return std::unique_ptr<Policy>(new ElasticFlowPolicy(*h, ctx.baseline_plan_mode));
       }});
  assert(s.ok());
  (void)s;
}

}  // namespace tessel
