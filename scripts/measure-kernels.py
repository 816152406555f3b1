#!/usr/bin/python3
"""Time GPU kernels and small training steps with PyTorch, for the estimator.

WHAT
  On one CUDA GPU, with the PyTorch that is installed, times:
    align      the output layer's three GEMMs at vocabularies 50257/50304 and
               32000/32001 (section "align", not in the default list).
    gemm       the three GEMMs of nn.Linear (forward x @ W^T, input gradient
               dY @ W, weight gradient dY^T @ x) for the linear layers of GPT
               blocks (QKV h->3h, projection h->h, fc1 h->4h, fc2 4h->h) at
               hidden sizes 768..12288 and 256..16384 tokens, in bf16; a few
               large square ones in fp16, tf32, fp32 and (torch._scaled_mm)
               fp8 e4m3.
    bmm        batched GEMMs of unfused attention: scores q @ k^T and
               context p @ v over batch*heads, head dim 64 and 128.
    attention  scaled_dot_product_attention forced to each fused backend
               the build has (flash = FlashAttention-2, efficient, cudnn),
               forward and forward+backward, causal and not, head dim 64/128,
               sequence 512..16384 at 16k tokens per batch (the
               FlashAttention papers' setting).
    elementwise  copy, add, GeLU (tanh), LayerNorm, softmax, dropout over
               64 KiB .. 1 GiB of bf16: achieved bandwidth and, for the small
               ones, the per-kernel time floor.
    train      whole training steps of GPT-2/3-shaped models (125M..2.7B, seq
               2048, vocab 50257) on the one GPU: eager PyTorch, bf16
               autocast over fp32 weights, SDPA attention, fused AdamW; tokens/s
               and peak allocated memory; "oom" where it does not fit.
    llama      Llama-family models (TinyLlama-1.1B, Llama 3.2 1B and 3B shapes)
               written as Hugging Face writes them (eager RMSNorm, rotary,
               SwiGLU, repeat_kv + SDPA) under FSDP2 on a one-rank process
               group, without and with full recompute, sequences 2048/4096
               (section "llama", not in the default list).
    conv       the convolutions of ResNet-50 v1.5 at 224x224 (each distinct
               shape once, with how often the network uses it), batch 64,
               forward and forward+backward (data and weight gradients), in
               fp32 (TF32 off), tf32 and bf16, each with NCHW and with
               channels_last (NHWC) tensors, cudnn.benchmark on: what a
               memory format and cuDNN's algorithm choice cost (section
               "conv", not in the default list; rows go to convs.csv).
    legacy     one plain Triton fp16 GEMM source over 14 GPT-layer and square
               shapes, compiled twice in child processes: for Hopper's
               wgmma path and, with DISABLE_MMA_V3=1, for the mma.sync path
               code built for sm_80 takes (each shape's best of six tile
               configurations, and whether its PTX holds wgmma), beside
               cuBLAS: what pre-Hopper kernels lose on a Hopper GPU (section
               "legacy", needs Triton; not in the default list; rows go to
               OUT/legacy-native/kernels.csv and OUT/legacy-mma2/kernels.csv).
    wrn        whole training steps of the Arena/Alpa Wide-ResNets (500M, 1B:
               bottleneck ResNet-50 with widened 3x3 convolutions, BatchNorm,
               image 224, 1,024 classes) in fp32 with TF32 off, every block
               recomputed, SGD with momentum, NHWC and NCHW, micro-batches
               16/8/32 (section "wrn", not in the default list; rows go to
               wrn.csv).
    cnn        as wrn, on the tensor cores: ResNet-50 v1.5 (no recompute) at
               micro-batch 256/128 in bf16 (autocast) and 256 in TF32, and
               Wide-ResNet-500M at 16/32 in bf16 and 16 in TF32, channels_last
               (section "cnn", not in the default list; rows go to wrn.csv).
    wrnblocks  each part of Wide-ResNet-500M (stem, 16 bottleneck blocks,
               classifier) timed by itself at micro-batch 16, fp32,
               channels_last, forward and forward+backward (section
               "wrnblocks", not in the default list; rows go to wrnblocks.csv).
  Each kernel is timed with CUDA events around a loop of back-to-back launches
  sized to about 20 ms, after warm-up; the median of three such loops.

OUTPUT (--out DIR)
  kernels.csv  kernel,dtype,m,n,k,batch,heads,seq,head_dim,causal,pass,bytes,
               flops,seconds,tflops,gbs,note   (one row per measurement)
  train.csv    model,layers,hidden,heads,seq,vocab,micro_batch,params,
               step_seconds,tokens_per_s,model_tflops,peak_alloc_gib,
               peak_reserved_gib,status
  convs.csv    layer,count,batch,cin,cout,hw_in,hw_out,kernel,stride,dtype,
               format,pass,flops,seconds,tflops,note
  wrnblocks.csv  model,micro_batch,index,block,shape_in,seconds_fwd,
               seconds_fwd_bwd,note
  wrn.csv      model,depth,base_channels,width,image,classes,micro_batch,params,
               dtype,format,recompute,step_seconds,images_per_s,peak_alloc_gib,
               peak_reserved_gib,status (peak memory includes cudnn.benchmark's
               algorithm trials)
  meta.json    GPU name, SMs, memory, clocks, driver, torch/CUDA/cuDNN
               versions, date, and the settings used.
  Rows are flushed as they are measured; --budget-s stops each later section
  early so that the files come back whole.

USAGE
  scripts/measure-kernels.py --out /tmp/kern [--budget-s 240] [--quick]
  scripts/measure-kernels.py --summarize-convs data/measured/h200-convs.csv
  scripts/measure-kernels.py --summarize-wrn-blocks data/measured/h100-wrn-blocks.csv
  scripts/measure-kernels.py --out /tmp/k3 --sections legacy,wrn --budget-s 330
  scripts/measure-kernels.py --out /tmp/k2 --sections align,train --vocab 50304 \
      --models gpt3-125m,gpt3-350m
  --quick runs a handful of each (minutes of GPU time become seconds); on a
  machine without CUDA it runs the same code on the CPU at tiny sizes (a
  smoke test of the script, not a measurement).
"""
import argparse
import csv
import datetime
import itertools
import json
import math
import os
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

FIELDS = ["kernel", "dtype", "m", "n", "k", "batch", "heads", "seq", "head_dim", "causal",
          "pass", "bytes", "flops", "seconds", "tflops", "gbs", "note"]
CONV_FIELDS = ["layer", "count", "batch", "cin", "cout", "hw_in", "hw_out", "kernel", "stride",
               "dtype", "format", "pass", "flops", "seconds", "tflops", "note"]
TRAIN_FIELDS = ["model", "layers", "hidden", "heads", "seq", "vocab", "micro_batch", "params",
                "step_seconds", "tokens_per_s", "model_tflops", "peak_alloc_gib",
                "peak_reserved_gib", "status", "kv_heads", "ffn_hidden", "ffn_kind", "tied",
                "recompute", "wrapper"]


class Timer:
    def __init__(self, device, target_s):
        self.device = device
        self.target_s = target_s

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def loop(self, fn, iters):
        if self.device.type == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3 / iters
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        return (time.perf_counter() - t0) / iters

    def time(self, fn):
        """Median seconds per call over three loops of about target_s."""
        fn()
        self.sync()
        once = self.loop(fn, 3)
        iters = int(min(1000, max(3, self.target_s / max(once, 1e-7))))
        runs = sorted(self.loop(fn, iters) for _ in range(3))
        return runs[1], iters


