// How jobs spread over nodes slow each other on the network (issue 13,
// SYSTEM.md idea 3): the simulator's truth for multi-node communication and
// the belief the arena policy prices grids with. It replaces the coarse
// rack-uplink share tessel used before.
//
// A job spanning n >= 2 nodes repeats an iteration: compute, and its
// inter-node traffic as a ring over its nodes (each node sends to the next
// one; a ring all-reduce's steady traffic), each hop a flow over the links
// of the cluster's fabric (network/flow_network.h: node NICs, rack uplinks
// with their oversubscription). Its ThroughputModel rate says how long the
// iteration takes alone (I), how long its traffic occupies its NICs alone
// (W, JobRate::network_s) and how much of W is not hidden behind compute
// (E, network_exposed_s). So in one iteration the traffic becomes ready at
// I - W (it overlaps the end of compute by W - E) and compute ends at I - E;
// the iteration ends when both are done. Alone it ends at I exactly; when
// its transfers share links with other jobs' (max-min fair, with Wang et
// al.'s contention overhead) it ends later.
//
// Jobs that share no link with another multi-node job run at their rate.
// Each group of jobs connected by shared links (a component) is played as a
// periodic fluid model: their iterations are simulated transfer by transfer
// (exact between flow completions) until every job has finished enough
// iterations to measure its mean iteration time. How a transfer that finds
// its links busy starts is the policy's choice (CommSchedule): at once
// (max-min sharing), only when its links are free (serial, FIFO), or by
// AdaDUAL. Components larger than `max_simulated_jobs` use a mean-field
// estimate instead (each transfer expects the others on its links to be
// active in proportion to their duty cycles; a fixed point), which is what
// the periodic model averages to when many independent jobs share a link.
//
// Deterministic: start phases come from the jobs' ids, not from a clock.
// Not thread-safe (scratch space).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hardware/allocation.h"
#include "hardware/cluster.h"
#include "network/flow_network.h"

namespace tessel {

// How a multi-node job's transfer starts when another job's transfer is
// using one of its links (Wang et al. 2020): kConcurrent shares the links at
// once (max-min; their SRSF(2)), kSerial waits until they are free
// (SRSF(1)), kAdaDual decides per transfer. The policy's choice
// (PolicyTraits::comm_schedule).
enum class CommSchedule { kConcurrent, kSerial, kAdaDual };
const char* CommScheduleName(CommSchedule s);

// A running multi-node job as the network model sees it.
struct CommJob {
  uint64_t id = 0;         // stable, sets its start phase
  const Allocation* alloc = nullptr;
  double iteration_s = 0;  // alone
  double network_s = 0;    // its traffic's time on its NICs alone (W)
  double exposed_s = 0;    // of W, not hidden behind compute (E)
  // Its ring's paths (RingPaths(*alloc)) when the caller keeps them; null:
  // computed here.
  const std::vector<std::vector<int>>* paths = nullptr;
  // Its duty cycle last time (the fraction of its iteration its traffic was
  // on the wire), to start the mean field from; < 0: unknown.
  double duty_hint = -1;
};

struct NetworkOptions {
  CommSchedule schedule = CommSchedule::kConcurrent;
  // Wang et al.'s contention overhead eta/beta (FlowNetwork). Their
  // simulator's 10 GbE figures: 0.235 / 0.856.
  double contention_overhead = 0.235 / 0.856;
  int max_simulated_jobs = 6;
  // Iterations each job completes in the periodic model after the first.
  int measured_iterations = 4;
};

class NetworkModel {
 public:
  NetworkModel(const Cluster& cluster, NetworkOptions options);

  const NetworkOptions& options() const { return options_; }

  // Groups of `jobs` (indices) that share a link, each ascending, ordered by
  // their first member. A job alone on its links is a group of one. (A
  // simulation keeps them as jobs come and go: network/link_groups.h.)
  std::vector<std::vector<int>> Components(std::span<const CommJob> jobs) const;
  // The mean iteration time of each job of one component (or any set of
  // jobs considered together), in the same order.
  // `duty` (optional): each job's duty cycle there, for the next hint.
  std::vector<double> IterationTimes(std::span<const CommJob> jobs, std::vector<double>* duty = nullptr) const;
  // The same by the mean-field estimate alone (exposed for tests and for
  // beliefs that must be cheap).
  std::vector<double> MeanFieldIterationTimes(std::span<const CommJob> jobs,
                                              std::vector<double>* duty = nullptr) const;

  const Fabric& fabric() const { return fabric_; }
  const Cluster& cluster() const { return cluster_; }
  // The ring paths of an allocation (its nodes in rack, then id, order).
  std::vector<std::vector<int>> RingPaths(const Allocation& alloc) const;

 private:
  std::vector<double> Periodic(std::span<const CommJob> jobs, std::vector<double>* duty) const;
  // The job's ring paths: the caller's when it keeps them, else computed
  // into `scratch`.
  const std::vector<std::vector<int>>& PathsOf(const CommJob& j, std::vector<std::vector<int>>& scratch) const;
  // Bytes each hop of the job's ring carries per iteration: its traffic's
  // time alone at its slowest NIC's bandwidth (the fabric's node links).
  double HopBytes(const CommJob& j) const;

  const Cluster& cluster_;
  NetworkOptions options_;
  Fabric fabric_;
  mutable std::vector<int> local_of_link_;  // the mean field's scratch, -1 = none
  // Periodic's answers by everything they depend on (each job's phase,
  // times and bytes, its paths with links renumbered in order of first use,
  // and those links' capacities): a group seen before on other nodes of the
  // same shape is answered at once, bit for bit the same.
  struct KeyHash {
    size_t operator()(const std::vector<double>& k) const;
  };
  mutable std::unordered_map<std::vector<double>, std::pair<std::vector<double>, std::vector<double>>, KeyHash>
      periodic_memo_;
};

// The network as a policy's belief: the multi-node jobs running now, each
// loading the links of its ring by its duty cycle (the fraction of its
// iteration its traffic is on the wire). A job about to be placed over
// `nodes` nodes of a GPU type expects, on each link it would cross, the
// capacity left over from that load shared with it (mean field); its
// expected share of its NIC bandwidth is the smallest over those links.
class NetworkLoad {
 public:
  explicit NetworkLoad(const NetworkModel& model);
  // A running job on `alloc` whose traffic is on the wire `duty` of the time.
  void Add(const Allocation& alloc, double duty);
  // Expected fraction (0, 1] of its NIC bandwidth a job spanning `nodes`
  // nodes of `type` gets: 1 on one node or where a rack can hold it (a rack
  // switch is non-blocking and placements take free nodes); across racks,
  // the uplinks of the least loaded racks it must span.
  double ExpectedShare(int type, int nodes) const;

 private:
  const NetworkModel& model_;
  std::vector<double> load_;  // per link: sum of duty cycles of flows on it
};

}  // namespace tessel
