#include "policy/goodput_alloc.h"

#include <algorithm>
#include <queue>

#include "policy/placement.h"
#include "policy/throughput.h"

namespace tessel {
namespace {

struct Step {
  double ratio;
  int job;   // index into the jobs vector
  int curve; // index into the job's types
  int from;  // point index
  int to;    // point index

  // Max-heap order: higher ratio first, then lower job, curve, larger step.
  bool operator<(const Step& o) const {
    if (ratio != o.ratio) return ratio < o.ratio;
    if (job != o.job) return job > o.job;
    if (curve != o.curve) return curve > o.curve;
    return to < o.to;
  }
};

// The best step from point `from` within `room` more GPUs; to = -1 if none gains.
Step BestStep(const TypeCurve& c, int job, int curve, int from, int room) {
  Step best{0.0, job, curve, from, -1};
  const CurvePoint& a = c.points[from];
  for (int k = from + 1; k < static_cast<int>(c.points.size()); ++k) {
    const CurvePoint& b = c.points[k];
    int dg = b.gpus - a.gpus;
    if (dg > room) break;
    double r = (b.utility - a.utility) / dg;
    if (r > 0 && (best.to < 0 || r >= best.ratio)) {
      best.ratio = r;
      best.to = k;
    }
  }
  return best;
}

}  // namespace

bool RigidJob(const JobView& job) {
  return job.agent == nullptr && job.spec->min_gpus == job.spec->max_gpus;
}

GpuRange GoodputGpuRange(const JobView& job, int cap) {
  if (RigidJob(job)) {
    int n = std::max(1, job.spec->requested_gpus);
    return {n, n};
  }
  return {std::max(1, job.spec->min_gpus), cap};
}

std::vector<GoodputGrant> AllocateByMarginalUtility(const std::vector<JobCurves>& jobs,
                                                    const std::vector<int>& capacity) {
  std::vector<int> free = capacity;
  std::vector<int> locked(jobs.size(), -1), pos(jobs.size(), 0);
  std::priority_queue<Step> pq;
  for (int j = 0; j < static_cast<int>(jobs.size()); ++j) {
    for (int c = 0; c < static_cast<int>(jobs[j].types.size()); ++c) {
      const TypeCurve& tc = jobs[j].types[c];
      Step s = BestStep(tc, j, c, 0, free[tc.type]);
      if (s.to >= 0) pq.push(s);
    }
  }
  while (!pq.empty()) {
    Step s = pq.top();
    pq.pop();
    if (locked[s.job] >= 0 && locked[s.job] != s.curve) continue;
    if (pos[s.job] != s.from) continue;  // stale
    if (locked[s.job] < 0) {
      // A job's first step: among its types that gain as much, the one
      // with the most free GPUs (spreads jobs a type-blind utility cannot
      // tell apart).
      for (int c = 0; c < static_cast<int>(jobs[s.job].types.size()); ++c) {
        const TypeCurve& other = jobs[s.job].types[c];
        if (c == s.curve || free[other.type] <= free[jobs[s.job].types[s.curve].type]) continue;
        Step alt = BestStep(other, s.job, c, 0, free[other.type]);
        if (alt.to >= 0 && alt.ratio >= s.ratio) s = alt;
      }
    }
    const TypeCurve& tc = jobs[s.job].types[s.curve];
    Step now = BestStep(tc, s.job, s.curve, s.from, free[tc.type]);
    if (now.to < 0) continue;
    if (now.to != s.to || now.ratio < s.ratio) {
      pq.push(now);  // capacity shrank since: re-queue at its true value
      continue;
    }
    free[tc.type] -= tc.points[s.to].gpus - tc.points[s.from].gpus;
    locked[s.job] = s.curve;
    pos[s.job] = s.to;
    Step next = BestStep(tc, s.job, s.curve, s.to, free[tc.type]);
    if (next.to >= 0) pq.push(next);
  }
  std::vector<GoodputGrant> out;
  for (int j = 0; j < static_cast<int>(jobs.size()); ++j) {
    if (locked[j] < 0) continue;
    const TypeCurve& tc = jobs[j].types[locked[j]];
    out.push_back({jobs[j].job, tc.type, tc.points[pos[j]].gpus});
  }
  return out;
}

namespace {

struct Packing {
  std::vector<std::pair<const JobView*, Allocation>> placed;
  int gpus = 0;
  bool all_full = true;  // every grant placed at its full size
};

// One packing. keep_first: jobs granted their current type and count take
// their exact GPUs before anything else is placed; otherwise every grant is
// placed largest first and a kept job keeps its GPUs only if still free.
Packing Pack(const Snapshot& snap, const std::vector<GoodputGrant>& grants, bool keep_first) {
  FreeMap fm(snap);
  for (const JobView* j : snap.jobs)
    if (!j->alloc.empty()) fm.Release(j->alloc);
  auto unchanged = [](const GoodputGrant& g) {
    const JobView& j = *g.job;
    return !j.alloc.empty() && j.alloc.type == g.type && j.alloc.gpus() == g.gpus;
  };
  Packing out;
  std::vector<const GoodputGrant*> order;
  for (const GoodputGrant& g : grants) {
    if (keep_first && unchanged(g)) {
      fm.Take(g.job->alloc);
      out.placed.push_back({g.job, g.job->alloc});
      out.gpus += g.gpus;
    } else {
      order.push_back(&g);
    }
  }
  std::stable_sort(order.begin(), order.end(), [](const GoodputGrant* a, const GoodputGrant* b) {
    if (a->gpus != b->gpus) return a->gpus > b->gpus;
    return a->job->index < b->job->index;
  });
  for (const GoodputGrant* g : order) {
    if (!keep_first && unchanged(*g) && fm.IsFree(g->job->alloc)) {
      fm.Take(g->job->alloc);
      out.placed.push_back({g->job, g->job->alloc});
      out.gpus += g->gpus;
      continue;
    }
    const JobSpec& s = *g->job->spec;
    int lo = RigidJob(*g->job) ? g->gpus : std::max(1, std::min(g->gpus, s.min_gpus));
    bool done = false;
    for (int n = g->gpus; n >= lo && !done; --n) {
      if (auto a = fm.Place(g->type, n, g->max_nodes)) {
        // A shrunk job without an agent must still fit (memory) there.
        if (n < g->gpus && g->job->agent == nullptr &&
            !snap.belief->Rate(s, g->type, n, a->nodes()).fits) {
          fm.Release(*a);
          continue;
        }
        out.placed.push_back({g->job, std::move(*a)});
        out.gpus += n;
        done = true;
        if (n < g->gpus) out.all_full = false;
      }
    }
    if (!done) out.all_full = false;
  }
  return out;
}

}  // namespace

Decision PlaceGrants(const Snapshot& snap, const std::vector<GoodputGrant>& grants) {
  Packing best = Pack(snap, grants, /*keep_first=*/true);
  if (!best.all_full) {
    Packing other = Pack(snap, grants, /*keep_first=*/false);
    if (other.gpus > best.gpus) best = std::move(other);
  }
  std::vector<std::pair<const JobView*, Allocation>>& placed = best.placed;
  std::sort(placed.begin(), placed.end(),
            [](const auto& a, const auto& b) { return a.first->index < b.first->index; });
  Decision d;
  size_t k = 0;
  for (const JobView* j : snap.jobs) {
    while (k < placed.size() && placed[k].first->index < j->index) ++k;
    Allocation next;
    if (k < placed.size() && placed[k].first == j) next = placed[k].second;
    if (next != j->alloc) d.assign.push_back({j->index, std::move(next)});
  }
  return d;
}

}  // namespace tessel
