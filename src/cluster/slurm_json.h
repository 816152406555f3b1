// Reading Slurm 22.05's JSON listings (`sinfo --json`, `squeue --json`, the
// openapi/v0.0.38 data format) and its GRES strings into slurm_types.h
// values. The fields relied on are listed in slurm_client.h.
//
// Errors: a listing whose "errors" array is not empty is Unavailable (22.05
// exits 0 with errors there and an empty list when slurmctld cannot be
// reached); output that is not JSON, or lacks a field or has it with another
// type, is Internal, naming the command, the element and the field.
#pragma once

#include <string_view>
#include <vector>

#include "cluster/slurm_types.h"
#include "core/status.h"

namespace tessel {

// Nodes of `sinfo --json`, each once, in Slurm's order.
Result<std::vector<SlurmNode>> ParseSinfoJson(std::string_view text);

// Jobs of `squeue --json` (pending, running and recently finished ones), in
// Slurm's order; the components of a heterogeneous job merged into one job
// (see SlurmJob::components).
Result<std::vector<SlurmJob>> ParseSqueueJson(std::string_view text);

// GPUs per type from a node's GRES strings: `configured` like
// "gpu:a100:2,mps:100" or "gpu:a100:2(S:0-1)", `used` like
// "gpu:a100:1(IDX:0),gpu:v100:0(IDX:N/A)". Other GRES are ignored; "",
// "(null)" and "N/A" mean none. `where` prefixes error messages.
Result<std::vector<SlurmGpus>> ParseGpuGres(std::string_view configured, std::string_view used,
                                            std::string_view where);

}  // namespace tessel
