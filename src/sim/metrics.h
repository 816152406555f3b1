// What a simulation measured: one record per job, the cluster's state over
// time, and the summary computed from them. Unfinished and rejected jobs
// are counted and listed, never averaged into JCTs.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/sim_time.h"
#include "workload/job.h"

namespace tessel {

enum class JobOutcome { kFinished, kRunning, kPending, kRejected };
const char* JobOutcomeName(JobOutcome o);

struct JobRecord {
  std::string id;
  std::string user;
  std::string model;
  int requested_gpus = 0;
  std::string requested_gpu_type;  // "" = any
  JobOutcome outcome = JobOutcome::kPending;
  std::string reason;              // why rejected, or why unfinished at the end
  SimTime submit = 0;
  SimTime first_start = kNever;
  SimTime finish = kNever;
  std::optional<SimTime> deadline;  // absolute; none when the job has none
  // Finished by its deadline (false for unfinished and rejected jobs).
  bool DeadlineMet() const { return deadline && outcome == JobOutcome::kFinished && finish <= *deadline; }
  double total_iterations = 0;
  double done_iterations = 0;
  double queueing_s = 0;     // first start - submit (to the end if never started)
  double waiting_s = 0;      // all time without GPUs (incl. after preemption)
  double reconfig_s = 0;     // time holding GPUs without progress
  int restarts = 0;
  int preemptions = 0;
  int failures = 0;          // restarts caused by node failures
  double lost_iterations = 0;  // progress lost to failures
  double gpu_s = 0;
  std::vector<double> gpu_s_by_type;  // per cluster type
  double isolated_s = 0;     // run time alone on the requested GPUs (no queue)
  double jct_s() const { return ToSeconds(finish - submit); }
};

// The cluster between two consecutive changes, starting at `time`.
struct TimelinePoint {
  SimTime time = 0;
  int running_jobs = 0;   // making progress
  int starting_jobs = 0;  // holding GPUs, reconfiguring
  int pending_jobs = 0;
  int allocated_gpus = 0;
  int progressing_gpus = 0;
  int down_gpus = 0;
  double samples_per_s = 0;
  double tokens_per_s = 0;
};

struct Summary {
  std::string policy;
  std::string cluster;
  std::string trace;
  std::string truth;
  std::string placement;  // PlacementRuleName of the run's rule
  uint64_t seed = 0;
  int total_gpus = 0;
  int jobs_total = 0;
  int jobs_finished = 0;
  int jobs_unfinished = 0;  // running or pending at the end
  // The unfinished jobs by their reason (JobRecord::reason), in the order
  // the reasons first occur among the jobs.
  std::vector<std::pair<std::string, int>> unfinished_reasons;
  int jobs_rejected = 0;
  double avg_jct_s = 0, median_jct_s = 0, p95_jct_s = 0, p99_jct_s = 0;
  double avg_queueing_s = 0, median_queueing_s = 0;
  double makespan_s = 0;              // first submit to last finish (or horizon)
  double avg_throughput_samples_per_s = 0;
  double avg_throughput_tokens_per_s = 0;
  double gpu_utilization = 0;         // allocated GPU-time / available GPU-time
  double useful_utilization = 0;      // GPU-time making progress / available
  double avg_ftf = 0, max_ftf = 0;    // finish-time fairness: JCT / isolated time
  int restarts = 0, preemptions = 0, failures = 0;
  // Jobs with a deadline; those finished by it; their fraction of the jobs
  // with one (unfinished and rejected jobs count as missed; 0 when no job
  // has a deadline); mean tardiness (finish - deadline, 0 when on time)
  // over the deadline jobs that finished.
  int deadline_jobs = 0, deadline_met = 0;
  double deadline_met_fraction = 0;
  double avg_tardiness_s = 0;
  // Cluster throughput over time (samples/s of the piecewise-constant
  // timeline from the first submit): its peak and time-weighted p99; and
  // samples per allocated GPU-second (the average job's throughput per GPU).
  double cluster_throughput_peak = 0, cluster_throughput_p99 = 0;
  double samples_per_gpu_s = 0;
  int64_t decisions = 0;
  // Wall time of one decision (policy + check + apply), milliseconds: p50,
  // p99 (within 1%) and max. Wall times, like sim_wall_time_s, stay out of
  // the files under --out.
  double decision_p50_ms = 0, decision_p99_ms = 0, decision_max_ms = 0;
  int64_t events = 0;
  int64_t truth_fallbacks = 0;        // table truth missing -> estimator
  // Placements the policy's belief refused: distinct (job, GPU type, GPU
  // count, nodes) shapes answered "does not fit" (out of memory; under
  // --setting arena-artifact, a baseline's data-parallel plan failing the
  // artifact's memory check), and the jobs refused at least once.
  int64_t memory_refusals = 0, jobs_memory_refused = 0;
  // Allocations a policy made that the truth (and the belief, as placed)
  // could not run for memory: the job did not start and waited (the Arena
  // artifact's out-of-memory events).
  int64_t oom_placements = 0;
  // --autoscale: node-hours powered from the start to the end of the run,
  // and how many nodes were powered up or down; -1 and 0 when the cluster's
  // size is fixed (neither is then written).
  double node_hours = -1;
  int64_t autoscale_changes = 0;
  double sim_wall_time_s = 0;
};

// A job's record with what its spec says (id, user, model, request,
// submit, deadline); the run fills in the rest.
JobRecord RecordOf(const JobSpec& spec);

// Fills the aggregate fields of `summary` from the records and timeline.
// `end` is when the run stopped.
void Summarize(const std::vector<JobRecord>& jobs, const std::vector<TimelinePoint>& timeline,
               int total_gpus, SimTime end, Summary* summary);

}  // namespace tessel
