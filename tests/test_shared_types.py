"""Schema references against the real Schema Registry: proposals that name them, registration with them, and a change
to a shared type classified for every subject that uses it (transitively, each in its own mode)."""

from __future__ import annotations

import io
import json
import struct
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from fastavro import parse_schema, schemaless_writer
from sqlmodel import col, select

from bot.domain.approvals import Decision
from bot.domain.lineage.catalog import read_catalog
from bot.emulator.render import as_text
from bot.kafka.avro import Decoder
from bot.kafka.avro import Registry as WireRegistry
from bot.runtime import Bot
from bot.slack import ids
from bot.store.models import ObservedSchema
from tests.conftest import API_TOKEN, SlackHarness, bot_config
from tests.registry import Outage, RealRegistry
from tests.test_proposals_slack import ALICE, BOB, CAROL, card_message

ADDRESS = {"type": "record", "name": "Address", "namespace": "com.acme",
           "fields": [{"name": "zip", "type": "string"}, {"name": "note", "type": ["null", "string"], "default": None}]}
ORDER = {"type": "record", "name": "Order", "namespace": "com.acme",
         "fields": [{"name": "id", "type": "long"}, {"name": "shipping", "type": "com.acme.Address"}]}
PAYMENT = {"type": "record", "name": "Payment", "namespace": "com.acme",
           "fields": [{"name": "amount", "type": "double"}, {"name": "billing", "type": "com.acme.Address"}]}
AUDIT = {"type": "record", "name": "AuditEvent", "namespace": "com.acme", "fields": [{"name": "order", "type": "com.acme.Order"}]}


def pin(name: str, subject: str, version: int) -> dict[str, Any]:
    return {"name": name, "subject": subject, "version": version}


@pytest.fixture
def database_url(postgres_url: str) -> str:
    """PostgreSQL only: the registry is the slow part."""
    return postgres_url


@pytest.fixture
async def shared(slack: SlackHarness, migrated_url: str, schema_registry: RealRegistry) -> AsyncIterator[SlackHarness]:
    """The bot on the real registry, with the catalog of ``load``."""
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, SCHEMA_REGISTRY_URL=schema_registry.url), slack.clock)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    for job in ("sweep-proposals", "release-held"):
        slack.bot.scheduler.pause_job(job)
    await load(slack)
    slack.registry = schema_registry  # type: ignore[attr-defined]
    yield slack


async def load(slack: SlackHarness) -> None:
    """platform-team (carol) owns the shared `address`, orders-team (alice) `orders-value` and `audit-value`, analytics-team
    (bob) `payments-value` and the job that reads orders' zip codes."""
    catalog: dict[str, Any] = {
        "teams": {"platform-team": {"members": [CAROL], "oncall": [CAROL]}, "orders-team": {"members": [ALICE], "oncall": [ALICE]},
                  "analytics-team": {"members": [BOB], "oncall": [BOB]}},
        "subjects": {"address": {"owner": "platform-team", "channel": "#orders-pipeline"},
                     "orders-value": {"owner": "orders-team", "channel": "#orders-pipeline"},
                     "audit-value": {"owner": "orders-team", "channel": "#orders-pipeline", "compatibility": "BACKWARD"},
                     "payments-value": {"owner": "analytics-team", "channel": "#orders-pipeline"}},
        "datasets": [{"name": "dwd_zips", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["zip"]}],
        "jobs": [{"name": "zips", "owner": "analytics-team", "inputs": ["orders-value"], "outputs": ["dwd_zips"],
                  "mappings": {"dwd_zips.zip": ["orders-value.shipping.zip"]}}]}
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == [], problems
    await slack.bot.lineage.load_catalog(parsed)


