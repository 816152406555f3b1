#include "policy/arena_admission.h"

#include <algorithm>
#include <cassert>
#include <optional>

namespace tessel {

int ArenaAdmit(std::span<const JobCurves> curves, const std::vector<int>& capacity, int admit_jobs, int admit_actions,
               std::vector<GoodputGrant>& grants) {
  if (admit_jobs <= 0 || admit_actions <= 0) return 0;
  const int types = static_cast<int>(capacity.size());
  std::vector<int> free = capacity;
  // Every grant names its curve (AllocateByMarginalUtility and
  // ImproveBySingleMoves set it).
  std::vector<char> granted(curves.size(), 0);
  for (const GoodputGrant& g : grants) {
    assert(g.curve >= 0 && curves[g.curve].job == g.job);
    free[g.type] -= g.gpus;
    granted[g.curve] = 1;
  }
  std::vector<std::pair<double, int>> waiting;  // (best value, curve)
  for (int c = 0; c < static_cast<int>(curves.size()); ++c) {
    if (granted[c] || !curves[c].job->alloc.empty()) continue;
    double best = 0;
    for (const TypeCurve& tc : curves[c].types)
      for (const CurvePoint& pt : tc.points) best = std::max(best, pt.utility);
    waiting.push_back({best, c});
  }
  if (waiting.empty()) return 0;
  // The admit_jobs most valuable, ties in curve order (as a stable sort).
  const size_t keep = std::min(waiting.size(), static_cast<size_t>(admit_jobs));
  std::partial_sort(waiting.begin(), waiting.begin() + keep, waiting.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  waiting.resize(keep);
  auto utility = [&](const JobCurves& jc, int type, int gpus) {
    for (const TypeCurve& tc : jc.types) {
      if (tc.type != type) continue;
      for (const CurvePoint& pt : tc.points)
        if (pt.gpus == gpus) return pt.utility;
    }
    return 0.0;
  };
  struct Action {
    int grant;
    int type, gpus;  // the donor's new grid
    int freed;
    double loss;
  };
  // The cheapest action of each granted job, listed under the type whose
  // GPUs it frees, cheapest per GPU first. It depends only on the grants
  // and the free GPUs, so it is rebuilt only after an admission.
  auto donor_actions = [&] {
    std::vector<std::vector<Action>> actions(types);
    for (int i = 0; i < static_cast<int>(grants.size()); ++i) {
      const GoodputGrant& g = grants[i];
      const JobCurves& dc = curves[g.curve];
      double have = utility(dc, g.type, g.gpus);
      std::optional<Action> best;
      for (const TypeCurve& tc : dc.types) {
        for (size_t k = 1; k < tc.points.size(); ++k) {
          const CurvePoint& pt = tc.points[k];
          bool shrink = tc.type == g.type && pt.gpus < g.gpus;
          bool move = tc.type != g.type && pt.gpus <= free[tc.type];
          if (!shrink && !move) continue;
          Action a{i, tc.type, pt.gpus, shrink ? g.gpus - pt.gpus : g.gpus, have - pt.utility};
          if (!best || a.loss * best->freed < best->loss * a.freed) best = a;
        }
      }
      if (best) actions[g.type].push_back(*best);
    }
    for (auto& list : actions)
      std::stable_sort(list.begin(), list.end(),
                       [](const Action& a, const Action& b) { return a.loss * b.freed < b.loss * a.freed; });
    return actions;
  };
  std::vector<std::vector<Action>> actions = donor_actions();
  int admitted = 0;
  for (const auto& w : waiting) {
    const JobCurves& jc = curves[w.second];
    double best_net = 0;
    int best_type = -1, best_gpus = 0;
    std::vector<Action> best_actions;
    for (const TypeCurve& tc : jc.types) {
      for (size_t k = 1; k < tc.points.size(); ++k) {
        const CurvePoint& pt = tc.points[k];
        if (pt.gpus > capacity[tc.type]) break;
        int need = pt.gpus - free[tc.type];
        double loss = 0;
        std::vector<Action> chosen;
        std::vector<int> room = free;  // moves take GPUs on other types
        for (const Action& a : actions[tc.type]) {
          if (need <= 0 || static_cast<int>(chosen.size()) == admit_actions) break;
          if (a.type != tc.type) {
            if (room[a.type] < a.gpus) continue;
            room[a.type] -= a.gpus;
          }
          chosen.push_back(a);
          loss += a.loss;
          need -= a.freed;
        }
        if (need > 0) continue;
        double net = pt.utility - loss;
        if (net > best_net) {
          best_net = net;
          best_type = tc.type;
          best_gpus = pt.gpus;
          best_actions = std::move(chosen);
        }
      }
    }
    if (best_type < 0) continue;
    for (const Action& a : best_actions) {
      GoodputGrant& g = grants[a.grant];
      free[g.type] += g.gpus;
      free[a.type] -= a.gpus;
      g.type = a.type;
      g.gpus = a.gpus;
    }
    free[best_type] -= best_gpus;
    grants.push_back({jc.job, best_type, best_gpus, 0, w.second});
    ++admitted;
    actions = donor_actions();
  }
  return admitted;
}

}  // namespace tessel
