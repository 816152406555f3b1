#include "network/network_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "network/link_groups.h"

namespace tessel {

const char* CommScheduleName(CommSchedule s) {
  switch (s) {
    case CommSchedule::kConcurrent: return "concurrent";
    case CommSchedule::kSerial: return "serial";
    case CommSchedule::kAdaDual: return "adadual";
  }
  return "?";
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A job's iteration split the way the periodic model plays it.
struct Phases {
  double ready;    // its traffic becomes ready this long into the iteration
  double compute;  // compute (and what else is not on the wire) ends here
};
Phases SplitIteration(const CommJob& j) {
  double w = std::clamp(j.network_s, 0.0, j.iteration_s);
  double e = std::clamp(j.exposed_s, 0.0, w);
  return {j.iteration_s - w, j.iteration_s - e};
}

// Periodic answers kept (then forgotten all at once): bounds the memory.
constexpr size_t kMaxMemo = 1 << 16;

// The fractional part of id * the golden ratio: well-spread start phases
// that depend on the job alone.
double Phase(uint64_t id) {
  double x = static_cast<double>(id % 1000003) * 0.6180339887498949;
  return x - std::floor(x);
}

// Expected per-flow bandwidth of a link `k` flows share (k >= 1), with the
// contention overhead of FlowNetwork.
double SharedRate(double capacity, double k, double overhead) {
  k = std::max(1.0, k);
  return capacity / (1.0 + overhead * (k - 1) / k) / k;
}

}  // namespace

NetworkModel::NetworkModel(const Cluster& cluster, NetworkOptions options)
    : cluster_(cluster), options_(options), fabric_(BuildFabric(cluster)) {
  options_.max_simulated_jobs = std::max(1, options_.max_simulated_jobs);
  options_.measured_iterations = std::max(1, options_.measured_iterations);
}

std::vector<std::vector<int>> NetworkModel::RingPaths(const Allocation& alloc) const {
  std::vector<int> nodes;
  nodes.reserve(alloc.parts.size());
  for (const Placement& p : alloc.parts) nodes.push_back(p.node);
  std::stable_sort(nodes.begin(), nodes.end(), [&](int a, int b) {
    return cluster_.nodes()[a].rack < cluster_.nodes()[b].rack;
  });
  return fabric_.Ring(nodes);
}

const std::vector<std::vector<int>>& NetworkModel::PathsOf(const CommJob& j,
                                                           std::vector<std::vector<int>>& scratch) const {
  if (j.paths != nullptr) return *j.paths;
  scratch = RingPaths(*j.alloc);
  return scratch;
}

double NetworkModel::HopBytes(const CommJob& j) const {
  double nic = kInf;
  for (const Placement& p : j.alloc->parts) nic = std::min(nic, fabric_.network.capacity(fabric_.node_up[p.node]));
  return j.network_s * nic;
}

std::vector<std::vector<int>> NetworkModel::Components(std::span<const CommJob> jobs) const {
  LinkGroups groups(fabric_.network.num_links());
  std::vector<std::vector<int>> scratch;
  for (int j = 0; j < static_cast<int>(jobs.size()); ++j) groups.Add(j, PathsOf(jobs[j], scratch));
  return groups.All();
}

std::vector<double> NetworkModel::IterationTimes(std::span<const CommJob> jobs, std::vector<double>* duty) const {
  if (jobs.size() == 1) {
    // Alone: its ring's flows share only what the fabric makes them share
    // (an oversubscribed uplink may still be narrower than its NICs); the
    // slowest flow moves at the tightest link's even split.
    const CommJob& j = jobs[0];
    std::unordered_map<int, int> on;
    std::vector<std::vector<int>> scratch;
    for (const auto& p : PathsOf(j, scratch))
      for (int l : p) on[l]++;
    double rate = kInf;
    for (const auto& [l, k] : on) rate = std::min(rate, fabric_.network.capacity(l) / k);
    Phases ph = SplitIteration(j);
    double t = rate == kInf ? 0.0 : HopBytes(j) / rate;
    double c = std::max({j.iteration_s, ph.compute, ph.ready + t});
    if (duty != nullptr) *duty = {c > 0 ? std::min(1.0, t / c) : 0.0};
    return {c};
  }
  if (static_cast<int>(jobs.size()) > options_.max_simulated_jobs) return MeanFieldIterationTimes(jobs, duty);
  std::vector<double> key;
  std::unordered_map<int, int> local;
  std::vector<double> capacity;
  std::vector<std::vector<int>> scratch;
  key.push_back(static_cast<double>(jobs.size()));
  for (const CommJob& j : jobs) {
    key.insert(key.end(), {Phase(j.id), j.iteration_s, j.network_s, j.exposed_s, HopBytes(j)});
    const auto& paths = PathsOf(j, scratch);
    key.push_back(static_cast<double>(paths.size()));
    for (const auto& path : paths) {
      key.push_back(static_cast<double>(path.size()));
      for (int l : path) {
        auto [it, added] = local.try_emplace(l, static_cast<int>(capacity.size()));
        if (added) capacity.push_back(fabric_.network.capacity(l));
        key.push_back(it->second);
      }
    }
  }
  key.insert(key.end(), capacity.begin(), capacity.end());
  if (auto it = periodic_memo_.find(key); it != periodic_memo_.end()) {
    if (duty != nullptr) *duty = it->second.second;
    return it->second.first;
  }
  std::vector<double> d;
  std::vector<double> times = Periodic(jobs, &d);
  if (periodic_memo_.size() >= kMaxMemo) periodic_memo_.clear();
  periodic_memo_.emplace(std::move(key), std::make_pair(times, d));
  if (duty != nullptr) *duty = std::move(d);
  return times;
}

size_t NetworkModel::KeyHash::operator()(const std::vector<double>& k) const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the values' bits
  for (double v : k) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    h = (h ^ bits) * 1099511628211ull;
  }
  return static_cast<size_t>(h ^ (h >> 32));
}

