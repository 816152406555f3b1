// How the daemon starts a job's processes: the environment contract a job
// reads (examples/README.md documents it for job authors), the launch file
// `tessel job-exec` turns into an exec, and the batch script Slurm runs.
//
// No user input ever passes through a shell: the batch script holds only
// paths the daemon made (each quoted), srun runs `tessel job-exec FILE` on
// every task, and job-exec exec()s the job's argv from FILE with its
// environment and working directory.
//
// A job naming a framework (job spec `framework:`) also gets its plan as that
// framework's arguments, appended to its argv, and config file, written
// beside the launch file (cluster/framework_args.h; RenderLaunch).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "perf/parallel_plan.h"
#include "workload/job_framework.h"

namespace tessel {

// Exit code of a job that checkpointed and stopped because it was asked to
// (SIGUSR1): it will be relaunched, possibly elsewhere.
inline constexpr int kExitCheckpointed = 85;

struct LaunchSpec {
  int64_t job_id = 0;
  std::string job_name;
  int launch = 0;  // 0 for the first launch, +1 per relaunch
  std::string gpu_type;  // catalog name
  std::vector<std::pair<std::string, int>> nodes;  // node name, GPUs (= tasks) there
  ParallelPlan plan;
  int global_batch = 1;
  int64_t total_iterations = 0;
  std::string checkpoint_dir;
  double checkpoint_interval_s = 300;
  std::string metrics_file;
  std::string rendezvous_addr = "127.0.0.1";
  int rendezvous_port = 29500;
  std::vector<std::string> argv;  // argv[0] absolute
  std::string workdir;
  std::map<std::string, std::string> user_env;
  // Profiling (Arena's disaggregated profiles): one task, a few timed steps
  // of `profile_layers` layers at the plan's micro-batch.
  bool profile = false;
  int profile_steps = 5;
  int profile_layers = 0;
  // The framework whose arguments the job gets (kTessel: none) and the
  // model's layer count they may need (0 = unknown).
  JobFramework framework = JobFramework::kTessel;
  int model_layers = 0;
  // Put first on the job's PYTHONPATH, before any PYTHONPATH it has (its
  // spec's env, else inherited), so it can `import tessel_job`; "" = none.
  std::string python_dir;

  int tasks() const;
};

// The plan as one JSON object (TESSEL_PLAN_JSON): gpu_type, gpus, nodes
// (how many), placement ([{node, gpus}] in rank order), dp, tp, pp,
// micro_batch, num_micro_batches, global_batch, recompute, zero_stage,
// precision, virtual_stages.
std::string PlanJson(const LaunchSpec& spec);

// Every variable of the environment contract (TESSEL_*, MASTER_ADDR,
// MASTER_PORT) plus the spec's own; the contract's names win over a user's.
std::map<std::string, std::string> LaunchEnvironment(const LaunchSpec& spec);

// The launch file job-exec reads: {"argv": [...], "workdir": "...",
// "env": {...}} and, with a python_dir, "prepend": {"PYTHONPATH": dir}.
// spec.argv as it is (RenderLaunch adds a framework's arguments).
std::string LaunchFileJson(const LaunchSpec& spec);

// What one launch writes: the launch file's text (argv with the framework's
// arguments appended) and, for a framework that reads a config file, that
// file's path (FrameworkConfigPath beside `launch_path`) and text.
// InvalidArgument naming the framework and why when it cannot express
// spec.plan (cluster/framework_args.h).
struct LaunchFiles {
  std::string launch_text;
  std::string config_path;  // "" = none
  std::string config_text;
};
Result<LaunchFiles> RenderLaunch(const LaunchSpec& spec, const std::string& launch_path);

// The directory of tessel's job-side Python package (`tessel_job`): the
// daemon's $TESSEL_PYTHON_DIR when set and not empty, else the source
// tree's python/ as built (CMake's TESSEL_DEFAULT_PYTHON_DIR).
std::string JobPythonDir();

// `dir` first on a colon-separated path list whose value is `current`
// (nullptr or "" = unset): "dir" or "dir:current".
std::string PrependToPathList(const std::string& dir, const char* current);

// What job-exec does with a launch file, short of exec: the argv, working
// directory, environment additions and the path lists to prepend to once
// those are set (PrependToPathList). InvalidArgument naming `path` when the
// file is not what LaunchFileJson writes ("prepend" may be absent).
struct ExecRequest {
  std::vector<std::string> argv;
  std::string workdir;
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> prepend;
};
Result<ExecRequest> ParseLaunchFile(const std::string& text, const std::string& path);

// The batch script: runs `srun <srun_args> <tessel> job-exec <launch_file>`
// and writes srun's exit status to `exit_file` (atomically) so the daemon
// learns how the launch ended even after Slurm forgets the job.
std::string BatchScript(const std::string& tessel_binary, const std::vector<std::string>& srun_args,
                        const std::string& launch_file, const std::string& exit_file);

// Single-quotes `s` for /bin/sh (every byte literal).
std::string ShellQuote(const std::string& s);

}  // namespace tessel
