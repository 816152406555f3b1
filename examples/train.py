#!/usr/bin/python3
"""tessel's example training job: a small GPT-like language model, data-parallel on CPU.

It follows tessel's environment contract (examples/README.md): launched by srun, one process
per GPU, it reads its rank, the parallelism plan, its checkpoint directory and its metrics file
from the environment; it checkpoints and exits 85 on SIGUSR1/SIGTERM, resumes from its
checkpoint at any world size with the same loss curve, and appends one JSON line per optimizer
step to the metrics file. TESSEL_PROFILE=1 times the forward+backward pass of one micro-batch.

Exit codes: 0 all TESSEL_TOTAL_ITERATIONS steps done; 85 stopped on request with a checkpoint;
2 bad configuration (plan, environment, flags, incompatible checkpoint); anything else failure.

Python 3.11, standard library and torch only. torch is imported after the environment has been
checked, so a bad plan is refused within a fraction of a second.
"""

import argparse
import json
import math
import os
import random
import signal
import sys
import time

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_CONFIG = 2
EXIT_STOPPED = 85

CHECKPOINT_NAME = "checkpoint.pt"
CHECKPOINT_FORMAT = "tessel-example-v1"

# --------------------------------------------------------------------------------------------
# Stop signals. Installed before anything else (before torch is imported) so that a signal
# arriving during start-up is remembered instead of killing the process (SIGUSR1's default
# action is to terminate). The handler only sets a flag; the training loop acts on it at the
# next optimizer-step boundary.

_stop_signal = None


def _on_stop_signal(signum, frame):
    global _stop_signal
    if _stop_signal is None:
        _stop_signal = signum


signal.signal(signal.SIGUSR1, _on_stop_signal)
signal.signal(signal.SIGTERM, _on_stop_signal)


class ConfigError(Exception):
    """A configuration the job refuses; main() prints it and exits EXIT_CONFIG (2)."""


# --------------------------------------------------------------------------------------------
# Command line: the model shape and hyper-parameters. Everything the scheduler decides comes
# from the environment (see README.md).

