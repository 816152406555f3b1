#include "policy/arena.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

#include "model/catalog.h"
#include "policy/arena_admission.h"
#include "network/network_model.h"
#include "policy/goodput_alloc.h"
#include "policy/job_facts_cache.h"
#include "policy/placement.h"
#include "policy/throughput.h"

namespace tessel {
namespace {

struct ArenaParams {
  bool elastic = true;
  bool hetero = true;
  bool backfill = true;
  bool full_search = false;
  // Hand out GPUs by marginal value per GPU (default); false: job by job
  // in weight order, each its most valuable grid (an alternative allocator,
  // for comparison; arena-no-backfill uses it with blocking).
  bool marginal = true;
  // Profiling a new job before it is placed (policy/profiling.h).
  ProfilingKind profiling = ProfilingKind::kDisaggregated;
  double profile_config_s = 60;
  PlanMode plan_mode = PlanMode::kBest;
  double aging_s = 86400;
  // A change is valued as if its restart took this many times its delay:
  // the GPUs it takes sit idle meanwhile, and a change rarely comes alone
  // (the jobs it displaces restart too, and the next decision may change
  // it again). Sia's restart penalty and Pollux's re-allocation factor play
  // the same role. 1 = charge the job's own delay only.
  double restart_penalty = 3;
  double restart_overhead_s = 10;
  double storage_gbs = 2;
  double search_s_per_gpu = 10;
  double search_cap_s = 40;
  // A full (unpruned) plan search, as arena-full-search pays it.
  double full_search_s_per_gpu = 150;
  double full_search_cap_s = 600;
  // Admission search: per decision, up to admit_jobs waiting jobs the
  // allocation left out are tried, each admitted when shrinking or moving
  // to another GPU type at most admit_actions granted jobs makes room and
  // raises the total value (0 turns the search off).
  int admit_jobs = 4;
  int admit_actions = 2;
  // Defragmentation: a grant that does not fit on the fewest nodes that can
  // hold it may move up to defrag_moves smaller single-node jobs (0: off).
  int defrag_moves = 2;
  // After that, a grant still short may re-place every job (PlaceOptions).
  bool repack = true;
  // Plans per new allocation handed to the executor (its grid's Pareto set
  // of time against memory; 0: none).
  int plan_set = 4;
  // Load-aware grids: the flow-level network model's expected share of
  // the links a grid must cross (false: every grid at full bandwidth).
  bool network = true;
  // Deadline awareness (arena-ddl): a grid that finishes a deadline job in
  // time is worth 1 + deadline_weight * risk times more, risk being the
  // share of the time left to the deadline that the job's fastest grid
  // needs (near 1: it is about to become impossible).
  bool deadline = false;
  double deadline_weight = 4;
};

// Checkpoint bytes per parameter (mixed precision + Adam), as the engine.
constexpr double kCheckpointBytesPerParam = 14;

struct Grid {
  int type;
  int gpus;
  int nodes;
  double rate;    // samples/s with the best plan (or DP for arena-dp)
  double iter_s;  // seconds per iteration
};

class ArenaPolicy : public Policy {
 public:
  ArenaPolicy(std::string name, ArenaParams p) : name_(std::move(name)), p_(p) {
    traits_.uses_rounds = true;
    traits_.plan_mode = p.plan_mode;
    traits_.searches_plans = true;
    traits_.full_plan_search = p.full_search;
    traits_.profiling.kind = p.profiling;
    traits_.profiling.per_config_s = p.profile_config_s;
    traits_.profiling.all_types = p.hetero;
  }
  std::string_view name() const override { return name_; }
  PolicyTraits traits() const override { return traits_; }

