#include "sim/engine.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <queue>
#include <map>
#include <optional>
#include <random>
#include <tuple>
#include <unordered_map>

#include "goodput/goodput.h"
#include "model/catalog.h"
#include "policy/contention.h"
#include "policy/placement.h"

namespace tessel {
namespace {

// Event kinds in the order simultaneous events are handled: state changes
// that free resources first, then arrivals, then the triggers that only ask
// for a decision.
enum class EventKind : int {
  kComplete = 0,
  kReady = 1,      // a reconfiguration finished: the job starts progressing
  kEpoch = 2,      // an app job crossed an epoch boundary: its rate changes
  kNodeRepair = 3,
  kNodeFail = 4,
  kProfiled = 5,   // a new job's profiling finished: the policy may place it
  kArrival = 6,
  kRound = 7,
  kWake = 8,
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
  double network_share = 1.0;   // of its nodes' network bandwidth (shared rack uplinks)
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

// A job played from its application profile, and its agent.
struct AppJob {
  const goodput::AppProfile* profile = nullptr;
  AgentReport report;
  // Per cluster type: what the job has measured, keyed by (nodes, replicas,
  // atomic batch); the agent refits that type's model on each new entry.
  std::vector<std::map<std::tuple<int, int, int>, goodput::StepObservation>> seen;
  int epoch = 0;
  goodput::BatchChoice choice;  // of the current segment
  struct PendingObservation {
    int type, nodes, replicas, atomic;
    goodput::StepTime step;
  };
  std::optional<PendingObservation> pending;  // the step of the current segment, not yet measured
};

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

struct Simulator::Impl {
  const Cluster& cluster;
  const Workload& workload;
  Policy& policy;
  ThroughputModel& belief;
  ThroughputModel& truth;
  SimConfig config;
  PolicyTraits traits;
  std::ostream* log = nullptr;

  std::vector<JobState> jobs;
  const goodput::AppCatalog* apps = nullptr;
  std::vector<std::unique_ptr<AppJob>> app;  // per job; null: not played from a profile
  int64_t app_projections = 0;               // app steps on a GPU type the profile lacks
  std::vector<const JobView*> active;  // sorted by index (= address order)
  std::vector<int> running;            // jobs holding GPUs (unordered)
  std::vector<int> free;
  std::vector<uint8_t> up;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  uint64_t seq = 0;
  SimTime now = 0;
  SimTime next_round = kNever;
  SimTime next_wake = kNever;
  size_t next_arrival = 0;
  int done_jobs = 0;  // finished + rejected
  int reference_type = 0;
  uint64_t rng = 0;
  std::vector<TimelinePoint> timeline;
  int64_t decisions = 0, processed = 0;
  bool decision_needed = false;
  bool last_decision_at_round = true;

  Impl(const Cluster& c, const Workload& w, Policy& p, ThroughputModel& b, ThroughputModel& t, SimConfig cfg)
      : cluster(c), workload(w), policy(p), belief(b), truth(t), config(std::move(cfg)), traits(p.traits()) {}

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
    if (AppJob* a = app[j.view.index].get()) ObservePending(*a);
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

  // Replicas per node of an allocation, as the profiles name placements.
  static std::vector<int> PlacementOf(const Allocation& a) {
    std::vector<int> p;
    for (const Placement& part : a.parts) p.push_back(part.gpus);
    return p;
  }

  // The profile's step time on `type`. A GPU type the profile lacks borrows
  // the first profiled type's time, scaled by the two GPUs' dense 16-bit
  // peaks (counted as a truth fallback).
  // `count`: a step the job runs (counted in truth_fallbacks when projected).
  goodput::StepTime AppStep(const AppJob& a, int type, std::span<const int> placement, double atomic,
                            bool count = false) {
    const std::string& gpu = cluster.types()[type].gpu->name;
    if (auto st = a.profile->Throughput(gpu, placement, atomic); st.ok()) return *st;
    if (count) ++app_projections;
    std::vector<std::string> have = a.profile->gpu_types();
    const std::string& from = have.front();
    goodput::StepTime st = a.profile->Throughput(from, placement, atomic).value();
    auto src = FindGpu(from);
    double ratio = src.ok() ? (*src)->PeakTflops(Precision::kFp16) /
                                  std::max(1e-9, cluster.types()[type].gpu->PeakTflops(Precision::kFp16))
                            : 1.0;
    st.step_s *= ratio;
    st.sync_s *= ratio;
    return st;
  }

