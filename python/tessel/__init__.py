"""tessel from Python: the catalogs, the estimator and planner, and the simulator, in-process.

Every function runs the same code as the `tessel` command of the same name (flags from
keyword arguments: ``global_batch=64`` is ``--global-batch 64``, ``True`` a bare flag, a
list a repeated flag) and returns what its ``--json`` prints, as dicts and lists. The C++
engine runs with the GIL released, so other Python threads run meanwhile. A command that
fails raises :class:`TesselError` with the command's own message. Docs: docs/python.md.

    import tessel
    tessel.estimate(model="gpt3-1.3b", gpu="a100-80g", gpus=8, global_batch=64, tp=1, pp=1)
    tessel.plan(model="gpt3-175b", gpu="a100-80g", gpus=1024, global_batch=1536, top=3)
    run = tessel.simulate(cluster="demo", policy="tiresias", seed=2)
    run.summary["avg_jct_s"], len(run.jobs), run.jobs_frame()  # DataFrame with pandas
    runs = tessel.compare(["fcfs", "srtf"], cluster="demo")
"""

import csv
import io
import json
import os

from . import _tessel

__all__ = [
    "TesselError", "SimRun", "run", "gpus", "node_types", "models", "clusters", "policies",
    "estimate", "plan", "gen_trace", "simulate", "compare", "sweep", "summaries_frame",
    "Policy", "Decision", "Allocation", "Snapshot", "Job", "FreeMap",
]


class TesselError(Exception):
    """A tessel command failed; ``str(e)`` is its message, ``e.code`` its exit code
    (2: the input was refused, 1: it failed)."""

    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def _flags(options):
    args = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                args += [flag, _text(v)]
        else:
            args += [flag, _text(value)]
    return args


def _text(value):
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _raise(code, err):
    lines = [l for l in err.splitlines() if l and not l.startswith("run '")]
    message = "\n".join(l[len("error: "):] if l.startswith("error: ") else l for l in lines)
    raise TesselError(message or "tessel exited with code %d" % code, code)


def run(command, *args, **options):
    """Runs ``tessel COMMAND ARGS... --flags`` in-process; returns what it printed.

    Raises TesselError when it exits with a non-zero code."""
    code, out, err = _tessel.run_cli([command, *map(_text, args), *_flags(options)])
    if code != 0:
        _raise(code, err)
    return out


def _json(command, **options):
    return json.loads(run(command, json=True, **options))


def gpus():
    """The GPU catalog (`tessel gpus --json`)."""
    return _json("gpus")


def node_types():
    """Node types (`tessel node-types --json`)."""
    return _json("node-types")


def models():
    """The model catalog (`tessel models --json`)."""
    return _json("models")


def clusters(cluster=None):
    """The embedded clusters, or one cluster (a name or a YAML file) in detail."""
    return _json("clusters", cluster=cluster)


def policies():
    """The scheduling policies and their options (`tessel policies --json`)."""
    return _json("policies")


def estimate(**options):
    """One plan's estimate: model, gpu, gpus, global_batch, tp, pp (and dp, micro_batch,
    recompute, zero, framework, precision, ...) as `tessel estimate` takes them."""
    return _json("estimate", **options)


def plan(**options):
    """Ranked parallel plans (`tessel plan`): model, gpu, gpus, global_batch; search="grid"
    with pp=P for one Arena grid; top=N plans."""
    return _json("plan", **options)


def gen_trace(out, **options):
    """Writes a seeded synthetic trace to ``out`` (`tessel gen-trace`); returns the path."""
    run("gen-trace", out=out, **options)
    return os.fspath(out)


_BOOLS = {"true": True, "false": False}


def _cell(value):
    if value == "":
        return None
    if value in _BOOLS:
        return _BOOLS[value]
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number


def _records(jobs_csv):
    text_columns = {"job_id", "user", "model", "requested_gpu_type", "outcome", "reason"}
    rows = []
    for row in csv.DictReader(io.StringIO(jobs_csv)):
        rows.append({k: ((v or None) if k in text_columns else _cell(v)) for k, v in row.items()})
    return rows


