// What a simulation run is configured with, beyond cluster, workload and
// policy: round length, horizon, reconfiguration costs, failures, the
// placement rule.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/sim_time.h"
#include "goodput/goodput.h"
#include "policy/placement_rule.h"
#include "sched/autoscaler.h"

namespace tessel {

// What changing a job's allocation costs (SYSTEM.md idea 1: a restart is
// checkpoint save + load + the parallelism search). During it the job holds
// its new GPUs and makes no progress.
struct ReconfigCost {
  // Checkpoint size per parameter: 16-bit weights + fp32 master weights and
  // two Adam moments = 2 + 12 bytes (fp32 training: 4 + 8).
  double checkpoint_bytes_per_param_mixed = 14;
  double checkpoint_bytes_per_param_fp32 = 12;
  // Storage bandwidth each node of the job reads/writes at, GB/s.
  double storage_gbs_per_node = 2.0;
  // Process launch, NCCL communicator set-up, data-loader warm-up.
  double restart_overhead_s = 10;
  // The same on a job's first start (0: a fresh job's launch is not
  // counted; the Pollux artifact charges 30 s on every allocation).
  double start_overhead_s = 0;
  // Plan search on a restart, for policies that search plans: per GPU of
  // the new allocation, capped (Arena's pruned search: 10 s per GPU, at
  // most 40 s; a full Alpa-style search is 150 s per GPU, at most 600 s).
  double search_s_per_gpu = 10;
  double search_cap_s = 40;
  double full_search_s_per_gpu = 150;
  double full_search_cap_s = 600;
  // The Arena artifact's accounting (--setting arena-artifact): policies
  // that do not search plans (the baselines) pay the full search on every
  // allocation, their first included, and checkpoints cost nothing
  // (CKPT_RESUME_OVERHEAD = 0 there).
  bool baselines_pay_full_search = false;
  bool checkpoints = true;
  // > 0: the Arena artifact's time debt, in rounds of this many seconds
  // (sjtu-epcc/arena scheduler.py:376-410 and 669-672): a delay of at most
  // one round costs no progress (only that round's throughput figure); a
  // longer one skips the progress of the rounds past the first it spans,
  // ceil(delay / round) - 1 of them. 0: delays are waited out as they are.
  double debt_round_s = 0;
};

struct FailureModel {
  double node_mtbf_s = 0;       // mean time between failures per node; 0 = none
  double repair_s = 3600;       // a failed node returns after this long
  double checkpoint_interval_s = 1800;  // running jobs checkpoint this often
  // Failures at given instants, beside the random ones: (time, node id).
  // A node already down at its instant is not failed again.
  std::vector<std::pair<SimTime, int>> at;
};

// The flow-level network model (network/network_model.h): the truth for jobs
// spread over nodes.
struct NetworkConfig {
  bool enabled = true;  // off: multi-node jobs run at their rate alone
  // Wang et al.'s contention overhead eta/beta (FlowNetwork): 0 = pure
  // max-min sharing; their 10 GbE measurement is 0.235/0.856 = 0.2745.
  double contention_overhead = 0;
};

struct SimConfig {
  SimTime round = Seconds(300);   // scheduling round
  // A job whose work is done mid-round ends (frees its GPUs, and its JCT
  // ends) at the next round boundary (multiples of `round` from t = 0), as
  // the Arena artifact's simulator, which advances jobs a round at a time
  // and ends them at the round's end (sjtu-epcc/arena scheduler.py:433-435,
  // 658-694): --setting arena-artifact.
  bool complete_at_rounds = false;
  SimTime horizon = kNever;       // stop here; unfinished jobs are reported
  uint64_t seed = 1;
  ReconfigCost reconfig;
  FailureModel failures;
  // GPU type whose speed a trace's durations refer to, when a job names
  // none ("" = the cluster's type with the most GPUs, first on ties).
  std::string reference_gpu;
  // Learning-rate scaling rule of jobs with a goodput agent.
  goodput::ScalingRule scaling_rule = goodput::ScalingRule::kAdaScale;
  NetworkConfig network;
  // How policies place jobs on nodes (every policy placing through FreeMap).
  PlacementRule placement;
  // Interference between distributed jobs (the Pollux artifact's model,
  // simulator/simulator.py Cluster.step): a job spread over several nodes,
  // on a node where another job spread over several nodes also runs, makes
  // progress this fraction slower (its goodput times 1 - interference).
  // 0: none. In [0, 1).
  double interference = 0;
  // Goodput-driven cluster auto-scaling (sched/autoscaler.h): the cluster
  // starts with its first min_nodes nodes powered and the policy's rounds
  // move the count within [min_nodes, max_nodes]; off when max_nodes is 0.
  AutoscaleConfig autoscale;
};

}  // namespace tessel
