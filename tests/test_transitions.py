"""Transitions end to end, through the Slack emulator, the real Schema Registry (Apicurio), the real Kafka broker (the
reader census) and Flink's own planner (the release gate): a rename shipped as expand / migrate / contract, each reader
moved by its own evidence, the contract proposed only when none is left; the deadline with a laggard; a rollback; the
refusals; the monthly report."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bot.domain.approvals import UNOWNED
from bot.domain.lineage.catalog import read_catalog
from bot.emulator.render import as_text
from bot.runtime import Bot
from bot.slack import ids
from tests.conftest import API_TOKEN, SlackHarness, bot_config
from tests.registry import RealRegistry
from tests.test_field_paths import avro_ladder
from tests.test_proposals_slack import ALICE, BOB, CAROL, card_message

V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "order_id", "type": "string"}, {"name": "userid", "type": "string"}, {"name": "amount", "type": "double"}]}
TARGET = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "order_id", "type": "string"}, {"name": "userId", "type": "string", "aliases": ["userid"]}, {"name": "amount", "type": "double"}]}
KAFKA_NS = "kafka://kafka:9092"


@pytest.fixture
def database_url(postgres_url: str) -> str:
    """PostgreSQL only: the registry, the broker and the planner are the slow parts."""
    return postgres_url


@pytest.fixture
async def renaming(slack: SlackHarness, migrated_url: str, schema_registry: RealRegistry, kafka_bootstrap: str) -> AsyncIterator[SlackHarness]:
    """The bot on the real registry and broker. orders-team (alice) owns orders-value (BACKWARD); analytics-team (bob) runs
    the Flink job enrich-orders (a black box until a release shows its fields); billing-team (carol) runs ledger, known
    from OpenLineage; a consumer group nobody declared reads the topic too."""
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(timeout=30)
    adhoc = f"adhoc-{topic}"
    for _ in range(20):
        done = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(adhoc, [TopicPartition(topic, 0, 0)])])[adhoc].result(timeout=30)
        if all(tp.error is None for tp in done.topic_partitions):
            break
        await asyncio.sleep(0.5)
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, SCHEMA_REGISTRY_URL=schema_registry.url, KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap),
                    slack.clock)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    for job in ("sweep-proposals", "release-held", "sweep-transitions"):  # the tests own the clock and run the sweeps themselves
        slack.bot.scheduler.pause_job(job)
    catalog: dict[str, Any] = {
        "teams": {"orders-team": {"members": [ALICE], "oncall": [ALICE]}, "analytics-team": {"members": [BOB], "oncall": [BOB]},
                  "billing-team": {"members": [CAROL], "oncall": [CAROL]}},
        "subjects": {"orders-value": {"owner": "orders-team", "topic": topic, "compatibility": "BACKWARD", "channel": "#orders-pipeline"}},
        "datasets": [{"name": "dwd_orders", "namespace": KAFKA_NS, "owner": "analytics-team", "fields": ["order_id", "user_id"]},
                     {"name": "ledger", "namespace": "postgres://billing:5432", "owner": "billing-team", "fields": ["user"]}],
        "jobs": [{"name": "enrich-orders", "owner": "analytics-team", "inputs": ["orders-value"], "outputs": ["dwd_orders"]}]}
    parsed, problems = read_catalog(catalog, lambda _: "")
    assert problems == [], problems
    await slack.bot.lineage.load_catalog(parsed)
    slack.topic, slack.adhoc, slack.registry, slack.bootstrap = topic, adhoc, schema_registry, kafka_bootstrap  # type: ignore[attr-defined]
    slack.migrated_url = migrated_url  # type: ignore[attr-defined]
    yield slack


async def restart(slack: SlackHarness, **env: str) -> None:
    """The bot again on the same database and registry, with ``env`` changed (a broker that does not answer, say)."""
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, slack.migrated_url, SCHEMA_REGISTRY_URL=slack.registry.url, **env), slack.clock)  # type: ignore[attr-defined]
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    for job in ("sweep-proposals", "release-held", "sweep-transitions"):
        slack.bot.scheduler.pause_job(job)


async def call(slack: SlackHarness, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {API_TOKEN}"}) as http, \
            http.request(method, f"{slack.bot.url}{path}", json=body) as response:
        return response.status, await response.json()


def ledger_event(topic: str, field: str, when: str) -> dict[str, Any]:
    """billing-team's ledger job as OpenLineage sees one run: it reads ``field`` of the topic into ledger.user."""
    return {"eventType": "COMPLETE", "eventTime": when, "producer": "https://github.com/apache/spark",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent", "run": {"runId": str(uuid.uuid4())},
            "job": {"namespace": "spark://billing", "name": "ledger",
                    "facets": {"ownership": {"_producer": "x", "_schemaURL": "x", "owners": [{"name": "team:billing-team"}]}}},
            "inputs": [{"namespace": KAFKA_NS, "name": topic}],
            "outputs": [{"namespace": "postgres://billing:5432", "name": "ledger", "facets": {"columnLineage": {
                "_producer": "x", "_schemaURL": "x", "fields": {"user": {"inputFields": [{"namespace": KAFKA_NS, "name": topic, "field": field}]}}}}}]}


