"""The training loop of the contract: process groups, the plan's model, steps, stop protocol,
metrics and sharded checkpoints. `train(contract, spec)` returns the exit code.

A `spec` (see gpt_job.py for the example's) provides:
  layers                        transformer layers (the pipeline split counts them)
  check(contract)               refuse a plan this model cannot run (ConfigError)
  build_chunk(first, last, has_embedding, has_head, tp_group, sequence_parallel, recompute)
                                -> nn.Module with units() (its ZeRO-3 gather units)
  init(chunks, seed, tp_size, tp_rank)  deterministic initialisation, the same under any plan
  loss(output, labels, tp_group) -> per-sample losses of a micro-batch
  act_shape(micro_batch, contract)     the activation's shape between pipeline stages
  batch(first_sample, count)    -> (inputs, labels): samples [first, first + count) of the job
  make_optimizer(params)        -> a torch optimizer (elementwise: AdamW, SGD)
  identity                      dict stored in checkpoints; a checkpoint with another is refused
  seed                          initialisation seed
  sim_seconds_per_sample        emulated device time (sleep) per sample, 0 = off
  collective_timeout_s, log_every, threads
"""

import contextlib
import datetime
import os
import sys
import time

from . import _signals
from .contract import ConfigError, EXIT_FAILURE, EXIT_OK, EXIT_STOPPED
from .metrics import Metrics, finite_or_none

FORMAT = "tessel-job-v2"


def _say(text, err=False):
    print(f"tessel_job: {text}", file=sys.stderr if err else sys.stdout, flush=True)


def setup_torch(threads):
    # Deterministic cuBLAS needs its workspace fixed before CUDA starts.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    det = getattr(getattr(torch, "utils", None), "deterministic", None)
    if det is not None and hasattr(det, "fill_uninitialized_memory"):
        # torch >= 2.1 also fills every new uninitialised tensor with NaN under determinism:
        # one extra kernel per allocation, and nothing here reads memory before writing it.
        det.fill_uninitialized_memory = False
    return torch


def pick_device(torch, c):
    """CUDA device LOCAL_RANK mod the visible devices when torch sees one (TESSEL_DEVICE=auto
    or cuda), else the CPU. NCCL goes with CUDA, gloo with the CPU."""
    if c.device != "cpu" and torch.cuda.is_available():
        dev = torch.device("cuda", c.local_rank % torch.cuda.device_count())
        torch.cuda.set_device(dev)
        return dev
    if c.device == "cuda":
        raise ConfigError("TESSEL_DEVICE=cuda but torch sees no CUDA device "
                          f"(torch {torch.__version__}); use auto or cpu")
    return torch.device("cpu")


def effective_precision(torch, requested, notes, device=None):
    """bf16 runs under autocast when it works here (CPU or CUDA); tf32 on CUDA enables TF32
    matmuls; every other name runs fp32 (said in a note)."""
    if device is not None and device.type == "cuda":
        if requested == "bf16" and torch.cuda.is_bf16_supported():
            return "bf16"
        if requested == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            return "tf32"
        if requested != "fp32":
            notes.append(f"precision {requested} is not run by tessel_job on "
                         f"{torch.cuda.get_device_name(device)}; running fp32")
        return "fp32"
    if requested == "bf16":
        try:
            x = torch.ones(2, 4, requires_grad=True)
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                y = torch.nn.functional.layer_norm((x @ x.t()).float(), (2,))
            y.sum().backward()
            return "bf16"
        except Exception as e:  # noqa: BLE001 - any failure means "not supported here"
            notes.append(f"bf16 CPU autocast does not work in torch {torch.__version__} "
                         f"({type(e).__name__}); running fp32")
            return "fp32"
    if requested != "fp32":
        notes.append(f"precision {requested} is not supported on CPU; running fp32")
    return "fp32"


