#!/usr/bin/env python3
"""Where the held-out error lives: rows past a threshold by source, GPU, family and GPU count.

Reads `tessel accuracy --cv source --json` and prints, for every group of rows (source, GPU type,
model family, GPU count, hosts), how many rows it has and how many are past the threshold
(|throughput error| > --over, default 0.30), with the group's median signed error; then, per GPU
architecture and over all rows, how many rows are past it against the number a p90 at the
threshold allows (a tenth of the rows). Non-Arena rows are grouped by source and GPU only.

`--pair A,B` instead lines up the Arena rows measured on both GPU types A and B under the same
database key (model, global batch, hosts, GPUs per host) and prints the measured and predicted
time of each and the ratios B/A: where A dominates B on every resource (peak, bandwidth, memory;
the A40 over the A10), a measured ratio below 1 says one of the two runs did not run at the
hardware's speed.

`--per-sample MODELS_JSON` (from `tessel models --json`) prints, for every GPU type, model family,
GPU count and host count of the Arena rows, the measured and predicted iteration time x GPUs /
(global batch x parameters in billions), min-max over the group: a plan that scales perfectly
keeps the figure flat across GPU counts (docs/estimator.md: "Time per sample by GPU count"); `--gpu`,
`--family` and `--batch` narrow it.

`--dp-only BIN` estimates every multi-GPU Wide-ResNet Arena row on the H100, L20, V100 and A10
hosts (whose node fabric the GPU's usual node type shares; `BIN` is the tessel binary) as pure
data parallelism over all its GPUs with the row's micro-batch count (the plan the Arena trainer's
`is_dp_only` option builds) and prints its throughput error beside the row's own (the plan
tessel predicts Alpa picks), with both errors' median and the rows past --over.

Usage:
  tessel accuracy --cv source --json > acc.json
  scripts/accuracy-outliers.py acc.json [--over 0.30]
  scripts/accuracy-outliers.py acc.json --pair a40,a10
  scripts/accuracy-outliers.py acc.json --dp-only build/tessel
  tessel models --json > models.json
  scripts/accuracy-outliers.py acc.json --per-sample models.json [--gpu v100-32g] [--family bert] [--batch 512]
  scripts/accuracy-outliers.py --self-test
"""
import argparse
import json
import re
import statistics
import subprocess
from collections import defaultdict

ARENA_KEY = re.compile(r":([a-z_]+)_([0-9.]+[MB])_([0-9]+)@([0-9]+)_[a-z0-9]+_[0-9]+_n_([0-9]+)_d")


def arena_key(row):
    """(family, size, batch, hosts, gpus per host) of an Arena row, or None."""
    m = ARENA_KEY.search(row["id"])
    if not row["source"].startswith("arena") or m is None:
        return None
    return m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5))


def past_counts(rows, over):
    """{(source, gpu, family, gpus, hosts): errors} and {architecture: (rows, past)}."""
    groups = defaultdict(list)
    for r in rows:
        k = arena_key(r)
        family, hosts = (k[0], k[3]) if k else ("-", 0)
        gpus = r["gpus"] if k else 0
        groups[(r["source"], r["gpu"], family, gpus, hosts)].append(r["throughput_error"])
    by_arch = defaultdict(list)
    for r in rows:
        by_arch[r["arch"]].append(r["throughput_error"])
    by_arch["all"] = [r["throughput_error"] for r in rows]
    arch = {a: (len(e), sum(abs(x) > over for x in e)) for a, e in by_arch.items()}
    return groups, arch


def outliers(rows, over):
    groups, arch = past_counts(rows, over)
    print(f"rows with |throughput error| > {over:.0%} (Arena rows by family, GPU count and hosts)")
    print(f"{'source':<26} {'gpu':<10} {'family':<12} {'GPUs':>4} {'hosts':>5} {'past':>4} {'rows':>4}"
          f"  {'median err':>10}")
    for (source, gpu, family, gpus, hosts), errs in sorted(groups.items()):
        past = sum(abs(e) > over for e in errs)
        if past == 0:
            continue
        print(f"{source:<26} {gpu:<10} {family:<12} {gpus or '-':>4} {hosts or '-':>5} {past:>4} "
              f"{len(errs):>4}  {statistics.median(errs):>+10.1%}")
    print()
    print(f"{'architecture':<13} {'rows':>5} {'past':>5} {'allowed':>8}")
    for a, (n, past) in arch.items():
        print(f"{a:<13} {n:>5} {past:>5} {n // 10:>8}")


