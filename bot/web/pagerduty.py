"""``POST /api/v1/pagerduty``: PagerDuty's V3 webhooks, so an incident acknowledged there is acknowledged here.

Each delivery is checked against ``X-PagerDuty-Signature`` (HMAC-SHA256 of the raw body under a signing secret of
``PAGERDUTY_WEBHOOK_SECRET``; several, comma-separated, while one is rotated) and handled once per PagerDuty event
id, whatever PagerDuty retries. Anything this bot has no use for (other event types, incidents it did not page) is
answered 200, so PagerDuty does not retry it; a wrong signature is 401 and changes nothing."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web

from bot.domain.sli.receivers import pagerduty_change, signed
from bot.services.sli import SliError, SliService
from bot.web.api import Endpoint

log = logging.getLogger(__name__)
ENDPOINT = Endpoint("POST", "/api/v1/pagerduty", "PagerDuty's V3 webhook signature (`PAGERDUTY_WEBHOOK_SECRET`)",
                    "acknowledgements and resolutions made in PagerDuty of the pages this bot sent")


def add_route(app: web.Application, secrets: Sequence[str], sli: SliService, claim: Callable[[str], Awaitable[bool]]) -> None:
    """The route, when a signing secret is configured."""
    if not secrets:
        return

    async def post(request: web.Request) -> web.Response:
        body = await request.read()
        if not signed(body, request.headers.get("X-PagerDuty-Signature", ""), secrets):
            log.info("refused a PagerDuty webhook with a missing or wrong signature (%d bytes)", len(body))
            return web.json_response({"ok": False, "error": "invalid signature"}, status=401)
        try:
            payload = json.loads(body)
        except ValueError:
            return web.json_response({"ok": False, "error": "not JSON"}, status=400)
        change = pagerduty_change(payload)
        if change is None:
            return web.json_response({"ok": True, "ignored": "not an incident acknowledged or resolved"})
        event_id = str(payload["event"].get("id") or "")[:200]
        if event_id and not await claim(f"pagerduty:{event_id}"):
            return web.json_response({"ok": True, "ignored": "already handled"})
        kind, fingerprint, who = change
        try:
            done = await sli.from_pagerduty(kind, fingerprint, who)
        except SliError:
            return web.json_response({"ok": True, "ignored": "not an incident this bot paged"})
        return web.json_response({"ok": True, "done": done})

    app.router.add_route(ENDPOINT.method, ENDPOINT.path, post)
