"""The launch contract: everything tessel serve tells a job, read from the environment.

`Contract(os.environ)` validates it and raises ConfigError with one line naming the variable
and what is accepted. Nothing here imports torch, so a bad plan is refused in a fraction of a
second, before any checkpoint is touched. The variables are documented in examples/README.md.
"""

import json
import math

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_CONFIG = 2
EXIT_STOPPED = 85

RECOMPUTE_MODES = ("none", "selective", "full")


class ConfigError(Exception):
    """A configuration the job refuses: printed as one line, exit EXIT_CONFIG (2)."""


# TESSEL_PLAN_JSON field -> (environment variable, kind).
PLAN_FIELDS = {
    "dp": ("TESSEL_DP", int), "tp": ("TESSEL_TP", int), "pp": ("TESSEL_PP", int),
    "virtual_stages": ("TESSEL_VIRTUAL_STAGES", int),
    "sequence_parallel": ("TESSEL_SEQUENCE_PARALLEL", int),
    "micro_batch": ("TESSEL_MICRO_BATCH", int),
    "num_micro_batches": ("TESSEL_NUM_MICRO_BATCHES", int),
    "global_batch": ("TESSEL_GLOBAL_BATCH", int),
    "recompute": ("TESSEL_RECOMPUTE", str), "zero_stage": ("TESSEL_ZERO_STAGE", int),
    "precision": ("TESSEL_PRECISION", str), "gpu_type": ("TESSEL_GPU_TYPE", str),
}


def as_int(name, text, minimum=None):
    if isinstance(text, bool):
        text = int(text)
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ConfigError(f"{name}={value} must be >= {minimum}")
    return value


def as_float(name, text, minimum=None):
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ConfigError(f"{name}={text!r} is not a number") from None
    if not math.isfinite(value) or (minimum is not None and value < minimum):
        raise ConfigError(f"{name}={text!r} must be a finite number >= {minimum}")
    return value


