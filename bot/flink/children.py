"""Processes the bot starts for a step of an operation (a submission, a savepoint rewrite) die with it: a step must
never go on after the run that owns it was killed, or the run that resumes it would do it a second time."""

from __future__ import annotations

import ctypes
import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[[int, int], int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Looked up once, in the bot: the child of a process with threads must not load a library between fork and exec
# (another thread may have held the loader's lock when it forked).
PRCTL = _prctl()


def die_with_parent() -> None:
    """In the child, before it runs: Linux kills it when the process that started it ends (a no-op elsewhere).

    Linux ties the signal to the thread that forked, not the process: call it only for children started from the event
    loop's thread (``asyncio.create_subprocess_exec``), which lives as long as the bot, never from a worker thread."""
    if PRCTL is not None:
        PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
