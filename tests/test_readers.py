"""Undeclared consumers on the real broker: three groups on a topic — one a catalog job declares, one nobody
declared with a live member, one nobody declared and idle — make the card's three lines; attributing the active
one to a team asks that team on this proposal and the next; the census survives a restart; a broker that stops
answering leaves the last census with its age, and the card says so; the CLI prints the census."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bot.domain.avro.parse import parse
from bot.domain.lineage.catalog import read_catalog
from bot.domain.lineage.openlineage import parse_event
from bot.domain.readers import Census, Declared, Member, Reading, judge
from bot.emulator.render import as_text
from bot.runtime import Bot
from bot.services import census as census_module
from bot.slack import ids
from tests.conftest import SlackHarness, bot_config
from tests.test_proposals_slack import ALICE, BOB, CAROL, V1, card_message, propose, retyped


@pytest.fixture
def database_url(postgres_url: str) -> str:
    """PostgreSQL only: the broker is the slow part."""
    return postgres_url


@pytest.fixture
async def readers(slack: SlackHarness, migrated_url: str, kafka_bootstrap: str) -> AsyncIterator[tuple[SlackHarness, dict[str, Any]]]:
    """A topic read by three groups, a catalog whose job declares one of them, the bot on the real broker."""
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(30):
        producer.produce(topic, b"x", partition=i % 3)
    assert producer.flush(30) == 0
    names = {"topic": topic, "declared": f"enrich-{topic}", "active": f"fraud-scorer-{topic}", "idle": f"old-report-{topic}"}
    for group, offset in ((names["declared"], 10), (names["idle"], 4)):
        wanted = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, offset) for p in range(3)])
        admin.alter_consumer_group_offsets([wanted])[group].result(timeout=10)
    live = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": names["active"], "client.id": "fraud-scorer-7",
                     "auto.offset.reset": "earliest"})
    live.subscribe([topic])
    for _ in range(100):
        await asyncio.to_thread(live.poll, 0.2)
        if live.assignment():
            break
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap))
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    catalog = {
        "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE]},
                  "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB], "oncall": [BOB]},
                  "growth-team": {"members": [CAROL]}},
        "subjects": {"orders-value": {"owner": "orders-team", "channel": "#orders-pipeline", "topic": topic}},
        "datasets": [{"name": "dwd_orders", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["amount"]}],
        "jobs": [{"name": "enrich", "owner": "analytics-team", "inputs": ["orders-value"], "outputs": ["dwd_orders"],
                  "consumer_groups": [names["declared"]], "mappings": {"dwd_orders.amount": ["orders-value.price"]}}],
    }
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    await slack.bot.registry.record("orders-value", parse(V1))
    try:
        yield slack, names
    finally:
        await asyncio.to_thread(live.close)


def card_text(slack: SlackHarness, number: int) -> str:
    message = next(m for m in slack.ws.channel_messages("schema-changes") if f"#{number} ·" in m.text or f"#{number} " in m.text)
    return as_text(message.text, message.blocks)


async def test_the_card_names_declared_undeclared_and_idle_readers_and_attribution_asks_the_team(
        readers: tuple[SlackHarness, dict[str, Any]], migrated_url: str, kafka_bootstrap: str) -> None:
    slack, names = readers
    assert await slack.bot.census.refresh()
    census = await slack.bot.census.census(names["topic"])
    seen = {r.reading.group: r for r in census.readers}
    assert seen[names["declared"]].declared is not None and seen[names["declared"]].declared.job == "enrich"
    assert seen[names["active"]].activity.value == "active" and seen[names["active"]].declared is None
    assert [m.client_id for m in seen[names["active"]].reading.members] == ["fraud-scorer-7"]
    assert seen[names["idle"]].activity.value == "idle" and seen[names["idle"]].reading.lag == 18

    submitted = await propose(slack, retyped(V1, "price", "string"))
    assert submitted.status == 200
    card = await card_message(slack)
    shown = as_text(card.text, card.blocks)
    assert f"Kafka says 3 groups read `{names['topic']}`" in shown
    assert f"`{names['declared']}` — job `enrich` (analytics-team) · idle" in shown
    assert f"`{names['active']}` — *not declared* · active (fraud-scorer-7)" in shown
    assert f"`{names['idle']}` — *not declared* · idle" in shown
    assert "This change breaks reads, and 2 groups nobody declared read the topic" in shown
    view = await slack.bot.proposals.view(1)
    assert view.proposal.teams == ["analytics-team"]

    before = len(slack.ws.ephemerals_for(CAROL))
    await slack.driver.click(card, ids.READER_MENU, user=CAROL, option=f"attribute|1|{names['active']}")  # not the owner, not oncall
    refused = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(CAROL)[before:] or None)
    assert "Only members of orders-team or oncall" in refused[0].text
    await slack.driver.click(card, ids.READER_MENU, user=ALICE, option=f"attribute|1|{names['active']}")
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.ATTRIBUTE_VIEW), None))
    choice = {ids.TEAM_BLOCK: {ids.TEAM_ACTION: {"type": "static_select", "selected_option": {"value": "growth-team"}}}}
    await slack.driver.submit(form.id, choice, user=ALICE)
    await slack.ws.wait_for(lambda: "growth-team) · active" in card_text(slack, 1) or None)
    assert (await slack.bot.proposals.view(1)).proposal.teams == ["analytics-team", "growth-team"]
    await slack.ws.wait_for(lambda: any("Kafka says a consumer group your team answers for" in m.text
                                        for m in slack.ws.channel_messages(slack.ws.open_dm(CAROL))) or None)
    await slack.driver.click(card, ids.READER_MENU, user=BOB, option=f"retire|1|{names['idle']}")  # BOB is oncall (analytics)
    await slack.ws.wait_for(lambda: f"`{names['idle']}` — retired" in card_text(slack, 1) or None)

    await slack.bot.stop()  # the census and the attributions survive a restart, and the next proposal asks growth-team too
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:9"))  # a broker that does not answer
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    assert not await slack.bot.census.refresh()
    again = await slack.bot.census.census(names["topic"])
    assert again.failed and again.taken_at == census.taken_at
    assert {r.reading.group: r.activity.value for r in again.readers} == {names["declared"]: "idle", names["active"]: "active",
                                                                           names["idle"]: "retired"}
    await propose(slack, retyped(V1, "note", ["null", "string", "int"]))
    second = await card_message(slack, 2)
    shown = as_text(second.text, second.blocks)
    assert "the newest census failed" in shown and "these are the readers it last saw" in shown
    assert "growth-team" in (await slack.bot.proposals.view(2)).proposal.teams

    env = {**os.environ, "DATABASE_URL": migrated_url}
    printed = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "consumers", names["topic"], "--format", "json"],
                                      env=env, capture_output=True, text=True, timeout=60)
    answer = json.loads(printed.stdout)
    assert printed.returncode == 3, printed.stderr  # the newest census failed: this is the stored one
    assert answer["topic"] == names["topic"] and answer["failed"] and answer["live"] is False and answer["age_seconds"] >= 0
    assert census.taken_at is not None and answer["taken_at"] == census.taken_at.isoformat()
    rows = {r["group"]: r for r in answer["readers"]}
    assert rows[names["active"]]["team"] == "growth-team" and rows[names["active"]]["members"] == [
        {"client_id": "fraud-scorer-7", "host": rows[names["active"]]["members"][0]["host"]}]
    assert rows[names["active"]]["state"] == "last seen active" and rows[names["active"]]["live"] is False  # never shown as live
    assert rows[names["declared"]]["declared_by"] == "enrich" and rows[names["idle"]]["state"] == "retired"
    text = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "consumers", names["topic"]], env=env, capture_output=True,
                                   text=True, timeout=60)
    assert text.returncode == 3 and "last seen active at" in text.stdout and "the newest census failed" in text.stdout
    impact = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "impact", "orders-value", "--format", "json"],
                                     env=env, capture_output=True, text=True, timeout=60)
    assert {g["group"] for g in json.loads(impact.stdout)["consumer_groups"]} == set(rows)
    assert json.loads(impact.stdout)["census"]["live"] is False and json.loads(impact.stdout)["census"]["taken_at"] == answer["taken_at"]

    await slack.bot.stop()  # the broker answers again: a fresh census is live, and every reader that reads is declared or attributed
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap))
    await slack.bot.start(0)
    refreshed = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "consumers", names["topic"], "--refresh", "--format",
                                                         "json"], env=env, capture_output=True, text=True, timeout=120)
    answer = json.loads(refreshed.stdout)
    assert refreshed.returncode == 0, refreshed.stderr
    assert answer["live"] is True and answer["failed"] is None and answer["partial"] is False and answer["age_seconds"] < 60
    assert all(r["live"] and not r["state"].startswith("last seen") for r in answer["readers"])


async def test_consumers_command_lists_the_census(readers: tuple[SlackHarness, dict[str, Any]]) -> None:
    slack, names = readers
    await slack.bot.census.refresh()
    before = len(slack.ws.ephemerals_for(ALICE))
    await slack.driver.command("/schema consumers orders-value", user=ALICE, channel="orders-pipeline")
    answer = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(ALICE)[before:] or None)
    text = as_text(answer[0].text, answer[0].blocks)
    assert f"Kafka says 3 groups read `{names['topic']}`" in text and ":warning:" in text and "fraud-scorer-7" in text
    await slack.driver.command("/schema consumers nope-value", user=ALICE, channel="orders-pipeline")
    unknown = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(ALICE)[before + 1:] or None)
    assert "Unknown subject `nope-value`" in unknown[0].text


async def test_the_bot_answers_while_a_census_is_being_taken(readers: tuple[SlackHarness, dict[str, Any]],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    slack, names = readers
    gate = threading.Event()
    real = census_module.take

    def held(admin: Any, topics: Any = None, offsets_log: Any = None) -> Any:
        gate.wait(60)
        return real(admin, topics, offsets_log)

    monkeypatch.setattr(census_module, "take", held)
    taking = asyncio.create_task(slack.bot.census.refresh())
    before = len(slack.ws.ephemerals_for(ALICE))
    await slack.driver.command("/ops status", user=ALICE, channel="orders-pipeline")  # answered while the census waits
    await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(ALICE)[before:] or None)
    assert not taking.done()
    gate.set()
    assert await taking
    assert {r.reading.group for r in (await slack.bot.census.census(names["topic"])).readers} == {names["declared"], names["active"], names["idle"]}


def test_jobs_declare_consumer_groups_in_the_catalog_and_in_openlineage() -> None:
    catalog = {"teams": {"t": {"members": [ALICE]}}, "subjects": {"orders-value": {"owner": "t"}},
               "jobs": [{"name": "j", "owner": "t", "inputs": ["orders-value"],
                         "consumer_groups": ["enrich-orders", "connect-orders sink", "bad\ngroup"]}]}  # a connector's group has spaces
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert [p.place for p in problems] == ["jobs[0] (j).consumer_groups"] and "'bad\\ngroup' is not a Kafka consumer group id" in problems[0].message
    event = {"eventTime": "2026-12-01T09:00:00Z", "producer": "https://flink", "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json",
             "eventType": "START", "job": {"namespace": "flink://prod", "name": "scorer", "facets": {"kafka": {"consumerGroup": "scorer-v2"}}},
             "inputs": [{"namespace": "kafka://broker:9092", "name": "orders", "inputFacets": {"kafkaSource": {"consumerGroups": ["scorer-v3"]}}}]}
    assert parse_event(event).job.consumer_groups == ["scorer-v2", "scorer-v3"]


def test_an_idle_group_older_than_the_topic_keeps_data_is_stale_and_active_readers_come_first() -> None:
    now = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    readings = [Reading("old", "orders", "EMPTY", last_commit=now - timedelta(days=8)),
                Reading("quiet", "orders", "EMPTY", last_commit=now - timedelta(days=2)),
                Reading("live", "orders", "STABLE", (Member("c-1", "/10.0.0.1"),)),
                Reading("gone", "orders", "EMPTY"),
                Reading("known", "orders", "EMPTY")]
    judged = judge(readings, {"known": Declared("enrich", "analytics-team", "catalog")}, {"gone"}, timedelta(days=7), now)
    assert [(r.reading.group, r.activity.value) for r in judged] == [("live", "active"), ("quiet", "idle"), ("known", "idle"),
                                                                     ("old", "stale"), ("gone", "retired")]
    census = Census("orders", judged)
    assert [r.reading.group for r in census.undeclared] == ["live", "quiet"]
    assert judge(readings[:1], {}, set(), None, now)[0].activity.value == "idle"  # kept forever: never stale


def test_an_answer_that_is_not_live_states_no_reader_as_live_but_a_retirement() -> None:
    now = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    seen = now - timedelta(minutes=2)
    readings = [Reading("fraud-scorer", "orders", "STABLE", (Member("fraud-7", "/10.0.0.7"),), 5, seen, seen, seen),
                Reading("old-reports", "orders", "EMPTY", (), None, seen, seen, seen)]
    readers = judge(readings, {"fraud-scorer": Declared("fraud", "risk", "catalog")}, {"old-reports"}, None, now, fresh_since=seen)
    assert all(r.live for r in readers)  # as the census that saw them said
    failed = Census("orders", readers, taken_at=seen, failed="the cluster did not answer", age=timedelta(minutes=2)).as_json()
    rows = {r["group"]: r for r in failed["readers"]}
    assert failed["live"] is False
    assert (rows["fraud-scorer"]["live"], rows["fraud-scorer"]["state"]) == (False, "last seen active")
    assert (rows["old-reports"]["live"], rows["old-reports"]["state"]) == (True, "retired")  # people's word holds
    stale = Census("orders", readers, taken_at=seen, stale=True).as_json()
    assert [r["live"] for r in stale["readers"] if r["group"] == "fraud-scorer"] == [False]
    assert all(r["live"] for r in Census("orders", readers, taken_at=seen).as_json()["readers"])


async def test_a_bot_whose_broker_is_down_from_the_start_says_who_reads_is_unknown_never_that_nobody_does(
        slack: SlackHarness, migrated_url: str) -> None:
    """No census has ever answered: the census taken at start fails and is recorded; the command, a proposal's card and the
    CLI say the readers are not known and why, never "Kafka says 0 groups read" (Kafka said nothing)."""
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:9"))  # nothing listens there
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    catalog = {"teams": {"orders-team": {"members": [ALICE], "oncall": [ALICE]}},
               "subjects": {"orders-value": {"owner": "orders-team", "channel": "#orders-pipeline", "topic": "orders"}}}
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    await slack.bot.registry.record("orders-value", parse(V1))
    for _ in range(300):  # the census at start fails within its request timeout
        if (await slack.bot.census.census("orders")).failed:
            break
        await asyncio.sleep(0.2)
    census = await slack.bot.census.census("orders")
    assert census.failed and census.taken_at is None and not census.live and census.readers == []

    before = len(slack.ws.ephemerals_for(ALICE))
    await slack.driver.command("/schema consumers orders-value", user=ALICE, channel="orders-pipeline")
    answer = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(ALICE)[before:] or None)
    text = as_text(answer[0].text, answer[0].blocks)
    assert "Who reads `orders` is not known yet" in text and "no census has answered yet, so its readers are unknown" in text
    assert "Kafka says" not in text and "readers it last saw" not in text

    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    shown = as_text(card.text, card.blocks)
    assert "Who reads `orders` is not known yet" in shown and "the newest census failed" in shown and "Kafka says" not in shown

    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": ""}
    printed = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "consumers", "orders"], env=env, capture_output=True,
                                      text=True, timeout=60)
    assert printed.returncode == 3, printed.stderr
    assert "orders: who reads it is not known yet (no census has answered yet" in printed.stdout
    assert "no census has answered yet, so its readers are unknown" in printed.stdout
    impact = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "impact", "orders-value", "--format", "json"],
                                     env=env, capture_output=True, text=True, timeout=60)
    answer = json.loads(impact.stdout)
    assert answer["consumer_groups"] == [] and answer["census"]["taken_at"] is None and answer["census"]["live"] is False
    assert answer["census"]["failed"] and "readers are unknown" in answer["census"]["notes"][0]