def job_sql(topic: str, column: str) -> str:
    """enrich-orders: the user's id and the order into dwd_orders, reading ``column`` of the topic."""
    kafka = ("'connector' = 'kafka', 'properties.bootstrap.servers' = 'kafka:9092', 'properties.group.id' = 'enrich', "
             "'scan.startup.mode' = 'earliest-offset', 'format' = 'avro-confluent', 'avro-confluent.url' = 'http://registry:8081'")
    return (f"CREATE TABLE orders (order_id STRING NOT NULL, {column} STRING NOT NULL, amount DOUBLE NOT NULL) WITH ({kafka}, 'topic' = '{topic}');\n"
            f"CREATE TABLE dwd_orders (order_id STRING, user_id STRING) WITH ({kafka}, 'topic' = 'dwd_orders');\n"
            f"INSERT INTO dwd_orders SELECT order_id, {column} AS user_id FROM orders;\n")


def readers(answer: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    return {r.get("job") or r["group"]: (r["moved"], r["evidence"]) for r in answer["readers"]}


async def command(slack: SlackHarness, user: str, text: str) -> str:
    """A slash command as ``user`` types it; the answer only they see."""
    before = len(slack.ws.ephemerals_for(user))
    await slack.driver.command(text, user=user, channel="orders-pipeline")
    shown = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(user)[before:])
    return as_text(shown[-1].text, shown[-1].blocks)


async def transition_card(slack: SlackHarness, number: int) -> str:
    message = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("schema-changes") if f"Transition #{number} " in m.text), None))
    return as_text(message.text, message.blocks)


