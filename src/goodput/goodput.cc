#include "goodput/goodput.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/strings.h"

namespace tessel::goodput {

// ---------------------------------------------------------------------------
// Statistical efficiency.

Result<ScalingRule> ParseScalingRule(std::string_view s) {
  const std::string name = ToLower(Trim(s));
  if (name == "adascale") return ScalingRule::kAdaScale;
  if (name == "linear") return ScalingRule::kLinear;
  if (name == "sqrt") return ScalingRule::kSqrt;
  return InvalidArgument(
      UnknownNameMessage("scaling rule", s, {"adascale", "linear", "sqrt"}));
}

const char* ScalingRuleName(ScalingRule r) {
  switch (r) {
    case ScalingRule::kAdaScale: return "adascale";
    case ScalingRule::kLinear: return "linear";
    case ScalingRule::kSqrt: return "sqrt";
  }
  return "?";
}

namespace {

// AdaScale's gain at scale s. Negative statistics are estimation noise and
// count as zero, which keeps the gain within [1, s] for s >= 1.
double AdaScaleGain(const GradStats& g, double s) {
  const double var = std::max(g.var, 0.0);
  const double sqr = std::max(g.sqr, 0.0);
  if (var <= 0 && sqr <= 0) return s;  // unknown: perfect scaling
  const double den = var / s + sqr;
  if (!(den > 0)) return 1;
  return (var + sqr) / den;
}

}  // namespace

double Gain(const GradStats& g, double init_batch, double batch, ScalingRule rule) {
  if (!(init_batch > 0) || !(batch > 0)) return 0;
  const double s = batch / init_batch;
  const double ada = AdaScaleGain(g, s);
  switch (rule) {
    case ScalingRule::kAdaScale:
    case ScalingRule::kLinear:
      return ada;
    case ScalingRule::kSqrt:
      return std::min(std::sqrt(s), ada);
  }
  return ada;
}

double Efficiency(const GradStats& g, double init_batch, double batch, ScalingRule rule) {
  if (!(init_batch > 0) || !(batch > 0)) return 0;
  return Gain(g, init_batch, batch, rule) / (batch / init_batch);
}

double LrScale(const GradStats& g, double init_batch, double batch, ScalingRule rule) {
  if (!(init_batch > 0) || !(batch > 0)) return 0;
  const double s = batch / init_batch;
  switch (rule) {
    case ScalingRule::kAdaScale: return AdaScaleGain(g, s);
    case ScalingRule::kLinear: return s;
    case ScalingRule::kSqrt: return std::sqrt(s);
  }
  return s;
}

// ---------------------------------------------------------------------------
// Throughput model.

std::string ThroughputParams::ToString() const {
  return "alpha_c=" + FormatDouble(alpha_c) + " beta_c=" + FormatDouble(beta_c) +
         " alpha_n=" + FormatDouble(alpha_n) + " beta_n=" + FormatDouble(beta_n) +
         " alpha_r=" + FormatDouble(alpha_r) + " beta_r=" + FormatDouble(beta_r) +
         " gamma=" + FormatDouble(gamma);
}

double PredictAccumTime(const ThroughputParams& p, double atomic_bsz) {
  return p.alpha_c + p.beta_c * atomic_bsz;
}

double PredictSyncTime(const ThroughputParams& p, int nodes, int replicas) {
  const double extra = std::max(replicas - 2, 0);
  if (nodes > 1) return p.alpha_n + p.beta_n * extra;
  if (replicas > 1) return p.alpha_r + p.beta_r * extra;
  return 0;
}

namespace {

// (a^g + s^g)^(1/g) without overflow for large g; a when s is 0.
double CombineTimes(double accum, double sync, double gamma) {
  if (!(sync > 0)) return accum;
  if (!(accum > 0)) return sync;
  const double hi = std::max(accum, sync), lo = std::min(accum, sync);
  return hi * std::pow(1.0 + std::pow(lo / hi, gamma), 1.0 / gamma);
}

}  // namespace

double PredictStepTime(const ThroughputParams& p, int nodes, int replicas, double atomic_bsz) {
  return CombineTimes(PredictAccumTime(p, atomic_bsz), PredictSyncTime(p, nodes, replicas),
                      p.gamma);
}

double PredictThroughput(const ThroughputParams& p, int nodes, int replicas, double atomic_bsz,
                         int accum) {
  const double time = accum * PredictAccumTime(p, atomic_bsz) +
                      PredictStepTime(p, nodes, replicas, atomic_bsz);
  if (!(time > 0)) return 0;
  return replicas * atomic_bsz * (accum + 1) / time;
}

// ---------------------------------------------------------------------------
// Fitting.
//
// The objective is minimised over u = (log alpha_c, log beta_c, log alpha_n,
// log beta_n, log alpha_r, log beta_r, gamma): the times span orders of
// magnitude, and in log space the scale of every parameter is comparable.
// The bounds become log(1e-8) <= u_i for the first six and 1 <= gamma <= 10.
// Pinned parameters are held out of the search entirely.
//
// The optimiser is a projected BFGS (dense Hessian approximation: at most
// seven variables) with an active set (variables at a bound whose gradient
// points outwards do not move), an Armijo backtracking line search along
// the projected path, and analytic gradients. Deterministic: no randomness
// and a fixed evaluation order.

namespace {

constexpr int kNumParams = 7;
constexpr int kGamma = 6;
constexpr double kLowerBound = 1e-8;
constexpr double kGammaMin = 1.0, kGammaMax = 10.0;

using Vec = std::array<double, kNumParams>;

struct Problem {
  // Per observation.
  std::vector<double> bsz;        // atomic batch size
  std::vector<double> extra;      // max(replicas - 2, 0)
  std::vector<int> link;          // 0: none (r == 1), 1: inter-node, 2: intra-node
  std::vector<double> log_accum;  // log observed accum time
  std::vector<double> log_step;   // log observed step time
  // Bounds in u space.
  Vec lo{}, hi{};
};

// Parameters at u; a variable at its lower bound maps to exactly 1e-8.
ThroughputParams ToParams(const Vec& u) {
  const double log_lo = std::log(kLowerBound);
  auto value = [&](int j) { return u[j] <= log_lo ? kLowerBound : std::exp(u[j]); };
  ThroughputParams p;
  p.alpha_c = value(0);
  p.beta_c = value(1);
  p.alpha_n = value(2);
  p.beta_n = value(3);
  p.alpha_r = value(4);
  p.beta_r = value(5);
  p.gamma = u[kGamma];
  return p;
}

struct Errors {
  double rmsle_accum = 0, rmsle_step = 0;
};

// Objective value at u; fills the gradient with respect to u when `grad`.
double Objective(const Problem& pb, const Vec& u, Vec* grad, Errors* errors = nullptr) {
  const size_t n = pb.bsz.size();
  const double ac = std::exp(u[0]), bc = std::exp(u[1]);
  const double an = std::exp(u[2]), bn = std::exp(u[3]);
  const double ar = std::exp(u[4]), br = std::exp(u[5]);
  const double g = u[kGamma];

  double sse_a = 0, sse_t = 0;
  // Gradients of the sums sum(e_a * de_a/du) and sum(e_t * de_t/du).
  Vec ga{}, gt{};
  for (size_t i = 0; i < n; ++i) {
    const double b = pb.bsz[i];
    const double accum = ac + bc * b;
    const double la = std::log(accum);
    const double ea = la - pb.log_accum[i];
    sse_a += ea * ea;
    // d la / d u for the compute parameters.
    const double dla_ac = ac / accum, dla_bc = bc * b / accum;
    double lt = la, et;
    if (pb.link[i] == 0) {
      et = lt - pb.log_step[i];
      sse_t += et * et;
      if (grad) {
        ga[0] += ea * dla_ac;
        ga[1] += ea * dla_bc;
        gt[0] += et * dla_ac;
        gt[1] += et * dla_bc;
      }
      continue;
    }
    const int ia = pb.link[i] == 1 ? 2 : 4;  // index of alpha_x; beta_x is ia + 1
    const double ax = pb.link[i] == 1 ? an : ar, bx = pb.link[i] == 1 ? bn : br;
    const double m = pb.extra[i];
    const double sync = ax + bx * m;
    const double ls = std::log(sync);
    // log T = mx + log(exp(g (la - mx)) + exp(g (ls - mx))) / g.
    const double mx = std::max(la, ls);
    const double ea_w = std::exp(g * (la - mx)), es_w = std::exp(g * (ls - mx));
    const double sum = ea_w + es_w;
    lt = mx + std::log(sum) / g;
    et = lt - pb.log_step[i];
    sse_t += et * et;
    if (grad) {
      const double wa = ea_w / sum, ws = es_w / sum;  // d lt / d la, d lt / d ls
      ga[0] += ea * dla_ac;
      ga[1] += ea * dla_bc;
      gt[0] += et * wa * dla_ac;
      gt[1] += et * wa * dla_bc;
      gt[ia] += et * ws * ax / sync;
      gt[ia + 1] += et * ws * bx * m / sync;
      gt[kGamma] += et * (wa * la + ws * ls - lt) / g;
    }
  }
  const double rms_a = std::sqrt(sse_a / static_cast<double>(n));
  const double rms_t = std::sqrt(sse_t / static_cast<double>(n));
  const double ratio_n = std::exp(u[3] - u[2]), ratio_r = std::exp(u[5] - u[4]);
  const double f = rms_a + rms_t + 1e-3 * (g - 1) * (g - 1) +
                   1e-2 * (ratio_n * ratio_n + ratio_r * ratio_r);
  if (errors) {
    errors->rmsle_accum = rms_a;
    errors->rmsle_step = rms_t;
  }
  if (grad) {
    // d rms / du = sum(e de/du) / (n rms); at rms == 0 the minimum is exact
    // and 0 is a subgradient.
    const double ka = rms_a > 0 ? 1.0 / (static_cast<double>(n) * rms_a) : 0.0;
    const double kt = rms_t > 0 ? 1.0 / (static_cast<double>(n) * rms_t) : 0.0;
    for (int j = 0; j < kNumParams; ++j) (*grad)[j] = ka * ga[j] + kt * gt[j];
    (*grad)[kGamma] += 2e-3 * (g - 1);
    (*grad)[3] += 2e-2 * ratio_n * ratio_n;
    (*grad)[2] -= 2e-2 * ratio_n * ratio_n;
    (*grad)[5] += 2e-2 * ratio_r * ratio_r;
    (*grad)[4] -= 2e-2 * ratio_r * ratio_r;
  }
  return f;
}

struct MinimizeResult {
  Vec u{};
  double f = 0;
  int iterations = 0;
};

// Cholesky solve of a (row-major, n x n) symmetric system in place: a is
// overwritten by its factor, b by the solution. False when a is not
// positive definite.
bool CholeskySolve(std::vector<double>& a, std::vector<double>& b, int n) {
  for (int j = 0; j < n; ++j) {
    double diag = a[static_cast<size_t>(j * n + j)];
    for (int q = 0; q < j; ++q) diag -= a[static_cast<size_t>(j * n + q)] * a[static_cast<size_t>(j * n + q)];
    if (!(diag > 0)) return false;
    const double ljj = std::sqrt(diag);
    a[static_cast<size_t>(j * n + j)] = ljj;
    for (int i = j + 1; i < n; ++i) {
      double v = a[static_cast<size_t>(i * n + j)];
      for (int q = 0; q < j; ++q) v -= a[static_cast<size_t>(i * n + q)] * a[static_cast<size_t>(j * n + q)];
      a[static_cast<size_t>(i * n + j)] = v / ljj;
    }
  }
  for (int i = 0; i < n; ++i) {  // L z = b
    double v = b[static_cast<size_t>(i)];
    for (int q = 0; q < i; ++q) v -= a[static_cast<size_t>(i * n + q)] * b[static_cast<size_t>(q)];
    b[static_cast<size_t>(i)] = v / a[static_cast<size_t>(i * n + i)];
  }
  for (int i = n - 1; i >= 0; --i) {  // L^T x = z
    double v = b[static_cast<size_t>(i)];
    for (int q = i + 1; q < n; ++q) v -= a[static_cast<size_t>(q * n + i)] * b[static_cast<size_t>(q)];
    b[static_cast<size_t>(i)] = v / a[static_cast<size_t>(i * n + i)];
  }
  return true;
}

// Projected BFGS over the variables in `free_vars`; the others stay fixed.
// Keeps a Hessian approximation B and, each iteration, takes the Newton
// step of B restricted to the variables not held at a bound (variables at a
// bound whose gradient points outwards are held), followed by an Armijo
// backtracking search along the projected path. The BFGS update ignores
// the held variables, so a parameter resting on its bound does not spoil
// the curvature of the others.
MinimizeResult Minimize(const Problem& pb, Vec u, const std::vector<int>& free_vars) {
  constexpr int kMaxIterations = 200;
  constexpr int kMaxBacktracks = 40;
  constexpr double kArmijo = 1e-4;
  constexpr double kTolF = 1e-11;     // a decrease this small is no progress
  constexpr double kTolGrad = 1e-10;  // projected-gradient convergence
  const int k = static_cast<int>(free_vars.size());
  const size_t kk = static_cast<size_t>(k);

  auto project = [&](Vec& x) {
    for (int v : free_vars) x[v] = std::clamp(x[v], pb.lo[v], pb.hi[v]);
  };
  project(u);

  MinimizeResult res;
  Vec g{};
  double f = Objective(pb, u, &g);
  res.u = u;
  res.f = f;
  if (k == 0) return res;

  std::vector<double> b(kk * kk, 0.0);
  auto reset_b = [&](double scale) {
    std::fill(b.begin(), b.end(), 0.0);
    for (size_t i = 0; i < kk; ++i) b[i * kk + i] = scale;
  };
  double gmax = 0;
  for (int v : free_vars) gmax = std::max(gmax, std::abs(g[v]));
  // The first step moves at most one unit (a factor e in a parameter).
  double b_scale = std::max(1.0, gmax);
  reset_b(b_scale);
  bool scaled = false;

  std::vector<bool> held(kk);
  std::vector<size_t> moving;
  std::vector<double> sub, rhs, d(kk), s(kk), y(kk), bs(kk);
  int stalls = 0;
  for (int it = 0; it < kMaxIterations; ++it) {
    res.iterations = it + 1;
    moving.clear();
    double pg = 0;
    for (size_t i = 0; i < kk; ++i) {
      const int v = free_vars[i];
      held[i] = (u[v] <= pb.lo[v] && g[v] > 0) || (u[v] >= pb.hi[v] && g[v] < 0);
      if (!held[i]) {
        moving.push_back(i);
        pg = std::max(pg, std::abs(g[v]));
      }
    }
    if (pg < kTolGrad) break;

    // Newton step of B on the moving variables.
    const size_t m = moving.size();
    auto newton = [&]() {
      sub.assign(m * m, 0.0);
      rhs.assign(m, 0.0);
      for (size_t i = 0; i < m; ++i) {
        rhs[i] = -g[free_vars[moving[i]]];
        for (size_t j = 0; j < m; ++j) sub[i * m + j] = b[moving[i] * kk + moving[j]];
      }
      return CholeskySolve(sub, rhs, static_cast<int>(m));
    };
    if (!newton()) {  // lost positive definiteness: start the curvature over
      reset_b(b_scale);
      scaled = false;
      newton();
    }
    std::fill(d.begin(), d.end(), 0.0);
    for (size_t i = 0; i < m; ++i) d[moving[i]] = rhs[i];

    // Backtracking along the projected path.
    double t = 1, fn = f;
    Vec un{}, gn{};
    bool accepted = false;
    for (int ls = 0; ls < kMaxBacktracks; ++ls) {
      un = u;
      for (size_t i = 0; i < kk; ++i) un[free_vars[i]] += t * d[i];
      project(un);
      double slope = 0;
      for (int v : free_vars) slope += g[v] * (un[v] - u[v]);
      if (!(slope < 0)) break;  // the projected path does not descend
      fn = Objective(pb, un, &gn);
      if (std::isfinite(fn) && fn <= f + kArmijo * slope) {
        accepted = true;
        break;
      }
      t *= 0.5;
    }
    if (!accepted) {
      if (scaled) {  // retry once from steepest descent before giving up
        reset_b(b_scale);
        scaled = false;
        continue;
      }
      break;
    }

    // BFGS update of B over the moving variables.
    double sy = 0, ss = 0, yy = 0;
    for (size_t i = 0; i < kk; ++i) {
      const int v = free_vars[i];
      s[i] = un[v] - u[v];
      y[i] = held[i] ? 0.0 : gn[v] - g[v];
      sy += s[i] * y[i];
      ss += s[i] * s[i];
      yy += y[i] * y[i];
    }
    const double decrease = f - fn;
    u = un;
    g = gn;
    f = fn;
    if (sy > 1e-10 * std::sqrt(ss * yy) && sy > 0) {
      if (!scaled) {
        b_scale = yy / sy;
        reset_b(b_scale);
        scaled = true;
      }
      double sbs = 0;
      for (size_t i = 0; i < kk; ++i) {
        double acc = 0;
        for (size_t j = 0; j < kk; ++j) acc += b[i * kk + j] * s[j];
        bs[i] = acc;
        sbs += s[i] * acc;
      }
      if (sbs > 0) {
        for (size_t i = 0; i < kk; ++i)
          for (size_t j = 0; j < kk; ++j)
            b[i * kk + j] += y[i] * y[j] / sy - bs[i] * bs[j] / sbs;
      }
    }
    if (decrease < kTolF) {
      if (++stalls >= 2) break;
    } else {
      stalls = 0;
    }
  }
  res.u = u;
  res.f = f;
  return res;
}

}  // namespace

Result<FitResult> FitThroughputParams(std::span<const StepObservation> obs) {
  if (obs.empty()) return InvalidArgument("no step observations to fit");
  Problem pb;
  const size_t n = obs.size();
  pb.bsz.reserve(n);
  pb.extra.reserve(n);
  pb.link.reserve(n);
  pb.log_accum.reserve(n);
  pb.log_step.reserve(n);
  bool multi_node = false, single_node_multi_gpu = false, over_two = false;
  bool one_bsz = true;
  double accum_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const StepObservation& o = obs[i];
    auto bad = [&](const char* field, const std::string& why) {
      return InvalidArgument("step observation " + std::to_string(i) + ": " + field + " " + why);
    };
    if (o.nodes < 1) return bad("nodes", "must be positive, got " + std::to_string(o.nodes));
    if (o.replicas < 1)
      return bad("replicas", "must be positive, got " + std::to_string(o.replicas));
    if (o.replicas < o.nodes)
      return bad("replicas", "(" + std::to_string(o.replicas) + ") is fewer than nodes (" +
                                 std::to_string(o.nodes) + ")");
    if (!(o.atomic_bsz > 0) || !std::isfinite(o.atomic_bsz))
      return bad("atomic_bsz", "must be positive and finite, got " + FormatDouble(o.atomic_bsz));
    if (!(o.accum_time > 0) || !std::isfinite(o.accum_time))
      return bad("accum_time", "must be positive and finite, got " + FormatDouble(o.accum_time));
    if (!(o.step_time > 0) || !std::isfinite(o.step_time))
      return bad("step_time", "must be positive and finite, got " + FormatDouble(o.step_time));
    multi_node |= o.nodes > 1;
    single_node_multi_gpu |= o.nodes == 1 && o.replicas > 1;
    over_two |= o.replicas > 2;
    one_bsz &= o.atomic_bsz == obs[0].atomic_bsz;
    accum_sum += o.accum_time;
    pb.bsz.push_back(o.atomic_bsz);
    pb.extra.push_back(std::max(o.replicas - 2, 0));
    pb.link.push_back(o.nodes > 1 ? 1 : (o.replicas > 1 ? 2 : 0));
    pb.log_accum.push_back(std::log(o.accum_time));
    pb.log_step.push_back(std::log(o.step_time));
  }

