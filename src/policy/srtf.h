// Preemptive shortest-remaining-time-first (SRTF), the classic size-based
// baseline (Schrage 1968; the "shortest" schedule of the Tiresias authors'
// simulator, Gu et al., NSDI'19). At every decision, pending and running
// jobs are ordered by remaining time = remaining iterations x the belief's
// iteration time on the requested GPU count (of the requested type, or of the
// fastest type when the job names none), ties by job index; each gets its
// requested GPUs in that order, and running jobs that lose their place are
// suspended.
//
// Deviations: remaining time is the belief's estimate (the classic policy
// assumes it is known exactly); a job keeps the GPUs it holds while it stays
// among the winners, and a job displaced by a higher-priority one gets its
// old GPUs back when they end up unused (so nobody restarts in place); a job
// that cannot be placed does not block lower-priority jobs (work-conserving).

#pragma once

#include "policy/policy.h"

namespace tessel {

void RegisterSrtfPolicy(PolicyRegistry& registry);

}  // namespace tessel
