#include "policy/elasticflow.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <span>
#include <tuple>

#include "core/sim_time.h"
#include "core/strings.h"
#include "policy/placement.h"
#include "policy/priority_alloc.h"

namespace tessel {
namespace {

// The GPU counts a job may run on, ascending: min_gpus, the powers of two
// above it, max_gpus. A job whose request lies outside [min_gpus, max_gpus]
// is taken as rigid at its request.
std::vector<int> Sizes(const JobSpec& spec) {
  int lo = spec.min_gpus, hi = spec.max_gpus;
  if (lo < 1 || hi < lo || spec.requested_gpus < lo || spec.requested_gpus > hi) {
    return {std::max(1, spec.requested_gpus)};
  }
  std::vector<int> sizes{lo};
  int p = 1;
  while (p <= lo) p *= 2;
  for (; p < hi; p *= 2) sizes.push_back(p);
  if (hi > lo) sizes.push_back(hi);
  return sizes;
}

// One GPU type's free GPUs over time from the decision (seconds from now),
// a step function: segment s covers [start[s], start[s + 1]), the last one
// is open-ended. ElasticFlow's free-resource table, in continuous time.
struct FreeProfile {
  std::vector<double> start{0.0};
  std::vector<int> free;
  explicit FreeProfile(int capacity) : free{capacity} {}

  // Makes a segment start at `t` (> 0, finite) and returns its index.
  size_t SplitAt(double t) {
    size_t s = std::upper_bound(start.begin(), start.end(), t) - start.begin() - 1;
    if (start[s] == t) return s;
    start.insert(start.begin() + s + 1, t);
    free.insert(free.begin() + s + 1, free[s]);
    return s + 1;
  }
};

// A job's sizes on one type that fit, ascending, with iterations/s at each.
struct Levels {
  std::vector<int> gpus;
  std::vector<double> rate;
  // Index of the largest size <= cap, -1 when none.
  int AtMost(int cap) const {
    int i = static_cast<int>(std::upper_bound(gpus.begin(), gpus.end(), cap) - gpus.begin()) - 1;
    return i;
  }
};

// Runs `work` iterations from now at target size q, each segment at the
// largest size <= min(q, free GPUs): the finish time (infinite when it
// never finishes or passes `deadline` first) and the size it holds now.
std::pair<double, int> Simulate(const Levels& lv, int q, double work, double deadline, const FreeProfile& f) {
  double t = 0, rem = work;
  int now = 0;
  for (size_t s = 0; s < f.free.size(); ++s) {
    const double end = s + 1 < f.free.size() ? f.start[s + 1] : std::numeric_limits<double>::infinity();
    const int a = lv.AtMost(std::min(q, f.free[s]));
    if (s == 0) now = a < 0 ? 0 : lv.gpus[a];
    if (a >= 0) {
      const double need = rem / lv.rate[a];
      if (t + need <= end) return {t + need, now};
      rem -= lv.rate[a] * (end - t);
    }
    t = end;
    if (t > deadline) break;
  }
  return {std::numeric_limits<double>::infinity(), now};
}

// ElasticFlow's minimum satisfactory share: the smallest size q at which
// the job, given min(q, free) in every segment, finishes by `deadline`.
// When one exists its use is taken out of `f` and the size it holds now
// is returned (0 when the GPUs it needs come free only later).
std::optional<int> MinSatisfactoryShare(const Levels& lv, double work, double deadline, FreeProfile& f) {
  for (int q : lv.gpus) {
    auto [finish, now] = Simulate(lv, q, work, deadline, f);
    if (!(finish <= deadline)) continue;
    if (finish > 0) f.SplitAt(finish);
    for (size_t s = 0; s < f.free.size() && f.start[s] < finish; ++s) {
      const int a = lv.AtMost(std::min(q, f.free[s]));
      if (a >= 0) f.free[s] -= lv.gpus[a];
    }
    return now;
  }
  return std::nullopt;
}

// Drops the leading `sizes` at which the job fits on no type of the
// cluster (its real minimum is the smallest size its model fits at) and
// returns the types, fastest first, where the first remaining size fits;
// empty (and `sizes` empty) when it fits nowhere.
std::vector<int> TypesAtSmallestFit(const JobView& job, const Snapshot& snap, std::vector<int>& sizes) {
  std::vector<int> types;
  while (!sizes.empty() && (types = CandidateTypes(job, snap, sizes.front())).empty()) sizes.erase(sizes.begin());
  return types;
}

class ElasticFlowPolicy : public BaselinePolicy {
 public:
  ElasticFlowPolicy(double hysteresis, bool admission, PlanMode mode)
      : BaselinePolicy("elasticflow", true, mode), hysteresis_(hysteresis), admission_(admission) {}

