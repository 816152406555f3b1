"""Sharded, plan-independent checkpoints.

A job of W ranks saves the pieces of the logical model and optimizer state
that each rank holds (a TP slice, or a flat ZeRO range of one); any other
plan (other data/tensor/pipeline width, ZeRO stage or world size) can load
the full logical tensors back, or the slices it needs.

On-disk format (FORMAT "tessel-checkpoint", VERSION 1)::

    <directory>/
      LATEST                           text "step-00000200": a hint only, never read by load()
      step-00000200/
        shard-00000-of-00004.pt        torch.save({"format", "rank", "tensors": [1-D tensors], "extra"})
        shard-00001-of-00004.pt        (a rank with no pieces and no extra writes no file)
        ...
        MANIFEST.json                  written last; its presence makes the checkpoint

MANIFEST.json holds: format, version, step, world_size, meta (the caller's
JSON-able dict), "files": {file name: {rank, sha256, bytes, extra}} and
"tensors": {logical name: {shape, dtype, tp_dim, tp_size,
"pieces": [{tp_index, lo, hi, file, index}]}} where `index` is the position
of the piece's tensor in its shard file's "tensors" list and [lo, hi) is the
range of the row-major flattened TP slice `tp_index` that the piece covers.

Guarantees:
  * Atomic: every file is written to a temporary name, flushed, fsynced and
    renamed into place; the step directory is fsynced before the manifest is
    written, and the manifest (tmp + fsync + rename + fsync dir) is the last
    thing written.  A crash at any point leaves either the previous
    checkpoints or a complete new one; a step directory without a manifest is
    ignored by load() and removed by a later save.  Re-saving an existing step
    removes its manifest first, so a manifest never describes mixed shards.
  * Checked: the manifest is only written when every rank's write succeeded
    and the pieces cover every TP slice of every tensor exactly once
    (else CheckpointError on every rank, never a hang).  Each shard's size and
    SHA-256 are recorded; load() verifies them and falls back to the next
    older complete checkpoint, logging which file was bad and why.
  * Exact: tensors are read back bit-identical, in their saved dtype.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch

FORMAT = "tessel-checkpoint"
VERSION = 1
MANIFEST = "MANIFEST.json"
LATEST = "LATEST"
_STEP_RE = re.compile(r"^step-(\d+)$")


class CheckpointError(RuntimeError):
    """A save that could not complete (failed write on some rank, or pieces
    that do not cover the tensors exactly once: a bug in the caller)."""


@dataclass
class Piece:
    """The part of one logical tensor that one rank saves.

    shape is the FULL logical shape; the TP slice is the contiguous slice
    [tp_index*n/tp_size, (tp_index+1)*n/tp_size) of dimension tp_dim
    (n = shape[tp_dim]); the piece covers elements [lo, hi) of that slice
    flattened row-major, and tensor holds those hi - lo elements.  Replicated
    tensors use tp_dim None, tp_index 0, tp_size 1; scalars shape ()."""
    name: str
    shape: tuple
    tp_dim: int | None
    tp_index: int
    tp_size: int
    lo: int
    hi: int
    tensor: torch.Tensor


def step_dirname(step: int) -> str:
    return f"step-{step:08d}"


def shard_filename(rank: int, world_size: int) -> str:
    return f"shard-{rank:05d}-of-{world_size:05d}.pt"


def _slice_shape(shape, tp_dim, tp_size) -> list:
    shape = list(shape)
    if tp_dim is not None:
        shape[tp_dim] //= tp_size
    return shape


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write_bytes(path: str, data: bytes) -> None:
    """tmp in the same directory + flush + fsync + rename + fsync directory."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path) or ".")