EPILOG = """\
environment (set by tessel serve; see examples/README.md for the full contract):
  SLURM_PROCID, SLURM_LOCALID, TESSEL_WORLD_SIZE (or SLURM_NTASKS), MASTER_ADDR, MASTER_PORT
  TESSEL_JOB_ID, TESSEL_JOB_NAME, TESSEL_LAUNCH, TESSEL_GPU_TYPE, TESSEL_PLAN_JSON
  TESSEL_DP, TESSEL_TP, TESSEL_PP, TESSEL_MICRO_BATCH, TESSEL_NUM_MICRO_BATCHES,
  TESSEL_GLOBAL_BATCH, TESSEL_RECOMPUTE, TESSEL_ZERO_STAGE, TESSEL_PRECISION,
  TESSEL_TOTAL_ITERATIONS, TESSEL_CHECKPOINT_DIR, TESSEL_CHECKPOINT_INTERVAL_S,
  TESSEL_CHECKPOINT_INTERVAL_STEPS, TESSEL_METRICS_FILE,
  TESSEL_PROFILE, TESSEL_PROFILE_STEPS, TESSEL_PROFILE_LAYERS

signals: SIGUSR1 or SIGTERM = checkpoint at the next optimizer-step boundary and exit 85.
exit codes: 0 done, 85 stopped with a checkpoint, 2 bad configuration, other = failure.

example (one process, no Slurm):
  TESSEL_GLOBAL_BATCH=32 TESSEL_TOTAL_ITERATIONS=50 TESSEL_METRICS_FILE=/tmp/m.jsonl \\
  TESSEL_CHECKPOINT_DIR=/tmp/ckpt /usr/bin/python3 examples/train.py
"""


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="train.py",
        description="tessel example job: a small GPT-like language model trained data-parallel "
        "(gloo, CPU) on synthetic Markov-chain text, following tessel's environment contract.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    m = p.add_argument_group("model shape (must match the job spec's model)")
    m.add_argument("--layers", type=int, default=2, help="transformer blocks (default 2)")
    m.add_argument("--hidden", type=int, default=64, help="hidden size (default 64)")
    m.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    m.add_argument("--seq-len", type=int, default=32, help="tokens per sample (default 32)")
    m.add_argument("--vocab", type=int, default=256, help="vocabulary size (default 256)")
    o = p.add_argument_group("training")
    o.add_argument("--optimizer", choices=["adamw", "sgd"], default="adamw",
                   help="AdamW or SGD with momentum (default adamw)")
    o.add_argument("--lr", type=float, default=None,
                   help="learning rate (default 3e-3 for adamw, 0.05 for sgd)")
    o.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    o.add_argument("--weight-decay", type=float, default=0.01, help="weight decay (default 0.01)")
    o.add_argument("--seed", type=int, default=1234,
                   help="model initialisation seed (default 1234)")
    o.add_argument("--data-seed", type=int, default=42,
                   help="seed of the synthetic data (Markov chain and samples; default 42)")
    r = p.add_argument_group("runtime")
    r.add_argument("--threads", type=int, default=1,
                   help="torch intra-op threads per process (default 1: one process per core)")
    r.add_argument("--sim-seconds-per-sample", type=float, default=0.0,
                   help="emulate a slower device: each rank sleeps this many seconds per sample "
                   "it processes in every step (and every profiled micro-batch), so step time "
                   "scales with the per-replica batch as on a real GPU (default 0)")
    r.add_argument("--collective-timeout-s", type=float, default=300.0,
                   help="gloo rendezvous and collective timeout (default 300)")
    r.add_argument("--log-every", type=int, default=10,
                   help="rank 0 prints a progress line every N steps (default 10; 0 = never)")
    args = p.parse_args(argv)
    if args.lr is None:
        args.lr = 3e-3 if args.optimizer == "adamw" else 0.05
    for name in ("layers", "hidden", "heads", "seq_len", "vocab", "threads"):
        if getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.vocab < 2:
        raise ConfigError(f"--vocab must be >= 2, got {args.vocab}")
    if args.hidden % args.heads:
        raise ConfigError(f"--hidden {args.hidden} is not divisible by --heads {args.heads}")
    if args.sim_seconds_per_sample < 0 or args.log_every < 0 or args.collective_timeout_s <= 0:
        raise ConfigError("--sim-seconds-per-sample and --log-every must be >= 0, "
                          "--collective-timeout-s > 0")
    return args


# --------------------------------------------------------------------------------------------
# The environment contract.

PRECISIONS_RUN_AS_FP32 = {"fp32", "tf32", "fp16", "fp8", "amp", "mixed"}
RECOMPUTE_MODES = ("none", "selective", "full")

# TESSEL_PLAN_JSON field -> (environment variable, kind).
PLAN_FIELDS = {
    "dp": ("TESSEL_DP", int), "tp": ("TESSEL_TP", int), "pp": ("TESSEL_PP", int),
    "micro_batch": ("TESSEL_MICRO_BATCH", int),
    "num_micro_batches": ("TESSEL_NUM_MICRO_BATCHES", int),
    "global_batch": ("TESSEL_GLOBAL_BATCH", int),
    "recompute": ("TESSEL_RECOMPUTE", str), "zero_stage": ("TESSEL_ZERO_STAGE", int),
    "precision": ("TESSEL_PRECISION", str), "gpu_type": ("TESSEL_GPU_TYPE", str),
}


def _as_int(name, text, minimum=None):
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} must be >= {minimum}")
    return value


def _as_float(name, text, minimum=None):
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not a number") from None
    if not math.isfinite(value) or (minimum is not None and value < minimum):
        raise ConfigError(f"{name}={text!r} must be a finite number >= {minimum}")
    return value


