#include "policy/goodput_alloc.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <optional>
#include <queue>
#include <tuple>
#include <unordered_map>

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

int ImproveBySingleMoves(const std::vector<JobCurves>& jobs, const std::vector<int>& capacity,
                         std::vector<GoodputGrant>& grants, int max_sweeps) {
  std::vector<int> free = capacity;
  // The grant of each job (index into `grants`, -1 = none).
  std::vector<int> grant_of(jobs.size(), -1);
  std::unordered_map<const JobView*, int> job_index;
  for (size_t j = 0; j < jobs.size(); ++j) job_index.emplace(jobs[j].job, static_cast<int>(j));
  for (size_t g = 0; g < grants.size(); ++g) {
    free[grants[g].type] -= grants[g].gpus;
    auto it = job_index.find(grants[g].job);
    if (it != job_index.end()) grant_of[it->second] = static_cast<int>(g);
  }
  auto utility_of = [&](const JobCurves& jc, int type, int gpus) {
    for (const TypeCurve& tc : jc.types) {
      if (tc.type != type) continue;
      for (const CurvePoint& p : tc.points)
        if (p.gpus == gpus) return p.utility;
    }
    return jc.types.empty() ? 0.0 : jc.types.front().points.front().utility;
  };
  int moves = 0;
  for (int sweep = 0; sweep < max_sweeps; ++sweep) {
    bool moved = false;
    for (size_t j = 0; j < jobs.size(); ++j) {
      const JobCurves& jc = jobs[j];
      if (jc.types.empty()) continue;
      const int g = grant_of[j];
      const int cur_type = g >= 0 ? grants[g].type : -1, cur_gpus = g >= 0 ? grants[g].gpus : 0;
      const double now = g >= 0 ? utility_of(jc, cur_type, cur_gpus) : jc.types.front().points.front().utility;
      double best = now;
      int best_type = -1, best_gpus = 0;
      for (const TypeCurve& tc : jc.types) {
        const int room = free[tc.type] + (tc.type == cur_type ? cur_gpus : 0);
        for (size_t k = 1; k < tc.points.size(); ++k) {
          const CurvePoint& p = tc.points[k];
          if (p.gpus > room) break;
          if (p.utility > best + 1e-12 * std::max(1.0, std::abs(best))) {
            best = p.utility;
            best_type = tc.type;
            best_gpus = p.gpus;
          }
        }
      }
      if (best_type < 0) continue;
      if (g >= 0) {
        free[cur_type] += cur_gpus;
        grants[g].type = best_type;
        grants[g].gpus = best_gpus;
        grants[g].max_nodes = 0;
      } else {
        grant_of[j] = static_cast<int>(grants.size());
        grants.push_back({jc.job, best_type, best_gpus});
      }
      free[best_type] -= best_gpus;
      ++moves;
      moved = true;
    }
    if (!moved) break;
  }
  return moves;
}

