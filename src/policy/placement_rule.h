// The placement rule: how FreeMap (policy/placement.h) chooses the GPUs of a
// job once a policy has decided its GPU type and count. It travels in the
// Snapshot, so every policy that places through FreeMap follows it; the
// simulator takes it from --placement, the daemon keeps the default.
//   consolidate        best fit on one node, else the fewest nodes (default)
//   first-fit          free GPUs from nodes in ascending id order
//   lwf-kappa[:kappa=N]  least-loaded GPUs first, spread over at most κ
//                      nodes (Wang et al., arXiv 2002.10105; κ = 2)
// FreeMap's header states each rule's semantics exactly.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace tessel {

struct PlacementRule {
  enum class Kind { kConsolidate, kFirstFit, kLwfKappa };
  Kind kind = Kind::kConsolidate;
  // lwf-kappa only: the most nodes a least-loaded-first placement may
  // spread a job over (>= 1).
  int kappa = 2;

  bool operator==(const PlacementRule&) const = default;
};

// "consolidate", "first-fit", "lwf-kappa" or "lwf-kappa:kappa=N" (N >= 1;
// names case-insensitive). InvalidArgument naming what is accepted.
Result<PlacementRule> ParsePlacementRule(std::string_view text);

// The rule as ParsePlacementRule reads it back: "consolidate", "first-fit",
// "lwf-kappa:kappa=2".
std::string PlacementRuleName(const PlacementRule& rule);

}  // namespace tessel