class Contract:
    """Everything read from the environment, validated. Raises ConfigError."""

    def __init__(self, env):
        self.profile = env.get("TESSEL_PROFILE", "0").strip() not in ("", "0")
        self.job_id = _as_int("TESSEL_JOB_ID", env.get("TESSEL_JOB_ID", "0"))
        self.job_name = env.get("TESSEL_JOB_NAME", "")
        self.launch = _as_int("TESSEL_LAUNCH", env.get("TESSEL_LAUNCH", "0"), 0)
        self.metrics_file = env.get("TESSEL_METRICS_FILE") or None

        plan = self._plan_values(env)
        self.gpu_type = plan.get("gpu_type", "")
        self.tp = _as_int("TESSEL_TP", plan.get("tp", 1), 1)
        self.pp = _as_int("TESSEL_PP", plan.get("pp", 1), 1)
        # Profiling times one stage (TESSEL_PROFILE_LAYERS layers) of any pipeline, so pp is
        # free there; a tensor-parallel shard cannot be emulated in either mode.
        if self.tp != 1 or (self.pp != 1 and not self.profile):
            raise ConfigError(f"TESSEL_TP={self.tp} TESSEL_PP={self.pp}: this example is "
                              "data-parallel only; it needs TESSEL_TP=1 and TESSEL_PP=1"
                              + ("" if not self.profile else " (profiling: TESSEL_TP=1)"))
        self.recompute_requested = str(plan.get("recompute", "none")).strip().lower()
        if self.recompute_requested not in RECOMPUTE_MODES:
            raise ConfigError(f"TESSEL_RECOMPUTE={self.recompute_requested!r}: expected one of "
                              + "|".join(RECOMPUTE_MODES))
        self.zero_stage = _as_int("TESSEL_ZERO_STAGE", plan.get("zero_stage", 0), 0)
        if self.zero_stage > 3:
            raise ConfigError(f"TESSEL_ZERO_STAGE={self.zero_stage}: expected 0..3")
        self.precision_requested = str(plan.get("precision", "fp32")).strip().lower()
        if not self.precision_requested:
            raise ConfigError("TESSEL_PRECISION is empty; expected fp32, bf16, fp16, ...")

        if self.profile:
            self._read_profile(env, plan)
        else:
            self._read_training(env, plan)

    @staticmethod
    def _plan_values(env):
        """Merges TESSEL_PLAN_JSON with the individual variables; they must agree."""
        values = {}
        text = env.get("TESSEL_PLAN_JSON", "").strip()
        if text:
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as e:
                raise ConfigError(f"TESSEL_PLAN_JSON is not valid JSON: {e}") from None
            if not isinstance(doc, dict):
                raise ConfigError("TESSEL_PLAN_JSON must be a JSON object")
            for field, (var, kind) in PLAN_FIELDS.items():
                if field in doc and doc[field] is not None:
                    values[field] = doc[field]
            for field in ("gpus", "nodes"):
                if field in doc and doc[field] is not None:
                    values[field] = _as_int(f"TESSEL_PLAN_JSON.{field}", doc[field], 1)
        for field, (var, kind) in PLAN_FIELDS.items():
            if var not in env or env[var].strip() == "":
                continue
            own = env[var].strip()
            if field in values:
                a, b = str(values[field]).strip(), own
                if kind is int:
                    a = _as_int(f"TESSEL_PLAN_JSON.{field}", a)
                    b = _as_int(var, b)
                else:
                    a, b = a.lower(), b.lower()
                if a != b:
                    raise ConfigError(f"{var}={own} disagrees with TESSEL_PLAN_JSON "
                                      f"{field}={values[field]}")
            values[field] = own
        return values

    def _read_profile(self, env, plan):
        self.world_size, self.rank, self.local_rank = 1, 0, 0
        self.profile_steps = _as_int("TESSEL_PROFILE_STEPS",
                                     env.get("TESSEL_PROFILE_STEPS", "5"), 1)
        layers = env.get("TESSEL_PROFILE_LAYERS", "").strip()
        self.profile_layers = _as_int("TESSEL_PROFILE_LAYERS", layers, 1) if layers else None
        self.micro_batch = _as_int("TESSEL_MICRO_BATCH", plan.get("micro_batch", 1), 1)

    def _read_training(self, env, plan):
        ws_env = env.get("TESSEL_WORLD_SIZE", "").strip()
        ntasks = env.get("SLURM_NTASKS", "").strip()
        if ws_env:
            self.world_size = _as_int("TESSEL_WORLD_SIZE", ws_env, 1)
            if ntasks and _as_int("SLURM_NTASKS", ntasks, 1) != self.world_size:
                raise ConfigError(f"TESSEL_WORLD_SIZE={self.world_size} but SLURM_NTASKS={ntasks}: "
                                  "launch one task per GPU of the plan")
        else:
            self.world_size = _as_int("SLURM_NTASKS", ntasks, 1) if ntasks else 1
        procid = env.get("SLURM_PROCID", "").strip()
        if not procid and self.world_size > 1:
            raise ConfigError(f"SLURM_PROCID is not set (world size {self.world_size})")
        self.rank = _as_int("SLURM_PROCID", procid or "0", 0)
        if self.rank >= self.world_size:
            raise ConfigError(f"SLURM_PROCID={self.rank} is not below the world size "
                              f"{self.world_size}")
        self.local_rank = _as_int("SLURM_LOCALID", env.get("SLURM_LOCALID", "0") or "0", 0)
        if "gpus" in plan and plan["gpus"] != self.world_size:
            raise ConfigError(f"TESSEL_PLAN_JSON gpus={plan['gpus']} but the world size is "
                              f"{self.world_size}: one process per GPU")
        self.nodes = plan.get("nodes")

        self.dp = _as_int("TESSEL_DP", plan.get("dp", self.world_size), 1)
        if self.dp != self.world_size:
            raise ConfigError(f"TESSEL_DP={self.dp} but the world size is {self.world_size}: "
                              "a data-parallel-only plan needs dp == world size")
        self.num_micro_batches = _as_int("TESSEL_NUM_MICRO_BATCHES",
                                         plan.get("num_micro_batches", 1), 1)
        if "micro_batch" in plan:
            self.micro_batch = _as_int("TESSEL_MICRO_BATCH", plan["micro_batch"], 1)
            default_global = self.dp * self.micro_batch * self.num_micro_batches
        else:
            default_global = 32
        self.global_batch = _as_int("TESSEL_GLOBAL_BATCH",
                                    plan.get("global_batch", default_global), 1)
        if "micro_batch" not in plan:
            per_step = self.dp * self.num_micro_batches
            if self.global_batch % per_step:
                raise ConfigError(f"TESSEL_GLOBAL_BATCH={self.global_batch} is not divisible by "
                                  f"dp*num_micro_batches={per_step}; set TESSEL_MICRO_BATCH")
            self.micro_batch = self.global_batch // per_step
        product = self.dp * self.micro_batch * self.num_micro_batches
        if product != self.global_batch:
            raise ConfigError(
                f"plan does not add up: dp*micro_batch*num_micro_batches = {self.dp}*"
                f"{self.micro_batch}*{self.num_micro_batches} = {product}, but "
                f"TESSEL_GLOBAL_BATCH={self.global_batch}")

        self.total_iterations = _as_int("TESSEL_TOTAL_ITERATIONS",
                                        env.get("TESSEL_TOTAL_ITERATIONS", "100"), 1)
        self.checkpoint_dir = env.get("TESSEL_CHECKPOINT_DIR") or None
        self.checkpoint_interval_s = _as_float(
            "TESSEL_CHECKPOINT_INTERVAL_S", env.get("TESSEL_CHECKPOINT_INTERVAL_S", "60"), 0)
        self.checkpoint_interval_steps = _as_int(
            "TESSEL_CHECKPOINT_INTERVAL_STEPS", env.get("TESSEL_CHECKPOINT_INTERVAL_STEPS", "0"), 0)
        if self.world_size > 1:
            self.master_addr = env.get("MASTER_ADDR", "127.0.0.1") or "127.0.0.1"
            port = env.get("MASTER_PORT", "").strip()
            if not port:
                raise ConfigError(f"MASTER_PORT is not set (world size {self.world_size})")
            self.master_port = _as_int("MASTER_PORT", port, 1)
            if self.master_port > 65535:
                raise ConfigError(f"MASTER_PORT={self.master_port} is not a TCP port")


