"""CPU-heavy work off the event loop: one process pool per bot process (threads would not help pure
Python under the GIL). Workers are spawned, not forked, so they inherit no event loop, sockets or locks."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
WORKERS = max(1, min(2, os.cpu_count() or 1))
_pool: ProcessPoolExecutor | None = None


def pool() -> ProcessPoolExecutor:
    """The process pool (started on first use, shut down at interpreter exit)."""
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(max_workers=WORKERS, mp_context=multiprocessing.get_context("spawn"))
    return _pool


async def off_loop(function: Callable[..., T], *args: Any) -> T:
    """Run ``function(*args)`` in a worker process; the loop serves other requests meanwhile."""
    return await asyncio.get_running_loop().run_in_executor(pool(), function, *args)


def warm_up() -> None:
    """Start the workers now, so the first proposal does not pay for their start."""
    for _ in range(WORKERS):
        pool().submit(os.getpid)
