// The Slurm backend: the scheduling loop (sched/loop.h) driving a real
// cluster through Slurm's command-line tools (cluster/slurm_client.h), with
// every job's state in the daemon's store (cluster/store.h).
//
// What it does with a decision (Backend::Apply):
//  - a grant to a waiting job: writes the job's launch file and batch
//    script, records the allocation and the `starting` state, then submits
//    one Slurm job named `tessel-<id>` with exactly that allocation (node
//    list, typed GPUs per node, one task per GPU) and records its Slurm id;
//  - a change for a job holding GPUs (grow, shrink, another type, a new
//    plan, or suspension): signals it to checkpoint (SIGUSR1), marks it
//    `reconfiguring`, and once it has stopped (exit 85) relaunches it on the
//    new allocation — or cancels it after `stop_timeout` and relaunches it
//    from its last periodic checkpoint. On the same GPUs, a new plan (the
//    first of the decision's plan set the job's framework can express) is
//    taken when the running plan left the set or the new one is estimated
//    at least 5% faster (both from the set);
//  - a rejection: cancels what runs and fails the job with the reason.
// What it watches (Advance, every `poll_interval`): Slurm's view of its jobs
// (started, ended and how: the exit file its batch script writes), nodes
// (drained or down: jobs there checkpoint and move; back: capacity
// returns), the jobs' metrics files (step times into the store, progress,
// and the belief's correction of the running plan and of the job's GPU
// type), profiling runs (one per GPU type and pipeline-stage count before a
// job's first placement: the belief's per-depth factors), submissions and
// cancellations from the API (its inbox, the only thread-safe part).
// On start (Recover) it reconciles the store with what Slurm runs: adopts
// running `tessel-<id>` jobs, relaunches what vanished, cancels Slurm jobs
// tessel no longer wants, so there are never two Slurm jobs for one tessel
// job and never an orphan.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/slurm_client.h"
#include "cluster/store.h"
#include "hardware/cluster.h"
#include "policy/corrected_throughput.h"
#include "policy/policy.h"
#include "sched/backend.h"

namespace tessel {

struct SlurmBackendOptions {
  std::string state_dir;      // jobs/<id>/ (launch files, scripts, logs, metrics), checkpoints/<id>/
  std::string tessel_binary;  // what srun runs as `job-exec` (absolute)
  SimTime poll_interval = 1 * kMicrosPerSecond;
  SimTime stop_timeout = 120 * kMicrosPerSecond;  // after SIGUSR1, then cancel
  double checkpoint_interval_s = 60;             // the jobs' periodic checkpoints
  int max_failures = 3;                          // launches that fail on their own before the job fails
  int rendezvous_port_base = 29500;              // + (id * 16 + launch) % 10000
  std::string rendezvous_addr;                   // MASTER_ADDR; "": the first node's name
  std::string python_dir;                        // first on jobs' PYTHONPATH; "" = none (JobPythonDir())
};

// The daemon's cluster as Slurm shows it: one pool per (catalog GPU, GPUs
// per node), nodes ordered by name within a pool; `names[node id]` is the
// Slurm node name. `gpu_map`: gres type -> catalog GPU name; types not in it
// are looked up in the GPU catalog by their own name. InvalidArgument when
// no node has GPUs or a gres type matches no catalog GPU.
struct SlurmInventory {
  Cluster cluster;
  std::vector<std::string> names;       // by node id
  std::vector<std::string> gres_types;  // by node id
  std::vector<std::string> addrs;       // by node id (rendezvous address)
};
Result<SlurmInventory> DiscoverInventory(const std::vector<SlurmNode>& nodes,
                                         const std::map<std::string, std::string>& gpu_map);

// A node as `tessel nodes` shows it.
struct NodeStatus {
  std::string name;
  std::string gpu_type;   // catalog name
  std::string gres_type;  // Slurm's
  int gpus = 0;
  int gpus_used = 0;  // by anything, as Slurm counts them
  std::string state;  // Slurm's state, lower case (idle, mixed, allocated, drained, down, ...)
};

class SlurmBackend : public Backend {
 public:
  // All references must outlive the backend.
  SlurmBackend(SlurmClient& slurm, Store& store, const SlurmInventory& inventory, CorrectedThroughput& belief,
               const PolicyTraits& traits, SlurmBackendOptions options);
  ~SlurmBackend() override;

  // Loads every non-terminal job from the store and reconciles with Slurm
  // (see above). Call once, before the loop runs.
  Status Recover(SimTime now);

  // The API's inbox (thread-safe): a job the store now has, a cancellation
  // the store recorded. The loop sees them at its next step.
  void Submitted(int64_t id);
  void CancelRequested(int64_t id);

  SimTime NextEvent() const override;
  Result<BackendEvents> Advance(SimTime now) override;
  void Observe(SimTime now, Snapshot* snapshot) override;
  Status Apply(const Decision& decision, SimTime now) override;
  bool HasActiveJobs() const override;
  // Slurm's power saving (sched/autoscaler.h): nodes up or powering up;
  // powering up or down a node is `scontrol update State=POWER_UP|DOWN`,
  // down only for nodes where no job runs (tessel's or another's).
  int PoweredNodes() const override;
  Status PowerNodes(int target, SimTime now) override;
  bool Finished() const override { return false; }
  bool Quiescent() const override { return false; }
  std::string Outstanding() const override;
  int64_t events() const override;

  // For /metrics and `tessel nodes` (thread-safe copies, refreshed each poll).
  std::vector<NodeStatus> NodeStatuses() const;
  std::map<std::string, int64_t> GpusAllocatedByType() const;
  // Whether the last poll reached Slurm; when not, since when (the first
  // failed poll in a row) and its error. For /healthz and /metrics.
  struct SlurmReach {
    bool reachable = true;
    SimTime since = 0;
    std::string error;
  };
  SlurmReach SlurmReachability() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessel
