"""Tensor parallelism as Megatron-LM does it (Shoeybi et al. 2019; Korthikanti et al. 2022).

- `ColumnParallelLinear` splits the weight's output dimension over the t ranks of the
  tensor-parallel group; its input enters through `copy_to_tp` (identity forward, all-reduce of
  the gradient backward) or, with sequence parallelism, through an all-gather along the sequence.
- `RowParallelLinear` splits the input dimension; its partial outputs are summed by an
  all-reduce (or, with sequence parallelism, a reduce-scatter along the sequence) before the
  replicated bias is added.
- `VocabParallelEmbedding` holds vocab/t rows per rank; `vocab_parallel_cross_entropy` computes
  the loss over logits split on the vocabulary without gathering them (max, sum of exponentials
  and the target logit are all-reduced).

Every parameter carries `tp_dim` (the dimension split across ranks, or None when replicated)
and `init` ("normal", "zeros", "ones"); `sequence_parallel_grad` marks a replicated parameter
whose gradient is partial under sequence parallelism (LayerNorms, row-parallel biases, the
position embedding) and must be all-reduced over the group. Collectives over a group of one are
skipped. Linear layers go through `linear`, an autograd function that saves the weight itself
(not a view of it), so ZeRO-3 can free and re-gather a weight's storage between forward and
backward.

Gloo has no reduce-scatter: there it is an all-reduce followed by taking this rank's slice
(the same result, more traffic); NCCL uses its own reduce-scatter.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn


def _size(group):
    return 1 if group is None else dist.get_world_size(group)


def _rank(group):
    return 0 if group is None else dist.get_rank(group)


def all_reduce(x, group, op=None):
    if _size(group) > 1:
        dist.all_reduce(x, op=op or dist.ReduceOp.SUM, group=group)
    return x


def all_gather(x, dim, group):
    n = _size(group)
    if n == 1:
        return x
    parts = [torch.empty_like(x) for _ in range(n)]
    dist.all_gather(parts, x.contiguous(), group=group)
    return torch.cat(parts, dim=dim)


def reduce_scatter(x, dim, group):
    n = _size(group)
    if n == 1:
        return x
    if dist.get_backend(group) == "nccl":
        chunks = [c.contiguous() for c in x.chunk(n, dim=dim)]
        out = torch.empty_like(chunks[0])
        dist.reduce_scatter(out, chunks, group=group)
        return out
    full = x.contiguous().clone()
    dist.all_reduce(full, group=group)
    return full.chunk(n, dim=dim)[_rank(group)].contiguous()


def split(x, dim, group):
    n = _size(group)
    if n == 1:
        return x
    return x.chunk(n, dim=dim)[_rank(group)].contiguous()


class _CopyToTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        return all_reduce(g.contiguous().clone(), ctx.group), None


class _ReduceFromTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        return all_reduce(x.contiguous().clone(), group)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _GatherSeq(torch.autograd.Function):
    """Sequence-parallel region -> tensor-parallel region: all-gather forward, reduce-scatter back."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return all_gather(x, 1, group)

    @staticmethod
    def backward(ctx, g):
        return reduce_scatter(g, 1, ctx.group), None


class _ReduceScatterSeq(torch.autograd.Function):
    """Tensor-parallel partial sums -> sequence-parallel region: reduce-scatter forward, all-gather back."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return reduce_scatter(x, 1, group)

    @staticmethod
    def backward(ctx, g):
        return all_gather(g, 1, ctx.group), None


class _ScatterSeq(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return split(x, 1, group)

    @staticmethod
    def backward(ctx, g):
        return all_gather(g, 1, ctx.group), None


def copy_to_tp(x, group):
    return _CopyToTP.apply(x, group) if _size(group) > 1 else x


def reduce_from_tp(x, group):
    return _ReduceFromTP.apply(x, group) if _size(group) > 1 else x


def gather_seq(x, group):
    return _GatherSeq.apply(x, group) if _size(group) > 1 else x


def reduce_scatter_seq(x, group):
    return _ReduceScatterSeq.apply(x, group) if _size(group) > 1 else x


def scatter_seq(x, group):
    return _ScatterSeq.apply(x, group) if _size(group) > 1 else x


if hasattr(torch, "get_autocast_dtype"):          # torch >= 2.4
    def _compute_dtype():
        for kind in ("cpu", "cuda"):
            if torch.is_autocast_enabled(kind):
                return torch.get_autocast_dtype(kind)
        return None
else:
    def _compute_dtype():
        if torch.is_autocast_cpu_enabled():
            return torch.get_autocast_cpu_dtype()
        if torch.is_autocast_enabled():
            return torch.get_autocast_gpu_dtype()
        return None


class _Linear(torch.autograd.Function):
    """y = x W^T + b, saving W itself so its storage can be swapped out (ZeRO-3)."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        dtype = _compute_dtype() or x.dtype
        xc = x.to(dtype)
        ctx.save_for_backward(xc, weight)
        ctx.dtype, ctx.has_bias = dtype, bias is not None
        y = xc.matmul(weight.to(dtype).t())
        if bias is not None:
            y = y + bias.to(dtype)
        return y

    @staticmethod
    def backward(ctx, g):
        xc, weight = ctx.saved_tensors
        g = g.to(ctx.dtype)
        gx = g.matmul(weight.to(ctx.dtype))
        g2 = g.reshape(-1, g.shape[-1])
        gw = g2.t().matmul(xc.reshape(-1, xc.shape[-1]))
        gb = g2.sum(dim=0) if ctx.has_bias else None
        return gx, gw.to(weight.dtype), None if gb is None else gb.to(weight.dtype)


