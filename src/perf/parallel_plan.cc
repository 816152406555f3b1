#include "perf/parallel_plan.h"

#include <string>

namespace tessel {

const char* RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

Result<Recompute> ParseRecompute(std::string_view s) {
  if (s == "none" || s == "off") return Recompute::kNone;
  if (s == "selective") return Recompute::kSelective;
  if (s == "full") return Recompute::kFull;
  return InvalidArgument("--recompute: unknown mode '" + std::string(s) +
                         "'; known: none, selective, full");
}

std::string ParallelPlan::ToString() const {
  std::string s = "d" + std::to_string(dp) + " t" + std::to_string(tp) + " p" + std::to_string(pp);
  if (virtual_stages > 1) s += " v" + std::to_string(virtual_stages);
  if (ep > 1) s += " e" + std::to_string(ep);
  s += " mb" + std::to_string(micro_batch) + "x" + std::to_string(num_micro_batches);
  s += std::string(" rc=") + RecomputeName(recompute) + " z" + std::to_string(zero) + " " +
       PrecisionName(precision);
  return s;
}

}  // namespace tessel
