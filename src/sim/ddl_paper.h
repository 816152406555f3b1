// `--setting ddl-paper`: a workload of profiled models (model/profiled_model.h)
// on a cluster, played by Wang et al.'s shared-GPU simulator
// (sim/shared_gpu_sim.h) under one of their schedulers, with the results
// as every other run reports them (SimResult).
//
// The schedulers are tessel's SRSF family, read as the paper runs them:
//   srsf-avoid    SRSF(1): a transfer starts only on nodes with none;
//   srsf-accept   SRSF(2): it starts beside at most one other;
//   ada-srsf      Ada-SRSF: beside one other only when AdaDUAL says so
//                 (`paper_rest_size=true`: with their code's remaining size).
// Every one orders the queue by total GPU time and each GPU's tasks by
// remaining GPU compute. Placement: first-fit, or lwf-kappa:kappa=N with N
// their threshold on a job's workers (the default, N = 2, as the paper's
// communication experiments run).
#pragma once

#include <string>

#include "core/status.h"
#include "hardware/cluster.h"
#include "policy/placement_rule.h"
#include "policy/policy.h"
#include "sim/config.h"
#include "sim/sim_backend.h"
#include "sim/shared_gpu_sim.h"
#include "workload/job.h"

namespace tessel {

inline constexpr char kDdlPaperSetting[] = "ddl-paper";

// The simulator's configuration for `policy` and `placement` on `cluster`:
// InvalidArgument naming what is accepted for a policy the paper has no
// counterpart of, consolidating placement, or a cluster of several GPU
// types or node sizes. The k-way law was measured on 10 GbE; other NIC
// speeds scale β and η by 10 / Gb/s.
Result<SharedGpuConfig> DdlPaperConfig(const Cluster& cluster, const Policy& policy, const PlacementRule& placement,
                                       SimTime horizon);

// Runs `workload` (every job of a profiled model, a whole number of
// iterations; InvalidArgument naming the job otherwise). Jobs that can
// never run (more workers than GPUs) are rejected with their reason.
Result<SimResult> RunDdlPaper(const Cluster& cluster, const Workload& workload, const SharedGpuConfig& config,
                              const SimConfig& sim_config, const std::string& policy_spec);

}  // namespace tessel
