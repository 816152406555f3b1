// Load-aware network estimates (SYSTEM.md ideas 1 and 3): jobs spread over
// nodes of different racks send their gradient traffic through the racks'
// uplinks, which are oversubscribed (ClusterSpec racks) and shared by every
// such job. A rack's uplink carries its nodes' NIC bandwidth divided by the
// oversubscription; when the cross-rack jobs in a rack ask for more (each
// its nodes' NIC bandwidth there), each gets a proportional share. A job's
// network share is the smallest over the racks it spans; a job inside one
// rack (or a cluster with one switch) keeps 1.
#pragma once

#include <span>
#include <vector>

#include "hardware/cluster.h"
#include "policy/snapshot.h"

namespace tessel {

class RackLoad {
 public:
  explicit RackLoad(const Cluster& cluster);
  // Adds an allocation's cross-rack demand (nothing if it uses one rack).
  void Add(const Allocation& alloc);
  // The network share `alloc` gets with the load added so far (its own
  // demand included if it was added).
  double Share(const Allocation& alloc) const;
  // The share a job spanning `nodes` nodes of `type`, not yet placed, can
  // expect: 1 if a rack can hold it, else the mean uplink left over the
  // racks it must span (load-aware estimate for grids).
  double ExpectedShare(int type, int nodes) const;

 private:
  const Cluster& cluster_;
  std::vector<double> capacity_gbps_;  // per rack
  std::vector<double> demand_gbps_;    // per rack
};

// Every allocation's share under all of them together.
std::vector<double> NetworkShares(const Cluster& cluster, std::span<const Allocation* const> allocs);

}  // namespace tessel
