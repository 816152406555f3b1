#!/usr/bin/env python3
"""The simulator at ten thousand GPUs: every policy on the whole ITP trace (69,351 jobs) on
arena-10k (10,240 GPUs), one whole `tessel simulate` process each. Prints per policy the
wall and CPU time, the peak memory (max RSS), the jobs finished and unfinished, the
decisions and the decision-time p50/p99; exits 1 if a run fails or leaves a job unfinished.

With --against OLD_TESSEL, each policy also runs with that binary and the two output
directories (summary.json, jobs.csv, timeline, plots) must be byte-identical: how a speed
change proves it changed no result.

Usage: scripts/bench-scale.py [--tessel build/tessel] [--policies arena,fcfs,...]
                              [--against OLD_TESSEL] [--keep DIR]
Needs the shared data (TESSEL_DATA or ../shared/data). About 5 minutes on 2 cores.
"""
import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(binary, policy, out_dir, data):
    """Runs one simulation: (exit code, wall s, CPU s, max RSS MiB, stdout, stderr)."""
    argv = [binary, "simulate", "--cluster", "arena-10k", "--trace", os.path.join(data, "itp"),
            "--policy", policy, "--out", out_dir, "--json", "--no-progress"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read(),
                err.read().decode(errors="replace"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessel", default=os.path.join(ROOT, "build", "tessel"))
    ap.add_argument("--policies", default="", help="comma-separated (default: every built-in policy)")
    ap.add_argument("--against", default="", help="an older tessel binary whose outputs must be identical")
    ap.add_argument("--keep", default="", help="keep the outputs under this directory")
    args = ap.parse_args()
    data = os.environ.get("TESSEL_DATA", os.path.join(ROOT, "..", "shared", "data"))
    if not os.path.isdir(os.path.join(data, "itp")):
        sys.exit(f"bench-scale: no ITP trace under {data}/itp (set TESSEL_DATA)")
    if args.policies:
        policies = [p for p in args.policies.split(",") if p]
    else:
        listing = subprocess.run([args.tessel, "policies", "--json"], capture_output=True, text=True, check=True)
        policies = [p["name"] for p in json.loads(listing.stdout)]
    root = args.keep or tempfile.mkdtemp(prefix="tessel-bench-scale-")
    head = f"{'policy':<20}{'wall s':>8}{'cpu s':>8}{'max RSS MiB':>13}{'finished':>10}{'unfinished':>11}" \
           f"{'decisions':>11}{'p50 ms':>9}{'p99 ms':>9}" + ("  identical" if args.against else "")
    print(f"arena-10k (10,240 GPUs) x ITP (69,351 jobs), {args.tessel}")
    print(head)
    print("-" * len(head))
    failed = False
    for policy in policies:
        out = os.path.join(root, policy.replace(":", "_"))
        rc, wall, cpu, rss, stdout, stderr = run(args.tessel, policy, out, data)
        if rc != 0:
            print(f"{policy:<20} failed (exit {rc}): {stderr.strip()[-300:]}")
            failed = True
            continue
        s = json.loads(stdout)
        same = ""
        if args.against:
            old = out + ".against"
            orc = run(args.against, policy, old, data)[0]
            same = "yes" if orc == 0 and same_tree(old, out) else "NO"
            failed |= same != "yes"
        failed |= s["jobs_unfinished"] > 0
        print(f"{policy:<20}{wall:>8.1f}{cpu:>8.1f}{rss:>13.0f}{s['jobs_finished']:>10}{s['jobs_unfinished']:>11}"
              f"{s['decisions']:>11}{s['decision_p50_ms']:>9.3f}{s['decision_p99_ms']:>9.2f}"
              + (f"  {same}" if same else ""), flush=True)
    if not args.keep:
        subprocess.run(["rm", "-rf", root])
    sys.exit(1 if failed else 0)


def same_tree(a, b):
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(same_tree(os.path.join(a, d), os.path.join(b, d)) for d in cmp.common_dirs)


if __name__ == "__main__":
    main()