  const double log_lo = std::log(kLowerBound);
  Vec u{};
  for (int j = 0; j < 6; ++j) {
    u[j] = std::log(j % 2 == 0 ? 0.1 : 0.01);
    pb.lo[j] = log_lo;
    pb.hi[j] = std::numeric_limits<double>::infinity();
  }
  u[kGamma] = 1.001;
  pb.lo[kGamma] = kGammaMin;
  pb.hi[kGamma] = kGammaMax;
  std::array<bool, kNumParams> pinned{};
  auto pin = [&](int j, double value) {
    u[j] = pb.lo[j] = pb.hi[j] = value;
    pinned[j] = true;
  };
  const double alpha_c_pin = accum_sum / static_cast<double>(n) / 2;
  if (one_bsz) pin(0, std::log(alpha_c_pin));
  if (!multi_node) {
    pin(2, log_lo);
    pin(3, log_lo);
  }
  if (!single_node_multi_gpu) {
    pin(4, log_lo);
    pin(5, log_lo);
  }
  if (!over_two) {
    pin(3, log_lo);
    pin(5, log_lo);
  }
  std::vector<int> free_vars;
  for (int j = 0; j < kNumParams; ++j)
    if (!pinned[j]) free_vars.push_back(j);

  MinimizeResult best = Minimize(pb, u, free_vars);
  // A second start from the data (compute time split evenly between the
  // constant and the per-sample term): the fixed start can fall onto a
  // bound it cannot leave, e.g. beta_c from a single observation. The
  // better of the two wins; deterministic either way.
  double bsz_sum = 0;
  for (double b : pb.bsz) bsz_sum += b;
  const double mean_accum = accum_sum / static_cast<double>(n);
  Vec v = u;
  if (!pinned[0]) v[0] = std::log(std::max(kLowerBound, mean_accum / 2));
  if (!pinned[1]) v[1] = std::log(std::max(kLowerBound, mean_accum / 2 / (bsz_sum / static_cast<double>(n))));
  MinimizeResult second = Minimize(pb, v, free_vars);
  if (second.f < best.f) {
    second.iterations += best.iterations;
    best = second;
  } else {
    best.iterations += second.iterations;
  }