async def test_a_rename_ships_as_a_transition_and_contracts_when_the_last_reader_moved(renaming: SlackHarness) -> None:
    slack, registry = renaming, renaming.registry  # type: ignore[attr-defined]
    topic, adhoc = renaming.topic, renaming.adhoc  # type: ignore[attr-defined]
    status, first = await call(slack, "POST", "/api/v1/proposals", {"subject": "orders-value", "schema": V1, "proposer": ALICE})
    assert status == 201 and first["state"] == "approved", first
    status, _ = await call(slack, "POST", "/api/v1/lineage", ledger_event(topic, "userid", "2026-12-01T08:00:00Z"))
    assert status == 200
    assert await slack.bot.census.refresh()
    await slack.bot.idle()

    # Refused, nothing stored: an unknown subject, the current schema again, a target that maps nothing, a wrong mapping
    for body, code, words in [({"subject": "nope-value", "schema": TARGET}, 404, "unknown subject 'nope-value'"),
                              ({"subject": "orders-value", "schema": V1}, 400, "identical to the current version"),
                              ({"subject": "orders-value", "schema": {**V1, "doc": "orders"}}, 400, "nothing to map"),
                              ({"subject": "orders-value", "schema": TARGET, "mapping": [{"old": "user", "new": "userId"}]}, 400,
                               "user is not a field of the current version"),
                              ({"subject": "orders-value", "schema": TARGET, "deadline": "next week"}, 400, "deadline: ISO 8601"),
                              ({"subject": "orders-value", "schema": TARGET, "deadline": "2026-12-20T12:00:00"}, 400, "time zone offset"),
                              ({"subject": "orders-value", "schema": TARGET, "mapping": "userid=userId"}, 400, "mapping: a non-empty list"),
                              ({"subject": "orders-value", "schema": TARGET, "mapping": [{"old": "userid"}]}, 400, "mapping[0]: expected"),
                              ({"subject": "orders-value", "schema": "{\"type\": \"record\""}, 400, "the target is not a valid schema"),
                              ({"subject": "orders-value", "schema": TARGET, "proposer": "alice"}, 400, "proposer: required, the Slack user id")]:
        status, refused = await call(slack, "POST", "/api/v1/transitions", {"proposer": ALICE, **body})
        assert status == code and words in refused["error"], refused
    assert await slack.bot.transitions.listing(open_only=False) == []

    # Proposed: the expand version (both fields, the new one with the old as an alias), transitively compatible
    deadline = (slack.clock() + timedelta(days=10)).isoformat()
    status, started = await call(slack, "POST", "/api/v1/transitions", {"subject": "orders-value", "schema": TARGET, "proposer": ALICE,
                                                                        "deadline": deadline})
    assert status == 201 and started["phase"] == "expand" and started["mapping"] == [{"old": "userid", "new": "userId"}], started
    assert readers(started) == {"enrich-orders": (False, "the catalog reads the whole topic (no field lineage)"),
                                "ledger": (False, started["readers"][1]["evidence"]), adhoc: (False, started["readers"][2]["evidence"])}
    assert "still reads userid" in readers(started)["ledger"][1] and "nobody answers for it yet" in readers(started)[adhoc][1]
    status, second = await call(slack, "POST", "/api/v1/transitions", {"subject": "orders-value", "schema": TARGET, "proposer": ALICE})
    assert status == 409 and "transition #1 is already open on orders-value" in second["error"]
    expand = await slack.bot.proposals.view(started["expand_proposal"])
    # approved at once: nobody reads the new field, and the old one is untouched (every reader keeps working)
    assert expand.proposal.level == "compatible" and expand.proposal.state == "approved" and expand.proposal.teams == []
    assert [f["rule"] for f in expand.proposal.findings] == ["FIELD_ADDED_WITH_ALIAS"]
    fields = json.loads(expand.proposal.schema_text)["fields"]
    assert [(f["name"], f.get("aliases")) for f in fields] == [("order_id", None), ("userid", None), ("userId", ["userid"]), ("amount", None)]
    card = await card_message(slack, expand.id)
    assert "Expand step of transition #1" in as_text(card.text, card.blocks)
    await slack.bot.idle()
    text = await transition_card(slack, 1)
    assert "Mapping: `userid` → `userId`" in text and "0 of 3 moved" in text

    # Once the expand version is registered, readers migrate (its card, which someone deleted in Slack meanwhile, is posted again)
    deleted = next(m for m in slack.ws.channel_messages("schema-changes") if "Transition #1 " in m.text)
    await slack.delete(deleted.channel, deleted.ts)
    assert await slack.bot.transitions.sweep() == 1
    again = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("schema-changes") if "Transition #1 " in m.text), None))
    assert again.ts != deleted.ts and [m.ts for m in slack.ws.channel_messages("schema-changes") if "Transition #1 " in m.text] == [again.ts]
    versions = await registry.versions("orders-value")
    assert len(versions) == 2 and '"aliases":["userid"]' in versions[1]["schema"].replace(" ", "")
    await slack.bot.idle()
    assert await slack.ws.wait_for(lambda: any("both sides are readable now" in m.text for m in slack.ws.channel_messages(slack.ws.open_dm(BOB))))

    # A producer still writing with version 1 writes only userid: alerted once, as one side of the transition; the expand's id is fine
    producer = Producer({"bootstrap.servers": renaming.bootstrap})  # type: ignore[attr-defined]
    for version in versions:
        producer.produce(topic, b"\x00" + int(version["id"]).to_bytes(4, "big") + b"\x02")
    assert producer.flush(30) == 0
    assert await slack.bot.watcher.watch() == 1 and await slack.bot.watcher.watch() == 0
    await slack.bot.idle()
    alerted = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("orders-pipeline") if "One side only" in m.text), None))
    shown = as_text(alerted.text, alerted.blocks)
    assert f"producers write schema id {versions[0]['id']} on the topic" in shown and "which has userid but not userId" in shown, shown
    assert "retroactive" not in shown

    # The Flink gate accepts either side while both are written, and says which to read
    status, old_side = await gate(slack, job_sql(topic, "userid"))
    assert status == 200 and old_side["verdict"] == "pass", old_side
    [warning] = [f for c in old_side["checks"] for f in c["findings"] if f["level"] == "warning" and "transition #1" in f["message"]]
    assert "read userId before the contract" in warning["message"]
    assert readers((await call(slack, "GET", "/api/v1/transitions/1"))[1])["enrich-orders"][0] is False  # it still reads userid

    # ledger moves by its newest OpenLineage run; enrich-orders by a passed release that reads userId; the group waits for its team
    await call(slack, "POST", "/api/v1/lineage", ledger_event(topic, "userId", "2026-12-02T08:00:00Z"))
    status, new_side = await gate(slack, job_sql(topic, "userId"))
    assert status == 200 and new_side["verdict"] == "pass" and any("the new side of transition #1" in f["message"]
                                                                      for c in new_side["checks"] for f in c["findings"]), new_side
    assert await slack.bot.census.refresh()
    await slack.bot.transitions.sweep()  # the moves are told; the undeclared group still reads: no contract
    status, now = await call(slack, "GET", "/api/v1/transitions/1")
    assert now["phase"] == "migrate" and now["contract_proposal"] is None
    seen = readers(now)
    assert seen["ledger"][0] and "OpenLineage event of 2026-12-02 08:00 UTC reads userId" in seen["ledger"][1], seen
    status, _ = await call(slack, "POST", "/api/v1/lineage", ledger_event(topic, "userid", "2026-12-01T09:00:00Z"))  # a late run, older
    assert status == 200 and readers((await call(slack, "GET", "/api/v1/transitions/1"))[1])["ledger"][0]  # than the newest: ledger stays moved
    assert seen["enrich-orders"][0] and f"its last passed Flink release #{new_side['release']} reads userId" in seen["enrich-orders"][1], seen
    assert seen[adhoc] == (False, seen[adhoc][1])
    await slack.bot.idle()
    card = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("schema-changes") if "Transition #1 " in m.text), None))
    notes = await slack.ws.wait_for(lambda: [m.text for m in slack.ws.channel_messages("schema-changes", thread_ts=card.ts)
                                              if "job ledger moved" in m.text] or None)
    assert "its OpenLineage event of 2026-12-02 08:00 UTC reads userId" in notes[0] and "job enrich-orders moved" in notes[0], notes
    assert "2 of 3 moved" in await transition_card(slack, 1)

    # Nobody but the group's team can say it moved: first nobody answers for it, then billing-team does
    said = await command(slack, CAROL, f"/schema transition 1 moved {adhoc}")
    assert "nobody answers for" in said and "nothing changed" in said, said
    await slack.bot.census.attribute(adhoc, "billing-team", ALICE, "slack")
    said = await command(slack, BOB, f"/schema transition 1 moved {adhoc}")
    assert "only a member of a reader's team can say it moved" in said, said
    # The last reader moves while the newest census does not answer (the broker away): nobody can say no new reader came, so no contract
    await restart(slack, KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:9")
    assert not await slack.bot.census.refresh()
    said = await command(slack, CAROL, f"/schema transition 1 moved {adhoc}")
    assert f"Recorded: group {adhoc} moved, on transition #1" in said, said
    await slack.bot.transitions.sweep()
    status, waiting = await call(slack, "GET", "/api/v1/transitions/1")
    assert waiting["phase"] == "migrate" and waiting["contract_proposal"] is None, waiting
    assert any("the newest census failed" in note for note in waiting["notes"]), waiting["notes"]
    await slack.bot.idle()
    assert "the newest census failed" in await transition_card(slack, 1)
    await restart(slack, KAFKA_BOOTSTRAP_SERVERS=renaming.bootstrap)  # type: ignore[attr-defined]
    assert await slack.bot.census.refresh()
    await slack.bot.idle()


    # No reader left: the contract (userid gone) is proposed, approved at once as nobody reads what it removes, and registered
    await slack.bot.transitions.sweep()
    await slack.bot.idle()
    await slack.bot.transitions.sweep()
    status, done = await call(slack, "GET", "/api/v1/transitions/1")
    assert done["phase"] == "done" and all(moved for moved, _ in readers(done).values()), done
    contract = await slack.bot.proposals.view(done["contract_proposal"])
    assert contract.proposal.state == "approved" and contract.proposal.teams == [] and "every reader of userid moved" in contract.proposal.impact["note"]
    versions = await registry.versions("orders-value")
    assert len(versions) == 3 and [f["name"] for f in json.loads(versions[2]["schema"])["fields"]] == ["order_id", "userId", "amount"]
    await slack.bot.idle()
    text = await transition_card(slack, 1)
    assert "DONE" in text and "3 of 3 moved" in text and "We moved" not in text
    env = {**os.environ, "CHANGEOPS_API_TOKEN": API_TOKEN, "CHANGEOPS_URL": slack.bot.url}
    printed = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "transition", "status", "1", "--format", "json"], env=env,
                                      capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    answer = json.loads(printed.stdout)
    assert {k: answer[k] for k in ("id", "subject", "phase", "expand_proposal", "contract_proposal")} == {
        "id": 1, "subject": "orders-value", "phase": "done", "expand_proposal": 2, "contract_proposal": contract.id}
    figures = await slack.bot.health.compute(slack.clock().date().replace(day=1))
    assert (figures["overall"]["transitions_open"], figures["overall"]["transitions_closed"], figures["overall"]["transitions_overdue"]) == (0, 1, 0)


