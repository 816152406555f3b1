"""Pipeline parallelism: the layer split, the 1F1B schedules, and their execution.

**Split rule** (the estimator's, src/perf/estimator.cc): the model's L layers are cut into
n = p·v virtual stages in order; virtual stage k holds floor(L/n) layers, plus one more when
k < L mod n (uneven splits are allowed: the first stages take the extra layers). Virtual stage
k runs on pipeline stage k mod p as its chunk k div p (Megatron's interleaved placement); the
embedding is on virtual stage 0, the final LayerNorm, head and loss on virtual stage n-1.

**Schedules.** v = 1: 1F1B (PipeDream-Flush; Narayanan et al. 2021): stage s runs
min(p-s-1, M) warm-up forwards, then alternates one forward and one backward, then drains the
backwards. v > 1: Megatron-LM's interleaved 1F1B: (p-s-1)·2 + (v-1)·p warm-up forwards over the
M·v chunk-micro-batches (all of them when M = p), the chunk of the k-th forward being
(k mod p·v) div p and of the k-th backward v-1 minus that; it needs M to be a multiple of p.

**Execution.** Activations go forward and their gradients backward with point-to-point sends
on the default group, between the ranks of the same data- and tensor-parallel coordinates.
Sends are asynchronous (waited for at the end of the step); receives block where the schedule
needs their data, so any valid schedule runs without a deadlock. Tags keep the streams apart:
2k for the activation entering virtual stage k, 2k+1 for the gradient leaving k+1 towards k.
(NCCL ignores tags and matches sends to receives in order per pair of ranks; every stream here
is sent and received in schedule order.) gloo sends CPU tensors only: with gloo on CUDA
(several ranks on one GPU) activations and gradients travel through host copies.
"""


def split_layers(layers, stages):
    """[first, last) layer ranges of `stages` consecutive virtual stages."""
    base, extra = divmod(layers, stages)
    out, first = [], 0
    for k in range(stages):
        n = base + (1 if k < extra else 0)
        out.append((first, first + n))
        first += n
    return out


def schedule(stage, p, v, m):
    """The ordered ("F"|"B", chunk, micro_batch) operations of pipeline stage `stage`."""
    if v == 1:
        warmup = min(p - stage - 1, m)
        ops = [("F", 0, i) for i in range(warmup)]
        for i in range(m - warmup):
            ops += [("F", 0, warmup + i), ("B", 0, i)]
        ops += [("B", 0, i) for i in range(m - warmup, m)]
        return ops
    if m % p:
        raise ValueError(f"interleaved schedule: {m} micro-batches is not a multiple of p={p}")
    total = m * v
    warmup = total if m == p else min((p - stage - 1) * 2 + (v - 1) * p, total)

    def chunk(k, forward):
        c = (k % (p * v)) // p
        return c if forward else v - 1 - c

    def micro(k):
        return (k // (p * v)) * p + k % p

    ops = [("F", chunk(k, True), micro(k)) for k in range(warmup)]
    for i in range(total - warmup):
        k = warmup + i
        ops += [("F", chunk(k, True), micro(k)), ("B", chunk(i, False), micro(i))]
    ops += [("B", chunk(i, False), micro(i)) for i in range(total - warmup, total)]
    return ops


class PipelineRunner:
    """Runs one optimizer step's forward and backward passes over this rank's chunks.

    chunks: this rank's modules, chunk c being virtual stage c·p + stage.
    inputs(m) / labels(m): micro-batch m's token ids / targets (called on the first / last
    virtual stage only). loss(output, labels): per-sample losses of a micro-batch; the step
    back-propagates their sum divided by `loss_scale_divisor` (the global batch).
    act_shape: the activation tensor's shape between stages.
    """

    def __init__(self, topo, chunks, v, m, act_shape, dist=None, autocast=None, device=None):
        import torch
        self.torch, self.dist, self.topo = torch, dist, topo
        self.chunks, self.v, self.m = chunks, v, m
        self.p, self.s = topo.pp, topo.pp_rank
        self.n = self.p * v
        self.ops = schedule(self.s, self.p, v, m)
        self.act_shape = act_shape
        self.autocast = autocast
        self.device = device if device is not None else torch.device("cpu")
        self.after_backward = None   # called after every backward op (ZeRO-3 uses it)
        # gloo moves CPU tensors only between ranks: several ranks sharing one GPU under gloo
        # (TESSEL_DIST_BACKEND=gloo) send and receive through host copies.
        self.via_host = (self.device.type == "cuda" and dist is not None and topo.pp > 1
                         and dist.get_backend() == "gloo")
        self.wire = torch.device("cpu") if self.via_host else self.device

    def _peer(self, vstage):
        t = self.topo
        return t.rank_of(t.dp_rank, vstage % self.p, t.tp_rank)

    def _recv(self, src_vstage, tag):
        buf = self.torch.empty(self.act_shape, dtype=self.torch.float32, device=self.wire)
        self.dist.recv(buf, src=self._peer(src_vstage), tag=tag)
        return buf.to(self.device) if self.via_host else buf

    def _send(self, t, dst_vstage, tag):
        """Starts an asynchronous send; returns (work, the tensor to keep alive until it ends)."""
        out = t.float().to(self.wire).contiguous()
        return self.dist.isend(out, dst=self._peer(dst_vstage), tag=tag), out

    def run(self, inputs, labels, loss, divisor):
        """Forward and backward of every micro-batch; returns the sum of the per-sample losses
        computed on this rank (last virtual stage only; 0.0 elsewhere) as a float."""
        torch = self.torch
        sends, saved, total = [], {}, None
        for kind, c, mb in self.ops:
            k = c * self.p + self.s
            if kind == "F":
                if k == 0:
                    x = inputs(mb)
                else:
                    x = self._recv(k - 1, 2 * k).requires_grad_()
                with self.autocast():
                    y = self.chunks[c](x)
                if k == self.n - 1:
                    per_sample = loss(y, labels(mb))
                    # Summed on the device, read once per step: a read per micro-batch would
                    # make the host wait for the GPU before it launches the next kernels.
                    part = per_sample.detach().double().sum()
                    total = part if total is None else total + part
                    saved[(c, mb)] = (x, per_sample.sum() / divisor)
                else:
                    sends.append(self._send(y.detach(), k + 1, 2 * (k + 1)))
                    saved[(c, mb)] = (x, y)
            else:
                x, y = saved.pop((c, mb))
                if k == self.n - 1:
                    y.backward()
                else:
                    g = self._recv(k + 1, 2 * k + 1)
                    torch.autograd.backward(y, g.to(y.dtype))
                if k > 0:
                    sends.append(self._send(x.grad, k - 1, 2 * (k - 1) + 1))
                if self.after_backward is not None:
                    self.after_backward()
        for work, _ in sends:
            work.wait()
        return 0.0 if total is None else total.item()
