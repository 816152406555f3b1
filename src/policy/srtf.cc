#include "policy/srtf.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>

#include "policy/placement.h"
#include "policy/priority_alloc.h"

namespace tessel {
namespace {

// Sorts `v` by `less`, a strict total order, in linear time when it is
// nearly sorted already: insertion sort while that moves few elements, else
// std::sort (either gives the one sorted order).
template <typename T, typename Less>
void SortNearlySorted(std::vector<T>& v, Less less) {
  int64_t moves_left = 8 * static_cast<int64_t>(v.size()) + 64;
  for (size_t k = 1; k < v.size(); ++k) {
    T x = v[k];
    size_t j = k;
    for (; j > 0 && less(x, v[j - 1]); --j) v[j] = v[j - 1];
    v[j] = x;
    moves_left -= static_cast<int64_t>(k - j);
    if (moves_left < 0) {
      std::sort(v.begin(), v.end(), less);
      return;
    }
  }
}

class SrtfPolicy : public BaselinePolicy {
 public:
  explicit SrtfPolicy(PlanMode mode) : BaselinePolicy("srtf", false, mode) {}

  Decision Decide(const Snapshot& snap) override {
    Decision d;
    facts_.Begin(snap);
    struct Ranked {
      double remaining_s;
      int index;
      int position;  // in `entries` and `facts`
    };
    std::vector<Ranked> ranked;
    std::vector<PriorityEntry> entries;
    std::vector<Facts*> facts;
    ranked.reserve(snap.jobs.size());
    entries.reserve(snap.jobs.size());
    facts.reserve(snap.jobs.size());
    for (size_t position = 0; position < snap.jobs.size(); ++position) {
      const JobView* job = snap.jobs[position];
      const JobSpec& spec = *job->spec;
      Facts& f = facts_.At(position);
      if (!f.known) {
        f.types = CandidateTypes(*job, snap);
        if (!f.types.empty()) {
          const int t = f.types.front();
          const JobRate& r = snap.belief->Rate(spec, t, spec.requested_gpus,
                                               MinNodes(*snap.cluster, t, spec.requested_gpus));
          f.fits = r.fits;
          f.iteration_time_s = r.iteration_time_s;
        }
        f.known = true;
      }
      std::optional<std::span<const int>> types = PriorityTypesOrReject(*job, f.types, snap, d);
      if (!types) continue;
      bool fits = f.fits;
      double iteration_time_s = f.iteration_time_s;
      if (f.types.empty()) {  // on the type it holds, where it does not fit at its size
        const int t = types->front();
        const JobRate& r = snap.belief->Rate(spec, t, spec.requested_gpus,
                                             MinNodes(*snap.cluster, t, spec.requested_gpus));
        fits = r.fits;
        iteration_time_s = r.iteration_time_s;
      }
      double remaining = fits ? job->remaining_iterations() * iteration_time_s : 1e300;
      ranked.push_back({remaining, job->index, static_cast<int>(entries.size())});
      entries.push_back({job, spec.requested_gpus, *types});
      facts.push_back(&f);
    }
    // Priority order: (remaining time, job index). Running jobs' remaining
    // times all fall at about the clock's pace, so the last decision's
    // order is nearly this one's: start from it, each job at its rank then
    // (when no other claims that rank), new jobs after, and sort from there.
    std::vector<int> at_rank(last_ranked_, -1);  // position of the job last at that rank
    std::vector<uint8_t> hinted(ranked.size(), 0);
    for (const Ranked& r : ranked) {
      const int rank = facts[r.position]->last_rank;
      if (rank >= 0 && rank < last_ranked_ && at_rank[rank] < 0) {
        at_rank[rank] = r.position;
        hinted[r.position] = 1;
      }
    }
    std::vector<Ranked> sorted;
    sorted.reserve(ranked.size());
    for (int position : at_rank) {
      if (position >= 0) sorted.push_back(ranked[position]);
    }
    for (const Ranked& r : ranked) {
      if (!hinted[r.position]) sorted.push_back(r);
    }
    SortNearlySorted(sorted, [](const Ranked& a, const Ranked& b) {
      return a.remaining_s < b.remaining_s || (a.remaining_s == b.remaining_s && a.index < b.index);
    });
    std::vector<PriorityEntry> order;
    order.reserve(sorted.size());
    for (size_t k = 0; k < sorted.size(); ++k) {
      order.push_back(entries[sorted[k].position]);
      facts[sorted[k].position]->last_rank = static_cast<int>(k);
    }
    last_ranked_ = static_cast<int>(sorted.size());
    AllocateByPriority(snap, order, d);
    return d;
  }

 private:
  // A job's CandidateTypes and the belief's rate on the first of them at
  // its requested GPU count; and where the last decision ranked it.
  struct Facts {
    bool known = false;
    std::vector<int> types;
    bool fits = false;
    double iteration_time_s = 0;
    int last_rank = -1;  // a hint for the next sort only
  };
  JobFactsCache<Facts> facts_;
  int last_ranked_ = 0;  // jobs the last decision ranked
};

}  // namespace

void RegisterSrtfPolicy(PolicyRegistry& registry) {
  Status s = registry.Register(
      {"srtf",
       "preemptive shortest-remaining-time-first on the requested GPUs (remaining time by the belief)",
       {},
       [](const PolicyOptions&, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
         return std::unique_ptr<Policy>(new SrtfPolicy(ctx.baseline_plan_mode));
       }});
  assert(s.ok());
  (void)s;
}

}  // namespace tessel
