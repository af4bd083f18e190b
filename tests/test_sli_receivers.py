"""Pages beyond Slack: PagerDuty's Events API v2 and an Alertmanager-style webhook, against a local HTTP receiver,
through a receiver outage and a restart: nothing lost, nothing doubled."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.domain.sli.evaluator import Kind, Level
from bot.domain.sli.receivers import action, alertmanager_webhook
from bot.runtime import Bot
from bot.slack import ids
from tests.conftest import SlackHarness, bot_config
from tests.test_sli_alerts import ALICE, catalog, load, read, sample, send, the_alert

T = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_what_each_event_means_to_a_pager() -> None:
    assert action(Kind.OPENED, Level.PAGE, False, False, False) == "trigger"
    assert action(Kind.OPENED, Level.WARN, False, False, False) is None  # warnings are Slack's
    assert action(Kind.OPENED, Level.PAGE, True, False, False) is None  # held (folded, expected): nobody is paged
    assert action(Kind.ESCALATED, Level.PAGE, False, False, True) is None  # already told
    assert action(Kind.ACKNOWLEDGED, Level.PAGE, False, False, True) == "acknowledge"
    assert action(Kind.RESOLVED, Level.WARN, False, False, False) is None  # never told of it: nothing to resolve
    body = alertmanager_webhook("resolve", "changeops-orders-team", "fp", "enrich-orders", "enrich-orders", "schema_error_rate", "orders-team",
                                T, T, {"peak": 0.05}, None)
    assert body["version"] == "4" and body["status"] == "resolved" and body["alerts"][0]["endsAt"] == T.isoformat()
    assert body["groupKey"] == '{}:{alertname="ChangeOpsSLI",pipeline="enrich-orders"}' and body["commonLabels"]["team"] == "orders-team"


class Receiver:
    """A PagerDuty-like and a webhook endpoint on one local server; ``failing`` makes both answer 503."""

    def __init__(self) -> None:
        self.pagerduty: list[dict[str, Any]] = []
        self.webhook: list[dict[str, Any]] = []
        self.failing = 0
        self.url = ""

    async def pd(self, request: web.Request) -> web.Response:
        if self.failing:
            self.failing -= 1
            return web.json_response({"status": "unavailable"}, status=503)
        self.pagerduty.append(await request.json())
        return web.json_response({"status": "success", "dedup_key": "x"}, status=202)

    async def hook(self, request: web.Request) -> web.Response:
        if self.failing:
            self.failing -= 1
            return web.Response(status=503)
        self.webhook.append(await request.json())
        return web.Response(status=200)


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/v2/enqueue", found.pd)
    app.router.add_post("/hook", found.hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    found.url = f"http://127.0.0.1:{int(runner.addresses[0][1])}"
    yield found
    await runner.cleanup()


def paging(slack: SlackHarness, receiver: Receiver) -> dict[str, Any]:
    data = catalog(slack)
    data["teams"]["orders-team"]["receivers"] = [{"pagerduty": {"routing_key_env": "PAGERDUTY_ROUTING_KEY_ORDERS"}},
                                                 {"webhook": {"url": f"{receiver.url}/hook"}}]
    return data


async def restart(slack: SlackHarness, migrated_url: str, receiver: Receiver) -> None:
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, PAGERDUTY_EVENTS_URL=f"{receiver.url}/v2/enqueue",
                               PAGERDUTY_ROUTING_KEY_ORDERS="R0UTINGKEY0RDERS"), slack.clock)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"


async def test_pages_reach_pagerduty_and_the_webhook_once_through_an_outage_and_a_restart(slack: SlackHarness, migrated_url: str,
                                                                                          receiver: Receiver) -> None:
    await restart(slack, migrated_url, receiver)
    await load(slack, paging(slack, receiver))
    receiver.failing = 2  # the receiver is down for the first attempts
    await send(slack, [sample("schema_error_rate", 0.001), sample("schema_error_rate", 0.002, 1)])  # a warning: Slack only
    await the_alert(slack, lambda t: "WARN" in t)
    await send(slack, [sample("schema_error_rate", 0.05, 2)])  # escalates to a page
    message = await the_alert(slack, lambda t: "PAGE" in t)
    await restart(slack, migrated_url, receiver)  # the rows owed survive a restart
    await slack.bot.idle()
    await slack.ws.wait_for(lambda: len(receiver.pagerduty) == 1 and len(receiver.webhook) == 1 or None, timeout=60)
    [trigger] = receiver.pagerduty
    assert trigger["event_action"] == "trigger" and trigger["routing_key"] == "R0UTINGKEY0RDERS" and trigger["payload"]["severity"] == "critical"
    assert trigger["payload"]["source"] == "enrich-orders" and trigger["payload"]["component"] == "schema_error_rate"
    [firing] = receiver.webhook
    assert firing["status"] == "firing" and firing["alerts"][0]["labels"]["pipeline"] == "enrich-orders"
    assert firing["alerts"][0]["fingerprint"] == trigger["dedup_key"]

    await slack.driver.click(slack.ws.find_message(message.channel, message.ts), ids.SLI_ACK, user=ALICE)  # type: ignore[arg-type]
    await the_alert(slack, lambda t: "Acknowledged by" in t)
    await send(slack, [sample("schema_error_rate", 0.0, 3)])
    await the_alert(slack, lambda t: "Resolved" in t)
    await slack.bot.idle()
    await slack.ws.wait_for(lambda: len(receiver.pagerduty) == 3 and len(receiver.webhook) == 2 or None, timeout=60)
    await slack.bot.idle()
    assert [e["event_action"] for e in receiver.pagerduty] == ["trigger", "acknowledge", "resolve"]
    assert {e["dedup_key"] for e in receiver.pagerduty} == {trigger["dedup_key"]}
    assert [w["status"] for w in receiver.webhook] == ["firing", "resolved"]
    assert "R0UTINGKEY0RDERS" not in json.dumps([m.text for m in slack.ws.channel_messages("orders-pipeline")])


SECRET = "pd-webhook-secret-0123456789"


async def from_pagerduty(slack: SlackHarness, payload: dict[str, Any] | bytes, secret: str = SECRET) -> tuple[int, dict[str, Any]]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    signature = "v1=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    async with aiohttp.ClientSession() as http, http.post(f"{slack.bot.url}/api/v1/pagerduty", data=body, headers={
            "Content-Type": "application/json", "X-PagerDuty-Signature": f"v1=00ff,{signature}"}) as response:
        return response.status, await response.json()


def incident(event_id: str, kind: str, key: str, who: str = "Dana Oncall") -> dict[str, Any]:
    return {"event": {"id": event_id, "event_type": kind, "resource_type": "incident", "occurred_at": "2026-12-01T09:05:00Z",
                      "agent": {"id": "PLH1HKV", "summary": who, "type": "user_reference"}, "client": {"name": "PagerDuty"},
                      "data": {"id": "PGR0VU2", "type": "incident", "number": 2, "status": kind.split(".")[1], "incident_key": key,
                               "title": "enrich-orders schema errors"}}}


async def test_an_incident_acknowledged_in_pagerduty_is_acknowledged_here_once_and_a_resolve_there_is_said(
        slack: SlackHarness, migrated_url: str, receiver: Receiver) -> None:
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, PAGERDUTY_EVENTS_URL=f"{receiver.url}/v2/enqueue",
                               PAGERDUTY_ROUTING_KEY_ORDERS="R0UTINGKEY0RDERS", PAGERDUTY_WEBHOOK_SECRET=f"old-secret, {SECRET}"), slack.clock)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    await load(slack, paging(slack, receiver))
    await send(slack, [sample("schema_error_rate", 0.05, 0)])
    message = await the_alert(slack, lambda t: "PAGE" in t)
    await slack.bot.idle()
    await slack.ws.wait_for(lambda: len(receiver.pagerduty) == 1 or None, timeout=60)
    key = receiver.pagerduty[0]["dedup_key"]

    assert (await from_pagerduty(slack, incident("e1", "incident.acknowledged", key), secret="wrong"))[0] == 401
    assert (await from_pagerduty(slack, incident("e0", "incident.acknowledged", "not-ours")))[1]["ignored"] == "not an incident this bot paged"
    assert (await from_pagerduty(slack, incident("e9", "incident.annotated", key)))[0] == 200
    for junk in (b"not json", b"\xff\xfe", b""):  # signed, but not JSON: refused, nothing changes
        assert await from_pagerduty(slack, junk) == (400, {"ok": False, "error": "not JSON"})
    for odd in (b"[1, 2]", b'"text"', b'{"event": [1]}', b'{"event": {"event_type": "incident.acknowledged", "data": {"incident_key": 7}}}'):
        assert (await from_pagerduty(slack, odd))[1] == {"ok": True, "ignored": "not an incident acknowledged or resolved"}
    status, answer = await from_pagerduty(slack, incident("e1", "incident.acknowledged", key))
    assert status == 200 and answer["done"] == "acknowledged"
    assert (await from_pagerduty(slack, incident("e1", "incident.acknowledged", key)))[1]["ignored"] == "already handled"  # a retry
    assert "already acknowledged" in (await from_pagerduty(slack, incident("e2", "incident.acknowledged", key)))[1]["done"]
    shown = await the_alert(slack, lambda t: "Acknowledged by Dana Oncall (in PagerDuty)" in t)
    assert shown.ts == message.ts

    status, answer = await from_pagerduty(slack, incident("e3", "incident.resolved", key))
    assert answer["done"] == "said in its thread"
    await from_pagerduty(slack, incident("e3", "incident.resolved", key))  # a retry says nothing more
    await slack.bot.idle()
    thread = [read(m) for m in slack.ws.channel_messages(message.channel, thread_ts=message.ts)]
    said = [line for line in thread if "resolved in PagerDuty by Dana Oncall" in line]
    assert len(said) == 1 and "still breaches here" in said[0]
    assert [e["kind"] for e in (await slack.bot.sli.episode(key)).timeline if e["kind"] == "noted"] == ["noted"]  # and in its history
    assert "PAGE" in read(await the_alert(slack, lambda t: "Acknowledged by" in t))  # its samples still breach: not resolved here

    await send(slack, [sample("schema_error_rate", 0.0, 1)])
    await the_alert(slack, lambda t: "Resolved" in t)
    await slack.bot.idle()
    await slack.ws.wait_for(lambda: len(receiver.pagerduty) == 2 or None, timeout=60)
    assert [e["event_action"] for e in receiver.pagerduty] == ["trigger", "resolve"]  # its acknowledgement is not echoed back