class SimRun:
    """One simulated policy: ``summary`` (the dict `tessel simulate --json` prints) and
    ``jobs`` (one dict per job: jobs.csv's columns, numbers as numbers, empty cells None)."""

    def __init__(self, summary, jobs):
        self.summary = summary
        self.jobs = jobs

    @property
    def policy(self):
        return self.summary.get("policy")

    def jobs_frame(self):
        """The per-job records as a pandas DataFrame (needs python3-pandas)."""
        import pandas
        return pandas.DataFrame.from_records(self.jobs)

    def __repr__(self):
        s = self.summary
        return "SimRun(policy=%r, jobs=%d, finished=%s, avg_jct_s=%s)" % (
            s.get("policy"), len(self.jobs), s.get("jobs_finished"), s.get("avg_jct_s"))


def _simulate(policies, options):
    if not policies:
        raise TesselError("policies: expected at least one policy spec (see tessel.policies())", 2)
    for p in policies:
        if isinstance(p, type):
            raise TesselError("policies: pass an instance (%s()), not the class" % p.__name__, 2)
    specs = [p if hasattr(p, "decide") else _text(p) for p in policies]
    code, runs, err = _tessel.simulate(_flags(options), specs)
    if code != 0:
        _raise(code, err)
    return [SimRun(json.loads(summary), _records(jobs)) for summary, jobs in runs]


def simulate(policy="fcfs", **options):
    """Simulates one policy (`tessel simulate`'s flags: cluster, trace, seed, horizon,
    truth, placement, ...; out=DIR also writes the command's files there); returns a SimRun.

    ``policy`` is a spec ("fcfs:backfill=easy") or a Python policy: an object with a
    ``decide(snapshot)`` method returning a :class:`Decision` (see :class:`Policy`)."""
    return _simulate([policy], options)[0]


def compare(policies, **options):
    """Simulates each policy on one setup (as `tessel compare`); returns a SimRun per policy."""
    if isinstance(policies, str):
        policies = [p for p in policies.split(",") if p]
    return _simulate(list(policies), options)


Decision = _tessel.Decision
Allocation = _tessel.Allocation
Snapshot = _tessel.Snapshot
Job = _tessel.Job
FreeMap = _tessel.FreeMap


class Policy:
    """A scheduling policy written in Python, run by the C++ simulator's scheduling loop.

    Subclass it and write ``decide(self, snapshot)``: read ``snapshot.jobs`` (active jobs,
    submit order), ``snapshot.free_map()`` (place GPUs as the simulator's placement rule
    does), ``snapshot.rate(job, type, gpus)`` (the belief's speeds) and return a
    :class:`Decision`. Every decision is checked as a built-in policy's is: GPUs that are
    not free, an inactive job or a bad GPU type stop the run with an error naming the job.
    The snapshot and its jobs are valid only during the call.

    ``name`` names it in summaries (default: the class name); ``uses_rounds = True`` calls
    it at every scheduling round, not only on arrivals and completions; ``plan_mode``
    ("dp" or "best") overrides --baseline-parallelism for its jobs' plans.
    Docs: docs/python.md."""

    name = None
    uses_rounds = False
    plan_mode = None

    def decide(self, snapshot):
        raise NotImplementedError("a tessel.Policy must define decide(snapshot)")


def sweep(file, out, **options):
    """Runs a sweep file (`tessel sweep FILE --out OUT`: workers=N, or slurm=True for a Slurm job
    array; a re-run resumes) and returns its table: a dict per policy and setting with each
    metric's mean, sd and 95% CI over seeds. Docs: docs/sweeps.md."""
    return json.loads(run("sweep", file, out=out, json=True, **options))


def summaries_frame(runs):
    """The summaries of several SimRuns as one pandas DataFrame, a row per run."""
    import pandas
    return pandas.DataFrame.from_records([r.summary for r in runs])
