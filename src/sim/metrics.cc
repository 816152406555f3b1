#include "sim/metrics.h"

#include <algorithm>

#include "core/stats.h"

namespace tessel {

const char* JobOutcomeName(JobOutcome o) {
  switch (o) {
    case JobOutcome::kFinished: return "finished";
    case JobOutcome::kRunning: return "running";
    case JobOutcome::kPending: return "pending";
    case JobOutcome::kRejected: return "rejected";
  }
  return "?";
}

JobRecord RecordOf(const JobSpec& spec) {
  JobRecord rec;
  rec.id = spec.id;
  rec.user = spec.user;
  rec.model = spec.model;
  rec.requested_gpus = spec.requested_gpus;
  rec.requested_gpu_type = spec.requested_gpu_type;
  rec.submit = spec.submit;
  rec.deadline = spec.deadline;
  return rec;
}

void Summarize(const std::vector<JobRecord>& jobs, const std::vector<TimelinePoint>& timeline, int total_gpus,
               SimTime end, Summary* s) {
  s->total_gpus = total_gpus;
  s->jobs_total = static_cast<int>(jobs.size());
  std::vector<double> jct, queueing, ftf;
  SimTime first_submit = kNever;
  double jct_sum = 0, queue_sum = 0, ftf_sum = 0;
  double tardiness_sum = 0;
  int deadline_finished = 0;
  for (const JobRecord& j : jobs) {
    if (j.deadline) {
      ++s->deadline_jobs;
      if (j.DeadlineMet()) ++s->deadline_met;
      if (j.outcome == JobOutcome::kFinished) {
        ++deadline_finished;
        tardiness_sum += std::max(0.0, ToSeconds(j.finish - *j.deadline));
      }
    }
    s->restarts += j.restarts;
    s->preemptions += j.preemptions;
    s->failures += j.failures;
    switch (j.outcome) {
      case JobOutcome::kFinished: {
        ++s->jobs_finished;
        double t = j.jct_s();
        jct.push_back(t);
        jct_sum += t;
        queueing.push_back(j.queueing_s);
        queue_sum += j.queueing_s;
        if (j.isolated_s > 0) {
          double f = t / j.isolated_s;
          ftf.push_back(f);
          ftf_sum += f;
          s->max_ftf = std::max(s->max_ftf, f);
        }
        break;
      }
      case JobOutcome::kRejected: ++s->jobs_rejected; break;
      default: {
        ++s->jobs_unfinished;
        auto it = std::find_if(s->unfinished_reasons.begin(), s->unfinished_reasons.end(),
                               [&](const auto& r) { return r.first == j.reason; });
        if (it == s->unfinished_reasons.end()) {
          s->unfinished_reasons.push_back({j.reason, 1});
        } else {
          ++it->second;
        }
        break;
      }
    }
    if (j.outcome != JobOutcome::kRejected) first_submit = std::min(first_submit, j.submit);
  }
  if (!jct.empty()) {
    s->avg_jct_s = jct_sum / jct.size();
    s->median_jct_s = Quantile(jct, 0.5);
    s->p95_jct_s = Quantile(jct, 0.95);
    s->p99_jct_s = Quantile(jct, 0.99);
    s->avg_queueing_s = queue_sum / queueing.size();
    s->median_queueing_s = Quantile(queueing, 0.5);
  }
  if (!ftf.empty()) s->avg_ftf = ftf_sum / ftf.size();
  if (s->deadline_jobs > 0) s->deadline_met_fraction = static_cast<double>(s->deadline_met) / s->deadline_jobs;
  if (deadline_finished > 0) s->avg_tardiness_s = tardiness_sum / deadline_finished;
  if (first_submit == kNever) first_submit = 0;
  s->makespan_s = std::max(0.0, ToSeconds(end - first_submit));

  // Time integrals over the piecewise-constant timeline.
  double alloc_gs = 0, useful_gs = 0, samples = 0, tokens = 0;
  std::vector<std::pair<double, double>> rate_time;  // (samples/s, seconds held)
  for (size_t i = 0; i < timeline.size(); ++i) {
    SimTime a = std::max(timeline[i].time, first_submit);
    SimTime b = i + 1 < timeline.size() ? timeline[i + 1].time : end;
    if (b <= a) continue;
    double dt = ToSeconds(b - a);
    rate_time.emplace_back(timeline[i].samples_per_s, dt);
    s->cluster_throughput_peak = std::max(s->cluster_throughput_peak, timeline[i].samples_per_s);
    alloc_gs += timeline[i].allocated_gpus * dt;
    useful_gs += timeline[i].progressing_gpus * dt;
    samples += timeline[i].samples_per_s * dt;
    tokens += timeline[i].tokens_per_s * dt;
  }
  if (!rate_time.empty()) {
    std::sort(rate_time.begin(), rate_time.end());
    double total = 0;
    for (const auto& [r, dt] : rate_time) total += dt;
    double seen = 0;
    for (const auto& [r, dt] : rate_time) {
      seen += dt;
      s->cluster_throughput_p99 = r;
      if (seen >= 0.99 * total) break;
    }
  }
  if (alloc_gs > 0) s->samples_per_gpu_s = samples / alloc_gs;
  if (s->makespan_s > 0) {
    double avail = total_gpus * s->makespan_s;
    s->gpu_utilization = alloc_gs / avail;
    s->useful_utilization = useful_gs / avail;
    s->avg_throughput_samples_per_s = samples / s->makespan_s;
    s->avg_throughput_tokens_per_s = tokens / s->makespan_s;
  }
}

}  // namespace tessel
