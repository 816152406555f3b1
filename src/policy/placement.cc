#include "policy/placement.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <tuple>

#include "policy/throughput.h"

namespace tessel {

FreeMap::FreeMap(const Snapshot& snapshot)
    : cluster_(snapshot.cluster),
      rule_(snapshot.placement),
      free_(snapshot.free_gpus.begin(), snapshot.free_gpus.end()),
      free_by_type_(snapshot.cluster->types().size(), 0) {
  for (const ClusterNode& n : cluster_->nodes()) free_by_type_[n.type] += free_[n.id];
  if (rule_.kind == PlacementRule::Kind::kLwfKappa) {
    multi_node_jobs_.assign(cluster_->nodes().size(), 0);
    for (const JobView* j : snapshot.jobs) CountMultiNode(j->alloc, +1);
  }
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
  std::optional<Allocation> alloc;
  switch (rule_.kind) {
    case PlacementRule::Kind::kConsolidate: alloc = Consolidated(type, gpus, max_nodes); break;
    case PlacementRule::Kind::kFirstFit: alloc = FirstFit(type, gpus, max_nodes); break;
    case PlacementRule::Kind::kLwfKappa: alloc = LeastLoaded(type, gpus, max_nodes); break;
  }
  // Under first-fit and lwf-kappa a spread that would share a node with
  // another spread job is refused outright (consolidated placement skips
  // those nodes instead).
  if (alloc && avoid_spread_sharing_ && SharesSpreadNode(*alloc)) alloc.reset();
  if (alloc) Take(*alloc);
  return alloc;
}

void FreeMap::AvoidSpreadSharing(const Snapshot& snapshot) {
  avoid_spread_sharing_ = true;
  if (!multi_node_jobs_.empty()) return;  // lwf-kappa counts them already
  multi_node_jobs_.assign(cluster_->nodes().size(), 0);
  for (const JobView* j : snapshot.jobs) CountMultiNode(j->alloc, +1);
}

bool FreeMap::SharesSpreadNode(const Allocation& alloc) const {
  if (alloc.nodes() < 2) return false;
  for (const Placement& p : alloc.parts)
    if (multi_node_jobs_[p.node] > 0) return true;
  return false;
}

void FreeMap::BuildBuckets() const {
  const auto& types = cluster_->types();
  words_.assign(types.size(), 0);
  bucket_base_.assign(types.size(), 0);
  size_t total = 0;
  for (size_t t = 0; t < types.size(); ++t) {
    words_[t] = static_cast<int>((types[t].nodes.size() + 63) / 64);
    bucket_base_[t] = static_cast<int>(total);
    total += static_cast<size_t>(types[t].max_gpus_per_node + 1) * static_cast<size_t>(words_[t]);
  }
  buckets_.assign(std::max<size_t>(total, 1), 0);
  for (const ClusterNode& n : cluster_->nodes()) {
    Bucket(n.type, free_[n.id])[n.index_in_type / 64] |= uint64_t{1} << (n.index_in_type % 64);
  }
}

std::optional<Allocation> FreeMap::Consolidated(int type, int gpus, int max_nodes) const {
  if (buckets_.empty()) BuildBuckets();
  const GpuTypeInfo& info = cluster_->types()[type];
  const int words = words_[type];
  // Best fit on one node: the fewest free GPUs that hold the job, the first
  // such node in the type's order.
  for (int f = gpus; f <= info.max_gpus_per_node; ++f) {
    const uint64_t* bits = Bucket(type, f);
    for (int w = 0; w < words; ++w) {
      if (bits[w] != 0) return Allocation{type, {{info.nodes[w * 64 + std::countr_zero(bits[w])], gpus}}};
    }
  }
  // Fewest nodes: fullest-free first (ties: lower id), within one rack
  // when some rack can hold the job (its traffic then stays off the
  // oversubscribed uplinks): the rack needing the fewest nodes, then the
  // tightest fit, then the lowest id.
  // The nodes with free GPUs, most free first, ties in the type's node
  // order: the buckets from the fullest down. With one rack, the fill
  // takes them in that order and stops as soon as the job is held.
  if (cluster_->num_racks() <= 1) {
    Allocation alloc;
    alloc.type = type;
    int left = gpus;
    for (int f = info.max_gpus_per_node; f >= 1 && left > 0; --f) {
      const uint64_t* bits = Bucket(type, f);
      for (int w = 0; w < words && left > 0; ++w) {
        for (uint64_t x = bits[w]; x != 0 && left > 0; x &= x - 1) {
          const int id = info.nodes[w * 64 + std::countr_zero(x)];
          if (avoid_spread_sharing_ && multi_node_jobs_[id] > 0) continue;
          int take = std::min(left, f);
          alloc.parts.push_back({id, take});
          left -= take;
        }
      }
    }
    if (left > 0 || (max_nodes > 0 && alloc.nodes() > max_nodes)) return std::nullopt;
    SortByNode(alloc);
    return alloc;
  }
  std::vector<int> order;
  for (int f = info.max_gpus_per_node; f >= 1; --f) {
    const uint64_t* bits = Bucket(type, f);
    for (int w = 0; w < words; ++w) {
      for (uint64_t x = bits[w]; x != 0; x &= x - 1) {
        const int id = info.nodes[w * 64 + std::countr_zero(x)];
        if (!(avoid_spread_sharing_ && multi_node_jobs_[id] > 0)) order.push_back(id);
      }
    }
  }
  if (cluster_->num_racks() > 1) {
    std::vector<int> rack_free(cluster_->num_racks(), 0), rack_nodes(cluster_->num_racks(), 0);
    for (int id : order) {  // fullest first: count nodes until the job fits
      int r = cluster_->nodes()[id].rack;
      if (rack_free[r] < gpus) {
        rack_free[r] += free_[id];
        ++rack_nodes[r];
      } else {
        rack_free[r] += free_[id];
      }
    }
    int best_rack = -1;
    for (int r = 0; r < cluster_->num_racks(); ++r) {
      if (rack_free[r] < gpus) continue;
      if (best_rack < 0 || rack_nodes[r] < rack_nodes[best_rack] ||
          (rack_nodes[r] == rack_nodes[best_rack] && rack_free[r] < rack_free[best_rack])) {
        best_rack = r;
      }
    }
    if (best_rack >= 0) {
      std::vector<int> in_rack;
      for (int id : order)
        if (cluster_->nodes()[id].rack == best_rack) in_rack.push_back(id);
      order = std::move(in_rack);
    }
  }
  std::optional<Allocation> filled = FillInOrder(type, gpus, order);
  if (!filled || (max_nodes > 0 && filled->nodes() > max_nodes)) return std::nullopt;
  return filled;
}

std::optional<Allocation> FreeMap::FirstFit(int type, int gpus, int max_nodes) const {
  std::optional<Allocation> alloc = FillInOrder(type, gpus, cluster_->types()[type].nodes);  // ascending ids
  if (alloc && max_nodes > 0 && alloc->nodes() > max_nodes) return Consolidated(type, gpus, max_nodes);
  return alloc;
}

std::optional<Allocation> FreeMap::FillInOrder(int type, int gpus, const std::vector<int>& nodes) const {
  Allocation alloc;
  alloc.type = type;
  int left = gpus;
  for (int id : nodes) {
    if (left == 0) break;
    int take = std::min(left, free_[id]);
    if (take == 0) continue;
    alloc.parts.push_back({id, take});
    left -= take;
  }
  if (left > 0) return std::nullopt;
  SortByNode(alloc);
  return alloc;
}

double FreeMap::Load(int node) const {
  const int gpus = cluster_->nodes()[node].gpus;
  double busy = gpus > 0 ? static_cast<double>(gpus - free_[node]) / gpus : 0.0;
  return busy + (multi_node_jobs_.empty() ? 0 : multi_node_jobs_[node]);
}

std::optional<Allocation> FreeMap::LeastLoaded(int type, int gpus, int max_nodes) const {
  struct Candidate {
    double load;
    int free;
    int id;
  };
  std::vector<Candidate> order;
  int most_free = 0;
  for (int id : cluster_->types()[type].nodes) {
    if (free_[id] == 0) continue;
    order.push_back({Load(id), free_[id], id});
    most_free = std::max(most_free, free_[id]);
  }
  std::sort(order.begin(), order.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.load, b.free, a.id) < std::tie(b.load, a.free, b.id);
  });
  auto ids = [](const std::vector<Candidate>& nodes) {
    std::vector<int> out;
    out.reserve(nodes.size());
    for (const Candidate& c : nodes) out.push_back(c.id);
    return out;
  };
  // GPU-level least-loaded first, when it stays within κ (and max_nodes).
  const int limit = max_nodes > 0 ? std::min(rule_.kappa, max_nodes) : rule_.kappa;
  std::optional<Allocation> spread = FillInOrder(type, gpus, ids(order));
  if (!spread) return std::nullopt;
  if (spread->nodes() <= limit) return spread;
  // Otherwise the fewest nodes that can hold the job (m0), least-loaded
  // first: a node is accepted, in load order, when the chosen ones, it and
  // the largest free counts among the nodes not yet considered can still
  // reach the count. `by_free[f]`: unconsidered nodes with f free GPUs.
  std::vector<int> by_free(most_free + 1, 0);
  for (const Candidate& c : order) ++by_free[c.free];
  int m0 = 0;
  for (int f = most_free, sum = 0; f > 0 && sum < gpus; --f) {
    for (int k = 0; k < by_free[f] && sum < gpus; ++k) {
      sum += f;
      ++m0;
    }
  }
  if (max_nodes > 0 && m0 > max_nodes) return std::nullopt;
  std::vector<Candidate> chosen;
  int chosen_free = 0;
  for (const Candidate& c : order) {
    if (static_cast<int>(chosen.size()) == m0) break;
    --by_free[c.free];
    int reach = chosen_free + c.free;
    int slots = m0 - static_cast<int>(chosen.size()) - 1;
    for (int f = most_free; f > 0 && slots > 0 && reach < gpus; --f) {
      int n = std::min(slots, by_free[f]);
      reach += n * f;
      slots -= n;
    }
    if (reach >= gpus) {
      chosen.push_back(c);
      chosen_free += c.free;
    }
  }
  std::optional<Allocation> fewest = FillInOrder(type, gpus, ids(chosen));
  assert(fewest && "the chosen nodes hold the job");
  return fewest;
}