class Writer:
    def __init__(self, path, fields):
        self.f = open(path, "w", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=fields, lineterminator="\n")
        self.w.writeheader()
        self.f.flush()

    def row(self, **kw):
        self.w.writerow(kw)
        self.f.flush()


def fmt(x, digits=6):
    return f"{x:.{digits}g}"


def run_gemms(args, dev, timer, out, deadline):
    hiddens = [768, 1024, 1536, 2048, 2560, 4096, 5120, 8192, 12288]
    tokens = [256, 1024, 4096, 16384]
    if args.quick:
        hiddens, tokens = [768, 4096], [1024, 4096]
    if dev.type != "cuda":
        hiddens, tokens = [64, 128], [32, 64]
    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    name = "bf16" if dev.type == "cuda" else "fp32"
    for h in hiddens:
        for m in tokens:
            for layer, (n, k) in (("qkv", (3 * h, h)), ("proj", (h, h)), ("fc1", (4 * h, h)),
                                  ("fc2", (h, 4 * h))):
                if time.monotonic() > deadline:
                    return
                x = torch.randn(m, k, device=dev, dtype=dt)
                w = torch.randn(n, k, device=dev, dtype=dt)
                dy = torch.randn(m, n, device=dev, dtype=dt)
                # (M, N, K) of each product as cuBLAS sees it.
                for pas, fn, shape in (
                        ("fwd", lambda: x @ w.t(), (m, n, k)),
                        ("dgrad", lambda: dy @ w, (m, k, n)),
                        ("wgrad", lambda: dy.t() @ x, (n, k, m))):
                    s, it = timer.time(fn)
                    mm, nn_, kk = shape
                    flops = 2.0 * mm * nn_ * kk
                    byts = 2.0 * (mm * kk + kk * nn_ + mm * nn_)
                    out.row(kernel="gemm", dtype=name, m=mm, n=nn_, k=kk, batch=1, heads="",
                            seq="", head_dim="", causal="", **{"pass": pas}, bytes=int(byts),
                            flops=int(flops), seconds=fmt(s), tflops=fmt(flops / s / 1e12, 5),
                            gbs=fmt(byts / s / 1e9, 5), note=f"{layer} h={h} iters={it}")
                del x, w, dy


def run_align(args, dev, timer, out, deadline):
    """GEMMs of an output layer whose vocabulary is or is not a multiple of 8
    (GPT-2's 50257 against 50304 = 393 x 128, Llama 2's 32000 against 32001):
    the forward, input-gradient and weight-gradient products at 16k tokens."""
    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    name = "bf16" if dev.type == "cuda" else "fp32"
    hiddens, vocabs, m = [768, 1024, 2048, 4096], [50257, 50304, 32000, 32001], 16384
    if args.quick or dev.type != "cuda":
        hiddens, vocabs, m = [64], [257, 256], 128
    for h in hiddens:
        for v in vocabs:
            if time.monotonic() > deadline:
                return
            x = torch.randn(m, h, device=dev, dtype=dt)
            w = torch.randn(v, h, device=dev, dtype=dt)
            dy = torch.randn(m, v, device=dev, dtype=dt)
            for pas, fn, (mm, nn_, kk) in (("fwd", lambda: x @ w.t(), (m, v, h)),
                                           ("dgrad", lambda: dy @ w, (m, h, v)),
                                           ("wgrad", lambda: dy.t() @ x, (v, h, m))):
                t, it = timer.time(fn)
                flops = 2.0 * mm * nn_ * kk
                byts = 2.0 * (mm * kk + kk * nn_ + mm * nn_)
                out.row(kernel="gemm", dtype=name, m=mm, n=nn_, k=kk, batch=1, heads="", seq="",
                        head_dim="", causal="", **{"pass": pas}, bytes=int(byts),
                        flops=int(flops), seconds=fmt(t), tflops=fmt(flops / t / 1e12, 5),
                        gbs=fmt(byts / t / 1e9, 5), note=f"vocab v={v} h={h} iters={it}")
            del x, w, dy


def run_gemm_precisions(args, dev, timer, out, deadline):
    if dev.type != "cuda":
        return
    sizes = [2048, 4096, 8192] if not args.quick else [4096]
    for size in sizes:
        m = n = k = size
        flops = 2.0 * m * n * k
        for name, dt, tf32 in (("fp16", torch.float16, False), ("tf32", torch.float32, True),
                               ("fp32", torch.float32, False)):
            if time.monotonic() > deadline:
                return
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(m, k, device=dev, dtype=dt)
            b = torch.randn(n, k, device=dev, dtype=dt)
            s, it = timer.time(lambda: a @ b.t())
            eb = a.element_size()
            byts = eb * (m * k + k * n + m * n)
            out.row(kernel="gemm", dtype=name, m=m, n=n, k=k, batch=1, heads="", seq="",
                    head_dim="", causal="", **{"pass": "fwd"}, bytes=int(byts), flops=int(flops),
                    seconds=fmt(s), tflops=fmt(flops / s / 1e12, 5), gbs=fmt(byts / s / 1e9, 5),
                    note=f"square iters={it}")
            del a, b
        torch.backends.cuda.matmul.allow_tf32 = False
        # FP8 e4m3 with per-tensor scales, bf16 output (Transformer Engine's recipe).
        if hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm"):
            try:
                a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
                b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn)
                one = torch.ones((), device=dev, dtype=torch.float32)

                def f8():
                    return torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one,
                                            out_dtype=torch.bfloat16)
                s, it = timer.time(f8)
                byts = m * k + k * n + 2 * m * n
                out.row(kernel="gemm", dtype="fp8", m=m, n=n, k=k, batch=1, heads="", seq="",
                        head_dim="", causal="", **{"pass": "fwd"}, bytes=int(byts),
                        flops=int(flops), seconds=fmt(s), tflops=fmt(flops / s / 1e12, 5),
                        gbs=fmt(byts / s / 1e9, 5), note=f"square e4m3 bf16-out iters={it}")
                del a, b
            except Exception as e:  # noqa: BLE001 - record why, go on
                print(f"fp8 gemm skipped: {e}", file=sys.stderr)


