// SlurmClient: tessel's typed access to a Slurm cluster through its command
// line tools (sinfo, squeue, sbatch, scancel, scontrol), run by a
// CommandRunner. Thread-safe when its runner is (SystemCommandRunner is): it
// holds no mutable state.
//
// What was verified on Debian 12's Slurm 22.05.8 with scripts/local-slurm.sh
// (virtual nodes, fake typed GPUs, proctrack/linuxproc, task/none) and what
// this client therefore does:
//
// Listing. `sinfo --json` and `squeue --json` (openapi/v0.0.38) are parsed;
// `scontrol` has no --json in 22.05. Fields relied on:
//   sinfo:  nodes[].name, state ("idle", "mixed", "allocated", "down", ...:
//           the base state), state_flags (["DRAIN"], ["NOT_RESPONDING"], ...),
//           cpus, alloc_cpus, gres ("gpu:a100:2"), gres_used
//           ("gpu:a100:1(IDX:0)"), reason.
//   squeue: jobs[].job_id, name, job_state ("RUNNING", ...), state_reason,
//           nodes (hostlist "n[1-2]"; "" while pending), exit_code (the raw
//           wait status: 768 = exit 3, 9 = SIGKILL, 15 = SIGTERM), submit_time,
//           start_time, end_time (for a running job: start + time limit),
//           current_working_directory, standard_output.
//   squeue --json ignores -j/-n filters in 22.05 and lists every job slurmctld
//   still holds, finished ones included for MinJobAge (300 s by default);
//   filtering is done here. When slurmctld is down both commands exit 0 after
//   ~9 s of retries with an "errors" array and no nodes/jobs: Unavailable.
//   A node is "mixed" when some CPUs are free even if all its GPUs are
//   allocated; read GPU use from gres_used (SlurmNode::FreeGpus).
//
// Exact allocations (Submit). One task per GPU, GPUs of one type:
//   same count G on every node, an ordinary job:
//     sbatch --parsable --job-name=NAME --nodes=K --nodelist=a,b
//       --ntasks-per-node=G --gpus-per-task=TYPE:1 --gpu-bind=per_task:1
//       [--cpus-per-task=C] [--partition=P] [--time=M] --no-requeue
//       --chdir=DIR --output=OUT [--error=ERR] --export=ALL SCRIPT
//     Ranks follow Slurm's node order (config order), not --nodelist's.
//   different counts per node (e.g. 2 on n4, 1 on n3), a heterogeneous job
//   with one component per node, in request order:
//     sbatch --parsable --job-name=NAME --chdir=DIR --output=OUT
//       [--error=ERR] --export=ALL
//       --nodes=1 --nodelist=n4 --ntasks-per-node=2 --gpus-per-task=TYPE:1
//       --gpu-bind=per_task:1 [--cpus-per-task=C] [--partition=P] [--time=M]
//       --no-requeue
//       : --nodes=1 --nodelist=n3 --ntasks-per-node=1 ... --no-requeue SCRIPT
//     Slurm allocates exactly 2+1 GPUs. The batch script runs on component
//     0's node and a plain `srun` there starts only component 0's tasks: the
//     script must run `srun --het-group=0-(K-1)`. Written as
//       srun ${SLURM_HET_SIZE:+--het-group=0-$((SLURM_HET_SIZE-1))} prog
//     it works for both shapes. The step then spans all components with
//     ranks in component (= request) order, SLURM_NTASKS the total and
//     SLURM_JOB_NODELIST all nodes (inside the step; the batch shell's own
//     SLURM_NTASKS and SLURM_JOB_NODELIST describe component 0 only).
//     squeue lists one entry per component (ids J, J+1, ...; ListJobs
//     merges them); scancel J and scancel --signal=USR1 J act on all of them.
//     Heterogeneous jobs are started only by the backfill scheduler: within
//     bf_interval (30 s by default; local-slurm.sh sets 1 s).
//   What does not work in 22.05: `--gres=gpu:TYPE:G` asks the same count on
//   every node; `--distribution=arbitrary` with SLURM_HOSTFILE lays out the
//   srun tasks as listed but the allocation ignores the per-node counts
//   (cons_tres fills nodes in its own order: hostfile n2,n2,n1 gets 2 GPUs
//   on n1 and 1 on n2, and the batch script's srun then fails with
//   "Insufficient GRES available in allocation").
//   --gpu-bind=per_task:1 matters: with --gpus-per-task alone, 22.05's
//   implicit binding gives tasks on nodes with more than one task an EMPTY
//   CUDA_VISIBLE_DEVICES (--gpu-bind=none does too). With it each task sees
//   its own GPU: CUDA_VISIBLE_DEVICES=0 for local rank 0, 1 for local rank 1.
//   Tasks see SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_NODELIST.
//   Paths must be absolute: a relative --output is taken relative to
//   --chdir, and a missing output directory fails the job at launch.
//
// Environment. The job's variables are set in sbatch's own environment and
// sbatch runs with --export=ALL, so the job sees the caller's environment
// plus them. Values go through no argv parsing: commas, spaces, quotes, `$`
// and newlines survive (--export=A=x,y would split at the comma). SLURM_*
// names are refused; they belong to Slurm.
//
// Signals. `scancel --signal=USR1 JOB` reaches every process of the job's
// steps (srun tasks and their children: a task's helper processes that do
// not handle USR1 die of it). `--full` also signals the batch shell, and a
// batch script that does not trap USR1 then dies and ends the job (FAILED,
// tasks terminated): hence SignalTarget::kSteps by default. Signalling a
// PENDING job makes scancel retry for ~95 s and fail ("Job can not be altered
// now"), so Signal checks the job is RUNNING first.
//
// Cancel. `scancel JOB` exits 0 even for an unknown job id: cancelling is
// idempotent.
//
// Drain/resume. `scontrol update NodeName=X State=DRAIN Reason=...` (a reason
// is required). A running job keeps running on a draining node: sinfo shows
// state "mixed"/"allocated" + flag DRAIN ("draining"), then "idle" + DRAIN
// ("drained") once the job ends. `State=RESUME` returns a DRAIN or DOWN node
// to service (the node shows NOT_RESPONDING for the moment until slurmctld
// pings it). Resuming a node that is neither fails with "Invalid node state
// specified"; Resume treats that as success.
//
// Restart and requeue. slurmctld restarted without -c recovers its jobs and
// their running steps keep running, provided it saved its state: a graceful
// stop (SIGTERM) saves; after a crash (SIGKILL) the changes of the last ~5 s
// (its state save interval) are lost, e.g. a job started just before comes
// back PENDING while its processes are orphaned and killed, and ends "launch
// failed requeued held". Jobs are submitted --no-requeue (the scheduler, not
// Slurm, decides relaunches); a requeued job otherwise waits 120 s unless its
// StartTime is set to now. Nodes return to service only by RESUME
// (ReturnToService=2 in local-slurm.sh also returns a DOWN node that
// registers again with a valid configuration).
//
// Failures map to Status codes: Unavailable when slurmctld cannot be reached
// ("Unable to contact slurm controller", socket timeouts, munge failures) or
// a command timed out: retry with backoff. InvalidArgument for a request
// this client or sbatch refuses, with Slurm's message. NotFound for unknown
// jobs and nodes. FailedPrecondition for a job in the wrong state. Internal
// for output this client cannot read.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/command_runner.h"
#include "cluster/slurm_types.h"
#include "core/status.h"

