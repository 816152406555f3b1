#include "policy/contention.h"

#include <algorithm>

namespace tessel {
namespace {

double NicGbps(const Cluster& c, int node) { return c.types()[c.nodes()[node].type].topology.network_gbps; }

// Racks an allocation uses (ascending), and its nodes per rack.
std::vector<std::pair<int, int>> RacksOf(const Cluster& c, const Allocation& a) {
  std::vector<std::pair<int, int>> out;
  for (const Placement& p : a.parts) {
    int r = c.nodes()[p.node].rack;
    auto it = std::find_if(out.begin(), out.end(), [r](const auto& x) { return x.first == r; });
    if (it == out.end()) {
      out.push_back({r, 1});
    } else {
      ++it->second;
    }
  }
  return out;
}

}  // namespace

RackLoad::RackLoad(const Cluster& cluster)
    : cluster_(cluster), capacity_gbps_(cluster.num_racks(), 0.0), demand_gbps_(cluster.num_racks(), 0.0) {
  double over = std::max(1.0, cluster.spec().rack_oversubscription);
  for (const ClusterNode& n : cluster.nodes()) capacity_gbps_[n.rack] += NicGbps(cluster, n.id) / over;
}

void RackLoad::Add(const Allocation& alloc) {
  if (cluster_.num_racks() <= 1) return;
  std::vector<std::pair<int, int>> racks = RacksOf(cluster_, alloc);
  if (racks.size() < 2) return;
  for (const Placement& p : alloc.parts) demand_gbps_[cluster_.nodes()[p.node].rack] += NicGbps(cluster_, p.node);
}

double RackLoad::Share(const Allocation& alloc) const {
  if (cluster_.num_racks() <= 1) return 1.0;
  std::vector<std::pair<int, int>> racks = RacksOf(cluster_, alloc);
  if (racks.size() < 2) return 1.0;
  double share = 1.0;
  for (const auto& [r, nodes] : racks) {
    if (demand_gbps_[r] > capacity_gbps_[r]) share = std::min(share, capacity_gbps_[r] / demand_gbps_[r]);
  }
  return share;
}

double RackLoad::ExpectedShare(int type, int nodes) const {
  const Cluster& c = cluster_;
  int per_rack = c.spec().nodes_per_rack;
  if (c.num_racks() <= 1 || per_rack <= 0 || nodes <= per_rack) return 1.0;
  // It spans at least this many racks; assume its nodes spread evenly over
  // the least loaded of them and share each uplink in proportion.
  int spans = (nodes + per_rack - 1) / per_rack;
  double demand = c.types()[type].topology.network_gbps * nodes / spans;
  std::vector<double> shares;
  for (int r = 0; r < c.num_racks(); ++r)
    shares.push_back(std::min(1.0, capacity_gbps_[r] / (demand_gbps_[r] + demand)));
  std::sort(shares.begin(), shares.end(), std::greater<double>());
  return shares[std::min<int>(spans, static_cast<int>(shares.size())) - 1];
}

std::vector<double> NetworkShares(const Cluster& cluster, std::span<const Allocation* const> allocs) {
  RackLoad load(cluster);
  for (const Allocation* a : allocs) load.Add(*a);
  std::vector<double> out;
  out.reserve(allocs.size());
  for (const Allocation* a : allocs) out.push_back(load.Share(*a));
  return out;
}

}  // namespace tessel
