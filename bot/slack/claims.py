"""A request's signature claim, made after the ack: what stops a replayed request before it acts.

The middleware leaves each request's claim here (``CLAIM``, one per request through its context: its signature
and its delivery key, to be claimed in the database); listeners make it right after their ack (``claimed_ack``)
or, when Bolt acknowledges for them (events), before they start. Nothing of the database is on the way to the
ack: this process's own memory of signatures and keys refuses what it saw before it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

log = logging.getLogger(__name__)
CLAIM: ContextVar[Callable[[], Awaitable[bool]] | None] = ContextVar("slack_request_claim", default=None)


class Replayed(asyncio.CancelledError):
    """A request whose signature another replica had already claimed: its listener is cancelled after the
    ack. A cancellation, not an error: Bolt turns a listener's error after the ack into a lost ack."""


async def claimed() -> None:
    """Make this request's claim; raise ``Replayed`` when the database had its signature already. A claim the
    database could not answer lets the request go on (this process's own check has passed): the listener meets
    the database's trouble itself."""
    claim = CLAIM.get()
    if claim is None:
        return
    try:
        fresh = await claim()
    except Exception as err:
        log.warning("could not claim a Slack delivery in the database: %s", err)
        return
    if not fresh:
        log.warning("ignored a replayed Slack request after its acknowledgement (its signature was already used)")
        raise Replayed


def claimed_ack(ack: Callable[..., Awaitable[Any]], on_ack: Callable[[], None],
                before_work: Callable[[], Awaitable[None]]) -> Callable[..., Awaitable[Any]]:
    """``ack`` that, once Slack is answered, calls ``on_ack``, waits for ``before_work`` (the requests being answered
    go first) and for the request's claim (``claimed``)."""

    async def ack_then_check(*args: Any, **kwargs: Any) -> Any:
        answered = await ack(*args, **kwargs)
        on_ack()
        await before_work()
        await claimed()
        return answered

    return ack_then_check
