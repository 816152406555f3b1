// JSON views of library results for --json output (the CLI contract of
// README.md: field names are stable).
#pragma once

#include <nlohmann/json.hpp>

#include "perf/estimator.h"

namespace tessel {

nlohmann::json PlanToJson(const ParallelPlan& p);
nlohmann::json EstimateToJson(const Estimate& e);

}  // namespace tessel
