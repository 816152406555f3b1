// The Slurm backend's state and its parts, shared by the files that
// implement it (cluster/slurm_backend.h is the interface): slurm_backend.cc
// (tracking, launching, what jobs report, polling, decisions),
// slurm_profiling.cc (Arena's disaggregated profiles on real GPUs) and
// slurm_recovery.cc (adopting what Slurm runs after a restart). Internal to
// the cluster library.
#pragma once

#include <mutex>

#include "cluster/slurm_backend.h"
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include "cluster/framework_args.h"
#include "cluster/launch.h"
#include "cluster/metrics_file.h"
#include "core/fault_point.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "hardware/gpu.h"
#include "policy/placement.h"
#include "workload/job_spec.h"

namespace tessel {
namespace slurm_internal {

inline constexpr const char* kNamePrefix = "tessel-";
// Step times a correction averages (the latest ones).
inline constexpr int kCorrectionWindow = 20;
// Plans of the base plan set a running plan's estimate is looked up in
// (more than a policy hands over, so the running plan is likely there).
inline constexpr int kCorrectionPlans = 16;
// Re-planning on the same GPUs: a new plan replaces a running one that is
// still in the decision's plan set only when its estimated iteration is at
// least this much shorter. A relaunch costs a checkpoint, a stop and a
// start-up (tens of seconds to minutes) and a 5% gain repays that within
// tens of minutes of training; smaller gains are within the estimator's
// error between neighbouring plans and would relaunch a job back and forth
// as corrections move.
inline constexpr double kReplanGain = 0.05;

// Correction scopes in the store (Correction::scope) and the belief's
// level each restores (policy/corrected_throughput.h): '' the type's,
// 'stages=<p>' a p-stage pipeline's profile, 'plan=<ParallelPlan::ToString()>'
// that plan measured.
inline constexpr std::string_view kStageScope = "stages=";
inline constexpr std::string_view kPlanScope = "plan=";

std::string StageScope(int stages);
std::string PlanScope(const ParallelPlan& plan);
// One naming rule for every Slurm job tessel starts, which the orphan sweep
// understands: tessel-<job id> (a launch) or tessel-<job id>-<what>
// (tessel-<job id>-profile-<gpu type>-<stages>: a profiling run).
std::string SlurmName(int64_t id);
std::string ProfileRunName(int64_t id, const std::string& gpu_type, int stages);
// The tessel job id a Slurm job name carries (either form), or -1.
int64_t IdFromName(const std::string& name);
// Whether the name is a launch's (tessel-<id> exactly).
bool IsLaunchName(const std::string& name);
Status WriteFileAtomic(const std::string& path, const std::string& text);
std::string AllocJson(const Allocation& a, const SlurmInventory& inv);
Result<Allocation> AllocFromJson(const std::string& text, const std::string& gpu_type, const SlurmInventory& inv);
Result<ParallelPlan> PlanFromStoredJson(const std::string& text);

}  // namespace slurm_internal

// A tessel job the backend tracks (every non-terminal one).
struct Tracked {
  int64_t id = 0;
  DaemonJobSpec dspec;
  JobSpec spec;  // what policies see
  JobView view;
  JobState state = JobState::kPending;
  std::optional<SlurmJobId> slurm_id;
  // The store's Slurm id may differ from slurm_id: its write was refused (a
  // full disk). Written again at each poll until the store takes it.
  bool slurm_id_unstored = false;
  int launch = 0;     // launches so far
  int failures = 0;   // launches that failed on their own
  // The allocation the current Slurm job holds (empty when none runs).
  Allocation running;
  ParallelPlan plan;
  // Whether `plan` is the one `running` runs: set by a launch; by Recover
  // from the stored plan, whose expert-parallel degree is unknown
  // (plan_ep_known false: plans are compared without it).
  bool plan_known = false;
  bool plan_ep_known = false;
  // Set while reconfiguring: what to relaunch on once the job stopped
  // (empty: back to pending).
  std::optional<Allocation> next;
  std::optional<ParallelPlan> next_plan;
  SimTime stop_asked = kNever;
  bool cancelled_by_us = false;
  std::unique_ptr<MetricsTail> metrics;
  int64_t malformed_metrics = 0;  // lines of its metrics file skipped so far
  std::vector<double> recent;  // latest step times on the running allocation
  int64_t last_step = -1;
  SimTime touched = kNever;  // attained service counted up to here
  // The job reported all its iterations done (its metrics' "done" line):
  // complete whatever the exit code (a late signal may hit it on exit).
  bool done_reported = false;
  // Profiling runs in flight: (cluster type, pipeline stages) -> its
  // one-GPU Slurm job.
  std::map<std::pair<int, int>, SlurmJobId> profiling;
};

struct SlurmBackend::Impl {
  SlurmClient& slurm;
  Store& store;
  const SlurmInventory& inv;
  const Cluster& cluster;
  CorrectedThroughput& belief;
  PolicyTraits traits;
  SlurmBackendOptions opt;

