#include "sim/engine.h"

#include <chrono>
#include <cstdio>

#include "sched/clock.h"
#include "sched/loop.h"

namespace tessel {

Simulator::Simulator(const Cluster& cluster, const Workload& workload, Policy& policy, ThroughputModel& belief,
                     ThroughputModel& truth, SimConfig config)
    : cluster_(cluster),
      workload_(workload),
      policy_(policy),
      belief_(belief),
      truth_(truth),
      config_(std::move(config)) {}

Simulator::~Simulator() = default;

Result<SimResult> Simulator::Run() {
  auto wall_start = std::chrono::steady_clock::now();
  SimBackend backend(cluster_, workload_, policy_, belief_, truth_, config_, apps_, event_log_);
  TESSEL_RETURN_IF_ERROR(backend.Init());
  // The trace's jobs are known before they arrive: the belief may answer
  // what the policy will ask of them in the background (answers unchanged).
  std::vector<RateQuery> likely;
  for (const JobSpec& job : workload_.jobs) {
    std::vector<RateQuery> asked = policy_.LikelyQuestions(job, cluster_);
    likely.insert(likely.end(), asked.begin(), asked.end());
  }
  belief_.Anticipate(likely);
  ManualClock clock;
  SchedulerLoop loop(policy_, backend, clock, LoopConfig{config_.round, config_.horizon});
  std::unique_ptr<Autoscaler> autoscaler;
  if (config_.autoscale.enabled()) {
    TESSEL_RETURN_IF_ERROR(CheckAutoscalePolicy(policy_));
    autoscaler = std::make_unique<Autoscaler>(config_.autoscale, cluster_);
    loop.set_autoscaler(autoscaler.get());
  }
  if (progress_) {
    int64_t since_progress = 0;
    loop.set_after_step([&](SimTime now) {
      if (++since_progress >= progress_every_) {
        since_progress = 0;
        progress_({now, backend.done_jobs(), backend.total_jobs()});
      }
    });
  }
  if (decision_log_ != nullptr) {
    loop.set_after_decision([this](SimTime now, bool at_round, size_t jobs, size_t changes, double wall_s) {
      char buf[160];
      std::snprintf(buf, sizeof buf, ",%.6f,%d,%zu,%zu,%.4f\n", ToSeconds(now), at_round ? 1 : 0, jobs, changes,
                    1e3 * wall_s);
      *decision_log_ << decision_log_policy_ << buf;
    });
  }
  TESSEL_RETURN_IF_ERROR(loop.Run());
  Result<SimResult> collected = backend.Collect(loop.now(), loop.decisions(), loop.timer_events());
  if (!collected.ok()) return collected.status();
  SimResult result = std::move(*collected);
  if (progress_) progress_({backend.EndTime(loop.now()), backend.done_jobs(), backend.total_jobs()});
  result.summary.placement = PlacementRuleName(config_.placement);
  const DurationHistogram& decide = loop.decision_times();
  result.summary.decision_p50_ms = 1e3 * decide.Quantile(0.5);
  result.summary.decision_p99_ms = 1e3 * decide.Quantile(0.99);
  result.summary.decision_max_ms = 1e3 * decide.max_s();
  result.summary.sim_wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace tessel