  Decision Decide(const Snapshot& snap) override {
    const Cluster& cluster = *snap.cluster;
    std::vector<int> capacity = UpGpusByType(snap);
    if (network_ == nullptr || &network_->cluster() != &cluster)
      network_ = std::make_unique<NetworkModel>(cluster, NetworkOptions{});
    NetworkLoad load(*network_);
    // Only grids across racks are priced below full bandwidth
    // (NetworkLoad::ExpectedShare): one switch needs no load.
    if (p_.network && cluster.num_racks() > 1) {
      for (const JobView* job : snap.jobs) {
        if (job->alloc.nodes() < 2) continue;
        const Allocation& a = job->alloc;
        const JobRate& r = snap.belief->Rate(*job->spec, a.type, a.gpus(), a.nodes());
        if (r.fits && r.iteration_time_s > 0) load.Add(a, r.network_s / r.iteration_time_s);
      }
    }
    Decision reject;
    // The jobs' curves, built in place over the buffers of earlier
    // decisions (the first `num_curves` of curves_ are this decision's).
    size_t num_curves = 0;
    std::vector<std::pair<double, int>> ranked;  // (weight, curve) for the priority order
    // Grids priced at full bandwidth depend only on the job, the cluster
    // and the belief: kept across decisions (GridsOf).
    const bool keep_grids = !(p_.network && cluster.num_racks() > 1);
    if (keep_grids) kept_grids_.Begin(snap);
    for (size_t position = 0; position < snap.jobs.size(); ++position) {
      const JobView* job = snap.jobs[position];
      const JobGrids& jg = GridsOf(*job, position, snap, load, keep_grids);
      const std::vector<Grid>& grids = jg.grids;
      if (grids.empty()) {
        reject.reject.push_back({job->index, NeverRunsReason(*job, snap, std::max(1, job->spec->requested_gpus))});
        continue;
      }
      const Grid* ref = &grids[jg.ref];
      // What a restart on grid i costs (RestartDelay): the search alone
      // for a job that never ran, else saving its checkpoint where it runs,
      // loading it on the grid's nodes, the overhead and the search.
      const bool started = job->started();
      const double save = job->alloc.empty() ? 0.0 : CheckpointS(jg.ckpt_bytes, job->alloc.nodes());
      auto restart = [&](size_t i) {
        return started ? save + jg.ckpt_s[i] + p_.restart_overhead_s + jg.search_s[i] : jg.search_s[i];
      };
      double left = std::max(0.0, job->remaining_iterations());
      double t_ref = std::max(1.0, left * ref->iter_s);
      double age = std::max(0.0, ToSeconds(snap.now - job->spec->submit));
      double weight = (1.0 + age / p_.aging_s) / t_ref;
      // Deadline risk: the time left, and the fastest grid's time to finish
      // (its restart included); jobs that can no longer make it count as
      // jobs without a deadline.
      double to_deadline = -1, risk = 0;
      if (p_.deadline && job->spec->deadline) {
        to_deadline = ToSeconds(*job->spec->deadline - snap.now);
        double fastest = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < grids.size(); ++i) {
          const Grid& g = grids[i];
          bool current = !job->alloc.empty() && job->alloc.type == g.type && job->alloc.gpus() == g.gpus;
          fastest = std::min(fastest, left * g.iter_s + (current ? 0.0 : restart(i)));
        }
        if (to_deadline > 0 && fastest <= to_deadline) risk = fastest / to_deadline;
      }
      if (curves_.size() == num_curves) curves_.emplace_back();
      JobCurves& jc = curves_[num_curves];
      jc.job = job;
      const int cur_type = job->alloc.empty() ? -1 : job->alloc.type;
      const int cur_gpus = job->alloc.gpus();
      size_t used = 0;  // curves of jc.types filled
      // Grids come by type, then ascending count (Grids).
      for (size_t gi = 0; gi < grids.size();) {
        const int t = grids[gi].type;
        if (jc.types.size() == used) jc.types.emplace_back();
        TypeCurve& tc = jc.types[used];
        tc.type = t;
        tc.points.clear();
        tc.points.push_back({0, 0.0});
        for (; gi < grids.size() && grids[gi].type == t; ++gi) {
          const Grid& g = grids[gi];
          bool current = cur_type == t && cur_gpus == g.gpus;
          double time = left * g.iter_s;
          double delay = current ? 0.0 : p_.restart_penalty * restart(gi);
          double value = weight * jg.rate_ratio[gi] * (time / std::max(1e-9, time + delay));
          if (risk > 0 && time + (current ? 0.0 : restart(gi)) <= to_deadline) {
            value *= 1 + p_.deadline_weight * risk;
          }
          if (tc.points.back().gpus == g.gpus) {
            tc.points.back().utility = std::max(tc.points.back().utility, value);
          } else {
            tc.points.push_back({g.gpus, value});
          }
        }
        if (tc.points.size() > 1) ++used;
      }
      jc.types.resize(used);
      if (used == 0) continue;
      if (!(p_.backfill && p_.marginal)) ranked.push_back({weight, static_cast<int>(num_curves)});
      ++num_curves;
    }
    const std::span<const JobCurves> curves(curves_.data(), num_curves);
    std::vector<GoodputGrant> grants;
    if (p_.backfill && p_.marginal) {
      grants = AllocateByMarginalUtility(curves, capacity);
      admitted_ += ArenaAdmit(curves, capacity, p_.admit_jobs, p_.admit_actions, grants);
      // The greedy fixes a job's type by its smallest step; with GPUs to
      // spare, a job then takes its best grid outright (without this a lone
      // job could flip between two types every round, restarting for ever:
      // on each, the other type's small grids were worth more per GPU).
      ImproveBySingleMoves(curves, capacity, grants);
    } else {
      grants = InPriorityOrder(curves, std::move(ranked), capacity, /*block=*/!p_.backfill);
    }
    // A rejected job holds no GPUs (a job fits nowhere only if it never
    // fitted, so it was never placed), so PlaceGrants never names it.
    PlaceOptions place;
    place.defrag_moves = p_.defrag_moves;
    place.repack = p_.repack;
    PlaceStats stats;
    Decision d = PlaceGrants(snap, grants, place, &stats);
    migrations_ += stats.migrations;
    d.reject = std::move(reject.reject);
    // Each new allocation's Pareto plan set, for the executor.
    if (p_.plan_set > 0) {
      for (const auto& [index, alloc] : d.assign) {
        if (alloc.empty()) continue;
        // snap.jobs is sorted by index.
        const JobView* job = *std::lower_bound(snap.jobs.begin(), snap.jobs.end(), index,
                                               [](const JobView* j, int i) { return j->index < i; });
        std::vector<PlanChoice> set =
            snap.belief->PlanSet(*job->spec, alloc.type, alloc.gpus(), alloc.nodes(), p_.plan_set);
        if (!set.empty()) d.plans.push_back({index, std::move(set)});
      }
    }
    return d;
  }

