#!/usr/bin/python3
"""Measure, exactly, the bytes a GPT decoder layer (and the output head) saves
for the backward pass, on CPU with plain PyTorch.

WHAT
  A pre-LayerNorm GPT decoder layer written the way Megatron-LM (core) writes
  it, in [seq, batch, hidden] layout:

    x -> LN1 -> QKV linear (one Linear, h -> h + 2*g*d; Megatron's grouped
         layout [s, b, g, (r+2)*d], split into q [s,b,g,r*d], k, v [s,b,g,d],
         q reshaped to [s,b,a,d]: a view when r = a/g = 1, a copy otherwise,
         exactly as megatron/core/transformer/attention.py does)
      -> core attention -> proj linear (h -> h) -> dropout -> + x
      -> LN2 -> fc1 -> act -> fc2 -> dropout -> + residual

  h hidden, a heads, g kv heads (GQA), d = h/a, r = a/g, f ffn hidden, s seq,
  b micro-batch, e bytes of the activation dtype.

  ffn_kind  gelu:   fc1 h->f, GELU (erf), fc2 f->h.
            swiglu: ONE fused fc1 h->2f, chunked in two (gate, up),
                    SiLU(gate)*up, fc2 f->h (Megatron's `swiglu`).
            Default f: 4h for gelu, 8h/3 rounded UP to a multiple of 64 for
            swiglu (h=256: 704, h=512: 1408). All Linears have a bias, added
            outside the GEMM as Megatron does (bias-GELU / bias-dropout-add
            fusions); the add saves nothing. The vocab projection has none.
  attention unfused: Megatron's CoreAttention: [k, v repeated to a heads by
                    expand+reshape when g < a], scores = baddbmm(q, k^T,
                    alpha=1/sqrt(d)), causal mask (masked_fill with a bool
                    [1,1,s,s] mask shared by all layers), softmax in the
                    activation dtype (as the fused scaled-masked-softmax
                    kernel), attention dropout, bmm with v, context made
                    contiguous [s,b,h].
            fused:  FlashAttention semantics: a torch.autograd.Function taking
                    q [s,b,a,d], k, v [s,b,g,d] (no repeat: GQA native) that
                    saves ONLY q, k, v, its output and the fp32 log-sum-exp
                    (b*a*s floats) and recomputes scores/probabilities in
                    backward; checked with gradcheck (--check). No attention
                    dropout (FlashAttention regenerates its dropout mask from
                    a Philox seed and saves no mask, so the bytes are the same).
  dropout   0.0 or 0.1: hidden dropout after proj and after fc2, attention
            dropout (unfused only). p = 0 runs no dropout op at all. Dropout
            calls torch.native_dropout, which is what F.dropout runs on CUDA
            and saves a 1-byte bool mask. (On CPU, F.dropout takes a non-fused
            path that saves the mask in the activation dtype; we do not use
            it, since GPUs never do.)
  recompute none; selective (core attention wrapped in
            torch.utils.checkpoint, reentrant like Megatron's: its inputs
            q, k, v (+ the shared mask) are saved, nothing inside it);
            full (whole layer checkpointed: only its input is saved).
  dtype     bfloat16 (main) and float32. Every op used runs in bf16 on CPU in
            torch 1.13; no workaround was needed (only for speed, biases are
            added after F.linear: bf16 addmm is ~10x slower than mm on this
            CPU build, which uses reference BLAS). One CPU difference from CUDA:
            LayerNorm's saved mean and rstd are in the INPUT dtype on CPU
            (bf16: 2+2 bytes per token) but fp32 on CUDA (4+4). The script
            probes this (`ln_stat_bytes`) and the closed form uses it.

  Output head (part=head): final LayerNorm + vocab projection (an untied
  Linear h->V without bias; tying changes nothing here, weights are not
  activations) + cross entropy, for
    loss plain:   logits [s,b,V] in the activation dtype, .float(), then
                  F.cross_entropy (log_softmax + nll_loss) as Megatron does by
                  default (fp16_lm_cross_entropy off).
    loss chunked: tokens in chunks of CHUNK_TOKENS (256); each chunk's
                  logits+loss run inside a (reentrant) checkpoint, so logits are
                  recomputed in backward and never saved.

HOW IT COUNTS
  torch.autograd.graph.saved_tensors_hooks around the forward pass; the pack
  hook takes each saved tensor's STORAGE (storage().data_ptr(), nbytes()) and
  each distinct storage is counted once (views such as q/k/v of the QKV
  output, or the flattened input a 3-D Linear saves, share one storage).
  Parameter storages are excluded. The layer's input IS included (it is LN1's
  input: Korthikanti counts it). Per-layer bytes: a 2-layer stack is run and
  every storage is attributed to the layer during whose forward it was FIRST
  saved; the second layer's share is reported. That equals
  bytes(2 layers) - bytes(1 layer) (--check verifies it), and puts
  the causal mask (shared by all layers, s*s bool bytes) in layer 1, i.e. not
  in the reported number. The head is measured alone; its input (final-LN
  input), the int64 labels and nll_loss's fp32 scalar total_weight are
  included. The allocator cross-check uses the CPU profiler's memory events
  (net bytes allocated in forward and still alive); run with --check or
  --single. It equals the hook count except for tensors a Function keeps
  outside save_for_backward: reentrant checkpoint's CPU RNG state (5056
  bytes uint8 per checkpoint call), which the hooks do not see.

RUN
  /usr/bin/python3 scripts/measure-activations.py            # full grid ->
        data/measured/activation-bytes-cpu.csv (2 worker processes; 13 min here,
        with other jobs sharing the 2 cores)
  /usr/bin/python3 scripts/measure-activations.py --check    # quick, exits 1 on
        a >5% difference from the closed form (or any failed self-check)
  /usr/bin/python3 scripts/measure-activations.py --single --verbose \\
        --hidden 256 --attention unfused --dropout 0.1 --recompute none
        # one configuration with a per-tensor breakdown

CLOSED FORM (bytes per token, i.e. per-layer bytes / (s*b); m = 1 if
dropout > 0 else 0; sigma = 2*ln_stat_bytes per LayerNorm, = 2e on CPU and 8
on CUDA; per-layer bytes are exactly s*b times this)

  full recompute:         e*h                       (the layer input)

  common to none/selective:
     LN1 input e*h + sigma, QKV input e*h, proj input e*h, LN2 input
     e*h + sigma, fc1 input e*h, hidden dropout masks 2*m*h,
     MLP gelu:   fc1 out e*f + GELU out e*f                  (= 8e*h at f=4h)
     MLP swiglu: fc1 out 2e*f + SiLU out e*f + SiLU*up e*f   (= 4e*f)
     => 5e*h + 2*sigma + 2*m*h + MLP
  plus, for q, k, v:
     MHA (g = a), any mode that keeps them: the QKV output, 3e*h
     GQA, unfused none: q copy + repeated k + repeated v,       3e*h
          (nothing saves a view of the QKV output any more, so it is freed)
     GQA, fused none or selective (q copy + whole QKV output
          kept alive by the k, v views):                        e*(2h + 2*g*d)
  plus the attention internals:
     unfused, none:  softmax out e*a*s + m*(mask a*s + dropout out e*a*s)
     fused, none:    log-sum-exp 4*a
     selective:      nothing

  With e = 2, MHA, gelu, f = 4h, dropout 0.1, unfused, none:
     32h + 2h + 2*sigma + 5*a*s  = (34 + 5*a*s/h)*h + 2*sigma
  per token, i.e. Korthikanti et al. 2022's s*b*h*(34 + 5*a*s/h) plus the
  LayerNorm statistics they leave out (2*sigma: 8 bytes/token on CPU bf16,
  16 on CUDA). Selective: 34h + 2*sigma. Full: 2h.

  head, per token:   plain   e*h + sigma + e*h + 4V + 8 + 4/(s*b)
                     chunked e*h + sigma + e*h      + 8 + 8/(s*b)
     (final-LN input, its mean/rstd, the projection input; plain keeps the fp32
     log-probabilities N x V, both: int64 labels; plain: nll_loss's fp32
     scalar total_weight; chunked: the int64 scalar N that the summed chunk
     losses are divided by, which DivBackward saves. Megatron's
     vocab_parallel_cross_entropy instead keeps fp32 exp-logits N x V, an
     int64 target and a bool mask: 4V + 9 per token.)
"""

