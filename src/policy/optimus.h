// Optimus (Peng et al., EuroSys'18) with oracle throughput, as the Pollux
// paper's baseline "Optimus+Oracle" (Pollux §5.2): every round, GPUs go to
// the jobs whose estimated remaining time falls most per added GPU, each
// job at its own (fixed) batch size. Remaining time = remaining work /
// throughput on the allocation, from the job's measured model
// (GoodputOracle, Pollux's type-blind view) or the belief for jobs without
// an agent; the work is known exactly (the oracle part).
//
// Deviations: Optimus fitted its own speed model online; here it reads the
// same measured model Pollux does. Placement packs like the other goodput
// policies (policy/goodput_alloc.h). Options: max_gpus (default 64).
#pragma once

#include "policy/policy.h"

namespace tessel {

class PolicyRegistry;
void RegisterOptimusPolicy(PolicyRegistry& registry);

}  // namespace tessel
