#include "policy/flow_network.h"

#include <algorithm>
#include <cmath>

namespace tessel {

std::vector<double> MaxMinRates(const std::vector<double>& capacities,
                                const std::vector<std::vector<int>>& paths) {
  const size_t nf = paths.size(), nl = capacities.size();
  std::vector<double> rate(nf, 0.0);
  std::vector<double> residual = capacities;
  std::vector<int> unfrozen_on(nl, 0);
  std::vector<char> frozen(nf, 0);
  size_t left = nf;
  for (size_t f = 0; f < nf; ++f) {
    if (paths[f].empty()) {
      rate[f] = std::numeric_limits<double>::infinity();
      frozen[f] = 1;
      --left;
      continue;
    }
    for (int l : paths[f]) unfrozen_on[l]++;
  }
  while (left > 0) {
    // The bottleneck: the link whose residual capacity, split evenly among
    // its unfrozen flows, is smallest.
    int bottleneck = -1;
    double share = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < nl; ++l) {
      if (unfrozen_on[l] == 0) continue;
      double s = std::max(0.0, residual[l]) / unfrozen_on[l];
      if (s < share) {
        share = s;
        bottleneck = static_cast<int>(l);
      }
    }
    if (bottleneck < 0) break;
    // Every unfrozen flow grows by `share` (rates accumulate over rounds and
    // the residuals hold what they use); those on the bottleneck freeze.
    for (size_t f = 0; f < nf; ++f) {
      if (frozen[f]) continue;
      rate[f] += share;
      for (int l : paths[f]) residual[l] -= share;
    }
    for (size_t f = 0; f < nf; ++f) {
      if (frozen[f]) continue;
      if (std::find(paths[f].begin(), paths[f].end(), bottleneck) == paths[f].end()) continue;
      frozen[f] = 1;
      --left;
      for (int l : paths[f]) unfrozen_on[l]--;
    }
  }
  return rate;
}

Result<int> FlowNetwork::AddLink(std::string name, double bytes_per_s) {
  if (!(bytes_per_s > 0) || !std::isfinite(bytes_per_s))
    return InvalidArgument("link " + name + ": bandwidth must be a positive number of bytes/s");
  links_.push_back({std::move(name), bytes_per_s});
  return static_cast<int>(links_.size()) - 1;
}

Result<int> FlowNetwork::AddFlow(std::vector<int> links, double bytes) {
  if (!(bytes > 0) || !std::isfinite(bytes)) return InvalidArgument("flow: bytes must be a positive number");
  if (links.empty()) return InvalidArgument("flow: a transfer crosses at least one link");
  for (int l : links)
    if (l < 0 || l >= static_cast<int>(links_.size())) return InvalidArgument("flow: no link " + std::to_string(l));
  std::sort(links.begin(), links.end());
  links.erase(std::unique(links.begin(), links.end()), links.end());
  Flow f;
  f.links = std::move(links);
  f.bytes = f.remaining = bytes;
  f.start = now_;
  flows_.push_back(std::move(f));
  active_.push_back(static_cast<int>(flows_.size()) - 1);
  Reshare();
  return static_cast<int>(flows_.size()) - 1;
}

double FlowNetwork::Rate(int flow) const { return Active(flow) ? flows_[flow].rate : 0.0; }

void FlowNetwork::set_contention_overhead(double overhead) {
  overhead_ = std::isfinite(overhead) ? std::max(0.0, overhead) : 0.0;
  Reshare();
}

void FlowNetwork::Reshare() {
  std::vector<double> caps;
  caps.reserve(links_.size());
  for (const auto& l : links_) caps.push_back(l.capacity);
  std::vector<std::vector<int>> paths;
  paths.reserve(active_.size());
  for (int f : active_) paths.push_back(flows_[f].links);
  if (overhead_ > 0) {
    std::vector<int> on(links_.size(), 0);
    for (const auto& p : paths)
      for (int l : p) on[l]++;
    for (size_t l = 0; l < links_.size(); ++l)
      if (on[l] >= 2) caps[l] /= 1.0 + overhead_ * (on[l] - 1) / on[l];
  }
  std::vector<double> r = MaxMinRates(caps, paths);
  for (size_t i = 0; i < active_.size(); ++i) flows_[active_[i]].rate = r[i];
}