def _write_shard(step_dir: str, rank: int, world_size: int, tensors: list, extra: Any) -> dict:
    """Writes one rank's shard file atomically; returns {file, sha256, bytes}."""
    name = shard_filename(rank, world_size)
    path = os.path.join(step_dir, name)
    tmp = f"{path}.tmp.{os.getpid()}"
    sha, size = hashlib.sha256(), 0

    class Hashing:  # torch.save streams into it: the bytes are hashed as written, not re-read
        def write(self, b) -> int:
            nonlocal size
            sha.update(b)
            size += len(b)
            return f.write(b)

        def flush(self) -> None:
            f.flush()
    with open(tmp, "wb") as f:
        torch.save({"format": FORMAT, "rank": rank, "tensors": tensors, "extra": extra}, Hashing())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return {"file": name, "sha256": sha.hexdigest(), "bytes": size}


def _piece_record(p: Piece, index: int) -> dict:
    shape = tuple(int(s) for s in p.shape)
    if p.tensor.numel() != p.hi - p.lo:
        raise CheckpointError(f"{p.name}: tensor has {p.tensor.numel()} elements, range [{p.lo}, {p.hi}) needs {p.hi - p.lo}")
    return {"name": p.name, "shape": list(shape), "dtype": str(p.tensor.dtype).replace("torch.", ""),
            "tp_dim": p.tp_dim, "tp_index": int(p.tp_index), "tp_size": int(p.tp_size),
            "lo": int(p.lo), "hi": int(p.hi), "index": index}


def check_coverage(records: list) -> dict:
    """Groups piece records (with "file") by name and checks that every TP
    slice of every tensor is covered exactly once; returns the manifest's
    "tensors" dict.  Raises CheckpointError naming the first problem."""
    by_name: dict = {}
    for r in records:
        by_name.setdefault(r["name"], []).append(r)
    tensors = {}
    for name in sorted(by_name):
        rs = by_name[name]
        first = rs[0]
        shape, dtype, tp_dim, tp_size = first["shape"], first["dtype"], first["tp_dim"], first["tp_size"]
        for r in rs:
            got = (r["shape"], r["dtype"], r["tp_dim"], r["tp_size"])
            if got != (shape, dtype, tp_dim, tp_size):
                raise CheckpointError(f"{name}: pieces disagree on (shape, dtype, tp_dim, tp_size): "
                                      f"{(shape, dtype, tp_dim, tp_size)} vs {got}")
        if tp_dim is None:
            if tp_size != 1:
                raise CheckpointError(f"{name}: tp_dim None needs tp_size 1, got {tp_size}")
        elif not (0 <= tp_dim < len(shape)) or tp_size < 1 or shape[tp_dim] % tp_size:
            raise CheckpointError(f"{name}: cannot split shape {shape} dim {tp_dim} into {tp_size} slices")
        slice_numel = math.prod(_slice_shape(shape, tp_dim, tp_size))
        bad = [r["tp_index"] for r in rs if not 0 <= r["tp_index"] < tp_size]
        if bad:
            raise CheckpointError(f"{name}: tp_index {bad[0]} out of range for tp_size {tp_size}")
        for i in range(tp_size):
            ranges = sorted((r["lo"], r["hi"]) for r in rs if r["tp_index"] == i)
            if not ranges:
                raise CheckpointError(f"{name}: TP slice {i} of {tp_size} has no pieces")
            at = 0
            for lo, hi in ranges:
                if lo > hi or lo < 0:
                    raise CheckpointError(f"{name}: TP slice {i}: bad range [{lo}, {hi})")
                if lo != at and lo < hi:
                    kind = "gap" if lo > at else "overlap"
                    raise CheckpointError(f"{name}: TP slice {i}: {kind} at element {min(lo, at)} "
                                          f"(next piece [{lo}, {hi}), covered up to {at})")
                at = max(at, hi)
            if at != slice_numel:
                raise CheckpointError(f"{name}: TP slice {i}: covered [0, {at}) of {slice_numel} elements")
        tensors[name] = {"shape": shape, "dtype": dtype, "tp_dim": tp_dim, "tp_size": tp_size,
                         "pieces": [{k: r[k] for k in ("tp_index", "lo", "hi", "file", "index")}
                                    for r in sorted(rs, key=lambda r: (r["tp_index"], r["lo"]))]}
    return tensors


