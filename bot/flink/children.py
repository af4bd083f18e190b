"""Processes the bot starts for a step of an operation (a submission, a savepoint rewrite) die with it: a step must
never go on after the run that owns it was killed, or the run that resumes it would do it a second time."""

from __future__ import annotations

import ctypes
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child, before it runs: Linux kills it when the process that started it ends (a no-op elsewhere)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
