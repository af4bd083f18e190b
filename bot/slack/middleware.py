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
    """Acknowledge a repeated delivery with an empty 200 and do nothing else; refuse a replayed request.

    Every signature Slack's verification accepted is claimed in the database (every replica sees it, and
    keys live a day, longer than the five minutes a signature's timestamp is accepted), so a captured
    request sent again within that window is refused with 401 instead of acting twice.

    A first delivery is claimed in the background (Slack retries only after its three seconds have
    passed, by when the claim is long committed), so the database is not on the path to the ack; a
    retry (``X-Slack-Retry-Num``) is dropped when this process saw the key, or else when its claim in
    the database (shared by every replica) fails.
    """
    recent: OrderedDict[str, asyncio.Task[bool]] = OrderedDict()

    async def middleware(req: AsyncBoltRequest, resp: BoltResponse, next: Callable[[], Awaitable[None]]) -> BoltResponse | None:
        key = delivery_key(req.body)
        retry = req.headers.get("x-slack-retry-num", [""])[0]
        signature = req.headers.get("x-slack-signature", [""])[0]
        if req.mode == "http" and signature and not await deliveries.claim(f"sig:{signature[:120]}"):
            if retry:
                log.info("ignoring Slack's retry %s of a request already handled", retry)
                return BoltResponse(status=200, body="")
            log.warning("refused a replayed Slack request (its signature was already used)")
            return BoltResponse(status=401, body={"error": "this request was already received"})
        if key is not None:
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
