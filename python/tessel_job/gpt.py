"""A GPT-style decoder built from tensor-parallel layers, cut into pipeline chunks.

Token embedding (vocabulary-parallel) + learned positions, pre-LN blocks (causal multi-head
self-attention: q, k and v column-parallel by heads, the output projection row-parallel; a
4×hidden GELU MLP: column- then row-parallel), a final LayerNorm and an untied LM head
(column-parallel over the vocabulary), trained with the vocabulary-parallel cross-entropy. No
dropout. `build_chunk` makes the part of it one virtual pipeline stage holds; its parameters are
named as in the whole model ("blocks.3.attn.q.weight"), whatever the plan, so checkpoints and
initialisation do not depend on the plan.

Recompute: "full" recomputes each block in the backward pass; "selective" recomputes only the
attention core (QK^T, softmax, ·V: Megatron's selective activation recomputation, Korthikanti
et al. 2022).
"""

import math
import zlib
from dataclasses import dataclass

import torch
import torch.utils.checkpoint
from torch import nn

from . import tensor_parallel as tpl


@dataclass(frozen=True)
class GPTShape:
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    seq_len: int = 32
    vocab: int = 256

    def identity(self):
        return {"layers": self.layers, "hidden": self.hidden, "heads": self.heads,
                "seq_len": self.seq_len, "vocab": self.vocab}


def _checkpoint(fn, *args):
    return torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)


class Attention(nn.Module):
    def __init__(self, s, group, sp, selective):
        super().__init__()
        self.heads = s.heads // (1 if group is None else torch.distributed.get_world_size(group))
        self.head_dim = s.hidden // s.heads
        self.selective = selective
        self.q = tpl.ColumnParallelLinear(s.hidden, s.hidden, group, sp)
        self.k = tpl.ColumnParallelLinear(s.hidden, s.hidden, group, sp)
        self.v = tpl.ColumnParallelLinear(s.hidden, s.hidden, group, sp)
        self.proj = tpl.RowParallelLinear(s.hidden, s.hidden, group, sp)
        mask = torch.triu(torch.ones(s.seq_len, s.seq_len, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def core(self, q, k, v):
        b, t, _ = q.shape
        q, k, v = (z.view(b, t, self.heads, self.head_dim).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        att = att.masked_fill(self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        return (att @ v).transpose(1, 2).reshape(b, t, self.heads * self.head_dim)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        y = _checkpoint(self.core, q, k, v) if self.selective and torch.is_grad_enabled() \
            else self.core(q, k, v)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, s, group, sp, recompute):
        super().__init__()
        self.full = recompute == "full"
        self.ln1 = tpl.LayerNorm32(s.hidden, sp)
        self.attn = Attention(s, group, sp, recompute == "selective")
        self.ln2 = tpl.LayerNorm32(s.hidden, sp)
        self.fc1 = tpl.ColumnParallelLinear(s.hidden, 4 * s.hidden, group, sp)
        self.fc2 = tpl.RowParallelLinear(4 * s.hidden, s.hidden, group, sp)

    def _forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))

    def forward(self, x):
        if self.full and torch.is_grad_enabled():
            return _checkpoint(self._forward, x)
        return self._forward(x)


class Embedding(nn.Module):
    def __init__(self, s, group, sp):
        super().__init__()
        self.group, self.sp = group, sp
        self.tok = tpl.VocabParallelEmbedding(s.vocab, s.hidden, group)
        self.pos = tpl._param((s.seq_len, s.hidden), None, "normal", sp_grad=sp)

    def forward(self, ids):
        word = self.tok(ids)
        t = ids.shape[1]
        if self.sp:
            x = tpl.reduce_scatter_seq(word, self.group)
            n = x.shape[1]
            lo = tpl._rank(self.group) * n
            return x + self.pos[lo:lo + n]
        return tpl.reduce_from_tp(word, self.group) + self.pos[:t]


class Final(nn.Module):
    def __init__(self, s, group, sp):
        super().__init__()
        self.ln = tpl.LayerNorm32(s.hidden, sp)
        self.head = tpl.ColumnParallelLinear(s.hidden, s.vocab, group, sp)

    def forward(self, x):
        return self.head(self.ln(x)).float()


class Chunk(nn.Module):
    """Layers [first_layer, last_layer) of the model, plus the embedding on the first chunk and
    the final LayerNorm and head on the last. Its units (embedding, each block, final) are what
    ZeRO-3 gathers one at a time."""

    def __init__(self, s, first_layer, last_layer, has_embedding, has_head, group, sp, recompute):
        super().__init__()
        self.embed = Embedding(s, group, sp) if has_embedding else None
        self.blocks = nn.ModuleDict({str(i): Block(s, group, sp, recompute)
                                     for i in range(first_layer, last_layer)})
        self.final = Final(s, group, sp) if has_head else None

    def units(self):
        out = [self.embed] if self.embed is not None else []
        out += list(self.blocks.values())
        if self.final is not None:
            out.append(self.final)
        return out

    def forward(self, x):
        if self.embed is not None:
            x = self.embed(x)
        for block in self.blocks.values():
            x = block(x)
        if self.final is not None:
            x = self.final(x)
        return x


def per_sample_loss(logits, labels, group):
    """Mean token loss of each sample: [micro_batch] from logits [mb, seq, vocab/t]."""
    per_token = tpl.vocab_parallel_cross_entropy(logits, labels, group)
    return per_token.mean(dim=1)


def init_parameters(chunks, seed, tp_size, tp_rank):
    """Each parameter from its own generator, seeded by (seed, its name), drawn at its full
    shape and sliced for this tensor-parallel rank: the same model under every plan."""
    for chunk in chunks:
        for name, p in chunk.named_parameters():
            full = list(p.shape)
            if p.tp_dim is not None:
                full[p.tp_dim] *= tp_size
            if p.init == "zeros":
                value = torch.zeros(full)
            elif p.init == "ones":
                value = torch.ones(full)
            else:
                g = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode()))
                                                  & 0x7FFF_FFFF_FFFF_FFFF)
                value = torch.empty(full).normal_(0.0, 0.02, generator=g)
            if p.tp_dim is not None:
                value = value.chunk(tp_size, dim=p.tp_dim)[tp_rank]
            with torch.no_grad():
                p.copy_(value)


