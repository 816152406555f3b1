"""The metrics file: one JSON object per line, appended by one rank.

Each line is written whole with a single write(2) on an O_APPEND descriptor (no buffering), so
a reader tailing the file (tessel serve) never sees a torn line. See examples/README.md for the
lines and their fields.
"""

import json
import math
import os


class Metrics:
    def __init__(self, path):
        self.fd = None
        if path:
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, exist_ok=True)
            self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, obj):
        if self.fd is None:
            return
        data = (json.dumps(obj, separators=(", ", ": ")) + "\n").encode()
        written = os.write(self.fd, data)
        if written != len(data):
            raise OSError(f"short write to the metrics file ({written} of {len(data)} bytes)")

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def finite_or_none(x):
    return x if x is not None and math.isfinite(x) else None
