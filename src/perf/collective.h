// Topology-aware cost model of NCCL-style collectives: ring (and, across
// nodes, tree) algorithms over NVLink/NVSwitch/PCIe inside a node and the
// node's NICs between nodes, with latency and bandwidth efficiency fitted
// from measurements (comm_fit.h). Pure functions of their inputs.
#pragma once

#include "hardware/node.h"
#include "perf/params.h"

namespace tessel {

enum class Collective { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv };
const char* CollectiveName(Collective c);

// Where a group's ranks sit: `size` ranks, `ranks_per_node` of them on each
// node, and `concurrent_per_node` groups of the same shape communicating at
// the same time through each node's NICs (e.g. the t data-parallel groups of
// a tensor-parallel job).
struct GroupShape {
  int size = 1;
  int ranks_per_node = 1;
  int concurrent_per_node = 1;
};

class CollectiveModel {
 public:
  CollectiveModel(const Topology& topo, const PerfParams& params);

  // Seconds for one collective over a buffer of `bytes` (the full buffer:
  // what each rank holds for all-reduce, the gathered result for all-gather,
  // the input for reduce-scatter, what each rank sends for all-to-all, the
  // message for send/recv). 0 for a group of one.
  double Time(Collective op, double bytes, const GroupShape& g) const;

  // Achieved bus bandwidth, bytes/s, inside a node for a group of k ranks.
  double IntraBusBandwidth(int k) const;
  // Achieved network bandwidth of one node, bytes/s.
  double NodeNetworkBandwidth() const { return net_bw_; }

 private:
  const Topology& topo_;
  const PerfParams& params_;
  double net_bw_;
  double net_latency_s_;
  double intra_latency_s_;
};

}  // namespace tessel
