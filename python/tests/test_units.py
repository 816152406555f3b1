"""Unit tests of tessel_job's parts: the contract's refusals, the layer split, the schedules,
the topology's rank order, ZeRO-3's freeing of parameters.
Run:  cd python && /usr/bin/python3 -m unittest tests.test_units -v
"""

import unittest

from tests import harness  # noqa: F401  (puts tessel_job on the path)
from tessel_job.contract import ConfigError, Contract, check_shape
from tessel_job.pipeline import schedule, split_layers
from tessel_job.topology import make_topology


def contract(**plan):
    env = {"TESSEL_WORLD_SIZE": str(plan.pop("world", 1)), "SLURM_PROCID": "0",
           "MASTER_PORT": "29500", "TESSEL_GLOBAL_BATCH": str(plan.pop("global_batch", 24))}
    env.update({"TESSEL_" + k.upper(): str(v) for k, v in plan.items()})
    return Contract(env)


class ContractTest(unittest.TestCase):
    def refused(self, message, shape=(4, 4, 32, 64, 16), **plan):
        with self.assertRaises(ConfigError) as e:
            c = contract(**plan)
            check_shape(c, *shape)
        self.assertIn(message, str(e.exception))

    def test_refusals_name_the_variable_and_what_divides_what(self):
        self.refused("TESSEL_TP=3: heads (4) must be a multiple of tp", world=3, tp=3)
        self.refused("TESSEL_TP=2: vocab (63) must be a multiple of tp", world=2, tp=2,
                     shape=(4, 4, 32, 63, 16))
        self.refused("TESSEL_SEQUENCE_PARALLEL=1: seq_len (15) must be a multiple of tp (2)",
                     world=2, tp=2, sequence_parallel=1, shape=(4, 4, 32, 64, 15))
        self.refused("TESSEL_PP=8: 8 stages but the model has 4 layers", world=8, pp=8,
                     num_micro_batches=8)
        self.refused("TESSEL_PP=2 x TESSEL_VIRTUAL_STAGES=4: 8 stages", world=2, pp=2,
                     virtual_stages=4, num_micro_batches=4)
        self.refused("num_micro_batches (3) to be a multiple of pp (2)", world=2, pp=2,
                     virtual_stages=2, num_micro_batches=3)
        self.refused("interleaving needs TESSEL_PP >= 2", world=1, virtual_stages=2)
        self.refused("dp*tp*pp = 8 but the world size is 4", world=4, dp=2, tp=2, pp=2)
        self.refused("tp*pp = 3 does not divide the world size 4", world=4, tp=3)
        self.refused("TESSEL_SEQUENCE_PARALLEL=2: expected 0 or 1", sequence_parallel=2)
        self.refused("TESSEL_ZERO_STAGE=4: expected 0..3", zero_stage=4)
        self.refused("TESSEL_DIST_BACKEND='mpi': expected auto, nccl or gloo",
                     dist_backend="mpi")

    def test_dp_defaults_to_what_tp_and_pp_leave(self):
        c = contract(world=8, tp=2, pp=2, num_micro_batches=3)
        self.assertEqual((c.dp, c.micro_batch), (2, 4))


class SplitAndScheduleTest(unittest.TestCase):
    def test_split_is_the_estimators(self):
        # floor(L/n) each, the first L mod n stages one more (src/perf/estimator.cc).
        self.assertEqual(split_layers(7, 3), [(0, 3), (3, 5), (5, 7)])
        self.assertEqual(split_layers(8, 4), [(0, 2), (2, 4), (4, 6), (6, 8)])
        self.assertEqual(split_layers(5, 5), [(i, i + 1) for i in range(5)])

    def test_every_operation_once_and_forward_before_backward(self):
        for p, v, m in [(1, 1, 3), (2, 1, 1), (2, 1, 5), (4, 1, 8), (3, 1, 2), (2, 2, 2),
                        (2, 2, 6), (4, 2, 8), (3, 3, 6)]:
            for s in range(p):
                ops = schedule(s, p, v, m)
                want = {(k, c, i) for k in "FB" for c in range(v) for i in range(m)}
                self.assertEqual(sorted(ops), sorted(want), (p, v, m, s))
                for c in range(v):
                    for i in range(m):
                        self.assertLess(ops.index(("F", c, i)), ops.index(("B", c, i)))

    def test_1f1b_keeps_at_most_p_minus_s_micro_batches_in_flight(self):
        p, m = 4, 8
        for s in range(p):
            live, peak = 0, 0
            for kind, _, _ in schedule(s, p, 1, m):
                live += 1 if kind == "F" else -1
                peak = max(peak, live)
            self.assertEqual(peak, p - s)

    def test_interleaving_needs_a_multiple_of_p(self):
        with self.assertRaises(ValueError):
            schedule(0, 2, 2, 3)


class TopologyTest(unittest.TestCase):
    def test_megatron_order_tp_fastest_then_dp_then_pp(self):
        t = make_topology(8, 5, dp=2, tp=2, pp=2)
        self.assertEqual((t.dp_rank, t.pp_rank, t.tp_rank), (0, 1, 1))
        self.assertEqual(t.tp_ranks, [4, 5])
        self.assertEqual(t.dp_ranks, [5, 7])
        for r in range(8):
            self.assertEqual(t.rank_of(*t.coords(r)), r)


class Zero3Test(unittest.TestCase):
    def test_parameters_are_freed_after_each_unit(self):
        import torch
        from tessel_job.gpt import GPTJob
        from tessel_job.zero import ShardedOptimizer
        spec = GPTJob(harness.SHAPE)
        chunk = spec.build_chunk(0, 4, True, True, None, False, "none")
        spec.init([chunk], 1, 1, 0)
        opt = ShardedOptimizer([chunk], make_topology(1, 0, 1, 1, 1), 3, spec.make_optimizer)
        sizes = []
        for unit in chunk.units():
            unit.register_forward_hook(
                lambda m, i, o: sizes.append(sum(p.numel() for p in m.parameters())))
        x, y = spec.batch(0, 2)
        loss = spec.loss(chunk(x), y, None).sum()
        self.assertEqual(sizes, [0] * len(chunk.units()), "a unit kept its parameters")
        loss.backward()
        self.assertEqual(sum(p.numel() for p in chunk.parameters()), 0)
        self.assertTrue(all(u.master.grad is not None for u in opt.units))
        opt.step()


if __name__ == "__main__":
    unittest.main(verbosity=2)
