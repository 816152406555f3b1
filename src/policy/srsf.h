// Shortest-remaining-service-first with communication scheduling (Wang,
// Shi, Wang, Chu, "Communication Contention Aware Scheduling of Multiple
// Deep Learning Training Jobs", arXiv 2002.10105, 2020):
//   ada-srsf      waiting jobs in order of remaining service (remaining
//                 iterations x the belief's iteration time x GPUs); a
//                 multi-node job's transfer that finds another job's
//                 transfer on its links starts at once only when AdaDUAL
//                 says that finishes both sooner (two-way contention at
//                 most), else it waits for the links;
//   srsf-avoid    the same order, transfers never overlap ("SRSF(1)");
//   srsf-accept   the same order, transfers always start at once and share
//                 the links max-min ("SRSF(2)").
// The backend plays the transfers (PolicyTraits::comm_schedule,
// network/network_model.h); the policy orders and places jobs.
//
// Deviations: the paper's GPUs are shared (a job's tasks queue on the GPUs
// LWF-κ gave it and each GPU runs its shortest-remaining-service task
// first); tessel's GPUs are exclusive, so a job waits until its GPUs are
// free, in remaining-service order, and never blocks a later job that fits
// (work-conserving); running jobs are not preempted (the paper's jobs are
// not either). Placement follows the run's placement rule (the paper uses
// LWF-κ; pass --placement lwf-kappa).
#pragma once

#include "policy/policy.h"

namespace tessel {

void RegisterSrsfPolicies(PolicyRegistry& registry);

}  // namespace tessel