# --------------------------------------------------------------------------------------------
# Metrics: one JSON object per line, each line written with a single write(2) on an O_APPEND
# descriptor, so a reader tailing the file never sees a torn line.

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


def _finite_or_none(x):
    return x if math.isfinite(x) else None


# --------------------------------------------------------------------------------------------
# Synthetic data: sequences from a fixed Markov chain. Sample g (the global sample index) is a
# function of (data seed, g) alone, so a step's data does not depend on the world size or on
# how the global batch is split into replicas and micro-batches.

class MarkovData:
    BRANCH_WEIGHTS = (0.55, 0.25, 0.12, 0.08)

    def __init__(self, seed, vocab, seq_len):
        self.seed, self.vocab, self.seq_len = seed, vocab, seq_len
        rng = random.Random(seed)
        k = min(len(self.BRANCH_WEIGHTS), vocab)
        self.successors = [rng.sample(range(vocab), k) for _ in range(vocab)]
        cum, total = [], 0.0
        for w in self.BRANCH_WEIGHTS[:k]:
            total += w
            cum.append(total)
        self.cum_weights = cum

    def sample(self, g):
        rng = random.Random(self.seed * 1_000_003 * (1 << 40) + g)
        t = rng.randrange(self.vocab)
        tokens = [t]
        for _ in range(self.seq_len):
            t = rng.choices(self.successors[t], cum_weights=self.cum_weights)[0]
            tokens.append(t)
        return tokens

    def batch(self, torch, first, count):
        rows = [self.sample(first + i) for i in range(count)]
        data = torch.tensor(rows, dtype=torch.long)
        return data[:, :-1], data[:, 1:]


