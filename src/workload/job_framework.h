// The training framework a job spec names (`framework:`): how the daemon
// hands a launched job its parallel plan. kTessel, the default, is tessel's
// own environment contract (TESSEL_* variables) alone; the others also get
// the plan as that framework's own arguments or configuration file
// (cluster/framework_args.h renders them; docs/frameworks.md lists them).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessel {

enum class JobFramework { kTessel, kMegatron, kTorchtitan, kDeepspeed };

// "tessel", "megatron", "torchtitan", "deepspeed".
const char* JobFrameworkName(JobFramework f);

// The names a job spec may give: megatron, torchtitan, deepspeed (tessel
// is what leaving the field out means).
const std::vector<std::string>& SpecFrameworkNames();

// The framework of one of SpecFrameworkNames() (exact, lower case); nullopt
// for anything else, "tessel" included.
std::optional<JobFramework> FindSpecFramework(std::string_view name);

}  // namespace tessel
