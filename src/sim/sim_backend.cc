#include "sim/sim_backend.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <queue>
#include <unordered_map>

#include "goodput/goodput.h"
#include "model/catalog.h"
#include "policy/network_model.h"
#include "policy/placement.h"
#include "sim/app_player.h"

namespace tessel {
namespace {

// Event kinds in the order simultaneous events are handled: state changes
// that free resources first, then arrivals (kArrival only separates them:
// arrivals come from the workload, not the queue). Rounds and wake-ups are
// the loop's timers and come after all of these.
enum class EventKind : int {
  kComplete = 0,
  kReady = 1,      // a reconfiguration finished: the job starts progressing
  kEpoch = 2,      // an app job crossed an epoch boundary: its rate changes
  kNodeRepair = 3,
  kNodeFail = 4,
  kProfiled = 5,   // a new job's profiling finished: the policy may place it
  kArrival = 6,
};

struct Event {
  SimTime time;
  EventKind kind;
  int target;        // job index, node id, or -1
  uint64_t version;  // job events: stale when the job's version moved on
  uint64_t seq;      // insertion order breaks remaining ties

  bool operator>(const Event& o) const {
    if (time != o.time) return time > o.time;
    if (kind != o.kind) return kind > o.kind;
    if (target != o.target) return target > o.target;
    return seq > o.seq;
  }
};

enum class Status_ { kNotArrived, kProfiling, kActive, kFinished, kRejected };

struct JobState {
  JobView view;
  Status_ status = Status_::kNotArrived;
  double iteration_time_s = 0;  // truth, of the current allocation
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

bool WorkDone(const JobState& j) {
  double left = j.view.remaining_iterations();
  return left <= 0 || (j.iteration_time_s > 0 && left * j.iteration_time_s < kDoneWithinSeconds);
}

std::string Secs(SimTime t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%13.6f", ToSeconds(t));
  return buf;
}

// splitmix64: a fixed, portable stream of pseudo-random numbers.
uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
double Uniform01(uint64_t& state) {
  return (static_cast<double>(SplitMix(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

}  // namespace

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

  std::vector<JobState> jobs;
  AppPlayer player;
  std::vector<std::unique_ptr<AppJob>> app;  // per job; null: not played from a profile
  std::vector<const JobView*> active;  // sorted by index (= address order)
  std::vector<int> running;            // jobs holding GPUs (unordered)
  std::vector<int> free;
  std::vector<uint8_t> up;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  uint64_t seq = 0;
  SimTime now = 0;
  size_t next_arrival = 0;
  int done_jobs = 0;  // finished + rejected
  int reference_type = 0;
  uint64_t rng = 0;
  std::vector<TimelinePoint> timeline;
  int64_t processed = 0;
  int64_t truth_fallbacks = 0;
  int64_t oom_placements = 0;  // allocations neither truth nor belief could run
  int down_gpus = 0;
  int profiling_jobs = 0;  // arrived, still being profiled
  bool contention_dirty = false;  // allocations spread over nodes changed
  NetworkModel network;
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
                                  .contention_overhead = cfg.network.contention_overhead}) {}

  void Push(SimTime t, EventKind k, int target, uint64_t version = 0) {
    events.push({t, k, target, version, seq++});
  }

  void Log(const std::string& line) {
    if (log) *log << Secs(now) << ' ' << line << '\n';
  }

  // --- progress accounting -------------------------------------------------

  // Brings a job's progress and attained service up to `now`.
  void Touch(JobState& j) {
    SimTime dt = now - j.progress_since;
    if (dt <= 0) return;
    JobView& v = j.view;
    if (v.phase != JobPhase::kPending) {
      double gpu_s = ToSeconds(dt) * v.alloc.gpus();
      v.attained_gpu_s += gpu_s;
      v.attained_gpu_s_by_type[v.alloc.type] += gpu_s;
    }
    if (v.phase == JobPhase::kRunning) {
      v.done_iterations = std::min(v.total_iterations,
                                   j.segment_start_iters + ToSeconds(now - j.segment_start) / j.iteration_time_s);
    } else if (v.phase == JobPhase::kStarting) {
      j.reconfig_s += ToSeconds(dt);
    } else {
      j.waiting_s += ToSeconds(dt);
    }
    j.progress_since = now;
  }

  void ScheduleCompletion(JobState& j) {
    if (WorkDone(j)) {
      // Done at this instant: completed by the next pass over this
      // instant's events, before any decision sees the job again.
      Push(now, EventKind::kComplete, j.view.index, j.version);
      return;
    }
    double left = j.view.remaining_iterations();
    if (AppJob* a = app[j.view.index].get()) {
      // The rate holds until the next epoch; the agent re-chooses there.
      double boundary = a->profile->ProgressAt(a->epoch + 1);
      if (boundary < j.view.total_iterations) {
        double to_boundary = std::max(0.0, boundary - j.view.done_iterations);
        SimTime t = now + std::max<SimTime>(0, SecondsCeil(to_boundary * j.iteration_time_s));
        Push(t, EventKind::kEpoch, j.view.index, j.version);
        return;
      }
    }
    SimTime t = now + std::max<SimTime>(0, SecondsCeil(left * j.iteration_time_s));
    Push(t, EventKind::kComplete, j.view.index, j.version);
  }

  // `continues`: the same run goes on at a new rate (an epoch boundary), so
  // its checkpoint clock keeps counting.
  void BeginProgress(JobState& j, bool continues = false) {
    j.view.phase = JobPhase::kRunning;
    j.segment_start = now;
    j.segment_start_iters = j.view.done_iterations;
    if (!continues) j.run.clear();
    j.run.push_back({now, j.view.done_iterations, j.iteration_time_s});
    if (AppJob* a = app[j.view.index].get()) player.ObservePending(*a);
    ScheduleCompletion(j);
  }

  // Progress at `t` (within the current run).
  static double ProgressAtTime(const JobState& j, SimTime t) {
    const JobState::Segment* seg = &j.run.front();
    for (const JobState::Segment& s : j.run)
      if (s.start <= t) seg = &s;
    return seg->iters + ToSeconds(t - seg->start) / seg->iteration_time_s;
  }

  void RemoveActive(int index) {
    const JobView* p = &jobs[index].view;
    auto it = std::lower_bound(active.begin(), active.end(), p);
    if (it != active.end() && *it == p) active.erase(it);
  }

  void RemoveRunning(int index) {
    auto it = std::find(running.begin(), running.end(), index);
    if (it != running.end()) {
      *it = running.back();
      running.pop_back();
    }
  }

  void Release(JobState& j) {
    if (j.view.alloc.nodes() > 1) contention_dirty = true;
    for (const Placement& p : j.view.alloc.parts) {
      if (up[p.node]) free[p.node] += p.gpus;
    }
    j.last_nodes = std::max(1, j.view.alloc.nodes());
    j.view.alloc = Allocation{};
    RemoveRunning(j.view.index);
  }

  // --- jobs played from application profiles ------------------------------

  // Sets an app job's truth rate on `alloc` at its current epoch.
  void SetAppRate(JobState& j, AppJob& a, const Allocation& alloc) {
    AppRate r = player.SetRate(a, alloc);
    j.iteration_time_s = r.iteration_time_s;
    j.samples_per_iter = r.samples_per_iter;
    j.tokens_per_iter = 0;
  }

  void HandleEpoch(JobState& j) {
    AppJob& a = *app[j.view.index];
    Touch(j);
    double boundary = a.profile->ProgressAt(a.epoch + 1);
    j.view.done_iterations = std::max(j.view.done_iterations, std::min(boundary, j.view.total_iterations));
    a.epoch = std::max(a.epoch + 1, a.profile->EpochAt(j.view.done_iterations));
    SetAppRate(j, a, j.view.alloc);
    ++j.version;
    Log("epoch job=" + j.view.spec->id + " epoch=" + std::to_string(a.epoch) + " batch=" +
        std::to_string(a.choice.batch) + " atomic=" + std::to_string(a.choice.atomic_bsz) +
        " accum=" + std::to_string(a.choice.accum_steps) + " iter_s=" + FormatIter(j.iteration_time_s));
    BeginProgress(j, /*continues=*/true);
  }

  // --- arrivals and admission ---------------------------------------------

  // Turns the trace's work into iterations and decides whether the job can
  // ever run here. Empty string = admitted.
  std::string Admit(JobState& j) {
    const JobSpec& s = *j.view.spec;
    if (s.requested_gpus < 1) return "requests no GPUs";
    std::vector<int> types;
    if (!s.requested_gpu_type.empty()) {
      int t = cluster.FindType(s.requested_gpu_type);
      if (t < 0) {
        std::string have;
        for (size_t i = 0; i < cluster.types().size(); ++i) have += (i ? ", " : "") + cluster.TypeName(i);
        return "requests GPU type " + s.requested_gpu_type + "; the cluster has " + have;
      }
      types.push_back(t);
    }
    // Any type may serve as the reference; the requested one comes first.
    std::vector<int> order = types;
    if (order.empty()) order.push_back(reference_type);
    for (int t = 0; t < static_cast<int>(cluster.types().size()); ++t) {
      if (std::find(order.begin(), order.end(), t) == order.end()) order.push_back(t);
    }
    std::string why = "no GPU type";
    if (AppJob* a = app[j.view.index].get()) {
      for (int t : order) {
        const GpuTypeInfo& info = cluster.types()[t];
        if (s.requested_gpus > info.total_gpus) {
          why = "needs " + std::to_string(s.requested_gpus) + " GPUs; the cluster has " +
                std::to_string(info.total_gpus) + " " + info.gpu->name;
          if (!types.empty()) break;
          continue;
        }
        j.view.total_iterations = a->profile->TargetProgress();
        j.isolated_s = player.Isolated(*a, t, s.requested_gpus);
        if (traits.profiles_types) player.ProfileAllTypes(*a);
        return "";
      }
      return why;
    }
    for (int t : order) {
      int gpus = s.requested_gpus;
      const GpuTypeInfo& info = cluster.types()[t];
      if (gpus > info.total_gpus) {
        why = "needs " + std::to_string(gpus) + " GPUs; the cluster has " + std::to_string(info.total_gpus) + " " +
              info.gpu->name;
        if (!types.empty()) break;
        continue;
      }
      const JobRate& r = truth.Rate(s, t, gpus, MinNodes(cluster, t, gpus));
      if (!r.fits) {
        why = "does not fit on " + std::to_string(gpus) + " " + info.gpu->name + ": " + r.reason;
        if (!types.empty()) break;
        continue;
      }
      if (s.iterations) {
        j.view.total_iterations = *s.iterations;
      } else {
        j.view.total_iterations = std::max(1.0, s.duration_s.value_or(0) / r.iteration_time_s);
      }
      j.isolated_s = j.view.total_iterations * r.iteration_time_s;
      return "";
    }
    return why;
  }

  void Arrive(int index) {
    JobState& j = jobs[index];
    j.progress_since = now;
    j.view.alloc_since = now;
    std::string why = Admit(j);
    if (!why.empty()) {
      j.status = Status_::kRejected;
      j.reason = why;
      ++done_jobs;
      Log("reject job=" + j.view.spec->id + " reason=" + why);
      return;
    }
    // Profiles are kept per model and what was profiled: a job whose shape
    // was profiled (or is being profiled) waits only for that. A
    // disaggregated profile (one stage on one GPU, swept over micro-batch
    // sizes) serves every global batch of the model, since the batch only
    // changes how many micro-batches and replicas run; a direct profile
    // times whole iterations, so it is per global batch and size.
    double profiling = 0;
    if (traits.profiling.kind != ProfilingKind::kNone) {
      const JobSpec& spec = *j.view.spec;
      std::string key = spec.model;
      if (!traits.profiling.all_types) key += "|" + spec.requested_gpu_type;
      if (traits.profiling.kind == ProfilingKind::kDirect) {
        key += "|" + std::to_string(spec.global_batch) + "|" +
               std::to_string(std::max(spec.max_gpus, spec.requested_gpus));
      } else {
        // Stage counts profiled depend on the most GPUs the job may hold.
        key += "|" + std::to_string(traits.profiling.Configurations(spec, cluster));
      }
      auto it = profiled_at.find(key);
      if (it == profiled_at.end()) {
        profiling = traits.profiling.Seconds(*j.view.spec, cluster);
        profiled_at.emplace(key, now + Seconds(profiling));
      } else {
        profiling = std::max(0.0, ToSeconds(it->second - now));
      }
    }
    if (profiling > 0) {
      // Profiled before the policy sees it; it waits meanwhile.
      j.status = Status_::kProfiling;
      ++profiling_jobs;
      Log("arrive job=" + j.view.spec->id + " profiling_s=" + FormatIter(profiling));
      Push(now + Seconds(profiling), EventKind::kProfiled, index, j.version);
      return;
    }
    j.status = Status_::kActive;
    active.push_back(&j.view);  // arrivals come in index order
    Log("arrive job=" + j.view.spec->id);
    found.decide = found.activated = true;
  }

  void Profiled(JobState& j) {
    Touch(j);
    --profiling_jobs;
    j.status = Status_::kActive;
    const JobView* p = &j.view;
    active.insert(std::lower_bound(active.begin(), active.end(), p), p);
    Log("profiled job=" + j.view.spec->id);
    found.decide = found.activated = true;
  }

  // --- completion ------------------------------------------------------------

  void Complete(JobState& j) {
    Touch(j);
    j.view.done_iterations = j.view.total_iterations;
    j.status = Status_::kFinished;
    j.finish = now;
    Release(j);
    j.view.phase = JobPhase::kPending;
    RemoveActive(j.view.index);
    ++done_jobs;
    ++j.version;
    Log("finish job=" + j.view.spec->id);
    found.decide = true;
  }

  // --- failures ---------------------------------------------------------------

  void ScheduleFailure(int node) {
    if (config.failures.node_mtbf_s <= 0) return;
    double dt = -std::log(Uniform01(rng)) * config.failures.node_mtbf_s;
    Push(now + Seconds(dt), EventKind::kNodeFail, node);
  }

  void Fail(int node) {
    if (!up[node]) return;
    Log("fail node=" + std::to_string(node));
    // Jobs on the node fall back to their last checkpoint.
    std::vector<int> hit;
    for (int idx : running) {
      for (const Placement& p : jobs[idx].view.alloc.parts) {
        if (p.node == node) {
          hit.push_back(idx);
          break;
        }
      }
    }
    std::sort(hit.begin(), hit.end());
    for (int idx : hit) {
      JobState& j = jobs[idx];
      Touch(j);
      if (j.view.phase == JobPhase::kRunning && WorkDone(j)) {
        Complete(j);  // it finished at the instant its node failed
        continue;
      }
      if (j.view.phase == JobPhase::kRunning) {
        double interval = config.failures.checkpoint_interval_s;
        SimTime run_start = j.run.empty() ? j.segment_start : j.run.front().start;
        double ran = ToSeconds(now - run_start);
        double kept = interval > 0 ? std::floor(ran / interval) * interval : 0;
        double ckpt = j.run.empty() ? j.segment_start_iters + kept / j.iteration_time_s
                                    : ProgressAtTime(j, run_start + Seconds(kept));
        j.lost_iterations += j.view.done_iterations - ckpt;
        j.view.done_iterations = std::min(j.view.done_iterations, ckpt);
        if (AppJob* a = app[idx].get()) a->epoch = a->profile->EpochAt(j.view.done_iterations);
      }
      Release(j);
      j.view.phase = JobPhase::kPending;
      j.view.alloc_since = now;
      j.needs_save = false;  // nothing to save: it restarts from the checkpoint
      ++j.failures;
      ++j.version;
      Log("lose job=" + j.view.spec->id + " node=" + std::to_string(node));
    }
    up[node] = 0;
    free[node] = 0;
    down_gpus += cluster.nodes()[node].gpus;
    Push(now + Seconds(config.failures.repair_s), EventKind::kNodeRepair, node);
    found.decide = true;
  }

  void Repair(int node) {
    up[node] = 1;
    free[node] = cluster.nodes()[node].gpus;
    down_gpus -= cluster.nodes()[node].gpus;
    Log("repair node=" + std::to_string(node));
    ScheduleFailure(node);
    found.decide = true;
  }

  // --- decisions ---------------------------------------------------------------

  double CheckpointSeconds(const JobState& j, int nodes) const {
    if (!config.reconfig.checkpoints) return 0;
    return j.checkpoint_bytes / (config.reconfig.storage_gbs_per_node * 1e9 * std::max(1, nodes));
  }

  // Seconds from getting `alloc` to making progress on it: a job that ran
  // before saves its checkpoint (if its last allocation has not yet) and
  // loads it; adaptive policies also search a plan.
  double StartDelay(const JobState& j, const Allocation& alloc) const {
    const ReconfigCost& rc = config.reconfig;
    double search = 0;
    if (traits.searches_plans || rc.baselines_pay_full_search) {
      search = traits.full_plan_search || !traits.searches_plans ? std::min(rc.full_search_cap_s, rc.full_search_s_per_gpu * alloc.gpus())
                                       : std::min(rc.search_cap_s, rc.search_s_per_gpu * alloc.gpus());
    }
    if (!j.view.started()) return search + rc.start_overhead_s;
    double save = j.needs_save ? CheckpointSeconds(j, j.last_nodes) : 0;
    return save + CheckpointSeconds(j, alloc.nodes()) + rc.restart_overhead_s + search;
  }

  // The decision was checked against the snapshot (sched/loop.h
  // CheckDecision); only the truth can still refuse it.
  Status Apply(const Decision& d) {
    for (const auto& [idx, why] : d.reject) {
      JobState& j = jobs[idx];
      Touch(j);
      Release(j);
      j.view.phase = JobPhase::kPending;
      j.status = Status_::kRejected;
      j.reason = why;
      ++j.version;
      RemoveActive(idx);
      ++done_jobs;
      Log("reject job=" + j.view.spec->id + " reason=" + why);
    }
    // Releases first, so a decision may hand GPUs from one job to another.
    std::vector<std::pair<int, const Allocation*>> grants;
    for (const auto& [idx, alloc] : d.assign) {
      JobState& j = jobs[idx];
      if (j.view.alloc == alloc) continue;
      Touch(j);
      bool was_holding = !j.view.alloc.empty();
      if (was_holding) {
        j.needs_save = true;
        Release(j);  // remembers the node count the save will use
        if (alloc.empty()) {
          ++j.view.preemptions;
          Log("suspend job=" + j.view.spec->id);
        }
      }
      j.view.phase = JobPhase::kPending;
      j.view.alloc_since = now;
      ++j.version;
      if (!alloc.empty()) grants.push_back({idx, &alloc});
    }
    std::unordered_map<int, const std::vector<PlanChoice>*> plan_sets;
    for (const auto& [idx, set] : d.plans) plan_sets[idx] = &set;
    for (const auto& [idx, alloc] : grants) {
      JobState& j = jobs[idx];
      const JobSpec& s = *j.view.spec;
      AppJob* a = app[idx].get();
      const JobRate* rate = nullptr;
      if (a == nullptr) {
        rate = &truth.Rate(s, alloc->type, alloc->gpus(), alloc->nodes());
        if (!rate->fits) {
          // The truth has no answer for this shape (a table without it, or
          // one that measured it out of memory): the belief's rate stands in.
          rate = &belief.Rate(s, alloc->type, alloc->gpus(), alloc->nodes());
          if (!rate->fits) {
            // Out of memory on these GPUs as placed (e.g. a job priced on
            // one node and spread over two, where the measured table says
            // that split does not fit): it does not start, and waits for
            // the next decision (the Arena artifact's out-of-memory event).
            ++oom_placements;
            Log("oom job=" + s.id + " on=" + alloc->ToString(cluster) + " reason=" + rate->reason);
            continue;
          }
          ++truth_fallbacks;
        }
      }
      for (const Placement& p : alloc->parts) free[p.node] -= p.gpus;
      j.alloc_epoch = ++next_alloc_epoch;
      j.ring.clear();
      j.duty = -1;
      if (alloc->nodes() > 1) {
        contention_dirty = true;
        j.ring = network.RingPaths(*alloc);
      }
      bool first = !j.view.started();
      double delay = StartDelay(j, *alloc);
      if (!first) ++j.view.restarts;
      j.view.alloc = *alloc;
      std::string how;
      if (a != nullptr) {
        SetAppRate(j, *a, *alloc);
        how = " batch=" + std::to_string(a->choice.batch) + " atomic=" + std::to_string(a->choice.atomic_bsz) +
              " accum=" + std::to_string(a->choice.accum_steps);
      } else {
        SetRate(j, *rate);
        j.network_s = j.network_exposed_s = 0;
        if (alloc->nodes() > 1) NetworkOf(j, *rate, *alloc);
        how = " plan=" + rate->plan.ToString();
      }
      // The policy's plan set for the executor: a launcher runs its first
      // plan, the rest are its memory fallbacks. The rate stays the truth's.
      if (auto it = plan_sets.find(idx); it != plan_sets.end() && !it->second->empty()) {
        how += " plan_set=" + std::to_string(it->second->size()) + " first=" + it->second->front().plan.ToString();
      }
      j.needs_save = false;
      running.push_back(idx);
      if (first) j.view.first_start = now;
      Log(std::string(first ? "start" : "restart") + " job=" + s.id + " on=" + alloc->ToString(cluster) + how +
          " iter_s=" + FormatIter(j.iteration_time_s) + " delay_s=" + FormatIter(delay));
      StartOrDelay(j, delay);
    }
    return Status::Ok();
  }

  // A job's truth rate from a ThroughputModel answer.
  static void SetRate(JobState& j, const JobRate& r) {
    j.iteration_time_s = j.alone_iteration_s = r.iteration_time_s;
    j.samples_per_iter = r.samples_per_s * r.iteration_time_s;
    j.tokens_per_iter = r.tokens_per_s * r.iteration_time_s;
  }

  void StartOrDelay(JobState& j, double delay) {
    if (delay > 0) {
      j.view.phase = JobPhase::kStarting;
      j.ready_at = now + Seconds(delay);
      Push(j.ready_at, EventKind::kReady, j.view.index, j.version);
    } else {
      BeginProgress(j);
    }
  }

  static std::string FormatIter(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", s);
    return buf;
  }

  // A multi-node job's traffic for the network model. A truth without a
  // breakdown (measured tables) takes the belief's: the same fractions of
  // its own iteration.
  void NetworkOf(JobState& j, const JobRate& truth_rate, const Allocation& alloc) {
    const JobRate* r = &truth_rate;
    double scale = 1;
    if (r->network_s <= 0) {
      const JobRate& b = belief.Rate(*j.view.spec, alloc.type, alloc.gpus(), alloc.nodes());
      if (!b.fits || b.iteration_time_s <= 0) return;
      r = &b;
      scale = truth_rate.iteration_time_s / b.iteration_time_s;
    }
    j.network_s = std::min(r->network_s * scale, j.alone_iteration_s);
    j.network_exposed_s = std::min(r->network_exposed_s * scale, j.network_s);
  }

  // The flow-level network model (policy/network_model.h): after
  // allocations change, every group of running multi-node jobs that share
  // links and changed since it was last rated is re-rated together. Jobs
  // played from profiles keep their measured rates.
  void UpdateContention() {
    contention_dirty = false;
    if (!config.network.enabled) return;
    std::vector<int> idx;
    for (int i : running) {
      const JobState& j = jobs[i];
      if (app[i] == nullptr && j.view.phase == JobPhase::kRunning && j.view.alloc.nodes() > 1 && j.network_s > 0)
        idx.push_back(i);
    }
    std::sort(idx.begin(), idx.end());
    std::vector<CommJob> comm;
    comm.reserve(idx.size());
    for (int i : idx) {
      const JobState& j = jobs[i];
      comm.push_back(
          {static_cast<uint64_t>(i), &j.view.alloc, j.alone_iteration_s, j.network_s, j.network_exposed_s, &j.ring, j.duty});
    }
    std::vector<std::pair<int, uint64_t>> key;
    for (const std::vector<int>& members : network.Components(comm)) {
      key.clear();
      for (int m : members) key.push_back({idx[m], jobs[idx[m]].alloc_epoch});
      // Rated as this very group before: each member's key is the last
      // group it was rated in, and epochs change with every allocation.
      if (jobs[idx[members.front()]].rated_group == key) continue;
      for (int m : members) jobs[idx[m]].rated_group = key;
      std::vector<CommJob> group;
      for (int m : members) group.push_back(comm[m]);
      std::vector<double> duty;
      std::vector<double> times = network.IterationTimes(group, &duty);
      for (size_t k = 0; k < members.size(); ++k) {
        jobs[idx[members[k]]].duty = duty[k];
        Rerate(jobs[idx[members[k]]], times[k]);
      }
    }
  }

  void Rerate(JobState& j, double iteration_s) {
    // Changes under 1% are the model's own noise (its fixed point and
    // measured window), not worth an event.
    if (std::abs(iteration_s - j.iteration_time_s) <= 1e-2 * j.iteration_time_s) return;
    Touch(j);
    j.iteration_time_s = iteration_s;
    if (log != nullptr)
      Log("rate job=" + j.view.spec->id + " network_slowdown=" + FormatIter(iteration_s / j.alone_iteration_s) +
          " iter_s=" + FormatIter(j.iteration_time_s));
    ++j.version;
    BeginProgress(j, /*continues=*/true);
  }

  void Observe(Snapshot* snap) {
    // Running jobs' progress and service must be current in the snapshot,
    // and no policy sees a job whose work is done: it completes first (its
    // completion event may be up to a tick later), so a preemption or
    // resize at the instant a job finishes cannot leave it pending.
    std::vector<int> done;
    for (int idx : running) {
      JobState& j = jobs[idx];
      Touch(j);
      if (j.view.phase == JobPhase::kRunning && WorkDone(j)) done.push_back(idx);
    }
    std::sort(done.begin(), done.end());
    for (int idx : done) Complete(jobs[idx]);
    snap->now = now;
    snap->cluster = &cluster;
    snap->free_gpus = free;
    snap->node_up = up;
    snap->jobs = active;
    snap->belief = &belief;
    snap->placement = config.placement;
  }

  // --- timeline ----------------------------------------------------------------

  void Record() {
    TimelinePoint p;
    p.time = now;
    for (int idx : running) {
      const JobState& j = jobs[idx];
      int g = j.view.alloc.gpus();
      p.allocated_gpus += g;
      if (j.view.phase == JobPhase::kRunning) {
        ++p.running_jobs;
        p.progressing_gpus += g;
        p.samples_per_s += j.samples_per_iter / j.iteration_time_s;
        p.tokens_per_s += j.tokens_per_iter / j.iteration_time_s;
      } else {
        ++p.starting_jobs;
      }
    }
    p.pending_jobs = static_cast<int>(active.size()) - p.running_jobs - p.starting_jobs + profiling_jobs;
    p.down_gpus = down_gpus;
    if (!timeline.empty() && timeline.back().time == now) {
      timeline.back() = p;
      return;
    }
    if (!timeline.empty()) {
      const TimelinePoint& b = timeline.back();
      if (b.running_jobs == p.running_jobs && b.starting_jobs == p.starting_jobs &&
          b.pending_jobs == p.pending_jobs && b.allocated_gpus == p.allocated_gpus &&
          b.progressing_gpus == p.progressing_gpus && b.down_gpus == p.down_gpus &&
          b.samples_per_s == p.samples_per_s) {
        return;
      }
    }
    timeline.push_back(p);
  }

  // --- setup and the events of one instant ----------------------------------

  Status Init() {
    const int n = static_cast<int>(workload.jobs.size());
    jobs.resize(n);
    app.resize(n);
    for (int i = 0; i < n; ++i) {
      JobState& j = jobs[i];
      j.view.index = i;
      j.view.spec = &workload.jobs[i];
      j.view.attained_gpu_s_by_type.assign(cluster.types().size(), 0.0);
      const JobSpec& spec = workload.jobs[i];
      if (apps != nullptr) {
        app[i] = player.Make(spec, traits, *apps);
        if (app[i] != nullptr) j.view.agent = &app[i]->report;
      }
      auto model = FindModel(spec.model);
      if (model.ok()) {
        bool fp32 = (*model)->default_precision == Precision::kFp32;
        j.checkpoint_bytes = (*model)->Params() * (fp32 ? config.reconfig.checkpoint_bytes_per_param_fp32
                                                        : config.reconfig.checkpoint_bytes_per_param_mixed);
      }
    }
    free.resize(cluster.nodes().size());
    up.assign(cluster.nodes().size(), 1);
    for (const ClusterNode& node : cluster.nodes()) free[node.id] = node.gpus;
    reference_type = 0;
    if (!config.reference_gpu.empty()) {
      reference_type = cluster.FindType(config.reference_gpu);
      if (reference_type < 0) {
        return InvalidArgument("--reference-gpu " + config.reference_gpu + ": the cluster has no such GPU type");
      }
    } else {
      reference_type = cluster.LargestType();
    }
    rng = config.seed * 0x9e3779b97f4a7c15ULL + 0x1234567ULL;
    for (const ClusterNode& node : cluster.nodes()) ScheduleFailure(node.id);
    for (const auto& [t, node] : config.failures.at) {
      if (node < 0 || node >= static_cast<int>(cluster.nodes().size())) {
        return InvalidArgument("a failure at " + FormatDuration(t) + " names node " + std::to_string(node) +
                               "; the cluster has nodes 0.." + std::to_string(cluster.nodes().size() - 1));
      }
      Push(t, EventKind::kNodeFail, node);
    }
    Record();
    return Status::Ok();
  }

  SimTime NextEvent() const {
    SimTime t_arrival = next_arrival < workload.jobs.size() ? workload.jobs[next_arrival].submit : kNever;
    SimTime t_event = events.empty() ? kNever : events.top().time;
    return std::min(t_arrival, t_event);
  }

  // Every event due at `now`: state changes first, then arrivals, then any
  // event those pushed for the same instant.
  BackendEvents Advance(SimTime t) {
    now = t;
    found = BackendEvents{};
    const size_t n = workload.jobs.size();
    while (!events.empty() && events.top().time <= now && events.top().kind < EventKind::kArrival) {
      Event e = events.top();
      events.pop();
      ++processed;
      HandleJobOrNodeEvent(e);
    }
    while (next_arrival < n && workload.jobs[next_arrival].submit <= now) {
      ++processed;
      Arrive(static_cast<int>(next_arrival++));
    }
    while (!events.empty() && events.top().time <= now) {
      Event e = events.top();
      events.pop();
      ++processed;
      HandleJobOrNodeEvent(e);
    }
    return found;
  }

  void Settle() {
    if (contention_dirty) UpdateContention();
    Record();
  }

  // Nothing will change without the policy: no arrivals left, nothing
  // running or being profiled, jobs waiting and no capacity down (failures
  // and repairs do not add capacity beyond what is up).
  bool Quiescent() const {
    if (next_arrival < workload.jobs.size() || !running.empty() || profiling_jobs > 0) return false;
    if (active.empty()) return false;
    return down_gpus == 0;
  }

  SimTime EndTime(SimTime at) const {
    if (config.horizon != kNever && done_jobs < static_cast<int>(jobs.size())) return std::max(at, config.horizon);
    return at;
  }

  // Progress and service up to the end of the run, then the end-of-run
  // invariant: a job whose work is done is completed (a running one at the
  // end of the run, by WorkDone); one still unfinished says why. A done job
  // left unfinished is an internal error, not a result.
  Result<SimResult> Finish(SimTime at, int64_t decisions, int64_t timer_events) {
    now = at;
    SimTime end = EndTime(now);
    if (done_jobs < static_cast<int>(jobs.size())) {
      bool stalled = Quiescent();
      SimTime saved = now;
      now = end;
      std::vector<int> done;
      for (int idx : running) {
        Touch(jobs[idx]);
        if (jobs[idx].view.phase == JobPhase::kRunning && WorkDone(jobs[idx])) done.push_back(idx);
      }
      std::sort(done.begin(), done.end());
      for (int idx : done) Complete(jobs[idx]);
      for (JobState& j : jobs) {
        if ((j.status == Status_::kActive || j.status == Status_::kProfiling) && j.view.phase == JobPhase::kPending)
          Touch(j);
      }
      for (JobState& j : jobs) {
        if (j.status != Status_::kActive && j.status != Status_::kProfiling) continue;
        if (j.status == Status_::kActive && j.view.started() && WorkDone(j)) {
          return Internal("job " + j.view.spec->id + " did all its work (" + FormatIter(j.view.done_iterations) +
                          " of " + FormatIter(j.view.total_iterations) + " iterations) but was left " +
                          (j.view.phase == JobPhase::kPending ? "pending" : "holding GPUs") + " at " +
                          FormatDuration(now) + " under policy " + policy_name);
        }
        j.reason = UnfinishedReason(j, stalled);
      }
      now = saved;
    }
    return Collect(end, decisions, timer_events);
  }

  // Why a job is unfinished when the run ends: the run stopped at the
  // horizon, or nothing could change any more (`stalled`: nothing runs, no
  // arrival or repair is due, and the policy placed none of the waiting
  // jobs).
  std::string UnfinishedReason(const JobState& j, bool stalled) const {
    if (j.status == Status_::kProfiling) return "horizon reached while being profiled";
    const JobView& v = j.view;
    switch (v.phase) {
      case JobPhase::kRunning: return "horizon reached while running";
      case JobPhase::kStarting: return "horizon reached while restarting";
      default: break;
    }
    if (!stalled) return v.started() ? "horizon reached while waiting to restart" : "horizon reached before it was placed";
    int free_gpus = 0;
    for (int f : free) free_gpus += f;
    return std::string(v.started() ? "preempted and never placed again" : "never placed") + ": the policy left it waiting while nothing ran (" +
           std::to_string(free_gpus) + " GPUs free)";
  }

  void HandleJobOrNodeEvent(const Event& e) {
    switch (e.kind) {
      case EventKind::kComplete: {
        JobState& j = jobs[e.target];
        if (j.status == Status_::kActive && j.version == e.version && j.view.phase == JobPhase::kRunning) Complete(j);
        break;
      }
      case EventKind::kReady: {
        JobState& j = jobs[e.target];
        if (j.status == Status_::kActive && j.version == e.version && j.view.phase == JobPhase::kStarting) {
          Touch(j);
          BeginProgress(j);
          if (j.view.alloc.nodes() > 1) contention_dirty = true;
          Log("ready job=" + j.view.spec->id);
        }
        break;
      }
      case EventKind::kEpoch: {
        JobState& j = jobs[e.target];
        if (j.status == Status_::kActive && j.version == e.version && j.view.phase == JobPhase::kRunning) HandleEpoch(j);
        break;
      }
      case EventKind::kProfiled: {
        JobState& j = jobs[e.target];
        if (j.status == Status_::kProfiling && j.version == e.version) Profiled(j);
        break;
      }
      case EventKind::kNodeFail:
        if (done_jobs < static_cast<int>(jobs.size())) Fail(e.target);
        break;
      case EventKind::kNodeRepair:
        Repair(e.target);
        break;
      default:
        break;
    }
  }

  SimResult Collect(SimTime end, int64_t decisions, int64_t timer_events) {
    SimResult r;
    r.timeline = std::move(timeline);
    r.jobs.reserve(jobs.size());
    for (const JobState& j : jobs) {
      const JobSpec& s = *j.view.spec;
      JobRecord rec;
      rec.id = s.id;
      rec.user = s.user;
      rec.model = s.model;
      rec.requested_gpus = s.requested_gpus;
      rec.requested_gpu_type = s.requested_gpu_type;
      rec.submit = s.submit;
      rec.first_start = j.view.first_start;
      rec.finish = j.finish;
      rec.deadline = s.deadline;
      rec.total_iterations = j.view.total_iterations;
      rec.done_iterations = j.view.done_iterations;
      switch (j.status) {
        case Status_::kFinished: rec.outcome = JobOutcome::kFinished; break;
        case Status_::kRejected: rec.outcome = JobOutcome::kRejected; break;
        default:
          rec.outcome = j.view.phase == JobPhase::kPending ? JobOutcome::kPending : JobOutcome::kRunning;
          break;
      }
      rec.reason = j.reason;
      SimTime started = j.view.first_start == kNever ? std::max(end, s.submit) : j.view.first_start;
      rec.queueing_s = j.status == Status_::kRejected ? 0 : ToSeconds(started - s.submit);
      rec.waiting_s = j.waiting_s;
      rec.reconfig_s = j.reconfig_s;
      rec.restarts = j.view.restarts;
      rec.preemptions = j.view.preemptions;
      rec.failures = j.failures;
      rec.lost_iterations = j.lost_iterations;
      rec.gpu_s = j.view.attained_gpu_s;
      rec.gpu_s_by_type = j.view.attained_gpu_s_by_type;
      rec.isolated_s = j.isolated_s;
      r.jobs.push_back(std::move(rec));
    }
    Summary& s = r.summary;
    s.policy = policy_name;
    s.cluster = cluster.name();
    s.trace = workload.name;
    bool any_app = std::any_of(app.begin(), app.end(), [](const auto& a) { return a != nullptr; });
    s.truth = any_app ? "apps+" + std::string(truth.name()) : std::string(truth.name());
    s.seed = config.seed;
    s.decisions = decisions;
    s.events = processed + timer_events;
    s.truth_fallbacks = truth_fallbacks + player.projections();
    s.oom_placements = oom_placements;
    Summarize(r.jobs, r.timeline, cluster.total_gpus(), end, &s);
    return r;
  }
};

SimBackend::SimBackend(const Cluster& cluster, const Workload& workload, const Policy& policy,
                       ThroughputModel& belief, ThroughputModel& truth, const SimConfig& config,
                       const goodput::AppCatalog* apps, std::ostream* log)
    : impl_(std::make_unique<Impl>(cluster, workload, policy, belief, truth, config, apps, log)) {}

SimBackend::~SimBackend() = default;

Status SimBackend::Init() { return impl_->Init(); }
SimTime SimBackend::NextEvent() const { return impl_->NextEvent(); }
Result<BackendEvents> SimBackend::Advance(SimTime now) { return impl_->Advance(now); }
void SimBackend::Observe(SimTime now, Snapshot* snapshot) {
  impl_->now = now;
  impl_->Observe(snapshot);
}
Status SimBackend::Apply(const Decision& decision, SimTime now) {
  impl_->now = now;
  return impl_->Apply(decision);
}
void SimBackend::Settle(SimTime now) {
  impl_->now = now;
  impl_->Settle();
}
bool SimBackend::HasActiveJobs() const { return !impl_->active.empty(); }
bool SimBackend::Finished() const { return impl_->done_jobs >= static_cast<int>(impl_->jobs.size()); }
bool SimBackend::Quiescent() const { return impl_->Quiescent(); }
std::string SimBackend::Outstanding() const {
  return std::to_string(impl_->jobs.size() - impl_->done_jobs) + " jobs unfinished";
}
int64_t SimBackend::events() const { return impl_->processed; }
SimTime SimBackend::EndTime(SimTime now) const { return impl_->EndTime(now); }
int SimBackend::done_jobs() const { return impl_->done_jobs; }
int SimBackend::total_jobs() const { return static_cast<int>(impl_->jobs.size()); }
Result<SimResult> SimBackend::Collect(SimTime now, int64_t decisions, int64_t timer_events) {
  return impl_->Finish(now, decisions, timer_events);
}

}  // namespace tessel
