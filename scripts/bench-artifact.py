#!/usr/bin/env python3
"""tessel against the Arena artifact's simulator, cell by cell (issue 40's speed table): each
policy on the Arena traces with the measured truth, one whole `tessel simulate` process a run
(`--cluster arena-1280 --truth arena-db --horizon 600000s`, start-up and loading included).
Prints per cell the median wall time over --runs runs, its spread, the decision-time p99
and max, and the ratio to the artifact's own wall time on its faster days (measured on this
machine in the sessions before; the artifact is not run here: see docs/speed.md).

With --against OLD_TESSEL, after the timed runs, the two binaries run in turn (new, old, new,
old, ...), the ratio new/old is taken pair by pair (its median printed) and every run's summary
must be identical apart from its wall and decision times: how a speed change proves it changed
no result. (The medians come from the new binary's runs alone: a run right after the other
binary's is slower on this machine.)

Usage: scripts/bench-artifact.py [--tessel build/tessel] [--traces venus,pai,philly]
                                 [--policies fcfs,gavel,...] [--runs 5] [--against OLD_TESSEL]
Needs the shared data (TESSEL_DATA or ../shared/data). About 40 s for Venus and PAI at 5
runs (twice that and the old binary's time with --against); Philly adds about 2 minutes (sia).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

POLICIES = ["fcfs", "gavel", "elasticflow:admission=false", "sia", "arena"]
# The artifact's wall time per cell on its faster days on this machine (seconds; issue 40,
# which names `elasticflow:admission=false` the equivalent of its EF-LS and arena the
# counterpart of its crius; Philly's crius did not finish in 1,200 s, a lower bound). Philly's
# sia: as written, the artifact's Sia aborts in round 274 (GLPK, on the NaN goodputs of
# baselines/sia_sched.py:233); with that line changed (check-arena-artifact.py
# --sia-negative-as-infeasible) its 2,000 rounds took 2,820 s of CPU (4,007 s wall, niced,
# beside other work; a single-threaded process: its CPU time is its wall time alone).
ARTIFACT_S = {
    ("venus", "fcfs"): 16.7, ("venus", "gavel"): 14.9, ("venus", "elasticflow:admission=false"): 10.6,
    ("venus", "sia"): 146.0, ("venus", "arena"): 279.0,
    ("pai", "fcfs"): 10.4, ("pai", "gavel"): 10.6, ("pai", "elasticflow:admission=false"): 7.7,
    ("pai", "sia"): 17.2, ("pai", "arena"): 33.5,
    ("philly", "gavel"): 72.0, ("philly", "elasticflow:admission=false"): 56.0,
    ("philly", "sia"): 2820.0, ("philly", "arena"): 1200.0,
}


def run(binary, trace, policy, data):
    """One whole process: (wall s, summary dict without wall and decision times, p99 ms, max ms)."""
    argv = [binary, "simulate", "--cluster", "arena-1280", "--truth", "arena-db", "--horizon", "600000s",
            "--trace", os.path.join(data, "arena", "traces", f"simulate_trace_{trace}.csv"), "--policy", policy,
            "--json", "--no-progress"]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"bench-artifact: {' '.join(argv)} failed: {proc.stderr.decode(errors='replace')[-300:]}")
    s = json.loads(proc.stdout)
    p99, mx = s.get("decision_p99_ms", 0.0), s.get("decision_max_ms", 0.0)
    for k in [k for k in s if k.startswith("decision_") and k.endswith("_ms")] + ["sim_wall_time_s"]:
        s.pop(k, None)
    return wall, s, p99, mx


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessel", default=os.path.join(ROOT, "build", "tessel"))
    ap.add_argument("--traces", default="venus,pai")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--against", default="", help="an older tessel binary whose results must be identical")
    args = ap.parse_args()
    data = os.environ.get("TESSEL_DATA", os.path.join(ROOT, "..", "shared", "data"))
    head = f"{'trace':<8}{'policy':<30}{'median s':>9}{'min-max s':>14}{'p99 ms':>8}{'max ms':>8}{'artifact s':>11}" \
           f"{'ratio':>7}" + (f"{'new/old':>9}  identical" if args.against else "")
    print(head)
    print("-" * len(head))
    failed = False
    for trace in [t for t in args.traces.split(",") if t]:
        for policy in [p for p in args.policies.split(",") if p]:
            if (trace, policy) == ("philly", "fcfs"):
                continue  # not a cell of the table
            walls, ratios, p99s, maxes, same = [], [], [], [], True
            for _ in range(max(1, args.runs)):
                wall, summary, p99, mx = run(args.tessel, trace, policy, data)
                walls.append(wall)
                p99s.append(p99)
                maxes.append(mx)
            # The pairs come after: a run right after the other binary's is
            # slower on this machine (up to 1.5x), so the medians above are
            # the new binary's alone and only the ratio is taken pairwise.
            for _ in range(max(1, args.runs) if args.against else 0):
                new_wall, summary, _, _ = run(args.tessel, trace, policy, data)
                old_wall, old_summary, _, _ = run(args.against, trace, policy, data)
                ratios.append(new_wall / old_wall)
                same = same and summary == old_summary
            med = statistics.median(walls)
            art = ARTIFACT_S.get((trace, policy))
            line = f"{trace:<8}{policy:<30}{med:>9.3f}{min(walls):>7.3f}-{max(walls):<6.3f}" \
                   f"{statistics.median(p99s):>8.1f}{statistics.median(maxes):>8.1f}" \
                   f"{(f'{art:.1f}' if art else '-'):>11}{(f'{art / med:.0f}x' if art else '-'):>7}"
            if args.against:
                line += f"{statistics.median(ratios):>9.3f}  {'yes' if same else 'NO'}"
                failed |= not same
            print(line, flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