# --------------------------------------------------------------------------------------------
# The model: token embedding, learned positions, pre-LN blocks with causal self-attention,
# final LayerNorm, LM head.

def build_model(torch, layers, hidden, heads, seq_len, vocab, recompute_full):
    import torch.utils.checkpoint
    nn = torch.nn
    F = torch.nn.functional

    class LayerNorm32(nn.LayerNorm):
        # Computes in fp32: torch 1.13's CPU autocast cannot run layer_norm on bf16 input.
        def forward(self, x):
            return F.layer_norm(x.float(), self.normalized_shape, self.weight, self.bias, self.eps)

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.proj = nn.Linear(hidden, hidden)
            mask = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)
            self.register_buffer("mask", mask, persistent=False)

        def forward(self, x):
            b, t, c = x.shape
            hd = c // heads
            q, k, v = self.qkv(x).split(c, dim=2)
            q = q.view(b, t, heads, hd).transpose(1, 2)
            k = k.view(b, t, heads, hd).transpose(1, 2)
            v = v.view(b, t, heads, hd).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
            att = att.masked_fill(self.mask[:t, :t], float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, c)
            return self.proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = LayerNorm32(hidden)
            self.attn = CausalSelfAttention()
            self.ln2 = LayerNorm32(hidden)
            self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                     nn.Linear(4 * hidden, hidden))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, hidden)
            self.pos = nn.Embedding(seq_len, hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = LayerNorm32(hidden)
            self.head = nn.Linear(hidden, vocab)
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear):
                    nn.init.zeros_(m.bias)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(torch.arange(t))
            for block in self.blocks:
                if recompute_full and torch.is_grad_enabled():
                    x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
                else:
                    x = block(x)
            return self.head(self.ln_f(x)).float()

    return GPT()