async def gate(slack: SlackHarness, sql: str) -> tuple[int, Any]:
    return await call(slack, "POST", "/api/v1/jobs/enrich-orders/check", {"sql": sql, "state": {}, "author": BOB})



CLICK: dict[str, Any] = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": False, "required": ["page"],
                         "properties": {"page": {"type": "string"}, "at": {"type": "string"}}}
ORDER_PROTO = 'syntax = "proto3";\npackage shop;\n\nmessage Order {\n  string id = 1;\n  string userid = 2;\n}\n'


@pytest.fixture
async def owned(slack: SlackHarness, migrated_url: str, schema_registry: RealRegistry) -> AsyncIterator[SlackHarness]:
    """The bot on the real registry, no Kafka. orders-team (alice) owns three subjects; analytics-team's (bob) catalog job
    `report` reads orders-value's userid and clicks-value's page; billing-team's (carol) `fraud` reads only amounts."""
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, SCHEMA_REGISTRY_URL=schema_registry.url), slack.clock)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    for job in ("sweep-proposals", "release-held", "sweep-transitions"):
        slack.bot.scheduler.pause_job(job)
    catalog: dict[str, Any] = {
        "teams": {"orders-team": {"members": [ALICE], "oncall": [ALICE]}, "analytics-team": {"members": [BOB], "oncall": [BOB]},
                  "billing-team": {"members": [CAROL], "oncall": [CAROL]}},
        "subjects": {"orders-value": {"owner": "orders-team", "compatibility": "BACKWARD"},
                     "clicks-value": {"owner": "orders-team", "compatibility": "BACKWARD", "schema_type": "JSON"},
                     "orders-proto": {"owner": "orders-team", "compatibility": "BACKWARD", "schema_type": "PROTOBUF"}},
        "datasets": [{"name": "dwd", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["user", "page"]},
                     {"name": "risk", "namespace": "iceberg://lake", "owner": "billing-team", "fields": ["amount"]}],
        "jobs": [{"name": "report", "owner": "analytics-team", "inputs": ["orders-value", "clicks-value"], "outputs": ["dwd"],
                  "mappings": {"dwd.user": ["orders-value.userid"], "dwd.page": ["clicks-value.page"]}},
                 {"name": "fraud", "owner": "billing-team", "inputs": ["orders-value"], "outputs": ["risk"], "mappings": {"risk.amount": ["orders-value.amount"]}}]}
    parsed, problems = read_catalog(catalog, lambda _: "")
    assert problems == [], problems
    await slack.bot.lineage.load_catalog(parsed)
    for subject, schema in (("orders-value", V1), ("clicks-value", CLICK), ("orders-proto", ORDER_PROTO)):
        status, created = await call(slack, "POST", "/api/v1/proposals", {"subject": subject, "schema": schema, "proposer": ALICE})
        assert status == 201 and created["state"] == "approved", created
    await slack.bot.idle()
    slack.registry = schema_registry  # type: ignore[attr-defined]
    yield slack


async def approve(slack: SlackHarness, proposal: int, user: str) -> None:
    card = await card_message(slack, proposal)
    await slack.driver.click(card, ids.APPROVE, user=user)
    await slack.bot.idle()


def dm_with(slack: SlackHarness, user: str, words: str) -> Any:
    return next((m for m in reversed(slack.ws.channel_messages(slack.ws.open_dm(user))) if words in m.text), None)