def run_bmm(args, dev, timer, out, deadline):
    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    name = "bf16" if dev.type == "cuda" else "fp32"
    seqs = [512, 1024, 2048, 4096] if dev.type == "cuda" else [64]
    if args.quick:
        seqs = seqs[:2]
    tokens = 16384 if dev.type == "cuda" else 128
    for d in (64, 128):
        heads = 2048 // d
        for s in seqs:
            if time.monotonic() > deadline:
                return
            bh = (tokens // s) * heads
            q = torch.randn(bh, s, d, device=dev, dtype=dt)
            kt = torch.randn(bh, d, s, device=dev, dtype=dt)
            p = torch.randn(bh, s, s, device=dev, dtype=dt)
            v = torch.randn(bh, s, d, device=dev, dtype=dt)
            for pas, fn, (mm, nn_, kk) in (("scores", lambda: torch.bmm(q, kt), (s, s, d)),
                                           ("context", lambda: torch.bmm(p, v), (s, d, s))):
                t, it = timer.time(fn)
                flops = 2.0 * bh * mm * nn_ * kk
                byts = 2.0 * bh * (mm * kk + kk * nn_ + mm * nn_)
                out.row(kernel="bmm", dtype=name, m=mm, n=nn_, k=kk, batch=bh, heads=heads, seq=s,
                        head_dim=d, causal="", **{"pass": pas}, bytes=int(byts), flops=int(flops),
                        seconds=fmt(t), tflops=fmt(flops / t / 1e12, 5),
                        gbs=fmt(byts / t / 1e9, 5), note=f"iters={it}")
            del q, kt, p, v


def sdpa_backends():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return []
    import contextlib
    out = [("default", None, lambda _: contextlib.nullcontext())]
    for name in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION"):
        if hasattr(SDPBackend, name):
            out.append((name.split("_")[0].lower(), getattr(SDPBackend, name), sdpa_kernel))
    return out


def run_attention(args, dev, timer, out, deadline):
    if dev.type != "cuda":
        return
    seqs = [512, 1024, 2048, 4096, 8192, 16384]
    if args.quick:
        seqs = [2048]
    tokens, hidden = 16384, 2048
    for backend, enum, ctx in sdpa_backends():
        for d in (128, 64):
            heads = hidden // d
            for s in seqs:
                for causal in (True, False):
                    if time.monotonic() > deadline:
                        return
                    b = tokens // s
                    q, k, v = (torch.randn(b, heads, s, d, device=dev, dtype=torch.bfloat16,
                                           requires_grad=True) for _ in range(3))
                    g = torch.randn(b, heads, s, d, device=dev, dtype=torch.bfloat16)
                    # FLOPs as the FlashAttention papers count them: 4 s^2 d per head
                    # forward (halved when causal), backward 2.5x forward.
                    fwd_flops = 4.0 * b * heads * s * s * d * (0.5 if causal else 1.0)
                    try:
                        with ctx(enum):
                            def fwd():
                                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                            def fwd_bwd():
                                o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                                o.backward(g)
                            with torch.no_grad():
                                tf, itf = timer.time(fwd)
                            tb, itb = timer.time(fwd_bwd)
                    except Exception as e:  # noqa: BLE001 - backend refused this shape
                        print(f"attention {backend} d={d} s={s} causal={causal}: {e}",
                              file=sys.stderr)
                        continue
                    for pas, t, fl, it in (("fwd", tf, fwd_flops, itf),
                                           ("fwd_bwd", tb, 3.5 * fwd_flops, itb)):
                        byts = 2.0 * 4 * b * heads * s * d
                        out.row(kernel="attention", dtype="bf16", m="", n="", k="", batch=b,
                                heads=heads, seq=s, head_dim=d, causal=int(causal),
                                **{"pass": pas}, bytes=int(byts), flops=int(fl), seconds=fmt(t),
                                tflops=fmt(fl / t / 1e12, 5), gbs=fmt(byts / t / 1e9, 5),
                                note=f"sdpa {backend} iters={it}")
                    del q, k, v, g


def run_elementwise(args, dev, timer, out, deadline):
    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    name = "bf16" if dev.type == "cuda" else "fp32"
    eb = 2 if dev.type == "cuda" else 4
    exps = range(16, 31, 2) if dev.type == "cuda" else range(12, 17, 2)
    if args.quick:
        exps = [20, 28] if dev.type == "cuda" else [12]
    hidden = 4096 if dev.type == "cuda" else 64
    for e in exps:
        nbytes = 1 << e
        numel = max(hidden, nbytes // eb // hidden * hidden)
        x = torch.randn(numel, device=dev, dtype=dt)
        y = torch.randn(numel, device=dev, dtype=dt)
        x2 = x.view(-1, hidden)
        ln = nn.LayerNorm(hidden, device=dev, dtype=dt)
        ops = (("copy", lambda: x.clone(), 2),
               ("add", lambda: x + y, 3),
               ("gelu", lambda: F.gelu(x, approximate="tanh"), 2),
               ("layernorm", lambda: ln(x2), 2),
               ("softmax", lambda: torch.softmax(x2, dim=-1), 2),
               ("dropout", lambda: F.dropout(x, 0.1, training=True), 2))
        for op, fn, passes in ops:
            if time.monotonic() > deadline:
                return
            with torch.no_grad():
                t, it = timer.time(fn)
            byts = passes * numel * eb
            out.row(kernel="elementwise", dtype=name, m=numel, n="", k="", batch="", heads="",
                    seq="", head_dim="", causal="", **{"pass": op}, bytes=int(byts), flops="",
                    seconds=fmt(t), tflops="", gbs=fmt(byts / t / 1e9, 5),
                    note=f"{passes} passes of {numel * eb} bytes iters={it}")
        del x, y, x2, ln


def resnet50_convs():
    """The distinct convolutions of ResNet-50 v1.5 at 224x224 (stride on the
    3x3 of a stage's first block): (layer, count, cin, cout, hw_in, kernel,
    stride), count = how often the network runs that shape."""
    convs = [("stem", 1, 3, 64, 224, 7, 2)]
    hw, cin = 56, 64
    for stage, (f, blocks) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)]):
        stride = 1 if stage == 0 else 2
        out = hw // stride
        name = f"s{stage + 1}"
        convs += [(name + ".first.1x1", 1, cin, f, hw, 1, 1),
                  (name + ".first.3x3", 1, f, f, hw, 3, stride),
                  (name + ".3x3", blocks - 1, f, f, out, 3, 1),
                  (name + ".1x1.expand", blocks, f, 4 * f, out, 1, 1),
                  (name + ".1x1.reduce", blocks - 1, 4 * f, f, out, 1, 1),
                  (name + ".projection", 1, cin, 4 * f, hw, 1, stride)]
        hw, cin = out, 4 * f
    return convs