def _remove_checkpoint_dir(path: str) -> None:
    """Un-completes first (manifest), then deletes, so a crash mid-way leaves
    an incomplete directory rather than a manifest with missing shards."""
    try:
        os.remove(os.path.join(path, MANIFEST))
        _fsync_dir(path)
    except FileNotFoundError:
        pass
    shutil.rmtree(path, ignore_errors=True)


def _prepare_step_dir(directory: str, step_dir: str, meta: dict) -> None:
    """Rank 0, before any shard is written: creates the step directory or,
    when re-saving a step, removes its manifest (durably) and stale files."""
    json.dumps(meta)  # fail before writing anything if meta is not JSON-able
    os.makedirs(directory, exist_ok=True)
    if os.path.isdir(step_dir):
        _remove_checkpoint_dir(step_dir)
    os.makedirs(step_dir)
    _fsync_dir(directory)


def _publish_manifest(step_dir: str, manifest: dict) -> None:
    _atomic_write_bytes(os.path.join(step_dir, MANIFEST),
                        json.dumps(manifest, indent=1, sort_keys=True).encode())


def _finish(directory: str, step: int, step_dir: str, entries: list, meta: dict, keep: int | None) -> None:
    """Rank 0, after every rank wrote: coverage, manifest, LATEST, pruning."""
    if [e["rank"] for e in entries] != list(range(len(entries))):
        raise CheckpointError("gather_object must return every rank's entry, in rank order")
    failed = [e for e in entries if not e["ok"]]
    if failed:
        raise CheckpointError("; ".join(f"rank {e['rank']}: {e['error']}" for e in failed))
    records = [dict(r, file=e["file"]) for e in entries for r in e["pieces"]]
    manifest = {"format": FORMAT, "version": VERSION, "step": step, "world_size": len(entries),
                "meta": meta, "tensors": check_coverage(records),
                "files": {e["file"]: {"rank": e["rank"], "sha256": e["sha256"], "bytes": e["bytes"],
                                      "extra": e["extra"]} for e in entries if e["file"]}}
    _fsync_dir(step_dir)
    _publish_manifest(step_dir, manifest)
    try:  # the checkpoint is complete: what follows is housekeeping and cannot fail the save
        _atomic_write_bytes(os.path.join(directory, LATEST), (step_dirname(step) + "\n").encode())
        complete = 1
        for s, path, is_complete in reversed(list_checkpoints(directory)):
            if s >= step:
                continue  # the new one, and anything newer, is never touched
            if not is_complete:
                _remove_checkpoint_dir(path)
            elif keep is not None:
                complete += 1
                if complete > keep:
                    _remove_checkpoint_dir(path)
    except OSError as e:
        warnings.warn(f"checkpoint {step_dir} is complete, but updating LATEST or pruning failed: {e!r}")


