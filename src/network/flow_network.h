// Flow-level network model (issue 13, SYSTEM.md idea 3): links with a
// bandwidth, transfers (flows) over a path of links, and max-min fair
// sharing of every link among the flows crossing it — fluid, not packets.
// Between two flow arrivals or completions the rates are constant, so the
// model advances from one completion to the next exactly.
//
// Wang, Shi, Wang and Chu ("Communication Contention Aware Scheduling of
// Multiple Deep Learning Training Jobs", arXiv 2002.10105) model contending
// all-reduces on a 10 Gb/s Ethernet by the slowdown of k concurrent tasks;
// here contention is max-min sharing of each link, plus (for AdaDUAL's
// decision) the paper's observation that two concurrent transfers on one
// link also lose some of its bandwidth (`contention_overhead`).
#pragma once

#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "hardware/cluster.h"

namespace tessel {

// Max-min fair rates (progressive filling): every flow's rate is as large as
// possible without making a smaller one smaller. `paths[f]` lists the links
// flow f crosses; capacities in bytes/s. A flow crossing no link is not
// limited (rate +infinity).
std::vector<double> MaxMinRates(const std::vector<double>& capacities,
                                const std::vector<std::vector<int>>& paths);

// Max-min filling's scratch space (FlowNetwork keeps one between calls).
struct FillScratch {
  std::vector<double> residual;
  std::vector<int> unfrozen_on, touched, busy, first, count, on_link;
  std::vector<char> frozen;
};

class FlowNetwork {
 public:
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  // A link of `bytes_per_s` (> 0); returns its id.
  Result<int> AddLink(std::string name, double bytes_per_s);
  // A transfer of `bytes` (> 0) over `links` starting now; returns its id.
  Result<int> AddFlow(std::vector<int> links, double bytes);
  // Several transfers of `bytes` each starting now (rates re-shared once).
  Result<std::vector<int>> AddFlows(std::vector<std::vector<int>> paths, double bytes);
  // The same, their ids into `ids` (replaced): nothing allocated once the
  // network has seen these paths (a periodic job's ring, iteration after iteration).
  Status AddFlows(const std::vector<std::vector<int>>& paths, double bytes, std::vector<int>* ids);

  double now() const { return now_; }
  // Current max-min rate of an active flow (0 once finished).
  double Rate(int flow) const;
  double Remaining(int flow) const { return flows_[flow].remaining; }
  double Moved(int flow) const { return flows_[flow].bytes - flows_[flow].remaining; }
  bool Active(int flow) const { return flows_[flow].finish == kNever; }
  double FinishTime(int flow) const { return flows_[flow].finish; }
  int active_flows() const { return static_cast<int>(active_.size()); }
  int num_links() const { return static_cast<int>(link_names_.size()); }
  const std::string& link_name(int link) const { return link_names_[link]; }
  double capacity(int link) const { return capacities_[link]; }
  const std::vector<int>& links_of(int flow) const { return routes_[flows_[flow].route]; }

  // Wang et al.'s contention model: k transfers on one link each move a
  // byte in k*beta + (k-1)*eta seconds (beta: the link's seconds per byte
  // alone; their simulator's 10 GbE figures are beta = 0.856 ms/MB and
  // eta = 0.235 ms/MB), i.e. the link carries capacity /
  // (1 + overhead (k-1)/k) with overhead = eta/beta. 0 (the default):
  // pure max-min.
  void set_contention_overhead(double overhead);

  // Time of the next completion at the current rates (kNever if none).
  double NextCompletion() const;
  // Advances to min(next completion, `until`); returns the flows that
  // finished (in id order; valid until the next call).
  const std::vector<int>& Advance(double until = kNever);
  // Advances until every flow has finished.
  void RunToCompletion();

 private:
  struct Flow {
    int route;  // its links: routes_[route]
    double bytes, remaining;
    mutable double rate = 0;  // Reshare's, when the flows last changed
    double start, finish = kNever;
  };
  // Rates are shared again only when asked for after the flows changed:
  // several starts and completions at one instant cost one Reshare, with
  // the same rates.
  void Fresh() const;
  void Reshare() const;

  // The links: names and bytes/s, by link id.
  std::vector<std::string> link_names_;
  std::vector<double> capacities_;
  std::vector<Flow> flows_;
  // Each distinct link list (ascending, no repeats) once: flows refer to it.
  struct RouteHash {
    size_t operator()(const std::vector<int>& v) const;
  };
  std::vector<std::vector<int>> routes_;
  std::unordered_map<std::vector<int>, int, RouteHash> route_of_;
  std::vector<int> path_;  // AddFlows' scratch
  std::vector<int> active_;  // ids of unfinished flows, ascending
  double now_ = 0;
  double overhead_ = 0;
  mutable bool stale_ = false;  // flows changed since the last Reshare
  // NextCompletion's answer while nothing changed (-1: not known).
  mutable double next_ = -1;
  std::vector<int> done_, spare_;  // Advance's answer and scratch
  // Reshare's scratch: the rates, the active flows' routes.
  mutable std::vector<double> rates_;
  mutable std::vector<const std::vector<int>*> paths_;
  mutable FillScratch fill_;
};

// A cluster's fabric as links (issue 13's topology): each node's NICs as an
// up and a down link (its network_gbps, full duplex); with racks, each
// rack's uplink and downlink to the spine, carrying the rack's NIC
// bandwidth divided by the oversubscription. One switch (no racks): node
// links only.
struct Fabric {
  FlowNetwork network;  // the links, no flows
  std::vector<int> node_up, node_down;  // link id per node
  std::vector<int> rack_up, rack_down;  // link id per rack (empty: one switch)
  std::vector<int> node_rack;
  // The links a transfer from node a to node b crosses (none inside a node).
  std::vector<int> Path(int a, int b) const;
  // A ring over `nodes` (in the given order): each node sends to the next;
  // one path per hop (a ring all-reduce's steady traffic).
  std::vector<std::vector<int>> Ring(const std::vector<int>& nodes) const;
};
Fabric BuildFabric(const Cluster& cluster);

// AdaDUAL's decision for a communication task that becomes ready while
// another one is using the same link (Wang et al. 2020, Section 5): start it
// now, sharing the link, or queue it behind the running one. Both orders
// are computed in the fluid model; two transfers sharing the link move
// together at capacity / (1 + contention_overhead / 2) (FlowNetwork's rule
// for k = 2). Concurrent wins exactly when the running task's remaining
// bytes exceed 2 (1 + overhead) times the new task's (Wang et al.'s
// threshold 2 (beta + eta) / beta).
struct DualChoice {
  bool concurrent = false;
  // Completion times (from now) of the running and the new task.
  double serial_running = 0, serial_new = 0;
  double concurrent_running = 0, concurrent_new = 0;
};
// Chooses concurrent when it completes the two tasks sooner (the sum of
// their completion times, the paper's objective: average completion) than
// running them one after the other. Deviation: the paper states the rule
// with its measured contention model; here it is the fluid model above.
DualChoice AdaDual(double running_remaining_bytes, double new_bytes, double link_bytes_per_s,
                   double contention_overhead);

}  // namespace tessel