def run_conv(args, dev, timer, out, deadline):
    """Times each ResNet-50 convolution forward and forward+backward, per
    precision and memory format (cudnn.benchmark picks the algorithm)."""
    batch = 64 if dev.type == "cuda" else 2
    convs = resnet50_convs()
    if args.quick or dev.type != "cuda":
        convs = [c for c in convs if c[0] in ("s1.3x3", "s1.1x1.expand")]
    dtypes = [("fp32", torch.float32, False), ("tf32", torch.float32, True), ("bf16", torch.bfloat16, False)]
    if dev.type != "cuda":
        dtypes = dtypes[:1]
    torch.backends.cudnn.benchmark = True
    for layer, count, cin, cout, hw, k, stride in convs:
        for dname, dt, tf32 in dtypes:
            torch.backends.cudnn.allow_tf32 = tf32
            for fmt_name, mf in (("nchw", torch.contiguous_format), ("nhwc", torch.channels_last)):
                if time.monotonic() > deadline:
                    return
                hw_in = hw if dev.type == "cuda" else max(8, hw // 7)
                conv = nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False).to(dev, dt)
                conv = conv.to(memory_format=mf)
                x = torch.randn(batch, cin, hw_in, hw_in, device=dev, dtype=dt).to(memory_format=mf)
                x.requires_grad_(True)
                hw_out = (hw_in + 2 * (k // 2) - k) // stride + 1
                flops = 2.0 * batch * hw_out * hw_out * cout * cin * k * k
                with torch.no_grad():
                    y = conv(x)
                gy = torch.randn_like(y).to(memory_format=mf)

                def fwd():
                    with torch.no_grad():
                        conv(x)

                def fwd_bwd():
                    y = conv(x)
                    y.backward(gy)
                for pname, fn, mult in (("fwd", fwd, 1), ("fwd_bwd", fwd_bwd, 3)):
                    try:
                        t, it = timer.time(fn)
                    except RuntimeError as e:  # noqa: PERF203 - record and go on
                        print(f"conv {layer} {dname} {fmt_name} {pname}: {e!r}", file=sys.stderr)
                        continue
                    out.row(layer=layer, count=count, batch=batch, cin=cin, cout=cout, hw_in=hw_in,
                            hw_out=hw_out, kernel=k, stride=stride, dtype=dname, format=fmt_name,
                            **{"pass": pname}, flops=fmt(mult * flops), seconds=fmt(t),
                            tflops=fmt(mult * flops / t / 1e12, 5), note=f"iters={it}")
                del conv, x, y, gy
    torch.backends.cudnn.allow_tf32 = True


def summarize_convs(path):
    """Prints what a convs.csv says over the whole network (each shape times
    how often ResNet-50 runs it): seconds and GEMM-equivalent TFLOP/s per
    precision, memory format and pass, the NCHW / channels_last ratio, and
    the FP32 convolutions' TFLOP/s by kind (3x3 stride 1, Winograd's case,
    against the rest)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    secs, flops = {}, {}
    for r in rows:
        key = (r["dtype"], r["format"], r["pass"])
        secs[key] = secs.get(key, 0.0) + int(r["count"]) * float(r["seconds"])
        flops[key] = flops.get(key, 0.0) + int(r["count"]) * float(r["flops"])
    for key in sorted(secs):
        print("%-5s %-5s %-8s network %.4f s  %6.1f TFLOP/s" % (*key, secs[key], flops[key] / secs[key] / 1e12))
    for dtype in sorted({k[0] for k in secs}):
        for p in ("fwd", "fwd_bwd"):
            a, b = secs.get((dtype, "nchw", p)), secs.get((dtype, "nhwc", p))
            if a and b:
                print("%-5s %-8s nchw/nhwc %.2f  (nchw - nhwc %.4f s)" % (dtype, p, a / b, a - b))
    for label, pick in (("3x3 stride 1", lambda r: r["kernel"] == "3" and r["stride"] == "1"),
                        ("other", lambda r: not (r["kernel"] == "3" and r["stride"] == "1"))):
        t = [float(r["tflops"]) for r in rows
             if r["dtype"] == "fp32" and r["format"] == "nchw" and r["pass"] == "fwd_bwd" and pick(r)]
        if t:
            print("fp32 nchw fwd_bwd %-12s %.1f-%.1f TFLOP/s over %d shapes" % (label, min(t), max(t), len(t)))


def wrn_part_flops(base, width, image, classes, mb):
    """Forward FLOPs (2 per multiply-add) of each part of a ResNet-50-shaped
    Wide-ResNet, in WideResNet's order: stem, the 16 bottleneck blocks
    (projection included where the shape changes), the classifier."""
    hw = image // 2
    parts = [2.0 * mb * hw * hw * 3 * base * 49]  # 7x7 stride-2 stem
    hw //= 2  # 3x3 stride-2 max-pool
    cin = base
    for i, n in enumerate([3, 4, 6, 3]):
        f = base << i
        for j in range(n):
            out = hw // 2 if i > 0 and j == 0 else hw
            fl = hw * hw * cin * f + out * out * f * f * width * 9 + out * out * f * width * 4 * f
            if out != hw or cin != 4 * f:
                fl += out * out * cin * 4 * f
            parts.append(2.0 * mb * fl)
            cin, hw = 4 * f, out
    return parts + [2.0 * mb * cin * classes]


def summarize_wrn_blocks(path, tolerance=0.25):
    """Prints what a wrnblocks.csv says about pipelining the network: each
    part's forward+backward time and TFLOP/s, and for 2, 4 and 8 contiguous
    stages the slowest stage of the best split by time against the best
    split Alpa's stage construction admits (each stage's FLOP share within
    1 + tolerance of 1/p: AutoStageOption(stage_imbalance_tolerance), as the
    Arena workers set it)."""
    with open(path, newline="") as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["index"]))
    base, width, image, classes, _ = WRN_BLOCK_MODELS[rows[0]["model"]]
    flops = wrn_part_flops(base, width, image, classes, int(rows[0]["micro_batch"]))
    secs = [float(r["seconds_fwd_bwd"]) for r in rows]
    if len(flops) != len(secs):
        sys.exit(f"{path}: {len(secs)} parts, expected {len(flops)}")
    for r, fl, t in zip(rows, flops, secs):
        print("%-8s %8.2f ms  %6.1f TFLOP/s" % (r["block"], t * 1e3, 3 * fl / t / 1e12))
    print("all      %8.2f ms" % (sum(secs) * 1e3))
    total = sum(flops)
    for p in (2, 4, 8):
        best = admitted = float("inf")
        for cuts in itertools.combinations(range(1, len(secs)), p - 1):
            b = (0,) + cuts + (len(secs),)
            worst = max(sum(secs[b[i]:b[i + 1]]) for i in range(p))
            best = min(best, worst)
            shares = [sum(flops[b[i]:b[i + 1]]) / total for i in range(p)]
            if all(1 / p / (1 + tolerance) <= x <= (1 + tolerance) / p for x in shares):
                admitted = min(admitted, worst)
        print("%d stages: slowest stage %.1f ms balanced by time, %.1f ms by FLOPs (ideal %.1f)"
              % (p, best * 1e3, admitted * 1e3, sum(secs) / p * 1e3))


def causal_attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    # torch < 2.0 (the CPU smoke test only)
    s = q.shape[-2]
    sc = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(sc.masked_fill(mask, float("-inf")), dim=-1) @ v


def on_device(dev, make):
    """Builds a module with its parameters initialised on `dev` itself."""
    if hasattr(torch.device, "__enter__"):
        with dev:
            return make()
    return make().to(dev)


class Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        a = causal_attention(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers, h, heads, seq, vocab, checkpoint=False):
        super().__init__()
        self.checkpoint = checkpoint
        self.wte = nn.Embedding(vocab, h)
        self.wpe = nn.Embedding(seq, h)
        self.blocks = nn.ModuleList(Block(h, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(h)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            if self.checkpoint:
                x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        logits = self.ln(x) @ self.wte.weight.t()  # tied output layer
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def run_steps(step, opt, dev, steps, warm, what):
    """Mean seconds of `steps` calls of `step` after `warm` warm-up ones, and
    the peak allocated and reserved GiB: (status, seconds, alloc, reserved),
    status "oom" when the step does not fit, "error" (printed) otherwise."""
    status, step_s, alloc, reserved = "ok", float("nan"), 0.0, 0.0
    try:
        if dev.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        for _ in range(warm):
            step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
            alloc = torch.cuda.max_memory_allocated() / 2**30
            reserved = torch.cuda.max_memory_reserved() / 2**30
        step_s = (time.perf_counter() - t0) / steps
    except torch.cuda.OutOfMemoryError:
        status = "oom"
    except Exception as e:  # noqa: BLE001 - record why, go on
        print(f"{what}: {e!r}", file=sys.stderr)
        status = "error"
    opt.zero_grad(set_to_none=True)
    return status, step_s, alloc, reserved


def training_step(model, opt, dev, inputs, autocast):
    """One training step of `model(*inputs)` (a loss): forward, under bf16
    autocast when asked, backward, optimizer step, zero_grad."""
    def step():
        if autocast:
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                loss = model(*inputs)
        else:
            loss = model(*inputs)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def time_steps(model, opt, dev, mb, seq, vocab, steps, warm, autocast):
    """run_steps over whole training steps of a language model at micro-batch
    `mb` (random tokens)."""
    idx = torch.randint(0, vocab, (mb, seq), device=dev)
    tgt = torch.randint(0, vocab, (mb, seq), device=dev)
    step = training_step(model, opt, dev, (idx, tgt), autocast)
    result = run_steps(step, opt, dev, steps, warm, f"step at micro-batch {mb}")
    del idx, tgt
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return result


def train_row(out, label, result, per_token, **fields):
    """Writes one train.csv row from time_steps' result (tokens/s and model
    TFLOP/s derived from it) and logs it."""
    status, step_s, alloc, reserved = result
    tok = fields["micro_batch"] * fields["seq"] / step_s if status == "ok" else float("nan")
    out.row(step_seconds=fmt(step_s), tokens_per_s=fmt(tok),
            model_tflops=fmt(tok * per_token / 1e12, 5), peak_alloc_gib=fmt(alloc, 5),
            peak_reserved_gib=fmt(reserved, 5), status=status, **fields)
    print(f"{label}: {status} {step_s:.4f} s/step {alloc:.1f} GiB", file=sys.stderr, flush=True)


def run_train(args, dev, out, deadline):
    # GPT-3 paper shapes (Brown et al. 2020, Table 2.1) at sequence 2048.
    models = [("gpt3-125m", 12, 768, 12), ("gpt3-350m", 24, 1024, 16),
              ("gpt3-760m", 24, 1536, 16), ("gpt3-1.3b", 24, 2048, 32),
              ("gpt3-2.7b", 32, 2560, 32)]
    mbs = [int(x) for x in args.micro_batches.split(",")]
    seq, vocab, steps, warm = 2048, args.vocab, 5, 3
    if args.models:
        models = [m for m in models if m[0] in args.models.split(",")]
    if args.quick:
        models, mbs, steps, warm = models[:1], [1, 4], 2, 1
    if dev.type != "cuda":
        models, mbs, seq, vocab, steps, warm = [("tiny", 2, 64, 4)], [2], 32, 512, 1, 1
    for name, layers, h, heads in models:
        if time.monotonic() > deadline:
            return
        torch.manual_seed(0)
        model = on_device(dev, lambda: Gpt(layers, h, heads, seq, vocab,
                                           args.recompute == "full"))
        nparams = sum(p.numel() for p in model.parameters())
        kw = {"fused": True} if dev.type == "cuda" else {}
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **kw)
        # Model FLOPs: 6 N per token plus attention 12 L h s (Narayanan et al. 2021).
        per_token = 6 * nparams + 12 * layers * h * seq
        for mb in mbs:
            if time.monotonic() > deadline:
                break
            status, step_s, alloc, reserved = time_steps(model, opt, dev, mb, seq, vocab, steps,
                                                         warm, autocast=True)
            train_row(out, f"train {name} mb={mb}", (status, step_s, alloc, reserved),
                      model=name, layers=layers, hidden=h, heads=heads, seq=seq, vocab=vocab,
                      micro_batch=mb, params=nparams, per_token=per_token, kv_heads=heads,
                      ffn_hidden=4 * h, ffn_kind="gelu", tied=1, recompute=args.recompute,
                      wrapper="none (bf16 autocast)")
            if status != "ok":
                break
        del model, opt
        if dev.type == "cuda":
            torch.cuda.empty_cache()


class RMSNorm(nn.Module):
    """Hugging Face LlamaRMSNorm, eager: upcast, pow, mean, rsqrt, multiply,
    downcast, weight."""

    def __init__(self, h, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotary(x, cos, sin):
    """Rotary embedding as Hugging Face's rotate_half, x [b, heads, s, d]."""
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class LlamaBlock(nn.Module):
    def __init__(self, h, heads, kv_heads, ffn):
        super().__init__()
        self.heads, self.kv, self.d = heads, kv_heads, h // heads
        self.norm1 = RMSNorm(h)
        self.q = nn.Linear(h, h, bias=False)
        self.k = nn.Linear(h, kv_heads * self.d, bias=False)
        self.v = nn.Linear(h, kv_heads * self.d, bias=False)
        self.o = nn.Linear(h, h, bias=False)
        self.norm2 = RMSNorm(h)
        self.gate = nn.Linear(h, ffn, bias=False)
        self.up = nn.Linear(h, ffn, bias=False)
        self.down = nn.Linear(ffn, h, bias=False)

    def forward(self, x, cos, sin):
        b, s, h = x.shape
        y = self.norm1(x)
        q = self.q(y).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.k(y).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v(y).view(b, s, self.kv, self.d).transpose(1, 2)
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        rep = self.heads // self.kv  # Hugging Face repeat_kv: expand + reshape
        k = k[:, :, None].expand(b, self.kv, rep, s, self.d).reshape(b, self.heads, s, self.d)
        v = v[:, :, None].expand(b, self.kv, rep, s, self.d).reshape(b, self.heads, s, self.d)
        a = causal_attention(q, k, v)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, h))
        y = self.norm2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Llama(nn.Module):
    def __init__(self, layers, h, heads, kv_heads, ffn, vocab, seq, tied, checkpoint):
        super().__init__()
        self.embed = nn.Embedding(vocab, h)
        self.blocks = nn.ModuleList(LlamaBlock(h, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = RMSNorm(h)
        self.out = None if tied else nn.Linear(h, vocab, bias=False)
        self.checkpoint = checkpoint
        d = h // heads
        inv = 1.0 / (500000.0 ** (torch.arange(0, d, 2).float() / d))
        f = torch.outer(torch.arange(seq).float(), inv)
        emb = torch.cat((f, f), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, idx, targets):
        x = self.embed(idx)
        cos, sin = self.cos.to(x.dtype), self.sin.to(x.dtype)
        for blk in self.blocks:
            if self.checkpoint:
                x = torch.utils.checkpoint.checkpoint(blk, x, cos, sin, use_reentrant=False)
            else:
                x = blk(x, cos, sin)
        x = self.norm(x)
        logits = x @ self.embed.weight.t() if self.out is None else self.out(x)
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(0, 1))


def run_llama(args, dev, out, deadline):
    """Llama-family models under FSDP2 (fully_shard per block and the root,
    bf16 parameters, fp32 gradient reduction) on one GPU as a one-rank
    process group: FSDP's hooks, casts and copies with nothing to
    communicate. Full recompute = torch.utils.checkpoint per block."""
    # Published shapes: TinyLlama-1.1B (its config), Llama 3.2 1B and 3B
    # (Meta's configs: tied embeddings, vocabulary 128,256).
    models = [("tinyllama-1.1b", 22, 2048, 32, 4, 5632, 32000, False),
              ("llama3.2-1b", 16, 2048, 32, 8, 8192, 128256, True),
              ("llama3.2-3b", 28, 3072, 24, 8, 8192, 128256, True)]
    configs = [(2048, "none", [1, 2, 4, 8]), (2048, "full", [4, 8, 16]), (4096, "none", [1, 2, 4])]
    steps, warm = 5, 3
    if args.models:
        models = [m for m in models if m[0] in args.models.split(",")]
    if args.quick or dev.type != "cuda":
        models, configs, steps, warm = [("tiny-llama", 2, 64, 4, 2, 128, 512, True)], [(32, "none", [2]), (32, "full", [2])], 1, 1
    fsdp = None
    if dev.type == "cuda":
        import torch.distributed as dist
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        if not dist.is_initialized():
            dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29531", rank=0, world_size=1)
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)

        def fsdp(model):
            for blk in model.blocks:
                fully_shard(blk, mp_policy=mp)
            fully_shard(model, mp_policy=mp)
    for name, layers, h, heads, kv, ffn, vocab, tied in models:
        for seq, rc, mbs in configs:
            if time.monotonic() > deadline:
                return
            torch.manual_seed(0)
            try:
                model = on_device(dev, lambda: Llama(layers, h, heads, kv, ffn, vocab, seq, tied,
                                                     rc == "full"))
                nparams = sum(p.numel() for p in model.parameters())
                if fsdp:
                    fsdp(model)
                try:
                    opt = torch.optim.AdamW(model.parameters(), lr=1e-4,
                                            fused=dev.type == "cuda")
                except (RuntimeError, TypeError) as e:
                    print(f"fused AdamW refused ({e}); foreach", file=sys.stderr)
                    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
            except Exception as e:  # noqa: BLE001 - record why, go on
                print(f"llama {name} s={seq} rc={rc}: setup failed: {e!r}", file=sys.stderr)
                continue
            per_token = 6 * nparams + 12 * layers * h * seq
            for mb in mbs:
                if time.monotonic() > deadline:
                    break
                status, step_s, alloc, reserved = time_steps(model, opt, dev, mb, seq, vocab,
                                                             steps, warm, autocast=False)
                train_row(out, f"llama {name} s={seq} rc={rc} mb={mb}",
                          (status, step_s, alloc, reserved), model=name, layers=layers, hidden=h,
                          heads=heads, seq=seq, vocab=vocab, micro_batch=mb, params=nparams,
                          per_token=per_token, kv_heads=kv, ffn_hidden=ffn, ffn_kind="swiglu",
                          tied=int(tied), recompute=rc, wrapper="fsdp2" if fsdp else "none")
                if status != "ok":
                    break
            del model, opt
            if dev.type == "cuda":
                torch.cuda.empty_cache()


