// Launching a job on its allocation and plan, asking it to stop, and what
// to do when a launch ended.
#include "cluster/slurm_backend_impl.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "cluster/framework_args.h"
#include "cluster/launch.h"
#include "core/strings.h"

namespace tessel {

namespace fs = std::filesystem;
using namespace slurm_internal;

// A plan for `alloc` that the job's framework can express: the first such
// of the decision's plans when it gave a set (fastest first, each later
// one leaner), else the belief's plan for the allocation. The
// framework's refusal (naming it and why) when none can be expressed.
Result<ParallelPlan> SlurmBackend::Impl::PlanFor(const Tracked& t, const Allocation& alloc, const std::vector<PlanChoice>* set) {
  const JobFramework fw = t.dspec.framework;
  const int layers = t.dspec.model.NumLayers();
  if (set != nullptr && !set->empty()) {
    Status first_refusal;
    for (const PlanChoice& c : *set) {
      Status s = CheckFrameworkPlan(fw, c.plan, layers);
      if (s.ok()) return c.plan;
      if (first_refusal.ok()) first_refusal = s;
    }
    return first_refusal;
  }
  const JobRate& r = belief.Rate(t.spec, alloc.type, alloc.gpus(), alloc.nodes());
  if (!r.fits) return FailedPrecondition("does not fit on " + Describe(alloc) + ": " + r.reason);
  TESSEL_RETURN_IF_ERROR(CheckFrameworkPlan(fw, r.plan, layers));
  return r.plan;
}


// Writes `ls`'s launch file and the batch script that runs it as `files`,
// and returns the submission of exactly ls.nodes (one gres type, one task
// per GPU).
Result<SubmitRequest> SlurmBackend::Impl::Prepare(const LaunchSpec& ls, const std::string& slurm_name, const std::string& gres,
                              const SubmissionFiles& files) {
  Result<LaunchFiles> rendered = RenderLaunch(ls, files.launch);
  if (!rendered.ok()) return rendered.status();  // the framework cannot express the plan
  if (!rendered->config_path.empty()) {
    TESSEL_RETURN_IF_ERROR(WriteFileAtomic(rendered->config_path, rendered->config_text));
  }
  TESSEL_RETURN_IF_ERROR(WriteFileAtomic(files.launch, rendered->launch_text));
  TESSEL_RETURN_IF_ERROR(WriteFileAtomic(
      files.script, BatchScript(opt.tessel_binary, {"--kill-on-bad-exit=0"}, files.launch, files.exit)));
  std::error_code ec;
  fs::permissions(files.script, fs::perms::owner_all, fs::perm_options::add, ec);
  SubmitRequest req;
  req.job_name = slurm_name;
  req.gpu_type = gres;
  for (const auto& [node, gpus] : ls.nodes) req.nodes.push_back({node, gpus});
  req.working_dir = JobDir(ls.job_id);
  req.output_path = files.output;
  req.batch_script = files.script;
  req.requeue = false;  // tessel relaunches, from the job's checkpoint
  return req;
}


// Records the intent, then submits: a crash between the two leaves a
// `starting` job without a Slurm id, which Recover relaunches (or adopts,
// if Slurm has it under the job's name).
Status SlurmBackend::Impl::Launch(Tracked& t, const Allocation& alloc, const ParallelPlan& plan, SimTime now) {
  // Slurm unreachable at the latest poll: the job stays pending (nothing
  // stored, nothing submitted) and is decided again once a poll reaches it.
  if (!slurm_reachable) return Status::Ok();
  std::error_code ec;
  fs::create_directories(JobDir(t.id), ec);
  fs::create_directories(CheckpointDir(t), ec);
  if (ec) return Unavailable("cannot create " + CheckpointDir(t) + ": " + ec.message());
  int launch = t.launch;
  LaunchSpec ls;
  ls.job_id = t.id;
  ls.job_name = t.dspec.name;
  ls.launch = launch;
  ls.gpu_type = cluster.TypeName(alloc.type);
  for (const Placement& p : alloc.parts) ls.nodes.push_back({inv.names[p.node], p.gpus});
  ls.plan = plan;
  ls.global_batch = t.dspec.global_batch;
  ls.total_iterations = t.dspec.iterations;
  ls.checkpoint_dir = CheckpointDir(t);
  ls.checkpoint_interval_s = opt.checkpoint_interval_s;
  ls.metrics_file = MetricsPath(t.id);
  ls.rendezvous_addr = opt.rendezvous_addr.empty() ? inv.addrs[alloc.parts.front().node] : opt.rendezvous_addr;
  ls.rendezvous_port = opt.rendezvous_port_base + static_cast<int>((t.id * 16 + launch) % 10000);
  ls.argv = t.dspec.command;
  ls.workdir = t.dspec.workdir;
  ls.user_env = t.dspec.env;
  ls.framework = t.dspec.framework;
  ls.model_layers = t.dspec.model.NumLayers();
  ls.python_dir = opt.python_dir;
  std::string dir = JobDir(t.id), n = std::to_string(launch);
  Result<SubmitRequest> req = Prepare(ls, SlurmName(t.id), inv.gres_types[alloc.parts.front().node],
                                      {dir + "/launch." + n + ".json", dir + "/batch." + n + ".sh",
                                       dir + "/slurm." + n + ".out", ExitPath(t.id, launch)});
  if (!req.ok() && req.status().code() == StatusCode::kInvalidArgument) {
    // The job's framework cannot express the plan (PlanFor checks first,
    // so a plan stored before it): this job fails, the loop goes on.
    End(t, JobState::kFailed, now, req.status().message());
    return Status::Ok();
  }
  if (!req.ok()) return req.status();

  StoredAllocation stored;
  stored.gpu_type = ls.gpu_type;
  stored.gpus = alloc.gpus();
  for (const Placement& p : alloc.parts) stored.nodes.push_back(inv.names[p.node]);
  stored.alloc_json = AllocJson(alloc, inv);
  stored.plan_json = PlanJson(ls);
  TESSEL_RETURN_IF_ERROR(store.SetAllocation(t.id, stored, now));
  TESSEL_RETURN_IF_ERROR(store.AddCounters(t.id, CounterDelta{t.view.started() ? 1 : 0, 0, 1}));
  t.launch = launch + 1;
  if (t.view.started()) ++t.view.restarts;
  if (!SetState(t, JobState::kStarting, now,
                "launching on " + Describe(alloc) + " plan " + plan.ToString())) {
    Warn(store.SetAllocation(t.id, StoredAllocation{}, now));
    return Status::Ok();  // cancelled meanwhile: never submitted
  }
  FaultPoint("launch.before-sbatch");
  Result<SlurmJobId> id = slurm.Submit(*req);
  if (!id.ok()) {
    // Not launched: back to pending; the policy decides again.
    Warn(store.SetAllocation(t.id, StoredAllocation{}, now));
    SetState(t, JobState::kPending, now, "sbatch failed: " + id.status().message());
    t.view.alloc = Allocation{};
    t.view.phase = JobPhase::kPending;
    found.decide = true;
    return Status::Ok();
  }
  FaultPoint("launch.after-sbatch");
  // Submitted: from here on the job runs whatever the store says. A refused
  // write (a full disk) is written again at the next polls; a crash before
  // it lands is the launch.after-sbatch case (Recover adopts it by name).
  if (Status stored = store.SetSlurmJob(t.id, std::to_string(*id)); !stored.ok()) {
    Warn(stored);
    t.slurm_id_unstored = true;
  }
  t.slurm_id = *id;
  t.running = alloc;
  t.plan = plan;
  t.plan_known = t.plan_ep_known = true;
  t.recent.clear();
  t.view.alloc = alloc;
  t.view.phase = JobPhase::kStarting;
  t.view.alloc_since = now;
  return Status::Ok();
}


// A decision that keeps `t` on the GPUs it runs on, with the plan set
// `set`: relaunches it under the set's first plan its framework can
// express when that is not the running plan and either the running plan
// is not in the set or the new plan's estimated iteration (both from the
// set) is at least kReplanGain shorter. Nothing otherwise, and nothing
// while it is already being reconfigured or without a set (idempotent).
void SlurmBackend::Impl::Replan(Tracked& t, const std::vector<PlanChoice>* set, SimTime now) {
  if (set == nullptr || set->empty() || !t.slurm_id || t.running.empty() || !t.plan_known) return;
  if (t.next || t.stop_asked != kNever || !(t.view.alloc == t.running)) return;
  Result<ParallelPlan> next = PlanFor(t, t.running, set);
  if (!next.ok() || IsRunningPlan(t, *next)) return;
  const PlanChoice *current = nullptr, *chosen = nullptr;
  for (const PlanChoice& c : *set) {
    if (current == nullptr && IsRunningPlan(t, c.plan)) current = &c;
    if (chosen == nullptr && c.plan == *next) chosen = &c;
  }
  std::string why = "re-planning on the same GPUs: " + next->ToString() + " instead of " + t.plan.ToString();
  if (current != nullptr) {
    if (!(chosen->iteration_time_s <= (1 - kReplanGain) * current->iteration_time_s)) return;
    char gain[64];
    std::snprintf(gain, sizeof gain, " (estimated %.3g s per iteration instead of %.3g s)", chosen->iteration_time_s,
                  current->iteration_time_s);
    why += gain;
  } else {
    why += " (no longer in the policy's plan set)";
  }
  Reconfigure(t, t.running, *next, now, why);
}


// Asks the job to checkpoint and stop; relaunches on `next` once it has.
void SlurmBackend::Impl::Reconfigure(Tracked& t, const Allocation& next, std::optional<ParallelPlan> plan, SimTime now,
                 const std::string& why) {
  t.next = next;
  t.next_plan = plan;
  t.view.alloc = next;
  t.view.phase = next.empty() ? JobPhase::kPending : JobPhase::kStarting;
  t.view.alloc_since = now;
  if (t.stop_asked == kNever && t.slurm_id) {
    if (t.state == JobState::kStarting) {
      // Not running yet: nothing to checkpoint. (If scancel fails, the
      // stop timeout cancels it.)
      CancelByUs(t);
    } else {
      Warn(slurm.Signal(*t.slurm_id, "USR1"));
      FaultPoint("reconfigure.after-signal");
    }
    t.stop_asked = now;
  }
  SetState(t, JobState::kReconfiguring, now, why);
}


// --- a launch ended --------------------------------------------------------------

std::optional<int> SlurmBackend::Impl::ReadExit(int64_t id, int launch) const {
  std::ifstream f(ExitPath(id, launch));
  int rc;
  if (f >> rc) return rc;
  return std::nullopt;
}


// `slurm_state`: how Slurm last showed the job (kUnknown: it forgot it).
void SlurmBackend::Impl::Ended(Tracked& t, SimTime now, SlurmJobState slurm_state) {
  // What it wrote last (its "done", its last step), a bounded backlog at most.
  for (int reads = 0; reads < 8 && ReadMetrics(t, now); ++reads) {
  }
  std::optional<int> rc = ReadExit(t.id, t.launch - 1);
  bool node_lost = slurm_state == SlurmJobState::kNodeFail || slurm_state == SlurmJobState::kBootFail;
  t.slurm_id.reset();
  Status cleared = store.SetSlurmJob(t.id, std::nullopt);
  Warn(cleared);
  t.slurm_id_unstored = !cleared.ok();
  t.running = Allocation{};
  t.plan_known = false;
  t.stop_asked = kNever;
  bool by_us = t.cancelled_by_us;
  t.cancelled_by_us = false;
  found.decide = true;
  // Done: it exited 0, said "done", or reported its last step before it
  // stopped for a checkpoint (asked to stop at the step it finished on:
  // that checkpoint holds all its work). The same rule whatever the order
  // of the last step and a stop request.
  bool last_step_reported = t.dspec.iterations > 0 && t.last_step >= t.dspec.iterations;
  if ((rc && *rc == 0) || t.done_reported || (rc && *rc == kExitCheckpointed && last_step_reported)) {
    FaultPoint("complete.before-store");
    End(t, JobState::kCompleted, now, "finished all " + std::to_string(t.dspec.iterations) + " iterations");
    return;
  }
  bool checkpointed = rc && *rc == kExitCheckpointed;
  if (!checkpointed && !by_us && !node_lost && t.next == std::nullopt) {
    ++t.failures;
    Warn(store.AddCounters(t.id, CounterDelta{0, 1, 0}));
    if (t.failures >= opt.max_failures) {
      End(t, JobState::kFailed, now,
               "launch " + std::to_string(t.launch - 1) + " ended with " +
                   (rc ? "exit code " + std::to_string(*rc) : std::string("Slurm state ") + SlurmJobStateName(slurm_state)) + " (" +
                   std::to_string(t.failures) + " failures; see " + JobDir(t.id) + "/slurm.*.out)");
      return;
    }
  }
  if (node_lost) {
    Warn(store.AddCounters(t.id, CounterDelta{0, 1, 0}));
  }
  // Relaunch where the policy said, or wait for its next decision.
  if (t.next && !t.next->empty()) {
    Allocation next = *t.next;
    std::optional<ParallelPlan> plan = t.next_plan;
    t.next.reset();
    t.next_plan.reset();
    Result<ParallelPlan> p = plan ? Result<ParallelPlan>(*plan) : PlanFor(t, next, nullptr);
    bool free_now = true;
    for (const Placement& part : next.parts) free_now &= up[part.node] != 0;
    if (p.ok() && free_now) {
      const int64_t id = t.id;
      Status s = Launch(t, next, *p, now);
      if (jobs.count(id) == 0) return;  // ended: its framework cannot express the plan
      if (s.ok() && t.slurm_id) return;
      // Not submitted (the store or Slurm refused): pending, decided again.
    }
  }
  t.next.reset();
  t.next_plan.reset();
  Warn(store.SetAllocation(t.id, StoredAllocation{}, now));
  std::string why = checkpointed ? "stopped at a checkpoint" : node_lost ? "lost its node" :
                    by_us       ? "cancelled after not stopping in time" :
                                  "launch ended with " + (rc ? "exit code " + std::to_string(*rc) : "no exit code");
  SetState(t, JobState::kPending, now, why + "; waiting for GPUs");
  t.view.alloc = Allocation{};
  t.view.phase = JobPhase::kPending;
  t.view.alloc_since = now;
}


// --- what jobs report -----------------------------------------------------------

}  // namespace tessel