class GPTJob:
    """The GPT on Markov-chain text as a tessel_job training spec (runtime.train's interface)."""

    def __init__(self, shape, optimizer="adamw", lr=None, momentum=0.9, weight_decay=0.01,
                 seed=1234, data_seed=42, threads=1, sim_seconds_per_sample=0.0,
                 collective_timeout_s=300.0, log_every=10):
        from .synthetic import MarkovData
        self.shape, self.layers = shape, shape.layers
        self.optimizer, self.momentum, self.weight_decay = optimizer, momentum, weight_decay
        self.lr = lr if lr is not None else (3e-3 if optimizer == "adamw" else 0.05)
        self.seed, self.data_seed, self.threads = seed, data_seed, threads
        self.sim_seconds_per_sample = sim_seconds_per_sample
        self.collective_timeout_s, self.log_every = collective_timeout_s, log_every
        self.data = MarkovData(data_seed, shape.vocab, shape.seq_len)
        self.identity = dict(shape.identity(), data_seed=data_seed, optimizer=optimizer, seed=seed)

    def check(self, c):
        from .contract import check_shape
        s = self.shape
        check_shape(c, s.layers, s.heads, s.hidden, s.vocab, s.seq_len)

    def build_chunk(self, first, last, has_embedding, has_head, group, sp, recompute):
        return Chunk(self.shape, first, last, has_embedding, has_head, group, sp, recompute)

    def init(self, chunks, seed, tp_size, tp_rank):
        init_parameters(chunks, seed, tp_size, tp_rank)

    def loss(self, output, labels, group):
        return per_sample_loss(output, labels, group)

    def act_shape(self, micro_batch, c):
        seq = self.shape.seq_len // (c.tp if c.sequence_parallel else 1)
        return (micro_batch, seq, self.shape.hidden)

    def batch(self, first, count):
        return self.data.batch(first, count)

    def make_optimizer(self, params):
        if self.optimizer == "adamw":
            return torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay)
        return torch.optim.SGD(params, lr=self.lr, momentum=self.momentum,
                               weight_decay=self.weight_decay)