def self_test():
    """The grouping, counting and per-sample figures on four made-up rows."""
    def row(id_, source, model, gpu, gpus, arch, err):
        return {"id": id_, "source": source, "model": model, "gpu": gpu, "gpus": gpus, "arch": arch,
                "throughput_error": err, "measured_s": 1.0, "predicted_s": 1 / (1 + err)}
    rows = [row("prof_database.json:bert_1.3B_128@4_a40_4_n_2_d", "arena-prof-db", "bert__1.3B", "a40", 8,
                "ampere", 0.34),
            row("prof_database.json:bert_1.3B_128@4_a10_4_n_2_d", "arena-prof-db", "bert__1.3B", "a10", 8,
                "ampere", 0.02),
            row("prof_database.json:wide_resnet_1B_256@1_v100_1_n_8_d", "arena-prof-db", "wide_resnet__1B",
                "v100-32g", 8, "volta", -0.31),
            row("calibration.csv:431", "dle-resnet50", "resnet-50", "v100-16g", 1, "volta", 0.1)]
    groups, arch = past_counts(rows, 0.30)
    assert arena_key(rows[2]) == ("wide_resnet", "1B", 256, 1, 8), arena_key(rows[2])
    assert arena_key(rows[3]) is None
    assert groups[("arena-prof-db", "a40", "bert", 8, 4)] == [0.34]
    assert groups[("dle-resnet50", "v100-16g", "-", 0, 0)] == [0.1]
    assert arch == {"ampere": (2, 1), "volta": (2, 1), "all": (4, 2)}, arch
    ps = per_sample_groups(rows, {"bert__1.3B": 1.3, "wide_resnet__1B": 1.0}, family="bert")
    assert list(ps) == [("a40", "bert", 8, 4), ("a10", "bert", 8, 4)], list(ps)
    assert abs(ps[("a40", "bert", 8, 4)][0][0] - 8 / (128 * 1.3)) < 1e-12
    print("accuracy-outliers self-test: ok")


def pair(rows, a, b):
    by = defaultdict(dict)
    for r in rows:
        k = arena_key(r)
        if k and r["gpu"] in (a, b):
            by[k][r["gpu"]] = r
    print(f"Arena runs measured on both {a} and {b} (seconds per iteration; ratio = {b} / {a})")
    print(f"{'model':<22} {'batch':>5} {'hosts':>5} {'per host':>8}  {a + ' meas':>10} {b + ' meas':>10}"
          f" {'ratio':>6}  {a + ' pred':>10} {b + ' pred':>10} {'ratio':>6}")
    for k, v in sorted(by.items()):
        if a not in v or b not in v:
            continue
        ra, rb = v[a], v[b]
        print(f"{k[0] + '_' + k[1]:<22} {k[2]:>5} {k[3]:>5} {k[4]:>8}  {ra['measured_s']:>10.2f} "
              f"{rb['measured_s']:>10.2f} {rb['measured_s'] / ra['measured_s']:>6.2f}  "
              f"{ra['predicted_s']:>10.2f} {rb['predicted_s']:>10.2f} "
              f"{rb['predicted_s'] / ra['predicted_s']:>6.2f}")


def per_sample_groups(rows, params_b, gpu=None, family=None, batch=None):
    """{(gpu, family, GPUs, hosts): ([measured], [predicted])} in s x GPUs / (batch x B params)."""
    groups = defaultdict(lambda: ([], []))
    for r in rows:
        k = arena_key(r)
        if k is None or r["model"] not in params_b:
            continue
        fam, _, b, hosts, _ = k
        if (gpu and r["gpu"] != gpu) or (family and fam != family) or (batch and b != batch):
            continue
        unit = r["gpus"] / (b * params_b[r["model"]])
        g = groups[(r["gpu"], fam, r["gpus"], hosts)]
        g[0].append(r["measured_s"] * unit)
        g[1].append(r["predicted_s"] * unit)
    return groups