  // Records a measured step in the job's own history and refits that
  // type's model when it is new (Pollux's agent does this every step).
  void Observe(AppJob& a, int type, int nodes, int replicas, int atomic, const goodput::StepTime& st) {
    if (Record(a, type, nodes, replicas, atomic, st)) Refit(a, type);
  }

  // Adds a measured step to the job's history; false if already there.
  static bool Record(AppJob& a, int type, int nodes, int replicas, int atomic, const goodput::StepTime& st) {
    auto& seen = a.seen[type];
    auto key = std::make_tuple(nodes, replicas, atomic);
    if (seen.count(key)) return false;
    goodput::StepObservation o;
    o.nodes = nodes;
    o.replicas = replicas;
    o.atomic_bsz = atomic;
    o.step_time = st.step_s;
    o.accum_time = std::max(1e-9, st.step_s - st.sync_s);
    seen.emplace(key, o);
    a.report.max_replicas[type] = std::max(a.report.max_replicas[type], replicas);
    ++a.report.observations;
    return true;
  }

  // Refits the job's model of `type` to everything it measured there.
  static void Refit(AppJob& a, int type) {
    const auto& seen = a.seen[type];
    std::vector<goodput::StepObservation> obs;
    obs.reserve(seen.size());
    for (const auto& [k, v] : seen) obs.push_back(v);
    auto fit = goodput::FitThroughputParams(obs);
    if (fit.ok()) a.report.params[type] = fit->params;
  }

  void ObservePending(AppJob& a) {
    if (!a.pending) return;
    const AppJob::PendingObservation& o = *a.pending;
    Observe(a, o.type, o.nodes, o.replicas, o.atomic, o.step);
    a.pending.reset();
  }

  // The agent's batch on an allocation: fixed when it may not adapt (or has
  // no model yet: the Pollux artifact then runs max(init, min_local x
  // replicas)) or has not measured its gradient noise yet, else the
  // goodput-optimal split from its own model.
  goodput::BatchChoice ChooseBatch(const AppJob& a, int type, int nodes, int replicas) const {
    const AgentReport& r = a.report;
    const goodput::ThroughputParams* params = nullptr;
    if (r.params[type]) params = &*r.params[type];
    for (size_t t = 0; params == nullptr && t < r.params.size(); ++t)
      if (r.params[t]) params = &*r.params[t];
    goodput::GoodputFunction fn(params ? *params : goodput::ThroughputParams{}, r.grad, r.limits, r.rule);
    bool grad_known = r.grad.sqr > 0 || r.grad.var > 0;
    if (r.adaptive && params != nullptr && grad_known) {
      goodput::BatchChoice c = fn.Optimize(nodes, replicas, /*accumulation=*/true);
      if (c.valid) return c;
    }
    int batch = r.adaptive ? std::max(r.limits.init_batch, r.limits.min_atomic * replicas) : r.fixed_batch;
    goodput::BatchChoice c = fn.Fixed(nodes, replicas, batch);
    // Never more than the largest validated batch.
    int count = replicas * (c.accum_steps + 1);
    c.atomic_bsz = std::max(1, std::min(c.atomic_bsz, r.limits.max_batch / std::max(1, count)));
    c.batch = count * c.atomic_bsz;
    return c;
  }

  // Sets the job's truth rate on `alloc` at its current epoch: progress
  // (initial-batch steps) per second = gain / time per optimizer step.
  void SetAppRate(JobState& j, AppJob& a, const Allocation& alloc) {
    std::vector<int> placement = PlacementOf(alloc);
    int nodes = alloc.nodes(), replicas = alloc.gpus();
    a.choice = ChooseBatch(a, alloc.type, nodes, replicas);
    goodput::StepTime st = AppStep(a, alloc.type, placement, a.choice.atomic_bsz, /*count=*/true);
    // Measured once the job actually runs (BeginProgress), not when granted.
    a.pending = AppJob::PendingObservation{alloc.type, nodes, replicas, a.choice.atomic_bsz, st};
    double accum_time = std::max(0.0, st.step_s - st.sync_s);
    double step = st.step_s + accum_time * a.choice.accum_steps;
    goodput::GradStats g = a.profile->GradStatsAt(a.choice.batch, a.epoch);
    a.report.grad = g;
    double gain = goodput::Gain(g, a.report.limits.init_batch, a.choice.batch, a.report.rule);
    j.iteration_time_s = step / std::max(1e-12, gain);
    j.samples_per_iter = a.choice.batch / std::max(1e-12, gain);
    j.tokens_per_iter = 0;
  }

