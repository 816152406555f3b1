// After a restart: tracking again what the store holds, adopting what Slurm
// still runs, cancelling what no job owns.
#include "cluster/slurm_backend_impl.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "cluster/launch.h"
#include "cluster/metrics_file.h"
#include "core/strings.h"

namespace tessel {

namespace fs = std::filesystem;
using namespace slurm_internal;

// Loads a job from the store into tracking (pending, not yet active).
Result<Tracked*> SlurmBackend::Impl::Load(int64_t id) {
  auto row = store.Job(id);
  if (!row.ok()) return row.status();
  auto dspec = DaemonJobSpecFromJson(row->spec_json);
  if (!dspec.ok()) return dspec.status();
  auto spec = ToJobSpec(*dspec);
  if (!spec.ok()) return spec.status();
  auto t = std::make_unique<Tracked>();
  t->id = id;
  t->dspec = std::move(*dspec);
  t->spec = std::move(*spec);
  t->spec.id = std::to_string(id);
  t->spec.user = row->user;
  t->spec.submit = row->submitted_us;
  if (t->dspec.deadline_s > 0) t->spec.deadline = t->spec.submit + Seconds(static_cast<double>(t->dspec.deadline_s));
  t->state = row->state;
  if (row->slurm_job_id) {
    try {
      t->slurm_id = std::stoll(*row->slurm_job_id);
    } catch (...) {
      return FailedPrecondition("job " + std::to_string(id) + ": stored Slurm id '" + *row->slurm_job_id +
                                "' is not a number");
    }
  }
  t->launch = row->launch_count;
  t->failures = row->failures;
  t->view.index = next_index++;
  t->view.spec = &t->spec;
  t->view.total_iterations = static_cast<double>(t->dspec.iterations);
  t->view.attained_gpu_s_by_type.assign(cluster.types().size(), 0.0);
  t->view.first_start = row->started_us.value_or(kNever);
  t->view.alloc_since = row->allocated_us.value_or(row->submitted_us);
  t->view.restarts = row->restarts;
  t->metrics = std::make_unique<MetricsTail>(MetricsPath(id));
  if (auto corrections = store.Corrections(id); corrections.ok()) {
    for (const Correction& c : *corrections) Restore(t->spec.id, c);
  }
  Tracked* raw = t.get();
  jobs[id] = std::move(t);
  return raw;
}


// A stored correction back into the belief, at the level its scope names.
void SlurmBackend::Impl::Restore(const std::string& job_id, const Correction& c) {
  int type = cluster.FindType(c.gpu_type);
  if (type < 0) return;
  std::string_view scope = c.scope;
  if (scope.empty()) {
    belief.SetFactor(job_id, type, c.factor);
  } else if (scope.substr(0, kPlanScope.size()) == kPlanScope) {
    belief.SetPlanFactor(job_id, type, scope.substr(kPlanScope.size()), c.factor);
  } else if (auto stages = ParseInt(scope.substr(std::min(scope.size(), kStageScope.size())), "stages");
             scope.substr(0, kStageScope.size()) == kStageScope && stages.ok() && *stages >= 1) {
    belief.SetStageFactor(job_id, type, static_cast<int>(*stages), c.factor);
  } else {
    Warn(FailedPrecondition("job " + job_id + ": correction on " + c.gpu_type + " has an unknown scope '" +
                            c.scope + "'; ignored"));
  }
}

Status SlurmBackend::Recover(SimTime now) {
  Impl& m = *impl_;
  auto rows = m.store.Jobs(JobFilter{std::nullopt, /*include_terminal=*/false});
  if (!rows.ok()) return rows.status();
  auto sjobs = m.slurm.ListJobs(kNamePrefix);
  if (!sjobs.ok()) return sjobs.status();
  // Live Slurm jobs: launches per tessel id, every other run by its name.
  std::map<int64_t, std::vector<const SlurmJob*>> live;
  std::map<std::string, std::vector<const SlurmJob*>> live_runs;
  for (const SlurmJob& j : *sjobs) {
    int64_t id = IdFromName(j.name);
    if (id < 0 || IsFinished(j.state)) continue;
    if (IsLaunchName(j.name)) {
      live[id].push_back(&j);
    } else {
      live_runs[j.name].push_back(&j);
    }
  }
  // The runs recorded before their sbatch (profiling), per job.
  auto runs = m.store.SlurmRuns();
  if (!runs.ok()) return runs.status();
  std::map<int64_t, std::vector<SlurmRun>> runs_of;
  for (SlurmRun& r : *runs) runs_of[r.job_id].push_back(std::move(r));
  std::set<std::string> adopted;
  std::set<int64_t> kept;
  for (const StoredJob& row : *rows) {
    auto loaded = m.Load(row.id);
    if (!loaded.ok()) {
      m.Warn(m.store.Transition(row.id, JobState::kFailed, now, "cannot reload: " + loaded.status().message()));
      continue;
    }
    Tracked& t = **loaded;
    kept.insert(row.id);
    // Which Slurm job is this tessel job's: the stored one if Slurm runs it,
    // else the one under its name (a crash between sbatch and the store).
    const SlurmJob* mine = nullptr;
    for (const SlurmJob* j : live[row.id]) {
      if (row.slurm_job_id && std::to_string(j->id) == *row.slurm_job_id) mine = j;
    }
    if (mine == nullptr && !live[row.id].empty() && !row.slurm_job_id) mine = live[row.id].back();
    for (const SlurmJob* j : live[row.id]) {
      if (j != mine) m.Warn(m.slurm.Cancel(j->id));  // never two Slurm jobs for one tessel job
    }
    bool had_alloc = row.allocation.gpus > 0;
    if (mine != nullptr && had_alloc) {
      auto alloc = AllocFromJson(row.allocation.alloc_json, row.allocation.gpu_type, m.inv);
      if (alloc.ok()) {
        t.slurm_id = mine->id;
        m.Warn(m.store.SetSlurmJob(t.id, std::to_string(mine->id)));
        t.running = *alloc;
        if (auto plan = PlanFromStoredJson(row.allocation.plan_json); plan.ok()) {
          t.plan = *plan;
          t.plan_known = true;  // its ep is not stored: plan_ep_known stays false
        }
        t.view.alloc = *alloc;
        t.view.phase = mine->state == SlurmJobState::kRunning ? JobPhase::kRunning : JobPhase::kStarting;
        if (t.state == JobState::kReconfiguring) t.stop_asked = now;  // it was asked to stop: wait for it
        t.recent.clear();
        m.Activate(t);
        continue;
      }
      m.Warn(m.slurm.Cancel(mine->id));
    } else if (mine != nullptr) {
      m.Warn(m.slurm.Cancel(mine->id));
    }
    if (row.slurm_job_id && mine == nullptr && had_alloc) {
      // It ended while the daemon was down: learn how from its exit file.
      auto alloc = AllocFromJson(row.allocation.alloc_json, row.allocation.gpu_type, m.inv);
      if (alloc.ok()) t.running = *alloc;
      m.Activate(t);
      m.Ended(t, now, SlurmJobState::kUnknown);
      continue;
    }
    // Nothing runs: it waits for the policy.
    if (had_alloc) m.Warn(m.store.SetAllocation(t.id, StoredAllocation{}, now));
    if (row.slurm_job_id) m.Warn(m.store.SetSlurmJob(t.id, std::nullopt));
    t.slurm_id.reset();
    // Its profiling runs: a live one is adopted (found under its name, so a
    // crash between sbatch and storing the id adopts it too), one that ended
    // while the daemon was down is read, one never submitted is forgotten
    // and started again below. Never two runs of one profile.
    std::vector<std::pair<int, int>> ended;
    for (const SlurmRun& r : runs_of[row.id]) {
      int type = m.cluster.FindType(r.gpu_type);
      auto it = live_runs.find(r.name);
      if (type < 0 || r.kind != "profile") {
        m.Warn(m.store.RemoveSlurmRun(r.name));
        continue;
      }
      if (it != live_runs.end() && !it->second.empty()) {
        const SlurmJob* j = it->second.front();
        for (size_t k = 1; k < it->second.size(); ++k) m.Warn(m.slurm.Cancel(it->second[k]->id));
        t.profiling[{type, r.stages}] = j->id;
        if (r.slurm_job_id != std::to_string(j->id)) m.Warn(m.store.SetSlurmRunJob(r.name, std::to_string(j->id)));
        adopted.insert(r.name);
      } else if (r.slurm_job_id || fs::exists(m.ProfilePath(t.id, type, r.stages))) {
        ended.push_back({type, r.stages});  // it ran (its id stored, or its output is there)
      } else {
        m.Warn(m.store.RemoveSlurmRun(r.name));
      }
    }
    if (!t.profiling.empty() || !ended.empty()) {
      m.SetState(t, JobState::kProfiling, now, "daemon restarted; profiling: " + m.Profiling(t));
      for (auto [type, stages] : ended) {
        t.profiling[{type, stages}] = 0;  // read below, as if it ended now
      }
      for (auto [type, stages] : ended) m.Profiled(t, type, stages, now);
      if (t.state == JobState::kPending) continue;  // every run read: Profiled placed it
    }
    // Adopted runs still measure; StartProfiling starts what never ran.
    if (m.StartProfiling(t, now)) continue;
    if (t.state != JobState::kPending) m.SetState(t, JobState::kPending, now, "daemon restarted; relaunching");
    m.Activate(t);
  }
  // Runs no live job owns (its job ended, or no record names them): orphans.
  for (const auto& [name, list] : live_runs) {
    if (adopted.count(name)) continue;
    for (const SlurmJob* j : list) m.Warn(m.slurm.Cancel(j->id));
  }
  for (const auto& [job, list] : runs_of) {
    if (kept.count(job)) continue;
    for (const SlurmRun& r : list) m.Warn(m.store.RemoveSlurmRun(r.name));
  }
  // Slurm jobs of tessel jobs that are finished or unknown: orphans.
  for (const auto& [id, list] : live) {
    if (kept.count(id)) continue;
    for (const SlurmJob* j : list) m.Warn(m.slurm.Cancel(j->id));
  }
  return Status::Ok();
}

}  // namespace tessel