  // What the explicit mechanisms did so far (for tests and reports).
  int64_t admitted() const { return admitted_; }
  int64_t migrations() const { return migrations_; }

 private:
  // The job's grids: (type, count) shapes that fit, ascending count per type.
  std::vector<Grid> Grids(const JobView& job, const Snapshot& snap, const NetworkLoad& load) {
    const Cluster& cluster = *snap.cluster;
    const JobSpec& s = *job.spec;
    std::vector<int> counts;
    int req = std::max(1, s.requested_gpus);
    if (p_.elastic && !RigidJob(job)) {
      int lo = std::max(1, s.min_gpus), hi = std::max(lo, s.max_gpus);
      for (int g = 1; g <= hi; g *= 2)
        if (g >= lo) counts.push_back(g);
      if (req >= lo && req <= hi) counts.push_back(req);
      if (counts.empty()) counts.push_back(lo);
      std::sort(counts.begin(), counts.end());
      counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    } else {
      counts.push_back(req);
    }
    int want = s.requested_gpu_type.empty() ? -1 : cluster.FindType(s.requested_gpu_type);
    std::vector<RateQuery> shapes;
    for (int t = 0; t < static_cast<int>(cluster.types().size()); ++t) {
      if ((!p_.hetero || s.gpu_type_required) && want >= 0 && t != want) continue;
      if (!s.AllowsGpuType(cluster.TypeName(t))) continue;
      for (int g : counts) {
        if (g > cluster.types()[t].total_gpus) break;
        int nodes = MinNodes(cluster, t, g);
        // Load-aware: a grid that must span racks shares their uplinks with
        // the cross-rack jobs already there. Every grid, the current one
        // too, is priced by where a grid of its size can expect to go, so a
        // decision stands when nothing changes.
        double share = p_.network ? load.ExpectedShare(t, nodes) : 1.0;
        shapes.push_back({&s, t, g, nodes, share});
      }
    }
    // A new job's grids are searched together (in parallel where the belief can).
    snap.belief->Prefetch(shapes);
    std::vector<Grid> out;
    for (const RateQuery& q : shapes) {
      const JobRate& r = snap.belief->RateShared(s, q.type, q.gpus, q.nodes, q.network_share);
      if (!r.fits || r.samples_per_s <= 0) continue;
      out.push_back({q.type, q.gpus, q.nodes, r.samples_per_s, r.iteration_time_s});
    }
    return out;
  }


