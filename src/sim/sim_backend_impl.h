// The simulator backend's internal state, shared by the files that
// implement it (sim_backend.cc: events, arrivals, progress, completion and
// failures; sim_decisions.cc: decisions, restarts and network re-rating;
// sim_results.cc: the timeline and the end-of-run records). Not a public
// interface: include sim/sim_backend.h instead.
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "network/link_groups.h"
#include "network/network_model.h"
#include "sim/app_player.h"
#include "sim/event_queue.h"
#include "sim/sim_backend.h"

namespace tessel {
namespace sim_detail {


enum class Status_ { kNotArrived, kProfiling, kActive, kFinished, kRejected };

struct JobState {
  JobView view;
  Status_ status = Status_::kNotArrived;
  double iteration_time_s = 0;  // truth, of the current allocation
  // Its rate before interference (SimConfig::interference), and whether it
  // suffers it now: a job spread over nodes sharing one with another.
  double base_iteration_s = 0;
  bool interfered = false;
  double samples_per_iter = 0;
  double tokens_per_iter = 0;
  SimTime progress_since = 0;   // done_iterations is exact at this time
  SimTime segment_start = 0;    // progress began at this rate
  double segment_start_iters = 0;
  // Rate segments since the job last started progressing on its current
  // allocation (one unless an app job crossed epochs): periodic checkpoints
  // count from the first.
  struct Segment {
    SimTime start;
    double iters;
    double iteration_time_s;
  };
  std::vector<Segment> run;
  // The truth's rate alone on the allocation (the network model slows it
  // from there): iteration time, and its inter-node traffic's time.
  double alone_iteration_s = 0;
  double network_s = 0, network_exposed_s = 0;
  uint64_t alloc_epoch = 0;     // counts allocations (network model's cache key)
  // The last group of multi-node jobs it was rated in: (job, epoch) of
  // each member. The group is rated again only when it differs.
  std::vector<std::pair<int, uint64_t>> rated_group;
  std::vector<std::vector<int>> ring;  // its ring's paths on a multi-node allocation
  double duty = -1;             // its traffic's duty cycle when last rated (< 0: not yet)
  SimTime ready_at = 0;         // kStarting ends
  uint64_t version = 0;
  SimTime finish = kNever;
  std::string reason;
  int last_nodes = 1;           // nodes of the last allocation (checkpoint save)
  bool needs_save = false;      // suspended without a checkpoint being loaded yet
  double waiting_s = 0;
  double reconfig_s = 0;
  int failures = 0;
  double lost_iterations = 0;
  double checkpoint_bytes = 0;
  double isolated_s = 0;
};

// When a job's work is done: the one rule every place that counts progress
// uses. The simulated clock ticks in microseconds, so a job whose remaining
// iterations would take less than one tick at its current rate cannot
// finish at any later instant: its work is done now, whatever else happens
// at this instant (a preemption, resize, re-plan, re-rating or node
// failure). The tolerance is that tick, far above the floating-point
// remainders of the progress sums. A job that never ran has no rate and is
// done only when nothing remains.
constexpr double kDoneWithinSeconds = 1e-6;

inline bool WorkDone(const JobState& j) {
  double left = j.view.remaining_iterations();
  return left <= 0 || (j.iteration_time_s > 0 && left * j.iteration_time_s < kDoneWithinSeconds);
}

inline std::string Secs(SimTime t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%13.6f", ToSeconds(t));
  return buf;
}

// splitmix64: a fixed, portable stream of pseudo-random numbers.
inline uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
inline double Uniform01(uint64_t& state) {
  return (static_cast<double>(SplitMix(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

inline std::string FormatIter(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", s);
  return buf;
}

}  // namespace sim_detail

struct SimBackend::Impl {
  const Cluster& cluster;
  const Workload& workload;
  const std::string policy_name;
  const PolicyTraits traits;
  ThroughputModel& belief;
  ThroughputModel& truth;
  const SimConfig& config;
  const goodput::AppCatalog* apps;
  std::ostream* log;

  std::vector<sim_detail::JobState> jobs;
  AppPlayer player;
  std::vector<std::unique_ptr<AppJob>> app;  // per job; null: not played from a profile
  std::vector<const JobView*> active;  // sorted by index (= address order)
  // The snapshot's jobs when some active ones are hidden from the policy
  // (Observe, SimConfig::complete_at_rounds).
  std::vector<const JobView*> visible;
  std::vector<int> running;            // jobs holding GPUs (unordered)
  // What the timeline reads of each job in `running` (same positions), kept
  // current from the jobs listed in rows_stale when Record runs; and each
  // job's position in `running` (-1: not there).
  struct TimelineRow {
    int gpus = 0;
    bool progressing = false;
    double samples_per_s = 0, tokens_per_s = 0;
  };
  std::vector<TimelineRow> running_rows;
  std::vector<int> running_pos;
  std::vector<int> rows_stale;
  std::vector<int> free;
  std::vector<uint8_t> up;
  sim_detail::EventQueue events;
  uint64_t seq = 0;
  SimTime now = 0;
  size_t next_arrival = 0;
  int done_jobs = 0;  // finished + rejected
  int reference_type = 0;
  uint64_t rng = 0;
  std::vector<TimelinePoint> timeline;
  int64_t processed = 0;  // events handled, purged ones when their time passed
  SimTime last_advance = -1;  // the clock of the last Advance
  // Events processed: those handled and the purged ones the clock passed.
  int64_t Processed() const { return processed + events.PurgedBy(last_advance); }
  int64_t truth_fallbacks = 0;
  int64_t oom_placements = 0;  // allocations neither truth nor belief could run
  int down_gpus = 0;  // on failed nodes
  // --autoscale (SimConfig::autoscale): which nodes are powered (up or
  // booting), the GPUs of nodes powered off (unavailable, shown as down in
  // the timeline), nodes booting, and the powered node-seconds so far.
  std::vector<uint8_t> powered;
  int powered_count = 0;
  int off_gpus = 0;
  int booting = 0;
  int64_t power_changes = 0;
  double powered_node_s = 0;
  SimTime powered_since = 0;
  void AccruePower(SimTime to) {
    powered_node_s += powered_count * ToSeconds(to - powered_since);
    powered_since = to;
  }
  Status PowerNodes(int target);
  void Boot(int node);
  int profiling_jobs = 0;  // arrived, still being profiled
  bool contention_dirty = false;  // allocations spread over nodes changed
  // Something the timeline reads changed since the last Record (a job's
  // allocation, phase or rate; the active, running or profiling jobs; the
  // GPUs down). Settle records only then: the point it would add otherwise
  // repeats the last one, which Record leaves out anyway. Set by every
  // function that changes those (below), cleared by Record.
  bool timeline_dirty = true;
  NetworkModel network;
  // The running multi-node jobs the network model rates (app jobs keep
  // their measured rates), grouped by shared links, and the jobs whose
  // membership may have changed since (MarkContention).
  LinkGroups link_groups;
  std::vector<int> contention_touched;
  // The groups of multi-node jobs the network model last rated, by their
  // members' (job, allocation) pairs: unchanged groups keep their rates.
  uint64_t next_alloc_epoch = 0;
  std::map<std::string, SimTime> profiled_at;  // profile key -> when it is ready
  BackendEvents found;  // of the current Advance

  Impl(const Cluster& c, const Workload& w, const Policy& p, ThroughputModel& b, ThroughputModel& t,
       const SimConfig& cfg, const goodput::AppCatalog* a, std::ostream* l)
      : cluster(c), workload(w), policy_name(p.name()), traits(p.traits()), belief(b), truth(t), config(cfg),
        apps(a), log(l), player(c, cfg.scaling_rule),
        network(c, NetworkOptions{.schedule = traits.comm_schedule,
                                  .contention_overhead = cfg.network.contention_overhead}),
        link_groups(network.fabric().network.num_links()) {}

  void Push(SimTime t, sim_detail::EventKind k, int target, uint64_t version = 0) {
    events.push({t, k, target, version, seq++});
  }

  // Job `index` started or stopped using links between nodes.
  void MarkContention(int index) {
    contention_dirty = true;
    contention_touched.push_back(index);
  }

  // The factor interference puts on a job's iteration time now.
  double Slowdown(const sim_detail::JobState& j) const {
    return j.interfered ? 1.0 / (1.0 - config.interference) : 1.0;
  }
  // Which jobs spread over nodes share a node with another: their rates
  // change when that does (SimConfig::interference).
  void UpdateInterference();

  void Log(const std::string& line) {
    if (log) *log << sim_detail::Secs(now) << ' ' << line << '\n';
  }

  // Brings a job's progress and attained service up to `now`.
  void Touch(sim_detail::JobState& j);

  void ScheduleCompletion(sim_detail::JobState& j);
  SimTime EndOfRound(SimTime t) const;

  // `continues`: the same run goes on at a new rate (an epoch boundary), so
  // its checkpoint clock keeps counting.
  void BeginProgress(sim_detail::JobState& j, bool continues = false);

  // Progress at `t` (within the current run).
  static double ProgressAtTime(const sim_detail::JobState& j, SimTime t);

  void RemoveActive(int index);

  void AddRunning(int index);
  void RemoveRunning(int index);
  // A job's allocation, phase or rate changed: the timeline reads it again.
  void RowChanged(const sim_detail::JobState& j) {
    timeline_dirty = true;
    rows_stale.push_back(j.view.index);
  }

  void Release(sim_detail::JobState& j);

  // Sets an app job's truth rate on `alloc` at its current epoch.
  void SetAppRate(sim_detail::JobState& j, AppJob& a, const Allocation& alloc);

  void HandleEpoch(sim_detail::JobState& j);

  // Turns the trace's work into iterations and decides whether the job can
  // ever run here. Empty string = admitted.
  std::string Admit(sim_detail::JobState& j);

  void Arrive(int index);

  void Profiled(sim_detail::JobState& j);

  void Complete(sim_detail::JobState& j);

  // Brings every job holding GPUs up to `now` and completes, in index
  // order, the running ones whose work is done (WorkDone); with
  // SimConfig::complete_at_rounds only at a round's end, or `at_run_end`.
  void TouchRunningAndCompleteDone(bool at_run_end = false);

  void ScheduleFailure(int node);

  void Fail(int node);

  void Repair(int node);

  double CheckpointSeconds(const sim_detail::JobState& j, int nodes) const;

  // Seconds from getting `alloc` to making progress on it: a job that ran
  // before saves its checkpoint (if its last allocation has not yet) and
  // loads it; adaptive policies also search a plan.
  double StartDelay(const sim_detail::JobState& j, const Allocation& alloc) const;

  // The decision was checked against the snapshot (sched/loop.h
  // CheckDecision); only the truth can still refuse it.
  Status Apply(const Decision& d);

  // A job's truth rate from a ThroughputModel answer.
  void SetRate(sim_detail::JobState& j, const JobRate& r);

  void StartOrDelay(sim_detail::JobState& j, double delay);

  // A multi-node job's traffic for the network model. A truth without a
  // breakdown (measured tables) takes the belief's: the same fractions of
  // its own iteration.
  void NetworkOf(sim_detail::JobState& j, const JobRate& truth_rate, const Allocation& alloc);

  // The flow-level network model (network/network_model.h): after
  // allocations change, every group of running multi-node jobs that share
  // links and changed since it was last rated is re-rated together. Jobs
  // played from profiles keep their measured rates.
  void UpdateContention();

  void Rerate(sim_detail::JobState& j, double iteration_s);

  void Observe(Snapshot* snap);

  void Record();

  Status Init();

  SimTime NextEvent() const;

  // Every event due at `now`: state changes first, then arrivals, then any
  // event those pushed for the same instant.
  BackendEvents Advance(SimTime t);

  void Settle();

  // Nothing will change without the policy: no arrivals left, nothing
  // running or being profiled, jobs waiting and no capacity down (failures
  // and repairs do not add capacity beyond what is up).
  bool Quiescent() const;

  SimTime EndTime(SimTime at) const;

  // Progress and service up to the end of the run, then the end-of-run
  // invariant: a job whose work is done is completed (a running one at the
  // end of the run, by WorkDone); one still unfinished says why. A done job
  // left unfinished is an internal error, not a result.
  Result<SimResult> Finish(SimTime at, int64_t decisions, int64_t timer_events);

  // Why a job is unfinished when the run ends: the run stopped at the
  // horizon, or nothing could change any more (`stalled`: nothing runs, no
  // arrival or repair is due, and the policy placed none of the waiting
  // jobs).
  std::string UnfinishedReason(const sim_detail::JobState& j, bool stalled) const;

  void HandleJobOrNodeEvent(const sim_detail::Event& e);

  SimResult Collect(SimTime end, int64_t decisions, int64_t timer_events);
};

}  // namespace tessel
