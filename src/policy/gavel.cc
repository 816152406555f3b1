#include "policy/gavel.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "policy/lp.h"
#include "policy/placement.h"

namespace tessel {
namespace {

// Time fractions below this are solver noise.
constexpr double kNegligible = 1e-9;
// Priority per unit of X of a pair that has never run (Gavel's 1e9).
constexpr double kUnservedPriority = 1e9;
// Max-min's second phase keeps every job within this relative distance of
// the max-min value.
constexpr double kMaxMinSlack = 1e-9;

bool IsMaxMin(GavelObjective o) { return o == GavelObjective::kMaxMinFairness; }

// The solution with every time fraction 0 (nothing to solve, or the solver
// failed: the round mechanism then shares GPUs by received time alone).
GavelLpSolution ZeroSolution(size_t jobs, size_t types) {
  GavelLpSolution sol;
  sol.time_fraction.assign(jobs, std::vector<double>(types, 0.0));
  sol.normalized_throughput.assign(jobs, 0.0);
  return sol;
}

// The first multiple of `round` after `since`: until then a job keeps the
// GPUs it was given (its lease on them).
SimTime LeaseEnd(SimTime since, SimTime round) {
  SimTime q = since / round;
  if (since % round != 0 && since < 0) --q;  // floor
  return (q + 1) * round;
}

bool OnUpNodes(const Allocation& alloc, const Snapshot& snap) {
  for (const Placement& p : alloc.parts) {
    if (p.node < 0 || p.node >= static_cast<int>(snap.node_up.size()) || !snap.node_up[p.node]) return false;
  }
  return true;
}

}  // namespace

struct GavelLp::State {
  struct Class {
    int scale = 1;
    std::vector<int> var;      // per type: LP variable of X, or -1 (X = 0)
    std::vector<double> coef;  // per type: thr / norm
    int fair_row = -1;         // s * sum coef X - t >= 0 (max-min)
    int count = 0;
    bool active = false;       // bounds set for count > 0
    bool has_vars() const { return std::any_of(var.begin(), var.end(), [](int v) { return v >= 0; }); }
  };
  State(GavelObjective objective, const std::vector<int>& cap) : capacity(cap) {
    for (int c : capacity) total_capacity += std::max(c, 0);
    lps.emplace_back(LinearProgram::kMaximize);
    if (IsMaxMin(objective)) {
      lps.emplace_back(LinearProgram::kMaximize);
      for (size_t p = 0; p < lps.size(); ++p) t = lps[p].AddVariable(0, kLpInfinity, p == 0 ? 1.0 : 0.0);
    }
  }
  // The class of a job of this shape, added to the programs when new.
  int ClassOf(GavelObjective objective, const GavelLpJob& job);