double FlowNetwork::NextCompletion() const {
  double t = kNever;
  for (int i : active_) {
    const Flow& f = flows_[i];
    if (f.rate > 0) t = std::min(t, now_ + f.remaining / f.rate);
  }
  return t;
}

std::vector<int> FlowNetwork::Advance(double until) {
  double next = NextCompletion();
  double t = std::min(next, until);
  std::vector<int> done;
  if (t == kNever) return done;
  double dt = t - now_;
  std::vector<int> still;
  still.reserve(active_.size());
  for (int i : active_) {
    Flow& f = flows_[i];
    f.remaining -= f.rate * dt;
    // The flow(s) defining the next completion finish exactly; others that
    // end within rounding of it too.
    if (t == next && f.remaining <= 1e-9 * f.bytes) {
      f.remaining = 0;
      f.finish = t;
      f.rate = 0;
      done.push_back(i);
    } else {
      still.push_back(i);
    }
  }
  active_.swap(still);
  now_ = std::max(now_, t);
  if (!done.empty()) Reshare();
  return done;
}

void FlowNetwork::RunToCompletion() {
  while (!active_.empty()) {
    if (Advance().empty() && NextCompletion() == kNever) break;
  }
}

std::vector<int> Fabric::Path(int a, int b) const {
  if (a == b) return {};
  std::vector<int> p = {node_up[a]};
  if (!rack_up.empty() && node_rack[a] != node_rack[b]) {
    p.push_back(rack_up[node_rack[a]]);
    p.push_back(rack_down[node_rack[b]]);
  }
  p.push_back(node_down[b]);
  return p;
}

std::vector<std::vector<int>> Fabric::Ring(const std::vector<int>& nodes) const {
  std::vector<std::vector<int>> out;
  if (nodes.size() < 2) return out;
  for (size_t i = 0; i < nodes.size(); ++i) out.push_back(Path(nodes[i], nodes[(i + 1) % nodes.size()]));
  return out;
}

Fabric BuildFabric(const Cluster& cluster) {
  Fabric f;
  const auto& spec = cluster.spec();
  std::vector<double> rack_bytes(cluster.num_racks(), 0.0);
  for (const ClusterNode& n : cluster.nodes()) {
    double bytes_per_s = spec.pools[n.pool].network_gbps * 1e9 / 8;
    std::string id = std::to_string(n.id);
    f.node_up.push_back(*f.network.AddLink("node" + id + "-up", bytes_per_s));
    f.node_down.push_back(*f.network.AddLink("node" + id + "-down", bytes_per_s));
    f.node_rack.push_back(n.rack);
    rack_bytes[n.rack] += bytes_per_s;
  }
  if (cluster.num_racks() > 1) {
    for (int r = 0; r < cluster.num_racks(); ++r) {
      double cap = rack_bytes[r] / std::max(1.0, spec.rack_oversubscription);
      f.rack_up.push_back(*f.network.AddLink("rack" + std::to_string(r) + "-up", cap));
      f.rack_down.push_back(*f.network.AddLink("rack" + std::to_string(r) + "-down", cap));
    }
  }
  return f;
}

DualChoice AdaDual(double running_remaining_bytes, double new_bytes, double link_bytes_per_s,
                   double contention_overhead) {
  DualChoice c;
  const double b = link_bytes_per_s, r = running_remaining_bytes, m = new_bytes;
  // One after the other: the running task keeps the link, then the new one.
  c.serial_running = r / b;
  c.serial_new = (r + m) / b;
  // Together: each moves at b / (2 + overhead) (the link loses overhead/2
  // of its bandwidth to two contending transfers, FlowNetwork's rule) until
  // the smaller ends, then the larger has the link alone.
  const double shared = b / (2.0 + contention_overhead);
  const double first = std::min(r, m) / shared;
  const double second = first + (std::max(r, m) - std::min(r, m)) / b;
  c.concurrent_running = r <= m ? first : second;
  c.concurrent_new = r <= m ? second : first;
  c.concurrent = c.concurrent_running + c.concurrent_new < c.serial_running + c.serial_new;
  return c;
}

}  // namespace tessel
