"""Data parallelism with ZeRO (Rajbhandari et al. 2020) as named by the plan's stage.

Each unit of the model (the embedding, each transformer block, the final LayerNorm and head)
has its parameters, this rank's tensor-parallel shards, laid end to end in one flat vector,
padded to a multiple of d and cut into d equal ranges; data-parallel rank r owns range r. The
optimizer (elementwise: AdamW, SGD with momentum) updates a fp32 "master" vector per unit:

- stage 0: the whole flat vector on every rank; gradients all-reduced over the d replicas.
- stage 1: this rank's range only (optimizer state sharded); gradients all-reduced, the range
  updated, the updated parameters all-gathered.
- stage 2: as 1, but gradients are reduce-scattered, so each rank keeps only its range of them.
- stage 3: as 2, and the parameters themselves live only as this rank's range: a unit's full
  parameters are all-gathered before its forward and freed after it, gathered again when the
  gradient reaches its output, and freed once its gradients are reduce-scattered (after every
  micro-batch). Linear layers save their weight itself for backward (tensor_parallel.linear),
  so freeing it releases the memory.

Replicated parameters whose gradients are partial under sequence parallelism are all-reduced
over the tensor-parallel group first. Because the optimizer is elementwise, every stage gives
the update of a one-process run (up to the summation order of the reductions).
"""

import torch

from . import tensor_parallel as tpl


