"""Global Bolt middleware."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.services.deliveries import Deliveries
from bot.slack.claims import CLAIM

log = logging.getLogger(__name__)
RECENT_KEYS = 10_000


def delivery_key(body: dict[str, Any]) -> str | None:
    """What identifies one delivery across Slack's retries: the event_id, else the trigger_id."""
    if body.get("event_id"):
        return f"event:{body['event_id']}"
    payload = body.get("payload")
    if isinstance(payload, str):
        try:
            body = json.loads(payload)
        except json.JSONDecodeError:
            return None
    if body.get("trigger_id"):
        return f"trigger:{body['trigger_id']}"
    return None


class OncePerDelivery(AsyncMiddleware):
    """Acknowledge a repeated delivery with an empty 200 and do nothing else; refuse a replayed request.

    Nothing but an in-memory check stands between a request and its acknowledgement. Every signature
    Slack's verification accepted is claimed in the database after the ack, before the listener acts (every
    replica sees it; keys live a day, longer than the five minutes a signature's timestamp is accepted). A
    signature this process already saw is refused at once with 401; one that only another replica saw (or this
    one before a restart) is acknowledged, but its listener stops right after the ack, when the claim fails
    (``claimed``), before it changes anything.

    A first delivery's key (event_id or trigger_id) is claimed with it; a retry (``X-Slack-Retry-Num``) is
    dropped when this process saw the key, or else when its claim in the database (shared by every replica)
    fails.

    A middleware object, not a function: Bolt calls it as it is (a function would have its arguments worked out
    from its signature on every request).
    """

    def __init__(self, deliveries: Deliveries) -> None:
        self.deliveries = deliveries
        self.recent: OrderedDict[str, None] = OrderedDict()
        self.signatures: OrderedDict[str, None] = OrderedDict()

    async def async_process(self, *, req: AsyncBoltRequest, resp: BoltResponse,
                            next: Callable[[], Awaitable[BoltResponse]]) -> BoltResponse | None:
        recent, signatures = self.recent, self.signatures
        key = delivery_key(req.body)
        retry = req.headers.get("x-slack-retry-num", [""])[0]
        signature = req.headers.get("x-slack-signature", [""])[0]
        claims: list[str] = []
        signed = req.mode == "http" and bool(signature)
        if signed:
            used = f"sig:{signature[:120]}"
            if used in signatures:
                if retry:
                    log.info("ignoring Slack's retry %s of a request already handled", retry)
                    return BoltResponse(status=200, body="")
                log.warning("refused a replayed Slack request (its signature was already used)")
                return BoltResponse(status=401, body={"error": "this request was already received"})
            _remember(signatures, used)
            claims.append(used)
        if key is not None:
            if retry:
                if key in recent or not await self.deliveries.claim(key):
                    log.info("ignoring Slack's retry %s of delivery %s", retry, key)
                    return BoltResponse(status=200, body="")
            else:
                _remember(recent, key)
                claims.append(key)
        if claims:
            CLAIM.set(functools.partial(_claim, self.deliveries, claims, signed))
        return await next()


def _remember(seen: OrderedDict[str, None], key: str) -> None:
    seen[key] = None
    while len(seen) > RECENT_KEYS:
        seen.popitem(last=False)


async def _claim(deliveries: Deliveries, keys: list[str], signed: bool) -> bool:
    """Claim the request's keys together (its signature first, when ``signed``); whether that signature was fresh."""
    fresh = await asyncio.gather(*(deliveries.claim(key) for key in keys))
    return fresh[0] if signed else True
