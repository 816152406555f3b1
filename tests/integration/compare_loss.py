#!/usr/bin/python3
"""Compares a job's loss curve, as the daemon ran it (its metrics file, across
every launch: moved, resized, restarted), with an uninterrupted run of the same
job: its first launch file's argv and environment, on one process (d = t = p = 1,
ZeRO 0, the whole global batch in one micro-batch), here, without Slurm. Exit 0 when every step's loss matches (relative 1e-4).

Usage: compare_loss.py JOB_DIR/metrics.jsonl
(the launch files are read from the metrics file's folder)."""
import json
import os
import subprocess
import sys
import tempfile


def losses(path):
    out = {}
    # The file is the job's: lines that are not JSON objects (garbage, bytes
    # that are not UTF-8) are skipped, as the daemon skips them.
    with open(path, errors="replace") as f:
        for line in f:
            try:
                r = json.loads(line)
            except (ValueError, RecursionError):  # garbage, nested too deep
                continue
            if isinstance(r, dict) and "loss" in r and "step" in r and not r.get("profile"):
                out[int(r["step"])] = float(r["loss"])  # a later launch's value wins
    return out


def main():
    metrics = sys.argv[1]
    job_dir = os.path.dirname(metrics)
    with open(os.path.join(job_dir, "launch.0.json")) as f:
        launch = json.load(f)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(launch["env"])
    argv = list(launch["argv"])
    if "--sim-seconds-per-sample" in argv:  # sleeping does not change the loss
        i = argv.index("--sim-seconds-per-sample")
        del argv[i:i + 2]
    gb = int(env["TESSEL_GLOBAL_BATCH"])
    with tempfile.TemporaryDirectory() as tmp:
        ref = os.path.join(tmp, "metrics.jsonl")
        env.update({"TESSEL_WORLD_SIZE": "1", "TESSEL_DP": "1", "TESSEL_TP": "1", "TESSEL_PP": "1",
                    "TESSEL_VIRTUAL_STAGES": "1", "TESSEL_SEQUENCE_PARALLEL": "0",
                    "TESSEL_ZERO_STAGE": "0", "TESSEL_MICRO_BATCH": str(gb),
                    "TESSEL_NUM_MICRO_BATCHES": "1", "TESSEL_CHECKPOINT_DIR": os.path.join(tmp, "ckpt"),
                    "TESSEL_METRICS_FILE": ref, "SLURM_PROCID": "0", "SLURM_LOCALID": "0"})
        plan = json.loads(env["TESSEL_PLAN_JSON"])
        plan.update({"dp": 1, "tp": 1, "pp": 1, "virtual_stages": 1, "sequence_parallel": 0,
                     "zero_stage": 0, "micro_batch": gb, "num_micro_batches": 1, "gpus": 1,
                     "nodes": 1, "placement": []})
        env["TESSEL_PLAN_JSON"] = json.dumps(plan)
        subprocess.run(argv, env=env, cwd=launch["workdir"], check=True)
        want = losses(ref)
    got = losses(metrics)
    if not want or sorted(got) != sorted(want):
        print(f"steps differ: daemon ran {len(got)} steps, the reference {len(want)}")
        return 1
    worst = max(abs(got[s] - want[s]) / max(abs(want[s]), 1e-12) for s in want)
    print(f"{len(want)} steps, largest relative loss difference {worst:.2e}")
    return 0 if worst <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
