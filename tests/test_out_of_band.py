"""Out-of-band change detection: a schema registered directly in the registry raises exactly one alert (none on the
next pass); messages produced on the real broker with a schema id nobody approved are detected; an unreachable
registry is reported once, and once more when it answers; the alert's buttons."""

from __future__ import annotations

import struct
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bot.domain.avro.parse import parse
from bot.domain.lineage.catalog import read_catalog
from bot.emulator.render import as_text
from bot.runtime import Bot
from bot.slack import ids
from tests.conftest import SlackHarness, bot_config
from tests.registry import Outage, RealRegistry
from tests.test_proposals_slack import ALICE, BOB, CAROL, V1, retyped


@pytest.fixture
def database_url(postgres_url: str) -> str:
    """PostgreSQL only: the broker is the slow part."""
    return postgres_url


@pytest.fixture
async def watched(slack: SlackHarness, migrated_url: str, kafka_bootstrap: str,
                  schema_registry: RealRegistry) -> AsyncIterator[tuple[SlackHarness, dict[str, Any]]]:
    """The bot with the real registry (behind a proxy that can take it off the network and bring it back) and the real broker."""
    proxy = Outage(schema_registry.url)
    await proxy.restore()
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap, SCHEMA_REGISTRY_URL=proxy.url))
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    catalog = {"teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE]},
                         "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB], "oncall": [BOB]}},
               "subjects": {"orders-value": {"owner": "orders-team", "channel": "#orders-pipeline", "topic": topic}},
               "datasets": [{"name": "dwd_orders", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["amount"]}],
               "jobs": [{"name": "enrich", "owner": "analytics-team", "inputs": ["orders-value"], "outputs": ["dwd_orders"],
                         "mappings": {"dwd_orders.amount": ["orders-value.price"]}}]}
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    await slack.bot.registry.record("orders-value", parse(V1))
    state = {"registry": schema_registry, "proxy": proxy, "topic": topic}
    yield slack, state
    await proxy.cut()


def alerts(slack: SlackHarness) -> list[str]:
    return [as_text(m.text, m.blocks) for m in slack.ws.channel_messages("orders-pipeline") if "Unapproved change" in m.text]


async def test_a_schema_registered_around_the_bot_is_alerted_once_and_can_be_proposed_or_acknowledged(
        watched: tuple[SlackHarness, dict[str, Any]], kafka_bootstrap: str) -> None:
    slack, state = watched
    registry = state["registry"]
    v1_id = await registry.register("orders-value", V1)  # the approved version, registered by hand: accounted for
    assert await slack.bot.watcher.watch() == 0
    await registry.set_compatibility("orders-value", "NONE")  # someone with the registry's keys, around the bot
    sneaky = retyped(V1, "price", "string")
    sneaky_id = await registry.register("orders-value", sneaky)
    assert await slack.bot.watcher.watch() == 1
    assert await slack.bot.watcher.watch() == 0  # the same change, once
    await slack.bot.idle()
    [shown] = alerts(slack)
    assert f"version 2 in the Schema Registry (schema id {sneaky_id})" in shown and "Classified *breaking* against approved version 1" in shown
    assert "Impact: analytics-team" in shown and "TYPE_CHANGED" in shown

    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for schema_id in (v1_id, 999, 999):
        producer.produce(state["topic"], b"\x00" + struct.pack(">I", schema_id) + b"\x02x\x00\x00\x00\x00\x00\x00\x00\x00\x00")
    assert producer.flush(30) == 0
    assert await slack.bot.watcher.watch() == 1  # id 999: nobody approved it (the registry does not even know it)
    assert await slack.bot.watcher.watch() == 0
    await slack.bot.idle()
    assert any("producers write schema id 999 on the topic" in a and "registry does not know this schema id" in a for a in alerts(slack))

    message = next(m for m in slack.ws.channel_messages("orders-pipeline") if f"schema id {sneaky_id})" in m.text)
    before = len(slack.ws.ephemerals_for(CAROL))
    await slack.driver.click(message, ids.OOB_ACK, user=CAROL)
    refused = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(CAROL)[before:] or None)
    assert "Only members of orders-team or oncall" in refused[0].text
    await slack.driver.click(message, ids.OOB_PROPOSE, user=ALICE)
    await slack.ws.wait_for(lambda: any("Retroactive proposal #1 opened" in a for a in alerts(slack)) or None)
    view = await slack.bot.proposals.view(1)
    assert view.proposal.level == "breaking" and "Retroactive: found out of band (registry version 2)" in view.proposal.notes
    await slack.driver.click(message, ids.OOB_ACK, user=BOB)  # oncall of a downstream team may too
    await slack.ws.wait_for(lambda: any("Acknowledged as known by" in a for a in alerts(slack)) or None)


async def test_an_unreachable_registry_is_reported_once_and_again_when_it_answers(watched: tuple[SlackHarness, dict[str, Any]]) -> None:
    slack, state = watched
    assert await slack.bot.watcher.watch() == 0
    await state["proxy"].cut()
    for _ in range(2):
        await slack.bot.watcher.watch()
    await slack.bot.idle()
    notes = [m.text for m in slack.ws.channel_messages("schema-changes") if "Out-of-band change detection" in m.text]
    assert len(notes) == 1 and "is blind: the Schema Registry could not be read" in notes[0]
    await state["proxy"].restore()
    await slack.bot.watcher.watch()
    await slack.bot.watcher.watch()
    await slack.bot.idle()
    notes = [m.text for m in slack.ws.channel_messages("schema-changes") if "Out-of-band change detection" in m.text]
    assert len(notes) == 2 and "reads the Schema Registry again" in notes[1]
