#include "policy/priority_alloc.h"

#include <algorithm>

#include "policy/placement.h"

namespace tessel {

void AllocateByPriority(const Snapshot& snap, std::span<const PriorityEntry> order, Decision& decision) {
  const int n = static_cast<int>(order.size());
  const int num_types = static_cast<int>(snap.cluster->types().size());
  // Built when first needed: often every job keeps its GPUs (the free map),
  // and waiting jobs fit on free GPUs (the holders).
  std::optional<FreeMap> free_map;
  std::vector<uint8_t> displaced(n, 0);
  std::vector<int> displaced_at;                 // positions ever displaced
  std::vector<std::pair<int, Allocation>> placed;  // (position, new GPUs)
  // Per type: positions of jobs holding GPUs below the walk (ascending),
  // and the GPUs held by those not displaced and not yet reached by it;
  // found at the first job that free GPUs cannot hold.
  bool have_holders = false;
  std::vector<std::vector<int>> holders;
  std::vector<int> held_below;
  auto find_holders = [&](int walk) {
    holders.assign(num_types, {});
    held_below.assign(num_types, 0);
    for (int k = walk + 1; k < n; ++k) {
      const Allocation& cur = order[k].job->alloc;
      if (cur.empty()) continue;
      holders[cur.type].push_back(k);
      held_below[cur.type] += cur.gpus();
    }
    have_holders = true;
  };

  for (int i = 0; i < n; ++i) {
    const PriorityEntry& e = order[i];
    const Allocation& cur = e.job->alloc;
    if (!cur.empty() && !displaced[i]) {
      if (have_holders) held_below[cur.type] -= cur.gpus();
      continue;
    }
    if (!free_map) free_map.emplace(snap);
    FreeMap& free = *free_map;
    if (!cur.empty() && free.IsFree(cur)) {  // nobody used its GPUs after all
      free.Take(cur);
      displaced[i] = 0;
      continue;
    }
    std::optional<Allocation> alloc;
    for (int t : e.types) {
      alloc = free.Place(t, e.gpus);
      if (alloc) break;
    }
    if (!alloc && !have_holders) find_holders(i);
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
        if (scratch.IsFree(va)) {
          scratch.Take(va);
        } else {
          displaced[*it] = 1;
          displaced_at.push_back(*it);
          held_below[t] -= va.gpus();
        }
      }
      free = std::move(scratch);
    }
    if (alloc) {
      displaced[i] = 0;  // placed elsewhere: a change, not a suspension
      placed.push_back({i, std::move(*alloc)});
    }
  }

  std::vector<std::pair<int, Allocation>> changes;
  for (auto& [i, alloc] : placed) {
    const JobView& job = *order[i].job;
    if (alloc != job.alloc) changes.push_back({job.index, std::move(alloc)});
  }
  for (int i : displaced_at) {
    if (displaced[i]) changes.push_back({order[i].job->index, Allocation{}});
  }
  std::sort(changes.begin(), changes.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& c : changes) decision.assign.push_back(std::move(c));
}

std::optional<std::span<const int>> PriorityTypesOrReject(const JobView& job, std::span<const int> candidates,
                                                          const Snapshot& snapshot, Decision& decision) {
  if (!candidates.empty()) return candidates;
  if (job.alloc.empty()) {
    decision.reject.push_back({job.index, NeverRunsReason(job, snapshot, job.spec->requested_gpus)});
    return std::nullopt;
  }
  return std::span<const int>(&job.alloc.type, 1);  // runs somehow; keep it where it is
}

}  // namespace tessel
