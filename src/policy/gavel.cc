#include "policy/gavel.h"

#include <algorithm>
#include <cassert>
#include <map>
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

Result<GavelLpSolution> SolveGavelLp(GavelObjective objective, const std::vector<GavelLpJob>& jobs,
                                     const std::vector<int>& capacity) {
  const int n = static_cast<int>(jobs.size());
  const int num_types = static_cast<int>(capacity.size());
  GavelLpSolution sol = ZeroSolution(jobs.size(), capacity.size());
  double total_capacity = 0;
  for (int c : capacity) total_capacity += std::max(c, 0);
  if (total_capacity <= 0) return sol;

  // Identical jobs (same scale and throughputs) share one row of the LP,
  // weighted by their number: the LP is symmetric in them, so averaging any
  // optimum over them is an optimum that gives each the same X. Classes are
  // numbered in order of first appearance.
  struct Class {
    const GavelLpJob* job;
    int count = 0;
    std::vector<int> var;      // per type: LP variable of X, or -1 (X = 0)
    std::vector<double> coef;  // per type: thr / norm
  };
  std::vector<Class> classes;
  std::map<std::pair<int, std::vector<double>>, int> class_of_shape;
  std::vector<int> class_of(n, -1);
  for (int j = 0; j < n; ++j) {
    assert(static_cast<int>(jobs[j].throughput.size()) == num_types && "GavelLpJob: one throughput per type");
    assert(jobs[j].scale >= 1 && "GavelLpJob: scale must be >= 1");
    auto [it, added] = class_of_shape.try_emplace({jobs[j].scale, jobs[j].throughput}, classes.size());
    if (added) classes.push_back({&jobs[j], 0, {}, {}});
    class_of[j] = it->second;
    ++classes[it->second].count;
  }

  const bool max_min = IsMaxMin(objective);
  LinearProgram lp(LinearProgram::kMaximize);
  std::vector<int> active;  // classes with at least one variable
  for (int c = 0; c < static_cast<int>(classes.size()); ++c) {
    Class& cl = classes[c];
    const GavelLpJob& job = *cl.job;
    cl.var.assign(num_types, -1);
    cl.coef.assign(num_types, 0.0);
    double norm = 0;
    for (int k = 0; k < num_types; ++k) {
      if (job.throughput[k] > 0) norm += job.throughput[k] * std::max(capacity[k], 0);
    }
    norm /= total_capacity;
    if (!(norm > 0)) continue;
    for (int k = 0; k < num_types; ++k) {
      if (!(job.throughput[k] > 0) || job.scale > capacity[k]) continue;
      cl.coef[k] = job.throughput[k] / norm;
      cl.var[k] = lp.AddVariable(0, 1, max_min ? 0.0 : cl.count * cl.coef[k]);
    }
    if (std::any_of(cl.var.begin(), cl.var.end(), [](int v) { return v >= 0; })) active.push_back(c);
  }
  if (active.empty()) return sol;
  const int t = max_min ? lp.AddVariable(0, kLpInfinity, 1.0) : -1;

  std::vector<LpTerm> terms;
  for (int c : active) {  // sum_k X[j][k] <= 1
    terms.clear();
    for (int k = 0; k < num_types; ++k) {
      if (classes[c].var[k] >= 0) terms.push_back({classes[c].var[k], 1.0});
    }
    lp.AddConstraint(terms, -kLpInfinity, 1.0);
  }
  for (int k = 0; k < num_types; ++k) {  // sum_j s_j X[j][k] <= cap_k
    terms.clear();
    for (int c : active) {
      const Class& cl = classes[c];
      if (cl.var[k] >= 0) terms.push_back({cl.var[k], static_cast<double>(cl.count) * cl.job->scale});
    }
    if (!terms.empty()) lp.AddConstraint(terms, -kLpInfinity, capacity[k]);
  }
  if (max_min) {  // s_j * sum_k coef X[j][k] - t >= 0
    for (int c : active) {
      const Class& cl = classes[c];
      terms.clear();
      for (int k = 0; k < num_types; ++k) {
        if (cl.var[k] >= 0) terms.push_back({cl.var[k], cl.job->scale * cl.coef[k]});
      }
      terms.push_back({t, -1.0});
      lp.AddConstraint(terms, 0.0, kLpInfinity);
    }
  }

  Status s = lp.Solve();
  if (!s.ok()) return Internal("Gavel LP: " + s.message());
  sol.iterations = lp.iterations();
  std::vector<double> x = lp.values();
  if (max_min) {
    // Second phase: keep the minimum, use the rest of the capacity.
    lp.SetVariableBounds(t, x[t] * (1 - kMaxMinSlack), kLpInfinity);
    lp.SetObjective(t, 0.0);
    for (int c : active) {
      const Class& cl = classes[c];
      for (int k = 0; k < num_types; ++k) {
        if (cl.var[k] >= 0) lp.SetObjective(cl.var[k], cl.count * cl.job->scale * cl.coef[k]);
      }
    }
    Status s2 = lp.Solve();
    sol.iterations += lp.iterations();
    if (s2.ok()) x = lp.values();  // else keep the first phase's optimum
  }

  double min_term = kLpInfinity;
  double sum_term = 0;
  for (int j = 0; j < n; ++j) {
    const Class& cl = classes[class_of[j]];
    if (cl.var.empty() || std::none_of(cl.var.begin(), cl.var.end(), [](int v) { return v >= 0; })) continue;
    double term = 0;
    for (int k = 0; k < num_types; ++k) {
      if (cl.var[k] < 0) continue;
      double v = std::clamp(x[cl.var[k]], 0.0, 1.0);
      if (v < kNegligible) v = 0;
      sol.time_fraction[j][k] = v;
      term += cl.coef[k] * v;
    }
    if (max_min) term *= cl.job->scale;
    sol.normalized_throughput[j] = term;
    min_term = std::min(min_term, term);
    sum_term += term;
  }
  sol.objective = max_min ? min_term : sum_term;
  return sol;
}

