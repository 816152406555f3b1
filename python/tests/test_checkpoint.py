"""Tests for tessel_job.checkpoint: round trip and resharding, atomic manifest,
checksum fallback, coverage errors, pruning, LATEST as a hint, failed ranks."""
import json
import os
import pickle
import shutil
import tempfile
import threading
import unittest
from unittest import mock

import torch

from tessel_job import checkpoint as ck
from tessel_job.checkpoint import CheckpointError, Piece

_INT_OF = {torch.float32: torch.int32, torch.float64: torch.int64, torch.float16: torch.int16,
           torch.bfloat16: torch.int16, torch.int64: torch.int64}


def bits(t):
    """Bit pattern of t, so that NaN and -0.0 compare exactly."""
    return t.contiguous().view(_INT_OF[t.dtype])


class SimGroup:
    """W ranks as threads; objects pass through pickle as between processes."""

    def __init__(self, world, timeout=5.0):
        self.world, self.bar = world, threading.Barrier(world, timeout=timeout)
        self.slots, self.value = [None] * world, None

    def collectives(self, rank):
        def gather(obj):
            self.slots[rank] = pickle.dumps(obj)
            self.bar.wait()
            out = [pickle.loads(s) for s in self.slots] if rank == 0 else None
            self.bar.wait()
            return out

        def broadcast(obj):
            if rank == 0:
                self.value = pickle.dumps(obj)
            self.bar.wait()
            out = pickle.loads(self.value)
            self.bar.wait()
            return out
        return gather, broadcast


