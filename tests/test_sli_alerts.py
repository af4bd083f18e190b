"""SLI alerts end to end, the way oncall meets them: samples over HTTP, the alert in the pipeline's channel updated in
place, its thread, Acknowledge / Silence / Unsilence and the runbook's buttons, /sli, a storm, restarts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from bot.domain.calendar import Scope
from bot.domain.lineage.catalog import read_catalog
from bot.emulator.render import as_text
from bot.emulator.workspace import Message
from bot.runtime import Bot
from bot.slack import ids
from tests.conftest import API_TOKEN, SlackHarness, bot_config

ALICE, BOB, CAROL = "U0000ALICE", "U00000BOB", "U0000CAROL"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)  # the harness clock's start
FAST = {"for": "0s", "clear_for": "0s"}  # tests need no sustained durations unless they test them


def catalog(slack: SlackHarness, pipelines: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    return {
        "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE], "channel": "#orders-pipeline"},
                  "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB], "oncall": [BOB]}},
        "subjects": {"orders-value": {"owner": "orders-team", "channel": "#orders-pipeline"}},
        "datasets": [{"name": "dwd_orders", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["order_id"]}],
        "jobs": [{"name": "enrich", "owner": "orders-team", "inputs": ["orders-value"], "outputs": ["dwd_orders"],
                  "mappings": {"dwd_orders.order_id": ["orders-value.id"]}}],
        "pipelines": pipelines if pipelines is not None else [{
            "name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline", "source": {"topics": ["orders"], "group": "enrich"},
            "dlq": "orders.dlq", "sink": "dwd_orders", "jobs": ["enrich"], "interval": "1m",
            "reports": ["commit_success_rate", "schema_error_rate", "freshness", "sink_commit_latency"],
            "slis": {"schema_error_rate": FAST, "commit_success_rate": FAST}}],
    }


async def load(slack: SlackHarness, data: dict[str, Any]) -> None:
    parsed, problems = read_catalog(data, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)


async def send(slack: SlackHarness, samples: list[dict[str, Any]], token: str = API_TOKEN) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.post(f"{slack.bot.url}/api/v1/metrics", json=samples,
                                                          headers={"Authorization": f"Bearer {token}"}) as response:
        return response.status, await response.json()


def sample(sli: str, value: float, minutes: float = 0, pipeline: str = "enrich-orders") -> dict[str, Any]:
    return {"pipeline": pipeline, "sli": sli, "value": value, "time": (T0 + timedelta(minutes=minutes)).isoformat(), "labels": {}}


def alerts(slack: SlackHarness, channel: str = "orders-pipeline") -> list[Message]:
    return [m for m in slack.ws.channel_messages(channel) if any(b.get("block_id", "").startswith("sli:") for b in m.blocks)
            or "Resolved" in m.text]


def read(message: Message) -> str:
    return as_text(message.text, message.blocks)


async def the_alert(slack: SlackHarness, predicate: Any = lambda text: True) -> Message:
    await slack.bot.idle()
    return await slack.ws.wait_for(lambda: next((m for m in alerts(slack) if predicate(read(m))), None))


async def test_an_alert_silenced_until_a_time_picked_in_its_form(slack: SlackHarness) -> None:
    await load(slack, catalog(slack))
    await send(slack, [sample("schema_error_rate", 0.0), sample("schema_error_rate", 0.002, 1)])
    message = await the_alert(slack)
    await slack.driver.click(message, ids.SLI_SILENCE, user=ALICE, option="|until")
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.SLI_SILENCE_VIEW), None))

    def until(moment: datetime | None, why: str = "") -> dict[str, Any]:
        return {ids.UNTIL_BLOCK: {ids.UNTIL_ACTION: {"type": "datetimepicker", "selected_date_time": int(moment.timestamp()) if moment else None}},
                ids.REASON_BLOCK: {ids.REASON_ACTION: {"type": "plain_text_input", "value": why}}}

    now = slack.clock.now
    for moment, said in ((None, "Until when?"), (now - timedelta(hours=1), "past"), (now + timedelta(days=40), "30 days")):
        answer = await slack.driver.submit(form.id, until(moment), user=ALICE)
        assert answer.json["response_action"] == "errors" and said in answer.json["errors"][ids.UNTIL_BLOCK], answer.json
    series = {r.sli: r.state for r in await slack.bot.sli.series("enrich-orders")}
    assert not series["schema_error_rate"].get("silenced_until")  # refused: nothing changed
    answer = await slack.driver.submit(form.id, until(now + timedelta(hours=6), "schema rollout"), user=ALICE)
    assert answer.status == 200 and not (answer.json or {}).get("errors"), answer.json
    message = await the_alert(slack, lambda t: "Silenced by <@U0000ALICE>" in t)
    series = {r.sli: r.state for r in await slack.bot.sli.series("enrich-orders")}
    assert series["schema_error_rate"]["silence_reason"] == "schema rollout"


async def test_an_alert_is_posted_acknowledged_silenced_and_resolved_in_place(slack: SlackHarness) -> None:
    await load(slack, catalog(slack))
    status, body = await send(slack, [sample("schema_error_rate", 0.0), sample("schema_error_rate", 0.002, 1)])
    assert (status, body["accepted"]) == (200, 2)
    message = await the_alert(slack)
    text = read(message)
    assert "WARN" in text and "enrich-orders" in text and "Schema error rate" in text and "0.2%" in text
    assert "0.2% (measured <!date^" in text and "|2026-12-01 09:01 UTC>)" in text  # when it was taken: an unedited alert reads as old
    assert "What changed upstream?" in text and "Acknowledge" in text

    await send(slack, [sample("schema_error_rate", 0.05, 2)])  # escalates: the same message, now a page; oncall is DMed
    message = await the_alert(slack, lambda t: "PAGE" in t)
    assert len(alerts(slack)) == 1
    dm = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)) if "oncall" in m.text), None))
    assert "enrich-orders" in read(dm)

    await slack.driver.click(message, ids.SLI_ACK, user=CAROL)  # not of the team: told, nothing changes
    refusal = await slack.ws.wait_for(lambda: next((e for e in slack.ws.ephemerals_for(CAROL) if "Only members" in e.text), None))
    assert "orders-team" in refusal.text
    await slack.bot.idle()
    assert "Acknowledged" not in read(slack.ws.find_message(message.channel, message.ts))  # type: ignore[arg-type]

    await slack.driver.click(message, ids.SLI_ACK, user=ALICE)
    message = await the_alert(slack, lambda t: "Acknowledged by <@U0000ALICE>" in t)
    assert "[Acknowledge]" not in read(message)

    await slack.driver.click(message, ids.SLI_SILENCE, user=ALICE, option="|4h")
    message = await the_alert(slack, lambda t: "Silenced by <@U0000ALICE>" in t)
    assert "[Unsilence]" in read(message)
    await slack.driver.click(message, ids.SLI_UNSILENCE, user=ALICE)
    message = await the_alert(slack, lambda t: "Silenced" not in t)

    await send(slack, [sample("schema_error_rate", 0.0, 3)])
    message = await the_alert(slack, lambda t: "Resolved" in t)
    assert "[Acknowledge]" not in read(message) and len(alerts(slack)) == 1
    thread = "\n".join(read(m) for m in slack.ws.channel_messages(message.channel, thread_ts=message.ts))
    for line in ("escalated to page", "acknowledged by <@U0000ALICE>", "silenced by <@U0000ALICE>", "unsilenced by", "resolved"):
        assert line in thread
    history = [e for e in await slack.bot.sli.history("enrich-orders")]
    assert len(history) == 1 and history[0].acked_by == ALICE and history[0].resolved_at is not None and history[0].level == "page"


async def test_a_firing_alert_is_edited_within_seconds_of_each_material_change_and_not_for_the_others(slack: SlackHarness) -> None:
    await load(slack, catalog(slack))
    await send(slack, [sample("schema_error_rate", 0.02)])
    message = await the_alert(slack, lambda t: "*Now*\n2%" in t)
    updates = len(slack.ws.calls_to("chat.update"))

    await send(slack, [sample("schema_error_rate", 0.0195, 0.5), sample("schema_error_rate", 0.019, 1)])  # 2.5% and 5% lower
    await slack.bot.idle()
    assert len(slack.ws.calls_to("chat.update")) == updates and "*Now*\n2%" in read(slack.ws.find_message(message.channel, message.ts))  # type: ignore[arg-type]

    await send(slack, [sample("schema_error_rate", 0.017, 1.5)])  # 15% below what the message shows
    edited = await slack.ws.wait_for(lambda: "*Now*\n1.7%" in read(slack.ws.find_message(message.channel, message.ts)) or None,  # type: ignore[arg-type]
                                     timeout=5)
    assert edited and len(slack.ws.calls_to("chat.update")) == updates + 1
    await send(slack, [sample("schema_error_rate", 0.021, 2)])  # a new peak (2.1% > 2%), a little more than 10% up too
    await slack.ws.wait_for(lambda: "*Peak*\n2.1%" in read(slack.ws.find_message(message.channel, message.ts)) or None,  # type: ignore[arg-type]
                            timeout=5)
    await send(slack, [sample("schema_error_rate", 0.0, 1.8)])  # late: older than the newest sample, changes nothing
    await slack.bot.idle()
    assert "*Now*\n2.1%" in read(slack.ws.find_message(message.channel, message.ts)) and len(alerts(slack)) == 1  # type: ignore[arg-type]
    assert (await slack.bot.sli.coverage())[0]["late"] == {"schema_error_rate": 1}


async def test_runbook_buttons_answer_only_the_clicker(slack: SlackHarness) -> None:
    await load(slack, catalog(slack))
    await slack.bot.proposals.calendar.add(kind="maintenance", title="orders reindex", start=T0 - timedelta(hours=1), end=T0 + timedelta(hours=1),
                                           owner="orders-team", booked_by=ALICE, surface="cli",
                                           scope=Scope(frozenset({"orders-value"})))
    await send(slack, [sample("schema_error_rate", 0.5)])
    message = await the_alert(slack)
    await slack.driver.click(message, ids.SLI_CHANGES, user=BOB)
    answer = await slack.ws.wait_for(lambda: next((e for e in slack.ws.ephemerals_for(BOB) if "What changed upstream" in e.text), None))
    assert "orders-value" in answer.text
    assert "orders reindex" in as_text(answer.text, answer.blocks)
    await slack.driver.click(message, ids.SLI_RUNBOOK, user=BOB)
    await slack.ws.wait_for(lambda: any("Pause the pipeline" in e.text for e in slack.ws.ephemerals_for(BOB)))
    await send(slack, [sample("dlq_volume", 10, 0), sample("dlq_volume", 20, 1.5)])
    await send(slack, [sample("commit_success_rate", 0.5, 1)])
    commits = await the_alert(slack, lambda t: "Commit success rate" in t)
    assert "[Hints]" in read(commits)


async def test_bad_samples_are_refused_one_by_one(slack: SlackHarness) -> None:
    await load(slack, catalog(slack))
    status, body = await send(slack, [sample("source_lag", 1.0), sample("nope", 1.0), sample("source_lag", 1.0, pipeline="ghost"),
                                      {**sample("source_lag", 1.0), "value": "NaN"}, {**sample("source_lag", 1.0), "time": "yesterday"}, 7])
    assert status == 200 and body["accepted"] == 1
    assert [r["kind"] for r in body["refused"]] == ["unknown_sli", "unknown_pipeline", "bad_value", "bad_time", "malformed"]
    status, body = await send(slack, [sample("commit_success_rate", 1.5), sample("dlq_volume", -3), sample("source_lag", -0.4)])
    assert [r["error"] for r in body["refused"]] == ["commit_success_rate is a ratio from 0 to 1, not 1.5", "dlq_volume is never negative, not -3"]
    assert body["accepted"] == 1  # a lag a little below zero is two clocks' skew, not a bad sample
    status, body = await send(slack, {"not": "a list"})  # type: ignore[arg-type]
    assert status == 400
    async with aiohttp.ClientSession() as http, http.post(f"{slack.bot.url}/api/v1/metrics", data="[{", headers={
            "Authorization": f"Bearer {API_TOKEN}"}) as response:
        assert response.status == 400
    assert slack.bot.sli.rejected["unknown_sli"] == 1


async def test_metrics_need_the_metrics_scope(slack: SlackHarness, migrated_url: str) -> None:
    config = bot_config(slack.emulator, migrated_url, CHANGEOPS_API_TOKENS="ci:calendar:read=calendar-only-token-0123")
    bot = Bot(config, slack.clock)
    await bot.start(0)
    try:
        async with aiohttp.ClientSession() as http, http.post(f"{bot.url}/api/v1/metrics", json=[], headers={
                "Authorization": "Bearer calendar-only-token-0123"}) as response:
            assert response.status == 403
            assert "metrics:write" in (await response.json())["error"]
    finally:
        await bot.stop()


async def test_sli_commands(slack: SlackHarness) -> None:
    await load(slack, catalog(slack))
    await send(slack, [sample("schema_error_rate", 0.5), sample("source_lag", 12.0)])
    await slack.bot.idle()

    async def answer(text: str, user: str = ALICE) -> str:
        before = len(slack.ws.ephemerals_for(user))
        await slack.driver.command(text, user=user, channel="orders-pipeline")
        found = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(user)[before:] or None)
        return "\n".join(as_text(e.text, e.blocks) for e in found)

    assert "enrich-orders" in await answer("/sli") and "Schema error rate" in await answer("/sli")
    table = await answer("/sli status enrich-orders")
    assert "Source lag" in table and "12 s" in table and "page" in table and "disabled" not in table
    assert "no pipeline 'ghost'" in await answer("/sli status ghost")
    assert "`now` is not understood here" in await answer("/sli status enrich-orders now")
    assert "Usage" in await answer("/sli silence enrich-orders")
    assert "neither a duration" in await answer("/sli silence enrich-orders source_lag soon")
    assert "no SLI" in await answer("/sli silence enrich-orders lag 1h")
    assert "Only members or oncall of orders-team" in await answer("/sli silence enrich-orders all 1h", user=CAROL)
    assert "silenced until" in await answer("/sli silence enrich-orders all 2h maintenance <!channel>")
    series = {r.sli: r.state for r in await slack.bot.sli.series("enrich-orders")}
    assert series["source_lag"]["silence_reason"] == "maintenance <!channel>"  # stored as typed; escaped where shown
    assert "posted again" in await answer("/sli unsilence enrich-orders all")
    assert "not silenced" in await answer("/sli unsilence enrich-orders all") or "nothing of it" in await answer("/sli unsilence enrich-orders all")
    assert "Schema error rate" in await answer("/sli history enrich-orders")
    coverage = await answer("/sli coverage")
    assert "1 of 1 pipelines production-ready" in coverage or "no recent samples" in coverage


async def test_not_production_ready_pipelines_are_named(slack: SlackHarness) -> None:
    data = catalog(slack, [{"name": "bare", "owner": "orders-team"}])
    parsed, problems = read_catalog(data, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    assert any("not production-ready" in str(w) and "bare" in str(w) for w in parsed.warnings)
    await slack.bot.lineage.load_catalog(parsed)
    rows = await slack.bot.sli.coverage()
    assert rows[0]["missing"] == ["source_lag", "commit_success_rate", "schema_error_rate", "dlq_volume"]


@pytest.mark.parametrize("bad, message", [
    ({"name": "x", "owner": "orders-team", "slis": {"dlq_volume": "disabled"}}, "mandatory"),
    ({"name": "x", "owner": "orders-team", "slis": {"latency": {"warn": 1}}}, "unknown SLI"),
    ({"name": "x", "owner": "orders-team", "slis": {"source_lag": {"warn": "high"}}}, "expected a number"),
    ({"name": "x", "owner": "nobody"}, "unknown team"),
    ({"name": "x", "owner": "orders-team", "source": {"topics": ["orders"]}}, "consumer group"),
    ({"name": "x", "owner": "orders-team", "jobs": ["ghost"]}, "unknown job"),
    ({"name": "x", "owner": "orders-team", "reports": ["lag"]}, "unknown SLI"),
    ({"name": "x", "owner": "orders-team", "sla": "soon"}, "duration"),
    ({"name": "bad name!", "owner": "orders-team"}, "a pipeline needs a name"),
    ({"name": "x", "owner": "orders-team", "auto_pause": "yes"}, "expected true or false"),
    ({"name": "x", "owner": "orders-team", "auto_pause": True}, "only a pipeline whose jobs include a Flink job"),
])
def test_catalog_pipeline_problems_are_named(bad: dict[str, Any], message: str) -> None:
    data = {"teams": {"orders-team": {"members": [ALICE]}}, "pipelines": [bad]}
    _, problems = read_catalog(data, lambda _: None)  # type: ignore[arg-type, return-value]
    assert any(message in str(p) for p in problems), problems


async def test_a_storm_of_a_hundred_pages_is_delivered_as_digests_within_slacks_posting_limits(slack: SlackHarness) -> None:
    channels = ["orders-pipeline", "changes", "schema-changes", "storm-d"]
    slack.ws.add_channel("storm-d", [ALICE])
    pipelines = [{"name": f"p{i:03d}", "owner": "orders-team", "channel": f"#{channels[i % 4]}", "reports": ["schema_error_rate"],
                  "slis": {"schema_error_rate": FAST}} for i in range(100)]
    await load(slack, catalog(slack, pipelines))
    slack.ws.limit_posting(per_second=1.0, burst=2)
    slack.ws.rate_limit("chat.postMessage", times=3)  # and a few 429s on top, as a busy workspace gives
    status, _ = await send(slack, [sample("schema_error_rate", 0.5, pipeline=f"p{i:03d}") for i in range(100)])
    assert status == 200
    await slack.bot.idle()
    shown = "\n".join(read(m) for c in channels for m in slack.ws.channel_messages(c))
    for i in range(100):
        assert f"p{i:03d}" in shown
    posts = [c for c in slack.ws.calls_to("chat.postMessage") if c.ok]
    assert len(posts) <= 4 * 2 + 1  # a digest per channel (a thread note at most), and one DM to oncall — not 200 messages
    dm = "\n".join(read(m) for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)))
    assert all(f"p{i:03d}" in dm for i in range(100))
    digest = next(m for m in slack.ws.channel_messages("changes") if "alerts firing" in m.text)
    status, _ = await send(slack, [sample("schema_error_rate", 0.9, 1, pipeline=f"p{i:03d}") for i in range(100)])  # every value moves
    assert status == 200
    await slack.bot.idle()
    for channel in channels:  # each digest edited in place to show the new values; no new posts for it
        shown = "\n".join(read(m) for m in slack.ws.channel_messages(channel) if "alerts firing" in m.text)
        assert shown.count("— 90%") == 25 and "— 50%" not in shown
    assert len([c for c in slack.ws.calls_to("chat.postMessage") if c.ok]) == len(posts)
    await slack.driver.click(digest, ids.SLI_ACK_ALL, user=ALICE)
    await slack.ws.wait_for(lambda: any("You acknowledged 25 alerts" in e.text for e in slack.ws.ephemerals_for(ALICE)))
    await slack.bot.idle()
    assert (read(slack.ws.find_message(digest.channel, digest.ts)).count("acknowledged by <@U0000ALICE>")  # type: ignore[arg-type]
            == 25)


async def test_episodes_survive_a_restart_and_two_replicas_post_once(slack: SlackHarness, migrated_url: str) -> None:
    await load(slack, catalog(slack))
    second = Bot(slack.config, slack.clock)
    await second.start(0)
    try:
        await asyncio.gather(send(slack, [sample("schema_error_rate", 0.5)]), _post_to(second, [sample("schema_error_rate", 0.6)]))
        await asyncio.gather(slack.bot.idle(), second.idle())
        assert len(alerts(slack)) == 1
    finally:
        await second.stop()
    await slack.bot.stop()  # a restart: the episode and its message are in the database
    slack.bot = Bot(slack.config, slack.clock)
    await slack.bot.start(0)
    await send(slack, [sample("schema_error_rate", 0.0, 5)])
    message = await the_alert(slack, lambda t: "Resolved" in t)
    assert len(alerts(slack)) == 1 and message.edited


async def _post_to(bot: Bot, samples: list[dict[str, Any]]) -> None:
    async with aiohttp.ClientSession() as http, http.post(f"{bot.url}/api/v1/metrics", json=samples,
                                                          headers={"Authorization": f"Bearer {API_TOKEN}"}) as response:
        assert response.status == 200


async def test_no_data_reminders_and_silence_expiry_run_on_the_sweep(slack: SlackHarness) -> None:
    await load(slack, catalog(slack))
    await send(slack, [sample("commit_success_rate", 1.0)])
    slack.clock.advance(minutes=3, seconds=1)
    await slack.bot.sli.sweep()
    message = await the_alert(slack, lambda t: "No data" in t)
    assert "Commit success rate" in read(message)
    slack.clock.advance(hours=1)
    await slack.bot.sli.sweep()
    await slack.bot.idle()
    thread = "\n".join(read(m) for m in slack.ws.channel_messages(message.channel, thread_ts=message.ts))
    assert "still firing and not acknowledged" in thread
    await send(slack, [sample("commit_success_rate", 1.0, 70)])
    await the_alert(slack, lambda t: "Resolved" in t)


async def test_cli_status_prints_the_json_contract(slack: SlackHarness, migrated_url: str, tmp_path: Any) -> None:
    await load(slack, catalog(slack))
    await send(slack, [sample("schema_error_rate", 0.5)])
    await slack.bot.idle()
    env = {"DATABASE_URL": migrated_url, "PATH": "/usr/bin:/bin"}
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "sli", "status", "enrich-orders", "--format", "json"],
                                   capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert {tuple(sorted(r)) for r in rows} == {("age_seconds", "episode", "measured_at", "pipeline", "since", "sli", "state", "threshold", "value")}
    errors = next(r for r in rows if r["sli"] == "schema_error_rate")
    assert errors["state"] == "page firing" and errors["value"] == 0.5 and errors["episode"]
    assert errors["measured_at"] == T0.isoformat() and errors["age_seconds"] > 0  # as old as the sample: the bot need not be running
    assert next(r for r in rows if r["sli"] == "freshness")["measured_at"] is None  # never measured: no value, no time
    text = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "sli", "status", "enrich-orders"], capture_output=True, text=True,
                                   env=env, timeout=60)
    assert "measured 2026-12-01 09:00 UTC (" in next(line for line in text.stdout.splitlines() if "schema_error_rate" in line)
    missing = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "sli", "status", "ghost"], capture_output=True, text=True,
                                      env=env, timeout=60)
    assert missing.returncode == 1 and "no pipeline 'ghost'" in missing.stderr


async def test_an_alert_someone_deleted_in_slack_is_posted_again_when_it_changes_with_its_timeline(slack: SlackHarness) -> None:
    await load(slack, catalog(slack))
    await send(slack, [sample("schema_error_rate", 0.002)])
    message = await the_alert(slack, lambda t: "WARN" in t)
    await slack.delete(message.channel, message.ts)  # someone tidied the channel while it was firing

    await send(slack, [sample("schema_error_rate", 0.05, 1)])  # it escalates: a page must be in sight, not edited into nothing
    again = await the_alert(slack, lambda t: "PAGE" in t)
    assert again.ts != message.ts and [m.ts for m in alerts(slack)] == [again.ts]
    await slack.ws.wait_for(lambda: any("escalated to page" in read(m) for m in slack.ws.channel_messages(again.channel, thread_ts=again.ts)))
    await slack.delete(again.channel, again.ts)
    await send(slack, [sample("schema_error_rate", 0.0, 2)])
    resolved = await the_alert(slack, lambda t: "Resolved" in t)
    assert [m.ts for m in alerts(slack)] == [resolved.ts]
    await slack.ws.wait_for(lambda: any("resolved" in read(m) for m in slack.ws.channel_messages(resolved.channel, thread_ts=resolved.ts)))
    history = await slack.bot.sli.history("enrich-orders")
    assert len(history) == 1 and history[0].message_ts == resolved.ts  # one episode, its message where it now is
