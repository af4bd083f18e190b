"""A request's signature claim, confirmed after the ack: what stops a replayed request before it acts.

The middleware claims each request's signature in the background and leaves the claim here (``CLAIM``,
one per request through its context); listeners wait for it right after their ack (``claimed_ack``)
or, when Bolt acknowledges for them (events), before they start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

log = logging.getLogger(__name__)
CLAIM: ContextVar[asyncio.Task[bool] | None] = ContextVar("slack_request_claim", default=None)


class Replayed(asyncio.CancelledError):
    """A request whose signature another replica had already claimed: its listener is cancelled after the
    ack. A cancellation, not an error: Bolt turns a listener's error after the ack into a lost ack."""


async def claimed() -> None:
    """Wait for this request's signature claim; raise ``Replayed`` when the database had it already. A claim the
    database could not answer lets the request go on (this process's own check has passed): an error after
    the ack would make Bolt lose the ack, and the listener meets the database's trouble itself."""
    claim = CLAIM.get()
    if claim is None:
        return
    try:
        fresh = await claim
    except Exception:  # said once, where the claim ended (the middleware's _settled)
        return
    if not fresh:
        log.warning("ignored a replayed Slack request after its acknowledgement (its signature was already used)")
        raise Replayed


def claimed_ack(ack: Callable[..., Awaitable[Any]], on_ack: Callable[[], None]) -> Callable[..., Awaitable[Any]]:
    """``ack`` that, once Slack is answered, calls ``on_ack`` and waits for the request's claim (``claimed``)."""

    async def ack_then_check(*args: Any, **kwargs: Any) -> Any:
        answered = await ack(*args, **kwargs)
        on_ack()
        await claimed()
        return answered

    return ack_then_check
