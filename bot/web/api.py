"""The HTTP API for pipelines and emitters: OpenLineage events in, proposals in and out."""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from aiohttp import web

from bot.domain.lineage.openlineage import OpenLineageError, parse_event
from bot.services.lineage import LineageService
from bot.services.proposals import ProposalError, Proposals, ProposalView
from bot.store.models import aware

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


def add_routes(app: web.Application, token: str | None, lineage: LineageService, proposals: Proposals) -> None:
    """Mount the API."""

    @bearer(token)
    async def post_proposal(request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            return _error(400, f"malformed JSON: {err}")
        if not isinstance(body, dict):
            return _error(400, "expected an object with subject and schema")
        subject, schema = body.get("subject"), body.get("schema")
        if not isinstance(subject, str) or not subject:
            return _error(400, "subject: required string is missing")
        if isinstance(schema, dict | list):
            schema = json.dumps(schema)
        if not isinstance(schema, str) or not schema.strip():
            return _error(400, "schema: required (the Avro schema, as JSON or as a string)")
        try:
            start = datetime.fromisoformat(body["window_start"].replace("Z", "+00:00")) if body.get("window_start") else None
            hours = float(body["window_hours"]) if body.get("window_hours") is not None else None
            revision_of = int(body["revision_of"]) if body.get("revision_of") is not None else None
        except (ValueError, TypeError, AttributeError) as err:
            return _error(400, f"window_start (ISO 8601), window_hours (number) or revision_of (number) is malformed: {err}")
        if start is not None and start.tzinfo is None:
            return _error(400, "window_start needs a time zone offset (e.g. 2026-12-03T02:00:00Z)")
        proposer = str(body.get("proposer") or "api")
        try:
            view = await proposals.propose(subject, schema, proposer, notes=str(body.get("notes") or ""), window_start=start,
                                           window_hours=hours, surface="api", revision_of=revision_of)
        except ProposalError as err:
            return web.json_response({"ok": False, "error": str(err), "field": err.field}, status=400)
        return web.json_response(_proposal_json(view), status=201)

    @bearer(token)
    async def get_proposal(request: web.Request) -> web.StreamResponse:
        try:
            view = await proposals.view(int(request.match_info["id"]))
        except (ValueError, ProposalError) as err:
            return _error(404, str(err))
        return web.json_response(_proposal_json(view))

    app.router.add_post("/api/v1/proposals", post_proposal)
    app.router.add_get("/api/v1/proposals/{id}", get_proposal)

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


def _proposal_json(view: ProposalView) -> dict[str, Any]:
    p = view.proposal
    return {"ok": True, "id": view.id, "subject": view.subject.name, "level": p.level, "state": p.state,
            "backward": p.backward, "forward": p.forward, "version": p.version, "teams": list(p.teams), "waiting": view.waiting(),
            "deadline": aware(p.deadline).isoformat() if p.deadline else None, "changes": p.findings, "impact": p.impact}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"ok": False, "error": message}, status=status, headers=headers)