  // Seconds the job would take alone on its request (for finish-time
  // fairness): epoch by epoch at its trace batch on `type`.
  double AppIsolated(AppJob& a, int type, int gpus) {
    const GpuTypeInfo& info = cluster.types()[type];
    Allocation alloc;
    alloc.type = type;
    int left = gpus;
    for (int node = 0; left > 0; ++node) {
      int g = std::min(left, std::max(1, info.max_gpus_per_node));
      alloc.parts.push_back({node, g});
      left -= g;
    }
    goodput::GoodputFunction fn(goodput::ThroughputParams{}, {}, a.report.limits, a.report.rule);
    goodput::BatchChoice c = fn.Fixed(alloc.nodes(), gpus, a.report.fixed_batch);
    goodput::StepTime st = AppStep(a, type, PlacementOf(alloc), c.atomic_bsz);
    double step = st.step_s + std::max(0.0, st.step_s - st.sync_s) * c.accum_steps;
    double total = 0;
    for (int e = 0; e < a.profile->max_epochs(); ++e) {
      double work = a.profile->ProgressAt(e + 1) - a.profile->ProgressAt(e);
      double gain = goodput::Gain(a.profile->GradStatsAt(c.batch, e), a.report.limits.init_batch, c.batch,
                                  a.report.rule);
      total += work * step / std::max(1e-12, gain);
    }
    return total;
  }

  // Sia's bootstrapping: one GPU of every type the cluster has, at the
  // smallest, initial and largest per-GPU batch.
  void ProfileAllTypes(AppJob& a) {
    // The profiling steps also measure the gradient noise at the initial batch.
    a.report.grad = a.profile->GradStatsAt(a.report.limits.init_batch, 0);
    for (int t = 0; t < static_cast<int>(cluster.types().size()); ++t) {
      std::vector<int> one = {1};
      bool added = false;
      for (int b : {a.report.limits.min_atomic, std::min(a.report.limits.init_batch, a.report.limits.max_atomic),
                    a.report.limits.max_atomic}) {
        added |= Record(a, t, 1, 1, b, AppStep(a, t, one, b));
      }
      if (added) Refit(a, t);  // once per type, on all its profiled steps
    }
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
        j.isolated_s = AppIsolated(*a, t, s.requested_gpus);
        if (traits.profiles_types) ProfileAllTypes(*a);
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
    decision_needed = true;
    if (traits.uses_rounds && next_round == kNever) ScheduleRound();
  }

  void Profiled(JobState& j) {
    Touch(j);
    --profiling_jobs;
    j.status = Status_::kActive;
    const JobView* p = &j.view;
    active.insert(std::lower_bound(active.begin(), active.end(), p), p);
    Log("profiled job=" + j.view.spec->id);
    decision_needed = true;
    if (traits.uses_rounds && next_round == kNever) ScheduleRound();
  }

  void ScheduleRound() {
    SimTime r = config.round;
    next_round = (now / r + 1) * r;
    Push(next_round, EventKind::kRound, -1);
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
    decision_needed = true;
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
    decision_needed = true;
  }

  void Repair(int node) {
    up[node] = 1;
    free[node] = cluster.nodes()[node].gpus;
    down_gpus -= cluster.nodes()[node].gpus;
    Log("repair node=" + std::to_string(node));
    ScheduleFailure(node);
    decision_needed = true;
  }

  // --- decisions ---------------------------------------------------------------

  double CheckpointSeconds(const JobState& j, int nodes) const {
    return j.checkpoint_bytes / (config.reconfig.storage_gbs_per_node * 1e9 * std::max(1, nodes));
  }