def save(directory: str, step: int, rank: int, world_size: int, pieces: list, meta: dict,
         gather_object: Callable[[Any], list | None] | None = None,
         broadcast_object: Callable[[Any], Any] | None = None,
         keep: int | None = 2, extra: Any = None) -> str:
    """Collectively saves checkpoint `step`; every rank calls it with its own pieces.

    Collectives (called in the same order on every rank, whatever fails):
      gather_object(obj) -> list of every rank's obj (index = rank) on rank 0, None elsewhere;
      broadcast_object(obj) -> rank 0's obj on every rank (also serves as a barrier).
    Both may be omitted when world_size == 1; torch_collectives() adapts torch.distributed.
    `meta` (JSON-able) is taken from rank 0.  `extra` is any torch.save-able object stored
    in this rank's shard (e.g. its RNG states); Checkpoint.extra(rank) returns it.
    keep: complete checkpoints to keep including this one (None keeps all).
    Protocol: rank 0 prepares the step directory; broadcast(ok); each rank writes its shard;
    gather(ok, file, sha256, pieces); rank 0 checks coverage and writes the manifest;
    broadcast(error or None).  Raises CheckpointError on every rank if any part failed.
    Returns the step directory path."""
    if world_size == 1 and gather_object is None and broadcast_object is None:
        gather_object, broadcast_object = (lambda o: [o]), (lambda o: o)
    if gather_object is None or broadcast_object is None:
        raise ValueError("gather_object and broadcast_object are required when world_size > 1")
    if keep is not None and keep < 1:
        raise ValueError(f"keep must be >= 1 or None, got {keep}")
    step_dir = os.path.join(directory, step_dirname(step))
    error = None
    if rank == 0:
        try:
            _prepare_step_dir(directory, step_dir, meta)
        except Exception as e:  # noqa: BLE001 - reported collectively
            error = f"rank 0: preparing {step_dir}: {e!r}"
    error = broadcast_object(error)
    if error is not None:
        raise CheckpointError(error)
    entry = {"rank": rank, "ok": True, "error": None, "file": None, "sha256": None, "bytes": 0,
             "extra": extra is not None, "pieces": []}
    try:
        entry["pieces"] = [_piece_record(p, i) for i, p in enumerate(pieces)]
        if pieces or extra is not None:
            # a copy: torch.save of a view would write its whole underlying storage
            tensors = [p.tensor.detach().reshape(-1).to("cpu", copy=True) for p in pieces]
            entry.update(_write_shard(step_dir, rank, world_size, tensors, extra))
    except Exception as e:  # noqa: BLE001 - reported collectively
        entry.update(ok=False, error=repr(e), pieces=[])
    entries = gather_object(entry)
    if rank == 0:
        try:
            _finish(directory, step, step_dir, entries, meta, keep)
        except Exception as e:  # noqa: BLE001 - reported collectively
            error = str(e) if isinstance(e, CheckpointError) else repr(e)
    error = broadcast_object(error)
    if error is not None:
        raise CheckpointError(f"checkpoint {step_dir} not written: {error}")
    return step_dir


def torch_collectives() -> tuple:
    """(gather_object, broadcast_object) over torch.distributed's default group
    (rank 0 = global rank 0); works with gloo and NCCL (set the CUDA device first)."""
    import torch.distributed as dist

    def gather_object(obj):
        out = [None] * dist.get_world_size()
        dist.all_gather_object(out, obj)
        return out if dist.get_rank() == 0 else None

    def broadcast_object(obj):
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    return gather_object, broadcast_object