GavelProblem BuildGavelProblem(const Snapshot& snap) {
  const Cluster& cluster = *snap.cluster;
  const int num_types = static_cast<int>(cluster.types().size());
  GavelProblem p;
  p.capacity = UpGpusByType(snap);
  for (const JobView* job : snap.jobs) {
    const JobSpec& spec = *job->spec;
    GavelLpJob row;
    row.scale = std::max(1, spec.requested_gpus);
    row.throughput.assign(num_types, 0.0);
    bool fits = false;
    std::string why;
    for (int k = 0; k < num_types; ++k) {
      const GpuTypeInfo& info = cluster.types()[k];
      if (info.total_gpus < row.scale) continue;
      const JobRate& r = snap.belief->Rate(spec, k, row.scale, MinNodes(cluster, k, row.scale));
      if (!r.fits || !(r.iteration_time_s > 0)) {
        if (why.empty()) why = cluster.TypeName(k) + ": " + (r.reason.empty() ? "does not fit" : r.reason);
        continue;
      }
      fits = true;
      if (p.capacity[k] >= row.scale) row.throughput[k] = 1.0 / r.iteration_time_s;
    }
    if (!fits) {
      p.reject.push_back({job->index, "fits on no GPU type of the cluster on " + std::to_string(row.scale) +
                                          " GPUs" + (why.empty() ? "" : " (" + why + ")")});
      continue;
    }
    p.jobs.push_back(job->index);
    p.rows.push_back(std::move(row));
  }
  return p;
}

namespace {

class GavelPolicy : public BaselinePolicy {
 public:
  GavelPolicy(GavelObjective objective, PlanMode mode)
      : BaselinePolicy(IsMaxMin(objective) ? "gavel" : "gavel-throughput", true, mode), objective_(objective) {}

  Decision Decide(const Snapshot& snap) override {
    Decision d;
    GavelProblem problem = BuildGavelProblem(snap);
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
    const GavelLpSolution& alloc = Solution(problem);

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
        if (!(problem.rows[r].throughput[k] > 0) || scale > problem.capacity[k]) continue;
        double x = alloc.time_fraction[r][k];
        double attained = k < static_cast<int>(job.attained_gpu_s_by_type.size()) ? job.attained_gpu_s_by_type[k] : 0;
        double received_s = attained / scale;
        double received = elapsed_s > 0 ? received_s / elapsed_s : 0;
        double priority = x <= 0 ? 0 : received > 0 ? x / received : kUnservedPriority * x;
        entries.push_back({priority, x * elapsed_s - received_s, x, job.index, k, r});
      }
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return std::tie(b.priority, b.deficit, b.x, a.job, a.type) < std::tie(a.priority, a.deficit, a.x, b.job, b.type);
    });

    // Greedy: a job at most once, while its type has the GPUs.
    std::vector<int> chosen(rows, -1);
    for (const Entry& e : entries) {
      if (chosen[e.row] >= 0) continue;
      int scale = problem.rows[e.row].scale;
      if (avail[e.type] < scale) continue;
      avail[e.type] -= scale;
      chosen[e.row] = e.type;
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
    Result<GavelLpSolution> sol = SolveGavelLp(objective_, problem.rows, problem.capacity);
    cache_ = Cached{problem.jobs, problem.capacity,
                    sol.ok() ? std::move(*sol) : ZeroSolution(problem.rows.size(), problem.capacity.size())};
    return cache_->solution;
  }

  struct Cached {
    std::vector<int> jobs;
    std::vector<int> capacity;
    GavelLpSolution solution;
  };

  GavelObjective objective_;
  std::optional<Cached> cache_;
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