# --- sm_80-style GEMMs on Hopper (section "legacy") ---

# GEMMs of GPT layers at 8,192 tokens (QKV h->3h, fc1 h->4h, fc2 4h->h, as
# the forward product (M, N, K)) and two large squares, fp16.
LEGACY_SHAPES = [(8192, 3 * h, h) for h in (1536, 2048, 4096, 8192)] + \
    [(8192, 4 * h, h) for h in (1536, 2048, 4096, 8192)] + \
    [(8192, h, 4 * h) for h in (1536, 2048, 4096, 8192)] + [(4096, 4096, 4096), (8192, 8192, 8192)]
# Tile configurations tried per shape (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages); the best counts.
LEGACY_CONFIGS = [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4),
                  (128, 128, 64, 8, 4), (128, 128, 32, 4, 4), (64, 256, 32, 4, 4)]


def triton_matmul():
    """A plain tiled fp16 GEMM in Triton (fp32 accumulation, grouped tile
    order): the same source compiles to Hopper's wgmma path or, with
    DISABLE_MMA_V3=1, to the mma.sync path Ampere code takes."""
    import triton
    import triton.language as tl

    @triton.jit
    def mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
        pid = tl.program_id(0)
        num_m = tl.cdiv(M, BM)
        num_n = tl.cdiv(N, BN)
        in_group = GROUP * num_n
        first_m = (pid // in_group) * GROUP
        rows = min(num_m - first_m, GROUP)
        pid_m = first_m + (pid % in_group) % rows
        pid_n = (pid % in_group) // rows
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a = a_ptr + rm[:, None] * sam + rk[None, :] * sak
        b = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            x = tl.load(a, mask=rk[None, :] < K - k * BK, other=0.0)
            y = tl.load(b, mask=rk[:, None] < K - k * BK, other=0.0)
            acc = tl.dot(x, y, acc)
            a += BK * sak
            b += BK * sbk
        c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
        tl.store(c, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))
    return triton, mm