  // The job's checkpoint size (its model's parameters, mixed precision).
  double CheckpointBytes(const JobView& job) {
    auto it = checkpoint_bytes_.find(job.spec->model);
    if (it == checkpoint_bytes_.end()) {
      auto m = FindModel(job.spec->model);
      double bytes = m.ok() ? (*m)->Params() * kCheckpointBytesPerParam : 0.0;
      it = checkpoint_bytes_.emplace(job.spec->model, bytes).first;
    }
    return it->second;
  }

  double CheckpointS(double bytes, int nodes) const { return bytes / (p_.storage_gbs * 1e9 * std::max(1, nodes)); }

  // A job's grids and what a decision derives from them alone: the
  // reference grid, each grid's rate relative to it, and the parts of a
  // restart onto it (loading the checkpoint on its nodes, the plan search).
  struct JobGrids {
    int rigid = -1;  // RigidJob when computed (-1: not yet)
    std::vector<Grid> grids;
    size_t ref = 0;
    double ckpt_bytes = 0;
    std::vector<double> rate_ratio, ckpt_s, search_s;
  };

  void Derive(const JobView& job, const Cluster& cluster, JobGrids& jg) {
    jg.ref = ReferenceGrid(job, jg.grids, cluster);
    jg.ckpt_bytes = CheckpointBytes(job);
    jg.rate_ratio.clear();
    jg.ckpt_s.clear();
    jg.search_s.clear();
    for (const Grid& g : jg.grids) {
      jg.rate_ratio.push_back(g.rate / jg.grids[jg.ref].rate);
      jg.ckpt_s.push_back(CheckpointS(jg.ckpt_bytes, g.nodes));
      jg.search_s.push_back(p_.full_search ? std::min(p_.full_search_cap_s, p_.full_search_s_per_gpu * g.gpus)
                                           : std::min(p_.search_cap_s, p_.search_s_per_gpu * g.gpus));
    }
  }

  // The reference grid for a job's weight: its request where it fits,
  // else the first grid.
  static size_t ReferenceGrid(const JobView& job, const std::vector<Grid>& grids, const Cluster& cluster) {
    int want = job.spec->requested_gpu_type.empty() ? -1 : cluster.FindType(job.spec->requested_gpu_type);
    for (size_t i = 0; i < grids.size(); ++i)
      if (grids[i].gpus == job.spec->requested_gpus && (want < 0 || grids[i].type == want)) return i;
    return 0;
  }

  // The grids of snap.jobs[position] (Grids): with `keep` (grids priced at
  // full bandwidth), kept from an earlier decision (kept_grids_, on which
  // Begin was called for `snap`); otherwise computed for this one.
  const JobGrids& GridsOf(const JobView& job, size_t position, const Snapshot& snap, const NetworkLoad& load,
                          bool keep) {
    JobGrids& jg = keep ? kept_grids_.At(position) : scratch_grids_;
    const int rigid = RigidJob(job) ? 1 : 0;
    if (!keep || jg.rigid != rigid) {
      jg.rigid = rigid;
      jg.grids = Grids(job, snap, load);
      Derive(job, *snap.cluster, jg);
    }
    return jg;
  }