async def test_a_breaking_card_ships_as_a_transition_whose_deadline_the_owners_extend_then_contract_knowingly(owned: SlackHarness) -> None:
    slack = owned
    renamed = {**V1, "fields": [V1["fields"][0], {"name": "userId", "type": "string"}, V1["fields"][2]]}  # a rename without an alias: breaking
    status, breaking = await call(slack, "POST", "/api/v1/proposals", {"subject": "orders-value", "schema": renamed, "proposer": ALICE})
    assert status == 201 and breaking["level"] == "breaking", breaking
    card = await card_message(slack, breaking["id"])
    offer = next(e for b in card.blocks if b.get("type") == "actions" for e in b["elements"] if e["action_id"] == ids.TRANSITION_OFFER)
    assert offer["text"]["text"] == "Ship it as a transition…"
    before = len(slack.ws.ephemerals_for(BOB))
    await slack.driver.click(card, ids.TRANSITION_OFFER, user=BOB)
    assert "Only the proposer" in (await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(BOB)[before:]))[-1].text
    await slack.driver.click(card, ids.TRANSITION_OFFER, user=ALICE)
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.TRANSITION_VIEW), None))

    def values(mapping: str, day: str) -> dict[str, Any]:
        return {ids.REFERENCES_BLOCK: {ids.REFERENCES_ACTION: {"type": "plain_text_input", "value": mapping}},
                ids.DEADLINE_BLOCK: {ids.DEADLINE_ACTION: {"type": "datepicker", "selected_date": day}}}

    wrong = await slack.driver.submit(form.id, values("userid:userId", "2026-12-05"), user=ALICE)
    assert "OLD=NEW pairs" in wrong.json["errors"][ids.REFERENCES_BLOCK]
    past = await slack.driver.submit(form.id, values("userid=userId", "2026-11-05"), user=ALICE)
    assert "the deadline must be in the future" in past.json["errors"][ids.DEADLINE_BLOCK]
    assert await slack.bot.transitions.listing(open_only=False) == []
    slack.ws.rate_limit("chat.postMessage", times=2)  # Slack says 429 twice: the card is posted once, when it answers
    done = await slack.driver.submit(form.id, values("userid=userId", "2026-12-05"), user=ALICE)
    assert done.status == 200 and done.json is None
    await slack.bot.idle()
    assert len([m for m in slack.ws.channel_messages("schema-changes") if "Transition #1 " in m.text]) == 1
    view = await slack.bot.transitions.view(1)
    assert view.row.deadline.isoformat().startswith("2026-12-05T23:59") and (await slack.bot.proposals.view(breaking["id"])).proposal.state == "withdrawn"
    assert [(r.ref.name, r.moved) for r in view.readers] == [("report", False)]  # fraud reads only amounts
    assert "no reader census (Kafka is not configured)" in " ".join(view.notes())
    expand = await slack.bot.proposals.view(view.row.expand_proposal_id or 0)
    assert expand.proposal.state == "approved" and '"aliases": [\n        "userid"' in expand.proposal.schema_text
    await slack.bot.idle()
    assert await slack.bot.transitions.sweep() == 1 and (await slack.bot.transitions.view(1)).phase.value == "migrate"
    entries = await slack.bot.calendar.listing(slack.clock(), slack.clock() + timedelta(days=30))
    [deadline] = [e for e in entries if e["kind"] == "transition"]
    assert deadline["end"].startswith("2026-12-05T23:59") and deadline["scope"]["subjects"] == ["orders-value"]

    # Halfway: a reminder to the team whose reader waits; past the deadline: the owners are asked, once, and it counts as overdue
    slack.clock.advance(days=3)
    assert await slack.bot.transitions.sweep() == 1 and await slack.bot.transitions.sweep() == 0
    await slack.bot.idle()
    assert dm_with(slack, BOB, "still waits for your readers: job report")
    slack.clock.advance(days=2)
    assert await slack.bot.transitions.sweep() == 1 and await slack.bot.transitions.sweep() == 0
    await slack.bot.idle()
    figures = await slack.bot.health.compute(slack.clock().date().replace(day=1))
    assert (figures["overall"]["transitions_open"], figures["overall"]["transitions_overdue"]) == (1, 1)
    asked = dm_with(slack, ALICE, "reached its deadline with readers left: job report")
    assert asked is not None
    buttons = [e["action_id"] for b in asked.blocks if b.get("type") == "actions" for e in b["elements"]]
    assert buttons == [ids.TRANSITION_EXTEND, ids.TRANSITION_CONTRACT, ids.TRANSITION_ROLLBACK]
    # A day more: the halfway reminder went already and its moment in the longer span is past, so it is not sent again at
    # once; the one at nine tenths is still ahead, and goes
    assert "Transition #1 now ends 2026-12-06 23:59 UTC." in await command(slack, ALICE, "/schema transition 1 extend 1")
    assert await slack.bot.transitions.sweep() == 0
    slack.clock.advance(hours=2)
    assert await slack.bot.transitions.sweep() == 1 and await slack.bot.transitions.sweep() == 0
    before = len(slack.ws.ephemerals_for(BOB))
    await slack.driver.click(asked, ids.TRANSITION_EXTEND, user=BOB)
    assert "only a member of orders-team" in (await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(BOB)[before:]))[-1].text
    before = len(slack.ws.ephemerals_for(ALICE))
    slack.ws.failing["chat.update"] = 500  # Slack fails the card's edit: the extension stands, and the card shows it once Slack answers
    await slack.driver.click(asked, ids.TRANSITION_EXTEND, user=ALICE)
    assert "now ends 2026-12-13 23:59 UTC" in (await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(ALICE)[before:]))[-1].text
    await slack.ws.wait_for(lambda: any(c.method == "chat.update" and c.status == 500 for c in slack.ws.calls))
    del slack.ws.failing["chat.update"]
    await slack.bot.idle()
    assert "Deadline: 2026-12-13 23:59 UTC" in await transition_card(slack, 1)
    assert (await slack.bot.transitions.view(1)).row.deadline.isoformat().startswith("2026-12-13T23:59")  # the extension, once
    entries = await slack.bot.calendar.listing(slack.clock(), slack.clock() + timedelta(days=30))
    assert [e["end"][:16] for e in entries if e["kind"] == "transition"] == ["2026-12-13T23:59"]

    # Past the new deadline the owners contract knowingly: the team left acknowledges the break like any break
    slack.clock.advance(days=8)
    await slack.bot.transitions.sweep()
    said = await command(slack, ALICE, "/schema transition 1 contract")
    assert "The contract of transition #1 is proposal #" in said, said
    view = await slack.bot.transitions.view(1)
    contract = await slack.bot.proposals.view(view.row.contract_proposal_id or 0)
    assert view.phase.value == "contract" and contract.proposal.state == "pending" and contract.proposal.teams == ["analytics-team"]
    assert "before every reader moved: job report" in contract.proposal.impact["note"]
    await approve(slack, contract.id, BOB)
    assert await slack.bot.transitions.sweep() == 1
    view = await slack.bot.transitions.view(1)
    assert view.phase.value == "done" and view.row.open_subject is None
    versions = await slack.registry.versions("orders-value")  # type: ignore[attr-defined]
    assert [f["name"] for f in json.loads(versions[-1]["schema"])["fields"]] == ["order_id", "userId", "amount"]
    assert "DONE" in await command(slack, BOB, "/schema transition 1")
    assert "is done: there is nothing to roll back; nothing changed" in await command(slack, ALICE, "/schema transition 1 rollback")


