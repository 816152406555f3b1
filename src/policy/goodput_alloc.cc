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
  // A job's first steps (one per curve) are queued one at a time, best
  // first: this one's place in that order, -1 for any later step.
  int rank = -1;

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

GpuRange GoodputGpuRange(const JobView& job, int cap) {
  if (RigidJob(job)) {
    int n = std::max(1, job.spec->requested_gpus);
    return {n, n};
  }
  return {std::max(1, job.spec->min_gpus), cap};
}

std::vector<GoodputGrant> AllocateByMarginalUtility(std::span<const JobCurves> jobs, const std::vector<int>& capacity) {
  // The greedy over a max-heap of steps. A job's first steps (one per GPU
  // type) are computed up front but queued one at a time, in heap order:
  // while a job is unlocked its best not-yet-popped first step is queued,
  // and all its others rank below it, so none could have been popped
  // earlier — the order of pops is the one a heap of every first step
  // gives, at a fraction of its size. Buffers are reused across calls.
  thread_local std::vector<Step> heap, first;
  thread_local std::vector<int> locked, pos, first_begin, first_end;
  const int n = static_cast<int>(jobs.size());
  std::vector<int> free = capacity;
  heap.clear();
  first.clear();
  locked.assign(n, -1);
  pos.assign(n, 0);
  first_begin.assign(n, 0);
  first_end.assign(n, 0);
  for (int j = 0; j < n; ++j) {
    first_begin[j] = static_cast<int>(first.size());
    for (int c = 0; c < static_cast<int>(jobs[j].types.size()); ++c) {
      const TypeCurve& tc = jobs[j].types[c];
      Step s = BestStep(tc, j, c, 0, free[tc.type]);
      if (s.to >= 0) first.push_back(s);
    }
    first_end[j] = static_cast<int>(first.size());
    // Best first in heap order (the max-heap's operator<); a job has a few
    // types, so an insertion sort.
    for (int k = first_begin[j] + 1; k < first_end[j]; ++k) {
      for (int m = k; m > first_begin[j] && first[m - 1] < first[m]; --m) std::swap(first[m - 1], first[m]);
    }
    for (int k = first_begin[j]; k < first_end[j]; ++k) first[k].rank = k - first_begin[j];
    if (first_end[j] > first_begin[j]) heap.push_back(first[first_begin[j]]);
  }
  std::make_heap(heap.begin(), heap.end());
  auto push = [&](const Step& s) {
    heap.push_back(s);
    std::push_heap(heap.begin(), heap.end());
  };
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    Step s = heap.back();
    heap.pop_back();
    const int job = s.job, rank = s.rank;
    [&] {
      if (locked[s.job] >= 0 && locked[s.job] != s.curve) return;
      if (pos[s.job] != s.from) return;  // stale
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
      if (now.to < 0) return;
      if (now.to != s.to || now.ratio < s.ratio) {
        push(now);  // capacity shrank since: re-queue at its true value
        return;
      }
      free[tc.type] -= tc.points[s.to].gpus - tc.points[s.from].gpus;
      locked[s.job] = s.curve;
      pos[s.job] = s.to;
      Step next = BestStep(tc, s.job, s.curve, s.to, free[tc.type]);
      if (next.to >= 0) push(next);
    }();
    // A first step popped while its job stays unlocked: its next one joins.
    if (rank >= 0 && locked[job] < 0 && first_begin[job] + rank + 1 < first_end[job]) {
      push(first[first_begin[job] + rank + 1]);
    }
  }
  std::vector<GoodputGrant> out;
  out.reserve(n);
  for (int j = 0; j < n; ++j) {
    if (locked[j] < 0) continue;
    const TypeCurve& tc = jobs[j].types[locked[j]];
    out.push_back({jobs[j].job, tc.type, tc.points[pos[j]].gpus, 0, j});
  }
  return out;
}