def run_ranks(directory, step, rank_pieces, meta=None, keep=2, extras=None, timeout=10.0):
    """Runs save() on len(rank_pieces) threads; returns per-rank result (path or exception)."""
    world = len(rank_pieces)
    group, results = SimGroup(world), [None] * world

    def body(r):
        g, b = group.collectives(r)
        try:
            results[r] = ck.save(directory, step, r, world, rank_pieces[r], meta or {"step": step}, g, b,
                                 keep=keep, extra=(extras or {}).get(r))
        except BaseException as e:  # noqa: BLE001
            results[r] = e
    threads = [threading.Thread(target=body, args=(r,), daemon=True) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a rank hung"
    return results


def make_tensors(seed):
    g = torch.Generator().manual_seed(seed)
    w1 = torch.randn(8, 6, generator=g)
    w1[0, 0], w1[0, 1] = float("nan"), -0.0
    return {
        "model/w1": w1,                                                        # TP dim 0
        "model/w2": torch.randn(5, 12, generator=g, dtype=torch.float64),      # TP dim 1
        "optim/exp_avg/w1": torch.randn(8, 6, generator=g).to(torch.bfloat16),  # TP dim 0
        "model/ln.weight": torch.randn(7, generator=g).half(),                 # replicated
        "optim/step": torch.tensor(1234, dtype=torch.int64),                   # scalar
    }


PLAN_A_TP = {"model/w1": 0, "model/w2": 1, "optim/exp_avg/w1": 0}


def plan_a(full, world=4):
    """2 TP slices, each cut into 3 uneven ZeRO flat ranges, dealt out to `world` ranks;
    the replicated tensor in 2 ranges on ranks 0 and 3; the scalar on the last rank."""
    ranks = [[] for _ in range(world)]
    k = 0
    for name, tp_dim in PLAN_A_TP.items():
        t = full[name]
        for i in range(2):
            flat = t.chunk(2, tp_dim)[i].contiguous().reshape(-1)
            cuts = [0, 5, flat.numel() // 2 + 1, flat.numel()]
            for lo, hi in zip(cuts, cuts[1:]):
                ranks[k % world].append(Piece(name, tuple(t.shape), tp_dim, i, 2, lo, hi, flat[lo:hi]))
                k += 1
    ln = full["model/ln.weight"]
    ranks[0].append(Piece("model/ln.weight", (7,), None, 0, 1, 0, 3, ln[:3]))
    ranks[3 % world].append(Piece("model/ln.weight", (7,), None, 0, 1, 3, 7, ln[3:]))
    ranks[-1].append(Piece("optim/step", (), None, 0, 1, 0, 1, full["optim/step"]))
    return ranks


class CheckpointTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ckpt-test-")
        self.logs = []
        self.addCleanup(shutil.rmtree, self.dir, True)

    def save(self, step, seed=None, pieces=None, **kw):
        full = make_tensors(step if seed is None else seed)
        res = run_ranks(self.dir, step, pieces if pieces is not None else plan_a(full), **kw)
        return full, res

    def load(self, **kw):
        return ck.load(self.dir, log=self.logs.append, **kw)

    def assert_ok(self, res):
        for r in res:
            self.assertIsInstance(r, str, r)

    def assert_all_raise(self, res, text=""):
        for r in res:
            self.assertIsInstance(r, CheckpointError, r)
            self.assertIn(text, str(r))

    def assert_same(self, a, b):
        self.assertEqual(a.dtype, b.dtype)
        self.assertEqual(tuple(a.shape), tuple(b.shape))
        self.assertTrue(torch.equal(bits(a), bits(b)))

    def shard_path(self, step, rank, world=4):
        return os.path.join(self.dir, ck.step_dirname(step), ck.shard_filename(rank, world))

    # --- round trip and resharding -------------------------------------------------------
    def test_round_trip_and_reshard(self):
        full, res = self.save(7, meta={"samples": 896, "plan": "tp2-dp2"},
                              extras={0: {"rng": torch.get_rng_state()}, 2: [1, 2]})
        self.assert_ok(res)
        c = self.load()
        self.assertEqual((c.step, c.meta, c.world_size), (7, {"samples": 896, "plan": "tp2-dp2"}, 4))
        self.assertEqual(c.names(), sorted(full))
        for name, t in full.items():
            self.assert_same(c.full(name), t)
        # plan B: TP 4 along the same dims, then TP 3 along dim 1 of w2, ZeRO ranges of a slice
        for name, d in PLAN_A_TP.items():
            n = full[name].shape[d]
            for i in range(4 if n % 4 == 0 else 3):
                k = 4 if n % 4 == 0 else 3
                self.assert_same(c.shard(name, d, i, k), full[name].narrow(d, i * n // k, n // k).contiguous())
        s = c.shard("model/w2", 1, 2, 3).reshape(-1)
        self.assert_same(s[3:11], full["model/w2"][:, 8:12].reshape(-1)[3:11])
        self.assert_same(c.shard("model/ln.weight", None, 0, 1), full["model/ln.weight"])
        self.assertTrue(torch.equal(c.extra(0)["rng"], torch.get_rng_state()))
        self.assertEqual((c.extra(2), c.extra(1)), ([1, 2], None))
        with self.assertRaisesRegex(KeyError, "model/nope.*model/ln.weight"):
            c.full("model/nope")

    def test_single_process_and_rank_without_pieces(self):
        full = make_tensors(1)
        ck.save(self.dir, 1, 0, 1, [p for r in plan_a(full) for p in r], {"a": 1})
        self.assert_same(self.load().full("model/w1"), full["model/w1"])
        pieces = plan_a(full, world=2) + [[]]                          # rank 2 holds nothing
        self.assert_ok(run_ranks(self.dir, 2, pieces))
        files = sorted(os.listdir(os.path.join(self.dir, ck.step_dirname(2))))
        self.assertEqual(files, ["MANIFEST.json", ck.shard_filename(0, 3), ck.shard_filename(1, 3)])
        c = self.load()
        for name, t in full.items():
            self.assert_same(c.full(name), t)

    def test_views_are_saved_compactly_and_housekeeping_cannot_fail_a_save(self):
        big = torch.arange(100000, dtype=torch.float32)
        ck.save(self.dir, 1, 0, 1, [Piece("v", (10,), None, 0, 1, 0, 10, big[500:510])], {})
        self.assertLess(os.path.getsize(self.shard_path(1, 0, 1)), 10000)
        self.assert_same(self.load().full("v"), big[500:510])
        with mock.patch.object(ck, "_remove_checkpoint_dir", side_effect=OSError("read-only")):
            with self.assertWarnsRegex(UserWarning, "complete.*read-only"):
                for step in (2, 3):
                    ck.save(self.dir, step, 0, 1, [Piece("v", (10,), None, 0, 1, 0, 10, big[:10])], {}, keep=1)
        self.assertEqual(self.load().step, 3)

    # --- manifest written last -----------------------------------------------------------
    def test_crash_before_manifest_leaves_previous(self):
        self.assert_ok(self.save(1)[1])

        class Crash(BaseException):
            pass
        with mock.patch.object(ck, "_publish_manifest", side_effect=Crash):
            with self.assertRaises(Crash):
                ck.save(self.dir, 2, 0, 1, [p for r in plan_a(make_tensors(2)) for p in r], {})
        self.assertEqual([(s, c) for s, _, c in ck.list_checkpoints(self.dir)], [(1, True), (2, False)])
        self.assertTrue(os.path.exists(self.shard_path(2, 0, 1)))
        self.assertEqual(self.load().step, 1)

    def test_manifest_rename_failure_raises_everywhere(self):
        self.assert_ok(self.save(1)[1])
        real = os.replace

        def replace(src, dst):
            if dst.endswith(ck.MANIFEST):
                raise OSError(28, "No space left on device")
            return real(src, dst)
        with mock.patch.object(ck.os, "replace", side_effect=replace):
            full, res = self.save(2)
        self.assert_all_raise(res, "No space left")
        self.assertFalse(os.path.exists(os.path.join(self.dir, ck.step_dirname(2), ck.MANIFEST)))
        self.assertEqual(self.load().step, 1)
        _, res = self.save(3)                                # the incomplete older step is removed
        self.assertEqual([s for s, _, _ in ck.list_checkpoints(self.dir)], [1, 3])

    def test_resave_same_step_removes_stale_manifest_first(self):
        self.assert_ok(self.save(1)[1])
        self.assert_ok(self.save(2)[1])
        with mock.patch.object(ck, "_publish_manifest", side_effect=OSError("crash")):
            self.assert_all_raise(run_ranks(self.dir, 2, plan_a(make_tensors(9), world=3)))
        self.assertEqual(self.load().step, 1)                # not step 2's old manifest over new shards
        full = make_tensors(9)
        self.assert_ok(run_ranks(self.dir, 2, plan_a(full, world=3)))
        c = self.load()
        self.assertEqual((c.step, c.world_size), (2, 3))
        self.assertEqual(sorted(os.listdir(c.path)), sorted([ck.MANIFEST] + [ck.shard_filename(r, 3) for r in range(3)]))
        self.assert_same(c.full("optim/exp_avg/w1"), full["optim/exp_avg/w1"])

    # --- damaged files -------------------------------------------------------------------
    def damage_and_check(self, damage, why):
        self.assert_ok(self.save(1)[1])
        self.assert_ok(self.save(2)[1])
        damage(self.shard_path(2, 1))
        c = self.load()
        self.assertEqual(c.step, 1)
        self.assertEqual(len(self.logs), 1, self.logs)
        self.assertIn(ck.shard_filename(1, 4), self.logs[0])
        self.assertIn(why, self.logs[0])
        self.assert_same(c.full("model/w1"), make_tensors(1)["model/w1"])

    def test_corrupted_shard_falls_back(self):
        def flip(path):
            with open(path, "r+b") as f:
                f.seek(os.path.getsize(path) // 2)
                b = f.read(1)
                f.seek(-1, 1)
                f.write(bytes([b[0] ^ 0x01]))
        self.damage_and_check(flip, "SHA-256")

    def test_truncated_shard_falls_back(self):
        self.damage_and_check(lambda p: os.truncate(p, os.path.getsize(p) - 10), "truncated")

    def test_missing_shard_falls_back(self):
        self.damage_and_check(os.remove, "missing")

    def test_garbled_manifest_skipped_and_none_when_all_bad(self):
        self.assert_ok(self.save(1)[1])
        self.assert_ok(self.save(2)[1])
        with open(os.path.join(self.dir, ck.step_dirname(2), ck.MANIFEST), "w") as f:
            f.write('{"format": "tessel-checkp')
        self.assertEqual(self.load().step, 1)
        self.assertIn("unreadable manifest", self.logs[0])
        os.remove(self.shard_path(1, 0))
        self.logs.clear()
        self.assertIsNone(self.load())
        self.assertEqual(len(self.logs), 3, self.logs)
        self.assertIn("no usable checkpoint", self.logs[-1])
        self.assertIsNone(ck.load(os.path.join(self.dir, "nothing"), log=self.fail))

    # --- coverage errors -----------------------------------------------------------------
    def coverage_error(self, edit, text):
        self.assert_ok(self.save(1)[1])
        full = make_tensors(2)
        pieces = plan_a(full)
        edit(pieces, full)
        self.assert_all_raise(run_ranks(self.dir, 2, pieces), text)
        self.assertEqual([(s, c) for s, _, c in ck.list_checkpoints(self.dir)], [(1, True), (2, False)])
        self.assertEqual(self.load().step, 1)

    def test_gap(self):
        self.coverage_error(lambda ps, f: ps[0].pop(0), "gap")

    def test_overlap(self):
        def edit(ps, full):
            p = ps[0][0]
            ps[1].append(Piece(p.name, p.shape, p.tp_dim, p.tp_index, p.tp_size, 2, 4, p.tensor[2:4]))
        self.coverage_error(edit, "overlap")

    def test_missing_tp_slice(self):
        def edit(ps, full):
            for r in range(4):
                ps[r] = [p for p in ps[r] if not (p.name == "model/w2" and p.tp_index == 1)]
        self.coverage_error(edit, "TP slice 1 of 2 has no pieces")

    def test_inconsistent_shape(self):
        def edit(ps, full):
            ps[2][0].shape = (9, 6) if ps[2][0].shape == (8, 6) else (6, 9)
        self.coverage_error(edit, "disagree")

    def test_bad_piece_size_on_one_rank(self):
        def edit(ps, full):
            ps[3][0].hi += 1
        self.coverage_error(edit, "rank 3")

    # --- pruning and LATEST --------------------------------------------------------------
    def test_keep_and_latest_is_only_a_hint(self):
        os.makedirs(os.path.join(self.dir, ck.step_dirname(2)))        # incomplete, older
        os.makedirs(os.path.join(self.dir, ck.step_dirname(99)))       # incomplete, newer
        for step in (1, 3, 4, 5):
            self.assert_ok(self.save(step)[1])
        self.assertEqual([(s, c) for s, _, c in ck.list_checkpoints(self.dir)], [(4, True), (5, True), (99, False)])
        latest = os.path.join(self.dir, ck.LATEST)
        with open(latest) as f:
            self.assertEqual(f.read().strip(), ck.step_dirname(5))
        for content in (None, "garbage\x00", ck.step_dirname(4)):
            if content is None:
                os.remove(latest)
            else:
                with open(latest, "w") as f:
                    f.write(content)
            c = self.load()
            self.assertEqual(c.step, 5)
            self.assert_same(c.full("model/w2"), make_tensors(5)["model/w2"])
        self.assert_ok(self.save(6, keep=None)[1])
        self.assertEqual([s for s, _, _ in ck.list_checkpoints(self.dir)], [4, 5, 6, 99])
        self.assertEqual(self.load(step=4).step, 4)

    # --- failed ranks --------------------------------------------------------------------
    def test_failed_write_on_one_rank_raises_everywhere(self):
        self.assert_ok(self.save(1)[1])
        real = ck._write_shard

        def write(step_dir, rank, world, tensors, extra):
            if rank == 2:
                raise OSError(5, "Input/output error")
            return real(step_dir, rank, world, tensors, extra)
        with mock.patch.object(ck, "_write_shard", side_effect=write):
            _, res = self.save(2)
        self.assert_all_raise(res, "rank 2")
        self.assertFalse(os.path.exists(os.path.join(self.dir, ck.step_dirname(2), ck.MANIFEST)))
        self.assertEqual(self.load().step, 1)
        self.assert_ok(self.save(2)[1])                       # a retry of the same step works
        self.assertEqual(self.load().step, 2)

    def test_prepare_failure_on_rank0_raises_everywhere(self):
        self.assert_all_raise(self.save(1, meta={"bad": object()})[1], "rank 0")
        self.assertEqual(ck.list_checkpoints(self.dir), [])

    def test_torch_distributed_adapter(self):
        import torch.distributed as dist
        init = "file://" + os.path.join(self.dir, "pg")
        dist.init_process_group("gloo", init_method=init, rank=0, world_size=1)
        self.addCleanup(dist.destroy_process_group)
        full = make_tensors(3)
        ck.save(self.dir, 3, 0, 1, [p for r in plan_a(full) for p in r], {}, *ck.torch_collectives())
        with open(os.path.join(self.dir, ck.step_dirname(3), ck.MANIFEST)) as f:
            self.assertEqual(json.load(f)["tensors"]["model/w1"]["tp_size"], 2)
        self.assert_same(self.load().full("optim/step"), full["optim/step"])


if __name__ == "__main__":
    unittest.main()
