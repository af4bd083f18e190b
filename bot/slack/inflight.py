"""Work still running after Slack was answered (listeners after their ack, background claims), so a
shutdown can let it finish before the database closes."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from bot.slack.claims import claimed, claimed_ack

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


class Inflight:
    """The tasks to wait for at shutdown."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def add(self, task: asyncio.Task[Any]) -> None:
        """Wait for ``task`` at shutdown."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def track(self, listener: F) -> F:
        """``listener``, counted while it runs, and stopped after its acknowledgement when the request turns out
        to be a replay (``claims``). Bolt still sees its parameters, through ``__wrapped__``."""

        @functools.wraps(listener)
        async def tracked(*args: Any, **kwargs: Any) -> Any:
            task = asyncio.current_task()
            if task is not None:
                self.add(task)
            if "ack" in kwargs:  # stopped after its ack if the request is a replay
                kwargs["ack"] = claimed_ack(kwargs["ack"])
            else:  # acknowledged by Bolt already
                await claimed()
            return await listener(*args, **kwargs)

        return tracked  # type: ignore[return-value]

    def busy(self) -> bool:
        """Whether any tracked work is still running."""
        current = asyncio.current_task()
        return any(t is not current and not t.done() for t in self._tasks)

    async def wait(self, timeout: float) -> None:
        """Let running work finish, for at most ``timeout`` seconds."""
        current = asyncio.current_task()
        pending = {t for t in self._tasks if t is not current and not t.done()}
        if pending:
            await asyncio.wait(pending, timeout=timeout)
