#!/usr/bin/python3
"""tessel_job on a CUDA GPU: exactness of its plans there, and step times to set beside
`tessel estimate`.

    cd python && python3 gpu_check.py [--out DIR] [--skip-exact] [--skip-timing]

1. Exactness (fp32, TF32 off, the test suite's small model, 20 steps): one process on CUDA
   against one process on the CPU, then multi-process plans with every rank on the one GPU,
   against the one CUDA process. NCCL refuses two ranks on one GPU ("Duplicate GPU"); then the
   same plans run again with TESSEL_DIST_BACKEND=gloo (CUDA tensors, gloo collectives).
2. Step times (bf16 autocast, one GPU, world size 1): GPT shapes from 124M to 1.3B parameters
   at several micro-batches and recompute modes; the median step_time_s after two warm-up
   steps, with the model FLOP/s it implies (6 N T per token plus attention, as the estimator
   counts it). `compare_gpu_check.py` runs `tessel estimate` on the same shapes and plans.

Prints a table per part and writes gpu_check.json to --out (default: the current directory).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tests import harness  # noqa: E402
import torch  # noqa: E402
from tessel_job.gpt import GPTShape  # noqa: E402

STEPS = 20
EXACT_PLANS = [
    ("tp2", dict(tp=2)),
    ("pp2-1f1b", dict(pp=2, num_micro_batches=4)),
    ("pp2-interleaved", dict(pp=2, virtual_stages=2, num_micro_batches=4)),
    ("dp2-zero2", dict(dp=2, zero_stage=2)),
    ("dp2-zero3", dict(dp=2, zero_stage=3)),
    ("t2-p2-sp", dict(tp=2, pp=2, sequence_parallel=1, num_micro_batches=4)),
]
# (name, shape, global batch, micro batch, recompute)
GPT2_SMALL = GPTShape(layers=12, hidden=768, heads=12, seq_len=1024, vocab=50304)
GPT_350M = GPTShape(layers=24, hidden=1024, heads=16, seq_len=1024, vocab=50304)
GPT_1_3B = GPTShape(layers=24, hidden=2048, heads=16, seq_len=1024, vocab=50304)
TIMINGS = [
    ("124M mb1", GPT2_SMALL, 16, 1, "none"),
    ("124M mb2", GPT2_SMALL, 16, 2, "none"),
    ("124M mb4", GPT2_SMALL, 16, 4, "none"),
    ("124M mb8", GPT2_SMALL, 16, 8, "none"),
    ("124M mb16", GPT2_SMALL, 16, 16, "none"),
    ("124M mb8 selective", GPT2_SMALL, 16, 8, "selective"),
    ("124M mb8 full", GPT2_SMALL, 16, 8, "full"),
    ("350M mb1", GPT_350M, 16, 1, "none"),
    ("350M mb4", GPT_350M, 16, 4, "none"),
    ("350M mb8 full", GPT_350M, 16, 8, "full"),
    ("1.3B mb2", GPT_1_3B, 8, 2, "none"),
    ("1.3B mb4 full", GPT_1_3B, 8, 4, "full"),
]


def first_line(code):
    text = str(code)
    for line in reversed(text.splitlines()):
        if "Error" in line or "error" in line:
            return line.strip()[:300]
    return text.splitlines()[0][:300] if text else text


def run_plan(plan, d, steps, **kw):
    """harness.run_plan, with a rank that never answers reported as an error, not raised."""
    try:
        return harness.run_plan(plan, d, steps, **kw)
    except Exception as e:  # noqa: BLE001 - queue.Empty after harness.TIMEOUT_S
        return [f"no answer within {harness.TIMEOUT_S} s ({type(e).__name__}): hung"]


def rel_diff(a, b):
    if len(a) != len(b):
        return float("inf")
    return max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))


def exactness(tmp, dev, only):
    rows = []
    harness.TIMEOUT_S = 120   # a hung NCCL start must not eat the machine's time
    cpu_dir, gpu_dir = os.path.join(tmp, "cpu"), os.path.join(tmp, "cuda")
    codes = run_plan({}, cpu_dir, STEPS, TESSEL_DEVICE="cpu")
    assert codes == [0], codes
    codes = run_plan({}, gpu_dir, STEPS, TESSEL_DEVICE=dev)
    if codes != [0]:
        rows.append({"plan": "1 process", "backend": "-", "ok": False, "error": first_line(codes[0])})
        return rows
    cpu, gpu = harness.loss_curve(cpu_dir), harness.loss_curve(gpu_dir)
    device = [o for o in harness.read_metrics(gpu_dir) if o.get("event") == "start"][0]["device"]
    rows.append({"plan": "1 process (CUDA vs CPU)", "backend": device, "ok": True,
                 "max_rel_diff": rel_diff(gpu, cpu)})
    nccl_refused = False
    for backend in ("nccl", "gloo") if dev == "cuda" else ("gloo",):
        if backend == "gloo" and dev == "cuda" and not nccl_refused:
            break
        for name, plan in EXACT_PLANS:
            if only and not any(o in name for o in only):
                continue
            if nccl_refused and backend == "nccl":
                break
            d = os.path.join(tmp, f"{backend}-{name}")
            t0 = time.time()
            codes = run_plan(plan, d, STEPS, TESSEL_DEVICE=dev,
                                     TESSEL_DIST_BACKEND=backend)
            row = {"plan": name, "backend": backend, "world": harness.world_of(plan),
                   "wall_s": round(time.time() - t0, 1)}
            if codes == [0] * len(codes):
                row.update(ok=True, max_rel_diff=rel_diff(harness.loss_curve(d), gpu))
            else:
                bad = [c for c in codes if c != 0]
                row.update(ok=False, error=first_line(bad[0]) if bad else str(codes),
                           detail=str(bad[0])[-1500:] if bad else "")
                nccl_refused = backend == "nccl"
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def model_flops_per_sample(s):
    """Forward+backward FLOPs of one sequence: 6 x parameters x tokens (matrices only, the LM
    head included) plus attention's 12 L T^2 h (QK^T and AV, forward and backward)."""
    h, L, T, V = s.hidden, s.layers, s.seq_len, s.vocab
    params = L * 12 * h * h + V * h
    return 6 * params * T + 12 * L * T * T * h


