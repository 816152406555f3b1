#include "policy/priority_alloc.h"

#include <algorithm>

#include "policy/placement.h"

namespace tessel {

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
      if (free.IsFree(cur)) {  // nobody used its GPUs after all
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
        if (scratch.IsFree(va)) {
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

std::optional<std::vector<int>> PriorityTypesOrReject(const JobView& job, const Snapshot& snapshot,
                                                      Decision& decision) {
  std::vector<int> types = CandidateTypes(job, snapshot);
  if (!types.empty()) return types;
  if (job.alloc.empty()) {
    decision.reject.push_back({job.index, NeverRunsReason(job, snapshot, job.spec->requested_gpus)});
    return std::nullopt;
  }
  return std::vector<int>{job.alloc.type};  // runs somehow; keep it where it is
}

}  // namespace tessel