  std::vector<int> capacity;
  double total_capacity = 0;
  std::map<std::pair<int, std::vector<double>>, int> class_of_shape;
  std::vector<Class> classes;
  // Phase 1 (max-min value, or the max-sum objective) and phase 2 (max-min
  // only: the most work at that value), with the same variables and rows.
  std::vector<LinearProgram> lps;
  int t = -1;
  std::vector<int> cap_rows;  // per type, in every program
  bool phase2_solved = false;
};

int GavelLp::State::ClassOf(GavelObjective objective, const GavelLpJob& job) {
  auto [it, added] = class_of_shape.try_emplace({job.scale, job.throughput}, classes.size());
  if (!added) return it->second;
  const int num_types = static_cast<int>(capacity.size());
  Class cl;
  cl.scale = job.scale;
  cl.var.assign(num_types, -1);
  cl.coef.assign(num_types, 0.0);
  double norm = 0;
  for (int k = 0; k < num_types; ++k) {
    if (job.throughput[k] > 0) norm += job.throughput[k] * std::max(capacity[k], 0);
  }
  norm /= total_capacity;
  if (norm > 0) {
    for (int k = 0; k < num_types; ++k) {
      if (!(job.throughput[k] > 0) || job.scale > capacity[k]) continue;
      cl.coef[k] = job.throughput[k] / norm;
      for (LinearProgram& lp : lps) cl.var[k] = lp.AddVariable(0, 0, 0);  // inactive until counted
    }
  }
  if (cl.has_vars()) {
    std::vector<LpTerm> limit, fair;
    for (int k = 0; k < num_types; ++k) {
      if (cl.var[k] < 0) continue;
      limit.push_back({cl.var[k], 1.0});
      fair.push_back({cl.var[k], cl.scale * cl.coef[k]});
    }
    for (LinearProgram& lp : lps) lp.AddConstraint(limit, -kLpInfinity, 1.0);  // sum_k X <= 1
    if (IsMaxMin(objective)) {
      fair.push_back({t, -1.0});
      for (LinearProgram& lp : lps) cl.fair_row = lp.AddConstraint(fair, -kLpInfinity, kLpInfinity);
    }
  }
  classes.push_back(std::move(cl));
  return it->second;
}

GavelLp::GavelLp(GavelObjective objective) : objective_(objective) {}
GavelLp::~GavelLp() = default;

Result<GavelLpSolution> SolveGavelLp(GavelObjective objective, const std::vector<GavelLpJob>& jobs,
                                     const std::vector<int>& capacity) {
  return GavelLp(objective).Solve(jobs, capacity);
}

Result<GavelLpSolution> GavelLp::Solve(const std::vector<GavelLpJob>& jobs, const std::vector<int>& capacity) {
  const int n = static_cast<int>(jobs.size());
  const int num_types = static_cast<int>(capacity.size());
  GavelLpSolution sol = ZeroSolution(jobs.size(), capacity.size());
  int dead = 0;
  if (state_) {
    for (const State::Class& cl : state_->classes) dead += cl.count == 0;
  }
  if (!state_ || state_->capacity != capacity || dead > 64 + static_cast<int>(state_->classes.size()) / 2) {
    state_ = std::make_unique<State>(objective_, capacity);
  }
  State& st = *state_;
  if (st.total_capacity <= 0) return sol;

  // Identical jobs share one class, weighted by their number: the LP is
  // symmetric in them, so averaging any optimum over them is an optimum
  // that gives each the same X.
  std::vector<int> class_of(n, -1);
  for (int j = 0; j < n; ++j) {
    assert(static_cast<int>(jobs[j].throughput.size()) == num_types && "GavelLpJob: one throughput per type");
    assert(jobs[j].scale >= 1 && "GavelLpJob: scale must be >= 1");
    class_of[j] = st.ClassOf(objective_, jobs[j]);
  }
  std::vector<int> count(st.classes.size(), 0);
  for (int c : class_of) ++count[c];

  const bool max_min = IsMaxMin(objective_);
  bool any = false;
  for (size_t c = 0; c < st.classes.size(); ++c) {
    State::Class& cl = st.classes[c];
    cl.count = count[c];
    if (!cl.has_vars()) continue;
    const bool on = cl.count > 0;
    any |= on;
    if (on != cl.active) {
      for (LinearProgram& lp : st.lps) {
        for (int v : cl.var) {
          if (v >= 0) lp.SetVariableBounds(v, 0, on ? 1 : 0);
        }
        if (cl.fair_row >= 0) lp.SetConstraintBounds(cl.fair_row, on ? 0.0 : -kLpInfinity, kLpInfinity);
      }
      cl.active = on;
    }
    // Objectives: max-sum sums count * thr X / norm; max-min's second
    // phase the normalised work count * s * thr X / norm.
    for (int k = 0; k < num_types; ++k) {
      if (cl.var[k] < 0) continue;
      if (!max_min) st.lps[0].SetObjective(cl.var[k], cl.count * cl.coef[k]);
      if (max_min) st.lps[1].SetObjective(cl.var[k], cl.count * cl.scale * cl.coef[k]);
    }
  }
  if (!any) return sol;
  if (st.cap_rows.empty()) {  // after the first classes' rows: a better first basis
    for (size_t k = 0; k < capacity.size(); ++k) {
      int row = -1;  // the same index in every program
      for (LinearProgram& lp : st.lps) row = lp.AddConstraint({}, -kLpInfinity, capacity[k]);
      st.cap_rows.push_back(row);
    }
  }
  std::vector<LpTerm> terms;
  for (int k = 0; k < num_types; ++k) {  // sum_j s_j X[j][k] <= cap_k
    terms.clear();
    for (const State::Class& cl : st.classes) {
      if (cl.var[k] >= 0 && cl.count > 0) terms.push_back({cl.var[k], static_cast<double>(cl.count) * cl.scale});
    }
    for (LinearProgram& lp : st.lps) lp.SetConstraintTerms(st.cap_rows[k], terms);
  }

  Status s = st.lps[0].Solve();
  if (!s.ok()) {
    state_.reset();  // start afresh next time
    return Internal("Gavel LP: " + s.message());
  }
  sol.iterations = st.lps[0].iterations();
  const LinearProgram* solved = &st.lps[0];
  if (max_min) {
    // Second phase: keep the minimum, use the rest of the capacity.
    LinearProgram& lp2 = st.lps[1];
    if (!st.phase2_solved) lp2.WarmStartFrom(st.lps[0]);  // a fresh program: from the first phase's basis
    st.phase2_solved = true;
    lp2.SetVariableBounds(st.t, st.lps[0].value(st.t) * (1 - kMaxMinSlack), kLpInfinity);
    Status s2 = lp2.Solve();
    sol.iterations += lp2.iterations();
    if (s2.ok()) solved = &lp2;  // else keep the first phase's optimum
  }

  double min_term = kLpInfinity;
  double sum_term = 0;
  for (int j = 0; j < n; ++j) {
    const State::Class& cl = st.classes[class_of[j]];
    if (!cl.has_vars()) continue;
    double term = 0;
    for (int k = 0; k < num_types; ++k) {
      if (cl.var[k] < 0) continue;
      double v = std::clamp(solved->value(cl.var[k]), 0.0, 1.0);
      if (v < kNegligible) v = 0;
      sol.time_fraction[j][k] = v;
      term += cl.coef[k] * v;
    }
    if (max_min) term *= cl.scale;
    sol.normalized_throughput[j] = term;
    min_term = std::min(min_term, term);
    sum_term += term;
  }
  sol.objective = max_min ? min_term : sum_term;
  return sol;
}

GavelProblem BuildGavelProblem(const Snapshot& snap, GavelRowCache* cache) {
  GavelProblem p;
  BuildGavelProblem(snap, cache, p);
  return p;
}

void BuildGavelProblem(const Snapshot& snap, GavelRowCache* cache, GavelProblem& p) {
  const Cluster& cluster = *snap.cluster;
  const int num_types = static_cast<int>(cluster.types().size());
  p.capacity = UpGpusByType(snap);
  p.jobs.clear();
  p.reject.clear();
  size_t used = 0;  // rows filled; p.rows keeps its vectors for reuse
  GavelRowCache::Entry scratch;
  for (const JobView* job : snap.jobs) {
    const JobSpec& spec = *job->spec;
    GavelRowCache::Entry* e = &scratch;
    bool known = false;
    if (cache != nullptr) {
      e = &cache->jobs[job->index];
      // The same spec object (a job's index names one job; its model never
      // changes, its batch may under batch-adapting backends).
      known = e->spec == &spec && e->batch == spec.global_batch;
    }
    if (!known) {
      e->spec = &spec;
      e->batch = spec.global_batch;
      e->scale = std::max(1, spec.requested_gpus);
      e->throughput.assign(num_types, 0.0);
      e->why.clear();
      for (int k = 0; k < num_types; ++k) {
        const GpuTypeInfo& info = cluster.types()[k];
        if (info.total_gpus < e->scale) continue;
        const JobRate& r = snap.belief->Rate(spec, k, e->scale, MinNodes(cluster, k, e->scale));
        if (!r.fits || !(r.iteration_time_s > 0)) {
          if (e->why.empty()) e->why = cluster.TypeName(k) + ": " + (r.reason.empty() ? "does not fit" : r.reason);
          continue;
        }
        e->throughput[k] = 1.0 / r.iteration_time_s;
      }
    }
    if (used == p.rows.size()) p.rows.emplace_back();
    GavelLpJob& row = p.rows[used];
    row.scale = e->scale;
    row.throughput.assign(num_types, 0.0);
    bool fits = false;
    for (int k = 0; k < num_types; ++k) {
      if (!(e->throughput[k] > 0)) continue;
      fits = true;
      if (p.capacity[k] >= row.scale) row.throughput[k] = e->throughput[k];
    }
    if (!fits) {
      p.reject.push_back({job->index, "fits on no GPU type of the cluster on " + std::to_string(row.scale) +
                                          " GPUs" + (e->why.empty() ? "" : " (" + e->why + ")")});
      continue;
    }
    p.jobs.push_back(job->index);
    ++used;
  }
  p.rows.resize(used);
  if (cache != nullptr && cache->jobs.size() > 2 * snap.jobs.size() + 64) {
    // Forget jobs that left (finished or rejected).
    std::unordered_map<int, GavelRowCache::Entry> kept;
    for (const JobView* job : snap.jobs) kept.emplace(job->index, std::move(cache->jobs[job->index]));
    cache->jobs = std::move(kept);
  }
}

namespace {

class GavelPolicy : public BaselinePolicy {
 public:
  GavelPolicy(GavelObjective objective, PlanMode mode)
      : BaselinePolicy(IsMaxMin(objective) ? "gavel" : "gavel-throughput", true, mode), objective_(objective) {}