def timing(tmp, steps, peak, dev, cases):
    rows = []
    for name, shape, g, mb, recompute in cases:
        d = os.path.join(tmp, "t-" + name.replace(" ", "-"))
        plan = dict(micro_batch=mb, num_micro_batches=g // mb, recompute=recompute,
                    precision="bf16")
        t0 = time.time()
        codes = run_plan(plan, d, steps, shape=shape, global_batch=g,
                                 TESSEL_DEVICE=dev, TESSEL_CHECKPOINT_DIR="")
        row = {"name": name, "layers": shape.layers, "hidden": shape.hidden, "heads": shape.heads,
               "seq_len": shape.seq_len, "vocab": shape.vocab, "global_batch": g,
               "micro_batch": mb, "recompute": recompute, "precision": "bf16",
               "wall_s": round(time.time() - t0, 1)}
        if codes != [0]:
            row.update(ok=False, error=first_line(codes[0]))
        else:
            times = [o["step_time_s"] for o in harness.read_metrics(d) if "step_time_s" in o]
            step = statistics.median(times[2:])
            tflops = model_flops_per_sample(shape) * g / step / 1e12
            row.update(ok=True, step_s=step, step_times=times, model_tflops=tflops,
                       mfu=tflops / peak if peak else None)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "step_times"}), flush=True)
    return rows


