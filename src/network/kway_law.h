// The k-way contention law Wang et al. measured on 10 GbE ("Communication
// Contention Aware Scheduling of Multiple Deep Learning Training Jobs",
// ICDCS 2020, §III; HKBU-HPML/dl-scheduling d5398bd, online/cluster.py
// node.net_conf and online/job.py dag_task.update_comm_time): k all-reduces
// crossing one node each move at 1 / (kβ + (k − 1)η) MB per ms, with
// β = 0.856 ms/MB (one transfer alone) and η = 0.235 ms/MB (the loss each
// extra transfer adds). A transfer spanning several nodes moves at the rate
// of its busiest node.
//
// It is the network of `--setting ddl-paper` (sim/shared_gpu_sim.h) only;
// everywhere else the simulator shares links max-min (network/flow_network.h)
// and takes the same loss as --contention-overhead η/β.
#pragma once

namespace tessel {

struct KWayLaw {
  double beta_ms_per_mb = 0.856;
  double eta_ms_per_mb = 0.235;

  // MB per ms of each of `k` >= 1 transfers sharing a node, evaluated as
  // their code does (the same double operations, in the same order).
  double RateMbPerMs(int k) const {
    return 1 / (static_cast<double>(k - 1) * eta_ms_per_mb + beta_ms_per_mb * static_cast<double>(k));
  }
  // AdaDUAL's threshold (their is_all_nodes_free): a transfer joins one
  // already on its nodes only when the other's remaining size is at least
  // 2(β + η)/β times its own.
  double AdaDualRatio() const { return (2 * (beta_ms_per_mb + eta_ms_per_mb)) / beta_ms_per_mb; }
};

}  // namespace tessel
