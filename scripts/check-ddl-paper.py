#!/usr/bin/env python3
"""Checks `tessel simulate --setting ddl-paper` against Wang et al.'s own simulator.

Their code (HKBU-HPML/dl-scheduling, commit d5398bd, online/) is Python 2. This
script copies cluster.py, job.py and job_master.py into a temporary directory,
turns their print statements into calls of a function that does nothing (the
only change to what runs), drops job_master.py's module-level run at its end,
and plays gen-trace's ddl job sets through both simulators: the same jobs
(their job files written from the trace, read in job order instead of the
file system's), each scheduler and placement, their get_rest_size as written
and corrected. It prints both mean JCTs per run and how many are equal.

usage: scripts/check-ddl-paper.py AUTHORS_ONLINE_DIR [--seeds 1,2,3,4,5] [--tessel build/tessel]
(AUTHORS_ONLINE_DIR: a checkout's online/ folder, e.g. from
`git archive d5398bd online | tar -x`.) About 75 s per seed here (seeds 1 and 2 took 2 min 35 s).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

DRIVER = r'''
import csv, glob, os, re, sys, yaml
import job_master as jm, job as jb
trace, pick, thres, ada, fix = sys.argv[1:6]
names = {"ddl-vgg16": "vgg16", "ddl-resnet50": "resnet50", "ddl-inception3": "inception-v3", "ddl-lstm-ptb": "lstm"}
setname = "t_%d" % os.getpid()
root = "job_configs/" + setname
os.makedirs(root)
last = 0
for i, row in enumerate(csv.DictReader(open(trace))):
    j = {"job_id": i, "job_name": "j%d" % i, "dnn": names[row["model"]]}
    j.update(jm.TEMPLATES[j["dnn"]])
    j.update({"nworkers": int(row["requested_gpus"]), "nsteps_update": 1, "cuda_enabled": 1,
              "iters": int(row["iterations"]), "start_time": int(round(float(row["submit_s"]) * 1000))})
    last = max(last, j["start_time"])
    yaml.safe_dump(j, open("%s/job_%d.json" % (root, i), "w"))
jm.ARRIVAL_MAX = max(jm.ARRIVAL_MAX, last + 1)
plain_glob = glob.glob
jm.glob.glob = lambda p: sorted(plain_glob(p), key=lambda f: int(re.findall(r"(\d+)\.json$", f)[0]))
if fix == "1":
    def get_rest_size(self, time):
        return self.model_size - (self.transferred_size + (time - self.last_change_time) * self.speed)
    jb.dag_task.get_rest_size = get_rest_size
s = jm.job_scheduler(setname)
s.schedule("ssf", pick, "srsf", int(thres), ada == "true")
fin = [j.finish_time for t in s.job_set for j in t]
print("%.6f" % (sum(fin) / len(fin)))
'''

# (their pick, comm threshold, adaDual, corrected rest size) -> tessel's policy and placement
CONFIGS = [
    ("lwf2", 0, False, False, "srsf-avoid", "lwf-kappa:kappa=2"),
    ("lwf2", 1, False, False, "srsf-accept", "lwf-kappa:kappa=2"),
    ("lwf2", 1, True, False, "ada-srsf:paper_rest_size=true", "lwf-kappa:kappa=2"),
    ("lwf2", 1, True, True, "ada-srsf", "lwf-kappa:kappa=2"),
    ("bp", 1, True, False, "ada-srsf:paper_rest_size=true", "first-fit"),
    ("lwf1", 1, True, False, "ada-srsf:paper_rest_size=true", "lwf-kappa:kappa=1"),
    ("lwf4", 1, True, False, "ada-srsf:paper_rest_size=true", "lwf-kappa:kappa=4"),
    ("bp", 1, True, True, "ada-srsf", "first-fit"),
    ("lwf1", 1, True, True, "ada-srsf", "lwf-kappa:kappa=1"),
    ("bp", 0, False, False, "srsf-avoid", "first-fit"),
]


def port(src, dst):
    for name in ("cluster.py", "job.py", "job_master.py"):
        text = open(os.path.join(src, name)).read()
        if name == "job_master.py":
            text = text[: text.index("## random job set for test")]
        lines = []
        for line in text.split("\n"):
            m = re.match(r"^(\s*)print(?: (.*))?$", line)
            if m and not line.lstrip().startswith("#"):
                line = "%s_log(%s)" % (m.group(1), m.group(2) or "")
            lines.append(line)
        open(os.path.join(dst, name), "w").write("def _log(*a, **k):\n    pass\n" + "\n".join(lines))
    open(os.path.join(dst, "driver.py"), "w").write(DRIVER)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("online")
    ap.add_argument("--seeds", default="1,2,3,4,5")
    ap.add_argument("--tessel", default="build/tessel")
    a = ap.parse_args()
    tessel = os.path.abspath(a.tessel)
    work = tempfile.mkdtemp(prefix="ddl-paper-")
    port(a.online, work)
    equal = total = 0
    print("%-6s %-4s %-30s %-18s %12s %12s" % ("pick", "seed", "tessel policy", "placement", "theirs ms", "tessel ms"))
    for seed in a.seeds.split(","):
        trace = os.path.join(work, "ddl.%s.csv" % seed)
        subprocess.run([tessel, "gen-trace", "--profile", "ddl", "--seed", seed, "--out", trace], check=True,
                       capture_output=True)
        for pick, thres, ada, fixed, policy, placement in CONFIGS:
            theirs = float(subprocess.run(
                [sys.executable, "driver.py", trace, pick, str(thres), "true" if ada else "false", "1" if fixed else "0"],
                cwd=work, check=True, capture_output=True, text=True).stdout)
            out = subprocess.run([tessel, "simulate", "--setting", "ddl-paper", "--cluster", "ddl-64", "--trace", trace,
                                  "--policy", policy, "--placement", placement, "--json", "--no-progress"],
                                 check=True, capture_output=True, text=True).stdout
            ours = json.loads(out)["avg_jct_s"] * 1000
            total += 1
            same = abs(ours - theirs) < 1e-6
            equal += same
            print("%-6s %-4s %-30s %-18s %12.3f %12.3f %s" % (pick, seed, policy, placement, theirs, ours,
                                                              "" if same else "DIFFERENT"))
    print("%d of %d runs give the same mean JCT" % (equal, total))
    return 0 if equal == total else 1


if __name__ == "__main__":
    sys.exit(main())