int ImproveBySingleMoves(std::span<const JobCurves> jobs, const std::vector<int>& capacity,
                         std::vector<GoodputGrant>& grants, int max_sweeps) {
  std::vector<int> free = capacity;
  // The grant of each job (index into `grants`, -1 = none): by the curve
  // each grant names, else by its job.
  std::vector<int> grant_of(jobs.size(), -1);
  std::unordered_map<const JobView*, int> job_index;
  for (size_t g = 0; g < grants.size(); ++g) {
    free[grants[g].type] -= grants[g].gpus;
    int c = grants[g].curve;
    if (c < 0 || c >= static_cast<int>(jobs.size()) || jobs[c].job != grants[g].job) {
      if (job_index.empty())
        for (size_t j = 0; j < jobs.size(); ++j) job_index.emplace(jobs[j].job, static_cast<int>(j));
      auto it = job_index.find(grants[g].job);
      c = it != job_index.end() ? it->second : -1;
    }
    if (c >= 0) grant_of[c] = static_cast<int>(g);
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
        grants.push_back({jc.job, best_type, best_gpus, 0, static_cast<int>(j)});
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
  // Where each placed job goes; for a kept entry the allocation is left
  // empty: the job's own (AllocOf).
  std::vector<std::pair<const JobView*, Allocation>> placed;
  std::vector<char> kept;  // per placed entry: the job keeps its current GPUs
  int gpus = 0;
  bool all_full = true;  // every grant placed at its full size
  int migrations = 0;    // kept jobs moved to defragment

  const Allocation& AllocOf(size_t i) const { return kept[i] ? placed[i].first->alloc : placed[i].second; }
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
    const Allocation& a = out.AllocOf(i);
    if (a.type != type || a.nodes() != 1 || a.gpus() >= gpus) continue;
    on_node[a.parts[0].node].push_back(i);
  }
  // Free plus movable GPUs per node.
  std::vector<int> room(cluster.nodes().size(), 0);
  for (int id : nodes) {
    room[id] = fm.free_on(id);
    for (int i : on_node[id]) room[id] += out.AllocOf(i).gpus();
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
      return out.AllocOf(a).gpus() > out.AllocOf(b).gpus();
    });
    Plan plan{set, {}, 0, 0};
    for (int i : pool) {
      if (need <= 0) break;
      if (out.kept[i] && plan.kept_moves == max_moves) break;
      plan.moves.push_back(i);
      plan.kept_moves += out.kept[i];
      plan.moved_gpus += out.AllocOf(i).gpus();
      need -= out.AllocOf(i).gpus();
    }
    if (need > 0) continue;
    if (!best || std::tie(plan.kept_moves, plan.moved_gpus) < std::tie(best->kept_moves, best->moved_gpus)) {
      best = std::move(plan);
    }
  }
  if (!best) return std::nullopt;
  // Try it: free the movers, reserve the grant's nodes, re-place the movers
  // elsewhere; undo everything if one does not fit.
  for (int i : best->moves) fm.Release(out.AllocOf(i));
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
    auto a = fm.Place(type, out.AllocOf(i).gpus(), 1);
    if (!a) {
      for (const Allocation& m : moved) fm.Release(m);
      fm.Release(grant);
      for (int j : best->moves) fm.Take(out.AllocOf(j));
      return std::nullopt;
    }
    moved.push_back(std::move(*a));
  }
  for (size_t m = 0; m < best->moves.size(); ++m) {
    int i = best->moves[m];
    if (moved[m] == out.AllocOf(i)) continue;  // landed where it was
    out.migrations += out.kept[i];
    out.kept[i] = 0;
    out.placed[i].second = std::move(moved[m]);
  }
  return grant;
}

// Whether `gpus` GPUs over `nodes` can hold the grant's job: a job without
// an agent shrunk below its grant must still fit (memory) there.
bool HoldsShrunk(const Snapshot& snap, const GoodputGrant& g, int gpus, int nodes) {
  return gpus >= g.gpus || g.job->agent != nullptr || snap.belief->Rate(*g.job->spec, g.type, gpus, nodes).fits;
}

// `a` (n GPUs of the grant's type, taken from `fm`) spread over more nodes
// than the fewest that hold n: the most GPUs in [lo, n] that fit on that
// fewest count replace it when `price` values them higher at the nodes
// they span. Returns the GPUs placed (`a` holds them, taken from `fm`).
int PreferCompact(const Snapshot& snap, FreeMap& fm, const GoodputGrant& g, int n, int lo,
                  const PlaceOptions::Price& price, Allocation& a) {
  const int k = MinNodes(*snap.cluster, g.type, n);
  if (a.nodes() <= k) return n;
  fm.Release(a);
  for (int m = n; m >= lo; --m) {
    std::optional<Allocation> b = fm.Place(g.type, m, k);
    if (!b) continue;
    if (HoldsShrunk(snap, g, m, b->nodes()) && price(*g.job, g.type, m, b->nodes(), *b != g.job->alloc) >
                    price(*g.job, g.type, n, a.nodes(), a != g.job->alloc)) {
      a = std::move(*b);
      return m;
    }
    fm.Release(*b);
    break;
  }
  fm.Take(a);
  return n;
}