async def test_the_form_starts_a_json_schema_transition_a_rollback_proposes_the_return_and_protobuf_keeps_numbers(owned: SlackHarness,
                                                                                                                  tmp_path: Path) -> None:
    slack = owned
    await slack.driver.command("/schema propose clicks-value --transition", user=ALICE, channel="orders-pipeline")
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.TRANSITION_VIEW), None))
    target = {**CLICK, "required": ["url"], "properties": {"url": {"type": "string"}, "at": {"type": "string"}}}
    values = {ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "static_select", "selected_option": {"value": "clicks-value"}}},
              ids.SCHEMA_BLOCK: {ids.SCHEMA_ACTION: {"type": "plain_text_input", "value": json.dumps(target)}},
              ids.REFERENCES_BLOCK: {ids.REFERENCES_ACTION: {"type": "plain_text_input", "value": ""}}}
    unmapped = await slack.driver.submit(form.id, values, user=ALICE)
    assert "nothing to map" in unmapped.json["errors"][ids.SCHEMA_BLOCK]
    values[ids.REFERENCES_BLOCK][ids.REFERENCES_ACTION]["value"] = "page=url"
    assert (await slack.driver.submit(form.id, values, user=ALICE)).json is None
    await slack.bot.idle()
    view = await slack.bot.transitions.view(1)
    expand = json.loads((await slack.bot.proposals.view(view.row.expand_proposal_id or 0)).proposal.schema_text)
    assert list(expand["properties"]) == ["page", "url", "at"] and expand["required"] == ["page"]  # the new one optional until the contract
    # a closed object: readers that validate with the old schema refuse documents that carry url, so the readers' team acknowledges
    pending = await slack.bot.proposals.view(view.row.expand_proposal_id or 0)
    assert pending.proposal.state == "pending" and pending.proposal.teams == ["analytics-team"]
    await approve(slack, pending.id, BOB)
    assert await slack.bot.transitions.sweep() == 1
    assert "only a member of orders-team" in await command(slack, BOB, "/schema transition 1 rollback")
    assert "`2` is more than `rollback` takes; nothing changed" in await command(slack, ALICE, "/schema transition 1 rollback 2")
    assert (await slack.bot.transitions.view(1)).phase.value != "rolled_back"
    said = await command(slack, ALICE, "/schema transition 1 rollback")
    view = await slack.bot.transitions.view(1)
    assert view.phase.value == "rolled_back" and view.row.return_proposal_id is not None and "the return to the original is proposal" in said
    back = await slack.bot.proposals.view(view.row.return_proposal_id)
    assert json.loads(back.proposal.schema_text) == CLICK and "Rollback of transition #1" in back.proposal.notes
    assert "is rolled back: there is nothing to roll back; nothing changed" in await command(slack, ALICE, "/schema transition 1 rollback")
    assert "not a transition number" in await command(slack, ALICE, "/schema transition one")

    # Protobuf: the new field at a number of its own, the old declaration back beside it, and the contract reserves it
    target_proto = ORDER_PROTO.replace("string userid = 2;", "string user_id = 3;")
    status, refused = await call(slack, "POST", "/api/v1/transitions", {"subject": "orders-proto", "proposer": ALICE, "mapping": [{"old": "userid", "new": "user_id"}],
                                                                        "schema": ORDER_PROTO.replace("string userid = 2;", "string user_id = 2;")})
    assert status == 400 and "user_id takes number 2, userid's" in refused["error"], refused
    (tmp_path / "order.proto").write_text(target_proto)
    env = {**os.environ, "CHANGEOPS_API_TOKEN": API_TOKEN, "CHANGEOPS_URL": slack.bot.url}
    cli = [sys.executable, "-m", "bot", "propose", "orders-proto", str(tmp_path / "order.proto"), "--proposer", ALICE, "--transition"]
    wrong = await asyncio.to_thread(subprocess.run, [*cli, "--mapping", "userid"], env=env, capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "OLD=NEW" in wrong.stderr, wrong
    printed = await asyncio.to_thread(subprocess.run, [*cli, "--mapping", "userid=user_id", "--deadline", "2026-12-20T12:00:00Z", "--format", "json"],
                                      env=env, capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    started = json.loads(printed.stdout)
    assert started["phase"] in ("expand", "migrate") and started["deadline"] == "2026-12-20T12:00:00+00:00", started
    row = (await slack.bot.transitions.view(started["id"])).row
    assert "string userid = 2;\n  string user_id = 3;" in row.expand_text and "reserved 2;" in row.contract_text and 'reserved "userid";' in row.contract_text
    # Nobody is known to read orders-proto: that is no evidence that nobody does, so its contract is not waved through
    await slack.bot.idle()
    await slack.bot.transitions.sweep()
    await slack.bot.transitions.sweep()
    view = await slack.bot.transitions.view(started["id"])
    contract = await slack.bot.proposals.view(view.row.contract_proposal_id or 0)
    assert view.phase.value == "contract" and contract.proposal.state == "pending", (view.phase, contract.proposal.state)
    assert "no lineage is known" in contract.proposal.impact["note"] and contract.proposal.teams == [UNOWNED], contract.proposal.impact


async def registry_away(slack: SlackHarness, migrated_url: str, first: dict[str, Any] = V1, reads: str = "userid") -> None:
    """The bot with no registry answering, the sweeps paused; orders-value (orders-team, BACKWARD) at ``first`` (V1), whose
    field ``reads`` the job report (analytics-team) reads."""
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, SCHEMA_REGISTRY_URL="http://127.0.0.1:9"), slack.clock)  # nothing listens there
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    for job in ("sweep-proposals", "release-held", "sweep-transitions"):
        slack.bot.scheduler.pause_job(job)
    catalog: dict[str, Any] = {"teams": {"orders-team": {"members": [ALICE]}, "analytics-team": {"members": [BOB]}},
                               "subjects": {"orders-value": {"owner": "orders-team", "compatibility": "BACKWARD"}},
                               "datasets": [{"name": "dwd", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["user"]}],
                               "jobs": [{"name": "report", "owner": "analytics-team", "inputs": ["orders-value"], "outputs": ["dwd"],
                                         "mappings": {"dwd.user": [f"orders-value.{reads}"]}}]}
    parsed, problems = read_catalog(catalog, lambda _: "")
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    status, proposed = await call(slack, "POST", "/api/v1/proposals", {"subject": "orders-value", "schema": first, "proposer": ALICE})
    assert status == 201 and proposed["state"] == "approved", proposed