class Contract:
    """Everything read from the environment, validated. Raises ConfigError.

    Attributes: profile, job_id, job_name, launch, metrics_file, gpu_type, the plan (dp, tp, pp,
    virtual_stages, sequence_parallel, micro_batch, num_micro_batches, global_batch,
    recompute_requested, zero_stage, precision_requested), the world (world_size, rank,
    local_rank, master_addr, master_port), total_iterations and the checkpoint settings.
    """

    def __init__(self, env):
        self.profile = env.get("TESSEL_PROFILE", "0").strip() not in ("", "0")
        self.job_id = as_int("TESSEL_JOB_ID", env.get("TESSEL_JOB_ID", "0"))
        self.job_name = env.get("TESSEL_JOB_NAME", "")
        self.launch = as_int("TESSEL_LAUNCH", env.get("TESSEL_LAUNCH", "0"), 0)
        self.metrics_file = env.get("TESSEL_METRICS_FILE") or None
        self.device = env.get("TESSEL_DEVICE", "auto").strip().lower() or "auto"
        if self.device not in ("auto", "cpu", "cuda"):
            raise ConfigError(f"TESSEL_DEVICE={self.device!r}: expected auto, cpu or cuda")
        self.dist_backend = env.get("TESSEL_DIST_BACKEND", "auto").strip().lower() or "auto"
        if self.dist_backend not in ("auto", "nccl", "gloo"):
            raise ConfigError(f"TESSEL_DIST_BACKEND={self.dist_backend!r}: expected auto, nccl "
                              "or gloo")

        plan = self._plan_values(env)
        self.gpu_type = plan.get("gpu_type", "")
        self.tp = as_int("TESSEL_TP", plan.get("tp", 1), 1)
        self.pp = as_int("TESSEL_PP", plan.get("pp", 1), 1)
        self.virtual_stages = as_int("TESSEL_VIRTUAL_STAGES", plan.get("virtual_stages", 1), 1)
        sp = as_int("TESSEL_SEQUENCE_PARALLEL", plan.get("sequence_parallel", 0), 0)
        if sp > 1:
            raise ConfigError(f"TESSEL_SEQUENCE_PARALLEL={sp}: expected 0 or 1")
        self.sequence_parallel = sp == 1
        if self.profile and self.tp != 1:
            raise ConfigError(f"TESSEL_TP={self.tp}: profiling times one stage on one device; "
                              "it needs TESSEL_TP=1")
        self.recompute_requested = str(plan.get("recompute", "none")).strip().lower()
        if self.recompute_requested not in RECOMPUTE_MODES:
            raise ConfigError(f"TESSEL_RECOMPUTE={self.recompute_requested!r}: expected one of "
                              + "|".join(RECOMPUTE_MODES))
        self.zero_stage = as_int("TESSEL_ZERO_STAGE", plan.get("zero_stage", 0), 0)
        if self.zero_stage > 3:
            raise ConfigError(f"TESSEL_ZERO_STAGE={self.zero_stage}: expected 0..3")
        self.precision_requested = str(plan.get("precision", "fp32")).strip().lower()
        if not self.precision_requested:
            raise ConfigError("TESSEL_PRECISION is empty; expected fp32, bf16, fp16, ...")

        if self.profile:
            self._read_profile(env, plan)
        else:
            self._read_training(env, plan)

    def plan_dict(self):
        """The plan this launch runs, as recorded in metrics and checkpoints."""
        return {"dp": self.dp, "tp": self.tp, "pp": self.pp,
                "virtual_stages": self.virtual_stages,
                "sequence_parallel": self.sequence_parallel, "micro_batch": self.micro_batch,
                "num_micro_batches": self.num_micro_batches, "global_batch": self.global_batch,
                "recompute": self.recompute_requested, "zero_stage": self.zero_stage}

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
            for field in PLAN_FIELDS:
                if field in doc and doc[field] is not None:
                    values[field] = doc[field]
            for field in ("gpus", "nodes"):
                if field in doc and doc[field] is not None:
                    values[field] = as_int(f"TESSEL_PLAN_JSON.{field}", doc[field], 1)
        for field, (var, kind) in PLAN_FIELDS.items():
            if var not in env or env[var].strip() == "":
                continue
            own = env[var].strip()
            if field in values:
                a, b = values[field], own
                if kind is int:
                    a = as_int(f"TESSEL_PLAN_JSON.{field}", a)
                    b = as_int(var, b)
                else:
                    a, b = str(a).strip().lower(), b.lower()
                if a != b:
                    raise ConfigError(f"{var}={own} disagrees with TESSEL_PLAN_JSON "
                                      f"{field}={values[field]}")
            values[field] = own
        return values

    def _read_profile(self, env, plan):
        self.world_size, self.rank, self.local_rank = 1, 0, 0
        self.dp = 1
        self.profile_steps = as_int("TESSEL_PROFILE_STEPS", env.get("TESSEL_PROFILE_STEPS", "5"), 1)
        layers = env.get("TESSEL_PROFILE_LAYERS", "").strip()
        self.profile_layers = as_int("TESSEL_PROFILE_LAYERS", layers, 1) if layers else None
        self.micro_batch = as_int("TESSEL_MICRO_BATCH", plan.get("micro_batch", 1), 1)
        self.num_micro_batches, self.global_batch = 1, self.micro_batch

    def _read_training(self, env, plan):
        ws_env = env.get("TESSEL_WORLD_SIZE", "").strip()
        ntasks = env.get("SLURM_NTASKS", "").strip()
        if ws_env:
            self.world_size = as_int("TESSEL_WORLD_SIZE", ws_env, 1)
            if ntasks and as_int("SLURM_NTASKS", ntasks, 1) != self.world_size:
                raise ConfigError(f"TESSEL_WORLD_SIZE={self.world_size} but SLURM_NTASKS={ntasks}: "
                                  "launch one task per GPU of the plan")
        else:
            self.world_size = as_int("SLURM_NTASKS", ntasks, 1) if ntasks else 1
        procid = env.get("SLURM_PROCID", "").strip()
        if not procid and self.world_size > 1:
            raise ConfigError(f"SLURM_PROCID is not set (world size {self.world_size})")
        self.rank = as_int("SLURM_PROCID", procid or "0", 0)
        if self.rank >= self.world_size:
            raise ConfigError(f"SLURM_PROCID={self.rank} is not below the world size "
                              f"{self.world_size}")
        self.local_rank = as_int("SLURM_LOCALID", env.get("SLURM_LOCALID", "0") or "0", 0)
        if "gpus" in plan and plan["gpus"] != self.world_size:
            raise ConfigError(f"TESSEL_PLAN_JSON gpus={plan['gpus']} but the world size is "
                              f"{self.world_size}: one process per GPU")
        self.nodes = plan.get("nodes")

        model_parallel = self.tp * self.pp
        if self.world_size % model_parallel:
            raise ConfigError(f"TESSEL_TP={self.tp} TESSEL_PP={self.pp}: tp*pp = {model_parallel} "
                              f"does not divide the world size {self.world_size}")
        self.dp = as_int("TESSEL_DP", plan.get("dp", self.world_size // model_parallel), 1)
        if self.dp * model_parallel != self.world_size:
            raise ConfigError(f"TESSEL_DP={self.dp} TESSEL_TP={self.tp} TESSEL_PP={self.pp}: "
                              f"dp*tp*pp = {self.dp * model_parallel} but the world size is "
                              f"{self.world_size}")
        self.num_micro_batches = as_int("TESSEL_NUM_MICRO_BATCHES",
                                        plan.get("num_micro_batches", 1), 1)
        if "micro_batch" in plan:
            self.micro_batch = as_int("TESSEL_MICRO_BATCH", plan["micro_batch"], 1)
            default_global = self.dp * self.micro_batch * self.num_micro_batches
        else:
            default_global = 32
        self.global_batch = as_int("TESSEL_GLOBAL_BATCH", plan.get("global_batch", default_global), 1)
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
        if self.virtual_stages > 1:
            if self.pp < 2:
                raise ConfigError(f"TESSEL_VIRTUAL_STAGES={self.virtual_stages}: interleaving "
                                  f"needs TESSEL_PP >= 2 (got {self.pp})")
            if self.num_micro_batches % self.pp:
                raise ConfigError(
                    f"TESSEL_VIRTUAL_STAGES={self.virtual_stages}: the interleaved schedule needs "
                    f"num_micro_batches ({self.num_micro_batches}) to be a multiple of pp "
                    f"({self.pp})")

        self.total_iterations = as_int("TESSEL_TOTAL_ITERATIONS",
                                       env.get("TESSEL_TOTAL_ITERATIONS", "100"), 1)
        self.checkpoint_dir = env.get("TESSEL_CHECKPOINT_DIR") or None
        self.checkpoint_interval_s = as_float(
            "TESSEL_CHECKPOINT_INTERVAL_S", env.get("TESSEL_CHECKPOINT_INTERVAL_S", "60"), 0)
        self.checkpoint_interval_steps = as_int(
            "TESSEL_CHECKPOINT_INTERVAL_STEPS", env.get("TESSEL_CHECKPOINT_INTERVAL_STEPS", "0"), 0)
        self.checkpoint_keep = as_int("TESSEL_CHECKPOINT_KEEP",
                                      env.get("TESSEL_CHECKPOINT_KEEP", "2"), 1)
        self.master_addr, self.master_port = "127.0.0.1", None
        if self.world_size > 1:
            self.master_addr = env.get("MASTER_ADDR", "127.0.0.1") or "127.0.0.1"
            port = env.get("MASTER_PORT", "").strip()
            if not port:
                raise ConfigError(f"MASTER_PORT is not set (world size {self.world_size})")
            self.master_port = as_int("MASTER_PORT", port, 1)
            if self.master_port > 65535:
                raise ConfigError(f"MASTER_PORT={self.master_port} is not a TCP port")


def check_shape(c, layers, heads, hidden, vocab, seq_len):
    """The plan against a transformer's shape: what divides what. Raises ConfigError."""
    if heads % c.tp:
        raise ConfigError(f"TESSEL_TP={c.tp}: heads ({heads}) must be a multiple of tp")
    if vocab % c.tp:
        raise ConfigError(f"TESSEL_TP={c.tp}: vocab ({vocab}) must be a multiple of tp "
                          "(the vocabulary-parallel embedding and loss split it evenly)")
    if c.sequence_parallel and seq_len % c.tp:
        raise ConfigError(f"TESSEL_SEQUENCE_PARALLEL=1: seq_len ({seq_len}) must be a multiple of "
                          f"tp ({c.tp})")
    stages = c.pp * c.virtual_stages
    if stages > layers:
        what = (f"TESSEL_PP={c.pp}" if c.virtual_stages == 1 else
                f"TESSEL_PP={c.pp} x TESSEL_VIRTUAL_STAGES={c.virtual_stages}")
        raise ConfigError(f"{what}: {stages} stages but the model has {layers} layers "
                          "(each stage needs at least one)")
