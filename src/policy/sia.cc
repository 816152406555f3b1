#include "policy/sia.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "policy/goodput_alloc.h"
#include "policy/goodput_oracle.h"
#include "policy/lp.h"
#include "policy/placement.h"

namespace tessel {
namespace {

struct Config {
  int type;
  int nodes;
  int gpus;
};

// Sia's configuration set of one type: 1, 2, 4, ... GPUs on a node, then
// 2, 3, ... whole nodes. Replaces `out`.
void TypeConfigs(const GpuTypeInfo& info, int type, int max_gpus, std::vector<Config>& out) {
  out.clear();
  int gpn = std::max(1, info.max_gpus_per_node);
  for (int g = 1; g <= gpn && g <= max_gpus; g *= 2) out.push_back({type, 1, g});
  if (out.empty() || out.back().gpus != gpn) {
    if (gpn <= max_gpus) out.push_back({type, 1, gpn});
  }
  for (int n = 2; n <= static_cast<int>(info.nodes.size()) && n * gpn <= max_gpus; ++n) out.push_back({type, n, n * gpn});
}

// A variable of the program: `job` (an index into the snapshot's jobs) on
// `config`.
struct Var {
  int job;
  Config config;
};

// Options within this much of each other (in the objective's units) are
// left to the solver: far above its tolerances (1e-7 on scaled reduced
// costs), so the shortcut never picks what the solver would not.
constexpr double kShortcutMargin = 1e-4;

// The program's optimum when no GPU type is contended, without the solver.
// `job_ends` delimits each job's variables in `vars` (costs `costs`). Each
// job alone would take its cheapest variable if that costs less than no
// allocation (0). When every job's choice beats its next-best option (no
// allocation included) by kShortcutMargin and the choices fit `capacity`,
// they are the unique optimum of the program and of its LP relaxation,
// which is then integral: exactly what the solver returns. Sets `chosen`
// (per job, the variable taken or -1) and returns true then; returns false
// when the solver must decide (also on a cost that is not finite).
bool UncontendedOptimum(const std::vector<Var>& vars, const std::vector<double>& costs,
                        const std::vector<size_t>& job_ends, const std::vector<int>& capacity,
                        std::vector<int>& chosen) {
  std::vector<int> left = capacity;
  chosen.assign(job_ends.size(), -1);
  for (size_t i = 0, k = 0; i < job_ends.size(); k = job_ends[i++]) {
    double best = 0, second = kLpInfinity;  // costs; no allocation costs 0
    int best_var = -1;
    for (size_t m = k; m < job_ends[i]; ++m) {
      if (!std::isfinite(costs[m])) return false;
      if (costs[m] < best) {
        second = best;
        best = costs[m];
        best_var = static_cast<int>(m);
      } else {
        second = std::min(second, costs[m]);
      }
    }
    if (!(second - best >= kShortcutMargin)) return false;
    if (best_var < 0) continue;
    const Config& c = vars[best_var].config;
    left[c.type] -= c.gpus;
    if (left[c.type] < 0) return false;
    chosen[i] = best_var;
  }
  return true;
}

// Bounds on one round's branch-and-cut: subproblems (deterministic), and
// wall time as a last resort (GLPK counts wall time; see lp.h).
constexpr int kMipNodeLimit = 20000;
constexpr int kMipTimeLimitMs = 60000;
// Relative optimality gap at which branch-and-cut stops.
constexpr double kMipGap = 1e-3;
// Up to this many variables the program is solved exactly (branch-and-cut);
// beyond, its LP relaxation is solved and the few fractional jobs rounded.
constexpr int kExactMaxVariables = 4000;

}  // namespace

Result<Decision> SiaDecide(const Snapshot& snap, const SiaParams& params, SiaRoundStats* stats,
                           GoodputCache* cache) {
  const Cluster& cluster = *snap.cluster;
  const int ntypes = static_cast<int>(cluster.types().size());
  GoodputOracle oracle(snap, /*type_aware=*/true, cache);

  std::vector<int> capacity = UpGpusByType(snap);

  std::vector<Var> vars;
  std::vector<double> lp_costs;  // objective coefficient of each variable
  // Per job in the program, one past its last variable (its row's terms
  // are the variables since the previous job's end).
  std::vector<size_t> job_ends;
  int jobs_in = 0;
  // Per job, reused: its configurations (ascending GPUs within each type),
  // their goodputs and costs, and one type's configuration set.
  std::vector<Config> configs, cs;
  std::vector<double> goodputs, coefs;
  for (int j = 0; j < static_cast<int>(snap.jobs.size()); ++j) {
    const JobView& job = *snap.jobs[j];
    const JobSpec& s = *job.spec;
    const bool rigid = RigidJob(job);
    auto [lo, cap] = GoodputGpuRange(job, std::min(oracle.MaxGpus(job), params.max_gpus));
    int want_type = s.requested_gpu_type.empty() ? -1 : cluster.FindType(s.requested_gpu_type);
    configs.clear();
    goodputs.clear();
    for (int t = 0; t < ntypes; ++t) {
      if (want_type >= 0 && t != want_type) continue;
      TypeConfigs(cluster.types()[t], t, cap, cs);
      if (rigid && std::none_of(cs.begin(), cs.end(), [lo = lo](const Config& c) { return c.gpus == lo; }) &&
          lo <= cluster.types()[t].total_gpus) {
        cs.push_back({t, MinNodes(cluster, t, lo), lo});
      }
      for (const Config& c : cs) {
        if (c.gpus < lo || c.gpus > cap || c.gpus > capacity[t]) continue;
        double g = oracle.Goodput(job, t, c.gpus, c.nodes);
        if (g <= 0) continue;
        configs.push_back(c);
        goodputs.push_back(g);
      }
    }
    if (configs.empty()) continue;
    ++jobs_in;
    double min_g = *std::min_element(goodputs.begin(), goodputs.end());
    double age = ToSeconds(snap.now - s.submit);
    double factor = std::max(0.0, age - job.restarts * params.restart_penalty_s) / (age + params.restart_penalty_s);
    coefs.resize(configs.size());
    for (size_t k = 0; k < configs.size(); ++k) {
      const Config& c = configs[k];
      bool current = !job.alloc.empty() && job.alloc.type == c.type && job.alloc.gpus() == c.gpus;
      // Only a job that holds GPUs pays for changing them (as Sia's
      // artifact: jobs without a previous allocation are not rescaled).
      double v = goodputs[k] / min_g * (current || job.alloc.empty() ? 1.0 : factor);
      // x * v^p for p < 0 (a zero value is never worth taking: clip as Sia does).
      double a = v > 0 ? std::min(std::pow(v, params.p), 200.0) : 200.0;
      coefs[k] = a - params.lambda_n + params.lambda_a * (current ? -1.0 : 1.0);
    }
    for (size_t k = 0; k < configs.size(); ++k) {
      const Config& c = configs[k];
      // A configuration that costs no less than a smaller one of the same
      // type can never be in an optimal solution (the smaller one frees
      // GPUs at no loss): leave it out. Configurations ascend by size.
      bool dominated = false;
      for (size_t m = 0; m < k && !dominated; ++m)
        dominated = configs[m].type == c.type && configs[m].gpus <= c.gpus && coefs[m] <= coefs[k];
      if (dominated) continue;
      vars.push_back({j, c});
      lp_costs.push_back(coefs[k]);
    }
    job_ends.push_back(vars.size());
  }
  if (stats) {
    stats->variables = static_cast<int>(vars.size());
    stats->jobs = jobs_in;
  }
  std::vector<GoodputGrant> grants;
  auto grant = [&](size_t k) {
    const Config& c = vars[k].config;
    grants.push_back({snap.jobs[vars[k].job], c.type, c.gpus, c.nodes});
  };
  if (vars.empty()) return PlaceGrants(snap, grants);
  if (params.shortcut_uncontended) {
    std::vector<int> chosen;
    if (UncontendedOptimum(vars, lp_costs, job_ends, capacity, chosen)) {
      for (int k : chosen) {
        if (k >= 0) grant(k);
      }
      return PlaceGrants(snap, grants);
    }
  }
  if (stats) stats->solved = true;
  // Each job's columns, then its row; then one row per type. GLPK's answer
  // (among equal optima, and within the gap) depends on this order.
  LinearProgram lp(LinearProgram::kMinimize);
  std::vector<std::vector<LpTerm>> per_type(ntypes);
  for (size_t i = 0, k = 0; i < job_ends.size(); ++i) {
    std::vector<LpTerm> one;
    for (; k < job_ends[i]; ++k) {
      int x = lp.AddVariable(0, 1, lp_costs[k]);
      one.push_back({x, 1.0});
      per_type[vars[k].config.type].push_back({x, static_cast<double>(vars[k].config.gpus)});
    }
    lp.AddConstraint(one, -kLpInfinity, 1.0);
  }
  for (int t = 0; t < ntypes; ++t) {
    if (!per_type[t].empty()) lp.AddConstraint(per_type[t], -kLpInfinity, capacity[t]);
  }
  const bool exact = static_cast<int>(vars.size()) <= kExactMaxVariables;
  if (exact) {
    for (size_t k = 0; k < vars.size(); ++k) lp.SetInteger(static_cast<int>(k));
    lp.SetMipTimeLimitMs(kMipTimeLimitMs);
    lp.SetMipNodeLimit(kMipNodeLimit);
    lp.SetMipGap(kMipGap);
  }
  Status st = lp.Solve();
  if (!st.ok()) return Status(st.code(), "sia: " + st.message());
  if (stats) stats->hit_time_limit = lp.mip_hit_limit();
  std::vector<double> x = lp.values();
  // Jobs the relaxation left fractional (none when exact; with the LP
  // alone, a basic solution has few: one row per GPU type binds them).
  std::vector<uint8_t> fractional(snap.jobs.size(), 0);
  for (size_t k = 0; k < vars.size(); ++k)
    if (x[k] > 1e-6 && x[k] < 1 - 1e-6) fractional[vars[k].job] = 1;
  std::vector<int> left = capacity;
  for (size_t k = 0; k < vars.size(); ++k) {
    if (fractional[vars[k].job] || x[k] <= 0.5) continue;
    grant(k);
    left[vars[k].config.type] -= vars[k].config.gpus;
  }
  // Round: each fractional job, in job order, takes its cheapest
  // configuration that still fits (if it beats no allocation).
  for (size_t k = 0; k < vars.size();) {
    size_t end = k;
    while (end < vars.size() && vars[end].job == vars[k].job) ++end;
    if (fractional[vars[k].job]) {
      int best = -1;
      for (size_t m = k; m < end; ++m) {
        const Config& c = vars[m].config;
        double cost = lp_costs[m];
        if (c.gpus <= left[c.type] && cost < 0 && (best < 0 || cost < lp_costs[best])) best = static_cast<int>(m);
      }
      if (best >= 0) {
        grant(best);
        left[vars[best].config.type] -= vars[best].config.gpus;
      }
      if (stats) ++stats->rounded_jobs;
    }
    k = end;
  }
  return PlaceGrants(snap, grants);
}

namespace {

class SiaPolicy : public Policy {
 public:
  SiaPolicy(SiaParams params, PlanMode mode) : params_(params) {
    traits_.uses_rounds = true;
    traits_.plan_mode = mode;
    traits_.adapts_batch = true;
    traits_.profiles_types = true;
  }
  std::string_view name() const override { return "sia"; }
  PolicyTraits traits() const override { return traits_; }
  Decision Decide(const Snapshot& snap) override {
    // Sia solves once per round; events wait for it.
    if (!snap.at_round) return {};
    auto d = SiaDecide(snap, params_, /*stats=*/nullptr, &cache_);
    // A solver failure keeps every allocation as it is this round.
    return d.ok() ? std::move(*d) : Decision{};
  }

