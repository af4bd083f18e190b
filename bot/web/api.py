"""The HTTP API for pipelines and emitters: ``POST /api/v1/lineage`` (OpenLineage events)."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.domain.lineage.openlineage import OpenLineageError, parse_event
from bot.services.lineage import LineageService

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def bearer(token: str | None) -> Callable[[Handler], Handler]:
    """Require ``Authorization: Bearer <token>``; without a configured token the API is off (503)."""

    def wrap(handler: Handler) -> Handler:
        async def guarded(request: web.Request) -> web.StreamResponse:
            if not token:
                return _error(503, "the HTTP API is disabled: set CHANGEOPS_API_TOKEN")
            given = request.headers.get("Authorization", "")
            if not given.startswith("Bearer ") or not hmac.compare_digest(given[7:].strip().encode(), token.encode()):
                return _error(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})
            return await handler(request)

        return guarded

    return wrap


def add_routes(app: web.Application, token: str | None, lineage: LineageService) -> None:
    """Mount the API."""

    @bearer(token)
    async def post_lineage(request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            return _error(400, f"malformed JSON: {err}")
        items = body if isinstance(body, list) else [body]
        events = []
        for index, item in enumerate(items):
            try:
                events.append(parse_event(item))
            except OpenLineageError as err:
                prefix = f"event {index}: " if isinstance(body, list) else ""
                return _error(400, f"{prefix}{err}")
        changed = await lineage.ingest(events)
        log.info("lineage: %d event(s) received, %d changed the lineage", len(events), changed)
        return web.json_response({"ok": True, "events": len(events), "changed": changed})

    app.router.add_post("/api/v1/lineage", post_lineage)


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"ok": False, "error": message}, status=status, headers=headers)
