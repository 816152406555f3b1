#include "policy/fcfs.h"

#include <algorithm>

#include "policy/placement.h"

namespace tessel {
namespace {

enum class Backfill { kNone, kFirstFit, kEasy };

class FcfsPolicy : public BaselinePolicy {
 public:
  FcfsPolicy(Backfill backfill, bool block_per_type, PlanMode mode)
      : BaselinePolicy("fcfs", false, mode), backfill_(backfill), block_per_type_(block_per_type) {}

  // Its job's rate at the requested count on each type it may run on
  // (CandidateTypes, the EASY reservation).
  std::vector<RateQuery> LikelyQuestions(const JobSpec& job, const Cluster& cluster) const override {
    return CandidateTypeQuestions(job, cluster, job.requested_gpus);
  }

  Decision Decide(const Snapshot& snap) override {
    Decision d;
    FreeMap free(snap);
    // Head-of-line reservation for EASY: (type, time it can start, GPUs
    // spare at that time beyond its need).
    bool blocked = false;
    int res_type = -1;
    SimTime res_time = kNever;
    int res_spare = 0;
    const int num_types = static_cast<int>(snap.cluster->types().size());
    // block=type: the GPU types a job that could not start holds up.
    std::vector<uint8_t> type_blocked(num_types, 0);
    for (const JobView* job : snap.jobs) {
      if (job->phase != JobPhase::kPending) continue;
      const JobSpec& spec = *job->spec;
      if (blocked) {
        // Backfilling: skip cheaply what cannot fit anywhere now, and stop
        // once nothing is free.
        int most_free = 0;
        for (int t = 0; t < num_types; ++t) most_free = std::max(most_free, free.free_of_type(t));
        if (most_free == 0) break;
        if (spec.requested_gpus > most_free) continue;
      }
      std::vector<int> types = CandidateTypes(*job, snap);
      if (types.empty()) {
        d.reject.push_back({job->index, "no GPU type in the cluster can run it on " +
                                            std::to_string(spec.requested_gpus) + " GPUs"});
        continue;
      }
      if (block_per_type_) {
        std::optional<Allocation> placed;
        bool open = false;  // some candidate type is not held up
        for (int t : types) {
          if (type_blocked[t]) continue;
          open = true;
          placed = free.Place(t, spec.requested_gpus);
          if (placed) break;
        }
        if (placed) {
          d.assign.push_back({job->index, std::move(*placed)});
        } else if (open) {
          for (int t : types) type_blocked[t] = 1;
        }
        continue;
      }
      std::optional<Allocation> placed;
      for (int t : types) {
        if (blocked && backfill_ == Backfill::kEasy && t == res_type) {
          // Must not delay the head job's reservation.
          const JobRate& r = snap.belief->Rate(spec, t, spec.requested_gpus, MinNodes(*snap.cluster, t, spec.requested_gpus));
          bool ends_before = r.fits && snap.now + Seconds(job->remaining_iterations() * r.iteration_time_s) <= res_time;
          if (!ends_before && spec.requested_gpus > res_spare) continue;
          if (!ends_before) {
            auto a = free.Place(t, spec.requested_gpus);
            if (a) res_spare -= spec.requested_gpus;
            placed = a;
            if (placed) break;
            continue;
          }
        }
        placed = free.Place(t, spec.requested_gpus);
        if (placed) break;
      }
      if (placed) {
        d.assign.push_back({job->index, std::move(*placed)});
        continue;
      }
      if (!blocked) {
        blocked = true;
        if (backfill_ == Backfill::kNone) break;
        if (backfill_ == Backfill::kEasy) Reserve(snap, free, *job, types.front(), res_type, res_time, res_spare);
      }
    }
    return d;
  }

 private:
  // When will `type` have the job's GPUs free, if running jobs end as the
  // belief expects?
  static void Reserve(const Snapshot& snap, const FreeMap& free, const JobView& head, int type, int& res_type,
                      SimTime& res_time, int& res_spare) {
    std::vector<std::pair<SimTime, int>> ends;
    for (const JobView* j : snap.jobs) {
      if (j->phase == JobPhase::kPending || j->alloc.type != type) continue;
      const JobRate& r = snap.belief->Rate(*j->spec, type, j->alloc.gpus(), j->alloc.nodes());
      SimTime end = r.fits ? snap.now + Seconds(j->remaining_iterations() * r.iteration_time_s) : kNever;
      ends.push_back({end, j->alloc.gpus()});
    }
    std::sort(ends.begin(), ends.end());
    int avail = free.free_of_type(type);
    res_type = type;
    res_time = kNever;
    res_spare = 0;
    for (const auto& [end, gpus] : ends) {
      avail += gpus;
      if (avail >= head.spec->requested_gpus) {
        res_time = end;
        res_spare = avail - head.spec->requested_gpus;
        break;
      }
    }
  }

  Backfill backfill_;
  bool block_per_type_;
};

}  // namespace

void RegisterFcfsPolicy(PolicyRegistry& registry) {
  Status s = registry.Register(
      {"fcfs",
       "first-come first-served on the requested GPUs; optional first-fit or EASY backfill",
       {"backfill=none|first-fit|easy (default none)",
        "block=all|type (default all: the first job that cannot start holds up every job behind it; type: only "
        "jobs that could use its GPU types, the Arena artifact's FCFS and the default under --setting "
        "arena-artifact)"},
       [](const PolicyOptions& opts, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
         std::string b = opts.GetString("backfill", "none");
         Backfill backfill;
         if (b == "none") {
           backfill = Backfill::kNone;
         } else if (b == "first-fit") {
           backfill = Backfill::kFirstFit;
         } else if (b == "easy") {
           backfill = Backfill::kEasy;
         } else {
           return InvalidArgument("fcfs: backfill '" + b + "': expected none, first-fit or easy");
         }
         std::string block = opts.GetString("block", ctx.arena_artifact && backfill == Backfill::kNone ? "type" : "all");
         if (block != "all" && block != "type")
           return InvalidArgument("fcfs: block '" + block + "': expected all or type");
         if (block == "type" && backfill != Backfill::kNone)
           return InvalidArgument("fcfs: block=type is a backfill rule of its own; use it with backfill=none");
         return std::unique_ptr<Policy>(new FcfsPolicy(backfill, block == "type", ctx.baseline_plan_mode));
       }});
  assert(s.ok());
  (void)s;
}

}  // namespace tessel
