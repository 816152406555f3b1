// The shared-GPU simulator of Wang et al.'s paper ("Communication Contention
// Aware Scheduling of Multiple Deep Learning Training Jobs", ICDCS 2020):
// `tessel simulate --setting ddl-paper`. It plays their execution model as
// their simulator does (HKBU-HPML/dl-scheduling, commit d5398bd, online/;
// file:line below), in the same 1 ms steps and the same order of work in a
// step, so that the same job set gives the same completion times:
//
// - GPUs are shared. A job is placed on `workers` distinct GPUs that each
//   have its training memory free (32 GB per GPU, 2.7-4.5 GB per job;
//   job_master.py:216-287); it stays there. Each GPU runs one task at a time
//   to completion (cluster.py:115-160): among the jobs it holds whose worker
//   waits for compute (not for communication), the one with the least
//   remaining GPU compute (job_master.py:395-418).
// - A job's iteration: each worker's forward, then backward (job.py:192-221);
//   when every worker is done, one whole-model all-reduce; nothing overlaps.
//   On one node it is free (job_master.py:362-368); across nodes it is a
//   transfer of the model's size on every node the job uses, moving at the
//   k-way law of its busiest node (network/kway_law.h; job.py:38-50),
//   re-rated every step.
// - The queue: jobs waiting for GPUs in order of total GPU time (their
//   "ssf", job_master.py:297-298), each placed when it fits, later ones
//   placed past one that does not (backfilling).
// - Communication: transfers ready to start go in order of remaining GPU
//   compute (job_master.py:374-375); `comm_threshold` is how many transfers
//   may already be on a job's nodes for it to start (SRSF(1): 0, SRSF(2): 1);
//   with `adadual` and threshold 1 a transfer joins one already there only
//   when the other's remaining size is at least 2(β + η)/β times its own
//   (job.py:119-149).
// - Placement (job_master.py:218-257): first-fit takes the first GPUs with
//   memory in node order (their "bp"); LWF-κ gives a job of at most κ
//   workers the GPUs with the least queued work ("makespan": its jobs'
//   compute and expected communication, less what has run), and a larger
//   job the GPUs of the nodes with the least mean queued work, node by node.
//   (κ here is their threshold on a job's workers; tessel's own
//   `lwf-kappa` bounds the nodes a job spreads over.)
//
// Their code's quirks are kept, since the published figures come from it:
// - placing a job skips the next job in the queue for that step, and
//   retiring a finished job skips the next running one (a list changed while
//   iterated, job_master.py:313-316 and :320-324); each costs a 1 ms delay;
// - LWF-κ's node order persists between placements (a stable sort of the
//   previous order, job_master.py:247);
// - `paper_rest_size`: their AdaDUAL check reads the other transfer's
//   remaining size through get_rest_size (job.py:52-54), which adds the
//   transfer since its last re-rating to the transferred size without
//   recording when; every step a transfer waits behind another, the other
//   advances twice. Off, the remaining size is computed without changing it.
//
// Deterministic; time is an integer count of milliseconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "network/kway_law.h"

namespace tessel {

struct SharedGpuJob {
  int64_t arrival_ms = 0;
  int workers = 1;
  int iterations = 1;
  double size_mb = 0;       // all-reduced per iteration
  int forward_ms = 0;       // per iteration, per worker
  int backward_ms = 0;
  int memory_mb = 0;        // held on each of its GPUs while placed
};

struct SharedGpuConfig {
  int nodes = 16;
  int gpus_per_node = 4;
  int gpu_memory_mb = 32768;
  KWayLaw law;
  // Their expected time per MB of an all-reduce, for LWF's queued work
  // (job_master.py:270-271, 7.8125 ms/MB: 1 Gb/s).
  double expected_comm_ms_per_mb = 7.8125;
  enum class Placement { kFirstFit, kLwf };
  Placement placement = Placement::kLwf;
  int kappa = 2;
  int comm_threshold = 1;
  bool adadual = true;
  bool paper_rest_size = false;
  // Stop here (ms) with the jobs not yet finished reported so; 0 = run
  // until every job finishes.
  int64_t horizon_ms = 0;
};

struct SharedGpuJobResult {
  int64_t placed_ms = -1;    // -1: never placed
  int64_t finished_ms = -1;  // -1: not finished
  int nodes = 0;             // nodes its GPUs are on
  int64_t compute_ms = 0;    // GPU time its tasks ran
  double iterations_done = 0;
};

struct SharedGpuRun {
  std::vector<SharedGpuJobResult> jobs;  // in input order
  int64_t end_ms = 0;                    // the step the run stopped at
  int64_t busy_gpu_ms = 0;               // GPU-ms running a task
  // Placements over time: (ms, GPUs holding at least one job, jobs placed
  // and unfinished, jobs waiting), one entry per step where any changed.
  struct Point {
    int64_t ms = 0;
    int gpus_in_use = 0, running = 0, waiting = 0;
  };
  std::vector<Point> timeline;
};

// InvalidArgument, naming the job (its index), when a job needs more
// workers than the cluster has GPUs or more memory than a GPU, or has no
// iterations or no time: their simulator would wait for it forever.
Result<SharedGpuRun> RunSharedGpu(const std::vector<SharedGpuJob>& jobs, const SharedGpuConfig& config);

}  // namespace tessel