def profile_case(tmp, case, dev, out):
    """One timing case run in this process under torch.profiler: the operators that take the
    host's time and the device's, as tables (written to profile_<name>.txt in `out`)."""
    import tessel_job
    from tessel_job.gpt import GPTJob
    name, shape, g, mb, recompute = case
    env = harness.plan_env(dict(micro_batch=mb, num_micro_batches=g // mb, recompute=recompute,
                                precision="bf16"), 0, 1, harness.free_port(), tmp, 6,
                           global_batch=g, TESSEL_DEVICE=dev, TESSEL_CHECKPOINT_DIR="")
    env["TESSEL_METRICS_FILE"] = os.path.join(tmp, "profile.jsonl")
    acts = [torch.profiler.ProfilerActivity.CPU]
    if dev == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts) as prof:
        code = tessel_job.run(GPTJob(shape, log_every=0), env)
    ka = prof.key_averages()
    text = [f"{name}: exit {code}", ka.table(sort_by="self_cpu_time_total", row_limit=25)]
    if dev == "cuda":
        text.append(ka.table(sort_by="self_cuda_time_total", row_limit=15))
    text = "\n".join(text)
    print(text, flush=True)
    with open(os.path.join(out, "profile_" + name.replace(" ", "_") + ".txt"), "w") as f:
        f.write(text)
    return {"case": name, "exit": code}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=".")
    p.add_argument("--steps", type=int, default=12, help="steps per timing run")
    p.add_argument("--peak-tflops", type=float, default=989.5,
                   help="bf16 dense peak of the GPU, for MFU (default: H100/H200 SXM)")
    p.add_argument("--skip-exact", action="store_true")
    p.add_argument("--skip-timing", action="store_true")
    p.add_argument("--plans", default="", help="exactness: only plans whose name contains one "
                   "of these (comma-separated)")
    p.add_argument("--cases", default="", help="timing: only cases whose name contains one of "
                   "these (comma-separated)")
    p.add_argument("--profile-case", default="", help="last, in this process: the torch "
                   "profiler's top operators over one timing case's run (exact name)")
    p.add_argument("--dry-run", action="store_true",
                   help="check this script on the CPU (gloo, tiny timing shapes)")
    a = p.parse_args()
    # The parent never starts CUDA (its children are forked); the versions are read at the end.
    dev = "cpu" if a.dry_run else "cuda"
    cases = TIMINGS if not a.dry_run else [
        ("tiny mb2", GPTShape(2, 64, 4, 32, 256), 8, 2, "none"),
        ("tiny mb4 full", GPTShape(2, 64, 4, 32, 256), 8, 4, "full")]
    only = [x for x in a.plans.split(",") if x]
    picked = [c for c in cases if not a.cases or any(x in c[0] for x in a.cases.split(","))]
    result = {}
    with tempfile.TemporaryDirectory(prefix="tessel-gpu-") as tmp:
        if not a.skip_exact:
            result["exactness"] = exactness(tmp, dev, only)
        if not a.skip_timing:
            result["timing"] = timing(tmp, a.steps, a.peak_tflops, dev, picked)
        if a.profile_case:
            case = [c for c in cases if c[0] == a.profile_case][0]
            result["profile"] = profile_case(tmp, case, dev, a.out)
    result["info"] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                      "nccl": ".".join(map(str, torch.cuda.nccl.version()))
                      if torch.version.cuda else None, "cpus": os.cpu_count(),
                      "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    print(json.dumps(result["info"]), flush=True)
    with open(os.path.join(a.out, "gpu_check.json"), "w") as f:
        json.dump(result, f, indent=1)
    for r in result.get("exactness", []):
        print(f"{r['plan']:<26} {r.get('backend', ''):<8} "
              + (f"max rel diff {r['max_rel_diff']:.2e}" if r["ok"] else f"FAILED {r['error']}"))
    for r in result.get("timing", []):
        print(f"{r['name']:<22} " + (f"{r['step_s']:.4f} s/step  {r['model_tflops']:.0f} TFLOP/s"
                                     if r["ok"] else f"FAILED {r['error']}"))


if __name__ == "__main__":
    main()