std::vector<double> NetworkModel::MeanFieldIterationTimes(std::span<const CommJob> jobs,
                                                          std::vector<double>* duty_out) const {
  const size_t n = jobs.size();
  const double o = options_.contention_overhead;
  // Each job's links (dense local ids) with how many of its flows cross each.
  local_of_link_.resize(fabric_.network.num_links(), -1);
  std::vector<int> touched;
  std::vector<double> cap;
  std::vector<std::vector<std::pair<int, int>>> uses(n);
  std::vector<double> bytes(n), duty(n), cycle(n);
  std::vector<Phases> ph(n);
  std::vector<std::vector<int>> scratch;
  for (size_t j = 0; j < n; ++j) {
    for (const auto& p : PathsOf(jobs[j], scratch)) {
      for (int l : p) {
        int& id = local_of_link_[l];
        if (id < 0) {
          id = static_cast<int>(cap.size());
          cap.push_back(fabric_.network.capacity(l));
          touched.push_back(l);
        }
        auto u = std::find_if(uses[j].begin(), uses[j].end(), [&](const auto& x) { return x.first == id; });
        if (u == uses[j].end()) {
          uses[j].push_back({id, 1});
        } else {
          u->second++;
        }
      }
    }
    bytes[j] = HopBytes(jobs[j]);
    ph[j] = SplitIteration(jobs[j]);
    cycle[j] = jobs[j].iteration_s;
    duty[j] = jobs[j].duty_hint >= 0 ? std::min(1.0, jobs[j].duty_hint)
              : jobs[j].iteration_s > 0 ? std::min(1.0, jobs[j].network_s / jobs[j].iteration_s)
                                        : 0.0;
  }
  for (int l : touched) local_of_link_[l] = -1;
  std::vector<double> load(cap.size(), 0.0);  // expected active flows per link
  for (size_t j = 0; j < n; ++j)
    for (const auto& [l, c] : uses[j]) load[l] += duty[j] * c;
  // Gauss-Seidel sweeps: each job's duty is updated against the others'
  // latest, until none moves by more than 1e-4. Started from last time's
  // duties (most jobs hinted: a job or two joined or left since), one sweep
  // is taken: the fixed point is then reached over successive allocation
  // changes rather than within one (a lagged mean field, what keeps large
  // groups cheap to re-rate at every change).
  size_t hinted = std::count_if(jobs.begin(), jobs.end(), [](const CommJob& j) { return j.duty_hint >= 0; });
  const int rounds = 2 * hinted >= n ? 1 : 40;
  for (int round = 0; round < rounds; ++round) {
    double change = 0;
    for (size_t j = 0; j < n; ++j) {
      if (uses[j].empty() || bytes[j] <= 0) continue;
      double rate = kInf;
      // Its own flows are there for sure; the others with their duty.
      for (const auto& [l, c] : uses[j]) rate = std::min(rate, SharedRate(cap[l], load[l] + c * (1.0 - duty[j]), o));
      double t = bytes[j] / rate;
      double c = std::max({ph[j].compute, ph[j].ready + t, jobs[j].iteration_s});
      double d = 0.5 * duty[j] + 0.5 * std::min(1.0, t / c);
      change = std::max(change, std::abs(d - duty[j]));
      for (const auto& [l, k] : uses[j]) load[l] += (d - duty[j]) * k;
      duty[j] = d;
      cycle[j] = c;
    }
    if (change < 1e-4) break;
  }
  if (duty_out != nullptr) *duty_out = duty;
  return cycle;
}

