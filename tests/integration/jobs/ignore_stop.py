#!/usr/bin/python3
"""A training job that ignores the stop request (SIGUSR1) and SIGTERM: examples/train.py with
both signals ignored, so that a reconfiguration's stop request never reaches it and Slurm's
cancel only ends it with SIGKILL after KillWait. It still checkpoints periodically
(TESSEL_CHECKPOINT_INTERVAL_S), so a relaunch resumes from its latest checkpoint.

Usage: ignore_stop.py TRAIN_PY [train.py's arguments] (tests/integration/faults_slurm_test.sh)."""
import os
import runpy
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tessel_job  # noqa: E402,F401  (installs its handlers; replaced below; not installed again)

if os.environ.get("SLURM_JOB_ID"):  # under Slurm; the reference run (compare_loss.py) is plain
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