class Unit:
    def __init__(self, module, names, params, dp, dp_rank, stage):
        self.module, self.names, self.params = module, names, params
        self.numels = [p.numel() for p in params]
        self.shapes = [tuple(p.shape) for p in params]
        self.offsets = []
        off = 0
        for n in self.numels:
            self.offsets.append(off)
            off += n
        self.numel = off
        self.device = params[0].device if params else torch.device("cpu")
        shards = dp if stage >= 1 else 1
        self.padded = -(-off // shards) * shards if off else 0
        size = self.padded // shards
        self.lo = dp_rank * size if stage >= 1 else 0
        self.hi = self.lo + size
        flat = self.flatten([p.detach() for p in params])
        self.master = torch.nn.Parameter(flat[self.lo:self.hi].clone())
        self.gathered = True
        self.pending = 0

    def flatten(self, tensors):
        flat = torch.zeros(self.padded, dtype=torch.float32, device=self.device)
        for t, off, n in zip(tensors, self.offsets, self.numels):
            if t is not None:
                flat[off:off + n] = t.reshape(-1)
        return flat


class ShardedOptimizer:
    """The data-parallel side of a step: gradient reduction, the (sharded) update, parameter
    gathering. `make_optimizer(list_of_params)` builds the torch optimizer over the masters."""

    def __init__(self, chunks, topo, stage, make_optimizer):
        self.topo, self.stage = topo, stage
        self.dp_group, self.tp_group = topo.dp_group, topo.tp_group
        self.units = []
        for chunk in chunks:
            names = {id(p): n for n, p in chunk.named_parameters()}
            for module in chunk.units():
                params = list(module.parameters())
                self.units.append(Unit(module, [names[id(p)] for p in params], params,
                                       topo.dp, topo.dp_rank, stage))
        self.masters = [u.master for u in self.units]
        self.optimizer = make_optimizer(self.masters)
        self._grad_hooks = []
        if stage == 3:
            for u in self.units:
                self._install_zero3(u)
                self._free(u)

    # --- ZeRO-3: gather before use, free after -------------------------------------------
    def _gather(self, u):
        if u.gathered:
            return
        full = tpl.all_gather(u.master.detach(), 0, self.dp_group)
        for p, off, n, shape in zip(u.params, u.offsets, u.numels, u.shapes):
            p.data = full[off:off + n].view(shape)
        u.gathered = True

    def _free(self, u):
        for p in u.params:
            p.data = torch.empty(0, dtype=p.dtype, device=p.device)
        u.gathered = False

    def _install_zero3(self, u):
        def pre_forward(module, inputs):
            self._gather(u)

        def post_forward(module, inputs, output):
            if torch.is_grad_enabled() and output.requires_grad:
                def before_backward(grad):
                    self._gather(u)
                    return grad
                output.register_hook(before_backward)
            self._free(u)

        u.module.register_forward_pre_hook(pre_forward)
        u.module.register_forward_hook(post_forward)

        def on_grad(*_):
            u.pending += 1
            if u.pending == len(u.params):
                u.pending = 0
                self._reduce_unit_zero3(u)
                self._free(u)

        for p in u.params:
            acc = p.expand_as(p).grad_fn.next_functions[0][0]
            acc.register_hook(on_grad)
            self._grad_hooks.append(acc)   # the hook lives as long as the node

    def _reduce_unit_zero3(self, u):
        self._reduce_sequence_parallel(u)
        flat = u.flatten([p.grad for p in u.params])
        shard = tpl.reduce_scatter(flat, 0, self.dp_group)
        if u.master.grad is None:
            u.master.grad = shard.clone()
        else:
            u.master.grad.add_(shard)
        for p in u.params:
            p.grad = None

    # --- every stage ------------------------------------------------------------------
    def _reduce_sequence_parallel(self, u):
        for p in tpl.sequence_parallel_grads(u.params):
            if p.grad is not None:
                tpl.all_reduce(p.grad, self.tp_group)

    def zero_grad(self):
        for u in self.units:
            u.master.grad = None
            for p in u.params:
                p.grad = None

    def step(self):
        if self.stage < 3:
            for u in self.units:
                self._reduce_sequence_parallel(u)
                flat = u.flatten([p.grad for p in u.params])
                if self.stage == 2:
                    u.master.grad = tpl.reduce_scatter(flat, 0, self.dp_group)
                else:
                    tpl.all_reduce(flat, self.dp_group)
                    u.master.grad = flat[u.lo:u.hi].clone()
        else:
            for u in self.units:
                if u.master.grad is None:
                    u.master.grad = torch.zeros_like(u.master)
        self.optimizer.step()
        self.publish()

    def publish(self):
        """Copies the masters into the model's parameters (stages 0-2)."""
        if self.stage == 3:
            return
        with torch.no_grad():
            for u in self.units:
                full = u.master.detach()
                if self.stage >= 1:
                    full = tpl.all_gather(full, 0, self.dp_group)
                for p, off, n in zip(u.params, u.offsets, u.numels):
                    p.copy_(full[off:off + n].view_as(p))

    # --- checkpoints ------------------------------------------------------------------
    def pieces(self, piece_type):
        """This rank's share of the model and optimizer state, as checkpoint pieces."""
        t = self.topo
        writes = self.stage >= 1 or t.dp_rank == 0
        out = []
        if not writes:
            return out
        scalars_written = False
        for u in self.units:
            state = self.optimizer.state.get(u.master, {})
            vectors = {k: v for k, v in state.items()
                       if torch.is_tensor(v) and v.numel() == u.master.numel() and v.dim() == 1}
            if t.rank == 0 and not scalars_written:
                for k, v in state.items():
                    if k not in vectors:
                        val = v if torch.is_tensor(v) else torch.tensor(float(v))
                        out.append(piece_type(f"optim/{k}", (), None, 0, 1, 0, 1,
                                              val.detach().reshape(1).float().clone()))
                scalars_written = True
            for name, p, off, n, shape in zip(u.names, u.params, u.offsets, u.numels, u.shapes):
                if p.tp_dim is None and t.tp_rank != 0:
                    continue
                lo, hi = max(off, u.lo), min(off + n, u.hi)
                if lo >= hi:
                    continue
                full = list(shape)
                tp_index, tp_size = 0, 1
                if p.tp_dim is not None:
                    full[p.tp_dim] *= t.tp
                    tp_index, tp_size = t.tp_rank, t.tp
                s0, s1 = lo - u.lo, hi - u.lo
                meta = (tuple(full), p.tp_dim, tp_index, tp_size, lo - off, hi - off)
                out.append(piece_type(f"model/{name}", *meta, u.master.detach()[s0:s1].clone()))
                for k, v in vectors.items():
                    out.append(piece_type(f"optim/{k}/{name}", *meta, v.detach()[s0:s1].clone()))
        return out

    def load(self, ckpt):
        """Sets masters, optimizer state and parameters from a checkpoint of any plan."""
        t = self.topo
        names = set(ckpt.names())
        keys = sorted({n.split("/")[1] for n in names if n.startswith("optim/") and n.count("/") >= 2})
        scalars = {n.split("/", 1)[1]: ckpt.full(n).reshape(()) for n in names
                   if n.startswith("optim/") and n.count("/") == 1}

        def shard_of(prefix, u):
            parts = []
            for name, p in zip(u.names, u.params):
                if p.tp_dim is None:
                    parts.append(ckpt.full(f"{prefix}{name}"))
                else:
                    parts.append(ckpt.shard(f"{prefix}{name}", p.tp_dim, t.tp_rank, t.tp))
            return u.flatten(parts)[u.lo:u.hi].clone()

        with torch.no_grad():
            for u in self.units:
                u.master.copy_(shard_of("model/", u))
                if keys:
                    state = {k: shard_of(f"optim/{k}/", u) for k in keys}
                    for k, v in scalars.items():
                        state[k] = v.clone()
                    self.optimizer.state[u.master] = state
        self.publish()
