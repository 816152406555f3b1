#!/usr/bin/python3
"""A training job whose metrics file is full of garbage: before, during and after
examples/train.py's own lines it appends lines no metrics reader should trust (not JSON,
binary bytes, JSON of the wrong shape, steps far beyond the job's iterations, negative or
non-finite numbers, a line of several megabytes, brackets nested 100,000 deep), and leaves
an unfinished line at the end. Each garbage line is one write(2) on an O_APPEND descriptor, as
train.py's are, so no real line is torn. The job must still be completed once, with the
curve of an uninterrupted run.

Usage: metrics_garbage.py TRAIN_PY [train.py's arguments]."""
import os
import runpy
import sys
import threading

GARBAGE = [
    b"not json at all",
    b"\x00\x01\x02\xff\xfe\xfd binary",
    b"[1, 2, 3]",
    b"\"a string\"",
    b"{}",
    b"{\"step\": \"seven\", \"step_time_s\": 0.1}",
    b"{\"step\": 999999999, \"step_time_s\": 0.1, \"samples\": 16}",
    b"{\"step\": 1e300, \"step_time_s\": 0.1}",
    b"{\"step\": -5, \"step_time_s\": 0.1}",
    b"{\"step\": 3, \"step_time_s\": -1}",
    b"{\"step\": 3, \"step_time_s\": NaN}",
    b"{\"event\": \"checkpoint\", \"step\": \"x\"}",
    b"{\"event\": 17, \"step\": 1}",
    b"{\"step\": 2, \"step_time_s\": 0.1",
    b"9" * 200000,
    b"[" * 100000 + b"]" * 100000,
    b"x" * (5 << 20),
]


def main():
    path = os.environ.get("TESSEL_METRICS_FILE")
    if not os.environ.get("SLURM_JOB_ID") or not path or os.environ.get("SLURM_PROCID", "0") != "0":
        sys.argv = sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name="__main__")
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def burst():
        for g in GARBAGE:
            os.write(fd, g + b"\n")

    burst()
    stop = threading.Event()

    def during():  # the same, but the megabytes-long line only once, at the start
        while not stop.wait(0.7):
            for g in GARBAGE[:-1]:
                os.write(fd, g + b"\n")

    t = threading.Thread(target=during, daemon=True)
    t.start()
    sys.argv = sys.argv[1:]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    finally:
        stop.set()
        t.join()
        burst()
        os.write(fd, b"{\"step\": 1, \"unfinished")  # no newline: never a whole line


if __name__ == "__main__":
    main()