void FreeMap::SortByNode(Allocation& alloc) {
  std::sort(alloc.parts.begin(), alloc.parts.end(),
            [](const Placement& a, const Placement& b) { return a.node < b.node; });
}

void FreeMap::CountMultiNode(const Allocation& alloc, int delta) {
  if (multi_node_jobs_.empty() || alloc.nodes() < 2) return;
  for (const Placement& p : alloc.parts) multi_node_jobs_[p.node] += delta;
}

void FreeMap::SetFree(int node, int gpus) {
  if (buckets_.empty()) {  // not built yet: built from free_ when first needed
    free_[node] = gpus;
    return;
  }
  const ClusterNode& n = cluster_->nodes()[node];
  const uint64_t bit = uint64_t{1} << (n.index_in_type % 64);
  Bucket(n.type, free_[node])[n.index_in_type / 64] &= ~bit;
  free_[node] = gpus;
  Bucket(n.type, gpus)[n.index_in_type / 64] |= bit;
}

void FreeMap::Release(const Allocation& alloc) {
  for (const Placement& p : alloc.parts) {
    SetFree(p.node, free_[p.node] + p.gpus);
    free_by_type_[alloc.type] += p.gpus;
  }
  CountMultiNode(alloc, -1);
}

bool FreeMap::IsFree(const Allocation& alloc) const {
  for (const Placement& p : alloc.parts) {
    if (free_[p.node] < p.gpus) return false;
  }
  return true;
}

