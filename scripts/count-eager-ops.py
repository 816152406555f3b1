#!/usr/bin/python3
"""Count the kernels one eager Llama layer launches, on the CPU.

WHAT
  Runs one layer of the Llama block that scripts/measure-kernels.py trains
  (written as Hugging Face writes it: eager RMSNorm, rotary embedding,
  repeat_kv, SwiGLU; bf16 autocast's casts counted as the GPU run makes them)
  forward and backward on tiny CPU tensors, and counts every aten operator
  PyTorch dispatches that is not a view (a view launches no kernel on a GPU).
  The core attention is one scaled_dot_product_attention call, counted as one
  kernel forward and one backward whatever the CPU fallback runs. Prints
  GEMMs and other kernels, forward and backward. The estimator's kernel count
  for eager Llama layers (src/perf/estimator.cc, TransformerLayer) is these.

  Needs only python3-torch (any version with TorchDispatchMode, >= 1.13); no
  GPU.

USAGE
  scripts/count-eager-ops.py [--hidden 64 --heads 8 --kv-heads 2 --ffn 176]
"""
import argparse
import importlib.util
import os
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Operators that only re-describe memory or compare shapes (no kernel on a GPU).
VIEWS = {
    "view", "_unsafe_view", "transpose", "t", "expand", "slice", "select", "unsqueeze", "squeeze",
    "permute", "detach", "alias", "as_strided", "split", "chunk", "unbind", "reshape",
    "_reshape_alias", "split_with_sizes", "unsafe_split", "lift_fresh", "is_same_size",
}
GEMMS = {"mm", "addmm", "bmm", "matmul", "linear"}


class Counter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.gemm = 0
        self.attention = 0
        self.other = 0
        self.muted = False
        self.names = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if not self.muted and name not in VIEWS:
            self.names[name] = self.names.get(name, 0) + 1
            if name in GEMMS:
                self.gemm += 1
            else:
                self.other += 1
        return func(*args, **(kwargs or {}))


COUNTER = None


class FusedAttention(torch.autograd.Function):
    """Stands for SDPA: one kernel forward, one backward."""

    @staticmethod
    def forward(ctx, q, k, v):
        ctx.save_for_backward(q, k, v)
        COUNTER.attention += 1
        COUNTER.muted = True
        try:
            return EAGER_ATTENTION(q, k, v)
        finally:
            COUNTER.muted = False

    @staticmethod
    def backward(ctx, g):
        q, k, v = ctx.saved_tensors
        COUNTER.attention += 1
        COUNTER.muted = True
        try:
            with torch.enable_grad():
                q2, k2, v2 = (t.detach().requires_grad_() for t in (q, k, v))
                out = EAGER_ATTENTION(q2, k2, v2)
                return torch.autograd.grad(out, (q2, k2, v2), g)
        finally:
            COUNTER.muted = False


def load_measure_kernels():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("measure_kernels", os.path.join(here, "measure-kernels.py"))
    mod = importlib.util.module_from_spec(spec)
    argv, sys.argv = sys.argv, [sys.argv[0]]
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.argv = argv
    return mod


MK = None
EAGER_ATTENTION = None  # measure-kernels.py's own, before the block is pointed at FusedAttention


def main():
    global COUNTER, MK, EAGER_ATTENTION
    ap = argparse.ArgumentParser(description="Count the kernels of one eager Llama layer (CPU).")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=176)
    ap.add_argument("--seq", type=int, default=16)
    a = ap.parse_args()
    if a.hidden % a.heads or a.heads % a.kv_heads:
        ap.error("--hidden must divide by --heads, --heads by --kv-heads")
    MK = load_measure_kernels()
    EAGER_ATTENTION = MK.causal_attention
    torch.manual_seed(0)
    block = MK.LlamaBlock(a.hidden, a.heads, a.kv_heads, a.ffn)
    MK.causal_attention = FusedAttention.apply  # what LlamaBlock.forward calls
    d = a.hidden // a.heads
    x = torch.randn(1, a.seq, a.hidden, requires_grad=True)
    cos, sin = torch.randn(a.seq, d), torch.randn(a.seq, d)

    results = {}
    seed = None
    for phase in ("forward", "backward"):
        COUNTER = Counter()
        with COUNTER:
            if phase == "forward":
                y = block(x, cos, sin)
            else:
                y.backward(seed)
        seed = torch.ones_like(y)
        # bf16 autocast: each RMSNorm upcasts its input and downcasts its
        # output on the GPU (no-ops in fp32 on the CPU); their gradients too.
        casts = 2 * 2
        results[phase] = (COUNTER.gemm, COUNTER.attention, COUNTER.other + casts,
                          dict(sorted(COUNTER.names.items())))
    for phase, (g, att, o, names) in results.items():
        print(f"{phase:8s}  GEMMs {g:3d}  attention {att}  elementwise and copies {o:3d} "
              f"(incl. 4 bf16 casts)  {names}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