std::vector<double> NetworkModel::Periodic(std::span<const CommJob> jobs, std::vector<double>* duty) const {
  const int n = static_cast<int>(jobs.size());
  const CommSchedule schedule = options_.schedule;
  struct J {
    std::vector<std::vector<int>> paths;  // local link ids
    std::vector<int> links;               // their union, ascending
    double bytes = 0;
    Phases ph{};
    double offset = 0, ready_at = 0, compute_end = 0;
    bool comm = false, queued = false;
    int left = 0, done = 0;
    double first_end = 0, last_end = 0;
    std::vector<int> flows;
  };
  FlowNetwork net;
  std::unordered_map<int, int> local;
  std::vector<std::vector<int>> scratch;
  std::vector<J> js(n);
  for (int j = 0; j < n; ++j) {
    J& x = js[j];
    x.ph = SplitIteration(jobs[j]);
    x.bytes = HopBytes(jobs[j]);
    for (const auto& path : PathsOf(jobs[j], scratch)) {
      std::vector<int> lp;
      for (int l : path) {
        auto it = local.find(l);
        if (it == local.end())
          it = local.emplace(l, *net.AddLink(fabric_.network.link_name(l), fabric_.network.capacity(l))).first;
        lp.push_back(it->second);
        x.links.push_back(it->second);
      }
      x.paths.push_back(std::move(lp));
    }
    std::sort(x.links.begin(), x.links.end());
    x.links.erase(std::unique(x.links.begin(), x.links.end()), x.links.end());
    x.offset = Phase(jobs[j].id) * jobs[j].iteration_s;
    x.ready_at = x.offset + x.ph.ready;
    x.compute_end = x.offset + x.ph.compute;
  }
  net.set_contention_overhead(options_.contention_overhead);
  // Which jobs share a link.
  std::vector<std::vector<char>> shares(n, std::vector<char>(n, 0));
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      std::vector<int> both;
      std::set_intersection(js[a].links.begin(), js[a].links.end(), js[b].links.begin(), js[b].links.end(),
                            std::back_inserter(both));
      shares[a][b] = shares[b][a] = !both.empty();
    }
  std::vector<int> owner;              // flow -> job
  std::vector<int> ids;                // a start's flows
  std::vector<int> queue;              // waiting transfers, FIFO

  auto start = [&](int j) {
    J& x = js[j];
    x.comm = true;
    x.queued = false;
    x.left = 0;
    x.flows.clear();
    // Ring hops join two different nodes, so no path is empty; jobs
    // without traffic never start one (the event loop finishes them).
    if (x.bytes > 0 && !x.paths.empty()) {
      (void)net.AddFlows(x.paths, x.bytes, &ids);  // paths of the fabric's links, bytes > 0
      for (int f : ids) {
        if (f >= static_cast<int>(owner.size())) owner.resize(f + 1, -1);
        owner[f] = j;
        x.flows.push_back(f);
        x.left++;
      }
    }
  };
  auto finish = [&](int j, double now) {
    J& x = js[j];
    x.comm = false;
    double end = std::max(now, x.compute_end);
    if (x.done == 0) x.first_end = end;
    x.last_end = end;
    x.done++;
    x.ready_at = end + x.ph.ready;
    x.compute_end = end + x.ph.compute;
  };
  // Other jobs communicating now on a link of j.
  auto active_sharers = [&](int j) {
    std::vector<int> out;
    for (int k = 0; k < n; ++k)
      if (k != j && js[k].comm && shares[j][k]) out.push_back(k);
    return out;
  };
  auto queued_ahead = [&](int j) {
    for (int q : queue) {
      if (q == j) return false;
      if (shares[j][q]) return true;
    }
    return false;
  };
  auto on_ready = [&](int j) {
    if (schedule == CommSchedule::kConcurrent) {
      start(j);
      return;
    }
    std::vector<int> busy = active_sharers(j);
    bool ahead = queued_ahead(j);
    bool go = busy.empty() && !ahead;
    if (!go && schedule == CommSchedule::kAdaDual && busy.size() == 1 && !ahead && active_sharers(busy[0]).empty()) {
      // Two-way contention: AdaDUAL on the tightest link they share.
      const J& b = js[busy[0]];
      double remaining = 0;
      for (int f : b.flows) remaining = std::max(remaining, net.Remaining(f));
      double cap = kInf;
      for (int l : js[j].links)
        if (std::binary_search(b.links.begin(), b.links.end(), l)) cap = std::min(cap, net.capacity(l));
      go = AdaDual(remaining, js[j].bytes, cap, options_.contention_overhead).concurrent;
    }
    if (go) {
      start(j);
    } else if (!js[j].queued) {
      js[j].queued = true;
      queue.push_back(j);
    }
  };
  auto drain_queue = [&]() {
    std::vector<int> still;
    for (int q : queue) {
      bool blocked = !active_sharers(q).empty();
      for (int s : still) blocked = blocked || shares[q][s];
      if (blocked) {
        still.push_back(q);
      } else {
        start(q);
      }
    }
    queue.swap(still);
  };

  const int target = options_.measured_iterations + 1;
  const int64_t max_events = 200 + 80 * static_cast<int64_t>(n);
  int64_t events = 0;
  while (events++ < max_events) {
    bool all = true;
    for (const J& x : js) all = all && x.done >= target;
    if (all) break;
    double next_ready = kInf;
    for (const J& x : js)
      if (!x.comm && !x.queued) next_ready = std::min(next_ready, x.ready_at);
    double t = std::min(next_ready, net.NextCompletion());
    if (t == kInf) break;
    const std::vector<int>& fin = net.Advance(t);
    const double now = net.now();
    for (int f : fin) {
      int j = owner[f];
      if (--js[j].left == 0) finish(j, now);
    }
    for (int j = 0; j < n; ++j) {
      J& x = js[j];
      if (x.comm || x.queued || x.ready_at > now) continue;
      if (x.bytes <= 0 || x.paths.empty()) {
        finish(j, std::max(now, x.ready_at));
        continue;
      }
      on_ready(j);
    }
    if (!fin.empty() && !queue.empty()) drain_queue();
  }
  const double now = net.now();
  std::vector<double> out(n);
  for (int j = 0; j < n; ++j) {
    const J& x = js[j];
    double t;
    if (x.done >= 2) {
      t = (x.last_end - x.first_end) / (x.done - 1);
    } else if (x.done == 1) {
      t = x.last_end - x.offset;
    } else {
      t = now - x.offset;  // not one iteration in the whole window: at least that long
    }
    out[j] = std::max(jobs[j].iteration_s, t);
  }
  if (duty != nullptr) {
    duty->resize(n);
    for (int j = 0; j < n; ++j) {
      // Its traffic's time per iteration there: alone, plus what contention added.
      double w = std::min(jobs[j].network_s, jobs[j].iteration_s) + (out[j] - jobs[j].iteration_s);
      (*duty)[j] = out[j] > 0 ? std::clamp(w / out[j], 0.0, 1.0) : 0.0;
    }
  }
  return out;
}