  std::map<int64_t, std::unique_ptr<Tracked>> jobs;  // by id
  std::vector<const JobView*> active;                // sorted by index
  std::vector<int> free;
  std::vector<uint8_t> up;    // Slurm may start new work there (SlurmNode::Usable)
  std::vector<uint8_t> lost;  // its jobs were told to move (SlurmNode::Lost, or gone)
  std::vector<int> slurm_used;  // GPUs Slurm counts as used, per node
  // Slurm's power saving (--autoscale): 0 powered down or on its way down
  // (POWERED_DOWN, POWERING_DOWN, POWER_DOWN), 1 up or powering up; as of
  // the last poll, and as this backend last asked.
  std::vector<uint8_t> powered;
  SimTime next_poll = 0;
  int64_t processed = 0;
  int next_index = 0;  // JobView::index: stable per tracked job in this process

  mutable std::mutex inbox_mu;
  std::vector<int64_t> inbox_submitted;
  std::vector<int64_t> inbox_cancelled;

  mutable std::mutex status_mu;
  std::vector<NodeStatus> node_status;
  std::map<std::string, int64_t> allocated_by_type;

  BackendEvents found;
  // Whether the latest poll reached Slurm (the loop thread's copy of
  // reach.reachable): while it did not, nothing is launched (an sbatch would
  // fail and send the job back to pending, over and over); the first poll
  // that reaches it again asks for a decision.
  bool slurm_reachable = true;

  // Ends of jobs (completed, failed) the store refused to record (a full
  // disk): the job is no longer tracked (its Slurm job is over), and the end
  // is written again at each poll until the store takes it.
  struct UnstoredEnd {
    JobState to;
    SimTime at;
    std::string reason;
  };
  std::map<int64_t, UnstoredEnd> unstored_ends;
  SlurmBackend::SlurmReach reach;  // guarded by status_mu

  Impl(SlurmClient& s, Store& st, const SlurmInventory& i, CorrectedThroughput& b, const PolicyTraits& t,
       SlurmBackendOptions o)
      : slurm(s), store(st), inv(i), cluster(i.cluster), belief(b), traits(t), opt(std::move(o)) {
    free.resize(cluster.nodes().size());
    up.assign(cluster.nodes().size(), 1);
    lost.assign(cluster.nodes().size(), 0);
    slurm_used.assign(cluster.nodes().size(), 0);
    powered.assign(cluster.nodes().size(), 1);
  }
  Status PowerNodes(int target, SimTime now);
  // Whether any job of tessel's holds or is granted GPUs on the node.
  bool HoldsJob(int node) const;

  std::string JobDir(int64_t id) const { return opt.state_dir + "/jobs/" + std::to_string(id); }
  std::string CheckpointDir(const Tracked& t) const;
  std::string MetricsPath(int64_t id) const { return JobDir(id) + "/metrics.jsonl"; }
  std::string ExitPath(int64_t id, int launch) const { return JobDir(id) + "/exit." + std::to_string(launch); }

  // A store or Slurm call whose failure must not stop the loop: the next
  // poll resynchronises. Logged for the operator.
  static void Warn(const Status& s) {
    if (!s.ok()) std::fprintf(stderr, "tessel serve: %s\n", s.ToString().c_str());
  }

  // --- state changes, always through the store first ------------------------

  // False when the store refused (the job was cancelled meanwhile: its
  // cancellation is in the inbox and ends it at the next step).
  bool SetState(Tracked& t, JobState to, SimTime now, const std::string& reason);

  // A job's end: its allocation cleared and its final state stored, then
  // the job dropped. When the store refuses for another reason than the
  // job's state (it was cancelled meanwhile), e.g. a full disk, the job is
  // dropped all the same and the end kept in unstored_ends.
  void End(Tracked& t, JobState to, SimTime now, const std::string& reason);

