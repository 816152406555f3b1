"""tessel_job: the job side of tessel's launch contract, as a library.

A training script launched by `tessel serve` (one process per GPU, through srun) imports this
package first thing: importing it installs the stop handlers (SIGUSR1/SIGTERM = checkpoint and
exit 85), so a signal during start-up is not lost. Then

    import tessel_job
    from tessel_job.gpt import GPTJob, GPTShape      # or a spec of your own model
    sys.exit(tessel_job.run(GPTJob(GPTShape(layers=4, hidden=64, heads=4))))

reads the contract (examples/README.md), refuses a plan the model cannot run (exit 2, one
line naming the variable), builds the process groups of the plan (rank -> (dp, pp, tp) in
Megatron-LM's order), and trains with tensor parallelism (Megatron-style layers), pipeline
parallelism (1F1B, interleaved 1F1B), data parallelism with ZeRO 0-3, micro-batching and
recompute none|selective|full, writing metrics and sharded checkpoints that any other plan
loads. `tessel job-exec` puts this package's directory on PYTHONPATH, so the job needs no
installation and no network.

Modules: contract (the environment), topology (ranks and groups), tensor_parallel (layers and
collectives), pipeline (split rule, schedules, execution), zero (the sharded optimizer),
checkpoint (sharded checkpoints with a manifest and checksums), runtime (the loop), gpt (the
example model and its spec), synthetic (the example data), metrics.
"""

import os
import sys

from . import _signals
from .contract import (EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, EXIT_STOPPED, ConfigError, Contract,
                       check_shape)

stop_requested = _signals.stop_requested
stop_signal = _signals.stop_signal

__all__ = ["run", "Contract", "ConfigError", "check_shape", "stop_requested", "stop_signal",
           "EXIT_OK", "EXIT_FAILURE", "EXIT_CONFIG", "EXIT_STOPPED"]


def run(spec, env=None, prog="tessel_job"):
    """Trains (or profiles, under TESSEL_PROFILE=1) `spec` under the contract in `env`
    (default os.environ). Returns the exit code: 0 done, 85 stopped with a checkpoint,
    2 refused configuration, 1 failure."""
    try:
        contract = Contract(os.environ if env is None else env)
        from . import runtime
        if contract.profile:
            return runtime.profile(contract, spec)
        return runtime.train(contract, spec)
    except ConfigError as e:
        print(f"{prog}: error: {e}", file=sys.stderr, flush=True)
        return EXIT_CONFIG