def autocast_factory(torch, precision, device=None):
    if precision == "bf16":
        kind = "cpu" if device is None else device.type
        return lambda: torch.autocast(device_type=kind, dtype=torch.bfloat16)
    return contextlib.nullcontext


class Model:
    """This rank's chunks of the model under the plan, and what runs them."""

    def __init__(self, torch, spec, c, topo, device):
        from .pipeline import split_layers
        n = c.pp * c.virtual_stages
        ranges = split_layers(spec.layers, n)
        self.chunks = []
        for k in range(topo.pp_rank, n, c.pp):
            first, last = ranges[k]
            self.chunks.append(spec.build_chunk(first, last, k == 0, k == n - 1, topo.tp_group,
                                                c.sequence_parallel, c.recompute_requested))
        torch.manual_seed(spec.seed)
        spec.init(self.chunks, spec.seed, topo.tp, topo.tp_rank)   # on the CPU: the same draws
        for chunk in self.chunks:
            chunk.to(device)


def train(c, spec):
    torch = setup_torch(spec.threads)
    import torch.distributed as dist
    from . import checkpoint as ckpt_mod
    from .pipeline import PipelineRunner
    from .topology import make_topology
    from .zero import ShardedOptimizer

    spec.check(c)
    device = pick_device(torch, c)
    if c.world_size > 1:
        os.environ["MASTER_ADDR"] = c.master_addr
        os.environ["MASTER_PORT"] = str(c.master_port)
        backend = c.dist_backend if c.dist_backend != "auto" else \
            ("nccl" if device.type == "cuda" else "gloo")
        if backend == "nccl" and device.type != "cuda":
            raise ConfigError("TESSEL_DIST_BACKEND=nccl needs a CUDA device; this rank runs on "
                              "the CPU (TESSEL_DEVICE, or no GPU visible)")
        dist.init_process_group(backend, init_method="env://", rank=c.rank,
                                world_size=c.world_size,
                                timeout=datetime.timedelta(seconds=spec.collective_timeout_s))
    topo = make_topology(c.world_size, c.rank, c.dp, c.tp, c.pp, dist if c.world_size > 1 else None)
    lead = c.rank == 0
    notes = []
    precision = effective_precision(torch, c.precision_requested, notes, device)
    if lead:
        for n in notes:
            _say(f"note: {n}", err=True)

    model = Model(torch, spec, c, topo, device)
    opt = ShardedOptimizer(model.chunks, topo, c.zero_stage, spec.make_optimizer)
    runner = PipelineRunner(topo, model.chunks, c.virtual_stages, c.num_micro_batches,
                            spec.act_shape(c.micro_batch, c), dist,
                            autocast_factory(torch, precision, device), device)

    def all_reduce(values, op=None):
        t = torch.tensor(values, dtype=torch.float64, device=device)
        if c.world_size > 1:
            dist.all_reduce(t, op=op or dist.ReduceOp.SUM)
        return t.tolist()

    collectives = ckpt_mod.torch_collectives() if c.world_size > 1 else (None, None)

    # Rank 0 finds the newest checkpoint whose shards verify (falling back past damaged ones)
    # and tells the others which step to read.
    step, samples_seen = 0, 0
    state = None
    if c.checkpoint_dir:
        if lead:
            state = ckpt_mod.load(c.checkpoint_dir, log=lambda m: _say(m, err=True))
        if c.world_size > 1:
            box = [state.step if state is not None else None]
            dist.broadcast_object_list(box, src=0)
            if not lead and box[0] is not None:
                state = ckpt_mod.load(c.checkpoint_dir, verify=False, step=box[0],
                                      log=lambda m: _say(f"rank {c.rank}: {m}", err=True))
                if state is None:
                    raise RuntimeError(f"rank {c.rank} cannot read checkpoint step {box[0]} in "
                                       f"{c.checkpoint_dir}; it must be the same directory on "
                                       "every rank")
    if state is not None:
        meta = state.meta
        if meta.get("format") != FORMAT:
            raise ConfigError(f"{state.path} is not a {FORMAT} checkpoint")
        want, got = spec.identity, meta.get("identity", {})
        if want != got:
            diff = {k: (got.get(k), want.get(k)) for k in set(want) | set(got) if got.get(k) != want.get(k)}
            raise ConfigError(f"{state.path} was written by a different model or data (checkpoint "
                              f"vs flags: {diff}); use another TESSEL_CHECKPOINT_DIR")
        opt.load(state)
        step, samples_seen = int(meta["step"]), int(meta["samples_seen"])

    metrics = Metrics(c.metrics_file if lead else None)
    metrics.write({"event": "start", "step": step, "time": time.time(),
                   "world_size": c.world_size, "launch": c.launch, "job_id": c.job_id,
                   "job_name": c.job_name, "gpu_type": c.gpu_type,
                   "resumed": state is not None, "global_batch": c.global_batch,
                   "micro_batch": c.micro_batch, "num_micro_batches": c.num_micro_batches,
                   "dp": c.dp, "tp": c.tp, "pp": c.pp, "virtual_stages": c.virtual_stages,
                   "sequence_parallel": c.sequence_parallel, "zero_stage": c.zero_stage,
                   "total_iterations": c.total_iterations, "precision": precision,
                   "device": str(device),
                   "precision_requested": c.precision_requested,
                   "recompute": c.recompute_requested,
                   "recompute_requested": c.recompute_requested, "notes": notes})

    def write_checkpoint():
        meta = {"format": FORMAT, "identity": spec.identity, "step": step,
                "samples_seen": samples_seen, "plan": c.plan_dict(), "world_size": c.world_size,
                "launch": c.launch, "job_id": c.job_id, "global_batch": c.global_batch}
        ckpt_mod.save(c.checkpoint_dir, step, c.rank, c.world_size, opt.pieces(ckpt_mod.Piece),
                      meta, *collectives, keep=c.checkpoint_keep)
        metrics.write({"event": "checkpoint", "step": step, "time": time.time()})

    def checkpoint_all():
        """Collective: every rank writes its shard; True when the checkpoint is complete."""
        try:
            write_checkpoint()
            return True
        except ckpt_mod.CheckpointError as e:
            if lead:
                _say(f"checkpoint failed: {e}", err=True)
            return False

    def stop_here():
        ok = True
        if c.checkpoint_dir:
            ok = checkpoint_all()
        elif lead:
            _say("stop requested but TESSEL_CHECKPOINT_DIR is not set; nothing saved", err=True)
        if lead:
            sig = _signals.stop_signal()
            got = f"this rank got signal {sig}" if sig else "another rank"
            _say(f"stopped at step {step} on request ({got})")
        return EXIT_STOPPED if ok else EXIT_FAILURE

    def finish(code):
        metrics.close()
        if c.world_size > 1:
            dist.destroy_process_group()
        return code

    stop = all_reduce([1.0 if _signals.stop_requested() else 0.0])[0]
    if stop > 0:
        return finish(stop_here())

    mb, nmb, g = c.micro_batch, c.num_micro_batches, c.global_batch
    replica_first = topo.dp_rank * mb * nmb
    sleep_s = spec.sim_seconds_per_sample * mb * nmb / (c.tp * c.pp)
    last_t, last_step = time.monotonic(), step
    while step < c.total_iterations:
        t0 = time.perf_counter()
        opt.zero_grad()
        base = samples_seen + replica_first
        # The stages that read data get the whole step's at once, copied before any kernel of
        # the step is queued: a copy from pageable memory per micro-batch would make the host
        # wait for the GPU's queue to drain every micro-batch.
        step_x = step_y = None
        if topo.first_stage or topo.last_stage:
            x, y = spec.batch(base, mb * nmb)
            if device.type == "cuda":
                x, y = x.pin_memory().to(device, non_blocking=True), \
                    y.pin_memory().to(device, non_blocking=True)
            step_x, step_y = x, y

        def micro(m):
            return step_x[m * mb:(m + 1) * mb], step_y[m * mb:(m + 1) * mb]

        local_loss = runner.run(lambda m: micro(m)[0], lambda m: micro(m)[1],
                                lambda out, y: spec.loss(out, y, topo.tp_group), g)
        if sleep_s:
            time.sleep(sleep_s)
        opt.step()
        contributes = topo.last_stage and topo.tp_rank == 0
        due = 0.0
        if lead and c.checkpoint_dir:
            due_t = c.checkpoint_interval_s > 0 and time.monotonic() - last_t >= c.checkpoint_interval_s
            due_n = c.checkpoint_interval_steps > 0 and step + 1 - last_step >= c.checkpoint_interval_steps
            due = 1.0 if (due_t or due_n) else 0.0
        loss_sum, stop, due = all_reduce([local_loss if contributes else 0.0,
                                          1.0 if _signals.stop_requested() else 0.0, due])
        step += 1
        samples_seen += g
        dt = time.perf_counter() - t0
        loss = loss_sum / g
        metrics.write({"step": step, "step_time_s": dt, "samples": g,
                       "loss": finite_or_none(loss), "time": time.time(),
                       "world_size": c.world_size})
        if lead and spec.log_every and (step % spec.log_every == 0 or step == c.total_iterations):
            _say(f"step {step}/{c.total_iterations} loss {loss:.4f} step_time {dt:.3f}s "
                 f"plan d{c.dp} t{c.tp} p{c.pp}")
        if stop > 0 and step < c.total_iterations:
            return finish(stop_here())   # asked at its last step, it finishes instead (below)
        if due > 0 and step < c.total_iterations:
            if not checkpoint_all() and lead:
                _say("warning: periodic checkpoint failed; training goes on", err=True)
            last_t, last_step = time.monotonic(), step

    if c.checkpoint_dir and not checkpoint_all():
        return finish(EXIT_FAILURE)
    metrics.write({"event": "done", "step": step, "time": time.time()})
    return finish(EXIT_OK)


