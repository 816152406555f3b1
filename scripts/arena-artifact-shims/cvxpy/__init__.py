"""The part of cvxpy's API that the Arena artifact's Gavel and Sia use, for running them where
cvxpy is not installed (Debian does not package it): one boolean matrix variable, affine
expressions built with multiply, sum, indexing and arithmetic, ==/<=/>= constraints, and
Problem.solve. GLPK_MI (Sia's solver, baselines/sia_sched.py:33) goes to GLPK through cvxopt's
glpk.ilp, as cvxpy's own GLPK_MI interface calls it (python3-cvxopt); CPLEX and CBC (Gavel's
CPLEX, baselines/gavel_sched.py:125) go to scipy's HiGHS (scipy.optimize.milp, python3-scipy),
another exact MILP solver: the optimum is the same, a tie may be broken differently."""
import numpy as np
import scipy.sparse as sp
from scipy.optimize import milp, LinearConstraint, Bounds

GLPK_MI, GLPK, CPLEX, CBC, ECOS_BB = "GLPK_MI", "GLPK", "CPLEX", "CBC", "ECOS_BB"


class Expression:
    """rows of A (one per element of the expression, C order) over the variable's entries, plus a constant"""

    def __init__(self, var, A, const, shape):
        self.var, self.A, self.const, self.shape = var, sp.csr_matrix(A), np.asarray(const, dtype=float).reshape(-1), tuple(shape)

    @property
    def size(self):
        return int(np.prod(self.shape))

    def __getitem__(self, idx):
        pos = np.arange(self.size).reshape(self.shape)[idx]
        flat = np.asarray(pos).reshape(-1)
        return Expression(self.var, self.A[flat], self.const[flat], np.shape(pos))

    def _affine(self, other, sign):
        if isinstance(other, Expression):
            a, b = _broadcast(self, other.shape), _broadcast(other, self.shape)
            return Expression(self.var, a.A + sign * b.A, a.const + sign * b.const, a.shape)
        return Expression(self.var, self.A, self.const + sign * _flat(other, self.shape), self.shape)

    def __add__(self, other):
        return self._affine(other, 1.0)

    __radd__ = __add__

    def __sub__(self, other):
        return self._affine(other, -1.0)

    def __neg__(self):
        return Expression(self.var, -self.A, -self.const, self.shape)

    def __rsub__(self, other):
        return (-self)._affine(other, 1.0)

    def __mul__(self, other):
        if isinstance(other, Expression):
            raise TypeError("cvxpy shim: only products with constants")
        return multiply(other, self)

    __rmul__ = __mul__

    def _cmp(self, other, lo, hi):
        b = _flat(other, self.shape) - self.const
        return Constraint(self.A, np.where(lo, b, -np.inf), np.where(hi, b, np.inf))

    def __eq__(self, other):
        return self._cmp(other, True, True)

    def __le__(self, other):
        return self._cmp(other, False, True)

    def __ge__(self, other):
        return self._cmp(other, True, False)

    __hash__ = object.__hash__


def _flat(constant, shape):
    """A constant broadcast to `shape`, flattened in C order (one element for a scalar shape)."""
    return np.broadcast_to(np.asarray(constant, dtype=float), shape).reshape(-1)


def _broadcast(e, shape):
    if e.shape == tuple(shape) or not shape:
        return e
    pos = np.broadcast_to(np.arange(e.size).reshape(e.shape), shape).reshape(-1)
    return Expression(e.var, e.A[pos], e.const[pos], shape)


class Variable(Expression):
    def __init__(self, shape, boolean=False, integer=False):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = int(np.prod(shape))
        self.boolean, self.integer, self.value = boolean, integer, None
        super().__init__(self, sp.identity(n, format="csr"), np.zeros(n), shape)


class Constraint:
    def __init__(self, A, lb, ub):
        self.A, self.lb, self.ub = A, lb, ub


def multiply(a, b):
    if isinstance(a, Expression):
        a, b = b, a
    c = np.asarray(a, dtype=float)
    shape = np.broadcast_shapes(c.shape, b.shape)
    e = _broadcast(b, shape)
    c = np.broadcast_to(c, shape).reshape(-1)
    return Expression(e.var, sp.diags(c) @ e.A, c * e.const, shape)