  // Jobs in weight order: each takes its most valuable grid that fits
  // and holds at least its request (the request clamped to the job's grid
  // sizes); when none does, shrunk, its most valuable grid that fits. A job
  // for which nothing fits is skipped (backfill: later jobs use what is
  // left). For arena-no-backfill, a waiting job that cannot get its request
  // blocks every waiting job behind it.
  static std::vector<GoodputGrant> InPriorityOrder(std::span<const JobCurves> curves,
                                                   std::vector<std::pair<double, int>> ranked, std::vector<int> capacity,
                                                   bool block) {
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<GoodputGrant> out;
    bool blocked = false;
    for (const auto& [w, c] : ranked) {
      const JobCurves& jc = curves[c];
      int smallest = std::numeric_limits<int>::max(), largest = 0;
      for (const TypeCurve& tc : jc.types) {
        smallest = std::min(smallest, tc.points[1].gpus);
        largest = std::max(largest, tc.points.back().gpus);
      }
      const int request = std::clamp(std::max(1, jc.job->spec->requested_gpus), smallest, largest);
      const CurvePoint* full = nullptr;
      const CurvePoint* shrunk = nullptr;
      int full_type = -1, shrunk_type = -1;
      for (const TypeCurve& tc : jc.types) {
        for (size_t k = 1; k < tc.points.size(); ++k) {
          const CurvePoint& p = tc.points[k];
          if (p.gpus > capacity[tc.type]) continue;
          if (p.gpus >= request) {
            if (full == nullptr || p.utility > full->utility) {
              full = &p;
              full_type = tc.type;
            }
          } else if (shrunk == nullptr || p.utility > shrunk->utility) {
            shrunk = &p;
            shrunk_type = tc.type;
          }
        }
      }
      const bool running = !jc.job->alloc.empty();
      if (blocked && !running) continue;
      if (block && full == nullptr && !running) {
        // No backfill: a waiting job that cannot get its request stops
        // every waiting job behind it (running ones may still shrink).
        blocked = true;
        continue;
      }
      const CurvePoint* pick = full != nullptr ? full : shrunk;
      int type = full != nullptr ? full_type : shrunk_type;
      if (pick == nullptr) continue;
      capacity[type] -= pick->gpus;
      out.push_back({jc.job, type, pick->gpus, 0, c});
    }
    return out;
  }

  std::string name_;
  ArenaParams p_;
  PolicyTraits traits_;
  std::unique_ptr<NetworkModel> network_;  // the cluster's fabric, built once
  std::unordered_map<std::string, double> checkpoint_bytes_;
  JobFactsCache<JobGrids> kept_grids_;  // grids kept across decisions (GridsOf)
  JobGrids scratch_grids_;
  std::vector<JobCurves> curves_;  // buffers reused by each decision
  int64_t admitted_ = 0;
  int64_t migrations_ = 0;
};

Result<ArenaParams> ParseArenaOptions(const PolicyOptions& o, ArenaParams p) {
  for (auto [key, out] : {std::pair<const char*, double*>{"aging", &p.aging_s},
                          {"restart_penalty", &p.restart_penalty},
                          {"restart_overhead", &p.restart_overhead_s},
                          {"storage_gbs", &p.storage_gbs},
                          {"search_s_per_gpu", &p.search_s_per_gpu},
                          {"search_cap", &p.search_cap_s},
                          {"profile_config_s", &p.profile_config_s},
                          {"deadline_weight", &p.deadline_weight}}) {
    auto v = o.GetDouble(key, *out);
    if (!v.ok()) return v.status();
    if (!(*v >= 0)) return InvalidArgument(std::string("arena: ") + key + " must be >= 0");
    *out = *v;
  }
  if (!(p.aging_s > 0) || !(p.storage_gbs > 0)) return InvalidArgument("arena: aging and storage_gbs must be > 0");
  for (double v : {p.aging_s, p.restart_penalty, p.restart_overhead_s, p.storage_gbs, p.search_s_per_gpu, p.search_cap_s,
                   p.profile_config_s}) {
    if (!std::isfinite(v) || v > 1e9) {
      return InvalidArgument("arena: expected finite option values of at most 1e9 (seconds, GB/s)");
    }
  }
  for (auto [key, out] : {std::pair<const char*, int*>{"admit_jobs", &p.admit_jobs},
                          {"admit_actions", &p.admit_actions},
                          {"defrag_moves", &p.defrag_moves},
                          {"plan_set", &p.plan_set}}) {
    auto v = o.GetDouble(key, *out);
    if (!v.ok()) return v.status();
    if (!(*v >= 0 && *v <= 1000) || *v != std::floor(*v)) {
      return InvalidArgument(std::string("arena: ") + key + " must be a whole number from 0 to 1000");
    }
    *out = static_cast<int>(*v);
  }
  for (auto [key, out] : {std::pair<const char*, bool*>{"elastic", &p.elastic},
                          {"hetero", &p.hetero},
                          {"backfill", &p.backfill},
                          {"full_search", &p.full_search},
                          {"marginal", &p.marginal},
                          {"repack", &p.repack},
                          {"network", &p.network},
                          {"deadline", &p.deadline}}) {
    auto v = o.GetBool(key, *out);
    if (!v.ok()) return v.status();
    *out = *v;
  }
  if (o.Has("profiling")) {
    auto k = ParseProfilingKind(o.GetString("profiling", "disaggregated"));
    if (!k.ok()) return InvalidArgument("arena: " + k.status().message());
    p.profiling = *k;
  }
  if (o.Has("parallelism")) {
    auto m = ParsePlanMode(o.GetString("parallelism", "best"));
    if (!m.ok()) return InvalidArgument("arena: " + m.status().message());
    p.plan_mode = *m;
  }
  return p;
}

}  // namespace