def run_legacy_child(args, dev, timer, out, deadline):
    """One compilation mode (args.legacy_mode): each shape's best tile
    configuration, whether its PTX holds wgmma, and (native mode) cuBLAS."""
    if dev.type != "cuda":
        print("legacy: needs CUDA and Triton; skipped", file=sys.stderr)
        return
    try:
        triton, mm = triton_matmul()
    except ImportError as e:
        print(f"legacy: no Triton ({e}); skipped", file=sys.stderr)
        return
    shapes = LEGACY_SHAPES[:2] if args.quick else LEGACY_SHAPES
    for m, n, k in shapes:
        if time.monotonic() > deadline:
            return
        a = torch.randn(m, k, device=dev, dtype=torch.float16)
        b = torch.randn(k, n, device=dev, dtype=torch.float16)
        c = torch.empty(m, n, device=dev, dtype=torch.float16)
        flops = 2.0 * m * n * k
        ref = a @ b
        if args.legacy_mode == "native":
            s, it = timer.time(lambda: a @ b)
            out.row(kernel="cublas_gemm", dtype="fp16", m=m, n=n, k=k, batch=1, heads="", seq="",
                    head_dim="", causal="", **{"pass": "fwd"}, bytes="", flops=int(flops),
                    seconds=fmt(s), tflops=fmt(flops / s / 1e12, 5), gbs="", note=f"iters={it}")
        best = None
        for bm, bn, bk, warps, stages in LEGACY_CONFIGS:
            grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)

            def launch():
                return mm[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk, GROUP=8,
                                num_warps=warps, num_stages=stages)
            try:
                compiled = launch()
                torch.cuda.synchronize()
                err = (c.float() - ref.float()).abs().max().item()
                ptx = getattr(compiled, "asm", {}).get("ptx", "") if compiled is not None else ""
                wgmma = int("wgmma" in ptx) if ptx else -1
                s, it = timer.time(launch)
            except Exception as e:  # noqa: BLE001 - a config that does not compile or fit
                print(f"legacy {args.legacy_mode} {m}x{n}x{k} {bm}x{bn}x{bk}: {e!r}"[:300], file=sys.stderr)
                continue
            if best is None or s < best[0]:
                best = (s, it, f"{bm}x{bn}x{bk} w{warps} s{stages}", wgmma, err)
        if best is not None:
            s, it, cfg, wgmma, err = best
            out.row(kernel="triton_gemm", dtype="fp16", m=m, n=n, k=k, batch=1, heads="", seq="",
                    head_dim="", causal="", **{"pass": "fwd"}, bytes="", flops=int(flops),
                    seconds=fmt(s), tflops=fmt(flops / s / 1e12, 5), gbs="",
                    note=f"mode={args.legacy_mode} wgmma={wgmma} config={cfg} maxerr={err:.3g} iters={it}")
            print(f"legacy {args.legacy_mode} {m}x{n}x{k}: {flops / s / 1e12:.0f} TFLOP/s ({cfg}, "
                  f"wgmma={wgmma})", file=sys.stderr, flush=True)
        del a, b, c, ref