  // What it asks of a job: its rate at each of its sizes on the fewest
  // nodes, on every type it may run on (CandidateTypes, LevelsOn, Gain),
  // smallest size first.
  std::vector<RateQuery> LikelyQuestions(const JobSpec& job, const Cluster& cluster) const override {
    std::vector<RateQuery> out;
    for (int g : Sizes(job)) {
      std::vector<RateQuery> at = CandidateTypeQuestions(job, cluster, g);
      out.insert(out.end(), at.begin(), at.end());
    }
    return out;
  }

  Decision Decide(const Snapshot& snap) override {
    Decision d;
    const int n = static_cast<int>(snap.jobs.size());
    const int num_types = static_cast<int>(snap.cluster->types().size());
    facts_.Begin(snap);
    std::vector<Facts*> facts(n);
    for (int i = 0; i < n; ++i) {
      const JobView& job = *snap.jobs[i];
      facts[i] = &facts_.At(i);
      if (!facts[i]->seen) {
        facts[i]->submit = job.spec->submit;
        facts[i]->has_deadline = job.spec->deadline.has_value();
        facts[i]->seen = true;
      }
    }

    // GPUs to hand out per type: free ones and those jobs hold. `free` is
    // also step 3's scratch copy.
    FreeMap free(snap);
    std::vector<int> left(num_types, 0);
    for (int t = 0; t < num_types; ++t) left[t] = free.free_of_type(t);
    for (const JobView* job : snap.jobs) {
      if (!job->alloc.empty()) left[job->alloc.type] += job->alloc.gpus();
    }

    // A job's sizes on its type, ascending: views of `facts`, or of
    // `own_size` for a job kept at the size it holds.
    std::vector<std::span<const int>> sizes(n);
    std::vector<int> own_size(n, 0);
    std::vector<int> type(n, -1), step(n, -1);  // step: index into sizes, -1 = nothing
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    auto by_submit = [&](int a, int b) {
      return std::tie(facts[a]->submit, snap.jobs[a]->index) < std::tie(facts[b]->submit, snap.jobs[b]->index);
    };
    // Snapshots list jobs in submit order, so this rarely sorts.
    if (!std::is_sorted(order.begin(), order.end(), by_submit)) {
      std::stable_sort(order.begin(), order.end(), by_submit);
    }

    // 0. Admission control and minimum satisfactory shares of the jobs with
    // deadlines (their share now; -1: planned nowhere, best-effort below).
    std::vector<int> share(n, -1);
    if (admission_) Admit(snap, order, left, facts, sizes, type, share, d);

    // 1. Shares: admitted jobs their minimum satisfactory share now; then
    // in submit order every other job (best-effort, late, or admitted but
    // planned to start later) its minimum size while GPUs of its type remain.
    for (int i : order) {
      if (share[i] <= 0) continue;
      step[i] = static_cast<int>(std::find(sizes[i].begin(), sizes[i].end(), share[i]) - sizes[i].begin());
      left[type[i]] -= share[i];
    }
    for (int i : order) {
      const JobView& job = *snap.jobs[i];
      if (share[i] > 0 || share[i] == kRejected) continue;
      if (type[i] >= 0) {  // admitted on a type: its sizes there
        if (!sizes[i].empty() && left[type[i]] >= sizes[i].front()) {
          step[i] = 0;
          left[type[i]] -= sizes[i].front();
        }
        continue;
      }
      const Facts& fit = SmallestFit(*facts[i], job, snap);
      sizes[i] = fit.sizes;
      std::span<const int> types = fit.types;
      if (sizes[i].empty()) {
        if (job.alloc.empty()) {
          d.reject.push_back({job.index, NeverRunsReason(job, snap, fit.smallest)});
          continue;
        }
        own_size[i] = job.alloc.gpus();
        sizes[i] = std::span<const int>(&own_size[i], 1);
        types = std::span<const int>(&job.alloc.type, 1);
      }
      const int lo = sizes[i].front();
      int t = -1;
      if (!job.alloc.empty() && left[job.alloc.type] >= lo &&
          std::find(types.begin(), types.end(), job.alloc.type) != types.end()) {
        t = job.alloc.type;
      } else {
        for (int c : types) {
          if (left[c] >= lo && (t < 0 || left[c] > left[t])) t = c;
        }
      }
      if (t < 0) continue;
      type[i] = t;
      step[i] = 0;
      left[t] -= lo;
    }

  // 2. Leftover GPUs by marginal return per added GPU.
    using Offer = std::tuple<double, int, int>;  // gain, -job index, position
    std::priority_queue<Offer> offers;
    auto offer = [&](int i) {
      if (step[i] < 0 || step[i] + 1 >= static_cast<int>(sizes[i].size())) return;
      double gain = Gain(snap, i, *facts[i], type[i], sizes[i][step[i]], sizes[i][step[i] + 1]);
      if (gain > 0) offers.push({gain, -snap.jobs[i]->index, i});
    };
    for (int i = 0; i < n; ++i) offer(i);
    while (!offers.empty()) {
      auto [gain, neg_index, i] = offers.top();
      offers.pop();
      int add = sizes[i][step[i] + 1] - sizes[i][step[i]];
      if (left[type[i]] < add) continue;  // what is left only shrinks
      left[type[i]] -= add;
      ++step[i];
      offer(i);
    }

    // 3. Placement: keep what is unchanged, shrink in place, then place the
    // rest largest first.
    std::vector<std::optional<Allocation>> placed(n);
    std::vector<int> to_place;
    for (int i = 0; i < n; ++i) {
      const Allocation& cur = snap.jobs[i]->alloc;
      const int want = step[i] < 0 ? 0 : sizes[i][step[i]];
      if (cur.empty()) {
        if (want > 0) to_place.push_back(i);
        continue;
      }
      if (want == cur.gpus() && type[i] == cur.type) continue;
      free.Release(cur);
      if (want == 0) {
        placed[i] = Allocation{};
      } else if (type[i] == cur.type && want < cur.gpus()) {
        placed[i] = Subset(cur, want);
        free.Take(*placed[i]);
      } else {
        to_place.push_back(i);
      }
    }
    std::stable_sort(to_place.begin(), to_place.end(), [&](int a, int b) {
      int ga = sizes[a][step[a]], gb = sizes[b][step[b]];
      if (ga != gb) return ga > gb;
      return std::tie(snap.jobs[a]->spec->submit, snap.jobs[a]->index) <
             std::tie(snap.jobs[b]->spec->submit, snap.jobs[b]->index);
    });
    for (int i : to_place) {
      const Allocation& cur = snap.jobs[i]->alloc;
      const int want = sizes[i][step[i]];
      std::optional<Allocation> grown;  // its GPUs and more
      // Its old GPUs went back to the pool above; a larger job placed
      // before it may have taken some, and then it cannot grow in place.
      if (!cur.empty() && cur.type == type[i] && free.IsFree(cur)) {
        free.Take(cur);
        std::optional<Allocation> extra = free.Place(type[i], want - cur.gpus());
        free.Release(cur);
        if (extra) {
          free.Release(*extra);
          grown = Merge(cur, *extra);
        }
      }
      std::optional<Allocation> fresh = free.Place(type[i], want);
      if (grown && (!fresh || grown->nodes() <= fresh->nodes())) {
        if (fresh) free.Release(*fresh);
        free.Take(*grown);
        fresh = std::move(grown);
      }
      // Cannot fail: step 1 and 2 count GPUs per type. Should it, the job waits.
      placed[i] = fresh ? std::move(*fresh) : Allocation{};
    }

    for (int i = 0; i < n; ++i) {
      if (placed[i] && *placed[i] != snap.jobs[i]->alloc) {
        d.assign.push_back({snap.jobs[i]->index, std::move(*placed[i])});
      }
    }
    std::sort(d.assign.begin(), d.assign.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return d;
  }

 private:
  // What a job's spec comes to on this cluster by the belief (JobFactsCache:
  // kept across decisions), each part computed when a decision first needs
  // it, so the belief is asked what it would have been asked anyway.
  struct Facts {
    bool seen = false;
    // Copied from the spec, so a decision reads the spec only of the jobs
    // it plans.
    SimTime submit = 0;
    bool has_deadline = false;
    bool fit_known = false;
    std::vector<int> sizes;  // Sizes(), less the leading ones that fit on no type
    int smallest = 0;        // Sizes().front()
    std::vector<int> types;  // where sizes.front() fits, fastest first (CandidateTypes)
    std::vector<std::optional<Levels>> levels;  // per GPU type, LevelsOn
    // The belief's rates asked so far: (type, GPUs, rate).
    std::vector<std::tuple<int, int, const JobRate*>> rates;
    // The last step Gain priced (type, from, to) and its two rates: a job
    // is offered the same step decision after decision.
    int step_type = -1, step_from = 0, step_to = 0;
    const JobRate* step_rates[2] = {nullptr, nullptr};
  };

  // `facts` with sizes, smallest and types set (TypesAtSmallestFit).
  static const Facts& SmallestFit(Facts& facts, const JobView& job, const Snapshot& snap) {
    if (!facts.fit_known) {
      facts.sizes = Sizes(*job.spec);
      facts.smallest = facts.sizes.front();
      facts.types = TypesAtSmallestFit(job, snap, facts.sizes);
      facts.fit_known = true;
    }
    return facts;
  }

  // The belief's rate of the job on `gpus` GPUs of `type` on the fewest
  // nodes that hold them (MinNodes), remembered in `facts`.
  static const JobRate& RateOf(Facts& facts, const Snapshot& snap, const JobSpec& spec, int type, int gpus) {
    for (const auto& [t, g, rate] : facts.rates) {
      if (t == type && g == gpus) return *rate;
    }
    const JobRate& r = snap.belief->Rate(spec, type, gpus, MinNodes(*snap.cluster, type, gpus));
    facts.rates.emplace_back(type, gpus, &r);
    return r;
  }

  // Reduction of job i's remaining time per added GPU when it goes from
  // `from` to `to` GPUs of `type`; counted (1 + hysteresis) times when it
  // already holds `to` GPUs of that type.
  double Gain(const Snapshot& snap, int i, Facts& facts, int type, int from, int to) const {
    const JobView& job = *snap.jobs[i];
    if (facts.step_type != type || facts.step_from != from || facts.step_to != to) {
      facts.step_rates[0] = &RateOf(facts, snap, *job.spec, type, from);
      facts.step_rates[1] = &RateOf(facts, snap, *job.spec, type, to);
      facts.step_type = type;
      facts.step_from = from;
      facts.step_to = to;
    }
    const JobRate& a = *facts.step_rates[0];
    const JobRate& b = *facts.step_rates[1];
    if (!a.fits || !b.fits) return 0;
    double gain = job.remaining_iterations() * (a.iteration_time_s - b.iteration_time_s) / (to - from);
    if (!job.alloc.empty() && job.alloc.type == type && job.alloc.gpus() >= to) gain *= 1 + hysteresis_;
    return gain;
  }

  static constexpr int kRejected = -2;  // share[i] of a job refused admission

  // The job's sizes on `type` that fit, with their iterations/s.
  static const Levels& LevelsOn(Facts& facts, const Snapshot& snap, const JobSpec& spec, int type) {
    if (facts.levels.empty()) facts.levels.resize(snap.cluster->types().size());
    std::optional<Levels>& cached = facts.levels[type];
    if (cached) return *cached;
    Levels lv;
    for (int g : Sizes(spec)) {
      if (g > snap.cluster->types()[type].total_gpus) break;
      const JobRate& r = RateOf(facts, snap, spec, type, g);
      if (!r.fits || !(r.iteration_time_s > 0)) continue;
      lv.gpus.push_back(g);
      lv.rate.push_back(1.0 / r.iteration_time_s);
    }
    cached = std::move(lv);
    return *cached;
  }

  // ElasticFlow's admission control (Gu et al. §4.2) per GPU type. The
  // admitted jobs of each type are planned earliest deadline first, each
  // its minimum satisfactory share of what the earlier ones left; a job
  // that can no longer meet its deadline (the belief was wrong, or it was
  // admitted on an estimate) is late and runs best-effort. Then each new
  // job with a deadline, in submit order, is admitted on the first of its
  // types where it and every admitted, not-late job of that type still meet
  // their deadlines; otherwise it is rejected. Sets type, sizes (the job's
  // sizes on its type) and share (its size now) of admitted jobs.
  void Admit(const Snapshot& snap, const std::vector<int>& order, const std::vector<int>& capacity,
             const std::vector<Facts*>& facts, std::vector<std::span<const int>>& sizes, std::vector<int>& type,
             std::vector<int>& share, Decision& d) {
    const int n = static_cast<int>(snap.jobs.size());
    const int num_types = static_cast<int>(capacity.size());
    std::map<int, int> still;  // admitted jobs still active
    std::vector<std::vector<int>> on_type(num_types);  // admitted, not late, EDF
    std::vector<const Levels*> levels(n, nullptr);
    std::vector<double> due(n, 0), work(n, 0);
    std::vector<int> fresh;
    for (int i : order) {
      if (!facts[i]->has_deadline) continue;
      const JobView& job = *snap.jobs[i];
      due[i] = ToSeconds(*job.spec->deadline - snap.now);
      work[i] = std::max(0.0, job.remaining_iterations());
      auto it = admitted_.find(job.index);
      int on = it != admitted_.end() ? it->second : -1;
      // A job that ran before this policy saw it (a daemon restarted, or
      // another policy ran first) was admitted then: it is never refused
      // now; one holding GPUs stays on their type.
      if (on < 0 && !job.alloc.empty()) on = job.alloc.type;
      if (on < 0) {
        fresh.push_back(i);
        continue;
      }
      still.emplace(job.index, on);
      type[i] = on;
      levels[i] = &LevelsOn(*facts[i], snap, *job.spec, type[i]);
      sizes[i] = levels[i]->gpus;
      if (!levels[i]->gpus.empty()) on_type[type[i]].push_back(i);
    }
    admitted_ = std::move(still);
    auto edf = [&](std::vector<int>& v) {
      std::stable_sort(v.begin(), v.end(), [&](int a, int b) {
        return std::tie(due[a], snap.jobs[a]->index) < std::tie(due[b], snap.jobs[b]->index);
      });
    };
    // Plans `jobs` (EDF) on a fresh profile of type t: each job's share
    // now. A job whose deadline cannot be met is added to `late` when
    // given; without `late` (an admission trial) it makes the plan fail
    // (nullopt).
    auto plan = [&](int t, std::vector<int>& jobs, std::vector<int>* late) {
      FreeProfile f(capacity[t]);
      std::vector<std::pair<int, int>> out;
      for (int i : jobs) {
        std::optional<int> now = MinSatisfactoryShare(*levels[i], work[i], due[i], f);
        if (now) {
          out.push_back({i, *now});
        } else if (late != nullptr) {
          late->push_back(i);
        } else {
          return std::optional<std::vector<std::pair<int, int>>>();
        }
      }
      return std::optional<std::vector<std::pair<int, int>>>(std::move(out));
    };
    std::vector<std::vector<std::pair<int, int>>> shares(num_types);
    for (int t = 0; t < num_types; ++t) {
      edf(on_type[t]);
      std::vector<int> late;
      shares[t] = *plan(t, on_type[t], &late);
      for (int i : late) on_type[t].erase(std::find(on_type[t].begin(), on_type[t].end(), i));
    }
    for (int i : fresh) {
      const JobView& job = *snap.jobs[i];
      // A job that fits nowhere is rejected as never running.
      const Facts& fit = SmallestFit(*facts[i], job, snap);
      const std::vector<int>& types = fit.types;
      if (types.empty()) {
        d.reject.push_back({job.index, NeverRunsReason(job, snap, fit.smallest)});
        share[i] = kRejected;
        continue;
      }
      bool admitted = false;
      int first_fit = -1;  // its first type where some size fits
      for (int t : types) {
        const Levels& lv = LevelsOn(*facts[i], snap, *job.spec, t);
        if (lv.gpus.empty()) continue;
        if (first_fit < 0) first_fit = t;
        levels[i] = &lv;
        std::vector<int> trial = on_type[t];
        trial.push_back(i);
        edf(trial);
        auto planned = plan(t, trial, nullptr);
        if (!planned) continue;
        on_type[t] = std::move(trial);
        shares[t] = std::move(*planned);
        admitted_.emplace(job.index, t);
        type[i] = t;
        sizes[i] = levels[i]->gpus;
        admitted = true;
        break;
      }
      if (!admitted && job.started()) {
        // Admitted before, by an earlier instance: late, on its first type.
        if (first_fit >= 0) {
          admitted_.emplace(job.index, first_fit);
          type[i] = first_fit;
          sizes[i] = LevelsOn(*facts[i], snap, *job.spec, first_fit).gpus;
        }
      } else if (!admitted) {
        d.reject.push_back({job.index, "deadline cannot be met on the GPUs left (ElasticFlow admission control: " +
                                           FormatDuration(Seconds(std::max(0.0, due[i]))) + " to its deadline)"});
        share[i] = kRejected;
      }
    }
    for (int t = 0; t < num_types; ++t) {
      for (auto [i, now] : shares[t]) share[i] = now;
    }
  }

  double hysteresis_;
  bool admission_;
  std::map<int, int> admitted_;  // job index -> the GPU type it was admitted on
  JobFactsCache<Facts> facts_;
};

}  // namespace

void RegisterElasticFlowPolicy(PolicyRegistry& registry) {
  Status s = registry.Register(
      {"elasticflow",
       "ElasticFlow (Gu et al., ASPLOS'23): admission control on deadlines, minimum satisfactory shares "
       "(earliest deadline first), leftover GPUs by marginal return",
       {"hysteresis=H: steps a running job holds count 1+H times (default 0.1)",
        "admission=true|false: admission control on deadlines (default true; false: every job best-effort, "
        "as the Arena artifact's elasticflow-l)"},
       [](const PolicyOptions& opts, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
         auto h = opts.GetDouble("hysteresis", 0.1);
         if (!h.ok()) return h.status();
         if (!(*h >= 0) || !std::isfinite(*h)) return InvalidArgument("elasticflow: hysteresis must be a finite number >= 0");
         auto admission = opts.GetBool("admission", true);
         if (!admission.ok()) return admission.status();
         return std::unique_ptr<Policy>(new ElasticFlowPolicy(*h, *admission, ctx.baseline_plan_mode));
       }});
  assert(s.ok());
  (void)s;
}

}  // namespace tessel