def effective_precision(torch, requested, notes):
    """bf16 runs under CPU autocast if it works here; everything else runs in fp32."""
    if requested == "bf16":
        try:
            probe = build_model(torch, 1, 8, 2, 4, 8, False)
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                out = probe(torch.zeros(1, 4, dtype=torch.long))
            out.sum().backward()
            return "bf16"
        except Exception as e:  # noqa: BLE001 - any failure means "not supported here"
            notes.append(f"bf16 CPU autocast does not work in torch {torch.__version__} "
                         f"({type(e).__name__}); running fp32")
            return "fp32"
    if requested != "fp32":
        notes.append(f"precision {requested} is not supported on CPU; running fp32")
    return "fp32"


def autocast_context(torch, precision):
    if precision == "bf16":
        return torch.autocast(device_type="cpu", dtype=torch.bfloat16)
    import contextlib
    return contextlib.nullcontext()


# --------------------------------------------------------------------------------------------
# Checkpoints: rank 0 writes <dir>/checkpoint.pt atomically (temp file, fsync, rename, fsync of
# the directory); every rank reads it at start-up, so the directory must be visible to all.

def model_identity(args):
    return {"layers": args.layers, "hidden": args.hidden, "heads": args.heads,
            "seq_len": args.seq_len, "vocab": args.vocab, "data_seed": args.data_seed,
            "optimizer": args.optimizer}