  // Seconds from getting `alloc` to making progress on it: a job that ran
  // before saves its checkpoint (if its last allocation has not yet) and
  // loads it; adaptive policies also search a plan.
  double StartDelay(const JobState& j, const Allocation& alloc) const {
    const ReconfigCost& rc = config.reconfig;
    double search = 0;
    if (traits.searches_plans) {
      search = traits.full_plan_search ? std::min(rc.full_search_cap_s, rc.full_search_s_per_gpu * alloc.gpus())
                                       : std::min(rc.search_cap_s, rc.search_s_per_gpu * alloc.gpus());
    }
    if (!j.view.started()) return search + rc.start_overhead_s;
    double save = j.needs_save ? CheckpointSeconds(j, j.last_nodes) : 0;
    return save + CheckpointSeconds(j, alloc.nodes()) + rc.restart_overhead_s + search;
  }

  Status Apply(const Decision& d) {
    for (const auto& [idx, why] : d.reject) {
      if (idx < 0 || idx >= static_cast<int>(jobs.size()) || jobs[idx].status != Status_::kActive) {
        return Internal("policy " + std::string(policy.name()) + " rejected job index " + std::to_string(idx) +
                        ", which is not active");
      }
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
      if (idx < 0 || idx >= static_cast<int>(jobs.size()) || jobs[idx].status != Status_::kActive) {
        return Internal("policy " + std::string(policy.name()) + " assigned job index " + std::to_string(idx) +
                        ", which is not active");
      }
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
      if (alloc->type < 0 || alloc->type >= static_cast<int>(cluster.types().size())) {
        return Internal("policy " + std::string(policy.name()) + " gave job " + j.view.spec->id +
                        " an allocation without a valid GPU type");
      }
      for (const Placement& p : alloc->parts) {
        if (p.node < 0 || p.node >= static_cast<int>(free.size()) || cluster.nodes()[p.node].type != alloc->type ||
            p.gpus <= 0 || free[p.node] < p.gpus) {
          return Internal("policy " + std::string(policy.name()) + " gave job " + j.view.spec->id + " " +
                          alloc->ToString(cluster) + ", but node " + std::to_string(p.node) + " has " +
                          (p.node >= 0 && p.node < static_cast<int>(free.size()) ? std::to_string(free[p.node])
                                                                                   : std::string("no")) +
                          " free GPUs of that type");
        }
        free[p.node] -= p.gpus;
      }
      j.network_share = 1.0;
      if (alloc->nodes() > 1) contention_dirty = true;
      const JobSpec& s = *j.view.spec;
      AppJob* a = app[idx].get();
      const JobRate* rate = nullptr;
      if (a == nullptr) {
        rate = &truth.Rate(s, alloc->type, alloc->gpus(), alloc->nodes());
        if (!rate->fits) {
          // The truth has no answer for this shape (a table without it, or
          // one that measured it out of memory): the belief's rate stands in.
          ++truth_fallbacks;
          rate = &belief.Rate(s, alloc->type, alloc->gpus(), alloc->nodes());
          if (!rate->fits) {
            return Internal("policy " + std::string(policy.name()) + " placed job " + s.id + " on " +
                            alloc->ToString(cluster) + ", where it does not fit: " + rate->reason);
          }
        }
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
    if (d.wake_at != kNever && d.wake_at > now && (next_wake == kNever || d.wake_at < next_wake || next_wake <= now)) {
      next_wake = d.wake_at;
      Push(d.wake_at, EventKind::kWake, -1);
    }
    return Status::Ok();
  }

  // A job's truth rate from a ThroughputModel answer.
  static void SetRate(JobState& j, const JobRate& r) {
    j.iteration_time_s = r.iteration_time_s;
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

  // Shared rack uplinks (policy/contention.h): after allocations change,
  // every running job spread over racks is re-rated at its network share.
  // Jobs played from profiles keep their measured rates.
  void UpdateContention() {
    contention_dirty = false;
    if (cluster.num_racks() <= 1) return;
    std::vector<int> idx(running.begin(), running.end());
    std::sort(idx.begin(), idx.end());
    std::vector<const Allocation*> allocs;
    allocs.reserve(idx.size());
    for (int i : idx) allocs.push_back(&jobs[i].view.alloc);
    std::vector<double> shares = NetworkShares(cluster, allocs);
    for (size_t k = 0; k < idx.size(); ++k) {
      JobState& j = jobs[idx[k]];
      if (app[idx[k]] != nullptr || std::abs(shares[k] - j.network_share) < 1e-9) continue;
      j.network_share = shares[k];
      Rerate(j);
    }
  }

  void Rerate(JobState& j) {
    const JobSpec& s = *j.view.spec;
    const Allocation& a = j.view.alloc;
    const JobRate* r = &truth.RateShared(s, a.type, a.gpus(), a.nodes(), j.network_share);
    if (!r->fits) r = &belief.RateShared(s, a.type, a.gpus(), a.nodes(), j.network_share);
    if (!r->fits) return;  // keeps its rate
    bool progressing = j.view.phase == JobPhase::kRunning;
    if (progressing) Touch(j);
    SetRate(j, *r);
    Log("rate job=" + s.id + " network_share=" + FormatIter(j.network_share) + " iter_s=" + FormatIter(j.iteration_time_s));
    if (progressing) {
      ++j.version;
      BeginProgress(j, /*continues=*/true);
    }
  }

  Status Decide(bool at_round) {
    // Running jobs' progress and service must be current in the snapshot.
    for (int idx : running) Touch(jobs[idx]);
    Snapshot snap;
    snap.now = now;
    snap.cluster = &cluster;
    snap.free_gpus = free;
    snap.node_up = up;
    snap.jobs = active;
    snap.belief = &belief;
    snap.round_length = config.round;
    snap.at_round = at_round;
    Decision d = policy.Decide(snap);
    ++decisions;
    return Apply(d);
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

  int64_t truth_fallbacks = 0;
  int down_gpus = 0;
  int profiling_jobs = 0;  // arrived, still being profiled
  bool contention_dirty = false;  // allocations spread over nodes changed
  std::map<std::string, SimTime> profiled_at;  // profile key -> when it is ready

  // --- the loop ------------------------------------------------------------------

  Result<SimResult> Run(const std::function<void(const SimProgress&)>& progress, int progress_every) {
    auto wall_start = std::chrono::steady_clock::now();
    const int n = static_cast<int>(workload.jobs.size());
    jobs.resize(n);
    app.resize(n);
    for (int i = 0; i < n; ++i) {
      JobState& j = jobs[i];
      j.view.index = i;
      j.view.spec = &workload.jobs[i];
      j.view.attained_gpu_s_by_type.assign(cluster.types().size(), 0.0);
      const JobSpec& spec = workload.jobs[i];
      if (apps != nullptr && !spec.app.empty()) {
        if (const goodput::AppProfile* profile = apps->Find(spec.app)) {
          auto a = std::make_unique<AppJob>();
          a->profile = profile;
          AgentReport& r = a->report;
          r.limits = profile->limits();
          r.rule = config.scaling_rule;
          r.adaptive = traits.adapts_batch && spec.adaptive_batch && !profile->fixed_batch();
          r.fixed_batch = std::clamp(spec.global_batch, r.limits.init_batch, r.limits.max_batch);
          // The artifact's pinned apps (ncf) keep its batch under goodput policies.
          if (traits.adapts_batch && profile->fixed_batch()) r.fixed_batch = *profile->fixed_batch();
          if (traits.adapts_batch && profile->max_replicas()) r.max_gpus = *profile->max_replicas();
          r.params.assign(cluster.types().size(), std::nullopt);
          r.max_replicas.assign(cluster.types().size(), 0);
          a->seen.resize(cluster.types().size());
          j.view.agent = &a->report;
          app[i] = std::move(a);
        }
      }
      auto model = FindModel(workload.jobs[i].model);
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
    Record();

    int64_t since_progress = 0;
    while (done_jobs < n) {
      // The next time anything happens: an arrival or a queued event.
      SimTime t_arrival = next_arrival < static_cast<size_t>(n) ? workload.jobs[next_arrival].submit : kNever;
      SimTime t_event = events.empty() ? kNever : events.top().time;
      SimTime t = std::min(t_arrival, t_event);
      if (t == kNever) {
        return Internal("simulation stalled at " + FormatDuration(now) + " with " + std::to_string(n - done_jobs) +
                        " jobs unfinished and nothing scheduled");
      }
      if (t > config.horizon) break;
      if (t < now) {
        return Internal("simulation event at " + FormatDuration(t) + " before the current time " + FormatDuration(now) +
                        " (a delay too large to represent?)");
      }
      now = t;
      bool round = false;
      // Apply every event at this time, in kind order.
      while (!events.empty() && events.top().time == now && events.top().kind < EventKind::kArrival) {
        Event e = events.top();
        events.pop();
        ++processed;
        HandleJobOrNodeEvent(e);
      }
      while (next_arrival < static_cast<size_t>(n) && workload.jobs[next_arrival].submit <= now) {
        ++processed;
        Arrive(static_cast<int>(next_arrival++));
      }
      while (!events.empty() && events.top().time == now) {
        Event e = events.top();
        events.pop();
        ++processed;
        if (e.kind == EventKind::kRound) {
          round = true;
          next_round = kNever;
        } else if (e.kind == EventKind::kWake) {
          if (e.time == next_wake) next_wake = kNever;
          decision_needed = true;
        } else {
          HandleJobOrNodeEvent(e);
        }
      }
      if (round) {
        if (!active.empty()) {
          decision_needed = true;
          ScheduleRound();
        }
      }
      if (decision_needed && !active.empty()) {
        decision_needed = false;
        last_decision_at_round = round;
        Status s = Decide(round);
        if (!s.ok()) return s;
      }
      decision_needed = false;
      if (contention_dirty) UpdateContention();
      Record();
      if (progress && ++since_progress >= progress_every) {
        since_progress = 0;
        progress({now, done_jobs, n});
      }
      if (Stalled()) break;
    }
    SimTime end = now;
    if (config.horizon != kNever && done_jobs < n) end = std::max(now, config.horizon);
    if (done_jobs < n) {
      SimTime saved = now;
      now = end;
      for (int idx : running) Touch(jobs[idx]);
      for (JobState& j : jobs) {
        if ((j.status == Status_::kActive || j.status == Status_::kProfiling) && j.view.phase == JobPhase::kPending)
          Touch(j);
      }
      now = saved;
    }
    if (progress) progress({end, done_jobs, n});
    SimResult result = Collect(end);
    result.summary.sim_wall_time_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return result;
  }

  // Nothing will ever change: no arrivals left, nothing running or
  // starting, no job-changing events queued, and the policy started nothing
  // on the last decision (only rounds/failures would follow forever).
  bool Stalled() const {
    if (next_arrival < workload.jobs.size() || !running.empty() || profiling_jobs > 0) return false;
    if (active.empty()) return false;
    // A round-based policy may wait for its next round to act.
    if (traits.uses_rounds && !last_decision_at_round) return false;
    // Waiting jobs and an idle cluster: only a round or wake-up could help,
    // and those already had their chance at this state; failures/repairs do
    // not add capacity beyond what is up.
    return down_gpus == 0;
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

  SimResult Collect(SimTime end) {
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
    s.policy = std::string(policy.name());
    s.cluster = cluster.name();
    s.trace = workload.name;
    bool any_app = std::any_of(app.begin(), app.end(), [](const auto& a) { return a != nullptr; });
    s.truth = any_app ? "apps+" + std::string(truth.name()) : std::string(truth.name());
    s.seed = config.seed;
    s.decisions = decisions;
    s.events = processed;
    s.truth_fallbacks = truth_fallbacks + app_projections;
    Summarize(r.jobs, r.timeline, cluster.total_gpus(), end, &s);
    return r;
  }
};

Simulator::Simulator(const Cluster& cluster, const Workload& workload, Policy& policy, ThroughputModel& belief,
                     ThroughputModel& truth, SimConfig config)
    : impl_(std::make_unique<Impl>(cluster, workload, policy, belief, truth, std::move(config))) {}

Simulator::~Simulator() = default;

Result<SimResult> Simulator::Run() {
  impl_->log = event_log_;
  impl_->apps = apps_;
  return impl_->Run(progress_, progress_every_);
}

}  // namespace tessel
