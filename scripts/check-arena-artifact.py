#!/usr/bin/env python3
"""Checks `tessel simulate --setting arena-artifact` against the Arena artifact's own simulator.

The artifact (sjtu-epcc/arena, branch ae-eurosys, commit 65573a2) runs under Debian's python3
with numpy, pandas, scipy and cvxopt once the modules Debian lacks are stood in for by
scripts/arena-artifact-shims: cvxpy (the part Gavel and Sia use, solved by GLPK through cvxopt
as cvxpy's GLPK_MI does, or by scipy's HiGHS where the artifact asks for CPLEX), orjson (json),
and matplotlib, pylab and statsmodels (plotting only). Nothing in the artifact is changed unless
--sia-negative-as-infeasible is given (see below).

For each trace and policy it runs the artifact (`simulator.py --policy P --trace_type T
--enable_alpa`, its default round limit or --rounds), reads its round count and its results
(jct_<trace>/<policy>_jct.npy: the finished jobs' JCTs; the last round's running and pending
counts), then runs tessel to the time the artifact's last round counts (rounds - 1 times 300 s)
and prints both side by side.

The artifact's Sia values a 2-16 GPU cell by a throughput that is negative where the profile
database holds -1 (out of memory), and takes its square root (baselines/sia_sched.py:105-107,
:233): the cell becomes NaN. GLPK skips NaN columns on PAI and aborts on Venus ("Assertion failed:
a != a", glpios02.c). --sia-negative-as-infeasible runs a copy of the artifact in which such a
throughput counts as infeasible (INFEASIBLE_THR), the one line changed.

--self-test checks the cvxpy stand-in alone (no artifact needed): random programs of the forms the
artifact's Gavel and Sia build, solved by both back ends, against enumerating every assignment.

usage: scripts/check-arena-artifact.py ARTIFACT_DIR [--traces pai,venus]
           [--policies fcfs,gavel,elasticflow-l,sia,crius] [--rounds N] [--sia-negative-as-infeasible]
           [--tessel build/tessel]
ARTIFACT_DIR: the artifact's tree without its large runtime/ logs, e.g. from a clone
`git archive 65573a2 -- . ':!runtime' | tar -x -C DIR`. Needs python3-numpy, python3-pandas,
python3-scipy and python3-cvxopt, and the shared data (TESSEL_DATA or ../shared/data).
About 5 s (FCFS, PAI) to 15 minutes (Sia, Venus) a cell here.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIMS = os.path.join(ROOT, "scripts", "arena-artifact-shims")
TESSEL_POLICY = {"fcfs": "fcfs", "gavel": "gavel", "elasticflow-l": "elasticflow:admission=false", "sia": "sia",
                 "crius": "arena"}
ARTIFACT_TRACE = {"pai": "pai", "venus": "helios", "philly": "philly"}
ROUND_S = 300


def run_artifact(tree, policy, trace, rounds, out):
    argv = ["/usr/bin/python3", "simulator.py", "--policy", policy, "--trace_type", ARTIFACT_TRACE[trace],
            "--enable_alpa", "--result_dir", out]
    if rounds:
        argv += ["--max_sched_round", str(rounds)]
    env = dict(os.environ, PYTHONPATH=SHIMS, PYTHONHASHSEED="0")
    start = time.monotonic()
    proc = subprocess.run(argv, cwd=tree, env=env, capture_output=True)
    wall = time.monotonic() - start
    text = proc.stdout.decode(errors="replace")
    last_round = max((int(m) for m in re.findall(r"scheduling round:\s+(\d+)", text)), default=-1)
    status = re.findall(r"Runtime job status: (\d+) in running \| (\d+) in pending", text)
    running, pending = (int(status[-1][0]), int(status[-1][1])) if status else (0, 0)
    jcts = []
    for f in glob.glob(os.path.join(out, f"jct*/{policy}_jct.npy")):
        read = subprocess.run(["/usr/bin/python3", "-c", "import json, sys, numpy; "
                               "print(json.dumps([float(x) for x in numpy.load(sys.argv[1])]))", f],
                              capture_output=True, check=True)
        jcts = json.loads(read.stdout)
    failed = proc.returncode != 0 or not jcts
    why = ""
    if failed:
        tail = (text + proc.stderr.decode(errors="replace")).strip().splitlines()[-3:]
        why = f"rc {proc.returncode}: " + " | ".join(tail)
    return {"rounds": last_round + 1, "finished": len(jcts), "running": running, "pending": pending,
            "jct_h": sum(jcts) / len(jcts) / 3600 if jcts else float("nan"), "wall_s": wall, "failed": why}


def run_tessel(binary, data, policy, trace, rounds):
    """tessel to the time the artifact's last round counts: each round first advances the running
    jobs by the round before it and ends those done (scheduler.py:3475-3477, :419), so the work
    of its last round is never counted; `rounds` rounds end at (rounds - 1) x 300 s."""
    argv = [binary, "simulate", "--cluster", "arena-1280", "--setting", "arena-artifact",
            "--trace", os.path.join(data, "arena", "traces", f"simulate_trace_{trace}.csv"),
            "--policy", TESSEL_POLICY[policy], "--horizon", f"{(rounds - 1) * ROUND_S}s", "--json", "--no-progress",
            "--data", data]
    proc = subprocess.run(argv, capture_output=True)
    if proc.returncode != 0:
        sys.exit(f"check-arena-artifact: {' '.join(argv)}: {proc.stderr.decode(errors='replace')[-400:]}")
    s = json.loads(proc.stdout)
    return {"finished": s["jobs_finished"], "unfinished": s["jobs_unfinished"], "rejected": s["jobs_rejected"],
            "jct_h": s["avg_jct_s"] / 3600}


SELF_TEST = r'''
import itertools, random, sys
import numpy as np
import cvxpy as cp

def brute(shape, value, feasible):
    best = None
    for bits in itertools.product((0, 1), repeat=shape[0] * shape[1]):
        x = np.array(bits, dtype=float).reshape(shape)
        if feasible(x):
            v = value(x)
            best = v if best is None or v > best + 1e-9 else best
    return best

rng = random.Random(7)
checked = 0
for trial in range(40):
    jobs, types = rng.randint(2, 3), rng.randint(2, 4)
    thr = np.array([[round(rng.uniform(0, 5), 3) for _ in range(types)] for _ in range(jobs)])
    need = np.array([rng.choice((1, 2, 4)) for _ in range(jobs)], dtype=float)
    cap = np.array([rng.choice((2, 4, 6)) for _ in range(types)], dtype=float)
    gn = np.tile(need, (types, 1)).T
    if trial % 2 == 0:   # Gavel's form: each job one type, the types' GPU counts
        def build(x):
            cons = [x >= 0, cp.sum(x, axis=1) == 1]
            for i in range(types):
                cons.append(cp.sum(cp.multiply(x, gn), axis=0)[i] <= cap[i])
            return cp.Maximize(cp.sum(cp.sum(cp.multiply(thr, x), axis=1))), cons
        def feasible(x):
            return (x.sum(axis=1) == 1).all() and ((x * gn).sum(axis=0) <= cap).all()
        def value(x):
            return float((thr * x).sum())
    else:                # Sia's: the last job at most one cell, a penalty, a slice of the counts
        def build(x):
            cons = [x >= 0, cp.sum(x[:-1], axis=1) == 1, cp.sum(x[-1]) <= 1,
                    cp.sum(cp.sum(cp.multiply(x, gn), axis=0)[0:2]) <= cap[0]]
            return cp.Maximize(cp.sum(cp.sum(cp.multiply(thr, x), axis=1), axis=0) + (1 - cp.sum(x[-1]) * -1)), cons
        def feasible(x):
            return ((x[:-1].sum(axis=1) == 1).all() and x[-1].sum() <= 1
                    and (x * gn).sum(axis=0)[0:2].sum() <= cap[0])
        def value(x):
            return float((thr * x).sum() + 1 + x[-1].sum())
    want = brute((jobs, types), value, feasible)
    for solver in (cp.GLPK_MI, cp.CPLEX):
        x = cp.Variable((jobs, types), boolean=True)
        objective, cons = build(x)
        problem = cp.Problem(objective, cons)
        problem.solve(solver=solver, verbose=False)
        if want is None:
            assert problem.status != "optimal", (trial, solver)
            continue
        assert problem.status == "optimal", (trial, solver, problem.status)
        got = value(np.where(np.array(x.value) >= 0.5, 1.0, 0.0))
        assert abs(got - want) < 1e-6, (trial, solver, got, want)
        assert abs(problem.value - want) < 1e-6, (trial, solver, problem.value, want)
        checked += 1
# GLPK never picks a NaN column when another one will do (the artifact's Sia relies on it).
x = cp.Variable((1, 3), boolean=True)
problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(np.array([[float("nan"), 1.0, 2.0]]), x))), [cp.sum(x) <= 1])
problem.solve(solver=cp.GLPK_MI)
assert list(np.array(x.value).reshape(-1)) == [0.0, 0.0, 1.0], x.value
print(f"cvxpy stand-in: {checked} programs equal to enumeration (GLPK and HiGHS); NaN column skipped")
'''


def self_test():
    proc = subprocess.run(["/usr/bin/python3", "-c", SELF_TEST], env=dict(os.environ, PYTHONPATH=SHIMS))
    sys.exit(proc.returncode)


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("artifact")
    ap.add_argument("--traces", default="pai,venus")
    ap.add_argument("--policies", default="fcfs,gavel,elasticflow-l,sia")
    ap.add_argument("--rounds", type=int, default=0, help="the artifact's --max_sched_round (default: its own)")
    ap.add_argument("--sia-negative-as-infeasible", action="store_true")
    ap.add_argument("--tessel", default=os.path.join(ROOT, "build", "tessel"))
    args = ap.parse_args()
    data = os.environ.get("TESSEL_DATA", os.path.join(ROOT, "..", "shared", "data"))
    if not os.path.isfile(os.path.join(args.artifact, "simulator.py")):
        sys.exit(f"check-arena-artifact: {args.artifact}: no simulator.py (expected the artifact's tree)")
    for module in ("numpy", "pandas", "scipy", "cvxopt"):
        if subprocess.run(["/usr/bin/python3", "-c", f"import {module}"], capture_output=True).returncode != 0:
            sys.exit(f"check-arena-artifact: python3 lacks {module} (apt-get install python3-{module})")
    for p in args.policies.split(","):
        if p not in TESSEL_POLICY:
            sys.exit(f"check-arena-artifact: --policies: {p}: expected one of {', '.join(TESSEL_POLICY)}")
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "arena")
        shutil.copytree(args.artifact, tree, symlinks=True, ignore=shutil.ignore_patterns("runtime", "plot_*", "figures*"))
        # The artifact reads traces/simulate_trace_<trace>.csv: the shared data's copies.
        os.makedirs(os.path.join(tree, "traces"), exist_ok=True)
        for trace in args.traces.split(","):
            name = f"simulate_trace_{trace}.csv"
            link = os.path.join(tree, "traces", name)
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(os.path.join(os.path.abspath(data), "arena", "traces", f"simulate_trace_{trace}.csv"), link)
        if args.sia_negative_as_infeasible:
            path = os.path.join(tree, "baselines", "sia_sched.py")
            text = open(path).read()
            line = "                if goodput_matrix[i][j] > INFEASIBLE_THR:\n"
            if text.count(line) != 1:
                sys.exit("check-arena-artifact: baselines/sia_sched.py is not the expected version (65573a2)")
            open(path, "w").write(text.replace(line, "                if goodput_matrix[i][j] <= 0:\n"
                                               "                    goodput_matrix[i][j] = INFEASIBLE_THR\n" + line))
        print("trace   policy          | artifact: rounds finished running pending  JCT h   wall s | "
              "tessel: finished unfinished rejected  JCT h | JCT")
        for trace in args.traces.split(","):
            for policy in args.policies.split(","):
                a = run_artifact(tree, policy, trace, args.rounds, os.path.join(tmp, f"out-{policy}-{trace}"))
                if a["failed"]:
                    print(f"{trace:7s} {policy:15s} | artifact failed after {a['rounds']} rounds "
                          f"({a['finished']} finished): {a['failed']}", flush=True)
                    continue
                t = run_tessel(args.tessel, data, policy, trace, a["rounds"])
                print(f"{trace:7s} {policy:15s} | {a['rounds']:6d} {a['finished']:8d} {a['running']:7d} {a['pending']:7d} "
                      f"{a['jct_h']:7.3f} {a['wall_s']:7.1f} | {t['finished']:8d} {t['unfinished']:10d} "
                      f"{t['rejected']:8d} {t['jct_h']:6.3f} | {100 * (t['jct_h'] / a['jct_h'] - 1):+.1f}%", flush=True)


if __name__ == "__main__":
    main()
