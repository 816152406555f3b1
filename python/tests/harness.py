"""Runs tessel_job plans in forked processes (torch is imported once, by the test process).

Each rank is a child of the test process with the contract's variables in its own `env`
(tessel_job.run takes it explicitly), rendezvous over gloo at a free port on 127.0.0.1.
"""

import json
import multiprocessing as mp
import os
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import tessel_job  # noqa: E402  (installs the stop handlers, inherited by the children)
import torch  # noqa: E402,F401  (imported before fork: the children do not import it again)
from tessel_job.gpt import GPTJob, GPTShape  # noqa: E402

SHAPE = GPTShape(layers=4, hidden=32, heads=4, seq_len=16, vocab=64)
GLOBAL_BATCH = 24
TIMEOUT_S = 300
_ctx = mp.get_context("fork")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(env, shape, kw, queue):
    rank = int(env.get("SLURM_PROCID", "0"))
    try:
        code = tessel_job.run(GPTJob(shape, log_every=0, **kw), env)
    except BaseException as e:  # noqa: BLE001 - reported to the test
        import traceback
        code = f"exception: {e!r}\n{traceback.format_exc()}"
    queue.put((rank, code))
    queue.close()
    queue.join_thread()   # flushed before os._exit, which skips the feeder thread
    os._exit(0)


def plan_env(plan, rank, world, port, d, steps, global_batch=GLOBAL_BATCH, **extra):
    env = {"SLURM_PROCID": str(rank), "TESSEL_WORLD_SIZE": str(world),
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "TESSEL_GLOBAL_BATCH": str(global_batch), "TESSEL_TOTAL_ITERATIONS": str(steps),
           "TESSEL_METRICS_FILE": os.path.join(d, "metrics.jsonl"),
           "TESSEL_CHECKPOINT_DIR": os.path.join(d, "ckpt"),
           "TESSEL_CHECKPOINT_INTERVAL_S": "0"}
    for k, v in plan.items():
        env["TESSEL_" + k.upper()] = str(v)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def world_of(plan):
    return plan.get("dp", 1) * plan.get("tp", 1) * plan.get("pp", 1)


def run_plan(plan, d, steps, shape=SHAPE, job=None, **extra):
    """Runs `plan` to `steps` total steps in directory d; returns each rank's exit code."""
    world = world_of(plan)
    port = free_port()
    queue = _ctx.Queue()
    procs = []
    for r in range(world):
        env = plan_env(plan, r, world, port, d, steps, **extra)
        p = _ctx.Process(target=_child, args=(env, shape, job or {}, queue))
        p.start()
        procs.append(p)
    results = {}
    try:
        for _ in procs:
            rank, code = queue.get(timeout=TIMEOUT_S)
            results[rank] = code
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
                p.join()
    return [results.get(r) for r in range(world)]


def read_metrics(d):
    with open(os.path.join(d, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def loss_curve(d):
    """{step: loss}: a later launch's line for a step replaces an earlier one (a resume from
    an older checkpoint repeats steps), as examples/README.md tells readers to do."""
    out = {}
    for o in read_metrics(d):
        if "step_time_s" in o and not o.get("profile"):
            out[o["step"]] = o["loss"]
    return [out[k] for k in sorted(out)]
