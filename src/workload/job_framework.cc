#include "workload/job_framework.h"

namespace tessel {

const char* JobFrameworkName(JobFramework f) {
  switch (f) {
    case JobFramework::kTessel: return "tessel";
    case JobFramework::kMegatron: return "megatron";
    case JobFramework::kTorchtitan: return "torchtitan";
    case JobFramework::kDeepspeed: return "deepspeed";
  }
  return "?";
}

const std::vector<std::string>& SpecFrameworkNames() {
  static const std::vector<std::string> kNames = {"megatron", "torchtitan", "deepspeed"};
  return kNames;
}

std::optional<JobFramework> FindSpecFramework(std::string_view name) {
  for (JobFramework f : {JobFramework::kMegatron, JobFramework::kTorchtitan, JobFramework::kDeepspeed}) {
    if (name == JobFrameworkName(f)) return f;
  }
  return std::nullopt;
}

}  // namespace tessel
