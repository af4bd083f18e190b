"""Global Bolt middleware."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.services.deliveries import Deliveries

log = logging.getLogger(__name__)
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


def once_per_delivery(deliveries: Deliveries) -> Middleware:
    """Acknowledge a repeated delivery with an empty 200 and do nothing else."""

    async def middleware(req: AsyncBoltRequest, resp: BoltResponse, next: Callable[[], Awaitable[None]]) -> BoltResponse | None:
        key = delivery_key(req.body)
        if key is not None and not await deliveries.claim(key):
            retry = req.headers.get("x-slack-retry-num", ["0"])[0]
            log.info("ignoring repeated Slack delivery %s (retry %s)", key, retry)
            return BoltResponse(status=200, body="")
        await next()
        return None

    return middleware