async def test_races_and_a_registry_away_never_double_or_skip_a_step(slack: SlackHarness, migrated_url: str) -> None:
    await registry_away(slack, migrated_url)

    # Two starts at once: one transition, the other told why
    answers = await asyncio.gather(*(call(slack, "POST", "/api/v1/transitions", {"subject": "orders-value", "schema": TARGET, "proposer": ALICE})
                                     for _ in range(2)))
    assert sorted(status for status, _ in answers) == [201, 409], answers
    assert len(await slack.bot.transitions.listing(open_only=False)) == 1

    # The expand version is approved, but the registry does not answer: no reader is told to move to a field producers cannot write yet
    for _ in range(200):  # polled: the registration retries for minutes, so nothing here waits for the outbox to drain
        now = (await call(slack, "GET", "/api/v1/transitions/1"))[1]
        if now["steps"]["expand"]["registry_state"] == "retrying":
            break
        await asyncio.sleep(0.1)
    assert await slack.bot.transitions.sweep() == 1  # the card shows the registration retrying; the phase does not move
    now = (await call(slack, "GET", "/api/v1/transitions/1"))[1]
    assert now["phase"] == "expand" and now["steps"]["expand"]["state"] == "approved", now
    card = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("schema-changes") if "Transition #1 " in m.text
                                                 and "registry: retrying" in as_text(m.text, m.blocks)), None))
    assert "Expand" in as_text(card.text, card.blocks)

    # Registered at last (as if the registry answered): migrate; the reader's team says it moved (once); many sweeps at once
    # propose one contract
    async with slack.bot.db.session() as session:
        from sqlalchemy import update as sql_update

        from bot.store.models import Proposal
        await session.exec(sql_update(Proposal).where(Proposal.id == now["expand_proposal"]).values(registry_state="registered"))  # type: ignore[arg-type]
        await session.commit()
    assert await slack.bot.transitions.advance(1)
    said = await command(slack, BOB, "/schema transition 1 moved report")
    assert "Recorded: job report moved" in said, said
    assert "none of the readers that wait belong to your teams" in await command(slack, BOB, "/schema transition 1 moved")
    results = await asyncio.gather(*(slack.bot.transitions.advance(1) for _ in range(4)), slack.bot.transitions.sweep())
    view = await slack.bot.transitions.view(1)
    assert view.phase.value == "contract" and view.row.contract_proposal_id is not None, results
    contracts = [p for p in await slack.bot.proposals.listing(subject="orders-value") if "Contract step" in p.proposal.notes]
    assert len(contracts) == 1


