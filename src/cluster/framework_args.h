// A job's parallel plan in a training framework's own terms: Megatron-LM's
// command-line arguments, torchtitan's TOML job config, DeepSpeed's JSON
// config. The daemon appends the arguments to the job's argv and writes the
// config file beside the launch file (cluster/launch.h RenderLaunch); the
// TESSEL_* environment is set as for every job.
//
// Every argument and key name was checked against the framework's own
// source; the comments in framework_args.cc and docs/frameworks.md name the
// file and the version for each. A plan a framework cannot express is
// refused with the reason (InvalidArgument), never rendered approximately.
//
// A data-parallel degree of 1 has nothing to shard: the plan's ZeRO stage is
// then rendered as no sharding and never refused.
//
// Pure functions of their inputs; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "perf/parallel_plan.h"
#include "workload/job_framework.h"

namespace tessel {

struct FrameworkInputs {
  ParallelPlan plan;
  int model_layers = 0;          // transformer layers; 0 = unknown
  int64_t total_iterations = 0;  // optimizer steps over the whole run
  std::string checkpoint_dir;    // absolute; "" = none
};

struct FrameworkArgs {
  std::vector<std::string> argv;  // appended to the job's argv
  std::string config_text;        // the config file to write at config_path; "" = none
};

// OK when `framework` can express `plan` for a model of `model_layers`
// layers (0 = unknown); else InvalidArgument: "<framework> cannot express
// plan <plan>: <why> ...". kTessel expresses every plan.
Status CheckFrameworkPlan(JobFramework framework, const ParallelPlan& plan, int model_layers);

// The plan as `framework`'s arguments and config file. `config_path` is
// where the caller will write config_text (the arguments name it); ignored
// by frameworks without a file. The global batch rendered is the plan's,
// dp x micro_batch x num_micro_batches. kTessel: nothing. InvalidArgument
// as CheckFrameworkPlan.
Result<FrameworkArgs> RenderFrameworkArgs(JobFramework framework, const FrameworkInputs& in,
                                          const std::string& config_path);

// Where a launch's config file goes: beside `launch_path`, named after it
// ("dir/launch.3.json" -> "dir/launch.3.torchtitan.toml",
// "dir/launch.3.deepspeed.json"); "" for frameworks without a file.
std::string FrameworkConfigPath(JobFramework framework, const std::string& launch_path);

}  // namespace tessel