def sum(expr, axis=None):
    if not isinstance(expr, Expression):
        return np.sum(expr, axis=axis)
    pos = np.arange(expr.size).reshape(expr.shape)
    if axis is None:
        S = sp.csr_matrix(np.ones((1, expr.size)))
        shape = ()
    else:
        moved = np.moveaxis(pos, axis, -1)
        out = moved.reshape(-1, moved.shape[-1])
        rows = np.repeat(np.arange(out.shape[0]), out.shape[1])
        S = sp.csr_matrix((np.ones(out.size), (rows, out.reshape(-1))), shape=(out.shape[0], expr.size))
        shape = moved.shape[:-1]
    return Expression(expr.var, S @ expr.A, S @ expr.const, shape)


class Maximize:
    sense = -1.0

    def __init__(self, expr):
        self.expr = expr


class Minimize(Maximize):
    sense = 1.0


class Problem:
    def __init__(self, objective, constraints):
        self.objective, self.constraints, self.status, self.value = objective, constraints or [], None, None

    def solve(self, solver=None, verbose=False, **kwargs):
        expr = self.objective.expr
        var = expr.var
        n = var.size
        c = self.objective.sense * np.asarray(expr.A.sum(axis=0)).reshape(-1)
        A = sp.vstack([k.A for k in self.constraints], format="csr") if self.constraints else None
        lb = np.concatenate([k.lb for k in self.constraints]) if self.constraints else None
        ub = np.concatenate([k.ub for k in self.constraints]) if self.constraints else None
        if solver in (GLPK_MI, GLPK):
            return self._solve_glpk(c, A, lb, ub, var, expr, kwargs)
        integral = np.ones(n) if (var.boolean or var.integer) else np.zeros(n)
        bounds = Bounds(np.zeros(n), np.ones(n)) if var.boolean else Bounds(-np.inf, np.inf)
        cons = [LinearConstraint(A, lb, ub)] if A is not None else []
        res = milp(c, constraints=cons, integrality=integral, bounds=bounds)
        if res.status == 0:
            return self._solved(var, expr, res.x)
        self.status = {1: "user_limit", 2: "infeasible", 3: "unbounded"}.get(res.status, "solver_error")
        var.value = None
        return None

    def _solved(self, var, expr, x):
        self.status = "optimal"
        var.value = np.asarray(x, dtype=float).reshape(var.shape)
        self.value = float(np.asarray(expr.A @ var.value.reshape(-1)).sum() + expr.const.sum())
        return self.value

    def _solve_glpk(self, c, A, lb, ub, var, expr, opts):
        """GLPK through cvxopt, as cvxpy's GLPK_MI calls it: minimize c'x, G x <= h, A x = b."""
        from cvxopt import glpk, matrix, spmatrix
        n = var.size
        eq = np.isfinite(lb) & np.isfinite(ub) & (lb == ub)
        le = np.isfinite(ub) & ~eq
        ge = np.isfinite(lb) & ~eq
        def spm(M):
            M = sp.coo_matrix(M)
            return spmatrix(M.data.tolist(), M.row.tolist(), M.col.tolist(), size=M.shape)
        G = sp.vstack([A[np.flatnonzero(le)], -A[np.flatnonzero(ge)]], format="csr")
        h = np.concatenate([ub[le], -lb[ge]])
        Aeq, beq = A[np.flatnonzero(eq)], lb[eq]
        options = {"msg_lev": "GLP_MSG_OFF"}
        options.update({k: v for k, v in opts.items() if k != "verbose"})
        bools = set(range(n)) if var.boolean else set()
        ints = set(range(n)) if var.integer else set()
        status, x = glpk.ilp(matrix(c.astype(float)), spm(G), matrix(h.astype(float)),
                             spm(Aeq) if Aeq.shape[0] else None, matrix(beq.astype(float)) if Aeq.shape[0] else None,
                             ints, bools, options=options)
        if status == "optimal":
            return self._solved(var, expr, np.array(x).reshape(-1))
        self.status = "infeasible" if status in ("infeasible", "LP relaxation is primal infeasible") else "solver_error"
        var.value = None
        return None