def save_checkpoint(torch, directory, state):
    os.makedirs(directory, exist_ok=True)
    final = os.path.join(directory, CHECKPOINT_NAME)
    tmp = os.path.join(directory, f".{CHECKPOINT_NAME}.tmp.{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def load_checkpoint(torch, directory, args):
    if not directory:
        return None
    path = os.path.join(directory, CHECKPOINT_NAME)
    if not os.path.exists(path):
        return None
    state = torch.load(path, map_location="cpu")
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ConfigError(f"{path} is not a {CHECKPOINT_FORMAT} checkpoint")
    want, got = model_identity(args), state.get("identity", {})
    if want != got:
        diff = {k: (got.get(k), want[k]) for k in want if got.get(k) != want[k]}
        raise ConfigError(f"{path} was written by a different model or data (checkpoint vs "
                          f"flags: {diff}); use another TESSEL_CHECKPOINT_DIR")
    return state


# --------------------------------------------------------------------------------------------
# Training.

def setup_torch(args):
    import torch
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    return torch


def resolve_recompute(requested, notes):
    if requested == "selective":
        notes.append("recompute=selective is treated as none (only full recomputation is "
                     "implemented)")
        return "none"
    return requested


def train(args, c):
    import datetime
    torch = setup_torch(args)
    dist = None
    if c.world_size > 1:
        import torch.distributed as dist
        os.environ["MASTER_ADDR"] = c.master_addr
        os.environ["MASTER_PORT"] = str(c.master_port)
        dist.init_process_group(
            "gloo", init_method="env://", rank=c.rank, world_size=c.world_size,
            timeout=datetime.timedelta(seconds=args.collective_timeout_s))
    notes = []
    precision = effective_precision(torch, c.precision_requested, notes)
    recompute = resolve_recompute(c.recompute_requested, notes)
    if c.zero_stage:
        notes.append(f"zero_stage={c.zero_stage} accepted; optimizer state stays replicated "
                     "(the update is the same)")
    lead = c.rank == 0
    if lead:
        for n in notes:
            print(f"train.py: note: {n}", file=sys.stderr, flush=True)

    torch.manual_seed(args.seed)
    model = build_model(torch, args.layers, args.hidden, args.heads, args.seq_len, args.vocab,
                        recompute == "full")
    params = [p for p in model.parameters()]
    if args.optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=args.weight_decay)
    else:
        opt = torch.optim.SGD(params, lr=args.lr, momentum=args.momentum,
                              weight_decay=args.weight_decay)
    data = MarkovData(args.data_seed, args.vocab, args.seq_len)

    step, samples_seen = 0, 0
    state = load_checkpoint(torch, c.checkpoint_dir, args)
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        step, samples_seen = state["step"], state["samples_seen"]

    metrics = Metrics(c.metrics_file if lead else None)
    metrics.write({"event": "start", "step": step, "time": time.time(),
                   "world_size": c.world_size, "launch": c.launch, "job_id": c.job_id,
                   "job_name": c.job_name, "gpu_type": c.gpu_type,
                   "resumed": state is not None, "global_batch": c.global_batch,
                   "micro_batch": c.micro_batch, "num_micro_batches": c.num_micro_batches,
                   "total_iterations": c.total_iterations, "precision": precision,
                   "precision_requested": c.precision_requested, "recompute": recompute,
                   "recompute_requested": c.recompute_requested, "notes": notes})

    def checkpoint_state():
        return {"format": CHECKPOINT_FORMAT, "identity": model_identity(args), "step": step,
                "samples_seen": samples_seen, "model": model.state_dict(),
                "optimizer": opt.state_dict(), "torch_rng": torch.get_rng_state(),
                "world_size": c.world_size, "launch": c.launch, "job_id": c.job_id,
                "global_batch": c.global_batch}

    def write_checkpoint():
        save_checkpoint(torch, c.checkpoint_dir, checkpoint_state())
        metrics.write({"event": "checkpoint", "step": step, "time": time.time()})

    def stop_here():
        """All ranks: rank 0 checkpoints, everyone learns whether that worked."""
        ok = 1.0
        if lead:
            if c.checkpoint_dir:
                try:
                    write_checkpoint()
                except Exception as e:  # noqa: BLE001 - reported, then every rank fails
                    print(f"train.py: checkpoint failed: {e!r}", file=sys.stderr, flush=True)
                    ok = 0.0
            else:
                print("train.py: stop requested but TESSEL_CHECKPOINT_DIR is not set; "
                      "nothing saved", file=sys.stderr, flush=True)
        if dist is not None:
            flag = torch.tensor([ok], dtype=torch.float64)
            dist.all_reduce(flag, op=dist.ReduceOp.MIN)
            ok = flag.item()
        if lead:
            got = "this rank got signal %s" % _stop_signal if _stop_signal else "another rank"
            print(f"train.py: stopped at step {step} on request ({got})", flush=True)
        return EXIT_STOPPED if ok == 1.0 else EXIT_FAILURE

    def agree(local_flag, extra=0.0):
        """Sums (extra, flag) over ranks: one collective per step boundary."""
        if dist is None:
            return extra, local_flag
        t = torch.tensor([extra, local_flag], dtype=torch.float64)
        dist.all_reduce(t)
        return t[0].item(), t[1].item()

    # Step boundary at launch: a stop requested during start-up is honoured before any work.
    _, stop = agree(1.0 if _stop_signal is not None else 0.0)
    if stop > 0:
        return finish(dist, metrics, stop_here())

    mb, nmb, g = c.micro_batch, c.num_micro_batches, c.global_batch
    last_checkpoint_t, last_checkpoint_step = time.monotonic(), step
    while step < c.total_iterations:
        t0 = time.perf_counter()
        for p in params:
            p.grad = None
        first = samples_seen + c.rank * mb * nmb
        local_loss = 0.0
        for j in range(nmb):
            x, y = data.batch(torch, first + j * mb, mb)
            with autocast_context(torch, precision):
                logits = model(x)
            per_token = torch.nn.functional.cross_entropy(
                logits.reshape(-1, args.vocab), y.reshape(-1), reduction="none")
            per_sample = per_token.view(mb, args.seq_len).mean(dim=1)
            (per_sample.sum() / g).backward()
            local_loss += per_sample.detach().double().sum().item()
        if args.sim_seconds_per_sample:
            time.sleep(args.sim_seconds_per_sample * mb * nmb)
        if dist is not None:
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            dist.all_reduce(flat)
            offset = 0
            for p in params:
                n = p.numel()
                p.grad.copy_(flat[offset:offset + n].view_as(p))
                offset += n
        loss_sum, stop = agree(1.0 if _stop_signal is not None else 0.0, local_loss)
        opt.step()
        step += 1
        samples_seen += g
        dt = time.perf_counter() - t0
        loss = loss_sum / g
        metrics.write({"step": step, "step_time_s": dt, "samples": g,
                       "loss": _finite_or_none(loss), "time": time.time(),
                       "world_size": c.world_size})
        if lead and args.log_every and (step % args.log_every == 0 or step == c.total_iterations):
            print(f"step {step}/{c.total_iterations} loss {loss:.4f} step_time {dt:.3f}s "
                  f"world_size {c.world_size}", flush=True)
        if stop > 0 and step < c.total_iterations:
            # Asked to stop at its last step, it finishes instead (below).
            return finish(dist, metrics, stop_here())
        if lead and c.checkpoint_dir and step < c.total_iterations:
            due_t = c.checkpoint_interval_s > 0 and \
                time.monotonic() - last_checkpoint_t >= c.checkpoint_interval_s
            due_n = c.checkpoint_interval_steps > 0 and \
                step - last_checkpoint_step >= c.checkpoint_interval_steps
            if due_t or due_n:
                try:
                    write_checkpoint()
                except Exception as e:  # noqa: BLE001 - a missed periodic checkpoint is not fatal
                    print(f"train.py: warning: periodic checkpoint failed: {e!r}",
                          file=sys.stderr, flush=True)
                last_checkpoint_t, last_checkpoint_step = time.monotonic(), step

    # Done: a final checkpoint (a relaunch after completion then exits 0 at once), then "done".
    ok = 1.0
    if lead and c.checkpoint_dir:
        try:
            write_checkpoint()
        except Exception as e:  # noqa: BLE001
            print(f"train.py: final checkpoint failed: {e!r}", file=sys.stderr, flush=True)
            ok = 0.0
    if dist is not None:
        flag = torch.tensor([ok], dtype=torch.float64)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN)
        ok = flag.item()
    if ok != 1.0:
        return finish(dist, metrics, EXIT_FAILURE)
    metrics.write({"event": "done", "step": step, "time": time.time()})
    return finish(dist, metrics, EXIT_OK)