 private:
  SiaParams params_;
  PolicyTraits traits_;
  GoodputCache cache_;
};

}  // namespace

void RegisterSiaPolicy(PolicyRegistry& registry) {
  Status s = registry.Register(
      {"sia",
       "Sia (Jayaram Subramanya et al., SOSP 2023): each round, an integer program over (job x GPU type x "
       "configuration) goodputs with fairness p, restart and no-allocation penalties (GLPK)",
       {"p=<exponent> (default -0.5)", "lambda_n=<no-allocation penalty> (default 1.1)",
        "lambda_a=<allocation-change penalty> (default 0.01)", "restart_penalty=<seconds> (default 30)",
        "max_gpus=<per job> (default 64)"},
       [](const PolicyOptions& o, const PolicyContext& ctx) -> Result<std::unique_ptr<Policy>> {
         SiaParams p;
         auto get = [&](const char* key, double& out) -> Status {
           auto v = o.GetDouble(key, out);
           if (!v.ok()) return v.status();
           out = *v;
           return Status::Ok();
         };
         double max_gpus = p.max_gpus;
         for (auto [key, out] : {std::pair<const char*, double*>{"p", &p.p}, {"lambda_n", &p.lambda_n},
                                 {"lambda_a", &p.lambda_a}, {"restart_penalty", &p.restart_penalty_s},
                                 {"max_gpus", &max_gpus}}) {
           Status st = get(key, *out);
           if (!st.ok()) return st;
         }
         if (!(p.p < 0) || p.lambda_n < 0 || p.lambda_a < 0 || p.restart_penalty_s < 0 || max_gpus < 1) {
           return InvalidArgument(
               "sia: expected p < 0 (the minimising form), lambda_n, lambda_a, restart_penalty >= 0, max_gpus >= 1");
         }
         if (max_gpus != std::floor(max_gpus) || max_gpus > 1e6) {
           return InvalidArgument("sia: max_gpus must be a whole number of GPUs, got " + o.GetString("max_gpus", ""));
         }
         p.max_gpus = static_cast<int>(max_gpus);
         return std::unique_ptr<Policy>(new SiaPolicy(p, ctx.baseline_plan_mode));
       }});
  assert(s.ok());
  (void)s;
}

}  // namespace tessel
