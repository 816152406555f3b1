#!/usr/bin/python3
"""Step time of the example model under each parallelism, and tessel_job's own overhead.

    cd python && /usr/bin/python3 bench_plans.py [--steps 12] [--layers 4 --hidden 64 ...]

Every plan runs the same model and global batch through tessel_job (forked processes, gloo on
CPU); the figure is the median step_time_s of rank 0 over the steps after the first two.
Reported, not asserted: on a 2-core machine, plans of more than two processes share the cores,
so their step times say what the library costs there, not what the plan would gain on GPUs.
The overhead rows compare one process under tessel_job (d = t = p = 1) with two bare loops on
the same batch: the same tessel_job.gpt model stepped by hand (no runtime: no pipeline
runner, sharded optimizer, agreement all-reduce, metrics) and a plain PyTorch model of the
same shape (nn.Linear, F.cross_entropy).
"""

import argparse
import math
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tests import harness  # noqa: E402
import torch  # noqa: E402
from tessel_job.gpt import GPTJob, GPTShape  # noqa: E402

PLANS = [
    ("1 process", {}),
    ("micro-batches 4", dict(num_micro_batches=4)),
    ("recompute selective", dict(recompute="selective")),
    ("recompute full", dict(recompute="full")),
    ("d2", dict(dp=2)),
    ("d2 ZeRO-1", dict(dp=2, zero_stage=1)),
    ("d2 ZeRO-2", dict(dp=2, zero_stage=2)),
    ("d2 ZeRO-3", dict(dp=2, zero_stage=3)),
    ("t2", dict(tp=2)),
    ("t2 sequence-parallel", dict(tp=2, sequence_parallel=1)),
    ("p2 1F1B (M=4)", dict(pp=2, num_micro_batches=4)),
    ("p2 interleaved v=2 (M=4)", dict(pp=2, virtual_stages=2, num_micro_batches=4)),
    ("d2 t2", dict(dp=2, tp=2)),
    ("t2 p2 (M=4)", dict(tp=2, pp=2, num_micro_batches=4)),
    ("d2 t2 p2 ZeRO-1 (M=2)", dict(dp=2, tp=2, pp=2, num_micro_batches=2, zero_stage=1)),
]


def median_step(d, skip=2):
    times = [o["step_time_s"] for o in harness.read_metrics(d) if "step_time_s" in o]
    return statistics.median(times[skip:])


def bare_tessel_job(shape, batch, steps):
    spec = GPTJob(shape)
    chunk = spec.build_chunk(0, shape.layers, True, True, None, False, "none")
    spec.init([chunk], spec.seed, 1, 0)
    opt = torch.optim.AdamW(chunk.parameters(), lr=3e-3, weight_decay=0.01)
    return _time_loop(lambda x, y: spec.loss(chunk(x), y, None).sum() / batch, opt, spec, batch,
                      steps)


def bare_pytorch(shape, batch, steps):
    nn, F = torch.nn, torch.nn.functional
    h, heads, t = shape.hidden, shape.heads, shape.seq_len

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
            self.fc1, self.fc2 = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
            self.register_buffer("mask", torch.triu(torch.ones(t, t, dtype=torch.bool), 1))

        def forward(self, x):
            b = x.shape[0]
            q, k, v = (z.view(b, t, heads, h // heads).transpose(1, 2)
                       for z in self.qkv(self.ln1(x)).split(h, dim=2))
            a = ((q @ k.transpose(-2, -1)) / math.sqrt(h // heads)).masked_fill(self.mask, -1e30)
            x = x + self.proj((a.softmax(-1) @ v).transpose(1, 2).reshape(b, t, h))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    torch.manual_seed(0)
    tok, pos = nn.Embedding(shape.vocab, h), nn.Parameter(torch.zeros(t, h))
    blocks = nn.ModuleList(Block() for _ in range(shape.layers))
    ln, head = nn.LayerNorm(h), nn.Linear(h, shape.vocab)
    params = [pos, *tok.parameters(), *blocks.parameters(), *ln.parameters(), *head.parameters()]
    opt = torch.optim.AdamW(params, lr=3e-3, weight_decay=0.01)

    def loss(x, y):
        z = tok(x) + pos
        for blk in blocks:
            z = blk(z)
        logits = head(ln(z))
        return F.cross_entropy(logits.reshape(-1, shape.vocab), y.reshape(-1)) * x.shape[0] / batch

    return _time_loop(loss, opt, GPTJob(shape), batch, steps)


def _time_loop(loss_fn, opt, spec, batch, steps):
    times, seen = [], 0
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        x, y = spec.batch(seen, batch)
        loss_fn(x, y).backward()
        opt.step()
        seen += batch
        times.append(time.perf_counter() - t0)
    return statistics.median(times[2:])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--global-batch", type=int, default=32)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--only", default="", help="run only plans whose name contains this")
    a = p.parse_args()
    torch.set_num_threads(1)
    shape = GPTShape(a.layers, a.hidden, a.heads, a.seq_len, a.vocab)
    print(f"model {shape}, global batch {a.global_batch}, {a.steps} steps, "
          f"{os.cpu_count()} CPUs, torch {torch.__version__}")
    base = None
    print(f"{'plan':<28} {'ranks':>5} {'step s':>8} {'vs 1 process':>13}")
    for name, plan in PLANS:
        if a.only and a.only not in name:
            continue
        with tempfile.TemporaryDirectory() as d:
            codes = harness.run_plan(plan, d, a.steps, shape=shape, global_batch=a.global_batch)
            if codes != [0] * harness.world_of(plan):
                print(f"{name:<28} failed: {codes}")
                continue
            s = median_step(d)
        base = base or s
        print(f"{name:<28} {harness.world_of(plan):>5} {s:>8.4f} {s / base:>12.2f}x")
    if not a.only:
        job = bare_tessel_job(shape, a.global_batch, a.steps)
        plain = bare_pytorch(shape, a.global_batch, a.steps)
        print(f"\noverhead, one process: tessel_job runtime {base:.4f} s/step; the same model "
              f"stepped by hand {job:.4f} s ({base / job:.2f}x); plain PyTorch model {plain:.4f} s "
              f"({job / plain:.2f}x for tessel_job's layers)")


if __name__ == "__main__":
    main()
