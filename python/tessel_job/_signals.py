"""Stop signals, installed when tessel_job is imported (before torch is).

SIGUSR1 (Slurm's `scancel --signal=USR1`) and SIGTERM (Slurm's cancel, KillWait seconds before
SIGKILL) mean "checkpoint and stop". The handler only remembers the first signal; the training
loop acts on it at the next optimizer-step boundary, where the ranks agree on it. Importing
tessel_job first thing in a script means a signal during start-up is not lost (SIGUSR1's
default action would kill the process).
"""

import signal

_stop_signal = None


def _on_stop_signal(signum, frame):
    global _stop_signal
    if _stop_signal is None:
        _stop_signal = signum


def install():
    signal.signal(signal.SIGUSR1, _on_stop_signal)
    signal.signal(signal.SIGTERM, _on_stop_signal)


def stop_signal():
    """The first stop signal received (a number), or None."""
    return _stop_signal


def stop_requested():
    return _stop_signal is not None


def reset_for_tests():
    global _stop_signal
    _stop_signal = None


install()