async def api(slack: SlackHarness, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {API_TOKEN}"}) as http, \
            http.post(f"{slack.bot.url}/api/v1/proposals", json=body) as response:
        return response.status, await response.json()


async def first_versions(slack: SlackHarness) -> None:
    """address, then orders-value and payments-value using its Address, then audit-value using orders-value's Order."""
    for subject, schema, references in [("address", ADDRESS, []), ("orders-value", ORDER, [pin("com.acme.Address", "address", 1)]),
                                        ("payments-value", PAYMENT, [pin("com.acme.Address", "address", 1)]),
                                        ("audit-value", AUDIT, [pin("com.acme.Order", "orders-value", 1)])]:
        status, created = await api(slack, {"subject": subject, "schema": schema, "references": references, "proposer": CAROL})
        assert status == 201 and created["state"] == "approved" and created["references"] == references, created
        await slack.bot.idle()  # registered before the next one names it


async def test_references_are_resolved_from_the_registry_and_registered_with_the_schema(shared: SlackHarness) -> None:
    slack, registry = shared, shared.registry  # type: ignore[attr-defined]
    status, refused = await api(slack, {"subject": "orders-value", "schema": ORDER, "proposer": CAROL})
    assert status == 400 and 'unknown type "com.acme.Address"' in refused["error"]
    await first_versions(slack)
    [orders] = await registry.versions("orders-value")
    assert orders["references"] == [pin("com.acme.Address", "address", 1)] and json.loads(orders["schema"]) == ORDER
    [audit] = await registry.versions("audit-value")
    assert audit["references"] == [pin("com.acme.Order", "orders-value", 1)]
    assert await registry.compatibility("audit-value") == "BACKWARD"

    for references, words in [([pin("com.acme.Address", "address", 7)], "subject 'address' has no version 7 in the Schema Registry"),
                              ([pin("com.acme.Address", "nowhere", 1)], "subject 'nowhere' is not in the Schema Registry"),
                              ([{"name": "com.acme.Address", "subject": "address"}], 'needs a "version"')]:
        before = len(await slack.bot.proposals.listing())
        status, refused = await api(slack, {"subject": "orders-value", "schema": {**ORDER, "doc": "v2"}, "references": references,
                                            "proposer": CAROL})
        assert status == 400 and refused["field"] == "references" and words in refused["error"], refused
        assert len(await slack.bot.proposals.listing()) == before  # nothing stored

    # Without references, a new version keeps the current ones (a reference pins a version)
    channel = {**ORDER, "fields": [*ORDER["fields"], {"name": "channel", "type": "string", "default": "web"}]}
    status, kept = await api(slack, {"subject": "orders-value", "schema": channel, "proposer": CAROL})
    assert status == 201 and kept["references"] == [pin("com.acme.Address", "address", 1)] and kept["level"] == "safe"
    await slack.bot.idle()
    assert [v["references"] for v in await registry.versions("orders-value")] == [[pin("com.acme.Address", "address", 1)]] * 2

    # Versions registered around the bot are accounted for, or classified, with their references resolved
    assert await slack.bot.watcher.watch() == 0  # every version so far came through the bot
    await registry.set_compatibility("orders-value", "NONE")
    sneaky = {**ORDER, "fields": [{"name": "id", "type": "string"}, ORDER["fields"][1]]}
    await registry.register("orders-value", sneaky, [pin("com.acme.Address", "address", 1)])
    assert await slack.bot.watcher.watch() == 1
    async with slack.bot.db.session() as session:
        [observed] = (await session.exec(select(ObservedSchema).where(col(ObservedSchema.accounted).is_(False)))).all()
    assert observed.level == "breaking" and {c["path"] for c in observed.detail["changes"]} == {"Order.id", "Order.channel"}

    # Framed values written with a referencing schema decode through the registry (Address resolved by reference)
    schema_id = orders["id"]
    whole = parse_schema({**ORDER, "fields": [ORDER["fields"][0], {"name": "shipping", "type": ADDRESS}]})
    body = io.BytesIO()
    schemaless_writer(body, whole, {"id": 7, "shipping": {"zip": "10115", "note": None}})
    wire = WireRegistry(registry.url)
    try:
        assert Decoder(None, wire).decode(b"\x00" + struct.pack(">I", schema_id) + body.getvalue()) == {
            "id": 7, "shipping": {"zip": "10115", "note": None}}
    finally:
        wire.close()


async def test_a_change_to_a_shared_type_is_classified_for_every_subject_that_uses_it(shared: SlackHarness) -> None:
    slack, registry = shared, shared.registry  # type: ignore[attr-defined]
    await first_versions(slack)
    compatible = {**ADDRESS, "fields": ADDRESS["fields"][:1]}  # the note (it had a default) removed
    view = await slack.bot.proposals.propose("address", json.dumps(compatible), CAROL, surface="api")
    used = {d["subject"]: d for d in view.proposal.impact["dependents"]}
    assert set(used) == {"orders-value", "payments-value", "audit-value"}  # audit-value through orders-value's Order
    assert all(d["level"] == "compatible" and d["pinned"] == 1 for d in used.values() if d["subject"] != "audit-value")
    assert used["audit-value"]["pinned"] == 1 and used["audit-value"]["mode"] == "BACKWARD"
    assert [f["path"] for f in used["orders-value"]["findings"]] == ["Order.shipping<Address>.note"]
    assert [f["path"] for f in used["audit-value"]["findings"]] == ["AuditEvent.order<Order>.shipping<Address>.note"]
    assert view.proposal.level == "compatible" and sorted(view.proposal.teams) == ["analytics-team", "orders-team"]
    card = await card_message(slack, view.id)
    text = as_text(card.text, card.blocks)
    assert "Used by 3 subjects" in text and "`audit-value`" in text and "pins address version 1" in text
    assert "stay on the version of address they pin" in text

    await slack.bot.proposals.decide(view.id, ALICE, Decision.APPROVE)
    await slack.bot.proposals.decide(view.id, BOB, Decision.APPROVE)
    await slack.bot.idle()
    assert (await slack.bot.proposals.view(view.id)).proposal.registry_version == 2
    assert [len(await registry.versions(s)) for s in ("address", "orders-value", "payments-value")] == [2, 1, 1]  # the users stay pinned

    # The deploy gate: the same text with another version of the referenced type is another schema
    for references, status in [([pin("com.acme.Address", "address", 1)], "approved"), ([pin("com.acme.Address", "address", 2)], "unknown"),
                               (None, "approved")]:  # none given: the subject's current references
        body = {"schema": json.dumps(ORDER), **({"references": references} if references is not None else {})}
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {API_TOKEN}"}) as http, \
                http.post(f"{slack.bot.url}/api/v1/subjects/orders-value/check", json=body) as response:
            assert (await response.json())["status"] == status, references

    # A breaking change: every subject that uses the type breaks, and the job reading orders' zip codes is reached
    breaking = {**compatible, "fields": [{"name": "zip", "type": "int"}]}
    view = await slack.bot.proposals.propose("address", json.dumps(breaking), CAROL, surface="api")
    used = {d["subject"]: d for d in view.proposal.impact["dependents"]}
    assert {s: d["level"] for s, d in used.items()} == {"orders-value": "breaking", "payments-value": "breaking", "audit-value": "breaking"}
    assert used["orders-value"]["owners"] == ["analytics-team"] and view.proposal.level == "breaking"

    # orders-value moves to address version 2 through its own proposal: the note's removal, in its own mode
    status, moved = await api(slack, {"subject": "orders-value", "schema": ORDER, "references": [pin("com.acme.Address", "address", 2)],
                                      "proposer": ALICE})
    assert status == 201 and [c["path"] for c in moved["changes"]] == ["Order.shipping<Address>.note"] and moved["level"] == "compatible"


async def test_without_a_registry_references_resolve_from_the_bots_own_versions(slack: SlackHarness) -> None:
    await load(slack)
    await first_versions(slack)
    status, refused = await api(slack, {"subject": "orders-value", "schema": ORDER, "references": [pin("com.acme.Address", "address", 3)],
                                        "proposer": CAROL})
    assert status == 400 and "subject 'address' has no version 3 (it has 1 to 1)" in refused["error"]
    status, dropped = await api(slack, {"subject": "payments-value", "schema": {**PAYMENT, "fields": PAYMENT["fields"][:1]}, "proposer": CAROL})
    assert status == 201 and dropped["references"] == [], dropped  # kept references it no longer uses are not carried over
    inline = {**PAYMENT, "doc": "billing inline", "fields": [PAYMENT["fields"][0], {"name": "billing", "type": ADDRESS}]}
    status, inlined = await api(slack, {"subject": "payments-value", "schema": inline, "proposer": CAROL})
    assert status == 201 and inlined["references"] == [], inlined  # nor those whose types it now defines itself
    view = await slack.bot.proposals.propose("address", json.dumps({**ADDRESS, "fields": [{"name": "zip", "type": "int"}]}), CAROL)
    assert {d["subject"]: d["level"] for d in view.proposal.impact["dependents"]} == {"orders-value": "breaking", "audit-value": "breaking"}


async def test_the_slack_form_takes_references_one_per_line(slack: SlackHarness) -> None:
    await load(slack)
    await first_versions(slack)
    await slack.driver.command("/schema propose payments-value", user=BOB, channel="orders-pipeline")
    view = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.PROPOSE_VIEW), None))
    changed = {**PAYMENT, "fields": [*PAYMENT["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}

    def form(references: str) -> dict[str, Any]:
        return {ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "static_select", "selected_option": {"value": "payments-value"}}},
                ids.SCHEMA_BLOCK: {ids.SCHEMA_ACTION: {"type": "plain_text_input", "value": json.dumps(changed)}},
                ids.REFERENCES_BLOCK: {ids.REFERENCES_ACTION: {"type": "plain_text_input", "value": references}}}

    malformed = await slack.driver.submit(view.id, form("com.acme.Address"), user=BOB)
    assert "write NAME=SUBJECT:VERSION" in malformed.json["errors"][ids.REFERENCES_BLOCK]
    unknown = await slack.driver.submit(view.id, form("com.acme.Address=address:9\n"), user=BOB)
    assert "subject 'address' has no version 9" in unknown.json["errors"][ids.REFERENCES_BLOCK]
    assert len(await slack.bot.proposals.listing()) == 4  # nothing stored
    done = await slack.driver.submit(view.id, form("  com.acme.Address = address:1  \n\n"), user=BOB)
    assert done.status == 200 and done.json is None
    card = await card_message(slack, 5)
    assert "References: `com.acme.Address` → address version 1" in as_text(card.text, card.blocks)


async def test_while_the_registry_is_away_a_reference_is_refused_as_retryable_and_nothing_is_stored(
        slack: SlackHarness, migrated_url: str, schema_registry: RealRegistry) -> None:
    proxy = Outage(schema_registry.url)
    await proxy.restore()
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, SCHEMA_REGISTRY_URL=proxy.url), slack.clock)
    await slack.bot.start(0)
    try:
        await load(slack)
        await first_versions(slack)
        await slack.bot.stop()  # a new replica: nothing of the registry in its memory (a registered version, once read, is kept: it never changes)
        slack.bot = Bot(bot_config(slack.emulator, migrated_url, SCHEMA_REGISTRY_URL=proxy.url), slack.clock)
        await slack.bot.start(0)
        before = len(await slack.bot.proposals.listing())
        await proxy.cut()
        body = {"subject": "payments-value", "schema": {**PAYMENT, "doc": "v2"}, "proposer": CAROL}
        status, refused = await api(slack, body)  # its kept reference cannot be read: said, not guessed
        assert status == 400 and refused["field"] == "references" and "could not be reached" in refused["error"]
        assert "try again shortly" in refused["error"] and len(await slack.bot.proposals.listing()) == before
        await proxy.restore()
        status, created = await api(slack, body)
        assert status == 201 and created["references"] == [pin("com.acme.Address", "address", 1)]
        assert len(await slack.bot.proposals.listing()) == before + 1  # once
    finally:
        await proxy.cut()
