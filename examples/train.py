#!/usr/bin/python3
"""tessel's example training job: a small GPT-like language model on tessel_job.

It follows tessel's environment contract (examples/README.md): launched by srun, one process
per GPU, it reads its rank and the parallel plan (data, tensor and pipeline parallelism, ZeRO
stage, micro-batching, recompute) from the environment and runs it with the job-side library
`tessel_job` (python/tessel_job in the repository; `tessel job-exec` puts it on PYTHONPATH, and
this script also finds it beside itself). It checkpoints and exits 85 on SIGUSR1/SIGTERM,
resumes from its sharded checkpoint under any other plan with the same loss curve, and appends
one JSON line per optimizer step to the metrics file. TESSEL_PROFILE=1 times the
forward+backward pass of one micro-batch through one pipeline stage.

Exit codes: 0 all TESSEL_TOTAL_ITERATIONS steps done; 85 stopped on request with a checkpoint;
2 bad configuration (plan, environment, flags, incompatible checkpoint); anything else failure.

Python 3.11, standard library and torch only. torch is imported after the environment has been
checked, so a bad plan is refused within a fraction of a second.
"""

import argparse
import os
import sys

try:
    import tessel_job  # first: installs the stop-signal handlers
except ImportError:  # run from a checkout without tessel job-exec: the package beside us
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import tessel_job

from tessel_job.contract import ConfigError, EXIT_CONFIG

EPILOG = """\
environment (set by tessel serve; see examples/README.md for the full contract):
  SLURM_PROCID, SLURM_LOCALID, TESSEL_WORLD_SIZE (or SLURM_NTASKS), MASTER_ADDR, MASTER_PORT
  TESSEL_JOB_ID, TESSEL_JOB_NAME, TESSEL_LAUNCH, TESSEL_GPU_TYPE, TESSEL_PLAN_JSON
  TESSEL_DP, TESSEL_TP, TESSEL_PP, TESSEL_VIRTUAL_STAGES, TESSEL_SEQUENCE_PARALLEL,
  TESSEL_MICRO_BATCH, TESSEL_NUM_MICRO_BATCHES, TESSEL_GLOBAL_BATCH, TESSEL_RECOMPUTE,
  TESSEL_ZERO_STAGE, TESSEL_PRECISION, TESSEL_TOTAL_ITERATIONS, TESSEL_CHECKPOINT_DIR,
  TESSEL_CHECKPOINT_INTERVAL_S, TESSEL_CHECKPOINT_INTERVAL_STEPS, TESSEL_CHECKPOINT_KEEP,
  TESSEL_METRICS_FILE, TESSEL_PROFILE, TESSEL_PROFILE_STEPS, TESSEL_PROFILE_LAYERS

signals: SIGUSR1 or SIGTERM = checkpoint at the next optimizer-step boundary and exit 85.
exit codes: 0 done, 85 stopped with a checkpoint, 2 bad configuration, other = failure.

example (four processes, tensor- and pipeline-parallel, no Slurm): see examples/README.md.
example (one process):
  TESSEL_GLOBAL_BATCH=32 TESSEL_TOTAL_ITERATIONS=50 TESSEL_METRICS_FILE=/tmp/m.jsonl \\
  TESSEL_CHECKPOINT_DIR=/tmp/ckpt /usr/bin/python3 examples/train.py
"""


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="train.py",
        description="tessel example job: a small GPT-like language model trained under any "
        "data/tensor/pipeline-parallel plan (gloo on CPU) on synthetic Markov-chain text, "
        "following tessel's environment contract.",
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
                   "of its replica's step, divided by tp*pp (the ranks that share a replica), "
                   "and per profiled sample, so step time scales with the plan as on GPUs "
                   "(default 0)")
    r.add_argument("--collective-timeout-s", type=float, default=300.0,
                   help="gloo rendezvous and collective timeout (default 300)")
    r.add_argument("--log-every", type=int, default=10,
                   help="rank 0 prints a progress line every N steps (default 10; 0 = never)")
    args = p.parse_args(argv)
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


def main(argv):
    try:
        args = parse_args(argv)
    except ConfigError as e:
        print(f"train.py: error: {e}", file=sys.stderr, flush=True)
        return EXIT_CONFIG
    from tessel_job.gpt import GPTJob, GPTShape
    shape = GPTShape(layers=args.layers, hidden=args.hidden, heads=args.heads,
                     seq_len=args.seq_len, vocab=args.vocab)
    spec = GPTJob(shape, optimizer=args.optimizer, lr=args.lr, momentum=args.momentum,
                  weight_decay=args.weight_decay, seed=args.seed, data_seed=args.data_seed,
                  threads=args.threads, sim_seconds_per_sample=args.sim_seconds_per_sample,
                  collective_timeout_s=args.collective_timeout_s, log_every=args.log_every)
    return tessel_job.run(spec, prog="train.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