  FitResult out;
  out.params = ToParams(best.u);
  if (one_bsz) out.params.alpha_c = alpha_c_pin;  // exactly, not via exp(log(.))
  out.iterations = best.iterations;
  Errors err;
  Objective(pb, best.u, nullptr, &err);
  out.rmsle_accum = err.rmsle_accum;
  out.rmsle_step = err.rmsle_step;
  if (!multi_node) {
    // Pessimistic prior: crossing nodes is no faster than staying inside one.
    out.params.alpha_n = std::max(out.params.alpha_n, 1.1 * out.params.alpha_r);
    out.params.beta_n = std::max(out.params.beta_n, 1.1 * out.params.beta_r);
  }
  return out;
}

// ---------------------------------------------------------------------------
// The batch-size agent.

GoodputFunction::GoodputFunction(ThroughputParams params, GradStats grad, BatchLimits limits,
                                 ScalingRule rule)
    : params_(params), grad_(grad), limits_(limits), rule_(rule) {}

double GoodputFunction::Evaluate(int nodes, int replicas, int atomic_bsz, int accum_steps) const {
  const double batch = static_cast<double>(replicas) * atomic_bsz * (accum_steps + 1);
  return PredictThroughput(params_, nodes, replicas, atomic_bsz, accum_steps) *
         Efficiency(grad_, limits_.init_batch, batch, rule_);
}

