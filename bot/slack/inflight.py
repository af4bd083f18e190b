"""Work still running after Slack was answered (listeners after their ack, background claims), so a
shutdown can let it finish before the database closes."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from bot.slack.claims import claimed, claimed_ack

log = logging.getLogger(__name__)
ACK_WAIT = 3.0  # seconds Slack waits for an acknowledgement

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


class Inflight:
    """The tasks to wait for at shutdown."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def add(self, task: asyncio.Task[Any]) -> None:
        """Wait for ``task`` at shutdown."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def track(self, job: F) -> F:
        """``job``, counted while it runs."""

        @functools.wraps(job)
        async def tracked(*args: Any, **kwargs: Any) -> Any:
            task = asyncio.current_task()
            if task is not None:
                self.add(task)
            return await job(*args, **kwargs)

        return tracked  # type: ignore[return-value]

    def listener(self, listener: F) -> F:
        """``listener`` for Bolt, which answers Slack the moment the listener acknowledges.

        The app runs with ``process_before_response``: Bolt waits for this wrapper (not polling for the ack every
        10 ms), and the wrapper returns once the ack is sent, leaving the listener to go on as a task of its own,
        counted. Stopped after its ack when the request turns out to be a replay (``claims``). An error before the
        ack is Bolt's to answer (500, the app's error handler); one after it is logged as that handler would. A
        listener Bolt acknowledges itself (events) runs wholly after the ack, once the request's claim is confirmed.
        Bolt still sees its parameters, through ``__wrapped__``."""

        @functools.wraps(listener)
        async def answered(*args: Any, **kwargs: Any) -> Any:
            loop = asyncio.get_running_loop()
            if "ack" not in kwargs:  # acknowledged by Bolt as soon as this returns
                self.add(task := loop.create_task(_after_claim(listener, args, kwargs)))
                task.add_done_callback(_report)
                return None
            gate = loop.create_future()
            acked = False

            def opened(*_: Any) -> None:
                if not gate.done():
                    gate.set_result(None)

            def on_ack() -> None:
                nonlocal acked
                acked = True
                opened()

            kwargs["ack"] = claimed_ack(kwargs["ack"], on_ack)
            self.add(task := asyncio.ensure_future(listener(*args, **kwargs)))
            task.add_done_callback(opened)
            timer = loop.call_later(ACK_WAIT, opened)
            try:
                await gate
            finally:
                timer.cancel()
            if task.done() and not acked:
                return task.result()  # its error goes to Bolt: nothing was acknowledged yet
            task.add_done_callback(_report)
            return None

        return answered  # type: ignore[return-value]

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


async def _after_claim(listener: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    await claimed()
    return await listener(*args, **kwargs)


def _report(task: asyncio.Task[Any]) -> None:
    """A listener's error after its ack: logged, as the app's error handler does (Slack was answered already)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("a Slack listener failed after its acknowledgement", exc_info=task.exception())