def linear(x, weight, bias=None):
    return _Linear.apply(x, weight, bias)


def _param(shape, tp_dim, init, sp_grad=False):
    p = nn.Parameter(torch.empty(shape))
    p.tp_dim, p.init, p.sequence_parallel_grad = tp_dim, init, sp_grad
    return p


class ColumnParallelLinear(nn.Module):
    """out_features split over the group; input replicated (or sequence-sharded with SP)."""

    def __init__(self, in_features, out_features, group, sequence_parallel=False):
        super().__init__()
        t = _size(group)
        self.group, self.sp = group, sequence_parallel
        self.weight = _param((out_features // t, in_features), 0, "normal")
        self.bias = _param((out_features // t,), 0, "zeros")

    def forward(self, x):
        x = gather_seq(x, self.group) if self.sp else copy_to_tp(x, self.group)
        return linear(x, self.weight, self.bias)


class RowParallelLinear(nn.Module):
    """in_features split over the group; output summed (or reduce-scattered along the sequence)."""

    def __init__(self, in_features, out_features, group, sequence_parallel=False):
        super().__init__()
        t = _size(group)
        self.group, self.sp = group, sequence_parallel
        self.weight = _param((out_features, in_features // t), 1, "normal")
        self.bias = _param((out_features,), None, "zeros", sp_grad=sequence_parallel)

    def forward(self, x):
        y = linear(x, self.weight)
        y = reduce_scatter_seq(y, self.group) if self.sp else reduce_from_tp(y, self.group)
        return y + self.bias.to(y.dtype)


class VocabParallelEmbedding(nn.Module):
    """vocab/t rows per rank; a token outside this rank's rows contributes zeros."""

    def __init__(self, vocab, dim, group):
        super().__init__()
        t = _size(group)
        self.group, self.per_rank = group, vocab // t
        self.start = _rank(group) * self.per_rank
        self.weight = _param((self.per_rank, dim), 0, "normal")

    def forward(self, ids):
        """Partial embeddings: the caller reduces them (all-reduce, or reduce-scatter with SP)."""
        if _size(self.group) == 1:
            return F.embedding(ids, self.weight)
        local = ids - self.start
        outside = (local < 0) | (local >= self.per_rank)
        out = F.embedding(local.masked_fill(outside, 0), self.weight)
        return out.masked_fill(outside.unsqueeze(-1), 0.0)


class LayerNorm32(nn.Module):
    """LayerNorm computed in fp32 (CPU autocast in torch 1.13 cannot run it on bf16 input)."""

    def __init__(self, dim, sequence_parallel=False, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = _param((dim,), None, "ones", sp_grad=sequence_parallel)
        self.bias = _param((dim,), None, "zeros", sp_grad=sequence_parallel)

    def forward(self, x):
        return F.layer_norm(x.float(), (x.shape[-1],), self.weight, self.bias, self.eps)


class _VocabParallelCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, start, group):
        logits = logits.float()
        m = logits.max(dim=-1)[0]
        all_reduce(m, group, dist.ReduceOp.MAX if _size(group) > 1 else None)
        shifted = logits - m.unsqueeze(-1)
        n_local = logits.shape[-1]
        local = target - start
        outside = (local < 0) | (local >= n_local)
        local = local.masked_fill(outside, 0)
        picked = shifted.gather(-1, local.unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0.0)
        all_reduce(picked, group)
        exp = shifted.exp()
        total = exp.sum(dim=-1)
        all_reduce(total, group)
        loss = total.log() - picked
        softmax = exp.div_(total.unsqueeze(-1))
        ctx.save_for_backward(softmax, local, outside)
        return loss

    @staticmethod
    def backward(ctx, g):
        softmax, local, outside = ctx.saved_tensors
        grad = softmax.clone()
        hit = (~outside).to(grad.dtype)
        grad.scatter_add_(-1, local.unsqueeze(-1), -hit.unsqueeze(-1))
        return grad * g.unsqueeze(-1), None, None, None


def vocab_parallel_cross_entropy(logits, target, group):
    """Per-token loss from logits split over the vocabulary ([..., vocab/t]); target [...]."""
    start = _rank(group) * logits.shape[-1]
    return _VocabParallelCrossEntropy.apply(logits, target, start, group)


def sequence_parallel_grads(params):
    """Replicated parameters whose gradients are partial under sequence parallelism."""
    return [p for p in params if getattr(p, "sequence_parallel_grad", False)]