def profile(c, spec):
    """One process: forward+backward of one micro-batch through a stage of
    TESSEL_PROFILE_LAYERS layers (with the embedding and the head), timed."""
    torch = setup_torch(spec.threads)
    device = pick_device(torch, c)
    notes = []
    precision = effective_precision(torch, c.precision_requested, notes, device)
    for n in notes:
        _say(f"note: {n}", err=True)
    layers = c.profile_layers or spec.layers
    chunk = spec.build_chunk(0, layers, True, True, None, False, c.recompute_requested)
    torch.manual_seed(spec.seed)
    spec.init([chunk], spec.seed, 1, 0)
    chunk.to(device)
    x, y = (z.to(device) for z in spec.batch(0, c.micro_batch))
    metrics = Metrics(c.metrics_file)
    autocast = autocast_factory(torch, precision, device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def fwd_bwd():
        chunk.zero_grad(set_to_none=True)
        sync()
        t0 = time.perf_counter()
        with autocast():
            out = chunk(x)
        spec.loss(out, y, None).mean().backward()
        sync()
        if spec.sim_seconds_per_sample:
            time.sleep(spec.sim_seconds_per_sample * c.micro_batch)
        return time.perf_counter() - t0

    import json
    fwd_bwd()  # warm-up, not recorded
    for i in range(1, c.profile_steps + 1):
        dt = fwd_bwd()
        line = {"profile": True, "step": i, "step_time_s": dt, "micro_batch": c.micro_batch,
                "layers": layers, "precision": precision, "recompute": c.recompute_requested,
                "time": time.time()}
        metrics.write(line)
        print(json.dumps(line), flush=True)
    metrics.close()
    return EXIT_OK
