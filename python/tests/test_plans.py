"""Every plan trains the same model to the same loss curve as one process.

In fp32 the loss of each of 20 steps, under each plan of a matrix (each mechanism alone and
combined, world sizes up to 8), is within 1e-5 relative of a one-process run on the same
global batch; a job moved through plans of different (d, t, p) and ZeRO stage by its sharded
checkpoints keeps the curve; a corrupted newest checkpoint falls back to the previous one.
Run:  cd python && /usr/bin/python3 -m unittest tests.test_plans -v
"""

import os
import shutil
import tempfile
import unittest

from tests import harness

STEPS = 20
TOLERANCE = 1e-5

# (name, plan): micro_batch is derived from the global batch (24).
ALONE = [
    ("micro-batching", dict(num_micro_batches=4)),
    ("recompute-selective", dict(recompute="selective")),
    ("recompute-full", dict(recompute="full")),
    ("dp2", dict(dp=2, num_micro_batches=2)),
    ("dp4", dict(dp=4)),
    ("tp2", dict(tp=2)),
    ("tp4", dict(tp=4)),
    ("tp2-sequence-parallel", dict(tp=2, sequence_parallel=1)),
    ("pp2-1f1b", dict(pp=2, num_micro_batches=4)),
    ("pp4-1f1b", dict(pp=4, num_micro_batches=4)),
    ("pp3-uneven", dict(pp=3, num_micro_batches=3)),
    ("pp2-interleaved", dict(pp=2, virtual_stages=2, num_micro_batches=4)),
    ("zero1", dict(dp=2, zero_stage=1)),
    ("zero2", dict(dp=2, zero_stage=2)),
    ("zero3", dict(dp=4, zero_stage=3)),
]
COMBINED = [
    ("d2-t2-p2-zero1-selective", dict(dp=2, tp=2, pp=2, num_micro_batches=2, zero_stage=1,
                                      recompute="selective")),
    ("d2-t2-sp-zero3-full", dict(dp=2, tp=2, sequence_parallel=1, zero_stage=3,
                                 recompute="full", num_micro_batches=2)),
    ("t2-p2-interleaved", dict(tp=2, pp=2, virtual_stages=2, num_micro_batches=4)),
    ("d2-p2-zero2-full", dict(dp=2, pp=2, zero_stage=2, num_micro_batches=2, recompute="full")),
    ("d2-t4-sp-zero2", dict(dp=2, tp=4, sequence_parallel=1, zero_stage=2)),
    ("d2-t2-p2-interleaved-zero1", dict(dp=2, tp=2, pp=2, virtual_stages=2,
                                        num_micro_batches=2, zero_stage=1)),
    ("d8-zero3", dict(dp=8, zero_stage=3)),
    ("t2-p4", dict(tp=2, pp=4, num_micro_batches=4)),
    ("d2-p2-zero3", dict(dp=2, pp=2, zero_stage=3, num_micro_batches=2)),
]


class PlanTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tessel-job-plans-")
        d = cls.dir("reference")
        codes = harness.run_plan({}, d, STEPS)
        assert codes == [0], codes
        cls.reference = harness.loss_curve(d)
        assert len(cls.reference) == STEPS

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def dir(cls, name):
        d = os.path.join(cls.tmp, name)
        os.makedirs(d)
        return d

    def assert_reference_curve(self, curve, what):
        self.assertEqual(len(curve), STEPS, what)
        for k, (a, b) in enumerate(zip(self.reference, curve), 1):
            self.assertLessEqual(abs(a - b), TOLERANCE * abs(a),
                                 f"{what}: step {k}: loss {b!r} != one process's {a!r}")

    def check_plans(self, plans):
        for name, plan in plans:
            with self.subTest(name):
                d = self.dir(name)
                codes = harness.run_plan(plan, d, STEPS)
                self.assertEqual(codes, [0] * harness.world_of(plan), f"{name}: {codes}")
                self.assert_reference_curve(harness.loss_curve(d), name)
                start = harness.read_metrics(d)[0]
                self.assertEqual(start["event"], "start")
                for key in ("dp", "tp", "pp", "virtual_stages", "zero_stage"):
                    self.assertEqual(start[key], plan.get(key, 1 if key != "zero_stage" else 0))

    def test_the_loss_falls(self):
        self.assertLess(self.reference[-1], self.reference[0] - 0.5)

    def test_each_mechanism_alone(self):
        self.check_plans(ALONE)

    def test_mechanisms_combined(self):
        self.check_plans(COMBINED)

    def test_one_job_through_four_plans(self):
        """(d, t, p, ZeRO) changes at each relaunch; the checkpoint is resharded each time."""
        d = self.dir("moves")
        segments = [(dict(dp=2, tp=2, zero_stage=1), 5),
                    (dict(pp=2, dp=2, num_micro_batches=2, zero_stage=0), 9),
                    (dict(tp=4, pp=2, num_micro_batches=2), 14),
                    (dict(dp=4, zero_stage=3), STEPS)]
        for launch, (plan, until) in enumerate(segments):
            codes = harness.run_plan(plan, d, until, TESSEL_LAUNCH=launch)
            self.assertEqual(codes, [0] * harness.world_of(plan), f"launch {launch}: {plan}")
        starts = [o for o in harness.read_metrics(d) if o.get("event") == "start"]
        self.assertEqual([(s["step"], s["resumed"]) for s in starts],
                         [(0, False), (5, True), (9, True), (14, True)])
        self.assert_reference_curve(harness.loss_curve(d), "moved through four plans")

    def test_corrupted_checkpoint_falls_back_to_the_previous_one(self):
        d = self.dir("corrupt")
        codes = harness.run_plan(dict(dp=2, zero_stage=2), d, 8,
                                 TESSEL_CHECKPOINT_INTERVAL_STEPS=3)
        self.assertEqual(codes, [0, 0])
        ckpt = os.path.join(d, "ckpt")
        newest = sorted(x for x in os.listdir(ckpt) if x.startswith("step-"))[-1]
        self.assertEqual(newest, "step-00000008")
        shard = sorted(x for x in os.listdir(os.path.join(ckpt, newest)) if x.startswith("shard"))[1]
        path = os.path.join(ckpt, newest, shard)
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            byte = f.read(1)
            f.seek(-1, os.SEEK_CUR)
            f.write(bytes([byte[0] ^ 0xFF]))
        codes = harness.run_plan(dict(tp=2, pp=2, num_micro_batches=2), d, STEPS, TESSEL_LAUNCH=1)
        self.assertEqual(codes, [0] * 4)
        starts = [o for o in harness.read_metrics(d) if o.get("event") == "start"]
        self.assertEqual(starts[-1]["step"], 6, "resumed from the checkpoint before the bad one")
        self.assert_reference_curve(harness.loss_curve(d), "after a corrupted checkpoint")


if __name__ == "__main__":
    unittest.main(verbosity=2)