void FreeMap::Take(const Allocation& alloc) {
  for (const Placement& p : alloc.parts) {
    assert(free_[p.node] >= p.gpus && "FreeMap::Take of GPUs that are not free");
    SetFree(p.node, free_[p.node] - p.gpus);
    free_by_type_[alloc.type] -= p.gpus;
  }
  CountMultiNode(alloc, +1);
}

std::vector<int> CandidateTypes(const JobView& job, const Snapshot& snapshot) {
  return CandidateTypes(job, snapshot, job.spec->requested_gpus);
}

std::vector<RateQuery> CandidateTypeQuestions(const JobSpec& job, const Cluster& cluster, int gpus) {
  std::vector<RateQuery> asked;
  if (!job.requested_gpu_type.empty()) {
    const int t = cluster.FindType(job.requested_gpu_type);
    if (t >= 0 && cluster.types()[t].total_gpus >= gpus) asked.push_back({&job, t, gpus, MinNodes(cluster, t, gpus)});
    return asked;
  }
  for (int t = 0; t < static_cast<int>(cluster.types().size()); ++t) {
    if (cluster.types()[t].total_gpus < gpus || !job.AllowsGpuType(cluster.TypeName(t))) continue;
    asked.push_back({&job, t, gpus, MinNodes(cluster, t, gpus)});
  }
  return asked;
}

