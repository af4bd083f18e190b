"""Global Bolt middleware."""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.services.deliveries import Deliveries
from bot.slack.inflight import Inflight

log = logging.getLogger(__name__)
RECENT_KEYS = 10_000
Middleware = Callable[[AsyncBoltRequest, BoltResponse, Callable[[], Awaitable[None]]], Awaitable[BoltResponse | None]]


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


def once_per_delivery(deliveries: Deliveries, inflight: Inflight) -> Middleware:
    """Acknowledge a repeated delivery with an empty 200 and do nothing else.

    A first delivery is claimed in the background (Slack retries only after its three seconds have
    passed, by when the claim is long committed), so the database is not on the path to the ack; a
    retry (``X-Slack-Retry-Num``) is dropped when this process saw the key, or else when its claim in
    the database (shared by every replica) fails.
    """
    recent: OrderedDict[str, asyncio.Task[bool]] = OrderedDict()

    async def middleware(req: AsyncBoltRequest, resp: BoltResponse, next: Callable[[], Awaitable[None]]) -> BoltResponse | None:
        key = delivery_key(req.body)
        if key is not None:
            retry = req.headers.get("x-slack-retry-num", [""])[0]
            if retry:
                if key in recent or not await deliveries.claim(key):
                    log.info("ignoring Slack's retry %s of delivery %s", retry, key)
                    return BoltResponse(status=200, body="")
            else:
                recent[key] = asyncio.create_task(deliveries.claim(key))
                inflight.add(recent[key])
                while len(recent) > RECENT_KEYS:
                    recent.popitem(last=False)
        await next()
        return None

    return middleware