// One packing. keep_first: jobs granted their current type and count take
// their exact GPUs before anything else is placed; otherwise every grant is
// placed largest first and a kept job keeps its GPUs only if still free.
Packing Pack(const Snapshot& snap, const std::vector<GoodputGrant>& grants, bool keep_first, int defrag_moves,
             bool avoid_spread_sharing, const PlaceOptions::Price& price) {
  auto unchanged = [](const GoodputGrant& g) {
    const JobView& j = *g.job;
    return !j.alloc.empty() && j.alloc.type == g.type && j.alloc.gpus() == g.gpus;
  };
  // Every job's GPUs are released, but for keep_first those of the jobs
  // that keep theirs (releasing and taking them back changes nothing).
  std::vector<int> keeps;  // indices of the kept jobs, ascending
  if (keep_first) {
    for (const GoodputGrant& g : grants)
      if (unchanged(g)) keeps.push_back(g.job->index);
    std::sort(keeps.begin(), keeps.end());
  }
  FreeMap fm(snap);
  if (avoid_spread_sharing) fm.AvoidSpreadSharing(snap);
  size_t k = 0;
  for (const JobView* j : snap.jobs) {  // sorted by index
    while (k < keeps.size() && keeps[k] < j->index) ++k;
    if (!j->alloc.empty() && !(k < keeps.size() && keeps[k] == j->index)) fm.Release(j->alloc);
  }
  Packing out;
  out.placed.reserve(grants.size());
  out.kept.reserve(grants.size());
  std::vector<const GoodputGrant*> order;
  for (const GoodputGrant& g : grants) {
    if (keep_first && unchanged(g)) {
      out.placed.push_back({g.job, Allocation{}});
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
    if (!keep_first && unchanged(*g) && fm.IsFree(g->job->alloc) &&
        !(avoid_spread_sharing && fm.SharesSpreadNode(g->job->alloc))) {
      fm.Take(g->job->alloc);
      out.placed.push_back({g->job, Allocation{}});
      out.kept.push_back(1);
      out.gpus += g->gpus;
      continue;
    }
    if (defrag_moves > 0 && !avoid_spread_sharing) {
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
        if (!HoldsShrunk(snap, *g, n, a->nodes())) {
          fm.Release(*a);
          continue;
        }
        // A grant placed short, by fragmentation or by choice (priced
        // better compact), calls for the repack: a fresh packing, largest
        // first, may hold it whole.
        int placed = n;
        if (price) placed = PreferCompact(snap, fm, *g, n, lo, price, *a);
        out.placed.push_back({g->job, std::move(*a)});
        out.kept.push_back(0);
        out.gpus += placed;
        done = true;
        if (placed < g->gpus) out.all_full = false;
      }
    }
    if (!done) out.all_full = false;
  }
  return out;
}

}  // namespace

Decision PlaceGrants(const Snapshot& snap, const std::vector<GoodputGrant>& grants, const PlaceOptions& options,
                     PlaceStats* stats) {
  Packing best =
      Pack(snap, grants, /*keep_first=*/true, options.defrag_moves, options.avoid_spread_sharing, options.price);
  bool repacked = false;
  auto value = [&](const Packing& p) {
    double v = 0;
    for (size_t i = 0; i < p.placed.size(); ++i) {
      const Allocation& a = p.AllocOf(i);
      const JobView& job = *p.placed[i].first;
      v += options.price(job, a.type, a.gpus(), a.nodes(), !p.kept[i] && a != job.alloc);
    }
    return v;
  };
  const bool spread = options.price && [&] {
    for (size_t i = 0; i < best.placed.size(); ++i) {
      const Allocation& a = best.AllocOf(i);
      if (a.nodes() > MinNodes(*snap.cluster, a.type, a.gpus())) return true;
    }
    return false;
  }();
  if ((!best.all_full || spread) && options.repack) {
    Packing other =
        Pack(snap, grants, /*keep_first=*/false, options.defrag_moves, options.avoid_spread_sharing, options.price);
    if (other.gpus > best.gpus || (spread && other.gpus == best.gpus && value(other) > value(best))) {
      best = std::move(other);
      repacked = true;
    }
  }
  if (stats != nullptr) {
    stats->migrations = best.migrations;
    stats->repacked = repacked;
  }
  // Placed entries by job index (kept ones keep their GPUs: no change).
  std::vector<int> order(best.placed.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return best.placed[a].first->index < best.placed[b].first->index; });
  Decision d;
  size_t k = 0;
  for (const JobView* j : snap.jobs) {
    while (k < order.size() && best.placed[order[k]].first->index < j->index) ++k;
    const bool placed = k < order.size() && best.placed[order[k]].first == j;
    if (placed && best.kept[order[k]]) continue;  // its own GPUs
    Allocation next;
    if (placed) next = std::move(best.placed[order[k]].second);
    if (next != j->alloc) d.assign.push_back({j->index, std::move(next)});
  }
  return d;
}

}  // namespace tessel