def finish(dist, metrics, code):
    metrics.close()
    if dist is not None:
        dist.destroy_process_group()
    return code


# --------------------------------------------------------------------------------------------
# Profiling: one process, one micro-batch, forward+backward only.

def profile(args, c):
    torch = setup_torch(args)
    notes = []
    precision = effective_precision(torch, c.precision_requested, notes)
    recompute = resolve_recompute(c.recompute_requested, notes)
    for n in notes:
        print(f"train.py: note: {n}", file=sys.stderr, flush=True)
    layers = c.profile_layers or args.layers
    torch.manual_seed(args.seed)
    model = build_model(torch, layers, args.hidden, args.heads, args.seq_len, args.vocab,
                        recompute == "full")
    data = MarkovData(args.data_seed, args.vocab, args.seq_len)
    x, y = data.batch(torch, 0, c.micro_batch)
    metrics = Metrics(c.metrics_file)

    def fwd_bwd():
        model.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        with autocast_context(torch, precision):
            logits = model(x)
        torch.nn.functional.cross_entropy(logits.reshape(-1, args.vocab), y.reshape(-1)).backward()
        if args.sim_seconds_per_sample:
            time.sleep(args.sim_seconds_per_sample * c.micro_batch)
        return time.perf_counter() - t0

    fwd_bwd()  # warm-up, not recorded
    for i in range(1, c.profile_steps + 1):
        dt = fwd_bwd()
        line = {"profile": True, "step": i, "step_time_s": dt, "micro_batch": c.micro_batch,
                "layers": layers, "precision": precision, "recompute": recompute,
                "time": time.time()}
        metrics.write(line)
        print(json.dumps(line), flush=True)
    metrics.close()
    return EXIT_OK


def main(argv):
    try:
        args = parse_args(argv)
        contract = Contract(os.environ)
        return profile(args, contract) if contract.profile else train(args, contract)
    except ConfigError as e:
        print(f"train.py: error: {e}", file=sys.stderr, flush=True)
        return EXIT_CONFIG


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
