#include "perf/collective.h"

#include <algorithm>
#include <cmath>

namespace tessel {

const char* CollectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "all-reduce";
    case Collective::kAllGather: return "all-gather";
    case Collective::kReduceScatter: return "reduce-scatter";
    case Collective::kAllToAll: return "all-to-all";
    case Collective::kSendRecv: return "send";
  }
  return "?";
}

CollectiveModel::CollectiveModel(const Topology& topo, const PerfParams& params)
    : topo_(topo), params_(params) {
  net_bw_ = topo.NetworkGBs() * 1e9 * params.network.efficiency;
  net_latency_s_ = params.network.step_latency_us * 1e-6;
  intra_latency_s_ = params.ForLink(topo.intra).step_latency_us * 1e-6;
}

double CollectiveModel::IntraBusBandwidth(int k) const {
  LinkKind kind = topo_.intra;
  // NVLink bridges join pairs only; larger groups fall back to PCIe.
  if (kind == LinkKind::kNvlinkBridge && k > 2) kind = LinkKind::kPcie;
  return topo_.IntraNodeGbs(k) * 1e9 * params_.ForLink(kind).efficiency;
}

double CollectiveModel::Time(Collective op, double bytes, const GroupShape& g) const {
  const int n = g.size;
  if (n <= 1 || bytes <= 0) return 0.0;
  const int k = std::clamp(g.ranks_per_node, 1, n);
  const int nodes = (n + k - 1) / k;
  const double c = std::max(1, g.concurrent_per_node);
  const bool cross = nodes > 1;
  const double alpha = cross ? net_latency_s_ : intra_latency_s_;
  const double b_intra = k > 1 ? IntraBusBandwidth(k) : 0.0;

  if (op == Collective::kSendRecv) {
    double bw = cross ? net_bw_ / c : IntraBusBandwidth(2);
    return alpha + bytes / bw;
  }
  if (op == Collective::kAllToAll) {
    // Each rank keeps 1/n, sends (k-1)/n over the node's links and (n-k)/n
    // through the NICs, which all k*c ranks of the node share.
    double t_intra = k > 1 ? bytes * (k - 1) / n / b_intra : 0.0;
    double t_net = cross ? c * k * bytes * (n - k) / n / net_bw_ : 0.0;
    return (n - 1) * alpha + std::max(t_intra, t_net);
  }
  const double f = (op == Collective::kAllReduce) ? 2.0 * (n - 1) / n : 1.0 * (n - 1) / n;
  const double steps = (op == Collective::kAllReduce) ? 2.0 * (n - 1) : 1.0 * (n - 1);
  // Hierarchical ring: the slower of the intra-node hops and the NIC, which
  // carries one ring crossing per concurrent group.
  double t_bw = std::max(k > 1 ? f * bytes / b_intra : 0.0, cross ? c * f * bytes / net_bw_ : 0.0);
  double ring = steps * alpha + t_bw;
  if (!cross || op != Collective::kAllReduce) return ring;
  // NCCL's tree: logarithmic latency, slightly lower bandwidth.
  double tree = 2.0 * std::ceil(std::log2(static_cast<double>(nodes))) * alpha +
                2.0 * (k - 1) * intra_latency_s_ + t_bw / 0.9;
  return std::min(ring, tree);
}

}  // namespace tessel
