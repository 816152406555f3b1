#include "network/flow_network.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tessel {

namespace {

// Progressive filling over `paths` (anything indexable whose elements are
// link-id ranges), into `rate`. Every unfrozen flow grows by the same share
// each round, so a flow's rate is the running sum of the shares up to the
// round it freezes in (the same additions in the same order as adding them
// flow by flow), and a link's residual loses the share once per unfrozen
// flow on it. With `overhead` > 0, a link k >= 2 flows cross carries
// capacity / (1 + overhead (k - 1) / k) (FlowNetwork's contention rule).
template <typename PathAt>
void FillMaxMin(const std::vector<double>& capacities, double overhead, size_t nf, PathAt path,
                std::vector<double>& rate, FillScratch& sc) {
  const size_t nl = capacities.size();
  rate.assign(nf, 0.0);
  sc.residual.resize(nl);
  sc.unfrozen_on.assign(nl, 0);
  sc.frozen.assign(nf, 1);
  sc.touched.clear();  // links some flow crosses, in order of first use
  size_t left = 0;
  for (size_t f = 0; f < nf; ++f) {
    const auto& p = path(f);
    if (p.empty()) {
      rate[f] = std::numeric_limits<double>::infinity();
      continue;
    }
    sc.frozen[f] = 0;
    ++left;
    for (int l : p)
      if (sc.unfrozen_on[l]++ == 0) sc.touched.push_back(l);
  }
  // The flows on each touched link, ascending (a flow listed once per
  // crossing): link l's are on_link[first[l], first[l] + count[l]).
  sc.first.assign(nl, 0);
  sc.count.assign(nl, 0);
  size_t at = 0;
  for (int l : sc.touched) {
    sc.first[l] = static_cast<int>(at);
    const int k = sc.unfrozen_on[l];
    at += k;
    sc.residual[l] = capacities[l];
    if (overhead > 0 && k >= 2) sc.residual[l] /= 1.0 + overhead * (k - 1) / k;
  }
  sc.on_link.resize(at);
  for (size_t f = 0; f < nf; ++f)
    if (!sc.frozen[f])
      for (int l : path(f)) sc.on_link[sc.first[l] + sc.count[l]++] = static_cast<int>(f);
  double sum = 0;  // every unfrozen flow's rate so far
  // Links still carrying an unfrozen flow, in the order of `touched` (the
  // first of equal shares is the bottleneck).
  std::vector<int>& busy = sc.busy;
  busy = sc.touched;
  while (left > 0) {
    // The bottleneck: the link whose residual capacity, split evenly among
    // its unfrozen flows, is smallest.
    int bottleneck = -1;
    double share = std::numeric_limits<double>::infinity();
    for (int l : busy) {
      double s = std::max(0.0, sc.residual[l]) / sc.unfrozen_on[l];
      if (s < share) {
        share = s;
        bottleneck = l;
      }
    }
    if (bottleneck < 0) break;
    auto freeze_on = [&](int link) {
      const int* on = sc.on_link.data() + sc.first[link];
      for (int i = 0, n = sc.count[link]; i < n; ++i) {
        const int f = on[i];
        if (sc.frozen[f]) continue;
        sc.frozen[f] = 1;
        rate[f] = sum;
        --left;
        for (int l : path(f)) sc.unfrozen_on[l]--;
      }
    };
    if (share == 0) {
      // A round of zero share changes no rate and no residual; it freezes
      // the flows of the first link with nothing left, and the next round
      // those of the next such link, until none is left: all at once here
      // (most rounds, as equal flows on a ring leave equal links empty).
      for (int l : busy)
        if (sc.unfrozen_on[l] > 0 && !(sc.residual[l] > 0)) freeze_on(l);
    } else {
      // Every unfrozen flow grows by `share` (the residuals hold what they
      // use); those on the bottleneck freeze.
      sum += share;
      for (int l : busy)
        for (int k = sc.unfrozen_on[l]; k > 0; --k) sc.residual[l] -= share;
      freeze_on(bottleneck);
    }
    busy.erase(std::remove_if(busy.begin(), busy.end(), [&](int l) { return sc.unfrozen_on[l] == 0; }), busy.end());
  }
  for (size_t f = 0; f < nf && left > 0; ++f)
    if (!sc.frozen[f]) rate[f] = sum;
}

}  // namespace

