// Slurm hostlist expressions: "n[1-3,5]" -> n1 n2 n3 n5.
//
// Grammar (what Slurm prints in squeue/sinfo/scontrol): a comma-separated
// list of host terms, commas inside brackets belonging to the brackets. A
// term is literal text with zero or more bracket groups, each a
// comma-separated list of numbers or ranges "lo-hi"; several groups multiply
// out ("r[1-2]n[1-2]" -> r1n1 r1n2 r2n1 r2n2). A range keeps the zero padding
// of its low bound ("n[08-10]" -> n08 n09 n10).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tessel {

// The hosts of `expression` in order (duplicates kept). "" and "(null)" are
// empty lists. InvalidArgument, naming the expression and the position, for
// unbalanced brackets, a range whose low bound exceeds its high bound,
// non-numbers inside brackets, or more than kMaxHostlistSize hosts.
Result<std::vector<std::string>> ExpandHostlist(std::string_view expression);

inline constexpr size_t kMaxHostlistSize = 1'000'000;

}  // namespace tessel
