// Arena's admission search (policy/arena.h): after the marginal
// allocation, shrink and GPU-type-change actions that make room for a
// waiting job when admitting it is worth more than they cost.
#pragma once

#include <span>
#include <vector>

#include "policy/goodput_alloc.h"

namespace tessel {

// Arena's bounded search of shrink and GPU-type-change actions to admit
// a waiting job. The marginal allocation is greedy per GPU, so a waiting
// job whose smallest grid is larger than what is left can stay out even
// when admitting it is worth more than a few GPUs of the jobs that took
// them. For up to `admit_jobs` such jobs (most valuable first), every grid
// of the job is tried: its deficit on that type is covered by at most
// `admit_actions` granted jobs of the type, each taking its cheapest action
// (shrinking to a smaller grid, or moving to another type's grid that
// fits in the free GPUs there) in order of value lost per GPU freed. The
// best grid whose value exceeds the total loss wins and is applied. All
// values are the allocation's (restart delays included). Every grant must
// name its curve (GoodputGrant::curve); admitted jobs are appended to
// `grants`, donors' grants changed in place. Returns how many jobs it
// admitted.
int ArenaAdmit(std::span<const JobCurves> curves, const std::vector<int>& capacity, int admit_jobs, int admit_actions,
               std::vector<GoodputGrant>& grants);

}  // namespace tessel
