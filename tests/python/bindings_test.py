#!/usr/bin/python3
"""The Python package `tessel` from the build tree, with Debian's python3 (CTest
python.bindings): each entry point returns what the command line's --json prints,
simulations return their per-job records (as jobs.csv has them), failures raise
TesselError with the command's message, and the GIL is released while a simulation
runs (a Python thread keeps counting meanwhile).

    /usr/bin/python3 tests/python/bindings_test.py --build build
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
WALL = {"sim_wall_time_s", "decision_p50_ms", "decision_p99_ms", "decision_max_ms"}


def cli(*args):
    r = subprocess.run([os.path.join(BUILD, "tessel"), *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def cli_json(*args):
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def without_wall(summary):
    return {k: v for k, v in summary.items() if k not in WALL}


class BindingsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(BUILD, "python"))
        global tessel
        import tessel
        assert os.path.realpath(tessel.__file__).startswith(os.path.realpath(BUILD)), tessel.__file__

    def test_catalogs_are_the_commands_json(self):
        self.assertEqual(tessel.gpus(), cli_json("gpus"))
        self.assertEqual(tessel.models(), cli_json("models"))
        self.assertEqual(tessel.policies(), cli_json("policies"))
        self.assertEqual(tessel.clusters(), cli_json("clusters"))
        self.assertEqual(tessel.clusters("demo"), cli_json("clusters", "--cluster", "demo"))
        self.assertEqual(tessel.node_types(), cli_json("node-types"))
        self.assertGreater(len(tessel.gpus()), 5)

    def test_estimate_and_plan_are_the_commands_json(self):
        est = tessel.estimate(model="gpt3-1.3b", gpu="a100-80g", gpus=8, global_batch=64, tp=2, pp=1)
        self.assertEqual(est, cli_json("estimate", "--model", "gpt3-1.3b", "--gpu", "a100-80g", "--gpus", "8",
                                       "--global-batch", "64", "--tp", "2", "--pp", "1"))
        self.assertGreater(est["samples_per_s"], 0)
        got = tessel.plan(model="gpt3-175b", gpu="a100-80g", gpus=1024, global_batch=1536, search="grid", pp=8,
                          top=3)
        want = cli_json("plan", "--model", "gpt3-175b", "--gpu", "a100-80g", "--gpus", "1024", "--global-batch",
                        "1536", "--search", "grid", "--pp", "8", "--top", "3")
        for d in (got, want):
            d.pop("search_time_ms")
        self.assertEqual(got, want)
        self.assertEqual(len(got["plans"]), 3)

    def test_simulate_returns_the_summary_and_every_job(self):
        run = tessel.simulate(cluster="demo", policy="tiresias", seed=2)
        code, out, err = cli("simulate", "--cluster", "demo", "--policy", "tiresias", "--seed", "2", "--json")
        self.assertEqual(code, 0, err)
        self.assertEqual(without_wall(run.summary), without_wall(json.loads(out)))
        self.assertEqual(run.policy, "tiresias")
        self.assertEqual(len(run.jobs), run.summary["jobs_total"])
        with tempfile.TemporaryDirectory() as d:
            code, _, err = cli("simulate", "--cluster", "demo", "--policy", "tiresias", "--seed", "2", "--out", d)
            self.assertEqual(code, 0, err)
            with open(os.path.join(d, "jobs.csv")) as f:
                rows = list(csv.DictReader(f))
        self.assertEqual([r["job_id"] for r in run.jobs], [r["job_id"] for r in rows])
        for mine, theirs in zip(run.jobs, rows):
            for k, v in theirs.items():
                if v == "":
                    self.assertIsNone(mine[k], k)
                elif k in ("job_id", "user", "model", "requested_gpu_type", "outcome", "reason"):
                    self.assertEqual(mine[k], v, k)
                elif v in ("true", "false"):
                    self.assertEqual(mine[k], v == "true", k)
                else:
                    self.assertAlmostEqual(mine[k], float(v), places=9, msg=k)
        finished = [j for j in run.jobs if j["outcome"] == "finished"]
        self.assertEqual(len(finished), run.summary["jobs_finished"])
        self.assertIsInstance(finished[0]["jct_s"], float)
        self.assertIsInstance(finished[0]["restarts"], int)

    def test_compare_runs_each_policy_on_one_setup_and_writes_its_files(self):
        with tempfile.TemporaryDirectory() as d:
            runs = tessel.compare(["fcfs", "srtf"], cluster="demo", limit=100, out=d)
            self.assertTrue(os.path.exists(os.path.join(d, "summary.json")))
            self.assertTrue(os.path.exists(os.path.join(d, "fcfs", "jobs.csv")))
        self.assertEqual([r.policy for r in runs], ["fcfs", "srtf"])
        self.assertEqual([len(r.jobs) for r in runs], [100, 100])
        want = cli_json("compare", "--cluster", "demo", "--limit", "100", "--policies", "fcfs,srtf")
        self.assertEqual([without_wall(r.summary) for r in runs], [without_wall(s) for s in want])

    def test_traces_generated_and_loaded(self):
        with tempfile.TemporaryDirectory() as d:
            path = tessel.gen_trace(os.path.join(d, "t.csv"), jobs=50, seed=4)
            run = tessel.simulate(cluster="demo", trace=path, policy="fcfs")
        self.assertEqual(run.summary["jobs_total"], 50)
        self.assertEqual(run.summary["jobs_finished"], 50)

    def test_failures_raise_with_the_commands_message(self):
        with self.assertRaises(tessel.TesselError) as e:
            tessel.estimate(model="no-such-model", gpu="a100-80g", gpus=8, global_batch=64, tp=1, pp=1)
        self.assertEqual(e.exception.code, 2)
        self.assertIn("no-such-model", str(e.exception))
        code, _, err = cli("estimate", "--model", "no-such-model", "--gpu", "a100-80g", "--gpus", "8",
                           "--global-batch", "64", "--tp", "1", "--pp", "1")
        self.assertEqual(code, 2)
        self.assertIn(str(e.exception).splitlines()[0], err)
        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(cluster="no-such-cluster")
        self.assertIn("no-such-cluster", str(e.exception))
        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(cluster="demo", policy="no-such-policy")
        self.assertIn("no-such-policy", str(e.exception))
        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(cluster="demo", no_such_flag=3)
        self.assertIn("--no-such-flag", str(e.exception))
        with self.assertRaises(tessel.TesselError):
            tessel.compare([], cluster="demo")

    def test_the_gil_is_released_while_a_simulation_runs(self):
        ticks = [0]
        done = threading.Event()

        def count():
            while not done.is_set():
                ticks[0] += 1

        t0 = time.perf_counter()
        tessel.simulate(cluster="demo", policy="arena")
        alone = time.perf_counter() - t0
        counter = threading.Thread(target=count)
        counter.start()
        try:
            t0 = time.perf_counter()
            tessel.simulate(cluster="demo", policy="arena")
            took = time.perf_counter() - t0
        finally:
            done.set()
            counter.join()
        print("simulation %.2f s alone, %.2f s beside a counting thread; %d ticks" % (alone, took, ticks[0]))
        # Held, the GIL would let the counter run only at the switch interval's
        # checks (every 5 ms) and never while the C++ engine runs.
        self.assertGreater(ticks[0], 100000)

    def test_simulations_in_parallel_threads_match_one_at_a_time(self):
        from concurrent.futures import ThreadPoolExecutor
        specs = [("arena", 1), ("tiresias", 2), ("gavel", 3), ("pollux", 4)]
        one = [tessel.simulate(cluster="demo", policy=p, seed=s, limit=150) for p, s in specs]
        with ThreadPoolExecutor(max_workers=4) as pool:
            many = list(pool.map(lambda ps: tessel.simulate(cluster="demo", policy=ps[0], seed=ps[1], limit=150), specs))
        for a, b in zip(one, many):
            self.assertEqual(without_wall(a.summary), without_wall(b.summary))
            self.assertEqual(a.jobs, b.jobs)

    def test_dataframes(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("python3-pandas is not installed")
        runs = tessel.compare(["fcfs", "tiresias"], cluster="demo", limit=80)
        frame = runs[0].jobs_frame()
        self.assertEqual(len(frame), 80)
        self.assertIn("jct_s", frame.columns)
        self.assertAlmostEqual(frame["jct_s"].mean(), runs[0].summary["avg_jct_s"], delta=1e-6 * frame["jct_s"].mean())
        summaries = tessel.summaries_frame(runs)
        self.assertEqual(list(summaries["policy"]), ["fcfs", "tiresias"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=BUILD)
    args, rest = parser.parse_known_args()
    BUILD = os.path.abspath(args.build)
    unittest.main(argv=[sys.argv[0], "-v", *rest])
