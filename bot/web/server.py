"""The aiohttp application: ``/slack/events``, ``/healthz``, ``/readyz``, ``/metrics`` and the HTTP API."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier
from sqlalchemy import text

from bot.config import Config
from bot.services.lineage import LineageService
from bot.services.proposals import Proposals
from bot.services.releases import Releases
from bot.services.sli import SliService
from bot.services.transitions import Transitions
from bot.slack.inflight import Inflight
from bot.store.database import Database
from bot.web import api, ical, pagerduty
from bot.web.api import Endpoint
from bot.web.metrics import BotMetrics
from bot.web.slack_body import bolt_request as bolt_request_of

log = logging.getLogger(__name__)
SERVED = (
    Endpoint("POST", "/slack/events", "Slack's request signature (`SLACK_SIGNING_SECRET`; off in Socket Mode)",
             "Slack's slash commands, interactions, views and events"),
    Endpoint("GET", "/healthz", "none", "liveness: the process answers"),
    Endpoint("GET", "/readyz", "none", "readiness: the database answers and is at the code's migration, and the bot is not shutting down"),
    Endpoint("GET", "/metrics", "none", "the bot's own figures in the Prometheus text format"),
    Endpoint("GET", "/calendar.ics", "the person's feed token (`?token=`, from `/calendar feed`)",
             "a person's iCalendar feed of the change calendar (`&team=`, `&subject=` narrow it)"),
)
FEED_PAST_DAYS, FEED_FUTURE_DAYS = 30, 365


def build_web_app(bolt: AsyncApp, db: Database, schema_head: str, config: Config, lineage: LineageService,
                  proposals: Proposals, sli: SliService, releases: Releases, draining: Callable[[], bool],
                  figures: BotMetrics, claim: Callable[[str], Awaitable[bool]], transitions: Transitions, inflight: Inflight) -> web.Application:
    """Routes for Slack (unless Socket Mode alone carries it), the HTTP API, the orchestrator's probes and Prometheus."""

    async def slack_events(request: web.Request) -> web.Response:
        with inflight.answering():  # the work after earlier acks waits meanwhile
            return await answer_slack(request)

    async def answer_slack(request: web.Request) -> web.Response:
        body = await request.read()
        timestamp, signature = request.headers.get("X-Slack-Request-Timestamp", ""), request.headers.get("X-Slack-Signature", "")
        if not (timestamp.isdigit() and signature and verifier.is_valid(body, timestamp, signature)):
            log.info("refused a Slack request with a missing, wrong or stale signature (%d bytes)", len(body))
            return web.json_response({"error": "invalid request"}, status=401)
        try:
            bolt_request = await bolt_request_of(request)
        except (ValueError, UnicodeDecodeError):  # a signed body that is not what Slack sends
            log.warning("refused a signed Slack request whose body cannot be read (%d bytes)", len(body))
            return web.json_response({"error": "malformed request"}, status=400)
        return await to_aiohttp_response(await bolt.async_dispatch(bolt_request))

    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def readyz(_request: web.Request) -> web.Response:
        if draining():
            return web.json_response({"ok": False, "reason": "shutting down"}, status=503)
        try:
            async with db.engine.connect() as conn:
                revision = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
        except Exception as err:  # any database failure means "not ready"
            log.warning("not ready: the database does not answer (%s)", type(err).__name__)
            return web.json_response({"ok": False, "reason": "database unreachable or not migrated"}, status=503)
        if revision != schema_head:
            return web.json_response({"ok": False, "reason": f"database at {revision}, code expects {schema_head}: run `bot migrate`"}, status=503)
        return web.json_response({"ok": True, "schema": revision})

    async def calendar_feed(request: web.Request) -> web.Response:
        owner = await proposals.calendar.feed_owner(request.query.get("token", "")[:100])
        if owner is None:
            return web.json_response({"ok": False, "error": "unknown feed token: mint yours with /calendar feed"}, status=404)
        now = proposals.clock()
        start, end = now - timedelta(days=FEED_PAST_DAYS), now + timedelta(days=FEED_FUTURE_DAYS)
        team, subject = request.query.get("team"), request.query.get("subject")
        if team and team not in await proposals.calendar.lineage.teams():  # a typo would otherwise read as "nothing planned"
            return web.json_response({"ok": False, "error": f"unknown team {team[:100]!r}: the catalog has no such team"}, status=404)
        if subject and subject not in await proposals.calendar.subjects():
            return web.json_response({"ok": False, "error": f"unknown subject {subject[:255]!r}"}, status=404)
        entries = [e for e in await proposals.calendar.listing(start, end, sequences=True)
                   if (not team or e["owner"] == team) and (not subject or subject in e["scope"]["subjects"])]
        freezes = [(f, w) for f in await proposals.calendar.freezes() for w in f.occurrences(start, end)
                   if (not team or not f.scope.teams or team in f.scope.teams) and (not subject or not f.scope.subjects or subject in f.scope.subjects)]
        body = ical.feed(entries, freezes, now, request.host.split(":")[0] or "changeops")
        return web.Response(body=body, content_type="text/calendar", charset="utf-8",
                            headers={"Cache-Control": "private, max-age=300"})

    app = web.Application(client_max_size=api.MAX_BODY, middlewares=[figures.middleware(), api.json_refusals])
    if config.slack_signing_secret:
        verifier = SignatureVerifier(config.slack_signing_secret)
    handlers = {"/slack/events": slack_events, "/healthz": healthz, "/readyz": readyz, "/metrics": figures.route(), "/calendar.ics": calendar_feed}
    for endpoint in SERVED:
        if endpoint.path != "/slack/events" or config.slack_signing_secret:
            app.router.add_route(endpoint.method, endpoint.path, handlers[endpoint.path])
    api.add_routes(app, config.api_tokens, lineage, proposals, bolt.client, proposals.calendar, sli, releases, transitions)
    pagerduty.add_route(app, config.pagerduty_webhook_secrets, sli, claim)
    return app