  // A job's row of the throughput matrix: its rate at its scale factor on
  // every type that has that many GPUs (BuildGavelProblem).
  std::vector<RateQuery> LikelyQuestions(const JobSpec& job, const Cluster& cluster) const override {
    std::vector<RateQuery> out;
    const int scale = std::max(1, job.requested_gpus);
    for (int k = 0; k < static_cast<int>(cluster.types().size()); ++k)
      if (cluster.types()[k].total_gpus >= scale) out.push_back({&job, k, scale, MinNodes(cluster, k, scale)});
    return out;
  }

  Decision Decide(const Snapshot& snap) override {
    Decision d;
    BuildGavelProblem(snap, &rows_, problem_);
    const GavelProblem& problem = problem_;
    const int rows = static_cast<int>(problem.jobs.size());
    const int num_types = static_cast<int>(problem.capacity.size());

    // The view of each row, and rejections (only of jobs holding nothing).
    std::vector<const JobView*> view(rows, nullptr);
    {
      size_t r = 0, q = 0;
      for (const JobView* job : snap.jobs) {
        if (r < problem.jobs.size() && problem.jobs[r] == job->index) {
          view[r++] = job;
        } else if (q < problem.reject.size() && problem.reject[q].first == job->index) {
          if (job->alloc.empty()) d.reject.push_back(problem.reject[q]);
          ++q;
        }
      }
    }

    // Leased holders keep their GPUs; the others' GPUs are up for grabs.
    const SimTime round = snap.round_length > 0 ? snap.round_length : Seconds(300);
    FreeMap free(snap);
    std::vector<char> settled(rows, 0);  // keeps its GPUs untouched (leased)
    std::vector<char> holder(rows, 0);
    for (int r = 0; r < rows; ++r) {
      const JobView& job = *view[r];
      if (job.alloc.empty()) continue;
      holder[r] = 1;
      if (snap.now < LeaseEnd(job.alloc_since, round)) {
        settled[r] = 1;
      } else if (OnUpNodes(job.alloc, snap)) {
        free.Release(job.alloc);
      }
    }

    // Nothing to decide when every holder is leased and no waiting job fits
    // in the idle GPUs (most events mid-round): skip the LP.
    std::vector<int> avail(num_types);
    for (int k = 0; k < num_types; ++k) avail[k] = free.free_of_type(k);
    bool open = false;
    for (int r = 0; r < rows && !open; ++r) {
      if (settled[r]) continue;
      for (int k = 0; k < num_types && !open; ++k) {
        open = holder[r] || (problem.rows[r].throughput[k] > 0 && avail[k] >= problem.rows[r].scale);
      }
    }
    if (!open) return d;
    // X per row: the LP is re-solved at rounds (when the jobs or the
    // capacity changed); between rounds the last solution stands, and a job
    // it does not know has X = 0 (it only gets GPUs that would idle), as
    // Gavel allocates only at round boundaries.
    const std::vector<double> none(num_types, 0.0);
    std::vector<const std::vector<double>*> x_of(rows, &none);
    if (snap.at_round || !cache_) {
      const GavelLpSolution& alloc = Solution(problem);
      for (int r = 0; r < rows; ++r) x_of[r] = &alloc.time_fraction[r];
    } else {
      for (int r = 0; r < rows; ++r) {
        auto it = cache_->row_of.find(problem.jobs[r]);
        if (it != cache_->row_of.end()) x_of[r] = &cache_->solution.time_fraction[it->second];
      }
    }

    // Priorities of every (job, type) pair the job can run on.
    struct Entry {
      double priority, deficit, x;
      int job, type, row;
    };
    std::vector<Entry> entries;
    for (int r = 0; r < rows; ++r) {
      if (settled[r]) continue;
      const JobView& job = *view[r];
      const int scale = problem.rows[r].scale;
      const double elapsed_s = std::max(0.0, ToSeconds(snap.now - job.spec->submit));
      for (int k = 0; k < num_types; ++k) {
        // avail only shrinks: a type without room for it now never has.
        if (!(problem.rows[r].throughput[k] > 0) || scale > problem.capacity[k] || scale > avail[k]) continue;
        double x = (*x_of[r])[k];
        double attained = k < static_cast<int>(job.attained_gpu_s_by_type.size()) ? job.attained_gpu_s_by_type[k] : 0;
        double received_s = attained / scale;
        double received = elapsed_s > 0 ? received_s / elapsed_s : 0;
        double priority = x <= 0 ? 0 : received > 0 ? x / received : kUnservedPriority * x;
        entries.push_back({priority, x * elapsed_s - received_s, x, job.index, k, r});
      }
    }
    // Greedy in priority order: a job at most once, while its type has the
    // GPUs; the order is total (ties: job, then type index). Each row's
    // entries are contiguous (built row by row); sorted best first, a heap
    // of rows keyed by each row's next entry walks all entries in that
    // order without the entries of rows already chosen.
    auto later = [](const Entry& a, const Entry& b) {
      return std::tie(a.priority, a.deficit, a.x, b.job, b.type) < std::tie(b.priority, b.deficit, b.x, a.job, a.type);
    };
    struct Cursor {
      int pos, end;
    };
    std::vector<Cursor> cursors;
    for (size_t b = 0; b < entries.size();) {
      size_t e = b + 1;
      while (e < entries.size() && entries[e].row == entries[b].row) ++e;
      std::sort(entries.begin() + b, entries.begin() + e, [&](const Entry& x, const Entry& y) { return later(y, x); });
      cursors.push_back({static_cast<int>(b), static_cast<int>(e)});
      b = e;
    }
    auto behind = [&](const Cursor& a, const Cursor& b) { return later(entries[a.pos], entries[b.pos]); };
    std::make_heap(cursors.begin(), cursors.end(), behind);
    std::vector<int> chosen(rows, -1);
    // Stop once no type has GPUs for its smallest entry.
    std::vector<int> smallest(num_types, std::numeric_limits<int>::max());
    for (const Entry& e : entries) smallest[e.type] = std::min(smallest[e.type], problem.rows[e.row].scale);
    auto room = [&] {
      for (int k = 0; k < num_types; ++k) {
        if (avail[k] >= smallest[k]) return true;
      }
      return false;
    };
    while (!cursors.empty() && room()) {
      std::pop_heap(cursors.begin(), cursors.end(), behind);
      Cursor& c = cursors.back();
      const Entry& e = entries[c.pos];
      const int scale = problem.rows[e.row].scale;
      if (avail[e.type] >= scale) {
        avail[e.type] -= scale;
        chosen[e.row] = e.type;
        cursors.pop_back();
      } else if (++c.pos < c.end) {
        std::push_heap(cursors.begin(), cursors.end(), behind);
      } else {
        cursors.pop_back();
      }
    }

    // Chosen again on the same type: keep the same GPUs. Then place the
    // rest, largest first, consolidated.
    std::vector<std::optional<Allocation>> placed(rows);
    std::vector<char> kept(rows, 0);
    for (int r = 0; r < rows; ++r) {
      const JobView& job = *view[r];
      if (chosen[r] >= 0 && holder[r] && job.alloc.type == chosen[r] && OnUpNodes(job.alloc, snap)) {
        free.Take(job.alloc);
        kept[r] = 1;
      }
    }
    std::vector<int> order;
    for (int r = 0; r < rows; ++r) {
      if (chosen[r] >= 0 && !kept[r]) order.push_back(r);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return problem.rows[a].scale > problem.rows[b].scale; });
    for (int r : order) placed[r] = free.Place(chosen[r], problem.rows[r].scale);

