// The simulator backend's outputs: the timeline of the cluster's state, the
// end-of-run invariant (done jobs completed, every unfinished job with its
// reason) and the records and summary of a run.
#include <algorithm>
#include <cstdio>
#include <string>

#include "sim/sim_backend_impl.h"

namespace tessel {

using namespace sim_detail;  // NOLINT: the backend's own internal types

void SimBackend::Impl::Record() {
  timeline_dirty = false;
  TimelinePoint p;
  p.time = now;
  for (int idx : rows_stale) {
    if (running_pos[idx] < 0) continue;
    const JobState& j = jobs[idx];
    TimelineRow& row = running_rows[running_pos[idx]];
    row.gpus = j.view.alloc.gpus();
    row.progressing = j.view.phase == JobPhase::kRunning;
    if (row.progressing) {
      row.samples_per_s = j.samples_per_iter / j.iteration_time_s;
      row.tokens_per_s = j.tokens_per_iter / j.iteration_time_s;
    }
  }
  rows_stale.clear();
  // Summed in `running`'s order, as the rows are kept.
  for (const TimelineRow& row : running_rows) {
    p.allocated_gpus += row.gpus;
    if (row.progressing) {
      ++p.running_jobs;
      p.progressing_gpus += row.gpus;
      p.samples_per_s += row.samples_per_s;
      p.tokens_per_s += row.tokens_per_s;
    } else {
      ++p.starting_jobs;
    }
  }
  p.pending_jobs = static_cast<int>(active.size()) - p.running_jobs - p.starting_jobs + profiling_jobs;
  p.down_gpus = down_gpus + off_gpus;
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

// Progress and service up to the end of the run, then the end-of-run
// invariant: a job whose work is done is completed (a running one at the
// end of the run, by WorkDone); one still unfinished says why. A done job
// left unfinished is an internal error, not a result.
Result<SimResult> SimBackend::Impl::Finish(SimTime at, int64_t decisions, int64_t timer_events) {
  now = at;
  SimTime end = EndTime(now);
  if (done_jobs < static_cast<int>(jobs.size())) {
    bool stalled = Quiescent();
    SimTime saved = now;
    now = end;
    TouchRunningAndCompleteDone(/*at_run_end=*/true);
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
std::string SimBackend::Impl::UnfinishedReason(const JobState& j, bool stalled) const {
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

SimResult SimBackend::Impl::Collect(SimTime end, int64_t decisions, int64_t timer_events) {
  SimResult r;
  r.timeline = std::move(timeline);
  r.jobs.reserve(jobs.size());
  for (const JobState& j : jobs) {
    const JobSpec& s = *j.view.spec;
    JobRecord rec = RecordOf(s);
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
  s.policy = policy_name;
  s.cluster = cluster.name();
  s.trace = workload.name;
  bool any_app = std::any_of(app.begin(), app.end(), [](const auto& a) { return a != nullptr; });
  s.truth = any_app ? "apps+" + std::string(truth.name()) : std::string(truth.name());
  s.seed = config.seed;
  s.decisions = decisions;
  s.events = Processed() + timer_events;
  s.truth_fallbacks = truth_fallbacks + player.projections();
  s.oom_placements = oom_placements;
  if (config.autoscale.enabled()) {
    AccruePower(end);
    s.node_hours = powered_node_s / 3600;
    s.autoscale_changes = power_changes;
  }
  Summarize(r.jobs, r.timeline, cluster.total_gpus(), end, &s);
  return r;
}

}  // namespace tessel
