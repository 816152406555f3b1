// The flags `tessel simulate` and `tessel compare` share, and turning them
// into a cluster, a workload, throughput models and a run.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/status.h"
#include "hardware/cluster.h"
#include "goodput/app_profile.h"
#include "sim/engine.h"
#include "workload/job.h"

namespace CLI {
class App;
}

namespace tessel {

struct SimFlags {
  std::string cluster = "demo";
  std::vector<std::string> traces;  // empty: the embedded synthetic workload
  std::string format = "auto";
  uint64_t seed = 1;
  std::string horizon;
  std::string round;  // "" = 300 s, or 60 s for workloads played from app profiles
  std::string truth = "estimator";
  std::string setting = "default";  // default | arena-artifact | ddl-paper
  double deadline_slack = -1;       // < 0: 1, or 5 under --setting arena-artifact
  std::string baseline_parallelism = "dp";
  std::string placement;  // "" = consolidate, or lwf-kappa:kappa=2 under ddl-paper
  std::string reference_gpu;
  std::string out;
  std::string event_log;
  std::string decision_log;
  std::string data;
  bool json = false;
  bool no_progress = false;
  size_t limit = 0;
  double time_scale = 1.0;
  int arena_iteration_divisor = 5;
  double node_mtbf_h = 0;
  double repair_h = 1;
  double checkpoint_interval_s = 1800;
  double storage_gbs = 2.0;
  std::string network = "flow";
  double contention_overhead = 0;
  double interference = 0;
  std::string autoscale;  // "" = the cluster's size is fixed
  double boot_delay_s = 0;
  int autoscale_window = 15;
  std::string autoscale_by = "goodput";  // --autoscale-by
  double restart_overhead_s = -1;  // < 0: 10 s, or 30 s for workloads played from app profiles
  double start_overhead_s = -1;    // < 0: 0 s, or 30 s likewise
  std::string apps;                // profile directory; "" = the workload's own
  bool no_apps = false;
  std::string scaling_rule = "adascale";

  void Add(CLI::App& app);
};

// What a run needs, resolved once and shared by every policy of a compare.
struct SimSetup {
  Cluster cluster;
  Workload workload;
  SimConfig config;
  std::vector<std::string> notes;  // importer notes, shown on stderr
  // Application profiles jobs are played from (the `apps` truth source);
  // null when the workload has none or --no-apps.
  std::shared_ptr<const goodput::AppCatalog> apps;
  // What jobs really run at ("estimator" or "arena-db"), after --setting.
  std::string truth = "estimator";
  // --setting arena-artifact: policies see the measured truth, and those
  // that do not search plans (the baselines) pass the artifact's
  // data-parallel memory check (sim/memory_gate.h).
  bool arena_artifact = false;
  // --setting ddl-paper: runs are played by Wang et al.'s shared-GPU
  // simulator (sim/ddl_paper.h).
  bool ddl_paper = false;
};

Result<SimSetup> ResolveSim(const SimFlags& flags);

// The exit code of a failed simulate/compare: 2 for the user's input
// (InvalidArgument, NotFound), 1 otherwise.
int ExitCode(const Status& s);

// Runs `policy_spec` on the setup. Progress goes to `err` when it is a
// terminal (stderr is a TTY) and the run is long.
Result<SimResult> RunPolicy(const SimSetup& setup, const SimFlags& flags, const std::string& policy_spec,
                            std::ostream& err);
// The same with a policy built elsewhere (a Python policy, src/python/),
// named `policy_spec` in the summary and the logs.
Result<SimResult> RunPolicy(const SimSetup& setup, const SimFlags& flags, Policy& policy, const std::string& policy_spec,
                            std::ostream& err);
// `tessel simulate`'s flags from an argument list (no program name), parsed
// as the command line parses them; InvalidArgument with CLI11's message.
Result<SimFlags> ParseSimFlags(const std::vector<std::string>& args);
// What a policy built for this run is built with (--baseline-parallelism, --seed).
PolicyContext MakePolicyContext(const SimFlags& flags);

}  // namespace tessel