std::vector<int> CandidateTypes(const JobView& job, const Snapshot& snapshot, int gpus) {
  const JobSpec& spec = *job.spec;
  std::vector<int> types;
  std::vector<RateQuery> asked = CandidateTypeQuestions(spec, *snapshot.cluster, gpus);
  if (!spec.requested_gpu_type.empty()) {
    for (const RateQuery& q : asked)
      if (snapshot.belief->Rate(spec, q.type, q.gpus, q.nodes).fits) types.push_back(q.type);
    return types;
  }
  snapshot.belief->Prefetch(asked);
  std::vector<std::pair<double, int>> ranked;
  for (const RateQuery& q : asked) {
    const JobRate& r = snapshot.belief->Rate(spec, q.type, q.gpus, q.nodes);
    if (r.fits) ranked.push_back({r.iteration_time_s, q.type});
  }
  std::sort(ranked.begin(), ranked.end());
  for (const auto& [time, t] : ranked) types.push_back(t);
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

std::vector<int> UpGpusByType(const Snapshot& snapshot) {
  const Cluster& cluster = *snapshot.cluster;
  std::vector<int> capacity(cluster.types().size(), 0);
  // Every node up (the usual case): each type's whole count.
  if (snapshot.node_up.size() >= cluster.nodes().size() &&
      std::find(snapshot.node_up.begin(), snapshot.node_up.end(), 0) == snapshot.node_up.end()) {
    for (size_t t = 0; t < capacity.size(); ++t) capacity[t] = cluster.types()[t].total_gpus;
    return capacity;
  }
  for (const ClusterNode& n : snapshot.cluster->nodes()) {
    if (n.id < static_cast<int>(snapshot.node_up.size()) && snapshot.node_up[n.id]) capacity[n.type] += n.gpus;
  }
  return capacity;
}

int MinNodes(const Cluster& cluster, int type, int gpus) {
  int per = std::max(1, cluster.types()[type].max_gpus_per_node);
  return std::max(1, (gpus + per - 1) / per);
}

Allocation Subset(const Allocation& alloc, int gpus) {
  std::vector<Placement> parts = alloc.parts;
  std::stable_sort(parts.begin(), parts.end(), [](const Placement& a, const Placement& b) { return a.gpus > b.gpus; });
  Allocation out;
  out.type = alloc.type;
  for (const Placement& p : parts) {
    if (gpus == 0) break;
    int take = std::min(gpus, p.gpus);
    out.parts.push_back({p.node, take});
    gpus -= take;
  }
  std::sort(out.parts.begin(), out.parts.end(), [](const Placement& a, const Placement& b) { return a.node < b.node; });
  return out;
}

Allocation Merge(const Allocation& a, const Allocation& b) {
  Allocation out = a;
  for (const Placement& p : b.parts) {
    auto it = std::find_if(out.parts.begin(), out.parts.end(), [&](const Placement& q) { return q.node == p.node; });
    if (it != out.parts.end()) {
      it->gpus += p.gpus;
    } else {
      out.parts.push_back(p);
    }
  }
  std::sort(out.parts.begin(), out.parts.end(), [](const Placement& x, const Placement& y) { return x.node < y.node; });
  return out;
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
