// `tessel serve`: the daemon on top of Slurm (server/daemon.h).
#include <CLI/CLI.hpp>
#include <csignal>
#include <pthread.h>

#include "cli/commands.h"
#include "core/strings.h"
#include "server/daemon.h"

namespace tessel {

CommandAction SetupServe(CLI::App& app, CommandIo io) {
  auto o = std::make_shared<DaemonOptions>();
  auto gpu_map = std::make_shared<std::vector<std::string>>();
  app.add_option("--listen", o->listen, "Address of the HTTP API (host:port; loopback by default)")
      ->capture_default_str();
  app.add_option("--tokens", o->tokens_file, "Bearer tokens: lines 'TOKEN USER [admin]' (required)")->required();
  app.add_option("--state-dir", o->state_dir,
                 "Where the daemon keeps its database (tessel.db), job files and default checkpoints")
      ->capture_default_str();
  app.add_option("--policy", o->policy, "Scheduling policy (tessel policies), with options name:key=value")
      ->capture_default_str();
  app.add_option("--round", o->round_s, "Seconds between scheduling rounds (policies that use rounds)")
      ->capture_default_str();
  app.add_option("--poll", o->poll_s, "Seconds between looks at Slurm's jobs and nodes")->capture_default_str();
  app.add_option("--stop-timeout", o->stop_timeout_s,
                 "Seconds a job asked to checkpoint and stop (SIGUSR1) may take before it is cancelled")
      ->capture_default_str();
  app.add_option("--checkpoint-interval", o->checkpoint_interval_s,
                 "Seconds between a job's own periodic checkpoints (TESSEL_CHECKPOINT_INTERVAL_S)")
      ->capture_default_str();
  app.add_option("--max-failures", o->max_failures,
                 "Launches that may fail on their own (not node loss) before a job fails")
      ->capture_default_str();
  app.add_option("--rendezvous-addr", o->rendezvous_addr,
                 "MASTER_ADDR handed to jobs (default: the name of the job's first node)");
  app.add_option("--autoscale", o->autoscale,
                 "Goodput-driven auto-scaling through Slurm's power saving (pollux): MIN:MAX[:LOW,HIGH] nodes "
                 "(the inventory's order). Each round the jobs' speedups over the powered GPUs enter a window; "
                 "outside [LOW, HIGH] (default 0.35,0.65) tessel powers nodes up or, where no job runs, down "
                 "(scontrol update State=POWER_UP|POWER_DOWN; Slurm's ResumeProgram and SuspendProgram do it). "
                 "See docs/daemon.md");
  app.add_option("--autoscale-window", o->autoscale_window,
                 "Rounds of utility --autoscale averages before it acts (default 15, as the Pollux artifact)")
      ->capture_default_str();
  app.add_option("--autoscale-by", o->autoscale_by,
                 "What --autoscale's utility counts: goodput (Pollux) or throughput (statistical efficiency not "
                 "counted: a throughput-based auto-scaler, for comparison)")
      ->capture_default_str();
  app.add_option("--gpu-map", *gpu_map,
                 "Slurm gres GPU type = catalog GPU, e.g. a100=a100-80g (repeat or comma-separate); "
                 "types not mapped are looked up by their own name")
      ->delimiter(',');
  return [o, gpu_map, io]() -> int {
    for (const std::string& m : *gpu_map) {
      auto eq = m.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == m.size()) {
        io.err << "error: --gpu-map " << m << ": expected GRES_TYPE=CATALOG_GPU (e.g. a100=a100-80g)\n";
        return 2;
      }
      o->gpu_map[m.substr(0, eq)] = m.substr(eq + 1);
    }
    const struct {
      const char* flag;
      double value, max;
    } seconds[] = {{"--round", o->round_s, 1e6},
                   {"--poll", o->poll_s, 3600},
                   {"--stop-timeout", o->stop_timeout_s, 1e6},
                   {"--checkpoint-interval", o->checkpoint_interval_s, 1e6}};
    for (const auto& s : seconds) {
      if (!(s.value > 0) || !(s.value <= s.max)) {
        io.err << "error: " << s.flag << " " << FormatDouble(s.value) << ": expected seconds in (0, "
               << FormatDouble(s.max) << "]\n";
        return 2;
      }
    }
    // Signals are taken by this thread only (sigwait), so the daemon's
    // threads run undisturbed and shutdown is orderly.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    auto daemon = Daemon::Start(*o);
    if (!daemon.ok()) {
      io.err << "tessel serve: " << daemon.status().message() << "\n";
      return daemon.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
    }
    io.err << "tessel serve: listening on " << (*daemon)->address() << ", policy " << o->policy << ", state in "
           << o->state_dir << "\n";
    io.err.flush();
    int sig = 0;
    sigwait(&set, &sig);
    io.err << "tessel serve: stopping (signal " << sig << "); running jobs stay in Slurm\n";
    (*daemon)->Stop();
    return 0;
  };
}

}  // namespace tessel
