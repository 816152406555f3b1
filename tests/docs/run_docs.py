#!/usr/bin/python3
"""Runs the commands that README.md, docs/*.md and examples/README.md mark as runnable.

A fenced block is runnable when the line before its opening fence is an HTML comment (invisible
on GitHub):
    <!-- runnable -->              the block (sh/bash) runs with bash -e -o pipefail
    <!-- runnable: file NAME -->   the block's text is written to NAME (for later blocks to use)
Each document's blocks run in order in a scratch folder of their own, which links build/,
examples/, scripts/ and python/ to the repository's, with TESSEL_DATA set (blocks that use it
are skipped, and say so, when the data is absent, and blocks that use build/python when the
build has no Python module; a block identical to one already run is not run again). A block fails when any command in it exits
non-zero or it runs past --timeout seconds. Exit 1 when a block failed or nothing was marked.

    tests/docs/run_docs.py [--build build] [--timeout 300] [--only README.md]
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARK = re.compile(r"^<!--\s*runnable(?::\s*file\s+(\S+))?\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")


def blocks(path):
    """[(line of the fence, kind, name, text)] of the runnable blocks of one document."""
    lines = open(path, encoding="utf-8").read().split("\n")
    out, i = [], 0
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        f = FENCE.match(lines[j]) if j < len(lines) else None
        if not f:
            raise SystemExit(f"{path}:{i + 1}: a runnable mark must be followed by a fenced block")
        fence, lang = f.group(1), f.group(2)
        k = j + 1
        while k < len(lines) and not lines[k].startswith(fence):
            k += 1
        if k == len(lines):
            raise SystemExit(f"{path}:{j + 1}: the fenced block is not closed")
        text = "\n".join(lines[j + 1:k]) + "\n"
        if m.group(1):
            out.append((j + 1, "file", m.group(1), text))
        else:
            if lang not in ("sh", "bash", "shell", ""):
                raise SystemExit(f"{path}:{j + 1}: a runnable block must be sh or bash, not {lang!r}")
            out.append((j + 1, "sh", None, text))
        i = k + 1
    return out


def scratch(build):
    d = tempfile.mkdtemp(prefix="tessel-docs-")
    for name, target in (("build", build), ("examples", os.path.join(ROOT, "examples")),
                         ("scripts", os.path.join(ROOT, "scripts")),
                         ("python", os.path.join(ROOT, "python"))):
        os.symlink(target, os.path.join(d, name))
    return d


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--only", default="", help="only documents whose path contains this")
    a = p.parse_args()
    build = os.path.abspath(a.build)
    data = os.path.abspath(os.environ.get("TESSEL_DATA") or os.path.join(ROOT, "..", "shared", "data"))
    have_data = os.path.isdir(data)
    have_module = bool(glob.glob(os.path.join(build, "python", "tessel", "_tessel*.so")))
    docs = [os.path.join(ROOT, "README.md"), os.path.join(ROOT, "examples", "README.md")]
    docs += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    env = dict(os.environ, TESSEL_DATA=data)
    found = failed = skipped = 0
    ran = {}  # text of a block already run -> where (README repeats docs' blocks)
    t_all = time.monotonic()
    for doc in docs:
        rel = os.path.relpath(doc, ROOT)
        if a.only and a.only not in rel:
            continue
        marked = blocks(doc)
        if not marked:
            continue
        work = scratch(build)
        for line, kind, name, text in marked:
            found += 1
            where = f"{rel}:{line}"
            if kind == "file":
                with open(os.path.join(work, name), "w") as f:
                    f.write(text)
                print(f"file  {where}: wrote {name}")
                continue
            if "TESSEL_DATA" in text and not have_data:
                skipped += 1
                print(f"SKIP  {where}: uses $TESSEL_DATA, and {data} does not exist")
                continue
            if "build/python" in text and not have_module:
                skipped += 1
                print(f"SKIP  {where}: uses the Python module, not built in {build} (no pybind11, or a sanitizer build)")
                continue
            if text in ran:
                print(f"SAME  {where}: the block at {ran[text]}, which ran")
                continue
            ran[text] = where
            t0 = time.monotonic()
            try:
                r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=work, env=env,
                                   capture_output=True, text=True, timeout=a.timeout)
                ok, tail = r.returncode == 0, (r.stdout + r.stderr)[-3000:]
                why = f"exit {r.returncode}"
            except subprocess.TimeoutExpired as e:
                ok, why = False, f"ran past {a.timeout:.0f} s"
                tail = ((e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace"))[-3000:]
            dt = time.monotonic() - t0
            if ok:
                print(f"PASS  {where} ({dt:.1f} s)")
            else:
                failed += 1
                print(f"FAIL  {where} ({dt:.1f} s, {why}):\n{text}--- output (tail) ---\n{tail}")
        sys.stdout.flush()
    print(f"{found} runnable blocks, {failed} failed, {skipped} skipped, "
          f"{time.monotonic() - t_all:.1f} s")
    if found == 0:
        print("no runnable blocks found: mark them with <!-- runnable -->")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