async def test_a_start_that_loses_the_race_is_told_a_transition_is_open_not_what_the_winner_changed(slack: SlackHarness, migrated_url: str,
                                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The loser passed the first "none open" check, then planned while the winner's expand version became current:
    it hears that a transition is open (409), not "no change" about the winner's version."""
    await registry_away(slack, migrated_url)
    transitions = slack.bot.transitions
    prepare, inside, winner_done = transitions._prepare, asyncio.Event(), asyncio.Event()

    async def late(*args: Any) -> Any:
        inside.set()
        await winner_done.wait()
        return await prepare(*args)

    monkeypatch.setattr(transitions, "_prepare", late)
    loser = asyncio.create_task(call(slack, "POST", "/api/v1/transitions", {"subject": "orders-value", "schema": TARGET, "proposer": ALICE}))
    await asyncio.wait_for(inside.wait(), 30)
    monkeypatch.setattr(transitions, "_prepare", prepare)
    status, won = await call(slack, "POST", "/api/v1/transitions", {"subject": "orders-value", "schema": TARGET, "proposer": ALICE})
    assert status == 201 and won["phase"] == "expand", won
    winner_done.set()
    status, lost = await loser
    assert status == 409 and f"transition #{won['id']} is already open" in lost["error"], lost
    assert [t.id for t in await transitions.listing(open_only=False)] == [won["id"]]


async def test_a_field_deeper_than_lineage_lists_is_mapped_and_its_reader_asked(slack: SlackHarness, migrated_url: str) -> None:
    """A record used twice at each of 30 levels has a billion paths, lineage lists the shallowest 20,000; a rename at the
    bottom, named by one of the deep paths, is still a field of both versions, and the job reading it is asked to move."""
    ladder = avro_ladder(30)
    deep = ".".join(["a"] * 15 + ["b"] * 15)
    await registry_away(slack, migrated_url, first=ladder, reads=f"{deep}.v")
    target = json.loads(json.dumps(ladder).replace('[{"name": "v", "type": "int"}]', '[{"name": "w", "type": "int", "aliases": ["v"]}]'))
    status, wrong = await call(slack, "POST", "/api/v1/transitions", {"subject": "orders-value", "schema": target, "proposer": ALICE,
                                                                       "mapping": [{"old": f"{deep}.c", "new": f"{deep}.w"}]})
    assert status == 400 and wrong["error"] == f"mapping: {deep}.c is not a field of the current version", wrong
    assert await slack.bot.transitions.listing(open_only=False) == []  # refused: nothing stored
    status, started = await call(slack, "POST", "/api/v1/transitions", {"subject": "orders-value", "schema": target, "proposer": ALICE,
                                                                         "mapping": [{"old": f"{deep}.v", "new": f"{deep}.w"}]})
    assert status == 201 and started["mapping"] == [{"old": f"{deep}.v", "new": f"{deep}.w"}], started
    status, again = await call(slack, "POST", "/api/v1/transitions", {"subject": "orders-value", "schema": target, "proposer": ALICE,
                                                                       "mapping": [{"old": f"{deep}.v", "new": f"{deep}.w"}]})
    assert status == 409 and f"transition #{started['id']} is already open" in again["error"], again  # a repeat doubles nothing
    assert len(await slack.bot.transitions.listing(open_only=False)) == 1
    view = await slack.bot.transitions.view(started["id"])
    assert [(r.ref.name, r.ref.team, r.moved) for r in view.readers] == [("report", "analytics-team", False)], view.readers


async def test_a_rename_given_at_one_place_of_a_shared_type_asks_the_readers_of_every_place(slack: SlackHarness, migrated_url: str) -> None:
    """Address is used by ship and bill: the rename given at ship.zip renames bill.zip too, so the job that reads
    bill.zip is asked to move, and the card says both places."""
    address = {"type": "record", "name": "Address", "fields": [{"name": "zip", "type": "string"}]}
    shared = {**V1, "fields": [*V1["fields"], {"name": "ship", "type": address}, {"name": "bill", "type": "shop.Address"}]}
    await registry_away(slack, migrated_url, first=shared, reads="bill.zip")
    target = json.loads(json.dumps(shared).replace('"name": "zip"', '"name": "postcode"'))
    status, started = await call(slack, "POST", "/api/v1/transitions", {"subject": "orders-value", "schema": target, "proposer": ALICE,
                                                                         "mapping": [{"old": "ship.zip", "new": "ship.postcode"}]})
    assert status == 201, started
    assert started["mapping"] == [{"old": "ship.zip", "new": "ship.postcode"}, {"old": "bill.zip", "new": "bill.postcode"}], started
    view = await slack.bot.transitions.view(started["id"])
    assert [(r.ref.name, r.moved, r.evidence) for r in view.readers] == [("report", False, "the catalog still reads bill.zip")], view.readers
    card = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("schema-changes") if f"Transition #{started['id']} " in m.text), None))
    assert "`ship.zip` → `ship.postcode`, `bill.zip` → `bill.postcode`" in as_text(card.text, card.blocks)


async def test_a_transition_card_slack_will_not_post_is_told_to_its_proposer(slack: SlackHarness, migrated_url: str) -> None:
    """The changes channel is private and the bot was never invited: the transition's card and its expand step's card
    cannot be posted, and the proposer is told so once for each, with Slack's reason."""
    from bot.emulator.workspace import BOT_USER_ID

    await registry_away(slack, migrated_url)
    changes = slack.ws.channels[str(slack.ws.channel_id("schema-changes"))]
    changes.is_private = True
    changes.members.discard(BOT_USER_ID)
    status, started = await call(slack, "POST", "/api/v1/transitions", {"subject": "orders-value", "schema": TARGET, "proposer": ALICE})
    assert status == 201, started
    wanted = (f"your transition #{started['id']} on orders-value", f"your schema change #{started['expand_proposal']} on orders-value")

    def told() -> list[str] | None:
        found = [m.text for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)) if "could not be posted in #schema-changes" in m.text]
        return found if all(any(w in t for t in found) for w in wanted) else None

    dms = await slack.ws.wait_for(told)
    assert all("channel_not_found" in t for t in dms) and all(sum(w in t for t in dms) == 1 for w in wanted)