def per_sample(rows, models_json, gpu, family, batch):
    with open(models_json) as f:
        params_b = {m["name"]: m["params"] / 1e9 for m in json.load(f)}
    print("s x GPUs / (batch x B params), min-max over the group's rows")
    print(f"{'gpu':<10} {'family':<12} {'GPUs':>4} {'hosts':>5} {'rows':>4}  {'measured':>13}  {'predicted':>13}")
    for (g, fam, gpus, hosts), (meas, pred) in sorted(per_sample_groups(rows, params_b, gpu, family, batch).items()):
        print(f"{g:<10} {fam:<12} {gpus:>4} {hosts:>5} {len(meas):>4}  "
              f"{min(meas):.3f}-{max(meas):.3f}  {min(pred):.3f}-{max(pred):.3f}")


# GPU types whose usual node type (`tessel node-types`) has the Arena host's fabric.
DP_GPUS = ("h100-sxm", "l20", "v100-32g", "a10")


def dp_only(rows, binary, over):
    print("multi-GPU Wide-ResNet rows: throughput error of the predicted plan and of pure data parallelism")
    print(f"{'row':<44} {'GPUs':>4} {'measured':>9} {'predicted':>9} {'err':>7} {'dp only':>9} {'err':>7}")
    errs_plan, errs_dp = [], []
    for r in rows:
        k = arena_key(r)
        if not k or k[0] != "wide_resnet" or r["gpus"] < 2 or r["gpu"] not in DP_GPUS:
            continue
        _, size, batch, _, per_host = k
        n, m = r["gpus"], r["plan"]["num_micro_batches"]
        if batch % (m * n):
            continue
        cmd = [binary, "estimate", "--model", f"wide_resnet__{size}", "--gpu", r["gpu"],
               "--gpus", str(n), "--gpus-per-node", str(per_host), "--network-gbps", "28.5",
               "--global-batch", str(batch), "--tp", "1", "--pp", "1", "--dp", str(n),
               "--micro-batch", str(batch // (m * n)), "--recompute", "full", "--zero", "1",
               "--framework", "alpa", "--json"]
        est = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        e_dp = r["measured_s"] / est["iteration_time_s"] - 1
        errs_plan.append(r["throughput_error"])
        errs_dp.append(e_dp)
        print(f"{r['id'].split(':')[-1][:44]:<44} {n:>4} {r['measured_s']:>9.2f} {r['predicted_s']:>9.2f} "
              f"{r['throughput_error']:>+7.0%} {est['iteration_time_s']:>9.2f} {e_dp:>+7.0%}")
    for name, errs in (("predicted plan", errs_plan), ("data parallel", errs_dp)):
        print(f"{name}: {len(errs)} rows, median |err| {statistics.median(map(abs, errs)):.1%}, "
              f"{sum(abs(e) > over for e in errs)} past {over:.0%}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("accuracy_json", nargs="?")
    ap.add_argument("--self-test", action="store_true", help="check the grouping on made-up rows")
    ap.add_argument("--over", type=float, default=0.30, help="threshold on |throughput error|")
    ap.add_argument("--pair", help="two GPU types A,B: the Arena runs measured on both")
    ap.add_argument("--dp-only", metavar="BIN", help="tessel binary: multi-GPU Wide-ResNets as pure data parallelism")
    ap.add_argument("--per-sample", metavar="MODELS_JSON",
                    help="tessel models --json: the Arena rows' time per sample and parameter by GPU count")
    ap.add_argument("--gpu", help="--per-sample: only this GPU type (catalog name)")
    ap.add_argument("--family", help="--per-sample: only this model family (bert, moe, wide_resnet)")
    ap.add_argument("--batch", type=int, help="--per-sample: only this global batch")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return
    if not args.accuracy_json:
        ap.error("the accuracy JSON is required (tessel accuracy --cv source --json)")
    with open(args.accuracy_json) as f:
        rows = json.load(f)["rows"]
    if args.per_sample:
        per_sample(rows, args.per_sample, args.gpu, args.family, args.batch)
    elif args.dp_only:
        dp_only(rows, args.dp_only, args.over)
    elif args.pair:
        a, _, b = args.pair.partition(",")
        if not a or not b:
            ap.error("--pair: expected two GPU types, e.g. a40,a10")
        pair(rows, a, b)
    else:
        outliers(rows, args.over)


if __name__ == "__main__":
    main()
