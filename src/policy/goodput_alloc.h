// The allocation step the goodput policies share: given each job's utility
// over (GPU type, GPU count), hand out GPUs by marginal utility per GPU, then
// place the chosen counts on nodes.
#pragma once

#include <functional>

#include <span>
#include <vector>

#include "policy/snapshot.h"

namespace tessel {

struct CurvePoint {
  int gpus = 0;
  double utility = 0;
};
// A job's utility on one GPU type, ascending GPU counts; points[0] is the
// utility of no GPUs (gpus = 0). Counts may skip values (invalid sizes).
struct TypeCurve {
  int type = 0;
  std::vector<CurvePoint> points;
};
struct JobCurves {
  const JobView* job = nullptr;
  std::vector<TypeCurve> types;
};
struct GoodputGrant {
  const JobView* job = nullptr;
  int type = -1;
  int gpus = 0;
  int max_nodes = 0;  // the most nodes it may span (0 = any): what it was priced at
  int curve = -1;     // index of the job's curves in the allocator's input (-1: not known)
};

// A job whose GPU count cannot change: no agent and min_gpus == max_gpus.
inline bool RigidJob(const JobView& job) {
  return job.agent == nullptr && job.spec->min_gpus == job.spec->max_gpus;
}

// The GPU counts a goodput policy considers for `job` under its own upper
// bound `cap`: exactly the request for a rigid job, else [max(1,
// min_gpus), cap] (hi < lo when nothing fits under cap).
struct GpuRange {
  int lo = 1;
  int hi = 0;
};
GpuRange GoodputGpuRange(const JobView& job, int cap);

// Maximises the sum of the jobs' utilities subject to `capacity` GPUs per
// type, each job on one type: starting from no GPUs, repeatedly takes the
// step (one job from its current count to a larger one on its type) with
// the largest utility gain per added GPU that still fits, until no step
// gains. A job's type is that of its first step (among equal gains, the
// type with the most free GPUs). Exact for concave curves of a single
// type; deterministic (ties: job order, then type order, then the larger
// step). Jobs that get nothing are omitted.
// Grants name their curves (GoodputGrant::curve).
std::vector<GoodputGrant> AllocateByMarginalUtility(std::span<const JobCurves> jobs, const std::vector<int>& capacity);
inline std::vector<GoodputGrant> AllocateByMarginalUtility(const std::vector<JobCurves>& jobs,
                                                           const std::vector<int>& capacity) {
  return AllocateByMarginalUtility(std::span<const JobCurves>(jobs), capacity);
}

// Improves `grants` (for `jobs`, within `capacity`) by single-job moves:
// each job in turn takes the point of any of its curves with the highest
// utility that fits in the GPUs left free plus those it holds on that type,
// when that beats its grant; sweeps repeat until none moves (at most
// `max_sweeps`). Every move raises the total, so it terminates. It mends the
// greedy's one blind spot that matters when GPUs are plentiful: a job's type
// is fixed by its first, smallest step, so a type whose small sizes are
// worth more per GPU wins even where another type's larger size is worth
// more outright. A job without a grant that gains one is appended; returns
// the number of moves.
int ImproveBySingleMoves(std::span<const JobCurves> jobs, const std::vector<int>& capacity,
                         std::vector<GoodputGrant>& grants, int max_sweeps = 8);

struct PlaceOptions {
  // When the first packing leaves a grant short, a second one places every
  // grant largest first, moving kept jobs wherever that fits more GPUs.
  bool repack = true;
  // Explicit defragmentation: a grant that does not fit on its node count
  // (max_nodes, else the fewest nodes that can hold it) may move up to this
  // many kept single-node jobs smaller than itself to other nodes of the
  // type to make room (jobs this decision places anyway move free). The
  // grant then takes the nodes it made room on, whatever the snapshot's
  // placement rule (defragmentation is a consolidating mechanism of its
  // own); the moved jobs are re-placed by the rule, on one node each.
  int defrag_moves = 0;
  // No two jobs spread over nodes share a node (FreeMap::AvoidSpreadSharing;
  // Pollux's interference avoidance). A grant that cannot be spread that
  // way gets fewer GPUs, as the Pollux artifact's repair drops replicas.
  // Defragmentation (defrag_moves) is not tried under it.
  bool avoid_spread_sharing = false;
  // What a job's allocation is worth to the policy on `gpus` GPUs of `type`
  // over `nodes` nodes, `moved` when it is not the job's current one (a
  // restart), or unset. When set, as the Pollux artifact's search scores an
  // allocation at the nodes it spans:
  //  - a grant the placement spreads over more nodes than the fewest that
  //    could hold it (the fragments between kept jobs) is weighed against
  //    the most GPUs, up to its count, that fit on that fewest count of
  //    nodes, and the better is placed;
  //  - when some grant is spread so, the fresh packing (every job re-placed,
  //    largest first) is tried too, and taken when it places as many GPUs
  //    and is worth more in total.
  using Price = std::function<double(const JobView& job, int type, int gpus, int nodes, bool moved)>;
  Price price;
};
struct PlaceStats {
  int migrations = 0;     // kept jobs moved by defragmentation
  bool repacked = false;  // the second packing won
};

// Turns grants into a Decision: every active job's allocation is released
// and re-placed; a job granted its current type and count keeps its exact
// GPUs; the others are placed largest first by FreeMap's rule (the
// snapshot's; consolidated by default) within their max_nodes (after
// defragmenting, if asked: that picks the grant's nodes itself), shrinking (not
// below the spec's min_gpus; rigid jobs not at all) when fragmentation
// leaves no room; then the repack (see PlaceOptions). Jobs without a grant
// are suspended.
Decision PlaceGrants(const Snapshot& snap, const std::vector<GoodputGrant>& grants,
                     const PlaceOptions& options = {}, PlaceStats* stats = nullptr);

}  // namespace tessel