def run_legacy(args, dev, deadline):
    """The same Triton GEMMs compiled twice, each in its own process (the
    mode is read when a kernel compiles; each with its own kernel cache):
    native (wgmma on Hopper) and DISABLE_MMA_V3=1 (mma.sync, the path code
    built for sm_80 takes). Rows go to OUT/legacy-native/kernels.csv and
    OUT/legacy-mma2/kernels.csv."""
    for mode in ("native", "mma2"):
        left = deadline - time.monotonic()
        if left < 5:
            return
        sub = os.path.join(args.out, "legacy-" + mode)
        env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(sub, "triton-cache"))
        env.pop("DISABLE_MMA_V3", None)
        if mode == "mma2":
            env["DISABLE_MMA_V3"] = "1"
        cmd = [sys.executable, os.path.abspath(__file__), "--out", sub, "--sections", "legacy-child",
               "--legacy-mode", mode, "--budget-s", str(int(left / 2 if mode == "native" else left)),
               "--target-s", str(args.target_s)] + (["--quick"] if args.quick else [])
        try:
            subprocess.run(cmd, env=env, timeout=max(10, left), check=False)
        except subprocess.TimeoutExpired:
            print(f"legacy {mode}: timed out", file=sys.stderr)


# --- Wide-ResNet training steps (section "wrn") ---

WRN_FIELDS = ["model", "depth", "base_channels", "width", "image", "classes", "micro_batch",
              "params", "dtype", "format", "recompute", "step_seconds", "images_per_s",
              "peak_alloc_gib", "peak_reserved_gib", "status"]


class WrnBlock(nn.Module):
    """Bottleneck block as Alpa's/Arena's Flax WideResNet writes it: 1x1 to
    `filters`, 3x3 (the block's stride) to filters x width, 1x1 to
    filters x 4, BatchNorm after each, a 1x1 projection where the shape
    changes."""

    def __init__(self, cin, filters, width, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, filters, 1, bias=False)
        self.b1 = nn.BatchNorm2d(filters)
        self.c2 = nn.Conv2d(filters, filters * width, 3, stride=stride, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(filters * width)
        self.c3 = nn.Conv2d(filters * width, filters * 4, 1, bias=False)
        self.b3 = nn.BatchNorm2d(filters * 4)
        self.proj = None
        if stride != 1 or cin != filters * 4:
            self.proj = nn.Sequential(nn.Conv2d(cin, filters * 4, 1, stride=stride, bias=False),
                                      nn.BatchNorm2d(filters * 4))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = F.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return F.relu(y + (x if self.proj is None else self.proj(x)))


class WideResNet(nn.Module):
    def __init__(self, depth, base, width, classes, checkpoint):
        super().__init__()
        stages = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3]}[depth]
        self.checkpoint = checkpoint
        self.stem = nn.Sequential(nn.Conv2d(3, base, 7, stride=2, padding=3, bias=False),
                                  nn.BatchNorm2d(base), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], base
        for i, n in enumerate(stages):
            for j in range(n):
                blocks.append(WrnBlock(cin, base << i, width, 2 if i > 0 and j == 0 else 1))
                cin = (base << i) * 4
        self.blocks = nn.ModuleList(blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x, labels):
        x = self.stem(x)
        for blk in self.blocks:
            if self.checkpoint:
                x = torch.utils.checkpoint.checkpoint(blk, x, use_reentrant=False)
            else:
                x = blk(x)
        return F.cross_entropy(self.fc(x.mean((2, 3))), labels)


def run_wrn(args, dev, out, deadline, cnn=False):
    """Whole training steps of ResNet-shaped CNNs on the one GPU, SGD with
    momentum, one micro-batch per step, cudnn.benchmark picking each
    convolution's algorithm. Section "wrn": the Arena/Alpa Wide-ResNets
    (image 224, 1,024 classes) as the Arena runs train them: fp32 with TF32
    off, every block recomputed in backward; channels_last (NHWC) and NCHW.
    Section "cnn": ResNet-50 v1.5 (1,000 classes, no recompute, as
    DeepLearningExamples trains it) and Wide-ResNet-500M on the tensor cores,
    bf16 under autocast and TF32, channels_last."""
    # (name, depth, base channels, width factor, classes): Alpa's
    # suite_wresnet.py sizes; ResNet-50 v1.5 is width 1 of base 64.
    models = [("wide_resnet__500M", 50, 224, 2, 1024), ("wide_resnet__1B", 50, 320, 2, 1024),
              ("resnet-50", 50, 64, 1, 1000)]
    # (model, memory format, precision, recompute, micro-batches), in order of
    # use: the Arena runs' micro-batches are 16 on one GPU and 8 per
    # data-parallel replica.
    if cnn:
        configs = [("resnet-50", "nhwc", "bf16", "none", [256, 128]), ("resnet-50", "nhwc", "tf32", "none", [256]),
                   ("wide_resnet__500M", "nhwc", "bf16", "full", [16, 32]),
                   ("wide_resnet__500M", "nhwc", "tf32", "full", [16])]
    else:
        configs = [("wide_resnet__500M", "nhwc", "fp32", "full", [16, 8, 32]),
                   ("wide_resnet__500M", "nchw", "fp32", "full", [16, 8]),
                   ("wide_resnet__1B", "nhwc", "fp32", "full", [16, 8]),
                   ("wide_resnet__1B", "nchw", "fp32", "full", [16])]
    image, steps, warm = 224, 4, 2
    if args.quick or dev.type != "cuda":
        models = [("tiny-wrn", 50, 8, 2, 10)]
        configs = [("tiny-wrn", f, "fp32" if dev.type != "cuda" else p, r, [2])
                   for _, f, p, r, _ in configs[:2]]
        image, steps, warm = 32, 1, 1
    shape = {m[0]: m[1:] for m in models}
    torch.backends.cudnn.benchmark = True
    for name, fmt_name, prec, rc, mbs in configs:
        if time.monotonic() > deadline:
            return
        depth, base, width, classes = shape[name]
        torch.backends.cudnn.allow_tf32 = prec == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        mf = torch.channels_last if fmt_name == "nhwc" else torch.contiguous_format
        torch.manual_seed(0)
        model = on_device(dev, lambda: WideResNet(depth, base, width, classes, rc == "full"))
        model = model.to(memory_format=mf)
        nparams = sum(p.numel() for p in model.parameters())
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        for mb in mbs:
            if time.monotonic() > deadline:
                break
            x = torch.randn(mb, 3, image, image, device=dev).to(memory_format=mf)
            y = torch.randint(0, classes, (mb,), device=dev)
            what = f"cnn {name} {fmt_name} {prec} mb={mb}"
            status, step_s, alloc, reserved = run_steps(
                training_step(model, opt, dev, (x, y), prec == "bf16"), opt, dev, steps, warm, what)
            out.row(model=name, depth=depth, base_channels=base, width=width, image=image,
                    classes=classes, micro_batch=mb, params=nparams, dtype=prec, format=fmt_name,
                    recompute=rc, step_seconds=fmt(step_s),
                    images_per_s=fmt(mb / step_s) if status == "ok" else "nan",
                    peak_alloc_gib=fmt(alloc, 5), peak_reserved_gib=fmt(reserved, 5), status=status)
            print(f"{what}: {status} {step_s:.4f} s/step {alloc:.1f} GiB", file=sys.stderr, flush=True)
            del x, y
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            if status != "ok":
                break
        del model, opt
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = False


# Section "wrnblocks": (base channels, width factor, image, classes,
# micro-batch) of the network it times (ResNet-50 depth), and of its CPU
# smoke test.
WRN_BLOCK_MODELS = {"wide_resnet__500M": (224, 2, 224, 1024, 16), "tiny-wrn": (8, 2, 32, 10, 2)}
WRN_BLOCK_FIELDS = ["model", "micro_batch", "index", "block", "shape_in", "seconds_fwd",
                    "seconds_fwd_bwd", "note"]


