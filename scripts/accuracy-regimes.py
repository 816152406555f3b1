#!/usr/bin/env python3
"""The estimator's leave-one-source-out error per regime (issue 37's README table).

Runs `tessel accuracy --cv source --json` and groups the rows of every source except the
Arena databases (which are reported, not targeted: docs/estimator.md) by the regimes where
the estimator has been wrong: FSDP at small micro-batches, deep pipelines, 8-way tensor
parallelism, 3D plans, CNNs, FP32 on Volta; and per GPU architecture. A row may fall in more
than one regime; its plan is the one the report states or chose. Prints rows, median and p90
of the absolute throughput error, and the rows called "does not fit".

With --against OLD_TESSEL, the same rows (by id) are also priced by an older binary and its
median and p90 are printed beside them (before / after).

Usage: scripts/accuracy-regimes.py [--tessel build/tessel] [--against OLD_TESSEL] [--data DIR]
Needs the shared data (TESSEL_DATA or ../shared/data). About 4 s per binary.
"""
import argparse
import json
import math
import os
import subprocess
import sys


def quantile(values, q):
    """Linear interpolation between order statistics (core/stats.h Quantile)."""
    if not values:
        return float("nan")
    v = sorted(values)
    idx = q * (len(v) - 1)
    lo = math.floor(idx)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (idx - lo)


REGIMES = [
    ("all (every source but the Arena databases)", lambda r: True),
    ("FSDP / ZeRO-3, micro-batch 1-2", lambda r: r["plan"]["zero"] == 3 and r["plan"]["micro_batch"] <= 2),
    ("FSDP / ZeRO-3, micro-batch >= 3", lambda r: r["plan"]["zero"] == 3 and r["plan"]["micro_batch"] >= 3),
    ("deep pipelines, p >= 8", lambda r: r["plan"]["pp"] >= 8),
    ("8-way tensor parallel, t >= 8", lambda r: r["plan"]["tp"] >= 8),
    ("3D: d, t and p > 1", lambda r: r["plan"]["dp"] > 1 and r["plan"]["tp"] > 1 and r["plan"]["pp"] > 1),
    ("CNNs", lambda r: "resnet" in r["model"].lower()),
    ("FP32 on Volta", lambda r: r["arch"] == "volta" and r["plan"]["precision"] == "fp32"),
    ("Ampere", lambda r: r["arch"] == "ampere"),
    ("Hopper", lambda r: r["arch"] == "hopper"),
    ("Volta", lambda r: r["arch"] == "volta"),
]


def report(tessel, data):
    cmd = [tessel, "accuracy", "--cv", "source", "--json"]
    if data:
        cmd += ["--data", data]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    rows = {r["id"]: r for r in doc["rows"] if not r["source"].startswith("arena")}
    # Runs that ran but the estimator called "does not fit": no prediction, no plan.
    called = {i for i, r in rows.items() if "predicted_s" not in r}
    return rows, called


def belongs(member, row):
    """Whether `row` is in the regime; a row without a plan (called "does not fit") is in the
    regimes that do not read the plan."""
    try:
        return member(row)
    except KeyError:
        return False


def cell(errors):
    if not errors:
        return "-", "-"
    return "%.1f%%" % (100 * quantile(errors, 0.5)), "%.1f%%" % (100 * quantile(errors, 0.9))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessel", default="build/tessel")
    ap.add_argument("--against", help="an older tessel binary: its figures on the same rows beside")
    ap.add_argument("--data", default=os.environ.get("TESSEL_DATA", ""))
    args = ap.parse_args()
    rows, called = report(args.tessel, args.data)
    old_rows, old_called = report(args.against, args.data) if args.against else ({}, set())
    head = "%-44s %5s %8s %8s %6s" % ("regime (leave-one-source-out)", "rows", "median", "p90", "no-fit")
    if args.against:
        head += "   %8s %8s %6s" % ("before", "p90", "no-fit")
    print(head)
    print("-" * len(head))
    for name, member in REGIMES:
        ids = [i for i, r in rows.items() if belongs(member, r)]
        if not ids:
            continue
        med, p90 = cell([abs(rows[i]["throughput_error"]) for i in ids if i not in called])
        line = "%-44s %5d %8s %8s %6d" % (name, len(ids), med, p90, sum(1 for i in ids if i in called))
        if args.against:
            shared = [i for i in ids if i in old_rows and i not in old_called]
            omed, op90 = cell([abs(old_rows[i]["throughput_error"]) for i in shared])
            line += "   %8s %8s %6d" % (omed, op90, sum(1 for i in ids if i in old_called))
            if len(shared) != len(ids):
                line += "  (%d rows before)" % len(shared)
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