def list_checkpoints(directory: str) -> list:
    """[(step, path, complete)] for every step-* directory, oldest first;
    complete means MANIFEST.json exists (not that it parses or verifies)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    out = []
    for n in names:
        m = _STEP_RE.match(n)
        path = os.path.join(directory, n)
        if m and os.path.isdir(path):
            out.append((int(m.group(1)), path, os.path.isfile(os.path.join(path, MANIFEST))))
    return sorted(out)


def _file_problem(path: str, want_bytes: int, want_sha: str, verify: bool) -> str | None:
    try:
        size = os.path.getsize(path)
    except OSError as e:
        return f"missing ({e.strerror})"
    if size != want_bytes:
        return f"size {size} bytes, manifest says {want_bytes} ({'truncated' if size < want_bytes else 'grown'})"
    if verify:
        sha = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                sha.update(block)
        if sha.hexdigest() != want_sha:
            return f"SHA-256 {sha.hexdigest()[:16]}... differs from manifest's {want_sha[:16]}..."
    return None


class Checkpoint:
    """A complete checkpoint, verified by load(): .step, .meta, .path, .world_size,
    names(), full(name), shard(name, tp_dim, tp_index, tp_size), extra(rank)."""

    def __init__(self, path: str, manifest: dict):
        self.path, self.manifest = path, manifest
        self.step, self.meta, self.world_size = manifest["step"], manifest["meta"], manifest["world_size"]
        self._files: dict = {}

    def names(self) -> list:
        return sorted(self.manifest["tensors"])

    def _load_file(self, name: str) -> dict:
        if name not in self._files:
            self._files[name] = torch.load(os.path.join(self.path, name), map_location="cpu")
        return self._files[name]

    def clear_cache(self) -> None:
        """Drops the shard files read so far."""
        self._files.clear()

    def _info(self, name: str) -> dict:
        try:
            return self.manifest["tensors"][name]
        except KeyError:
            known = self.names()
            raise KeyError(f"{name!r} is not in checkpoint {self.path} ({len(known)} tensors, e.g. "
                           f"{', '.join(known[:5])})") from None

    def full(self, name: str) -> torch.Tensor:
        """The full logical tensor, assembled exactly from its pieces."""
        info = self._info(name)
        shape, tp_dim, tp_size = tuple(info["shape"]), info["tp_dim"], info["tp_size"]
        slice_shape = _slice_shape(shape, tp_dim, tp_size)
        out = torch.empty(shape, dtype=getattr(torch, info["dtype"]))
        for i in range(tp_size):
            flat = torch.empty(math.prod(slice_shape), dtype=out.dtype)
            for p in info["pieces"]:
                if p["tp_index"] == i:
                    flat[p["lo"]:p["hi"]] = self._load_file(p["file"])["tensors"][p["index"]]
            if tp_dim is None:
                out.copy_(flat.reshape(shape))
            else:
                out.narrow(tp_dim, i * slice_shape[tp_dim], slice_shape[tp_dim]).copy_(flat.reshape(slice_shape))
        return out

    def shard(self, name: str, tp_dim: int | None, tp_index: int, tp_size: int) -> torch.Tensor:
        """Slice tp_index of tp_size along tp_dim of the full tensor (a contiguous copy)."""
        full = self.full(name)
        if tp_dim is None:
            return full
        n = full.shape[tp_dim]
        if n % tp_size:
            raise ValueError(f"{name}: dim {tp_dim} of size {n} does not split into {tp_size}")
        return full.narrow(tp_dim, tp_index * (n // tp_size), n // tp_size).contiguous().clone()

    def extra(self, rank: int) -> Any:
        """The `extra` object rank `rank` passed to save(), or None."""
        for name, f in self.manifest["files"].items():
            if f["rank"] == rank and f["extra"]:
                return self._load_file(name)["extra"]
        return None


def load(directory: str, verify: bool = True, log: Callable[[str], None] = print,
         step: int | None = None) -> Checkpoint | None:
    """The newest usable complete checkpoint in `directory` (or only `step`), else None.

    Manifests that do not parse or have another format are skipped; shard files
    that are missing, of the wrong size or (when verify) wrong SHA-256 reject the
    checkpoint; each rejection is logged in one line and the next older complete
    checkpoint is tried.  LATEST is never read.  Typical multi-rank use: rank 0
    loads with verify=True and broadcasts .step; others load(step=..., verify=False)."""
    rejected = 0
    for s, path, complete in reversed(list_checkpoints(directory)):
        if not complete or (step is not None and s != step):
            continue
        mpath = os.path.join(path, MANIFEST)
        try:
            with open(mpath, "rb") as f:
                manifest = json.loads(f.read())
            if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
                raise ValueError(f"format {manifest.get('format')!r} version {manifest.get('version')!r}")
            if manifest.get("step") != s:
                raise ValueError(f"step {manifest.get('step')!r} does not match the directory")
            missing = {"files", "tensors", "meta", "world_size"} - manifest.keys()
            if missing:
                raise ValueError(f"no {', '.join(sorted(missing))}")
            files = sorted(manifest["files"].items())
        except (OSError, ValueError, AttributeError, KeyError, TypeError) as e:
            log(f"checkpoint: skipping {mpath}: unreadable manifest: {e}")
            rejected += 1
            continue
        problem = None
        for name, f in files:
            why = _file_problem(os.path.join(path, name), f["bytes"], f["sha256"], verify)
            if why:
                problem = f"{os.path.join(path, name)}: {why}"
                break
        if problem:
            log(f"checkpoint: rejecting step {s}: {problem}; trying an older one")
            rejected += 1
            continue
        return Checkpoint(path, manifest)
    if rejected:
        log(f"checkpoint: no usable checkpoint in {directory} ({rejected} rejected)")
    return None
