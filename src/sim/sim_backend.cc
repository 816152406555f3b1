// The simulator backend (sim/sim_backend.h): the events of one instant,
// arrivals and admission, progress and completion, and the public interface
// over them. Decisions live in sim_decisions.cc, node failures, repairs and
// power changes in sim_nodes.cc, the timeline and records in sim_results.cc.
#include "sim/sim_backend.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/catalog.h"
#include "policy/placement.h"
#include "sim/sim_backend_impl.h"

namespace tessel {

using namespace sim_detail;  // NOLINT: the backend's own internal types

// Brings a job's progress and attained service up to `now`.
void SimBackend::Impl::Touch(JobState& j) {
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

// The end of the round `t` falls in (t itself on a boundary) when jobs end
// at round boundaries (SimConfig::complete_at_rounds), else `t`.
SimTime SimBackend::Impl::EndOfRound(SimTime t) const {
  if (!config.complete_at_rounds || config.round <= 0) return t;
  return (t + config.round - 1) / config.round * config.round;
}

void SimBackend::Impl::ScheduleCompletion(JobState& j) {
  if (WorkDone(j)) {
    // Done at this instant: completed by the next pass over this
    // instant's events, before any decision sees the job again.
    Push(EndOfRound(now), EventKind::kComplete, j.view.index, j.version);
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
  Push(EndOfRound(t), EventKind::kComplete, j.view.index, j.version);
}

// `continues`: the same run goes on at a new rate (an epoch boundary), so
// its checkpoint clock keeps counting.
void SimBackend::Impl::BeginProgress(JobState& j, bool continues) {
  RowChanged(j);
  j.view.phase = JobPhase::kRunning;
  j.segment_start = now;
  j.segment_start_iters = j.view.done_iterations;
  if (!continues) j.run.clear();
  j.run.push_back({now, j.view.done_iterations, j.iteration_time_s});
  if (AppJob* a = app[j.view.index].get()) player.ObservePending(*a);
  ScheduleCompletion(j);
}

// Progress at `t` (within the current run).
double SimBackend::Impl::ProgressAtTime(const JobState& j, SimTime t) {
  const JobState::Segment* seg = &j.run.front();
  for (const JobState::Segment& s : j.run)
    if (s.start <= t) seg = &s;
  return seg->iters + ToSeconds(t - seg->start) / seg->iteration_time_s;
}

void SimBackend::Impl::RemoveActive(int index) {
  const JobView* p = &jobs[index].view;
  auto it = std::lower_bound(active.begin(), active.end(), p);
  if (it != active.end() && *it == p) active.erase(it);
}

void SimBackend::Impl::AddRunning(int index) {
  running_pos[index] = static_cast<int>(running.size());
  running.push_back(index);
  running_rows.emplace_back();
  rows_stale.push_back(index);
}

// The last one takes its place.
void SimBackend::Impl::RemoveRunning(int index) {
  int pos = running_pos[index];
  if (pos < 0) return;
  int last = running.back();
  running[pos] = last;
  running_rows[pos] = running_rows.back();
  running_pos[last] = pos;
  running.pop_back();
  running_rows.pop_back();
  running_pos[index] = -1;
}

void SimBackend::Impl::Release(JobState& j) {
  RowChanged(j);
  if (j.view.alloc.nodes() > 1) MarkContention(j.view.index);
  for (const Placement& p : j.view.alloc.parts) {
    if (up[p.node]) free[p.node] += p.gpus;
  }
  j.last_nodes = std::max(1, j.view.alloc.nodes());
  j.view.alloc = Allocation{};
  j.interfered = false;
  RemoveRunning(j.view.index);
}

// Sets an app job's truth rate on `alloc` at its current epoch.
void SimBackend::Impl::SetAppRate(JobState& j, AppJob& a, const Allocation& alloc) {
  RowChanged(j);
  AppRate r = player.SetRate(a, alloc);
  j.base_iteration_s = r.iteration_time_s;
  j.iteration_time_s = r.iteration_time_s * Slowdown(j);
  j.samples_per_iter = r.samples_per_iter;
  j.tokens_per_iter = 0;
}

void SimBackend::Impl::HandleEpoch(JobState& j) {
  AppJob& a = *app[j.view.index];
  Touch(j);
  double boundary = a.profile->ProgressAt(a.epoch + 1);
  j.view.done_iterations = std::max(j.view.done_iterations, std::min(boundary, j.view.total_iterations));
  a.epoch = std::max(a.epoch + 1, a.profile->EpochAt(j.view.done_iterations));
  SetAppRate(j, a, j.view.alloc);
  ++j.version;
  if (log != nullptr) Log("epoch job=" + j.view.spec->id + " epoch=" + std::to_string(a.epoch) + " batch=" +
      std::to_string(a.choice.batch) + " atomic=" + std::to_string(a.choice.atomic_bsz) +
      " accum=" + std::to_string(a.choice.accum_steps) + " iter_s=" + FormatIter(j.iteration_time_s));
  BeginProgress(j, /*continues=*/true);
}

// Turns the trace's work into iterations and decides whether the job can
// ever run here. Empty string = admitted.
std::string SimBackend::Impl::Admit(JobState& j) {
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

void SimBackend::Impl::Arrive(int index) {
  timeline_dirty = true;
  JobState& j = jobs[index];
  j.progress_since = now;
  j.view.alloc_since = now;
  std::string why = Admit(j);
  if (!why.empty()) {
    j.status = Status_::kRejected;
    j.reason = why;
    ++done_jobs;
    if (log != nullptr) Log("reject job=" + j.view.spec->id + " reason=" + why);
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
    // Appended piece by piece ("|" + ... trips GCC 12's -Wrestrict false
    // positive, PR 105329).
    if (!traits.profiling.all_types) (key += '|') += spec.requested_gpu_type;
    if (traits.profiling.kind == ProfilingKind::kDirect) {
      (key += '|') += std::to_string(spec.global_batch);
      (key += '|') += std::to_string(std::max(spec.max_gpus, spec.requested_gpus));
    } else {
      // Stage counts profiled depend on the most GPUs the job may hold.
      (key += '|') += std::to_string(traits.profiling.Configurations(spec, cluster));
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
    if (log != nullptr) Log("arrive job=" + j.view.spec->id + " profiling_s=" + FormatIter(profiling));
    Push(now + Seconds(profiling), EventKind::kProfiled, index, j.version);
    return;
  }
  j.status = Status_::kActive;
  active.push_back(&j.view);  // arrivals come in index order
  if (log != nullptr) Log("arrive job=" + j.view.spec->id);
  found.decide = found.activated = true;
}

void SimBackend::Impl::Profiled(JobState& j) {
  timeline_dirty = true;
  Touch(j);
  --profiling_jobs;
  j.status = Status_::kActive;
  const JobView* p = &j.view;
  active.insert(std::lower_bound(active.begin(), active.end(), p), p);
  if (log != nullptr) Log("profiled job=" + j.view.spec->id);
  found.decide = found.activated = true;
}

void SimBackend::Impl::Complete(JobState& j) {
  Touch(j);
  j.view.done_iterations = j.view.total_iterations;
  j.status = Status_::kFinished;
  j.finish = now;
  Release(j);
  j.view.phase = JobPhase::kPending;
  RemoveActive(j.view.index);
  ++done_jobs;
  ++j.version;
  if (log != nullptr) Log("finish job=" + j.view.spec->id);
  found.decide = true;
}

void SimBackend::Impl::TouchRunningAndCompleteDone(bool at_run_end) {
  // Jobs that end at round boundaries hold their GPUs until then, unless
  // the run itself ends first (its horizon mid-round).
  const bool can_end = at_run_end || EndOfRound(now) == now;
  std::vector<int> done;
  for (int idx : running) {
    JobState& j = jobs[idx];
    Touch(j);
    if (can_end && j.view.phase == JobPhase::kRunning && WorkDone(j)) done.push_back(idx);
  }
  std::sort(done.begin(), done.end());
  for (int idx : done) Complete(jobs[idx]);
}

Status SimBackend::Impl::Init() {
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
  running_pos.assign(n, -1);
  free.resize(cluster.nodes().size());
  up.assign(cluster.nodes().size(), 1);
  for (const ClusterNode& node : cluster.nodes()) free[node.id] = node.gpus;
  powered.assign(cluster.nodes().size(), 1);
  powered_count = static_cast<int>(cluster.nodes().size());
  if (config.autoscale.enabled()) {
    if (config.failures.node_mtbf_s > 0 || !config.failures.at.empty())
      return InvalidArgument("--autoscale and node failures together are not modelled: drop one of them");
    // The cluster starts with its first min_nodes nodes (the artifact's).
    for (const ClusterNode& node : cluster.nodes()) {
      if (node.id < config.autoscale.min_nodes) continue;
      powered[node.id] = 0;
      up[node.id] = 0;
      free[node.id] = 0;
      off_gpus += node.gpus;
    }
    powered_count = config.autoscale.min_nodes;
  }
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

SimTime SimBackend::Impl::NextEvent() const {
  SimTime t_arrival = next_arrival < workload.jobs.size() ? workload.jobs[next_arrival].submit : kNever;
  SimTime t_event = events.empty() ? kNever : events.top().time;
  return std::min(t_arrival, t_event);
}

// Every event due at `now`: state changes first, then arrivals, then any
// event those pushed for the same instant.
BackendEvents SimBackend::Impl::Advance(SimTime t) {
  now = t;
  last_advance = t;
  found = BackendEvents{};
  processed += events.Purge(now, [this](const Event& e) {
    return e.kind != EventKind::kNodeFail && e.kind != EventKind::kNodeRepair && jobs[e.target].version != e.version;
  });
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

void SimBackend::Impl::Settle() {
  // Both follow the jobs spread over nodes (MarkContention).
  if (contention_dirty) {
    UpdateInterference();
    UpdateContention();
  }
  if (timeline_dirty) Record();
}

// Nothing will change without the policy: no arrivals left, nothing
// running or being profiled, jobs waiting and no capacity down (failures
// and repairs do not add capacity beyond what is up).
bool SimBackend::Impl::Quiescent() const {
  if (next_arrival < workload.jobs.size() || !running.empty() || profiling_jobs > 0) return false;
  if (active.empty()) return false;
  return down_gpus == 0 && booting == 0;
}

SimTime SimBackend::Impl::EndTime(SimTime at) const {
  if (config.horizon != kNever && done_jobs < static_cast<int>(jobs.size())) return std::max(at, config.horizon);
  return at;
}

void SimBackend::Impl::HandleJobOrNodeEvent(const Event& e) {
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
        if (j.view.alloc.nodes() > 1) MarkContention(e.target);
        if (log != nullptr) Log("ready job=" + j.view.spec->id);
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
    case EventKind::kNodeBoot:
      Boot(e.target);
      break;
    default:
      break;
  }
}


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
int SimBackend::PoweredNodes() const { return impl_->powered_count; }
Status SimBackend::PowerNodes(int target, SimTime now) {
  impl_->now = now;
  return impl_->PowerNodes(target);
}
bool SimBackend::Finished() const { return impl_->done_jobs >= static_cast<int>(impl_->jobs.size()); }
bool SimBackend::Quiescent() const { return impl_->Quiescent(); }
std::string SimBackend::Outstanding() const {
  return std::to_string(impl_->jobs.size() - impl_->done_jobs) + " jobs unfinished";
}
int64_t SimBackend::events() const { return impl_->Processed(); }
SimTime SimBackend::EndTime(SimTime now) const { return impl_->EndTime(now); }
int SimBackend::done_jobs() const { return impl_->done_jobs; }
int SimBackend::total_jobs() const { return static_cast<int>(impl_->jobs.size()); }
Result<SimResult> SimBackend::Collect(SimTime now, int64_t decisions, int64_t timer_events) {
  return impl_->Finish(now, decisions, timer_events);
}

}  // namespace tessel