void RegisterArenaPolicies(PolicyRegistry& registry) {
  struct Variant {
    const char* name;
    const char* summary;
    ArenaParams params;
  };
  ArenaParams base;
  ArenaParams no_elastic = base, no_hetero = base, dp = base, no_backfill = base, full_search = base, ddl = base;
  ddl.deadline = true;
  no_elastic.elastic = false;
  no_hetero.hetero = false;
  dp.plan_mode = PlanMode::kDataParallel;
  no_backfill.backfill = false;
  full_search.full_search = true;
  const std::vector<std::string> options = {
      "aging=<seconds> (default 86400)",
      "restart_penalty=<x> (default 3; a change is valued as if its restart took x times its delay)",
      "restart_overhead=<s> (default 10)", "storage_gbs=<GB/s per node> (default 2)",
      "search_s_per_gpu=<s> (default 10)", "search_cap=<s> (default 40)", "elastic=true|false",
      "hetero=true|false", "backfill=true|false", "full_search=true|false", "parallelism=best|dp",
      "marginal=true|false (default true; false: job by job in weight order)",
      "profiling=disaggregated|direct|none (default disaggregated)", "profile_config_s=<s per profiled configuration> (default 60)",
      "admit_jobs=<n> (default 4; waiting jobs per decision the shrink/type-change search tries; 0 = off)",
      "admit_actions=<n> (default 2; shrinks or type changes it may make per admitted job)",
      "defrag_moves=<n> (default 2; jobs a placement may migrate to defragment; 0 = off)",
      "repack=true|false (default true; a grant still short after that may re-place every job)",
      "network=true|false (default true; grids across racks priced by the network model's expected link share)",
      "plan_set=<n> (default 4; plans of each new allocation's Pareto set handed to the executor; 0 = none)",
      "deadline=true|false (default false; arena-ddl: true): value deadline jobs by the risk of missing them",
      "deadline_weight=<k> (default 4): a grid meeting a deadline is worth 1 + k * risk times more"};
  for (const Variant& v : {
           Variant{"arena",
                   "tessel's co-designed policy (after Arena/Crius): grids of (GPU type, count) with the planner's best "
                   "plan, marginal-gain elastic heterogeneous allocation, restart-aware, admission search, defragmentation, "
                   "Pareto plan sets for the executor",
                   base},
           Variant{"arena-no-elastic", "arena ablation: jobs keep their requested GPU count", no_elastic},
           Variant{"arena-no-hetero", "arena ablation: jobs keep their requested GPU type", no_hetero},
           Variant{"arena-dp", "arena ablation: data-parallel plans only", dp},
           Variant{"arena-no-backfill", "arena ablation: a waiting job that cannot get its request blocks the jobs behind it (no backfilling)", no_backfill},
           Variant{"arena-full-search", "arena ablation: restarts pay a full plan search", full_search},
           Variant{"arena-ddl",
                   "arena with deadline awareness (as the Arena artifact's crius-ddl): a deadline job's grids that "
                   "finish in time are valued by the risk of missing it",
                   ddl},
       }) {
    ArenaParams params = v.params;
    std::string name = v.name;
    Status s = registry.Register(
        {name, v.summary, options,
         [params, name](const PolicyOptions& o, const PolicyContext&) -> Result<std::unique_ptr<Policy>> {
           auto p = ParseArenaOptions(o, params);
           if (!p.ok()) return p.status();
           return std::unique_ptr<Policy>(new ArenaPolicy(name, *p));
         }});
    assert(s.ok());
    (void)s;
  }
}

}  // namespace tessel
