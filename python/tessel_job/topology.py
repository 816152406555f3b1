"""Rank -> (dp, pp, tp) coordinates and the process groups of a plan.

Megatron-LM's order ("tp-cp-ep-dp-pp" in its parallel_state): the tensor-parallel rank varies
fastest, then the data-parallel rank, then the pipeline stage:

    rank = tp_rank + tp * (dp_rank + dp * pp_rank)

so the t ranks of one tensor-parallel group are consecutive (srun places consecutive ranks on
one node, where tensor parallelism's per-layer all-reduces belong), the d replicas of one stage
are next, and the p stages are the slowest-varying. Every rank creates every group, in the same
order, as torch.distributed requires.
"""

from dataclasses import dataclass, field


@dataclass
class Topology:
    world_size: int
    rank: int
    dp: int
    tp: int
    pp: int
    tp_rank: int = 0
    dp_rank: int = 0
    pp_rank: int = 0
    tp_group: object = None      # torch process groups (None when the world size is 1)
    dp_group: object = None
    tp_ranks: list = field(default_factory=list)
    dp_ranks: list = field(default_factory=list)

    def rank_of(self, dp_rank, pp_rank, tp_rank):
        return tp_rank + self.tp * (dp_rank + self.dp * pp_rank)

    def coords(self, rank):
        """(dp_rank, pp_rank, tp_rank) of a global rank."""
        return (rank // self.tp) % self.dp, rank // (self.tp * self.dp), rank % self.tp

    @property
    def first_stage(self):
        return self.pp_rank == 0

    @property
    def last_stage(self):
        return self.pp_rank == self.pp - 1


def make_topology(world_size, rank, dp, tp, pp, dist=None):
    """Coordinates of `rank`; with `dist` (torch.distributed, initialised) also the groups."""
    if dp * tp * pp != world_size:
        raise ValueError(f"dp*tp*pp = {dp * tp * pp} != world size {world_size}")
    t = Topology(world_size, rank, dp, tp, pp)
    t.dp_rank, t.pp_rank, t.tp_rank = t.coords(rank)
    t.tp_ranks = [t.rank_of(t.dp_rank, t.pp_rank, r) for r in range(tp)]
    t.dp_ranks = [t.rank_of(r, t.pp_rank, t.tp_rank) for r in range(dp)]
    if dist is not None and world_size > 1:
        t.tp_group = _own_group(dist, rank, [[t.rank_of(d, s, r) for r in range(tp)]
                                             for s in range(pp) for d in range(dp)])
        t.dp_group = _own_group(dist, rank, [[t.rank_of(d, s, r) for d in range(dp)]
                                             for s in range(pp) for r in range(tp)])
    return t


def _own_group(dist, rank, groups):
    """Creates every group (all ranks must, in one order) and returns the one holding `rank`;
    None for groups of one rank (their collectives are skipped)."""
    mine = None
    for ranks in groups:
        g = dist.new_group(ranks) if len(ranks) > 1 else None
        if rank in ranks:
            mine = g
    return mine