std::vector<double> MaxMinRates(const std::vector<double>& capacities,
                                const std::vector<std::vector<int>>& paths) {
  std::vector<double> rate;
  FillScratch scratch;
  FillMaxMin(capacities, 0.0, paths.size(), [&](size_t f) -> const std::vector<int>& { return paths[f]; }, rate,
             scratch);
  return rate;
}

Result<int> FlowNetwork::AddLink(std::string name, double bytes_per_s) {
  if (!(bytes_per_s > 0) || !std::isfinite(bytes_per_s))
    return InvalidArgument("link " + name + ": bandwidth must be a positive number of bytes/s");
  link_names_.push_back(std::move(name));
  capacities_.push_back(bytes_per_s);
  return static_cast<int>(capacities_.size()) - 1;
}

Result<int> FlowNetwork::AddFlow(std::vector<int> links, double bytes) {
  auto ids = AddFlows({std::move(links)}, bytes);
  if (!ids.ok()) return ids.status();
  return ids->front();
}

Result<std::vector<int>> FlowNetwork::AddFlows(std::vector<std::vector<int>> paths, double bytes) {
  std::vector<int> ids;
  TESSEL_RETURN_IF_ERROR(AddFlows(paths, bytes, &ids));
  return ids;
}

size_t FlowNetwork::RouteHash::operator()(const std::vector<int>& v) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the link ids
  for (int x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
  return static_cast<size_t>(h ^ (h >> 32));
}

Status FlowNetwork::AddFlows(const std::vector<std::vector<int>>& paths, double bytes, std::vector<int>* ids) {
  ids->clear();
  if (!(bytes > 0) || !std::isfinite(bytes)) return InvalidArgument("flow: bytes must be a positive number");
  for (const auto& links : paths) {
    if (links.empty()) return InvalidArgument("flow: a transfer crosses at least one link");
    for (int l : links)
      if (l < 0 || l >= num_links()) return InvalidArgument("flow: no link " + std::to_string(l));
  }
  for (const auto& links : paths) {
    path_.assign(links.begin(), links.end());
    std::sort(path_.begin(), path_.end());
    path_.erase(std::unique(path_.begin(), path_.end()), path_.end());
    auto it = route_of_.find(path_);
    if (it == route_of_.end()) {
      it = route_of_.emplace(path_, static_cast<int>(routes_.size())).first;
      routes_.push_back(path_);
    }
    Flow f;
    f.route = it->second;
    f.bytes = f.remaining = bytes;
    f.start = now_;
    flows_.push_back(f);
    ids->push_back(static_cast<int>(flows_.size()) - 1);
    active_.push_back(ids->back());
  }
  stale_ = true;
  return Status::Ok();
}

double FlowNetwork::Rate(int flow) const {
  Fresh();
  return Active(flow) ? flows_[flow].rate : 0.0;
}

void FlowNetwork::set_contention_overhead(double overhead) {
  overhead_ = std::isfinite(overhead) ? std::max(0.0, overhead) : 0.0;
  stale_ = true;
}

void FlowNetwork::Fresh() const {
  if (!stale_) return;
  Reshare();
  stale_ = false;
}

void FlowNetwork::Reshare() const {
  paths_.clear();
  for (int f : active_) paths_.push_back(&routes_[flows_[f].route]);
  FillMaxMin(capacities_, overhead_, active_.size(), [&](size_t i) -> const std::vector<int>& { return *paths_[i]; },
             rates_, fill_);
  for (size_t i = 0; i < active_.size(); ++i) flows_[active_[i]].rate = rates_[i];
}

double FlowNetwork::NextCompletion() const {
  if (next_ >= 0 && !stale_) return next_;
  Fresh();
  double t = kNever;
  for (int i : active_) {
    const Flow& f = flows_[i];
    if (f.rate > 0) t = std::min(t, now_ + f.remaining / f.rate);
  }
  next_ = t;
  return t;
}

const std::vector<int>& FlowNetwork::Advance(double until) {
  double next = NextCompletion();
  double t = std::min(next, until);
  std::vector<int>& done = done_;
  done.clear();
  if (t == kNever) return done;
  next_ = -1;
  double dt = t - now_;
  std::vector<int>& still = spare_;
  still.clear();
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
  if (!done.empty()) stale_ = true;
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
