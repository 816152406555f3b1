// What profiling a new job costs before it can be scheduled (SYSTEM.md idea
// 1; Arena/Crius §profiling). A co-designed scheduler needs the job's speed
// on every grid it may choose, and measures it when the job arrives:
//  - disaggregated: one GPU per GPU type and per pipeline-stage count — a
//    single stage of the model on one GPU stands for every grid with that
//    many stages (Arena's disaggregated profiling);
//  - direct: every grid itself, a whole (type, GPU count, stages)
//    configuration at a time, as a scheduler without disaggregation must.
// Each configuration takes `per_config_s` (the Arena artifact's figure:
// 60 s). Direct profiles run one after another (each needs a whole
// configuration's GPUs); disaggregated ones run one GPU type at a time
// per type but all types at once (`parallel_types`; the artifact charges
// them one after another: 4 types x 4 stage counts x 60 s = 960 s). The
// job waits meanwhile; the profiling GPUs are not taken from the cluster.
// A backend keeps profiles per (model, global batch): later jobs of the
// same shape reuse them.
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "hardware/cluster.h"
#include "workload/job.h"

namespace tessel {

enum class ProfilingKind { kNone, kDisaggregated, kDirect };
Result<ProfilingKind> ParseProfilingKind(std::string_view s);  // none|disaggregated|direct
const char* ProfilingKindName(ProfilingKind k);

struct ProfilingModel {
  ProfilingKind kind = ProfilingKind::kNone;
  double per_config_s = 60;
  bool all_types = true;  // profile every GPU type (false: the requested one only)
  int max_stages = 8;     // stage counts profiled: 1, 2, 4, ... up to this (and the model's layers)
  bool parallel_types = true;  // disaggregated: GPU types profiled at the same time

  // The pipeline-stage counts a job's grids admit, ascending: 1, 2, 4, ...
  // up to max_stages, the model's `layers` and the `max_gpus` GPUs it may
  // hold. The simulator's cost (Configurations, Seconds) and the daemon's
  // profiling runs (one per GPU type and count) both use it.
  std::vector<int> StageCounts(int layers, int max_gpus) const;
  // StageCounts for `job` on cluster type `type`: its model's layers (1 when
  // the catalog does not know it) and the GPUs it may hold there (its
  // max_gpus or requested_gpus, at most the type's GPUs).
  std::vector<int> StageCountsFor(const JobSpec& job, const Cluster& cluster, int type) const;

  // Configurations profiled for `job` on `cluster`.
  int Configurations(const JobSpec& job, const Cluster& cluster) const;
  // Seconds until the job's profile is complete.
  double Seconds(const JobSpec& job, const Cluster& cluster) const;
};

}  // namespace tessel
