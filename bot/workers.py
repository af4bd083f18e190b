"""CPU-heavy work off the event loop: one process pool per bot process (threads would not help pure
Python under the GIL). Workers are spawned, not forked, so they inherit no event loop, sockets or locks."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
WORKERS = max(1, min(2, os.cpu_count() or 1))
WATCH_SECONDS = 0.5
_pool: ProcessPoolExecutor | None = None


def pool() -> ProcessPoolExecutor:
    """The process pool (started on first use, shut down at interpreter exit)."""
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(max_workers=WORKERS, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_end_with_parent, initargs=(os.getpid(),))
    return _pool


def _end_with_parent(parent: int) -> None:
    """In each worker: end at once when the bot that started it is gone, however it ended (SIGKILL too). An
    orphan is adopted by another process, so its parent pid changes; the pool's resource tracker then sees its
    last writer close and ends by itself. A Ctrl-C reaches every process of the terminal's group: the bot stops
    its workers, so they ignore it (it would only print their tracebacks)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


async def off_loop(function: Callable[..., T], *args: Any) -> T:
    """Run ``function(*args)`` in a worker process; the loop serves other requests meanwhile."""
    return await asyncio.get_running_loop().run_in_executor(pool(), function, *args)


def warm_up() -> None:
    """Start the workers now, so the first proposal does not pay for their start."""
    for _ in range(WORKERS):
        pool().submit(os.getpid)
