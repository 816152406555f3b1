// tessel's own policy, `arena` (SYSTEM.md idea 1; after Arena/Crius):
// scheduling co-designed with adaptive parallelism on a heterogeneous
// cluster.
//
// A job's *grids* are its candidate (GPU type, GPU count) shapes, each
// consolidated on the fewest nodes, each timed with the planner's best
// plan for that shape (the belief, PlanMode::kBest; answers are memoised
// across rounds and across jobs of the same model and batch by
// EstimatorThroughput). Every decision (rounds and events) re-plans the
// whole cluster:
//   value_j(grid) = w_j * rate_j(grid) / rate_j(reference) * T / (T + k * delay)
// where rate_j(reference) is the job's rate on its request (or its
// smallest grid that fits), w_j = (1 + age_j / aging) / T_ref_j favours
// short and old jobs (T_ref_j = its remaining time at the reference: the
// fluid SRPT weight), T is its remaining time on the grid and delay the
// restart a change costs (checkpoint save + load at storage_gbs per node,
// restart overhead, the pruned plan search; 0 for the current grid),
// weighted by k = restart_penalty (a change's cost is more than its own
// delay: the GPUs it takes idle meanwhile and changes come in cascades),
// so a change pays only when it gains clearly more than it costs. GPUs go
// by marginal value per GPU (policy/goodput_alloc.h: each job on one type,
// largest gain first), so a running job shrinks when its GPUs are worth
// more to a heavier job, jobs move to types where they gain most, grow and
// upgrade when GPUs free up, and GPUs left after the big jobs go to
// whichever job gains from them (backfill); a backfilled job yields when a
// later decision values its GPUs higher elsewhere. Grids are powers of two
// plus the request, so a few GPUs can stay idle. The option marginal=false
// serves jobs one by one in weight order instead (each its most valuable
// grid holding its request, shrunk if none fits).
//
// Explicit mechanisms on top of the re-plan:
//  - admission search (Arena's bounded shrink / type-change search): the
//    greedy allocation can leave a waiting job out that is worth more than
//    the last GPUs others took; up to admit_jobs such jobs are tried, each
//    admitted when at most admit_actions granted jobs shrinking to a smaller
//    grid or moving to a grid of another type make room at a net gain;
//  - defragmentation: a grant that does not fit on its fewest nodes may
//    migrate up to defrag_moves smaller single-node jobs elsewhere;
//  - placement packs jobs on the fewest nodes, keeping unchanged jobs where
//    they are, inside one rack when a rack can hold them;
//  - plan sets: each new allocation comes with its grid's Pareto set of
//    plans (time against memory, plan_set of them) for the executor.
//
// A new job is profiled before its first placement (policy/profiling.h):
// disaggregated by default (one GPU per type and stage count, 60 s each;
// one profile serves every batch of the model); profiling=direct profiles
// every grid instead, profiling=none skips it, so the two show what
// disaggregation saves.
//
// The restart estimate is the policy's own (its options below), not the
// backend's cost: it leaves out a first start's overhead and a suspended
// job's pending checkpoint save, and assumes 14 bytes per parameter.
//
// Parameters (options, all named): aging (seconds, default 86400),
// restart_penalty (3), restart_overhead (s, 10), storage_gbs (per node, 2),
// search_s_per_gpu (10) and search_cap (40) — the pruned search Arena's
// grids allow — admit_jobs (4), admit_actions (2), defrag_moves (2), repack
// (true), plan_set (4), profiling and profile_config_s (60), and the
// mechanism switches below.
//
// Ablations (registered names):
//   arena-no-elastic   each job keeps its requested GPU count;
//   arena-no-hetero    each job keeps its requested GPU type;
//   arena-dp           data-parallel plans only (as the baselines);
//   arena-no-backfill  a waiting job that cannot get its request blocks
//                      every waiting job after it (in arena's weight
//                      order); running jobs may still keep or shrink;
//   arena-full-search  restarts pay a full plan search (150 s per GPU, at
//                      most 600 s) instead of the grid-pruned one.
//
// Load-aware: a grid that must span racks is timed at the share of the
// rack uplinks it can expect given the multi-node jobs already running,
// each loading the links of its ring by its duty cycle (the flow-level
// network model's mean field, network/network_model.h; option network=false
// turns it off).
//
// Deadlines (arena-ddl, or option deadline=true): for a job with a
// deadline, risk = (time its fastest grid needs to finish, restart
// included) / (time left to the deadline), in (0, 1] while the deadline can
// still be met. Each grid that finishes by the deadline is valued
// 1 + deadline_weight * risk times higher (default weight 4), so a job
// close to missing its deadline outbids others for the GPUs that save it,
// and a job with ample slack competes as any other (keeping the JCT order).
// A job that can no longer meet its deadline is valued as one without.
// Unlike the artifact's crius-ddl, which only forbids allocations that
// miss the deadline and drops pending jobs past it, no job is dropped.
// Without the option, deadlines are ignored.
#pragma once

#include "policy/policy.h"

namespace tessel {

class PolicyRegistry;
void RegisterArenaPolicies(PolicyRegistry& registry);

}  // namespace tessel