  // Writes again what the store refused before (unstored_ends, Slurm ids).
  void RetryUnstored();

  // Loads a job from the store into tracking (pending, not yet active).
  Result<Tracked*> Load(int64_t id);

  // A stored correction back into the belief, at the level its scope names.
  void Restore(const std::string& job_id, const Correction& c);

  // Whether `p` is the plan `t` runs (without ep when that is unknown).
  static bool IsRunningPlan(const Tracked& t, ParallelPlan p);

  void Activate(Tracked& t);

  void Drop(Tracked& t);

  // "a100-80g x3 on n1:2,n2:1", with Slurm's node names.
  std::string Describe(const Allocation& a) const;

  // --- launching ---------------------------------------------------------------

  // A plan for `alloc` that the job's framework can express: the first such
  // of the decision's plans when it gave a set (fastest first, each later
  // one leaner), else the belief's plan for the allocation. The
  // framework's refusal (naming it and why) when none can be expressed.
  Result<ParallelPlan> PlanFor(const Tracked& t, const Allocation& alloc, const std::vector<PlanChoice>* set);

  // The files of one submission, under the job's folder.
  struct SubmissionFiles {
    std::string launch, script, output, exit;
  };

  // Writes `ls`'s launch file and the batch script that runs it as `files`,
  // and returns the submission of exactly ls.nodes (one gres type, one task
  // per GPU).
  Result<SubmitRequest> Prepare(const LaunchSpec& ls, const std::string& slurm_name, const std::string& gres,
                                const SubmissionFiles& files);

  // Records the intent, then submits: a crash between the two leaves a
  // `starting` job without a Slurm id, which Recover relaunches (or adopts,
  // if Slurm has it under the job's name).
  Status Launch(Tracked& t, const Allocation& alloc, const ParallelPlan& plan, SimTime now);

  // A decision that keeps `t` on the GPUs it runs on, with the plan set
  // `set`: relaunches it under the set's first plan its framework can
  // express when that is not the running plan and either the running plan
  // is not in the set or the new plan's estimated iteration (both from the
  // set) is at least kReplanGain shorter. Nothing otherwise, and nothing
  // while it is already being reconfigured or without a set (idempotent).
  void Replan(Tracked& t, const std::vector<PlanChoice>* set, SimTime now);

  // Asks the job to checkpoint and stop; relaunches on `next` once it has.
  void Reconfigure(Tracked& t, const Allocation& next, std::optional<ParallelPlan> plan, SimTime now,
                   const std::string& why);

  // --- a launch ended --------------------------------------------------------------

  std::optional<int> ReadExit(int64_t id, int launch) const;

  // `slurm_state`: how Slurm last showed the job (kUnknown: it forgot it).
  void Ended(Tracked& t, SimTime now, SlurmJobState slurm_state);

  // Cancels t's Slurm job, asked by us (cancelled_by_us); false, logged,
  // when scancel failed (Slurm unreachable): the caller tries again later.
  bool CancelByUs(Tracked& t);

  // --- what jobs report -----------------------------------------------------------

  // Reads what the job appended to its metrics file (at most
  // MetricsTail's bound per call); true when more is left to read.
  bool ReadMetrics(Tracked& t, SimTime now);

  // The belief's correction for this job from its latest steps (the first
  // step of a launch is warm-up and skipped when there are others): the
  // median measured step / the base estimate of the plan it runs on its
  // allocation (found in the base plan set, or the base rate when that is
  // its plan) sets that plan's factor and the type's fallback (the job's
  // latest measurement there under any plan). When the running plan has no
  // base estimate (a plan the base would not choose, or one restored
  // without its expert-parallel degree), the median / the base rate sets
  // the type's factor only.
  void Correct(Tracked& t);

  // --- profiling (Arena's disaggregated profiles, for real) ---------------------------
  //
  // Before a new job's first placement, when the policy profiles
  // (PolicyTraits::profiling), the job's own command runs a few timed steps
  // (TESSEL_PROFILE=1) of one pipeline stage on one GPU, once per GPU type
  // it may use and per stage count p its grids admit there
  // (ProfilingModel::StageCountsFor: 1, 2, 4, ... up to max_stages, its
  // layers and the GPUs it may hold), all at once. Each measured stage time
  // sets the job's factor for p-stage plans on that type (the belief's
  // level 2); profiles are stored per (model, type, stage layers,
  // micro-batch) and reused by later jobs of the same model: a stored one is
  // not measured again.

