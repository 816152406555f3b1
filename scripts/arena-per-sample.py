#!/usr/bin/env python3
"""Time per sample by GPU count in the Arena databases (README: "Time per sample by GPU count").

Reads `tessel accuracy --json` and `tessel models --json` and prints, for every GPU type,
model family and GPU count of the Arena rows, the measured and predicted iteration time x GPUs /
(global batch x parameters in billions): a plan that scales perfectly keeps the figure flat
across GPU counts. The global batch is the one in the row's database key
(`<family>_<size>_<batch>@<hosts>_...`); a GPU count measured on several host layouts is
listed once per layout.

Usage:
  tessel accuracy --cv source --json > acc.json
  tessel models --json > models.json
  scripts/arena-per-sample.py acc.json models.json [--gpu v100-32g] [--family bert] [--batch 512]
"""
import argparse
import json
import re
from collections import defaultdict

KEY = re.compile(r":([a-z_]+)_([0-9.]+[MB])_([0-9]+)@([0-9]+)_")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("accuracy_json")
    ap.add_argument("models_json")
    ap.add_argument("--gpu", help="only this GPU type (catalog name)")
    ap.add_argument("--family", help="only this model family (bert, moe, wide_resnet)")
    ap.add_argument("--batch", type=int, help="only this global batch")
    args = ap.parse_args()
    with open(args.models_json) as f:
        params_b = {m["name"]: m["params"] / 1e9 for m in json.load(f)}
    with open(args.accuracy_json) as f:
        rows = json.load(f)["rows"]
    groups = defaultdict(lambda: ([], []))  # (gpu, family, gpus, hosts) -> (measured, predicted)
    for r in rows:
        m = KEY.search(r["id"])
        if not r["source"].startswith("arena") or m is None or r["model"] not in params_b:
            continue
        family, batch, hosts = m.group(1), int(m.group(3)), int(m.group(4))
        if (args.gpu and r["gpu"] != args.gpu) or (args.family and family != args.family) or \
                (args.batch and batch != args.batch):
            continue
        unit = r["gpus"] / (batch * params_b[r["model"]])
        g = groups[(r["gpu"], family, r["gpus"], hosts)]
        g[0].append(r["measured_s"] * unit)
        g[1].append(r["predicted_s"] * unit)
    print("s x GPUs / (batch x B params), min-max over the group's rows")
    print(f"{'gpu':<10} {'family':<12} {'GPUs':>4} {'hosts':>5} {'rows':>4}  {'measured':>13}  {'predicted':>13}")
    for (gpu, family, gpus, hosts), (meas, pred) in sorted(groups.items()):
        print(f"{gpu:<10} {family:<12} {gpus:>4} {hosts:>5} {len(meas):>4}  "
              f"{min(meas):.3f}-{max(meas):.3f}  {min(pred):.3f}-{max(pred):.3f}")


if __name__ == "__main__":
    main()