namespace tessel {

struct SlurmClientOptions {
  // SLURM_CONF for every command; "" leaves the process's own (if any).
  std::string slurm_conf;
  // Per command. Slurm's tools retry ~9 s before giving up on slurmctld.
  std::chrono::milliseconds timeout{30'000};
};

struct NodeGpuCount {
  std::string node;
  int gpus = 0;
};

struct SubmitRequest {
  std::string job_name;
  // One GRES type for all GPUs ("a100").
  std::string gpu_type;
  // The exact allocation: GPUs per node, one task per GPU. When the counts
  // differ, ranks are laid out in this order (node by node).
  std::vector<NodeGpuCount> nodes;
  // The script sbatch runs. It starts the tasks with
  //   srun ${SLURM_HET_SIZE:+--het-group=0-$((SLURM_HET_SIZE-1))} ...
  // (a plain srun covers only the first node when the counts differ).
  std::string batch_script;
  // Absolute paths. output/error may use sbatch's patterns (%j, %x);
  // error "" sends stderr to the output file.
  std::string working_dir;
  std::string output_path;
  std::string error_path;
  // Variables for the job, on top of the caller's environment.
  std::vector<std::pair<std::string, std::string>> env;
  int cpus_per_task = 0;       // 0: Slurm's default (1)
  int time_limit_minutes = 0;  // 0: the partition's limit
  std::string partition;       // "": the default partition
  bool requeue = false;        // --requeue / --no-requeue
};

// Which processes of a running job a signal reaches.
enum class SignalTarget {
  kSteps,       // the srun tasks (scancel --signal=SIG)
  kBatchShell,  // only the batch script (--batch)
  kAll,         // both (--full); kills a batch script that does not trap it
};

class SlurmClient {
 public:
  explicit SlurmClient(CommandRunner& runner, SlurmClientOptions options = {});

  // Every node with its state, CPUs and GPUs per type (`sinfo --json`).
  Result<std::vector<SlurmNode>> ListNodes() const;

  // Jobs slurmctld holds (pending, running, finished within MinJobAge)
  // whose name starts with `name_prefix` ("" for all), via `squeue --json`.
  Result<std::vector<SlurmJob>> ListJobs(std::string_view name_prefix = "") const;

  // One job; NotFound when slurmctld does not hold it (any more).
  Result<SlurmJob> GetJob(SlurmJobId id) const;

  // The sbatch command Submit runs for `request` (shapes above), after
  // validating it: InvalidArgument names the offending field.
  static Result<CommandRequest> BuildSubmitCommand(const SubmitRequest& request,
                                                   const SlurmClientOptions& options);

  // Submits a batch job with an exact allocation; returns its job id.
  Result<SlurmJobId> Submit(const SubmitRequest& request) const;

  // Cancels a job (idempotent: unknown and finished jobs are fine).
  Status Cancel(SlurmJobId id) const;

  // Sends `signal` ("USR1", "TERM", ...; without "SIG") to a RUNNING job.
  // FailedPrecondition when the job is not running; NotFound when unknown.
  Status Signal(SlurmJobId id, std::string_view signal = "USR1",
                SignalTarget target = SignalTarget::kSteps) const;

  // Drains a node (running jobs continue; nothing new starts). `reason` is
  // required. NotFound for an unknown node.
  Status Drain(std::string_view node, std::string_view reason) const;

  // Returns a drained or down node to service; OK if it already is.
  Status Resume(std::string_view node) const;

  // Powers a node up or down through Slurm's power saving (`scontrol update
  // NodeName=N State=POWER_UP|POWER_DOWN`: slurmctld runs its ResumeProgram
  // or SuspendProgram). FailedPrecondition when Slurm refuses the
  // transition (power saving off, or the node already there or on its way),
  // NotFound for an unknown node.
  Status SetPower(std::string_view node, bool up) const;

 private:
  // A request for argv with the client's SLURM_CONF and timeout.
  CommandRequest ToolRequest(std::vector<std::string> argv) const;

  CommandRunner& runner_;
  SlurmClientOptions options_;
};

}  // namespace tessel
