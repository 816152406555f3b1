#!/usr/bin/python3
"""A training job whose metrics file grows without bound: while examples/train.py runs, a
thread appends noise lines (about 1 KB each, a few of them JSON objects that are not metrics)
at FLOOD_MB_S megabytes a second (default 40), up to FLOOD_MAX_MB (default 600) in all, so
the file grows far faster than the daemon reads it per poll. Each write is whole lines on an
O_APPEND descriptor, so train.py's own lines stay whole among them.

Usage: metrics_flood.py TRAIN_PY [train.py's arguments]."""
import os
import runpy
import sys
import threading
import time


def main():
    path = os.environ.get("TESSEL_METRICS_FILE")
    if not os.environ.get("SLURM_JOB_ID") or not path or os.environ.get("SLURM_PROCID", "0") != "0":
        sys.argv = sys.argv[1:]
        runpy.run_path(sys.argv[0], run_name="__main__")
        return
    rate = float(os.environ.get("FLOOD_MB_S", "40")) * (1 << 20)
    limit = float(os.environ.get("FLOOD_MAX_MB", "600")) * (1 << 20)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    line = b"noise " + b"n" * 1000 + b"\n"
    obj = b"{\"noise\": \"" + b"o" * 990 + b"\"}\n"
    block = (line * 99 + obj) * 10  # ~1 MB of whole lines
    stop = threading.Event()

    def flood():
        written, start = 0, time.monotonic()
        while not stop.is_set() and written < limit:
            ahead = written / rate - (time.monotonic() - start)
            if ahead > 0:
                stop.wait(ahead)
                continue
            os.write(fd, block)
            written += len(block)

    t = threading.Thread(target=flood, daemon=True)
    t.start()
    sys.argv = sys.argv[1:]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    finally:
        stop.set()
        t.join()


if __name__ == "__main__":
    main()