NetworkLoad::NetworkLoad(const NetworkModel& model)
    : model_(model), load_(model.fabric().network.num_links(), 0.0) {}

void NetworkLoad::Add(const Allocation& alloc, double duty) {
  if (alloc.nodes() < 2 || !(duty > 0)) return;
  duty = std::min(1.0, duty);
  for (const auto& path : model_.RingPaths(alloc))
    for (int l : path) load_[l] += duty;
}

double NetworkLoad::ExpectedShare(int type, int nodes) const {
  const Fabric& f = model_.fabric();
  const Cluster& c = model_.cluster();
  int per_rack = c.spec().nodes_per_rack;
  if (f.rack_up.empty() || per_rack <= 0 || nodes <= per_rack) return 1.0;
  // It spans at least this many racks, one flow out of and one into each.
  int spans = (nodes + per_rack - 1) / per_rack;
  double nic = c.types()[type].topology.network_gbps * 1e9 / 8;
  const double o = model_.options().contention_overhead;
  std::vector<double> shares;
  for (size_t r = 0; r < f.rack_up.size(); ++r) {
    double s = 1.0;
    for (int l : {f.rack_up[r], f.rack_down[r]})
      s = std::min(s, SharedRate(f.network.capacity(l), load_[l] + 1.0, o) / nic);
    shares.push_back(s);
  }
  std::sort(shares.begin(), shares.end(), std::greater<double>());
  return shares[std::min<int>(spans, static_cast<int>(shares.size())) - 1];
}

}  // namespace tessel