def run_wrn_blocks(args, dev, timer, out, deadline):
    """Each part of Wide-ResNet-500M (stem, the 16 bottleneck blocks, the
    pooled classifier) timed by itself at micro-batch 16 in fp32 (TF32 off,
    channels_last, cudnn.benchmark), forward and forward+backward: how the
    step's time spreads over the network (section "wrnblocks")."""
    model = "tiny-wrn" if args.quick or dev.type != "cuda" else "wide_resnet__500M"
    base, width, image, classes, mb = WRN_BLOCK_MODELS[model]
    depth = 50
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    mf = torch.channels_last
    torch.manual_seed(0)
    net = on_device(dev, lambda: WideResNet(depth, base, width, classes, False)).to(memory_format=mf)
    parts = [("stem", net.stem)] + [(f"block{i}", b) for i, b in enumerate(net.blocks)]
    x = torch.randn(mb, 3, image, image, device=dev).to(memory_format=mf)
    inputs = []
    with torch.no_grad():
        for _, mod in parts:
            inputs.append(x)
            x = mod(x)
    pooled = x.mean((2, 3))  # the classifier's input
    for i, (name, mod) in enumerate(parts + [("fc", net.fc)]):
        if time.monotonic() > deadline:
            return
        inp = (pooled if name == "fc" else inputs[i]).detach().clone().requires_grad_(True)
        with torch.no_grad():
            y = mod(inp)
        gy = torch.randn_like(y)

        def fwd():
            with torch.no_grad():
                mod(inp)

        def fwd_bwd():
            mod(inp).backward(gy)
        try:
            tf, _ = timer.time(fwd)
            tb, it = timer.time(fwd_bwd)
        except RuntimeError as e:  # noqa: PERF203 - record and go on
            print(f"wrnblocks {name}: {e!r}", file=sys.stderr)
            continue
        out.row(model=model, micro_batch=mb, index=i,
                block=name, shape_in="x".join(str(d) for d in inp.shape), seconds_fwd=fmt(tf),
                seconds_fwd_bwd=fmt(tb), note=f"iters={it}")
        print(f"wrnblocks {name}: fwd {tf * 1e3:.2f} ms fwd+bwd {tb * 1e3:.2f} ms", file=sys.stderr, flush=True)
        del inp, y, gy
    torch.backends.cudnn.allow_tf32 = True


def meta(dev, args):
    m = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
         "torch": torch.__version__, "cuda": torch.version.cuda,
         "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
         "device": str(dev), "quick": args.quick, "target_s": args.target_s}
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(0)
        m.update(gpu=p.name, sms=p.multi_processor_count, memory_bytes=p.total_memory,
                 capability=f"{p.major}.{p.minor}")
        try:
            q = ("name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,"
                 "memory.total,pstate")
            m["nvidia_smi"] = subprocess.run(
                ["nvidia-smi", f"--query-gpu={q}", "--format=csv"], capture_output=True,
                text=True, timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            m["nvidia_smi"] = f"unavailable: {e}"
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="directory for kernels.csv, train.csv, meta.json (required to measure)")
    ap.add_argument("--summarize-wrn-blocks", metavar="CSV",
                    help="print a wrnblocks.csv's per-part times and its best pipeline splits by time "
                         "and by FLOPs, measure nothing")
    ap.add_argument("--summarize-convs", metavar="CSV",
                    help="print a convs.csv's network totals and NCHW/NHWC ratios, measure nothing")
    ap.add_argument("--budget-s", type=float, default=240,
                    help="seconds after which remaining sections are cut short")
    ap.add_argument("--target-s", type=float, default=0.02, help="seconds per timed loop")
    ap.add_argument("--vocab", type=int, default=50257, help="train: vocabulary size")
    ap.add_argument("--models", default="", help="train: comma-separated model names (default all)")
    ap.add_argument("--micro-batches", default="1,4,8,16",
                    help="train: comma-separated micro-batches, each until one does not fit")
    ap.add_argument("--recompute", default="none", choices=["none", "full"],
                    help="train: full = torch.utils.checkpoint around every block")
    ap.add_argument("--quick", action="store_true", help="a few shapes of each")
    ap.add_argument("--legacy-mode", default="native", choices=["native", "mma2"],
                    help=argparse.SUPPRESS)  # set by section "legacy" for its child processes
    ap.add_argument("--sections", default="gemm,precision,attention,elementwise,bmm,train",
                    help="comma-separated sections to run, in this order")
    args = ap.parse_args()
    if args.summarize_wrn_blocks:
        summarize_wrn_blocks(args.summarize_wrn_blocks)
        return
    if args.summarize_convs:
        summarize_convs(args.summarize_convs)
        return
    if not args.out:
        ap.error("--out DIR is required to measure")
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    t0 = time.monotonic()
    info = meta(dev, args)
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info), file=sys.stderr, flush=True)
    timer = Timer(dev, args.target_s)
    kout = Writer(os.path.join(args.out, "kernels.csv"), FIELDS)
    tout = Writer(os.path.join(args.out, "train.csv"), TRAIN_FIELDS)
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    cvout = Writer(os.path.join(args.out, "convs.csv"), CONV_FIELDS) if "conv" in sections else None
    wout = Writer(os.path.join(args.out, "wrn.csv"), WRN_FIELDS) if {"wrn", "cnn"} & set(sections) else None
    bout = Writer(os.path.join(args.out, "wrnblocks.csv"), WRN_BLOCK_FIELDS) if "wrnblocks" in sections else None
    # Each section: its share of the budget, and how it runs until its deadline.
    table = {
        "align": (0.05, lambda dl: run_align(args, dev, timer, kout, dl)),
        "gemm": (0.30, lambda dl: run_gemms(args, dev, timer, kout, dl)),
        "precision": (0.05, lambda dl: run_gemm_precisions(args, dev, timer, kout, dl)),
        "attention": (0.20, lambda dl: run_attention(args, dev, timer, kout, dl)),
        "elementwise": (0.05, lambda dl: run_elementwise(args, dev, timer, kout, dl)),
        "bmm": (0.05, lambda dl: run_bmm(args, dev, timer, kout, dl)),
        "train": (0.35, lambda dl: run_train(args, dev, tout, dl)),
        "llama": (0.35, lambda dl: run_llama(args, dev, tout, dl)),
        "conv": (0.20, lambda dl: run_conv(args, dev, timer, cvout, dl)),
        "legacy": (0.30, lambda dl: run_legacy(args, dev, dl)),
        "legacy-child": (0.30, lambda dl: run_legacy_child(args, dev, timer, kout, dl)),
        "wrn": (0.50, lambda dl: run_wrn(args, dev, wout, dl)),
        "cnn": (0.50, lambda dl: run_wrn(args, dev, wout, dl, cnn=True)),
        "wrnblocks": (0.30, lambda dl: run_wrn_blocks(args, dev, timer, bout, dl)),
    }
    for s in sections:
        if s not in table:
            sys.exit(f"unknown section '{s}': expected some of {', '.join(table)}")
    total = sum(table[x][0] for x in sections)
    used = 0.0
    for s in sections:
        used += table[s][0]
        ts = time.monotonic()
        table[s][1](t0 + args.budget_s * used / total)
        print(f"section {s}: {time.monotonic() - ts:.1f} s", file=sys.stderr, flush=True)
    print(f"done in {time.monotonic() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
