// The parallelism planner (adaptive parallelism, SYSTEM.md idea 1): for a
// model, GPU type, GPU count, node size and global batch, enumerate valid
// plans, estimate each, keep those that fit, rank by throughput.
//
// Two searches:
//  - full: every (t, p, d, micro-batch, interleaving, recompute, ZeRO, ep).
//  - grid: Arena's Cell. GPU type, count, layout and p are fixed; only the
//    d x t shape and the micro-batching (size, count, at most two
//    interleaving depths, recompute, optimizer sharding) are searched, with
//    MoE expert parallelism fixed at its widest; the grid's Pareto set
//    (throughput vs memory) of at most K plans is kept.
// Deterministic: ties break on a fixed order of plan fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "perf/estimator.h"

namespace tessel {

enum class SearchMode { kFull, kGrid };
Result<SearchMode> ParseSearchMode(std::string_view s);

struct PlanRequest {
  const ModelSpec* model = nullptr;
  Topology topology;
  int gpus = 1;
  int global_batch = 1;
  Precision precision = Precision::kBf16;
  SearchMode mode = SearchMode::kFull;
  int pp = 0;     // grid: required; full: 0 = search, > 0 = fix p
  int top_k = 5;  // plans to return (grid: Pareto set capped at top_k)
  // Optional constraints (0 / nullopt = searched): used to complete a
  // partly known plan, e.g. a published run that states t and p only.
  int tp = 0;
  int dp = 0;
  int micro_batch = 0;
  int num_micro_batches = 0;  // with micro_batch unknown: fixes M
  int virtual_stages = 0;
  std::optional<Recompute> recompute;
  int max_zero = 3;
  int zero = -1;  // >= 0: only this ZeRO stage (a stated plan)
  const FrameworkProfile* framework = nullptr;  // nullptr = default
  // Per-layer costs kept across searches (EstimateMemo); nullptr: the
  // search keeps its own. The result is the same either way.
  EstimateMemo* memo = nullptr;
};

struct PlanResult {
  std::vector<Estimate> plans;  // best first; all fit
  int64_t candidates_evaluated = 0;
  double search_time_ms = 0;
  std::string reason;  // why nothing fits, when plans is empty
};

// InvalidArgument for requests no plan could satisfy by construction
// (e.g. --search grid without --pp, p larger than the GPU count).
Result<PlanResult> SearchPlans(const Estimator& estimator, const PlanRequest& req);

}  // namespace tessel