namespace {

struct Packing {
  std::vector<std::pair<const JobView*, Allocation>> placed;
  std::vector<char> kept;  // per placed entry: the job keeps its current GPUs
  int gpus = 0;
  bool all_full = true;  // every grant placed at its full size
  int migrations = 0;    // kept jobs moved to defragment
};

// Explicit defragmentation (PlaceOptions::defrag_moves): room for `gpus`
// GPUs of `type` on `k` nodes, made by moving jobs already placed on one
// node each (smaller than the grant) to other nodes of the type. Jobs placed
// by this decision move free (they restart anyway); at most `max_moves` kept
// ones move. Candidate node sets: each single node when k = 1, else the k
// nodes with the most free plus movable GPUs. Among feasible sets, the one
// moving fewest kept jobs, then fewest GPUs, then the lowest node ids.
// On success the grant's GPUs are taken and `out.placed` is updated.
std::optional<Allocation> Defragment(FreeMap& fm, const Cluster& cluster, int type, int gpus, int k, int max_moves,
                                     Packing& out) {
  const std::vector<int>& nodes = cluster.types()[type].nodes;
  // Movable placed entries per node.
  std::vector<std::vector<int>> on_node(cluster.nodes().size());
  for (int i = 0; i < static_cast<int>(out.placed.size()); ++i) {
    const Allocation& a = out.placed[i].second;
    if (a.type != type || a.nodes() != 1 || a.gpus() >= gpus) continue;
    on_node[a.parts[0].node].push_back(i);
  }
  // Free plus movable GPUs per node.
  std::vector<int> room(cluster.nodes().size(), 0);
  for (int id : nodes) {
    room[id] = fm.free_on(id);
    for (int i : on_node[id]) room[id] += out.placed[i].second.gpus();
  }
  std::vector<std::vector<int>> candidates;
  if (k == 1) {
    for (int id : nodes)
      if (cluster.nodes()[id].gpus >= gpus && room[id] >= gpus) candidates.push_back({id});
  } else {
    std::vector<int> order;
    for (int id : nodes)
      if (room[id] > 0) order.push_back(id);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return room[a] > room[b]; });
    if (static_cast<int>(order.size()) >= k) {
      order.resize(k);
      std::sort(order.begin(), order.end());
      candidates.push_back(order);
    }
  }
  struct Plan {
    std::vector<int> nodes, moves;
    int kept_moves = 0, moved_gpus = 0;
  };
  std::optional<Plan> best;
  for (const std::vector<int>& set : candidates) {
    int need = gpus;
    std::vector<int> pool;  // movable entries on the set, largest first
    for (int id : set) {
      need -= fm.free_on(id);
      pool.insert(pool.end(), on_node[id].begin(), on_node[id].end());
    }
    if (need <= 0) continue;  // no move needed: ordinary placement handles it
    // Free moves first, then the largest kept jobs (fewest moves).
    std::stable_sort(pool.begin(), pool.end(), [&](int a, int b) {
      if (out.kept[a] != out.kept[b]) return out.kept[a] < out.kept[b];
      return out.placed[a].second.gpus() > out.placed[b].second.gpus();
    });
    Plan plan{set, {}, 0, 0};
    for (int i : pool) {
      if (need <= 0) break;
      if (out.kept[i] && plan.kept_moves == max_moves) break;
      plan.moves.push_back(i);
      plan.kept_moves += out.kept[i];
      plan.moved_gpus += out.placed[i].second.gpus();
      need -= out.placed[i].second.gpus();
    }
    if (need > 0) continue;
    if (!best || std::tie(plan.kept_moves, plan.moved_gpus) < std::tie(best->kept_moves, best->moved_gpus)) {
      best = std::move(plan);
    }
  }
  if (!best) return std::nullopt;
  // Try it: free the movers, reserve the grant's nodes, re-place the movers
  // elsewhere; undo everything if one does not fit.
  for (int i : best->moves) fm.Release(out.placed[i].second);
  Allocation grant;
  grant.type = type;
  int left = gpus;
  for (int id : best->nodes) {
    int take = std::min(left, fm.free_on(id));
    if (take > 0) grant.parts.push_back({id, take});
    left -= take;
  }
  assert(left == 0);
  fm.Take(grant);
  std::vector<Allocation> moved;
  for (int i : best->moves) {
    auto a = fm.Place(type, out.placed[i].second.gpus(), 1);
    if (!a) {
      for (const Allocation& m : moved) fm.Release(m);
      fm.Release(grant);
      for (int j : best->moves) fm.Take(out.placed[j].second);
      return std::nullopt;
    }
    moved.push_back(std::move(*a));
  }
  for (size_t m = 0; m < best->moves.size(); ++m) {
    int i = best->moves[m];
    if (moved[m] == out.placed[i].second) continue;  // landed where it was
    out.migrations += out.kept[i];
    out.kept[i] = 0;
    out.placed[i].second = std::move(moved[m]);
  }
  return grant;
}

// One packing. keep_first: jobs granted their current type and count take
// their exact GPUs before anything else is placed; otherwise every grant is
// placed largest first and a kept job keeps its GPUs only if still free.
Packing Pack(const Snapshot& snap, const std::vector<GoodputGrant>& grants, bool keep_first, int defrag_moves) {
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
      out.kept.push_back(1);
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
      out.kept.push_back(1);
      out.gpus += g->gpus;
      continue;
    }
    if (defrag_moves > 0) {
      int k = g->max_nodes > 0 ? g->max_nodes : MinNodes(*snap.cluster, g->type, g->gpus);
      if (!fm.CanPlace(g->type, g->gpus, k) && fm.free_of_type(g->type) > 0) {
        if (auto a = Defragment(fm, *snap.cluster, g->type, g->gpus, k, defrag_moves, out)) {
          out.placed.push_back({g->job, std::move(*a)});
          out.kept.push_back(0);
          out.gpus += g->gpus;
          continue;
        }
      }
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
        out.kept.push_back(0);
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

Decision PlaceGrants(const Snapshot& snap, const std::vector<GoodputGrant>& grants, const PlaceOptions& options,
                     PlaceStats* stats) {
  Packing best = Pack(snap, grants, /*keep_first=*/true, options.defrag_moves);
  bool repacked = false;
  if (!best.all_full && options.repack) {
    Packing other = Pack(snap, grants, /*keep_first=*/false, options.defrag_moves);
    if (other.gpus > best.gpus) {
      best = std::move(other);
      repacked = true;
    }
  }
  if (stats != nullptr) {
    stats->migrations = best.migrations;
    stats->repacked = repacked;
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
