// A JobService for API and CLI tests: jobs in memory, every call recorded.
// It enforces what the real daemon must (service.h): a user sees and cancels
// only their own jobs (PermissionDenied), an admin everyone's; unknown ids
// are NotFound; cancelling a finished job is FailedPrecondition; a spec
// containing "invalid" is refused with two field errors and stores nothing.
// Thread-safe (the HTTP server calls it from its threads).
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "server/service.h"

namespace tessel::testing {

class FakeJobService : public JobService {
 public:
  // "Submit alice admin=0 file=jobs/a.yaml", "Jobs bob all=1", "Job alice 3", ...
  std::vector<std::string> Calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  // Adds a job directly (as if submitted earlier); returns its id.
  int64_t AddJob(JobDetail d) {
    std::lock_guard<std::mutex> lock(mu_);
    d.job.id = next_id_++;
    jobs_[d.job.id] = d;
    return d.job.id;
  }

  Result<int64_t> Submit(const Caller& caller, const std::string& spec_yaml, const std::string& file,
                         const std::string& base_dir) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back("Submit " + caller.user + " admin=" + (caller.admin ? "1" : "0") + " file=" + file +
                     " base_dir=" + base_dir);
    if (spec_yaml.find("invalid") != std::string::npos)
      return InvalidArgument(file + ":2: gpus: must be a positive integer, got 0\n" + file +
                             ":3: model: unknown model 'gpt-9'; known: gpt-1.7b, llama2-7b");
    JobDetail d;
    d.job.id = next_id_++;
    d.job.name = "job" + std::to_string(d.job.id);
    d.job.user = caller.user;
    d.job.state = "pending";
    d.job.submitted_us = 1714564803'000000;  // 2024-05-01T12:00:03Z
    d.job.reason = "submitted";
    d.spec_yaml = spec_yaml;
    d.history.push_back({d.job.submitted_us, "", "pending", "submitted"});
    jobs_[d.job.id] = d;
    submitted_specs_.push_back(spec_yaml);
    return d.job.id;
  }

  Result<std::vector<JobInfo>> Jobs(const Caller& caller, const JobsPage& page) override {
    std::lock_guard<std::mutex> lock(mu_);
    const bool all = page.all;
    std::string call = "Jobs " + caller.user + " all=" + (all ? "1" : "0");
    if (page.after != 0 || page.limit != kDefaultJobsPage)
      call += " after=" + std::to_string(page.after) + " limit=" + std::to_string(page.limit);
    calls_.push_back(call);
    std::vector<JobInfo> out;
    for (const auto& [id, d] : jobs_) {
      if (!caller.admin && d.job.user != caller.user) continue;
      if (!all && Terminal(d.job.state)) continue;
      if (id <= page.after) continue;
      if (static_cast<int>(out.size()) == page.limit) break;
      out.push_back(d.job);
    }
    return out;
  }

  Result<JobDetail> Job(const Caller& caller, int64_t id, int steps) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back("Job " + caller.user + " " + std::to_string(id));
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return NotFound("no job " + std::to_string(id));
    if (!caller.admin && it->second.job.user != caller.user)
      return PermissionDenied("job " + std::to_string(id) + " belongs to another user");
    JobDetail d = it->second;
    if (static_cast<int>(d.steps.size()) > steps) d.steps.erase(d.steps.begin(), d.steps.end() - steps);
    return d;
  }

  Status Cancel(const Caller& caller, int64_t id) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back("Cancel " + caller.user + " " + std::to_string(id));
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return NotFound("no job " + std::to_string(id));
    if (!caller.admin && it->second.job.user != caller.user)
      return PermissionDenied("job " + std::to_string(id) + " belongs to another user");
    if (Terminal(it->second.job.state))
      return FailedPrecondition("job " + std::to_string(id) + " is already " + it->second.job.state);
    it->second.job.state = "cancelled";
    return Status::Ok();
  }

  Result<std::vector<NodeInfo>> Nodes(const Caller& caller) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back("Nodes " + caller.user);
    if (nodes_unavailable) return Unavailable("slurm: sinfo failed: connection refused");
    return std::vector<NodeInfo>{{"node1", "a100-80g", "a100", 8, 6, "mixed"},
                                 {"node2", "h100-sxm", "h100", 4, 0, "idle"}};
  }

  ServiceMetrics Metrics() override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back("Metrics");
    ServiceMetrics m;
    m.queue_length = 2;
    m.jobs_by_state = {{"pending", 2}, {"running", 1}, {"weird\"state\\x\n", 0}};
    m.gpus_allocated_by_type = {{"a100-80g", 6}};
    m.decisions = 4;
    m.decision_seconds_sum = 0.25;
    m.last_decision_seconds = 0.0625;
    m.restarts = 1;
    m.failures = 0;
    m.slurm = health;
    return m;
  }

  // Two types, three samples; `history_unavailable` makes it fail.
  Result<ClusterHistoryInfo> ClusterHistory(const Caller& caller) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back("ClusterHistory " + caller.user);
    if (nodes_unavailable) return Unavailable("slurm: sinfo failed: connection refused");
    ClusterHistoryInfo h;
    h.gpu_types = {"a100-80g", "h100-sxm"};
    h.gpus = {8, 4};
    h.interval_s = 10;
    h.samples = {{1714564800'000000, {0, 0}}, {1714564810'000000, {6, 0}}, {1714564815'000000, {6, 4}}};
    return h;
  }

  ServiceHealth Health() override { return health; }
  ServiceHealth health;  // what Health() reports

  std::vector<std::string> SubmittedSpecs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_specs_;
  }

  std::atomic<bool> nodes_unavailable{false};

 private:
  static bool Terminal(const std::string& s) { return s == "completed" || s == "failed" || s == "cancelled"; }

  mutable std::mutex mu_;
  std::vector<std::string> calls_;
  std::vector<std::string> submitted_specs_;
  std::map<int64_t, JobDetail> jobs_;
  int64_t next_id_ = 1;
};

}  // namespace tessel::testing
