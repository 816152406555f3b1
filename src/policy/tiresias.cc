#include "policy/tiresias.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <tuple>

#include "core/strings.h"
#include "policy/placement.h"
#include "policy/priority_alloc.h"

namespace tessel {
namespace {

// Slack for comparing times and services that the backend accumulates in
// floating point (a millisecond, or a GPU-millisecond).
constexpr double kSlack = 1e-3;

class TiresiasPolicy : public BaselinePolicy {
 public:
  TiresiasPolicy(std::vector<double> thresholds, double starvation, bool rounds_only, PlanMode mode)
      : BaselinePolicy("tiresias", true, mode),
        thresholds_(std::move(thresholds)),
        starvation_(starvation),
        rounds_only_(rounds_only) {}

  Decision Decide(const Snapshot& snap) override {
    // As the Pollux artifact's Tiresias: decide only every round.
    if (rounds_only_ && !snap.at_round) return {};
    Decision d;
    types_.Begin(snap);
    struct Ranked {
      int queue;
      bool waiting;
      SimTime submit;
      int index;
      PriorityEntry entry;
    };
    std::vector<Ranked> ranked;
    ranked.reserve(snap.jobs.size());
    for (size_t position = 0; position < snap.jobs.size(); ++position) {
      const JobView* job = snap.jobs[position];
      const JobSpec& spec = *job->spec;
      CachedTypes& candidates = types_.At(position);
      if (!candidates.known) {
        candidates.types = CandidateTypes(*job, snap);
        candidates.known = true;
      }
      std::optional<std::span<const int>> types = PriorityTypesOrReject(*job, candidates.types, snap, d);
      if (!types) continue;
      Service s = ServiceOf(*job, snap);
      int queue = QueueOf(s.service);
      SimTime wake = NextChange(*job, snap, s, queue);
      d.wake_at = std::min(d.wake_at, wake);
      ranked.push_back({queue, job->alloc.empty(), spec.submit, job->index, {job, spec.requested_gpus, *types}});
    }
    // Priority order: (queue, waiting, submit, index), a total order.
    // Snapshots list jobs by submit, so ranked usually is in (submit, index)
    // order already and a counting sort on (queue, waiting) that keeps it
    // gives the same order.
    std::vector<PriorityEntry> order(ranked.size());
    const bool by_submit = std::is_sorted(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
      return std::tie(a.submit, a.index) < std::tie(b.submit, b.index);
    });
    if (by_submit) {
      auto bucket = [](const Ranked& r) { return 2 * r.queue + (r.waiting ? 1 : 0); };
      std::vector<int> next(2 * (thresholds_.size() + 1) + 1, 0);  // first position per bucket
      for (const Ranked& r : ranked) ++next[bucket(r) + 1];
      for (size_t b = 1; b < next.size(); ++b) next[b] += next[b - 1];
      for (const Ranked& r : ranked) order[next[bucket(r)]++] = r.entry;
    } else {
      std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
        return std::tie(a.queue, a.waiting, a.submit, a.index) < std::tie(b.queue, b.waiting, b.submit, b.index);
      });
      for (size_t k = 0; k < ranked.size(); ++k) order[k] = ranked[k].entry;
    }
    AllocateByPriority(snap, order, d);
    return d;
  }

 private:
  // The service that decides a job's queue, and what it was derived from.
  struct Service {
    double service = 0;    // GPU-seconds
    double gpus = 1;       // GPUs the job holds (running) or asks for
    double run_s = 0;      // time it has held GPUs (pending jobs)
    double waited_s = 0;   // time it has waited since it first started
    bool promoted = false;
  };

  Service ServiceOf(const JobView& job, const Snapshot& snap) const {
    Service s;
    s.service = job.attained_gpu_s;
    const double now_s = ToSeconds(snap.now);
    if (job.alloc.empty()) {
      s.gpus = std::max(1, job.spec->requested_gpus);
      if (!job.started()) return s;
      s.run_s = job.attained_gpu_s / s.gpus;
      s.waited_s = now_s - ToSeconds(job.first_start) - s.run_s;
      if (Starving(s.run_s, s.waited_s)) {
        s.promoted = true;
        s.service = 0;
      }
      return s;
    }
    // Running: was it promoted when its current run began?
    s.gpus = job.alloc.gpus();
    double run_now_s = now_s - ToSeconds(job.alloc_since);
    double current = s.gpus * run_now_s;
    double run_before_s = std::max(0.0, job.attained_gpu_s - current) / s.gpus;
    double waited_before_s = ToSeconds(job.alloc_since - job.first_start) - run_before_s;
    if (Starving(run_before_s, waited_before_s)) {
      s.promoted = true;
      s.service = current;
    }
    return s;
  }

  bool Starving(double run_s, double waited_s) const {
    return starvation_ > 0 && run_s > kSlack && waited_s >= starvation_ * run_s - kSlack;
  }

  int QueueOf(double service) const {
    int q = 0;
    while (q < static_cast<int>(thresholds_.size()) && service >= thresholds_[q] - kSlack) ++q;
    return q;
  }

  // When the job's queue will next change if nothing else happens: a running
  // job crossing its queue's threshold, a waiting one being promoted.
  SimTime NextChange(const JobView& job, const Snapshot& snap, const Service& s, int queue) const {
    if (!job.alloc.empty()) {
      if (queue >= static_cast<int>(thresholds_.size())) return kNever;
      return snap.now + std::max<SimTime>(1, SecondsCeil((thresholds_[queue] - s.service) / s.gpus));
    }
    if (starvation_ <= 0 || s.promoted || queue == 0 || s.run_s <= kSlack) return kNever;
    return snap.now + std::max<SimTime>(1, SecondsCeil(starvation_ * s.run_s - s.waited_s));
  }

  // A job's CandidateTypes at its requested GPU count.
  struct CachedTypes {
    bool known = false;
    std::vector<int> types;
  };

  std::vector<double> thresholds_;  // ascending GPU-seconds, K - 1 of them
  double starvation_;
  bool rounds_only_;
  JobFactsCache<CachedTypes> types_;
};

