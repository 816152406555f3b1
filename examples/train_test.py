#!/usr/bin/python3
"""Tests of examples/train.py through tessel's environment contract.

Run from the repository root:  /usr/bin/python3 examples/train_test.py
Every run is real: N processes of train.py, each with SLURM_PROCID etc. set as srun would set
them, rendezvous over gloo on 127.0.0.1 at a free port. A small model keeps the whole file
under about a minute on two busy cores. Standard library only (torch is used by train.py).
"""

import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train.py")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# A small shape: the property under test does not depend on size.
SHAPE = ["--layers", "4", "--hidden", "32", "--heads", "4", "--seq-len", "16", "--vocab", "64"]
GLOBAL_BATCH = 12          # divisible by 1, 2, 3 and 4 replicas
STEPS = 16                 # TESSEL_TOTAL_ITERATIONS of the loss-curve runs
# The plan of each world size the loss-curve tests launch (data-parallel unless a test names
# another): num_micro_batches per world size; micro_batch = GLOBAL_BATCH / (dp * n).
SPLIT = {1: 2, 2: 2, 3: 2, 4: 1}
# Throttle: each rank sleeps this long per sample per step, so a step lasts long enough
# (>= 0.05 s) for the test to signal a run mid-way.
THROTTLE = ["--sim-seconds-per-sample", "0.01"]
TIMEOUT_S = 120

# The plans of the resumed launches: a pipeline of three uneven stages, then tensor- and
# data-parallel with ZeRO-3.
PLAN_3 = {"pp": 3, "num_micro_batches": 3}
PLAN_4 = {"dp": 2, "tp": 2, "zero_stage": 3, "recompute": "selective", "num_micro_batches": 2}
# Four-process plans mixing t, p, d, ZeRO 1-3, recompute and micro-batching, run by hand
# through the contract (test_four_process_plans): each gives the one-process curve.
FOUR_PROCESS_PLANS = {
    "t2-p2-full": {"tp": 2, "pp": 2, "num_micro_batches": 2, "recompute": "full"},
    "d2-t2-zero1-selective": {"dp": 2, "tp": 2, "zero_stage": 1, "recompute": "selective",
                              "num_micro_batches": 2},
    "d2-p2-zero2": {"dp": 2, "pp": 2, "zero_stage": 2, "num_micro_batches": 3},
    "p2-interleaved-d2-zero3": {"dp": 2, "pp": 2, "virtual_stages": 2, "zero_stage": 3,
                                "num_micro_batches": 2},
}