import argparse
import csv
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

CHUNK_TOKENS = 256
CSV_COLUMNS = ["part", "ffn_kind", "attention", "dropout", "recompute", "loss", "dtype",
               "dtype_bytes", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden",
               "vocab", "seq_len", "micro_batch", "saved_bytes", "saved_bytes_per_token",
               "torch_version", "counted"]
COUNTED_LAYER = ("2nd layer of a 2-layer stack (= 2 layers - 1 layer); incl. layer input "
                 "and LN mean/rstd; excl. parameters and the causal mask shared by layers")
COUNTED_HEAD = ("final-LN input + its mean/rstd + projection input + int64 labels "
                "(+ fp32 log-probs and scalar total_weight for plain); excl. parameters; "
                "chunked: %d tokens per checkpointed chunk" % CHUNK_TOKENS)
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

def repeat_kv(t, a):
    """[s,b,g,d] -> [s,b,a,d], head j gets group j // (a/g) (Megatron's
    repeat_interleave order), via expand + reshape (a copy; saves nothing)."""
    s, b, g, d = t.shape
    if g == a:
        return t
    return t.unsqueeze(3).expand(s, b, g, a // g, d).reshape(s, b, a, d)


def causal_mask_bool(s, device=None):
    return torch.ones(s, s, dtype=torch.bool, device=device).triu(1)


class FlashAttention(torch.autograd.Function):
    """softmax(q k^T * scale + causal) v with FlashAttention's memory
    contract: saves q, k, v, out and the fp32 log-sum-exp only.
    q [s,b,a,d], k, v [s,b,g,d] (g divides a); returns [s,b,a,d] contiguous."""

    @staticmethod
    def forward(ctx, q, k, v, scale):
        s, b, a, d = q.shape
        acc = torch.promote_types(q.dtype, torch.float32)        # fp32 (fp64 in gradcheck)
        qf = q.permute(1, 2, 0, 3).to(acc)                       # [b,a,s,d]
        kf = repeat_kv(k, a).permute(1, 2, 0, 3).to(acc)
        vf = repeat_kv(v, a).permute(1, 2, 0, 3).to(acc)
        scores = torch.matmul(qf, kf.transpose(-1, -2)) * scale
        scores.masked_fill_(causal_mask_bool(s, q.device), float("-inf"))
        lse = torch.logsumexp(scores, dim=-1)                    # [b,a,s] fp32
        probs = torch.exp(scores - lse.unsqueeze(-1))
        out = torch.matmul(probs, vf).permute(2, 0, 1, 3).contiguous().to(q.dtype)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        scale = ctx.scale
        s, b, a, d = q.shape
        g = k.shape[2]
        acc = lse.dtype
        qf = q.permute(1, 2, 0, 3).to(acc)
        kf = repeat_kv(k, a).permute(1, 2, 0, 3).to(acc)
        vf = repeat_kv(v, a).permute(1, 2, 0, 3).to(acc)
        of = out.permute(1, 2, 0, 3).to(acc)
        do = dout.permute(1, 2, 0, 3).to(acc)
        scores = torch.matmul(qf, kf.transpose(-1, -2)) * scale
        scores.masked_fill_(causal_mask_bool(s, q.device), float("-inf"))
        probs = torch.exp(scores - lse.unsqueeze(-1))             # recomputed
        dv = torch.matmul(probs.transpose(-1, -2), do)            # [b,a,s,d]
        dprobs = torch.matmul(do, vf.transpose(-1, -2))
        delta = (do * of).sum(-1, keepdim=True)
        dscores = probs * (dprobs - delta)
        dq = torch.matmul(dscores, kf) * scale
        dk = torch.matmul(dscores.transpose(-1, -2), qf) * scale
        if g != a:   # sum the gradients of the heads that share a kv group
            dk = dk.view(b, g, a // g, s, d).sum(2)
            dv = dv.view(b, g, a // g, s, d).sum(2)
        to_sbhd = lambda t, ref: t.permute(2, 0, 1, 3).to(ref.dtype)
        return to_sbhd(dq, q), to_sbhd(dk, k), to_sbhd(dv, v), None


def dropout(x, p):
    if p == 0.0:
        return x
    return torch.native_dropout(x, p, True)[0]


class Cfg:
    def __init__(self, **kw):
        self.part = kw.get("part", "layer")
        self.ffn_kind = kw.get("ffn_kind", "gelu")
        self.attention = kw.get("attention", "unfused")
        self.dropout = float(kw.get("dropout", 0.0))
        self.recompute = kw.get("recompute", "none")
        self.loss = kw.get("loss", "-")
        self.dtype = kw.get("dtype", "bf16")
        self.hidden = int(kw.get("hidden", 256))
        self.heads = int(kw.get("heads", 8))
        self.kv_heads = int(kw.get("kv_heads", self.heads))
        self.vocab = int(kw.get("vocab", 0))
        self.seq_len = int(kw.get("seq_len", 128))
        self.micro_batch = int(kw.get("micro_batch", 1))
        self.head_dim = self.hidden // self.heads
        self.ffn_hidden = int(kw.get("ffn_hidden", 0)) or default_ffn(self.ffn_kind, self.hidden)
        if self.part == "head":
            self.ffn_kind = self.attention = "-"
            self.recompute = "none"
            self.heads = self.kv_heads = self.head_dim = self.ffn_hidden = 0
        else:
            self.loss = "-"
            self.vocab = 0

    @property
    def torch_dtype(self):
        return DTYPES[self.dtype]

    @property
    def dtype_bytes(self):
        return torch.finfo(self.torch_dtype).bits // 8

    @property
    def tokens(self):
        return self.seq_len * self.micro_batch

    def key(self):
        return (self.part, self.ffn_kind, self.attention, self.dropout, self.recompute,
                self.loss, self.dtype, self.hidden, self.heads, self.kv_heads,
                self.vocab, self.seq_len, self.micro_batch)

    def describe(self):
        if self.part == "head":
            return "head %s %s h=%d V=%d s=%d b=%d" % (self.loss, self.dtype, self.hidden,
                                                       self.vocab, self.seq_len, self.micro_batch)
        return "layer %s %s p=%g %s %s h=%d a=%d g=%d f=%d s=%d b=%d" % (
            self.ffn_kind, self.attention, self.dropout, self.recompute, self.dtype,
            self.hidden, self.heads, self.kv_heads, self.ffn_hidden, self.seq_len,
            self.micro_batch)


def default_ffn(kind, h):
    if kind == "swiglu":
        return int(math.ceil(8 * h / 3 / 64.0)) * 64
    return 4 * h


class Linear(nn.Linear):
    """Linear whose bias is added outside the GEMM, as Megatron does (its
    bias-GELU and bias-dropout-add fusions, or `output + bias`). The add
    saves nothing, so the saved bytes equal those of nn.Linear; the point is
    speed: torch 1.13's CPU addmm in bf16 is ~10x slower than mm here."""

    def forward(self, x):
        y = F.linear(x, self.weight)
        return y if self.bias is None else y + self.bias


class GPTLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        h, a, g, d, f = c.hidden, c.heads, c.kv_heads, c.head_dim, c.ffn_hidden
        assert a % g == 0 and d * a == h
        self.ln1 = nn.LayerNorm(h)
        self.qkv = Linear(h, h + 2 * g * d)
        self.proj = Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc1 = Linear(h, 2 * f if c.ffn_kind == "swiglu" else f)
        self.fc2 = Linear(f, h)

    def core_attention(self, q, k, v, mask=None):
        """Megatron's CoreAttention (unfused) or FlashAttention (fused)."""
        c = self.c
        s, b, a, d = q.shape
        scale = 1.0 / math.sqrt(d)
        if c.attention == "fused":
            out = FlashAttention.apply(q, k, v, scale)               # [s,b,a,d]
            return out.view(s, b, a * d)
        k = repeat_kv(k, a)
        v = repeat_kv(v, a)
        q2 = q.reshape(s, b * a, d)     # views for MHA (Megatron's .view)
        k2 = k.reshape(s, b * a, d)
        v2 = v.reshape(s, b * a, d)
        buf = torch.empty(b * a, s, s, dtype=q.dtype, device=q.device)
        scores = torch.baddbmm(buf, q2.transpose(0, 1), k2.transpose(0, 1).transpose(1, 2),
                               beta=0.0, alpha=scale)                 # [b*a,s,s]
        scores = scores.view(b, a, s, s).masked_fill(mask, -10000.0)
        probs = F.softmax(scores, dim=-1)
        probs = dropout(probs, c.dropout)
        ctx = torch.bmm(probs.view(b * a, s, s), v2.transpose(0, 1))  # [b*a,s,d]
        return ctx.view(b, a, s, d).permute(2, 0, 1, 3).contiguous().view(s, b, a * d)

    def forward(self, x, mask=None):
        c = self.c
        s, b, h = x.shape
        a, g, d = c.heads, c.kv_heads, c.head_dim
        r = a // g
        ln1 = self.ln1(x)
        mixed = self.qkv(ln1).view(s, b, g, (r + 2) * d)
        q, k, v = torch.split(mixed, [r * d, d, d], dim=3)
        q = q.reshape(s, b, a, d)      # view if r == 1, else a copy (Megatron-core)
        if c.recompute == "selective":
            args = (q, k, v) if c.attention == "fused" else (q, k, v, mask)
            ctx = checkpoint(self.core_attention, *args)
        else:
            ctx = self.core_attention(q, k, v, mask)
        x = x + dropout(self.proj(ctx), c.dropout)
        y = self.fc1(self.ln2(x))
        if c.ffn_kind == "swiglu":
            gate, up = torch.chunk(y, 2, dim=-1)
            y = F.silu(gate) * up
        else:
            y = F.gelu(y)
        return x + dropout(self.fc2(y), c.dropout)


class Head(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.ln_f = nn.LayerNorm(c.hidden)
        self.out = Linear(c.hidden, c.vocab, bias=False)   # untied

    def chunk_loss(self, hc, lc):
        return F.cross_entropy(self.out(hc).float(), lc, reduction="sum")

    def forward(self, x, labels):
        s, b, h = x.shape
        n = s * b
        hidden = self.ln_f(x)
        if self.c.loss == "plain":
            logits = self.out(hidden)                            # [s,b,V] activation dtype
            return F.cross_entropy(logits.float().view(n, -1), labels.view(n))
        hidden = hidden.view(n, h)
        lab = labels.view(n)
        total = None
        for i in range(0, n, CHUNK_TOKENS):
            part = checkpoint(self.chunk_loss, hidden[i:i + CHUNK_TOKENS], lab[i:i + CHUNK_TOKENS])
            total = part if total is None else total + part
        return total / n


# --------------------------------------------------------------------------
# Counting
# --------------------------------------------------------------------------

def storage_key(t):
    st = t.storage()
    return st.data_ptr(), st.nbytes()


class SavedCounter:
    """Pack hook: first-seen attribution of every distinct storage to a tag."""

    def __init__(self, exclude_ptrs):
        self.exclude = set(exclude_ptrs)
        self.tag = None
        self.seen = {}          # key -> (tag, dtype, shape of first saver)

    def pack(self, t):
        key = storage_key(t)
        if key[1] > 0 and key[0] not in self.exclude and key not in self.seen:
            self.seen[key] = (self.tag, t.dtype, tuple(t.shape))
        return t

    def bytes(self, tag=None):
        return sum(k[1] for k, v in self.seen.items() if tag is None or v[0] == tag)

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, lambda t: t)


def graph_breakdown(root):
    """Walk the autograd graph: storage key -> list of 'Node.attr shape dtype'."""
    names = {}
    seen_nodes = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node is None or node in seen_nodes:
            continue
        seen_nodes.add(node)
        items = []
        if hasattr(node, "saved_tensors") and not hasattr(node, "_saved_self"):
            try:
                items += [("saved_tensors[%d]" % i, t) for i, t in enumerate(node.saved_tensors)]
            except Exception:
                pass
        for attr in dir(node):
            if attr.startswith("_saved_"):
                try:
                    val = getattr(node, attr)
                except Exception:
                    continue
                vals = val if isinstance(val, (tuple, list)) else [val]
                items += [(attr[7:], t) for t in vals]
        for attr, t in items:
            if isinstance(t, torch.Tensor):
                names.setdefault(storage_key(t), []).append(
                    "%s.%s %s %s" % (node.name(), attr, tuple(t.shape), str(t.dtype)[6:]))
        stack += [fn for fn, _ in node.next_functions]
    return names


def profiler_net_alive(fn):
    """Net bytes allocated during fn() that are still alive afterwards."""
    import gc
    from torch.profiler import profile, ProfilerActivity
    gc.collect()       # garbage of earlier runs must not be freed inside the window
    gc.disable()
    try:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            result = fn()
    finally:
        gc.enable()
    return result, sum(e.self_cpu_memory_usage for e in prof.events())


def param_ptrs(*modules):
    return [p.storage().data_ptr() for m in modules for p in m.parameters()]


def run_layers(c, n_layers, seed=0, verbose=False, profile=False, backward=False):
    """Forward n_layers stacked layers; returns dict with per-tag bytes."""
    torch.manual_seed(seed)
    dt = c.torch_dtype
    layers = [GPTLayer(c).to(dt) for _ in range(n_layers)]
    x = torch.randn(c.seq_len, c.micro_batch, c.hidden, dtype=dt, requires_grad=True)
    counter = SavedCounter(param_ptrs(*layers))

    def fwd():
        mask = None if c.attention == "fused" else causal_mask_bool(c.seq_len).view(1, 1, c.seq_len, c.seq_len)
        y = x
        for i, layer in enumerate(layers):
            counter.tag = i
            if c.recompute == "full":
                y = checkpoint(layer, y, mask) if mask is not None else checkpoint(layer, y)
            else:
                y = layer(y, mask)
        return y

    with counter.hooks():
        if profile:
            y, alive = profiler_net_alive(fwd)
            alive -= y.storage().nbytes()          # the returned output is not saved
        else:
            y, alive = fwd(), None
    res = {"total": counter.bytes(), "per_tag": [counter.bytes(i) for i in range(n_layers)],
           "alloc_net": alive, "counter": counter}
    if verbose:
        print_breakdown(counter, graph_breakdown(y.grad_fn), c)
    if backward:
        y.float().square().mean().backward()
        res["grad_ok"] = bool(torch.isfinite(x.grad.float()).all())
    return res


def run_head(c, seed=0, verbose=False, profile=False, backward=False):
    torch.manual_seed(seed)
    dt = c.torch_dtype
    head = Head(c).to(dt)
    x = torch.randn(c.seq_len, c.micro_batch, c.hidden, dtype=dt, requires_grad=True)
    labels = torch.randint(0, c.vocab, (c.seq_len, c.micro_batch))
    counter = SavedCounter(param_ptrs(head))
    counter.tag = 0
    with counter.hooks():
        if profile:
            loss, alive = profiler_net_alive(lambda: head(x, labels))
            alive -= loss.storage().nbytes()
        else:
            loss, alive = head(x, labels), None
    res = {"total": counter.bytes(), "alloc_net": alive, "counter": counter,
           "inputs": x.storage().nbytes() + labels.storage().nbytes()}
    if verbose:
        print_breakdown(counter, graph_breakdown(loss.grad_fn), c)
    if backward:
        loss.backward()
        res["grad_ok"] = bool(torch.isfinite(x.grad.float()).all())
    return res


def print_breakdown(counter, names, c):
    print("  per saved storage (tag = layer index that first saved it):")
    rows = sorted(counter.seen.items(), key=lambda kv: (str(kv[1][0]), -kv[0][1]))
    for key, (tag, dtype, shape) in rows:
        who = names.get(key, ["(saved by a node the graph walk does not expose)"])
        print("   tag=%s %10d B  %s %s  <- %s" % (tag, key[1], str(dtype)[6:], shape, "; ".join(sorted(set(who)))))
    print("  total %d B over %d storages" % (counter.bytes(), len(counter.seen)))


def measure(c, **kw):
    """Bytes for the CSV: per-layer (2nd of 2) or the whole head."""
    if c.part == "head":
        return run_head(c, **kw)["total"]
    return run_layers(c, 2, **kw)["per_tag"][1]


# --------------------------------------------------------------------------
# Closed form
# --------------------------------------------------------------------------

_LN_STAT_BYTES = {}


def ln_stat_bytes(dtype):
    """Bytes of ONE LayerNorm statistic (mean or rstd) per token as saved by
    this backend (probed: CPU torch 1.13 keeps them in the input dtype)."""
    if dtype not in _LN_STAT_BYTES:
        got = []
        x = torch.randn(4, 8, dtype=dtype, requires_grad=True)
        ln = nn.LayerNorm(8).to(dtype)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: got.append(t) or t, lambda t: t):
            ln(x)
        stats = [t for t in got if tuple(t.shape) == (4, 1)]
        assert len(stats) == 2, [t.shape for t in got]
        _LN_STAT_BYTES[dtype] = stats[0].element_size()
    return _LN_STAT_BYTES[dtype]


def closed_form_terms(c):
    """Per-token bytes by term (per-layer bytes = tokens * sum)."""
    e, h, a, g, d, f, s = (c.dtype_bytes, c.hidden, c.heads, c.kv_heads, c.head_dim,
                           c.ffn_hidden, c.seq_len)
    sigma = 2 * ln_stat_bytes(c.torch_dtype)
    m = 1 if c.dropout > 0 else 0
    t = {}
    if c.part == "head":
        t["final LN input"] = e * h
        t["final LN mean+rstd"] = sigma
        t["projection input"] = e * h
        t["int64 labels"] = 8
        if c.loss == "plain":
            t["fp32 log-probs"] = 4 * c.vocab
            t["scalar total_weight"] = 4.0 / c.tokens
        else:
            t["int64 scalar divisor"] = 8.0 / c.tokens
        return t
    if c.recompute == "full":
        t["layer input"] = e * h
        return t
    t["LN1 input"] = e * h
    t["LN1 mean+rstd"] = sigma
    t["QKV input"] = e * h
    if g == a or (c.attention == "unfused" and c.recompute == "none"):
        t["q,k,v"] = 3 * e * h
    else:
        t["q copy + QKV output"] = e * (2 * h + 2 * g * d)
    if c.recompute == "none":
        if c.attention == "unfused":
            t["softmax out"] = e * a * s
            if m:
                t["attn dropout mask"] = a * s
                t["attn dropout out"] = e * a * s
        else:
            t["fp32 log-sum-exp"] = 4 * a
    t["proj input"] = e * h
    if m:
        t["hidden dropout masks"] = 2 * h
    t["LN2 input"] = e * h
    t["LN2 mean+rstd"] = sigma
    t["fc1 input"] = e * h
    if c.ffn_kind == "gelu":
        t["fc1 out (GELU in)"] = e * f
        t["GELU out (fc2 in)"] = e * f
    else:
        t["fc1 out (gate|up)"] = 2 * e * f
        t["SiLU out"] = e * f
        t["SiLU*up (fc2 in)"] = e * f
    return t


def closed_form(c):
    return sum(closed_form_terms(c).values()) * c.tokens


# --------------------------------------------------------------------------
# Grid, check
# --------------------------------------------------------------------------

def grid():
    """bf16: every ffn x kv_heads x attention x dropout x recompute at
    h=256 (s 128, 256; b 1, 2, 4) and h=512 (s=128: b 1, 2, 4; s=256: b 1);
    fp32: the same modes at h=256, b=1. Heads: vocab 1024 and 4096, both
    losses. (The 2-core CPU runs bf16 GEMMs at 1-5 GFLOP/s; larger shapes
    add time, not information: bytes are exactly linear in b.)"""
    cfgs = []
    modes = [(ffn, g, att, p, rc) for ffn in ("gelu", "swiglu") for g in (8, 2)
             for att in ("unfused", "fused") for p in (0.0, 0.1)
             for rc in ("none", "selective", "full")]
    shapes = [("bf16", 256, s, b) for s in (128, 256) for b in (1, 2, 4)]
    shapes += [("bf16", 512, 128, b) for b in (1, 2, 4)] + [("bf16", 512, 256, 1)]
    shapes += [("fp32", 256, s, 1) for s in (128, 256)]
    for dt, h, s, b in shapes:
        for ffn, g, att, p, rc in modes:
            cfgs.append(Cfg(ffn_kind=ffn, attention=att, dropout=p, recompute=rc, dtype=dt,
                            hidden=h, heads=8, kv_heads=g, seq_len=s, micro_batch=b))
    for dt, h, s, b in shapes:
        for V in (1024, 4096):
            for loss in ("plain", "chunked"):
                cfgs.append(Cfg(part="head", loss=loss, dtype=dt, hidden=h, vocab=V,
                                seq_len=s, micro_batch=b))
    return cfgs


def cost(c):
    if c.part == "head":
        return c.tokens * c.hidden * c.vocab
    return c.tokens * (12 * c.hidden ** 2 + 2 * c.seq_len * c.hidden) * (2 if c.dtype == "fp32" else 1)


def _worker(c):
    torch.set_num_threads(1)
    t0 = time.time()
    return c, measure(c), time.time() - t0


def csv_row(c, saved):
    return [c.part, c.ffn_kind, c.attention, c.dropout, c.recompute, c.loss, c.dtype,
            c.dtype_bytes, c.hidden, c.heads, c.kv_heads, c.head_dim, c.ffn_hidden,
            c.vocab, c.seq_len, c.micro_batch, saved, "%.4f" % (saved / c.tokens),
            torch.__version__, COUNTED_HEAD if c.part == "head" else COUNTED_LAYER]


def run_grid(out, jobs):
    import multiprocessing as mp
    cfgs = sorted(grid(), key=cost, reverse=True)
    for dt in DTYPES.values():
        ln_stat_bytes(dt)
    t0 = time.time()
    results = {}
    with mp.get_context("fork").Pool(jobs) as pool:
        for i, (c, saved, secs) in enumerate(pool.imap_unordered(_worker, cfgs)):
            results[c.key()] = (c, saved)
            if (i + 1) % 50 == 0 or i + 1 == len(cfgs):
                print("  %d/%d done, %.0f s" % (i + 1, len(cfgs), time.time() - t0), flush=True)
    order = [c.key() for c in grid()]
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    worst = 0.0
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        for k in order:
            c, saved = results[k]
            w.writerow(csv_row(c, saved))
            worst = max(worst, abs(saved / closed_form(c) - 1))
    print("wrote %d rows to %s in %.0f s; largest |measured/closed form - 1| = %.2e"
          % (len(order), out, time.time() - t0, worst))
    print_summary(results)


def print_summary(results):
    """Measured vs closed form, per token, one line per mode at h=512, s=256, b=1
    (and the largest relative deviation per mode over the whole grid)."""
    worst = {}
    for c, saved in results.values():
        mk = mode_key(c)
        dev = saved / closed_form(c) - 1
        if mk not in worst or abs(dev) > abs(worst[mk]):
            worst[mk] = dev
    print("%-48s %14s %14s %10s" % ("mode (bf16, h=512 a=8 s=256 b=1, V=4096)", "measured B/tok",
                                    "formula B/tok", "max dev"))
    for c, saved in sorted(results.values(), key=lambda cs: mode_key(cs[0])):
        if not (c.hidden == 512 and c.seq_len == 256 and c.micro_batch == 1
                and c.dtype == "bf16" and c.vocab in (0, 4096)):
            continue
        print("%-48s %14.2f %14.2f %10.1e" % (mode_key(c), saved / c.tokens,
                                             closed_form(c) / c.tokens, worst[mode_key(c)]))


def mode_key(c):
    if c.part == "head":
        return "head %s %s" % (c.loss, c.dtype)
    return "%s %s p=%g %s g=%d" % (c.ffn_kind, c.attention, c.dropout, c.recompute, c.kv_heads)


def check_flash_gradcheck():
    ok = True
    for a, g in ((2, 2), (4, 2)):
        torch.manual_seed(1)
        s, b, d = 5, 2, 3
        q = torch.randn(s, b, a, d, dtype=torch.double, requires_grad=True)
        k = torch.randn(s, b, g, d, dtype=torch.double, requires_grad=True)
        v = torch.randn(s, b, g, d, dtype=torch.double, requires_grad=True)
        good = torch.autograd.gradcheck(lambda q, k, v: FlashAttention.apply(q, k, v, 0.7),
                                        (q, k, v), raise_exception=False)
        print("  gradcheck FlashAttention a=%d g=%d: %s" % (a, g, "ok" if good else "FAILED"))
        ok &= good
    return ok


def check_fused_matches_unfused():
    """fp32 layer, no dropout: fused and unfused give the same output and grads."""
    ok = True
    for g in (8, 2):
        outs = []
        for att in ("unfused", "fused"):
            c = Cfg(attention=att, dtype="fp32", hidden=64, heads=8, kv_heads=g, seq_len=16,
                    micro_batch=2)
            torch.manual_seed(3)
            layer = GPTLayer(c)
            x = torch.randn(16, 2, 64, requires_grad=True)
            y = layer(x, causal_mask_bool(16).view(1, 1, 16, 16))
            y.square().sum().backward()
            outs.append((y.detach(), x.grad, layer.qkv.weight.grad))
        good = all(torch.allclose(u, f, rtol=1e-4, atol=1e-5) for u, f in zip(*outs))
        print("  fused == unfused layer (fp32, g=%d), output and grads: %s" % (g, "ok" if good else "FAILED"))
        ok &= good
    return ok


def run_check(verbose):
    ok = check_flash_gradcheck() & check_fused_matches_unfused()
    cfgs = []
    for dt in ("bf16", "fp32"):
        for g in (8, 2):
            for ffn in ("gelu", "swiglu"):
                for att in ("unfused", "fused"):
                    for p in (0.0, 0.1):
                        for rc in ("none", "selective", "full"):
                            cfgs.append(Cfg(ffn_kind=ffn, attention=att, dropout=p, recompute=rc,
                                            dtype=dt, hidden=128, heads=8, kv_heads=g,
                                            seq_len=64, micro_batch=2))
        for loss in ("plain", "chunked"):
            cfgs.append(Cfg(part="head", loss=loss, dtype=dt, hidden=128, vocab=1024,
                            seq_len=128, micro_batch=3))
    bad = warn = 0
    for c in cfgs:
        if c.part == "head":
            r = run_head(c, backward=True)
            measured, diff = r["total"], None
        else:
            r = run_layers(c, 2, backward=True)
            measured, diff = r["per_tag"][1], r["total"] - run_layers(c, 1)["total"]
        form = closed_form(c)
        dev = measured / form - 1
        # Allocator view = hook count, less tensors allocated before the
        # forward (head: its input and labels; layer: the input cancels in
        # 2 - 1 layers, as does the shared causal mask), plus what the hooks
        # cannot see: each reentrant checkpoint's CPU RNG state.
        n_ckpt = 0
        if c.part == "head" and c.loss == "chunked":
            n_ckpt = math.ceil(c.tokens / CHUNK_TOKENS)
        elif c.part == "layer" and c.recompute != "none":
            n_ckpt = 1
        rng = torch.get_rng_state().numel()
        alloc_expect = measured + n_ckpt * rng - r.get("inputs", 0)
        # The profiler's memory events are now and then off by a few tensors
        # (sporadic, run to run): up to 3 tries, bf16 only, to keep this quick.
        alloc = None
        for _ in range(3 if c.dtype == "bf16" else 0):
            if c.part == "head":
                alloc = run_head(c, profile=True)["alloc_net"]
            else:
                alloc = (run_layers(c, 2, profile=True)["alloc_net"]
                         - run_layers(c, 1, profile=True)["alloc_net"])
            if alloc == alloc_expect:
                break
        problems, notes = [], []
        if abs(dev) > 0.05:
            problems.append("%.1f%% off the closed form" % (100 * dev))
        if diff is not None and diff != measured:
            problems.append("attribution %d != 2-1 layers %d" % (measured, diff))
        if not r.get("grad_ok", True):
            problems.append("backward gave non-finite grads")
        if alloc is not None and alloc != alloc_expect:
            notes.append("allocator %d != hooks-inputs+rng %d (warning only)" % (alloc, alloc_expect))
        bad += bool(problems)
        warn += bool(notes)
        if verbose or problems or notes:
            print("  %-62s measured %9d formula %11.1f alloc %9s %s" % (
                c.describe(), measured, form, alloc, "; ".join(problems + notes) or "ok"))
    print("check: %d configurations, %d failed (>5%% off the closed form, attribution != "
          "difference, or bad backward); allocator view disagreed in %d; "
          "flash/layer self-checks %s" % (len(cfgs), bad, warn, "ok" if ok else "FAILED"))
    return ok and bad == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="quick subset; exit 1 on a >5%% deviation")
    ap.add_argument("--single", action="store_true", help="measure one configuration (see options)")
    ap.add_argument("--verbose", action="store_true", help="per-tensor breakdown")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                  "data", "measured", "activation-bytes-cpu.csv"))
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--part", default="layer", choices=["layer", "head"])
    ap.add_argument("--ffn", default="gelu", choices=["gelu", "swiglu"])
    ap.add_argument("--attention", default="unfused", choices=["unfused", "fused"])
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--recompute", default="none", choices=["none", "selective", "full"])
    ap.add_argument("--loss", default="plain", choices=["plain", "chunked"])
    ap.add_argument("--dtype", default="bf16", choices=list(DTYPES))
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--mb", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    if args.check:
        sys.exit(0 if run_check(args.verbose) else 1)
    if args.single:
        c = Cfg(part=args.part, ffn_kind=args.ffn, attention=args.attention, dropout=args.dropout,
                recompute=args.recompute, loss=args.loss, dtype=args.dtype, hidden=args.hidden,
                heads=args.heads, kv_heads=args.kv_heads or args.heads, vocab=args.vocab,
                seq_len=args.seq, micro_batch=args.mb)
        print(c.describe())
        if c.part == "head":
            r = run_head(c, verbose=args.verbose, profile=True)
            measured = r["total"]
        else:
            r = run_layers(c, 2, verbose=args.verbose, profile=True)
            measured = r["per_tag"][1]
            print("  per layer tag bytes: %s (allocator net alive, both layers: %d)"
                  % (r["per_tag"], r["alloc_net"]))
        form = closed_form(c)
        print("  closed form per token:")
        for name, v in closed_form_terms(c).items():
            print("    %-24s %10.2f" % (name, v))
        print("  measured %d B (%.2f B/token), closed form %.1f B (%.2f B/token), ratio %.6f"
              % (measured, measured / c.tokens, form, form / c.tokens, measured / form))
        return
    run_grid(os.path.normpath(args.out), args.jobs)


if __name__ == "__main__":
    main()