  std::string ProfileKey(const Tracked& t) const { return t.spec.model; }

  // What one profiling run measures: the first stage of a p-stage pipeline.
  struct StageShape {
    int layers = 0;     // the stage's layers
    ParallelPlan plan;  // what the run is launched with (its micro-batch)
  };

  // The profiled stage of a p-stage pipeline on `type`. Layers: the first
  // stage's under the split rule the job library and the estimator share
  // (stage k of p holds floor(L/p) layers, one more when k < L mod p: the
  // first holds ceil(L/p)). Micro-batch (and recompute, precision): those
  // of the base estimator's fastest pure pipeline of p stages on p GPUs of
  // the type (p = 1: the one-GPU plan, the rule before stage counts were
  // profiled), so the profile's micro-batch is the one its factor compares
  // with and needs no scaling. nullopt when no pure p-stage pipeline fits p
  // GPUs of the type: its profile could give no factor.
  std::optional<StageShape> ShapeFor(const Tracked& t, int type, int stages) const;

  // A profile of one stage of a `stages`-stage pipeline as the job's factor
  // for `stages`-stage plans on `type`. The base's fastest pure pipeline of
  // p = `stages` stages on p GPUs (d = t = 1) takes T_grid for M
  // micro-batches of mb samples with ceil(L/p) layers in its first stage;
  // the profile predicts
  //   (M + p - 1) * t_stage * (mb / mb_profiled) * (ceil(L/p) / stage layers profiled)
  // and the factor is predicted / T_grid (p = 1: global batch / mb_profiled
  // * t_stage * L / stage layers against the one-GPU estimate, the rule
  // before stage counts were profiled). Approximate where the estimator is
  // finer (perf/estimator.cc, the stage costs and the pipeline schedule):
  // it times M * s_max + (p - 1) * s_avg with each stage's own layers, the
  // embedding on the first stage and the head on the last only, while the
  // profiled stage carries both (each of the M + p - 1 slots is charged a
  // little more: the factor errs high by about the embedding's or the
  // head's share of a stage); T_grid includes the point-to-point activation
  // transfers between stages and the optimizer step, which the profiled
  // stage time does not (the factor errs low by their share of T_grid);
  // micro-batch scaling is linear (exact at the rule's micro-batch, which a
  // fresh profile uses).
  void CorrectFromProfile(Tracked& t, int type, int stages, const ProfileRecord& p);

  // The GPU types a job may run on: the one it requires, else those its
  // spec allows.
  std::vector<int> AllowedTypes(const Tracked& t) const;

  // Starts profiling `t`: one run per (allowed type, stage count) without a
  // stored profile, submitted at once, each on one GPU of its type (the
  // node with the most GPUs left free, so runs spread). False when the
  // policy does not profile or every profile needed is stored (then
  // applied).
  bool StartProfiling(Tracked& t, SimTime now);

  // What is being profiled: "a100-80g (1, 2 stages), v100-32g (1 stage)".
  std::string Profiling(const Tracked& t) const;

  // profile.<type>.<stages>: the files of one profiling run, under the job's folder.
  std::string ProfileTag(int64_t id, int type, int stages) const {
    return JobDir(id) + "/profile." + std::to_string(type) + "." + std::to_string(stages);
  }
  std::string ProfilePath(int64_t id, int type, int stages) const { return ProfileTag(id, type, stages) + ".jsonl"; }

  // A profiling run ended: its steps become the model's stored profile and
  // the job's factor for that stage count on that type. Once all have, the
  // job is placed.
  void Profiled(Tracked& t, int type, int stages, SimTime now);

  // --- polling ----------------------------------------------------------------------

  Status Poll(SimTime now);

  // A node was drained or went down: its jobs checkpoint and wait for the
  // policy to place them elsewhere (a down node's jobs are gone; Slurm ends
  // them and they relaunch from their last checkpoint).
  void NodeLost(int node, SimTime now, const std::string& state);

  void DrainInbox(SimTime now);

  void ComputeFree();

  Tracked* ByIndex(int index);
};

}  // namespace tessel
