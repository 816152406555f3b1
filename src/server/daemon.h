// `tessel serve`: the daemon. It owns the store (cluster/store.h), the
// Slurm backend (cluster/slurm_backend.h) driven by the scheduling loop
// (sched/loop.h) on the system clock in its own thread, the policy, the
// belief corrected by measurement, and the HTTP API (server/http_server.h),
// whose requests reach it as a JobService.
//
// A submission is validated, then stored durably, then acknowledged, then
// handed to the loop (which wakes at once): once `tessel submit` printed an
// id, the job survives a SIGKILL of the daemon. A cancellation is stored
// before Slurm is told, so a restart finishes it. The loop thread is the
// only one that touches the backend; API threads read the store.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "core/status.h"
#include "server/service.h"

namespace tessel {

struct DaemonOptions {
  std::string listen = "127.0.0.1:8642";
  std::string tokens_file;  // required
  std::string state_dir = "tessel-state";
  std::string policy = "arena";
  double round_s = 300;
  double poll_s = 1;
  double stop_timeout_s = 120;
  double checkpoint_interval_s = 60;
  int max_failures = 3;
  std::map<std::string, std::string> gpu_map;  // gres type -> catalog GPU
  std::string tessel_binary;  // default: this executable
  std::string rendezvous_addr;  // MASTER_ADDR for jobs; "": the job's first node
  // Goodput-driven auto-scaling through Slurm's power saving
  // (sched/autoscaler.h): "MIN:MAX[:LOW,HIGH]" nodes, "" = off; the window
  // in rounds.
  std::string autoscale;
  int autoscale_window = 15;
  std::string autoscale_by = "goodput";  // or "throughput"
};

class Daemon : public JobService {
 public:
  // Opens the store under state_dir, discovers the cluster from Slurm,
  // reconciles with what Slurm runs, starts the loop thread and the API.
  static Result<std::unique_ptr<Daemon>> Start(const DaemonOptions& options);
  ~Daemon() override;

  // Stops the API and the loop (jobs keep running in Slurm; a restart
  // adopts them). Idempotent.
  void Stop();
  // The address the API listens on (host:port, the port resolved).
  std::string address() const;

  Result<int64_t> Submit(const Caller& caller, const std::string& spec_yaml, const std::string& file,
                         const std::string& base_dir) override;
  Result<std::vector<JobInfo>> Jobs(const Caller& caller, const JobsPage& page) override;
  Result<JobDetail> Job(const Caller& caller, int64_t id, int steps) override;
  Status Cancel(const Caller& caller, int64_t id) override;
  Result<std::vector<NodeInfo>> Nodes(const Caller& caller) override;
  ServiceMetrics Metrics() override;
  Result<ClusterHistoryInfo> ClusterHistory(const Caller& caller) override;
  ServiceHealth Health() override;

 private:
  struct Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessel
