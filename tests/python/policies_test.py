#!/usr/bin/python3
"""Policies written in Python on the C++ engine (CTest python.policies): the examples'
re-implementations of built-in policies give the built-ins' results job for job; every
decision is checked (GPUs that are not free, inactive jobs, exceptions in decide, a
return value that is not a Decision, a snapshot kept past its decision: each an error
naming what went wrong); traits reach the loop.

    /usr/bin/python3 tests/python/policies_test.py --build build
"""

import argparse
import importlib.util
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
WALL = {"sim_wall_time_s", "decision_p50_ms", "decision_p99_ms", "decision_max_ms", "policy"}


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples", "python", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PythonPoliciesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(BUILD, "python"))
        global tessel
        import tessel
        assert os.path.realpath(tessel.__file__).startswith(os.path.realpath(BUILD)), tessel.__file__
        cls.fcfs = load_example("fcfs")
        cls.backfill = load_example("fcfs_backfill")
        cls.tmp = os.path.join(BUILD, "python-policies-test")
        os.makedirs(cls.tmp, exist_ok=True)
        # A heterogeneous trace with jobs too large for any node type (rejected) and
        # enough load that the queue blocks and backfilling matters.
        cls.trace = tessel.gen_trace(os.path.join(cls.tmp, "trace.csv"), jobs=300, seed=5, rate=1000)
        with open(cls.trace, "a") as f:  # larger than any GPU type of the demo cluster
            f.write("too-big,,30,bert__760M,128,,600,256,,,0,256,256,false,\n")

    def assertSameRuns(self, ours, builtin):
        self.assertEqual(len(ours.jobs), len(builtin.jobs))
        for a, b in zip(ours.jobs, builtin.jobs):
            self.assertEqual(a, b)
        strip = lambda s: {k: v for k, v in s.items() if k not in WALL}
        self.assertEqual(strip(ours.summary), strip(builtin.summary))

    def test_fcfs_in_python_is_the_builtin(self):
        for options in ({"cluster": "demo", "seed": 1}, {"cluster": "demo", "trace": self.trace}):
            ours, builtin = tessel.compare([self.fcfs.Fcfs(), "fcfs"], **options)
            self.assertEqual(ours.policy, "py-fcfs")
            self.assertSameRuns(ours, builtin)

    def test_the_trace_blocks_backfills_and_rejects(self):
        runs = tessel.compare(["fcfs", "fcfs:backfill=first-fit", "fcfs:backfill=easy"], cluster="demo",
                              trace=self.trace)
        self.assertEqual(len({r.summary["avg_jct_s"] for r in runs}), 3)
        for r in runs:
            self.assertEqual(r.summary["jobs_rejected"], 1)

    def test_backfilling_reimplemented_in_python_is_the_builtin(self):
        for easy, spec in ((False, "fcfs:backfill=first-fit"), (True, "fcfs:backfill=easy")):
            for options in ({"cluster": "demo", "seed": 1}, {"cluster": "demo", "trace": self.trace}):
                ours, builtin = tessel.compare([self.backfill.FcfsBackfill(easy), spec], **options)
                self.assertSameRuns(ours, builtin)
        # EASY and first-fit differ on this load: the test can tell them apart.
        ff, easy = tessel.compare(["fcfs:backfill=first-fit", "fcfs:backfill=easy"], cluster="demo", seed=1)
        self.assertNotEqual(ff.summary["avg_jct_s"], easy.summary["avg_jct_s"])

    def test_a_decision_giving_gpus_that_are_not_free_stops_the_run(self):
        class Greedy(tessel.Policy):
            def decide(self, snap):
                d = tessel.Decision()
                for job in snap.jobs:
                    if job.pending:  # every waiting job onto node 0, whatever is free there
                        d.assign(job, tessel.Allocation(snap.node_types[0], [(0, job.requested_gpus)]))
                return d
        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(Greedy(), cluster="demo", seed=1)
        self.assertRegex(str(e.exception), r"policy Greedy gave job \S+ .*but node 0 has \d+ free GPUs")

    def test_inactive_jobs_and_bad_types_are_errors(self):
        class Ghost(tessel.Policy):
            def decide(self, snap):
                d = tessel.Decision()
                d.assign(10**6, tessel.Allocation(0, [(0, 1)]))
                return d
        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(Ghost(), cluster="demo", seed=1)
        self.assertIn("assigned job index 1000000, which is not active", str(e.exception))

        class BadType(tessel.Policy):
            def decide(self, snap):
                snap.free_map().place(len(snap.gpu_types), 1)
        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(BadType(), cluster="demo", seed=1)
        self.assertRegex(str(e.exception), r"policy BadType: decide\(\) raised ValueError: place: GPU type index \d+ "
                                           r"out of range")

    def test_exceptions_and_wrong_returns_name_the_policy(self):
        class Raises(tessel.Policy):
            name = "raiser"
            def decide(self, snap):
                raise RuntimeError("no idea what to do at %.0f s" % snap.now)
        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(Raises(), cluster="demo", seed=1)
        self.assertIn("policy raiser: decide() raised RuntimeError: no idea what to do at", str(e.exception))

        class ReturnsDict(tessel.Policy):
            def decide(self, snap):
                return {}
        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(ReturnsDict(), cluster="demo", seed=1)
        self.assertIn("decide() returned dict, not a tessel.Decision", str(e.exception))

        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(self.fcfs.Fcfs, cluster="demo")
        self.assertIn("pass an instance (Fcfs()), not the class", str(e.exception))
        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(object(), cluster="demo")

    def test_a_snapshot_kept_past_its_decision_raises(self):
        class Keeps(tessel.Policy):
            def __init__(self):
                self.last = None
            def decide(self, snap):
                if self.last is not None:
                    self.last.jobs  # the previous decision's snapshot
                self.last = snap
                return tessel.Decision()
        with self.assertRaises(tessel.TesselError) as e:
            tessel.simulate(Keeps(), cluster="demo", seed=1)
        self.assertIn("used after decide() returned", str(e.exception))

    def test_traits_reach_the_loop(self):
        calls = {}

        class Counts(self.fcfs.Fcfs):
            def __init__(self, rounds):
                self.uses_rounds = rounds
                self.name = "rounds" if rounds else "events"
            def decide(self, snap):
                calls[self.name] = calls.get(self.name, 0) + 1
                return super().decide(snap)
        events, rounds = tessel.compare([Counts(False), Counts(True)], cluster="demo", seed=1)
        self.assertGreater(calls["rounds"], calls["events"])
        self.assertEqual(events.summary["decisions"], calls["events"])
        self.assertEqual(rounds.summary["decisions"], calls["rounds"])

    def test_the_goodput_model_of_jobs_with_an_agent(self):
        data = os.environ.get("TESSEL_DATA", os.path.join(ROOT, "..", "shared", "data"))
        trace = os.path.join(data, "pollux", "workloads", "workload-1.csv")
        if not os.path.exists(trace):
            self.skipTest("no %s (TESSEL_DATA)" % trace)
        seen = {}

        class Looks(self.fcfs.Fcfs):
            uses_rounds = True

            def decide(self, snap):
                for job in snap.jobs:
                    a = job.agent
                    if a and any(a["fitted_types"]) and not seen:
                        t = a["fitted_types"].index(True)
                        seen["agent"] = a
                        seen["one"] = snap.goodput(job, t, 1, 1)
                        seen["four"] = snap.goodput(job, t, 1, 4)
                return super().decide(snap)
        tessel.simulate(Looks(), cluster="pollux-64", trace=trace, limit=30)
        a = seen["agent"]
        self.assertGreater(a["grad"]["sqr"], 0)
        self.assertLessEqual(a["limits"]["init_batch"], a["limits"]["max_batch"])
        for g in (seen["one"], seen["four"]):
            self.assertTrue(g["valid"])
            self.assertAlmostEqual(g["goodput"], g["throughput"] * g["efficiency"], places=6)
        self.assertGreater(seen["four"]["throughput"], seen["one"]["throughput"])

    def test_the_snapshot_shows_the_jobs_and_the_belief(self):
        seen = {}

        class Looks(self.fcfs.Fcfs):
            def decide(self, snap):
                if not seen and any(not j.pending for j in snap.jobs):
                    running = next(j for j in snap.jobs if not j.pending)
                    seen["phase"] = running.phase
                    seen["alloc"] = (running.allocation.gpus, running.gpus)
                    r = snap.rate(running, running.allocation.type, running.gpus)
                    seen["rate"] = r
                    seen["free"] = (len(snap.free_gpus), len(snap.node_types), len(snap.node_gpus))
                    seen["types"] = snap.gpu_types
                return super().decide(snap)
        tessel.simulate(Looks(), cluster="demo", seed=1)
        self.assertIn(seen["phase"], ("running", "starting"))
        self.assertEqual(seen["alloc"][0], seen["alloc"][1])
        self.assertTrue(seen["rate"]["fits"])
        self.assertGreater(seen["rate"]["iteration_time_s"], 0)
        self.assertEqual(len(set(seen["free"])), 1)
        self.assertGreaterEqual(len(seen["types"]), 1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=BUILD)
    args, rest = parser.parse_known_args()
    BUILD = os.path.abspath(args.build)
    unittest.main(argv=[sys.argv[0], "-v", *rest])
