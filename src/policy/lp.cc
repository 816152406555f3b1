#include "policy/lp.h"

#include <glpk.h>

#include <cassert>
#include <cmath>
#include <string>
#include <utility>

namespace tessel {
namespace {

// GLPK's bound kind for lo <= x <= hi.
int BoundKind(double lo, double hi) {
  assert(!(lo > hi) && "LinearProgram: lower bound above upper bound");
  bool has_lo = std::isfinite(lo);
  bool has_hi = std::isfinite(hi);
  if (has_lo && has_hi) return lo == hi ? GLP_FX : GLP_DB;
  if (has_lo) return GLP_LO;
  if (has_hi) return GLP_UP;
  return GLP_FR;
}

double Finite(double v) { return std::isfinite(v) ? v : 0.0; }

// Counts subproblem selections and stops the search past a budget.
struct NodeBudget {
  int limit;
  int selected;
  bool hit;
  static void Callback(glp_tree* tree, void* info) {
    auto* b = static_cast<NodeBudget*>(info);
    if (glp_ios_reason(tree) != GLP_ISELECT) return;
    if (++b->selected > b->limit) {
      b->hit = true;
      glp_ios_terminate(tree);
    }
  }
};

}  // namespace

LinearProgram::LinearProgram(Sense sense) : lp_(glp_create_prob()) { SetSense(sense); }

LinearProgram::~LinearProgram() {
  if (lp_ != nullptr) glp_delete_prob(lp_);
}

LinearProgram::LinearProgram(LinearProgram&& other) noexcept
    : lp_(std::exchange(other.lp_, nullptr)),
      num_vars_(other.num_vars_),
      num_rows_(other.num_rows_),
      solved_once_(other.solved_once_),
      iterations_(other.iterations_),
      has_integers_(other.has_integers_),
      mip_time_limit_ms_(other.mip_time_limit_ms_),
      mip_gap_(other.mip_gap_),
      mip_node_limit_(other.mip_node_limit_),
      mip_hit_limit_(other.mip_hit_limit_) {}

LinearProgram& LinearProgram::operator=(LinearProgram&& other) noexcept {
  if (this != &other) {
    if (lp_ != nullptr) glp_delete_prob(lp_);
    lp_ = std::exchange(other.lp_, nullptr);
    num_vars_ = other.num_vars_;
    num_rows_ = other.num_rows_;
    solved_once_ = other.solved_once_;
    iterations_ = other.iterations_;
    has_integers_ = other.has_integers_;
    mip_time_limit_ms_ = other.mip_time_limit_ms_;
    mip_gap_ = other.mip_gap_;
    mip_node_limit_ = other.mip_node_limit_;
    mip_hit_limit_ = other.mip_hit_limit_;
  }
  return *this;
}

void LinearProgram::SetSense(Sense sense) { glp_set_obj_dir(lp_, sense == kMaximize ? GLP_MAX : GLP_MIN); }

int LinearProgram::AddVariable(double lo, double hi, double objective) {
  int col = glp_add_cols(lp_, 1);
  glp_set_col_bnds(lp_, col, BoundKind(lo, hi), Finite(lo), Finite(hi));
  glp_set_obj_coef(lp_, col, objective);
  return num_vars_++;
}

int LinearProgram::AddConstraint(const std::vector<LpTerm>& terms, double lo, double hi) {
  glp_add_rows(lp_, 1);
  const int row = num_rows_++;
  SetConstraintBounds(row, lo, hi);
  SetConstraintTerms(row, terms);
  return row;
}

void LinearProgram::WarmStartFrom(const LinearProgram& other) {
  assert(!solved_once_ && num_vars_ == other.num_vars_ && num_rows_ == other.num_rows_ &&
         "LinearProgram::WarmStartFrom: an unsolved program of the same shape");
  int was_on = glp_term_out(GLP_OFF);
  glp_scale_prob(lp_, GLP_SF_AUTO);
  glp_term_out(was_on);
  for (int r = 1; r <= num_rows_; ++r) glp_set_row_stat(lp_, r, glp_get_row_stat(other.lp_, r));
  for (int c = 1; c <= num_vars_; ++c) glp_set_col_stat(lp_, c, glp_get_col_stat(other.lp_, c));
  solved_once_ = true;
}

void LinearProgram::SetConstraintBounds(int row, double lo, double hi) {
  assert(row >= 0 && row < num_rows_ && "LinearProgram: unknown constraint");
  glp_set_row_bnds(lp_, row + 1, BoundKind(lo, hi), Finite(lo), Finite(hi));
}

void LinearProgram::SetConstraintTerms(int row, const std::vector<LpTerm>& terms) {
  assert(row >= 0 && row < num_rows_ && "LinearProgram: unknown constraint");
  // GLPK arrays are 1-based; element 0 is unused.
  std::vector<int> ind(1, 0);
  std::vector<double> val(1, 0.0);
  ind.reserve(terms.size() + 1);
  val.reserve(terms.size() + 1);
  for (const LpTerm& t : terms) {
    assert(t.var >= 0 && t.var < num_vars_ && "LinearProgram: constraint on an unknown variable");
    if (t.coef == 0) continue;
    ind.push_back(t.var + 1);
    val.push_back(t.coef);
  }
  glp_set_mat_row(lp_, row + 1, static_cast<int>(ind.size()) - 1, ind.data(), val.data());
}

void LinearProgram::SetObjective(int var, double coef) {
  assert(var >= 0 && var < num_vars_ && "LinearProgram: unknown variable");
  glp_set_obj_coef(lp_, var + 1, coef);
}

void LinearProgram::SetInteger(int var) {
  assert(var >= 0 && var < num_vars_ && "LinearProgram: unknown variable");
  glp_set_col_kind(lp_, var + 1, GLP_IV);
  has_integers_ = true;
}

void LinearProgram::SetVariableBounds(int var, double lo, double hi) {
  assert(var >= 0 && var < num_vars_ && "LinearProgram: unknown variable");
  glp_set_col_bnds(lp_, var + 1, BoundKind(lo, hi), Finite(lo), Finite(hi));
}

Status LinearProgram::Solve() {
  if (!solved_once_) {
    // Equilibration scaling, then the standard (all-slack) basis. A later
    // Solve reuses the last basis: a warm start.
    // glp_scale_prob reports to the terminal whatever msg_lev says; silence
    // GLPK's (thread-local) terminal output around it.
    int was_on = glp_term_out(GLP_OFF);
    glp_scale_prob(lp_, GLP_SF_AUTO);
    glp_term_out(was_on);
    glp_std_basis(lp_);
    solved_once_ = true;
  }
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_OFF;  // keeps the basis for warm starts and reports status directly
  int before = glp_get_it_cnt(lp_);
  int rc = glp_simplex(lp_, &parm);
  iterations_ = glp_get_it_cnt(lp_) - before;
  if (rc != 0) {
    // A bad basis after bound changes: retry once from the standard basis.
    if (rc == GLP_EBADB || rc == GLP_ESING || rc == GLP_ECOND) {
      glp_std_basis(lp_);
      rc = glp_simplex(lp_, &parm);
      iterations_ = glp_get_it_cnt(lp_) - before;
    }
    if (rc != 0) return Internal("LP solver failed (GLPK glp_simplex code " + std::to_string(rc) + ")");
  }
  int status = glp_get_status(lp_);
  if (status == GLP_OPT && has_integers_) {
    glp_iocp iparm;
    glp_init_iocp(&iparm);
    iparm.msg_lev = GLP_MSG_OFF;
    iparm.presolve = GLP_OFF;  // the relaxation above is already optimal
    if (mip_time_limit_ms_ > 0) iparm.tm_lim = mip_time_limit_ms_;
    iparm.mip_gap = mip_gap_;
    mip_hit_limit_ = false;
    NodeBudget budget{mip_node_limit_, 0, false};
    if (mip_node_limit_ > 0) {
      iparm.cb_func = &NodeBudget::Callback;
      iparm.cb_info = &budget;
    }
    int irc = glp_intopt(lp_, &iparm);
    if (irc == GLP_ETMLIM || budget.hit) mip_hit_limit_ = true;
    if (irc == GLP_ESTOP) irc = 0;  // stopped by the node budget: the incumbent stands
    else if (irc != 0 && irc != GLP_EMIPGAP) return Internal("MIP solver failed (GLPK glp_intopt code " + std::to_string(irc) + ")");
    switch (glp_mip_status(lp_)) {
      case GLP_OPT:
      case GLP_FEAS:
        return Status::Ok();
      case GLP_NOFEAS:
        return InvalidArgument("infeasible: no integer point satisfies every constraint");
      default:
        return Internal("MIP solver stopped without an integer solution (GLPK status " +
                        std::to_string(glp_mip_status(lp_)) + ")");
    }
  }
  switch (status) {
    case GLP_OPT:
      return Status::Ok();
    case GLP_NOFEAS:
      return InvalidArgument("infeasible: no point satisfies every constraint");
    case GLP_UNBND:
      return InvalidArgument("unbounded: the objective can grow without limit");
    default:
      return Internal("LP solver stopped without an optimal solution (GLPK status " +
                      std::to_string(glp_get_status(lp_)) + ")");
  }
}

double LinearProgram::objective_value() const {
  return has_integers_ ? glp_mip_obj_val(lp_) : glp_get_obj_val(lp_);
}

double LinearProgram::value(int var) const {
  assert(var >= 0 && var < num_vars_ && "LinearProgram: unknown variable");
  return has_integers_ ? glp_mip_col_val(lp_, var + 1) : glp_get_col_prim(lp_, var + 1);
}

std::vector<double> LinearProgram::values() const {
  std::vector<double> v(num_vars_);
  for (int i = 0; i < num_vars_; ++i) v[i] = value(i);
  return v;
}

}  // namespace tessel
