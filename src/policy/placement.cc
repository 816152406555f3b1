#include "policy/placement.h"

#include <algorithm>

#include "policy/throughput.h"

namespace tessel {

FreeMap::FreeMap(const Snapshot& snapshot)
    : cluster_(snapshot.cluster),
      free_(snapshot.free_gpus.begin(), snapshot.free_gpus.end()),
      free_by_type_(snapshot.cluster->types().size(), 0) {
  for (const ClusterNode& n : cluster_->nodes()) free_by_type_[n.type] += free_[n.id];
}

bool FreeMap::CanPlace(int type, int gpus, int max_nodes) const {
  if (gpus <= 0 || free_by_type_[type] < gpus) return false;
  const GpuTypeInfo& info = cluster_->types()[type];
  if (max_nodes <= 0) return true;
  // The `max_nodes` fullest nodes must hold the job.
  std::vector<int> frees;
  frees.reserve(info.nodes.size());
  for (int id : info.nodes) {
    if (free_[id] > 0) frees.push_back(free_[id]);
  }
  int k = std::min<int>(max_nodes, static_cast<int>(frees.size()));
  std::partial_sort(frees.begin(), frees.begin() + k, frees.end(), std::greater<int>());
  int sum = 0;
  for (int i = 0; i < k; ++i) sum += frees[i];
  return sum >= gpus;
}

std::optional<Allocation> FreeMap::Place(int type, int gpus, int max_nodes) {
  if (gpus <= 0 || free_by_type_[type] < gpus) return std::nullopt;
  const GpuTypeInfo& info = cluster_->types()[type];
  Allocation alloc;
  alloc.type = type;
  // Best fit on one node.
  int best = -1;
  for (int id : info.nodes) {
    int f = free_[id];
    if (f >= gpus && (best < 0 || f < free_[best])) {
      best = id;
      if (f == gpus) break;
    }
  }
  if (best >= 0) {
    alloc.parts.push_back({best, gpus});
  } else {
    // Fewest nodes: fullest-free first (ties: lower id).
    std::vector<int> order;
    for (int id : info.nodes) {
      if (free_[id] > 0) order.push_back(id);
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return free_[a] > free_[b]; });
    int left = gpus;
    for (int id : order) {
      if (left == 0) break;
      int take = std::min(left, free_[id]);
      alloc.parts.push_back({id, take});
      left -= take;
    }
    if (left > 0) return std::nullopt;
    if (max_nodes > 0 && alloc.nodes() > max_nodes) return std::nullopt;
    std::sort(alloc.parts.begin(), alloc.parts.end(),
              [](const Placement& a, const Placement& b) { return a.node < b.node; });
  }
  Take(alloc);
  return alloc;
}

void FreeMap::Release(const Allocation& alloc) {
  for (const Placement& p : alloc.parts) {
    free_[p.node] += p.gpus;
    free_by_type_[alloc.type] += p.gpus;
  }
}

void FreeMap::Take(const Allocation& alloc) {
  for (const Placement& p : alloc.parts) {
    assert(free_[p.node] >= p.gpus && "FreeMap::Take of GPUs that are not free");
    free_[p.node] -= p.gpus;
    free_by_type_[alloc.type] -= p.gpus;
  }
}

std::vector<int> CandidateTypes(const JobView& job, const Snapshot& snapshot) {
  const Cluster& cluster = *snapshot.cluster;
  const JobSpec& spec = *job.spec;
  std::vector<int> types;
  auto nodes_for = [&](int type, int gpus) {
    int per = cluster.types()[type].max_gpus_per_node;
    return (gpus + per - 1) / per;
  };
  if (!spec.requested_gpu_type.empty()) {
    int t = cluster.FindType(spec.requested_gpu_type);
    if (t >= 0 && cluster.types()[t].total_gpus >= spec.requested_gpus &&
        snapshot.belief->Rate(spec, t, spec.requested_gpus, nodes_for(t, spec.requested_gpus)).fits) {
      types.push_back(t);
    }
    return types;
  }
  std::vector<std::pair<double, int>> ranked;
  for (int t = 0; t < static_cast<int>(cluster.types().size()); ++t) {
    if (cluster.types()[t].total_gpus < spec.requested_gpus) continue;
    const JobRate& r = snapshot.belief->Rate(spec, t, spec.requested_gpus, nodes_for(t, spec.requested_gpus));
    if (r.fits) ranked.push_back({r.iteration_time_s, t});
  }
  std::sort(ranked.begin(), ranked.end());
  for (const auto& [time, t] : ranked) types.push_back(t);
  return types;
}

std::string Allocation::ToString(const Cluster& cluster) const {
  if (empty()) return "-";
  std::string s = cluster.TypeName(type) + " x" + std::to_string(gpus()) + " on ";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) s += ",";
    s += "n" + std::to_string(parts[i].node) + ":" + std::to_string(parts[i].gpus);
  }
  return s;
}

const char* JobPhaseName(JobPhase p) {
  switch (p) {
    case JobPhase::kPending: return "pending";
    case JobPhase::kStarting: return "starting";
    case JobPhase::kRunning: return "running";
  }
  return "?";
}

}  // namespace tessel
