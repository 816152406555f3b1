// First-come first-served, the classic baseline: jobs start in submit order
// on exactly what they asked for (GPU count, and type when named), placed
// by the snapshot's placement rule (consolidated by default); nothing is
// ever preempted, grown or shrunk.
//
// Backfill (option backfill=):
//  - none (default): strict FIFO; the head job blocks everything behind it.
//  - first-fit: any later job that fits now starts (head may starve).
//  - easy: EASY backfilling (Lifka 1995): the head job gets a reservation at
//    the earliest time enough GPUs of its type free up (by the belief's
//    estimate of running jobs' remaining time); a later job may start now
//    only if it fits and either ends before that reservation or uses GPUs
//    the head job will not need.
// Blocking (option block=): all (default) as above; type: a job that cannot
// start holds up only the later jobs that could use one of its GPU types,
// others may start (the Arena artifact's FCFS, sjtu-epcc/arena ae-eurosys
// baselines/fcfs_sched.py:153-187, and the default under --setting
// arena-artifact). Only with backfill=none.
//
// Deviations: a job that names no GPU type goes to the fastest type (by the
// belief) with room, the reservation is per GPU type and ignores node
// boundaries.
#pragma once

#include "policy/policy.h"

namespace tessel {

void RegisterFcfsPolicy(PolicyRegistry& registry);

}  // namespace tessel
