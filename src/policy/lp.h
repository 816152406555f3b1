// A small linear (or mixed-integer) program solved with GLPK (the C API),
// for the policies that state their allocation as an LP (Gavel) or an
// integer program (Sia). Integer variables: SetInteger(); Solve() then runs
// the simplex on the relaxation and GLPK's branch-and-cut on top.
//
//   LinearProgram lp(LinearProgram::kMaximize);
//   int x = lp.AddVariable(0, kLpInfinity, /*objective=*/3);
//   int y = lp.AddVariable(0, 4, 2);
//   lp.AddConstraint({{x, 1}, {y, 1}}, -kLpInfinity, 6);   // x + y <= 6
//   Status s = lp.Solve();                                   // x = 6, y = 0
//
// Deterministic: the same sequence of calls gives the same solution, bit
// for bit (GLPK's simplex has no randomness; the problem is scaled and
// started from the standard basis on the first Solve). A later Solve after
// changing bounds or the objective starts from the previous optimal basis,
// which is itself a function of the calls made, so it stays deterministic.
//
// Not thread-safe per object. The solver never prints (msg_lev
// GLP_MSG_OFF). Programmer errors (a variable index out of range,
// lo > hi) are assertions.
#pragma once

#include <initializer_list>
#include <limits>
#include <vector>

#include "core/status.h"

struct glp_prob;  // GLPK's problem object (glpk.h stays in lp.cc)

namespace tessel {

inline constexpr double kLpInfinity = std::numeric_limits<double>::infinity();

struct LpTerm {
  int var = 0;
  double coef = 0;
};

class LinearProgram {
 public:
  enum Sense { kMinimize, kMaximize };

  explicit LinearProgram(Sense sense);
  ~LinearProgram();
  LinearProgram(const LinearProgram&) = delete;
  LinearProgram& operator=(const LinearProgram&) = delete;
  LinearProgram(LinearProgram&& other) noexcept;
  LinearProgram& operator=(LinearProgram&& other) noexcept;

  // A variable lo <= x <= hi (either side may be infinite; lo == hi fixes
  // it) with coefficient `objective`. Returns its index, 0, 1, 2, ...
  int AddVariable(double lo, double hi, double objective = 0);
  // A constraint lo <= sum(coef * x[var]) <= hi. Each variable at most once
  // per row; zero coefficients are dropped. Returns the row index.
  int AddConstraint(const std::vector<LpTerm>& terms, double lo, double hi);
  int AddConstraint(std::initializer_list<LpTerm> terms, double lo, double hi) {
    return AddConstraint(std::vector<LpTerm>(terms), lo, hi);
  }
  void SetObjective(int var, double coef);
  // Starts the next Solve from `other`'s last basis (the same variables and
  // constraints, e.g. a copy kept for a second objective) instead of the
  // standard one. Only before this program's first Solve.
  void WarmStartFrom(const LinearProgram& other);
  // Replaces a constraint's terms (as AddConstraint) or its bounds. Like
  // the other changes, a later Solve starts from the last optimal basis.
  void SetConstraintTerms(int row, const std::vector<LpTerm>& terms);
  void SetConstraintBounds(int row, double lo, double hi);
  void SetVariableBounds(int var, double lo, double hi);
  void SetSense(Sense sense);
  // Makes `var` integer-valued (with bounds 0..1: binary). A program with
  // integer variables is solved as a MIP.
  void SetInteger(int var);
  // Stop the branch-and-cut after this many milliseconds with the best
  // integer solution found (0 = no limit). GLPK's limit counts wall time,
  // so a run that hits it is not reproducible; callers that need
  // determinism give a generous limit and treat hitting it as an anomaly.
  void SetMipTimeLimitMs(int ms) { mip_time_limit_ms_ = ms; }
  // Stop the branch-and-cut after selecting this many subproblems (0 = no
  // limit), with the best integer solution found: a deterministic bound,
  // unlike the time limit. mip_hit_limit() reports either.
  void SetMipNodeLimit(int nodes) { mip_node_limit_ = nodes; }
  // Stop once the best integer solution is within this relative gap of the
  // relaxation's bound (0 = prove optimality). Deterministic.
  void SetMipGap(double gap) { mip_gap_ = gap; }
  bool mip_hit_limit() const { return mip_hit_limit_; }

  // Solves. OK: an optimal solution is available. InvalidArgument when the
  // problem has no optimum ("infeasible: ..." or "unbounded: ..."); Internal
  // when the solver fails (iteration limit, numerical trouble).
  Status Solve();

  int num_variables() const { return num_vars_; }
  int num_constraints() const { return num_rows_; }
  // The optimal solution; valid after Solve() returned OK.
  double objective_value() const;
  double value(int var) const;
  std::vector<double> values() const;
  // Simplex iterations of the last Solve (for reports and benchmarks).
  int iterations() const { return iterations_; }

 private:
  glp_prob* lp_ = nullptr;
  int num_vars_ = 0;
  int num_rows_ = 0;
  bool solved_once_ = false;
  int iterations_ = 0;
  bool has_integers_ = false;
  int mip_time_limit_ms_ = 0;
  double mip_gap_ = 0;
  int mip_node_limit_ = 0;
  bool mip_hit_limit_ = false;
};

}  // namespace tessel