namespace {

constexpr double kEps = 1e-8;  // tolerance of the ceil/floor roundings

}  // namespace

BatchChoice GoodputFunction::Optimize(int nodes, int replicas, bool accumulation) const {
  BatchChoice best;
  const BatchLimits& l = limits_;
  if (nodes < 1 || replicas < nodes || l.init_batch < 1 || l.min_atomic < 1 ||
      l.max_atomic < l.min_atomic)
    return best;
  const double lo = std::max<double>(l.init_batch, static_cast<double>(l.min_atomic) * replicas);
  const double hi = l.max_batch;
  if (lo > hi) return best;

  constexpr int kCandidates = 50;
  for (int c = 0; c < kCandidates; ++c) {
    double batch = c == 0                ? lo
                   : c == kCandidates - 1 ? hi
                                          : lo * std::pow(hi / lo, c / (kCandidates - 1.0));
    const double local = batch / replicas;
    long long accum = 0, atomic = 0;
    if (accumulation) {
      accum = std::max(0LL, static_cast<long long>(std::ceil(local / l.max_atomic - kEps)) - 1);
      if (replicas == 1 && local > l.init_batch + kEps) accum = std::max(accum, 1LL);
      atomic = static_cast<long long>(std::ceil(local / static_cast<double>(accum + 1) - kEps));
    } else {
      atomic = replicas == 1 ? l.init_batch : static_cast<long long>(std::ceil(local - kEps));
    }
    if (atomic < l.min_atomic || atomic > l.max_atomic) continue;
    const long long per_atomic = static_cast<long long>(replicas) * (accum + 1);
    if (per_atomic * atomic > l.max_batch) {
      atomic = l.max_batch / per_atomic;
      if (atomic < l.min_atomic) continue;
    }
    const long long total = per_atomic * atomic;
    // The cap rounds down; a total below init_batch is outside the limits.
    if (total < l.init_batch) continue;
    const int a = static_cast<int>(atomic), k = static_cast<int>(accum);
    const double goodput = Evaluate(nodes, replicas, a, k);
    if (!best.valid || goodput > best.goodput ||
        (goodput == best.goodput && total < best.batch)) {
      best.valid = true;
      best.atomic_bsz = a;
      best.accum_steps = k;
      best.batch = static_cast<int>(total);
      best.throughput = PredictThroughput(params_, nodes, replicas, a, k);
      best.efficiency = Efficiency(grad_, l.init_batch, static_cast<double>(total), rule_);
      best.goodput = goodput;
    }
  }
  return best;
}

BatchChoice GoodputFunction::Fixed(int nodes, int replicas, int batch) const {
  BatchChoice out;
  const BatchLimits& l = limits_;
  if (nodes < 1 || replicas < nodes || batch < 1 || l.max_atomic < 1) return out;
  const double local =
      std::ceil(static_cast<double>(batch) / static_cast<double>(replicas) - kEps);
  long long accum =
      std::max(0LL, static_cast<long long>(std::ceil(local / l.max_atomic - kEps)) - 1);
  if (replicas == 1 && batch > l.init_batch) accum = std::max(accum, 1LL);
  const long long atomic =
      static_cast<long long>(std::ceil(local / static_cast<double>(accum + 1) - kEps));
  if (atomic < 1) return out;
  out.valid = true;
  out.atomic_bsz = static_cast<int>(atomic);
  out.accum_steps = static_cast<int>(accum);
  out.batch = static_cast<int>(static_cast<long long>(replicas) * atomic * (accum + 1));
  out.throughput = PredictThroughput(params_, nodes, replicas, out.atomic_bsz, out.accum_steps);
  out.efficiency = Efficiency(grad_, l.init_batch, out.batch, rule_);
  out.goodput = out.throughput * out.efficiency;
  return out;
}

}  // namespace tessel::goodput