STEP_KEYS = {"step", "step_time_s", "samples", "loss", "time", "world_size"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def contract_env(world, rank, workdir, metrics, ckpt, launch=0, total=STEPS, recompute="none",
                 plan=None, **overrides):
    """The environment tessel serve gives rank `rank` of a `world`-process launch. `plan`
    (dp, tp, pp, virtual_stages, num_micro_batches, zero_stage) defaults to data-parallel."""
    plan = dict(plan or {"dp": world, "num_micro_batches": SPLIT.get(world, 1)})
    tp, pp = plan.get("tp", 1), plan.get("pp", 1)
    dp = plan.get("dp", world // (tp * pp))
    nmb = plan.get("num_micro_batches", 1)
    mb = GLOBAL_BATCH // (dp * nmb)
    plan = {"dp": dp, "tp": tp, "pp": pp, "virtual_stages": plan.get("virtual_stages", 1),
            "micro_batch": mb, "num_micro_batches": nmb, "global_batch": GLOBAL_BATCH,
            "recompute": plan.get("recompute", recompute),
            "zero_stage": plan.get("zero_stage", 0), "precision": "fp32",
            "gpu_type": "a100-80g", "gpus": world, "nodes": 1}
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TESSEL_", "SLURM_", "MASTER_"))}
    env.update({
        "SLURM_PROCID": str(rank), "SLURM_LOCALID": str(rank), "SLURM_NTASKS": str(world),
        "TESSEL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1",
        "TESSEL_JOB_ID": "7", "TESSEL_JOB_NAME": "test-job", "TESSEL_LAUNCH": str(launch),
        "TESSEL_DP": str(dp), "TESSEL_TP": str(tp), "TESSEL_PP": str(pp),
        "TESSEL_MICRO_BATCH": str(mb), "TESSEL_NUM_MICRO_BATCHES": str(nmb),
        "TESSEL_GLOBAL_BATCH": str(GLOBAL_BATCH), "TESSEL_RECOMPUTE": plan["recompute"],
        "TESSEL_ZERO_STAGE": str(plan["zero_stage"]), "TESSEL_PRECISION": "fp32",
        "TESSEL_VIRTUAL_STAGES": str(plan["virtual_stages"]), "TESSEL_GPU_TYPE": "a100-80g",
        "TESSEL_PLAN_JSON": json.dumps(plan), "TESSEL_TOTAL_ITERATIONS": str(total),
        "TESSEL_CHECKPOINT_DIR": ckpt, "TESSEL_CHECKPOINT_INTERVAL_S": "600",
        "TESSEL_METRICS_FILE": metrics,
    })
    for k, v in overrides.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


class Launch:
    """One launch of `world` processes (what one srun step would start)."""

    def __init__(self, workdir, world, metrics, ckpt, launch=0, extra_args=(), **contract):
        self.workdir, self.world, self.metrics = workdir, world, metrics
        port = free_port()
        self.procs, self.logs = [], []
        for rank in range(world):
            env = contract_env(world, rank, workdir, metrics, ckpt, launch, MASTER_PORT=port,
                               **contract)
            log = open(os.path.join(workdir, f"launch{launch}-w{world}-r{rank}.log"), "w+")
            self.logs.append(log)
            self.procs.append(subprocess.Popen(
                [PYTHON, TRAIN, "--log-every", "0", *SHAPE, *THROTTLE, *extra_args],
                env=env, stdout=log, stderr=subprocess.STDOUT, cwd=workdir))

    def wait_for_step(self, step):
        """Blocks until the metrics file holds a step line >= step."""
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                raise AssertionError(f"a process ended before step {step}:\n{self.output()}")
            if os.path.exists(self.metrics):
                with open(self.metrics) as f:
                    for line in f:
                        obj = json.loads(line)
                        if obj.get("step", 0) >= step and "step_time_s" in obj:
                            return
            time.sleep(0.02)
        raise AssertionError(f"no step {step} within {TIMEOUT_S} s:\n{self.output()}")

    def wait_for_handlers(self, sig):
        """Blocks until every process catches `sig` (Linux: SigCgt in /proc/PID/status)."""
        deadline = time.monotonic() + TIMEOUT_S
        pending = list(self.procs)
        while pending and time.monotonic() < deadline:
            for p in list(pending):
                with open(f"/proc/{p.pid}/status") as f:
                    caught = [l for l in f if l.startswith("SigCgt:")][0].split()[1]
                if int(caught, 16) >> (sig - 1) & 1:
                    pending.remove(p)
            time.sleep(0.005)
        if pending:
            raise AssertionError(f"signal handlers not installed in {TIMEOUT_S} s")

    def signal(self, sig, ranks):
        for r in ranks:
            self.procs[r].send_signal(sig)

    def wait(self):
        try:
            codes = [p.wait(timeout=TIMEOUT_S) for p in self.procs]
        except subprocess.TimeoutExpired:
            for p in self.procs:
                p.kill()
            raise AssertionError(f"launch did not finish in {TIMEOUT_S} s:\n{self.output()}")
        return codes

    def output(self):
        out = []
        for r, log in enumerate(self.logs):
            log.flush()
            log.seek(0)
            out.append(f"--- rank {r} ---\n{log.read()}")
        return "\n".join(out)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in self.logs:
            log.close()


def complete_checkpoints(ckpt):
    """Steps of the complete checkpoints in a checkpoint directory (a MANIFEST.json each)."""
    if not os.path.isdir(ckpt):
        return []
    return sorted(int(n[len("step-"):]) for n in os.listdir(ckpt)
                  if n.startswith("step-") and os.path.exists(os.path.join(ckpt, n, "MANIFEST.json")))


def read_metrics(path):
    """All lines of a metrics file, each parsed; fails on a line that is not a JSON object."""
    out = []
    with open(path) as f:
        text = f.read()
    assert text.endswith("\n"), "metrics file does not end in a whole line"
    for n, line in enumerate(text.splitlines(), 1):
        obj = json.loads(line)
        assert isinstance(obj, dict), f"line {n} is not a JSON object: {line}"
        out.append(obj)
    return out


def step_lines(lines):
    return [o for o in lines if "step_time_s" in o and not o.get("profile")]


class TrainTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="tessel-train-test-")
        cls.launches = []
        # Independent launches run side by side (own directories and ports) to save time on
        # a busy machine; the tests below check their results.
        # The reference: an uninterrupted 2-process run.
        cls.ref_dir = cls._dir("ref")
        ref = cls._launch(cls.ref_dir, 2, launch=0)
        # A stop signal as soon as the handlers are installed, while torch is still being
        # imported (the metrics file appears only after that).
        cls.early_dir = cls._dir("early")
        early = cls._launch(cls.early_dir, 2, launch=0)
        early.wait_for_handlers(signal.SIGUSR1)
        cls.early_signalled_before_start = not os.path.exists(
            os.path.join(cls.early_dir, "metrics.jsonl"))
        early.signal(signal.SIGUSR1, [0, 1])
        # The reference job stopped by SIGUSR1 on every rank (as `scancel --signal=USR1` does).
        cls.stop_dir = cls._dir("stop")
        run = cls._launch(cls.stop_dir, 2, launch=0)
        run.wait_for_step(4)
        run.signal(signal.SIGUSR1, [0, 1])
        cls.stop_codes, cls.stop_output = run.wait(), run.output()
        cls.resume1 = cls.resume3_error = None
        if cls.stop_codes == [85, 85]:
            cls.first_stop = [o for o in read_metrics(os.path.join(cls.stop_dir, "metrics.jsonl"))
                              if o.get("event") == "checkpoint"][0]["step"]
            # Resumed with one process (test_resume_with_one_process checks it) and, side by
            # side, with three processes, stopped by SIGTERM reaching only rank 2
            # (test_resume_with_three_then_four_processes checks it and resumes with four).
            cls.resume1_dir = cls.branch_from_stop("resume1")
            cls.resume1 = cls._launch(cls.resume1_dir, 1, launch=1, recompute="full")
            cls.resume34_dir = cls.branch_from_stop("resume34")
            run = cls._launch(cls.resume34_dir, 3, launch=1, plan=PLAN_3)
            try:
                run.wait_for_step(cls.first_stop + 3)
            except AssertionError as e:
                cls.resume3_error = str(e)
            run.signal(signal.SIGTERM, [2])
            cls.resume3_codes, cls.resume3_output = run.wait(), run.output()
        cls.early_codes, cls.early_output = early.wait(), early.output()
        cls.ref_codes, cls.ref_output = ref.wait(), ref.output()

    @classmethod
    def tearDownClass(cls):
        for launch in cls.launches:
            launch.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def _dir(cls, name):
        d = os.path.join(cls.tmp, name)
        os.makedirs(d)
        return d

    @classmethod
    def _launch(cls, d, world, launch, **kw):
        run = Launch(d, world, os.path.join(d, "metrics.jsonl"), os.path.join(d, "ckpt"),
                     launch, **kw)
        cls.launches.append(run)
        return run

    @classmethod
    def branch_from_stop(cls, name):
        """A copy of the stopped run's checkpoint and metrics, to resume independently."""
        d = os.path.join(cls.tmp, name)
        shutil.copytree(cls.stop_dir, d, ignore=shutil.ignore_patterns("*.log"))
        return d

    def reference_losses(self):
        return [o["loss"] for o in step_lines(read_metrics(os.path.join(self.ref_dir,
                                                                        "metrics.jsonl")))]

    def assert_step_line(self, o, world):
        self.assertEqual(set(o), STEP_KEYS, o)
        self.assertIsInstance(o["step"], int)
        self.assertIsInstance(o["step_time_s"], float)
        self.assertGreater(o["step_time_s"], 0)
        self.assertEqual(o["samples"], GLOBAL_BATCH)
        self.assertIsInstance(o["loss"], float)
        self.assertGreater(o["time"], 1.6e9)
        self.assertEqual(o["world_size"], world)

    def assert_same_curve(self, lines):
        """Steps 1..STEPS exactly once each, losses equal to the reference's within 1e-5."""
        steps = [o["step"] for o in step_lines(lines)]
        self.assertEqual(steps, list(range(1, STEPS + 1)), "steps skipped or repeated")
        ref = self.reference_losses()
        got = [o["loss"] for o in step_lines(lines)]
        for k, (a, b) in enumerate(zip(ref, got), 1):
            self.assertLessEqual(abs(a - b), 1e-5 * abs(a), f"step {k}: loss {b} != {a}")
        self.assertEqual(lines[-1], {"event": "done", "step": STEPS, "time": lines[-1]["time"]})

    # (1) and (5): an uninterrupted run; its metrics are whole JSON lines with the fields.
    def test_uninterrupted_run(self):
        self.assertEqual(self.ref_codes, [0, 0], self.ref_output)
        lines = read_metrics(os.path.join(self.ref_dir, "metrics.jsonl"))
        self.assertEqual(lines[0]["event"], "start")
        self.assertEqual(lines[0]["step"], 0)
        self.assertFalse(lines[0]["resumed"])
        steps = step_lines(lines)
        self.assertEqual([o["step"] for o in steps], list(range(1, STEPS + 1)))
        for o in steps:
            self.assert_step_line(o, 2)
        times = [o["time"] for o in steps]
        self.assertEqual(times, sorted(times))
        # The synthetic data is learnable: the loss falls visibly (ln 64 = 4.16 at the start).
        self.assertLess(steps[-1]["loss"], steps[0]["loss"] - 0.5)
        self.assertEqual(lines[-2], {"event": "checkpoint", "step": STEPS,
                                     "time": lines[-2]["time"]})
        self.assertEqual(lines[-1]["event"], "done")
        self.assertEqual(lines[-1]["step"], STEPS)
        self.assertEqual(complete_checkpoints(os.path.join(self.ref_dir, "ckpt"))[-1], STEPS)

    # (2) SIGUSR1 on every rank: exit 85 with an atomic checkpoint at the last step.
    def test_stop_writes_checkpoint_and_exits_85(self):
        self.assertEqual(self.stop_codes, [85, 85], self.stop_output)
        lines = read_metrics(os.path.join(self.stop_dir, "metrics.jsonl"))
        steps = [o["step"] for o in step_lines(lines)]
        self.assertGreaterEqual(len(steps), 4)
        self.assertLess(len(steps), STEPS, "the signal came too late to test a resume")
        self.assertEqual(steps, list(range(1, len(steps) + 1)))
        self.assertEqual(lines[-1]["event"], "checkpoint")
        self.assertEqual(lines[-1]["step"], steps[-1])
        ckpt = os.path.join(self.stop_dir, "ckpt")
        self.assertEqual(complete_checkpoints(ckpt), [steps[-1]])
        step_dir = os.path.join(ckpt, "step-%08d" % steps[-1])
        self.assertEqual(sorted(os.listdir(step_dir)),
                         ["MANIFEST.json", "shard-00000-of-00002.pt"],
                         "ZeRO 0: replica 0 writes the shard, no temporary file is left")

    # (2) ... resumed with 1 process: the same loss curve, no step skipped or repeated. This
    # launch also recomputes activations (TESSEL_RECOMPUTE=full), which must not change it.
    def test_resume_with_one_process(self):
        self.assertEqual(self.stop_codes, [85, 85], self.stop_output)
        d, run = self.resume1_dir, self.resume1
        self.assertEqual(run.wait(), [0], run.output())
        lines = read_metrics(os.path.join(d, "metrics.jsonl"))
        stopped_at = [o for o in lines if o.get("event") == "checkpoint"][0]["step"]
        starts = [o for o in lines if o.get("event") == "start"]
        self.assertEqual([(s["step"], s["resumed"], s["launch"], s["world_size"], s["recompute"])
                          for s in starts],
                         [(0, False, 0, 2, "none"), (stopped_at, True, 1, 1, "full")])
        self.assert_same_curve(lines)
        for o in step_lines(lines):
            self.assertEqual(o["world_size"], 2 if o["step"] <= stopped_at else 1)

    # (2) ... resumed with 3 processes as a 3-stage pipeline (layers split 2+1+1), stopped by
    # SIGTERM reaching only rank 2 (all ranks must still stop), resumed with 4 processes under
    # (d2, t2, ZeRO-3, selective recompute) to the end: the same loss curve. Each launch
    # reshards the checkpoint the previous plan wrote.
    def test_resume_with_three_then_four_processes(self):
        self.assertEqual(self.stop_codes, [85, 85], self.stop_output)
        self.assertIsNone(self.resume3_error)
        d, first_stop = self.resume34_dir, self.first_stop
        self.assertEqual(self.resume3_codes, [85, 85, 85], self.resume3_output)
        lines = read_metrics(os.path.join(d, "metrics.jsonl"))
        second_stop = [o for o in lines if o.get("event") == "checkpoint"][-1]["step"]
        self.assertGreater(second_stop, first_stop + 2)
        self.assertLess(second_stop, STEPS, "the signal came too late to test a resume")
        run = self._launch(d, 4, launch=2, plan=PLAN_4)
        self.assertEqual(run.wait(), [0, 0, 0, 0], run.output())
        lines = read_metrics(os.path.join(d, "metrics.jsonl"))
        self.assert_same_curve(lines)
        worlds = [o["world_size"] for o in step_lines(lines)]
        self.assertEqual(worlds, [2] * first_stop + [3] * (second_stop - first_stop)
                         + [4] * (STEPS - second_stop))

    # A stop signal during start-up (here as soon as the handlers are installed, while torch is
    # still being imported) is not lost and does not kill the process: the ranks stop at the
    # first step boundary, before any step.
    def test_stop_during_startup(self):
        d = self.early_dir
        self.assertTrue(self.early_signalled_before_start)
        self.assertEqual(self.early_codes, [85, 85], self.early_output)
        lines = read_metrics(os.path.join(d, "metrics.jsonl"))
        self.assertEqual([(o.get("event"), o["step"]) for o in lines],
                         [("start", 0), ("checkpoint", 0)])
        self.assertEqual(complete_checkpoints(os.path.join(d, "ckpt")), [0])

    # (3) profiling mode: single process, no rendezvous, no checkpoint, profile lines, exit 0.
    def test_profile_mode(self):
        d = os.path.join(self.tmp, "profile")
        os.makedirs(d)
        metrics, ckpt = os.path.join(d, "metrics.jsonl"), os.path.join(d, "ckpt")
        env = contract_env(1, 0, d, metrics, ckpt, TESSEL_PROFILE=1, TESSEL_PROFILE_STEPS=3,
                           TESSEL_PROFILE_LAYERS=3, TESSEL_MICRO_BATCH=5,
                           TESSEL_RECOMPUTE="full", TESSEL_PRECISION="bf16",
                           TESSEL_PP=4, TESSEL_DP=8,  # a stage of a bigger plan: ignored
                           TESSEL_PLAN_JSON=None, SLURM_PROCID=None, SLURM_NTASKS=None,
                           TESSEL_WORLD_SIZE=None, MASTER_PORT=None)
        r = subprocess.run([PYTHON, TRAIN, *SHAPE], env=env, capture_output=True, text=True,
                           timeout=TIMEOUT_S)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        lines = read_metrics(metrics)
        self.assertEqual([o["step"] for o in lines], [1, 2, 3])
        for o in lines:
            self.assertIs(o["profile"], True)
            self.assertEqual((o["micro_batch"], o["layers"], o["recompute"]), (5, 3, "full"))
            self.assertGreater(o["step_time_s"], 0)
            # bf16 runs under CPU autocast where torch supports it; otherwise fp32, said on stderr.
            self.assertIn(o["precision"], ("bf16", "fp32"))
            if o["precision"] == "fp32":
                self.assertIn("running fp32", r.stderr)
        self.assertFalse(os.path.exists(ckpt), "profiling must not write a checkpoint")

    # (4) plans the job refuses: exit 2, a message naming the problem.
    def test_bad_plans_exit_2(self):
        d = os.path.join(self.tmp, "bad")
        os.makedirs(d)
        metrics = os.path.join(d, "metrics.jsonl")
        cases = [
            ("tp3_heads", 3, {"TESSEL_TP": 3, "TESSEL_DP": 1, "TESSEL_MICRO_BATCH": 6,
                              "TESSEL_PLAN_JSON": None},
             "TESSEL_TP=3: heads (4) must be a multiple of tp"),
            ("tp2_in_plan_json_vs_world", 2, {"TESSEL_TP": None, "TESSEL_DP": None,
                                              "TESSEL_PLAN_JSON": json.dumps(
                {"dp": 2, "tp": 2, "pp": 1, "micro_batch": 3, "num_micro_batches": 2,
                 "global_batch": 12})}, "dp*tp*pp = 4 but the world size is 2"),
            ("pp_deeper_than_layers", 8, {"TESSEL_PP": 8, "TESSEL_DP": 1,
                                          "TESSEL_NUM_MICRO_BATCHES": 1,
                                          "TESSEL_MICRO_BATCH": 12, "TESSEL_PLAN_JSON": None},
             "TESSEL_PP=8: 8 stages but the model has 4 layers"),
            ("interleaved_micro_batches", 2, {"TESSEL_PP": 2, "TESSEL_DP": 1,
                                              "TESSEL_VIRTUAL_STAGES": 2,
                                              "TESSEL_NUM_MICRO_BATCHES": 3,
                                              "TESSEL_MICRO_BATCH": 4, "TESSEL_PLAN_JSON": None},
             "num_micro_batches (3) to be a multiple of pp (2)"),
            ("product", 2, {"TESSEL_GLOBAL_BATCH": 16, "TESSEL_PLAN_JSON": None},
             "dp*micro_batch*num_micro_batches = 2*3*2 = 12"),
            ("dp_not_world", 2, {"TESSEL_DP": 4, "TESSEL_MICRO_BATCH": 3,
                                 "TESSEL_NUM_MICRO_BATCHES": 1, "TESSEL_PLAN_JSON": None},
             "dp*tp*pp = 4 but the world size is 2"),
            ("plan_json_disagrees", 2, {"TESSEL_MICRO_BATCH": 2, "TESSEL_NUM_MICRO_BATCHES": 3},
             "disagrees with TESSEL_PLAN_JSON"),
            ("recompute", 1, {"TESSEL_RECOMPUTE": "some", "TESSEL_PLAN_JSON": None},
             "TESSEL_RECOMPUTE"),
            ("zero_stage", 1, {"TESSEL_ZERO_STAGE": 4, "TESSEL_PLAN_JSON": None},
             "TESSEL_ZERO_STAGE=4"),
            ("world_vs_ntasks", 2, {"SLURM_NTASKS": 3}, "SLURM_NTASKS=3"),
            ("profile_tp2", 1, {"TESSEL_PROFILE": 1, "TESSEL_TP": 2, "TESSEL_PLAN_JSON": None},
             "it needs TESSEL_TP=1"),
        ]
        for name, world, overrides, message in cases:
            with self.subTest(name):
                # Rank 0 alone: the plan is refused before any rendezvous.
                env = contract_env(world, 0, d, metrics, os.path.join(d, "ckpt"),
                                   MASTER_PORT=free_port(), **overrides)
                r = subprocess.run([PYTHON, TRAIN, *SHAPE], env=env, capture_output=True,
                                   text=True, timeout=TIMEOUT_S)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn("train.py: error:", r.stderr)
                self.assertIn(message, r.stderr)
        self.assertFalse(os.path.exists(metrics), "a refused plan must not write metrics")

    # Four processes under plans mixing t, p, d, ZeRO 1-3, recompute and micro-batching, run by
    # hand as srun would start them: each gives the reference's curve (the reference is
    # data-parallel; one process gives it too, test_resume_with_one_process).
    def test_four_process_plans(self):
        runs = {}
        for name, plan in FOUR_PROCESS_PLANS.items():
            d = os.path.join(self.tmp, "four-" + name)
            os.makedirs(d)
            runs[name] = (d, self._launch(d, 4, launch=0, plan=plan))
        for name, (d, run) in runs.items():
            with self.subTest(name):
                self.assertEqual(run.wait(), [0, 0, 0, 0], run.output())
                lines = read_metrics(os.path.join(d, "metrics.jsonl"))
                plan = FOUR_PROCESS_PLANS[name]
                start = lines[0]
                self.assertEqual((start["tp"], start["pp"], start["zero_stage"]),
                                 (plan.get("tp", 1), plan.get("pp", 1), plan.get("zero_stage", 0)))
                self.assert_same_curve(lines)

    # The same job with a valid plan but a model shape that differs from the checkpoint's.
    def test_incompatible_checkpoint_exits_2(self):
        self.assertEqual(self.stop_codes, [85, 85], self.stop_output)
        d = self.branch_from_stop("incompatible")
        env = contract_env(1, 0, d, os.path.join(d, "metrics.jsonl"), os.path.join(d, "ckpt"))
        r = subprocess.run([PYTHON, TRAIN, *SHAPE, "--hidden", "48"], env=env,
                           capture_output=True, text=True, timeout=TIMEOUT_S)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("different model", r.stderr)


SPEC_KEYS = {"name", "model", "global_batch", "iterations", "command", "workdir", "gpus",
             "min_gpus", "max_gpus", "gpu_types", "elastic", "priority"}
REQUIRED_SPEC_KEYS = {"name", "model", "global_batch", "iterations", "command", "gpus"}


def catalog_gpu_names():
    """GPU names and aliases from tessel's catalog (src/hardware/gpu.cc), or None."""
    path = os.path.join(HERE, "..", "src", "hardware", "gpu.cc")
    if not os.path.exists(path):
        return None
    names = set()
    with open(path) as f:
        for name, aliases in re.findall(r'add\(\{"([^"]+)", \{([^}]*)\}', f.read()):
            names.add(name)
            names.update(re.findall(r'"([^"]+)"', aliases))
    return names


class JobSpecTest(unittest.TestCase):
    """examples/jobs/*.yaml follow the spec format and run as they are."""

    @classmethod
    def setUpClass(cls):
        try:
            import yaml
        except ImportError:
            raise unittest.SkipTest("PyYAML is not installed (python3-yaml)")
        cls.specs = {}
        for path in sorted(glob.glob(os.path.join(HERE, "jobs", "*.yaml"))):
            with open(path) as f:
                cls.specs[path] = yaml.safe_load(f)

    def test_at_least_three_specs(self):
        self.assertGreaterEqual(len(self.specs), 3)
        self.assertTrue(any(s.get("elastic") for s in self.specs.values()))
        self.assertTrue(any(s.get("gpu_types") for s in self.specs.values()))

    def test_specs_match_train_py(self):
        sys.path.insert(0, HERE)
        import train
        gpu_names = catalog_gpu_names()
        names = set()
        for path, spec in self.specs.items():
            with self.subTest(os.path.basename(path)):
                self.assertLessEqual(set(spec), SPEC_KEYS)
                self.assertLessEqual(REQUIRED_SPEC_KEYS, set(spec))
                self.assertRegex(spec["name"], r"^[A-Za-z0-9._-]{1,64}$")
                self.assertNotIn(spec["name"], names, "duplicate job name")
                names.add(spec["name"])
                cmd = spec["command"]
                self.assertTrue(all(isinstance(a, str) for a in cmd), "argv must be strings")
                self.assertTrue(os.path.isabs(cmd[0]), cmd[0])
                # The daemon runs argv as it is with cwd = workdir (default: the spec's folder).
                workdir = os.path.normpath(os.path.join(os.path.dirname(path),
                                                        spec.get("workdir", ".")))
                self.assertEqual(os.path.realpath(os.path.join(workdir, cmd[1])),
                                 os.path.realpath(TRAIN))
                args = train.parse_args(cmd[2:])
                shape = {k: args.__dict__[k.replace("-", "_")]
                         for k in ("layers", "hidden", "heads", "seq_len", "vocab")}
                model = spec["model"]
                self.assertEqual({k: model[k] for k in shape}, shape, "model vs command")
                # Every GPU count the job may get must split the global batch evenly.
                if spec.get("elastic"):
                    lo, hi = spec["min_gpus"], spec["max_gpus"]
                    self.assertLessEqual(lo, spec["gpus"])
                    self.assertLessEqual(spec["gpus"], hi)
                    counts = range(lo, hi + 1)
                else:
                    self.assertNotIn("min_gpus", spec)
                    self.assertNotIn("max_gpus", spec)
                    counts = [spec["gpus"]]
                for n in counts:
                    self.assertEqual(spec["global_batch"] % n, 0, f"{n} GPUs")
                self.assertGreater(spec["iterations"], 0)
                if gpu_names is not None:
                    for g in spec.get("gpu_types", []):
                        self.assertIn(g, gpu_names, "not a catalog GPU name")

    def test_spec_commands_run(self):
        """Each command runs as the daemon would run it (cwd = workdir, argv as it is): with
        --help appended (no torch import: cheap), and the deepest model also for real, in
        profiling mode."""
        runs = []
        deepest = max(self.specs, key=lambda p: self.specs[p]["model"]["layers"])
        for path, spec in self.specs.items():
            workdir = os.path.normpath(os.path.join(os.path.dirname(path),
                                                    spec.get("workdir", ".")))
            env = {k: v for k, v in os.environ.items() if not k.startswith("TESSEL_")}
            env.update(TESSEL_PROFILE="1", TESSEL_PROFILE_STEPS="1", TESSEL_MICRO_BATCH="1")
            argv = spec["command"] + ([] if path == deepest else ["--help"])
            runs.append((path, spec, argv, subprocess.Popen(
                argv, cwd=workdir, env=env, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True)))
        for path, spec, argv, proc in runs:
            with self.subTest(os.path.basename(path)):
                out, _ = proc.communicate(timeout=TIMEOUT_S)
                self.assertEqual(proc.returncode, 0, out)
                if argv[-1] == "--help":
                    self.assertIn("usage: train.py", out)
                else:
                    self.assertEqual(json.loads(out.splitlines()[-1])["layers"],
                                     spec["model"]["layers"])

if __name__ == "__main__":
    unittest.main(verbosity=2)
