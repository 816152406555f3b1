// Where a job's GPUs are: GPUs of one type on one or more nodes of a
// Cluster. What the policies decide (policy/snapshot.h), what the network
// model routes between (network/network_model.h), what backends run.
#pragma once

#include <string>
#include <vector>

#include "hardware/cluster.h"

namespace tessel {

struct Placement {
  int node = 0;
  int gpus = 0;
  bool operator==(const Placement&) const = default;
};

// GPUs of one type on one or more nodes. Empty = no GPUs.
struct Allocation {
  int type = -1;                 // index into Cluster::types()
  std::vector<Placement> parts;  // ascending node ids, gpus > 0

  bool empty() const { return parts.empty(); }
  int gpus() const {
    int n = 0;
    for (const Placement& p : parts) n += p.gpus;
    return n;
  }
  int nodes() const { return static_cast<int>(parts.size()); }
  bool operator==(const Allocation&) const = default;
  // "a100-40g x8 on n3:4,n7:4"
  std::string ToString(const Cluster& cluster) const;
};

}  // namespace tessel