Result<std::vector<double>> ParseThresholds(const std::string& text, int queues) {
  std::vector<double> out;
  for (const std::string& part : Split(text, ',')) {
    auto t = ParseDuration(Trim(part), "tiresias threshold");
    if (!t.ok()) return t.status();
    if (*t <= 0) return InvalidArgument("tiresias: threshold '" + Trim(part) + "' must be positive");
    out.push_back(ToSeconds(*t));
  }
  if (out.size() == 1) {
    while (static_cast<int>(out.size()) < queues - 1) out.push_back(out.back() * 2);
    out.resize(queues - 1);
  }
  if (static_cast<int>(out.size()) != queues - 1) {
    return InvalidArgument("tiresias: threshold lists " + std::to_string(out.size()) + " values; " +
                           std::to_string(queues) + " queues need " + std::to_string(queues - 1) +
                           " (or one, doubled per queue)");
  }
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i] <= out[i - 1]) return InvalidArgument("tiresias: thresholds must increase: " + text);
  }
  return out;
}

}  // namespace

void RegisterTiresiasPolicy(PolicyRegistry& registry) {
  Status s = registry.Register(
      {"tiresias",
       "Tiresias' discretized 2D-LAS: GPU-time priority queues, preemptive (Gu et al., NSDI'19)",
       {"queues=K priority queues (default 2)",
        "threshold=GPU-seconds leaving each queue, one or K-1 comma-separated (default 3250)",
        "starvation=STARVELIMIT: promote after waiting this many times the run time (default 0 = off)",
        "rounds_only=true|false: decide only at rounds, not on arrivals and completions (default false; the "
        "Pollux artifact's Tiresias)"},
       [](const PolicyOptions& opts, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
         auto queues = opts.GetDouble("queues", 2);
         if (!queues.ok()) return queues.status();
         if (*queues < 1 || *queues != std::floor(*queues) || *queues > 64) {
           return InvalidArgument("tiresias: queues must be a whole number from 1 to 64, got " +
                                  opts.GetString("queues", ""));
         }
         int k = static_cast<int>(*queues);
         std::vector<double> thresholds;
         if (k > 1) {
           auto t = ParseThresholds(opts.GetString("threshold", "3250"), k);
           if (!t.ok()) return t.status();
           thresholds = std::move(*t);
         }
         auto starvation = opts.GetDouble("starvation", 0);
         if (!starvation.ok()) return starvation.status();
         if (*starvation < 0) return InvalidArgument("tiresias: starvation must be >= 0");
         auto rounds_only = opts.GetBool("rounds_only", false);
         if (!rounds_only.ok()) return rounds_only.status();
         return std::unique_ptr<Policy>(
             new TiresiasPolicy(std::move(thresholds), *starvation, *rounds_only, ctx.baseline_plan_mode));
       }});
  assert(s.ok());
  (void)s;
}

}  // namespace tessel