    for (int r = 0; r < rows; ++r) {
      if (settled[r] || kept[r]) continue;
      if (placed[r]) {
        d.assign.push_back({view[r]->index, std::move(*placed[r])});
      } else if (holder[r]) {
        d.assign.push_back({view[r]->index, Allocation{}});  // suspend
      }
    }
    return d;
  }

 private:
  // The LP's solution for `problem`, re-solved only when the jobs or the
  // capacity changed (the rows are a function of both).
  const GavelLpSolution& Solution(const GavelProblem& problem) {
    if (cache_ && cache_->jobs == problem.jobs && cache_->capacity == problem.capacity) return cache_->solution;
    Result<GavelLpSolution> sol = lp_.Solve(problem.rows, problem.capacity);
    cache_ = Cached{problem.jobs, problem.capacity,
                    sol.ok() ? std::move(*sol) : ZeroSolution(problem.rows.size(), problem.capacity.size()),
                    {}};
    for (size_t r = 0; r < problem.jobs.size(); ++r) cache_->row_of.emplace(problem.jobs[r], static_cast<int>(r));
    return cache_->solution;
  }

  struct Cached {
    std::vector<int> jobs;
    std::vector<int> capacity;
    GavelLpSolution solution;
    std::unordered_map<int, int> row_of;  // job index -> row of the solution
  };

  GavelObjective objective_;
  std::optional<Cached> cache_;
  GavelRowCache rows_;
  GavelProblem problem_;  // this decision's, its memory reused
  GavelLp lp_{objective_};
};

}  // namespace

void RegisterGavelPolicies(PolicyRegistry& registry) {
  struct Entry {
    const char* name;
    const char* summary;
    GavelObjective objective;
  };
  for (const Entry& e : {
           Entry{"gavel",
                 "Gavel (Narayanan et al., OSDI 2020): heterogeneity-aware max-min fairness over per-GPU-type "
                 "time fractions (LP), round-based time slicing",
                 GavelObjective::kMaxMinFairness},
           Entry{"gavel-throughput",
                 "Gavel (Narayanan et al., OSDI 2020): heterogeneity-aware max-sum normalized throughput (LP), "
                 "round-based time slicing",
                 GavelObjective::kMaxSumThroughput},
       }) {
    GavelObjective objective = e.objective;
    Status s = registry.Register(
        {e.name, e.summary, {},
         [objective](const PolicyOptions&, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
           return std::unique_ptr<Policy>(new GavelPolicy(objective, ctx.baseline_plan_mode));
         }});
    assert(s.ok());
    (void)s;
  }
}

}  // namespace tessel
