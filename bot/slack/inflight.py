"""Work still running after Slack was answered (listeners after their ack, background claims), so a
shutdown can let it finish before the database closes; and that work waiting its turn while Slack's requests are
being answered."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

from bot.slack.claims import claimed, claimed_ack

log = logging.getLogger(__name__)
ACK_WAIT = 3.0  # seconds Slack waits for an acknowledgement
WORK_WAIT = 1.0  # seconds the work after an ack waits at most for the requests being answered (a form opens within 3 s of its trigger)
QUIET = 0.010  # seconds without a request arriving after which the work goes: requests closer than this are one burst (a lone
# request's card or form then starts 10 ms after it came, against Slack's own round trip of a hundred or more)

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


class Inflight:
    """The tasks to wait for at shutdown, and the turn of the work after acks.

    Acknowledgements first: Slack gives a request 3 s, and under a burst the work after earlier acks (database, Web
    API calls, several milliseconds each) would otherwise stand between a request and its ack. While requests are
    being answered or keep arriving (less than ``QUIET`` apart), that work waits, at most ``WORK_WAIT``; then it goes
    in the order it came, one a turn of the event loop, so a request arriving meanwhile stops the rest."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._answering = 0  # Slack requests being answered now
        self._arrived = float("-inf")  # when the latest request arrived (the loop's clock)
        self._waiting: deque[asyncio.Future[None]] = deque()  # work after acks, waiting its turn
        self._next: asyncio.Handle | None = None  # the release due

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
                self.add(task := loop.create_task(self._after_claim(listener, args, kwargs)))
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

            kwargs["ack"] = claimed_ack(kwargs["ack"], on_ack, self.acks_first)
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

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """Slack's request being answered, from its arrival to its response."""
        self._answering += 1
        self._arrived = asyncio.get_running_loop().time()
        try:
            yield
        finally:
            self._answering -= 1
            if not self._answering:
                self._schedule()

    async def acks_first(self) -> None:
        """Wait while Slack requests are being answered or keep arriving (at most ``WORK_WAIT`` seconds)."""
        loop = asyncio.get_running_loop()
        if not self._answering and not self._waiting and loop.time() - self._arrived >= QUIET:
            return
        turn = loop.create_future()
        self._waiting.append(turn)
        if not self._answering:
            self._schedule()
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(turn, WORK_WAIT)
        finally:
            if self._waiting and self._next is None:  # the next one goes at the next turn of the loop, if nothing arrived
                self._next = loop.call_soon(self._release)

    def _schedule(self) -> None:
        """Release the waiting work once no request has arrived for ``QUIET`` seconds."""
        if self._waiting and self._next is None:
            loop = asyncio.get_running_loop()
            self._next = loop.call_later(max(0.0, self._arrived + QUIET - loop.time()), self._release)

    def _release(self) -> None:
        """Let the next waiting work go, while nothing is answered."""
        self._next = None
        if self._answering:
            return  # the answer's end schedules it again
        loop = asyncio.get_running_loop()
        if loop.time() - self._arrived < QUIET:
            self._schedule()
            return
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():  # not given up waiting; once it runs, it lets the next one go
                turn.set_result(None)
                return

    async def _after_claim(self, listener: Callable[..., Awaitable[Any]], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        await self.acks_first()
        await claimed()
        return await listener(*args, **kwargs)

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


def _report(task: asyncio.Task[Any]) -> None:
    """A listener's error after its ack: logged, as the app's error handler does (Slack was answered already)."""
    if not task.cancelled() and task.exception() is not None:
        log.error("a Slack listener failed after its acknowledgement", exc_info=task.exception())
