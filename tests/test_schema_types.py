"""Protobuf and JSON Schema subjects through every surface, with the real Schema Registry (Apicurio) and the Slack
emulator: proposals from the API and the form, the card, impact by field path, registration with the registry's
schemaType and references, the deploy gate, out-of-band detection, and the refusals."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from sqlmodel import col, select

from bot.cli import main
from bot.domain.health import describe
from bot.domain.lineage.catalog import read_catalog
from bot.emulator.render import as_text
from bot.runtime import Bot
from bot.slack import ids
from bot.store.models import ObservedSchema
from tests.conftest import API_TOKEN, SlackHarness, bot_config
from tests.registry import RealRegistry
from tests.test_proposals_slack import ALICE, BOB, CAROL, card_message

MONEY = 'syntax = "proto3";\npackage acme.common;\n\nmessage Money {\n  string currency = 1;\n  int64 units = 2;\n}\n'
ORDER = '''syntax = "proto3";
package acme.orders;

import "common/money.proto";
import "google/protobuf/timestamp.proto";

message Order {
  string id = 1;
  acme.common.Money total = 2;
  repeated Item items = 3;
  google.protobuf.Timestamp placed_at = 4;

  message Item {
    string sku = 1;
    int32 quantity = 2;
  }
}
'''
CLICK: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Click", "type": "object", "additionalProperties": False,
    "required": ["page"],
    "properties": {"page": {"type": "object", "additionalProperties": False, "properties": {"url": {"type": "string"}, "ref": {"type": "string"}}},
                   "at": {"type": "string", "format": "date-time"}}}
MONEY_REF = {"name": "common/money.proto", "subject": "money", "version": 1}


@pytest.fixture
def database_url(postgres_url: str) -> str:
    """PostgreSQL only: the registry is the slow part."""
    return postgres_url


@pytest.fixture
async def typed(slack: SlackHarness, migrated_url: str, schema_registry: RealRegistry) -> AsyncIterator[SlackHarness]:
    """The bot on the real registry. platform-team (carol) owns `money`, orders-team (alice) `orders-proto`, web-team
    (alice) `clicks-value`; analytics-team (bob) runs a job that reads item quantities and one that reads page URLs."""
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, SCHEMA_REGISTRY_URL=schema_registry.url), slack.clock)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    for job in ("sweep-proposals", "release-held"):
        slack.bot.scheduler.pause_job(job)
    catalog: dict[str, Any] = {
        "teams": {"platform-team": {"members": [CAROL], "oncall": [CAROL]}, "orders-team": {"members": [ALICE], "oncall": [ALICE]},
                  "analytics-team": {"members": [BOB], "oncall": [BOB]}},
        "subjects": {"money": {"owner": "platform-team", "schema_type": "PROTOBUF", "channel": "#orders-pipeline"},
                     "orders-proto": {"owner": "orders-team", "schema_type": "protobuf", "topic": "orders", "channel": "#orders-pipeline",
                                      "buf": "WIRE_JSON"},
                     "clicks-value": {"owner": "orders-team", "schema_type": "JSON", "channel": "#orders-pipeline"}},
        "datasets": [{"name": "dwd_units", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["quantity"]},
                     {"name": "dwd_pages", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["url"]}],
        "jobs": [{"name": "units", "owner": "analytics-team", "inputs": ["orders-proto"], "outputs": ["dwd_units"],
                  "mappings": {"dwd_units.quantity": ["orders-proto.items.quantity"]}},
                 {"name": "pages", "owner": "analytics-team", "inputs": ["clicks-value"], "outputs": ["dwd_pages"],
                  "mappings": {"dwd_pages.url": ["clicks-value.page.url"]}}]}
    parsed, problems = read_catalog(catalog, lambda _: "")
    assert problems == [], problems
    await slack.bot.lineage.load_catalog(parsed)
    slack.registry = schema_registry  # type: ignore[attr-defined]
    yield slack


async def post(slack: SlackHarness, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {API_TOKEN}"}) as http, \
            http.post(f"{slack.bot.url}{path}", json=body) as response:
        return response.status, await response.json()


async def first_versions(slack: SlackHarness) -> None:
    for body in ({"subject": "money", "schema": MONEY, "schema_type": "PROTOBUF", "proposer": CAROL},
                 {"subject": "orders-proto", "schema": ORDER, "references": [MONEY_REF], "proposer": CAROL},
                 {"subject": "clicks-value", "schema": CLICK, "schema_type": "JSON", "proposer": CAROL}):
        status, created = await post(slack, "/api/v1/proposals", body)
        assert status == 201 and created["state"] == "approved" and created["level"] == "safe", created
        await slack.bot.idle()


async def test_protobuf_with_imports_goes_through_the_form_the_card_and_the_registry(typed: SlackHarness, tmp_path: Path) -> None:
    slack, registry = typed, typed.registry  # type: ignore[attr-defined]
    status, refused = await post(slack, "/api/v1/proposals", {"subject": "orders-proto", "schema": ORDER, "proposer": CAROL})
    assert status == 400 and refused["field"] == "schema" and "common/money.proto" in refused["error"], refused  # protoc's own words
    await first_versions(slack)
    [money] = await registry.versions("money")
    [order] = await registry.versions("orders-proto")
    assert money["schemaType"] == "PROTOBUF" and order["schemaType"] == "PROTOBUF" and order["references"] == [MONEY_REF]
    [clicks] = await registry.versions("clicks-value")
    assert clicks["schemaType"] == "JSON" and json.loads(clicks["schema"]) == CLICK

    # The form takes a .proto upload: quantity int32 -> int64 reads on the wire, but changes JSON; and a breaking one
    await slack.driver.command("/schema propose orders-proto", user=ALICE, channel="orders-pipeline")
    view = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.PROPOSE_VIEW), None))
    assert "proto" in json.dumps(view.view)

    def form(name: str, content: str) -> dict[str, Any]:
        return {ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "static_select", "selected_option": {"value": "orders-proto"}}},
                ids.FILE_BLOCK: {ids.FILE_ACTION: {"type": "file_input", "files": [slack.ws.upload(slack.emulator.base_url, ALICE, name, content)]}}}

    wrong = await slack.driver.submit(view.id, form("order.avsc", json.dumps({"type": "record", "name": "Order", "fields": []})), user=ALICE)
    assert "orders-proto holds Protobuf schemas, not Avro" in wrong.json["errors"][ids.FILE_BLOCK]
    broken = await slack.driver.submit(view.id, form("order.proto", ORDER.replace("int32 quantity = 2;", "int32 quantity = 2")), user=ALICE)
    assert "schema.proto:" in broken.json["errors"][ids.SCHEMA_BLOCK] and "Expected" in broken.json["errors"][ids.SCHEMA_BLOCK]
    assert len(await slack.bot.proposals.listing()) == 3  # nothing stored
    done = await slack.driver.submit(view.id, form("order.proto", ORDER.replace("string sku = 1;", "bytes sku = 1;")
                                                   .replace("int32 quantity = 2;", "double quantity = 2;")), user=ALICE)
    assert done.status == 200 and done.json is None
    card = await card_message(slack, 4)
    text = as_text(card.text, card.blocks)
    assert "Protobuf schema" in text and "References: `common/money.proto` → money version 1" in text
    assert "FIELD_SCALAR_KIND_CHANGED" in text and "Order.items[].quantity" in text and "analytics-team" in text
    proposal = (await slack.bot.proposals.view(4)).proposal
    assert proposal.schema_type == "PROTOBUF" and proposal.level == "breaking" and proposal.teams == ["analytics-team"]
    # Buf's verdict beside the registry's: the catalog holds orders-proto to WIRE_JSON
    assert "Buf (WIRE_JSON): :no_entry: 2 breaking changes" in text.replace("*", ""), text
    assert proposal.buf is not None and [(f["rule"], f["line"], f["column"]) for f in proposal.buf["findings"]] == [
        ("FIELD_WIRE_JSON_COMPATIBLE_TYPE", 14, 5), ("FIELD_WIRE_JSON_COMPATIBLE_TYPE", 15, 5)]
    assert 'Field "2" with name "quantity" on message "Item" changed type from "int32" to "double".' in text
    await slack.driver.click(card, ids.APPROVE, user=BOB)
    await slack.bot.idle()
    versions = await registry.versions("orders-proto")
    assert len(versions) == 2 and versions[1]["schemaType"] == "PROTOBUF" and versions[1]["references"] == [MONEY_REF]
    assert "double quantity" in versions[1]["schema"]

    # The deploy gate: the approved schema however written (comments, spacing), and one never proposed
    respaced = "// the order\n" + versions[1]["schema"].replace("\n\n", "\n")
    status, answer = await post(slack, "/api/v1/subjects/orders-proto/check", {"schema": respaced, "schemaType": "PROTOBUF"})
    assert status == 200 and answer["status"] == "approved" and answer["version"] == 2 and answer["schema_type"] == "PROTOBUF", answer
    status, answer = await post(slack, "/api/v1/subjects/orders-proto/check", {"schema": ORDER.replace("string id = 1;", "int64 id = 1;")})
    assert status == 200 and answer["status"] == "unknown" and answer["level"] == "breaking"
    status, answer = await post(slack, "/api/v1/subjects/orders-proto/check", {"schema": json.dumps(CLICK), "schemaType": "JSON"})
    assert status == 400 and "holds Protobuf schemas, not JSON Schema" in answer["error"]
    (tmp_path / "order.proto").write_text(respaced)
    env = {**os.environ, "CHANGEOPS_API_TOKEN": API_TOKEN, "CHANGEOPS_URL": slack.bot.url}
    shipped = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "gate", "orders-proto", str(tmp_path / "order.proto"),
                                                       "--reference", "common/money.proto=money:1"], env=env, capture_output=True, text=True, timeout=60)
    assert shipped.returncode == 0 and "orders-proto: approved as version 2" in shipped.stdout, shipped
    (tmp_path / "order.avsc").write_text(json.dumps({"type": "record", "name": "Order", "fields": []}))
    wrong = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "gate", "orders-proto", str(tmp_path / "order.avsc")],
                                    env=env, capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "holds Protobuf schemas, not Avro" in wrong.stderr, wrong

    # A version registered around the bot is found and classified as Protobuf, with its import resolved from the registry
    await registry.set_compatibility("orders-proto", "NONE")
    sneaky = versions[1]["schema"].replace("string id = 1;", "int64 id = 1;")
    await registry.register("orders-proto", sneaky, [MONEY_REF], schema_type="PROTOBUF")
    assert await slack.bot.watcher.watch() == 1
    async with slack.bot.db.session() as session:
        [observed] = (await session.exec(select(ObservedSchema).where(col(ObservedSchema.accounted).is_(False)))).all()
    assert observed.level == "breaking" and [c["rule"] for c in observed.detail["changes"]] == ["FIELD_SCALAR_KIND_CHANGED"]


async def test_json_schema_subjects_are_classified_by_the_registry_rules_and_reach_readers_by_property_path(typed: SlackHarness) -> None:
    slack, registry = typed, typed.registry  # type: ignore[attr-defined]
    await first_versions(slack)
    url_int = json.loads(json.dumps(CLICK))
    url_int["properties"]["page"]["properties"]["url"]["type"] = "integer"
    status, created = await post(slack, "/api/v1/proposals", {"subject": "clicks-value", "schema": url_int, "proposer": ALICE})
    assert status == 201 and created["level"] == "breaking" and created["schema_type"] == "JSON", created
    assert [(c["rule"], c["path"]) for c in created["changes"]] == [("TYPE_CHANGED", "Click.page.url")]
    assert created["teams"] == ["analytics-team"]
    ref_only = json.loads(json.dumps(CLICK))
    ref_only["properties"]["page"]["properties"]["ref"]["maxLength"] = 200
    status, narrowed = await post(slack, "/api/v1/proposals", {"subject": "clicks-value", "schema": ref_only, "proposer": ALICE})
    assert status == 201 and narrowed["level"] == "breaking" and narrowed["teams"] == ["analytics-team"], narrowed  # a document that
    # fails the new schema fails whole, for every reader that validates: as with Avro, every consumer of the topic is asked
    described = {**CLICK, "description": "a click on a page"}
    status, safe = await post(slack, "/api/v1/proposals", {"subject": "clicks-value", "schema": described, "proposer": ALICE})
    assert status == 201 and safe["level"] == "safe" and safe["state"] == "approved"
    await slack.bot.idle()
    assert [json.loads(v["schema"]).get("description") for v in await registry.versions("clicks-value")] == [None, "a click on a page"]

    for body, words in [({"schema": {"type": "objekt"}}, "not a valid JSON Schema schema: the schema is not a valid Draft7 JSON Schema"),
                        ({"schema": CLICK, "schema_type": "PROTOBUF"}, "clicks-value holds JSON Schema schemas, not Protobuf"),
                        ({"schema": CLICK, "schema_type": "XML"}, "unknown schema type 'XML'"),
                        ({"schema": described}, "no change")]:
        before = len(await slack.bot.proposals.listing())
        status, refused = await post(slack, "/api/v1/proposals", {"subject": "clicks-value", "proposer": ALICE, **body})
        assert status == 400 and words in refused["error"], refused
        assert len(await slack.bot.proposals.listing()) == before

    # Field paths: semantic drift no job reads is approved at once; a change to page.url asks the team whose job reads it
    dated = json.loads(json.dumps(described))
    dated["properties"]["at"]["format"] = "date"
    status, drift = await post(slack, "/api/v1/proposals", {"subject": "clicks-value", "schema": dated, "proposer": ALICE})
    assert status == 201 and [(c["rule"], c["path"], c["level"]) for c in drift["changes"]] == [("FORMAT_CHANGED", "Click.at", "compatible")]
    assert drift["impact"]["fields"] == ["at"] and drift["impact"]["impacted"] == [] and drift["state"] == "approved", drift
    await slack.bot.idle()  # Apicurio judges `format` where Confluent's registry does not: it refuses, and the proposal says so
    registration = (await slack.bot.proposals.view(drift["id"])).proposal
    assert registration.registry_state == "failed" and "incompatible with an earlier version under FULL" in (registration.registry_error or "")
    uri = json.loads(json.dumps(dated))
    uri["properties"]["page"]["properties"]["url"]["format"] = "uri"
    status, by_path = await post(slack, "/api/v1/proposals", {"subject": "clicks-value", "schema": uri, "proposer": ALICE})
    assert status == 201 and by_path["teams"] == ["analytics-team"] and by_path["state"] == "pending", by_path  # page.url is read

    # The monthly report's coverage, per format: subjects, the share the registry holds, the month's proposals
    figures = await slack.bot.health.compute(slack.clock().date().replace(day=1))
    assert figures["overall"]["schema_types"] == {"JSON": {"subjects": 1, "registered_share": 1.0, "proposals": 6},
                                                  "PROTOBUF": {"subjects": 2, "registered_share": 1.0, "proposals": 2}}, figures["overall"]
    assert "Schema formats: JSON Schema 1 subject (100% registered), 6 proposals; Protobuf 2 subjects (100% registered), 2 proposals" in [
        text for _, text in describe(figures["overall"])]


def test_a_catalog_reads_schema_files_of_each_type_and_impact_takes_paths_and_pointers(
        migrated_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "common").mkdir()
    (tmp_path / "order.proto").write_text(ORDER.replace('import "common/money.proto";\n', "").replace("acme.common.Money total = 2;", "int64 total = 2;"))
    (tmp_path / "clicks.json").write_text(json.dumps(CLICK))
    (tmp_path / "broken.proto").write_text("syntax = \"proto3\";\nmessage X { string a = 1 }\n")
    catalog = {"teams": {"analytics-team": {"members": [BOB]}, "orders-team": {"members": [ALICE]}},
               "subjects": {"orders-proto": {"owner": "orders-team", "schema_type": "PROTOBUF", "schema": "order.proto", "topic": "orders"},
                            "clicks-value": {"owner": "orders-team", "schema_type": "JSON", "schema": "clicks.json"}},
               "datasets": [{"name": "dwd_pages", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["url"]},
                            {"name": "dwd_units", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["quantity"]}],
               "jobs": [{"name": "pages", "owner": "analytics-team", "inputs": ["clicks-value"], "outputs": ["dwd_pages"],
                         "mappings": {"dwd_pages.url": ["clicks-value.page.url"]}},
                        {"name": "units", "owner": "analytics-team", "inputs": ["orders-proto"], "outputs": ["dwd_units"],
                         "mappings": {"dwd_units.quantity": ["orders-proto.items.quantity"]}}]}
    file = tmp_path / "catalog.yaml"
    file.write_text(yaml.safe_dump(catalog))
    parsed, problems = read_catalog(catalog, lambda path: (tmp_path / path).read_text())
    assert problems == []
    assert parsed.datasets[parsed.subjects["orders-proto"].dataset].fields == ["id", "total", "items", "items.sku", "items.quantity", "placed_at",
                                                                                "placed_at.seconds", "placed_at.nanos"]
    assert parsed.datasets[parsed.subjects["clicks-value"].dataset].fields == ["page", "page.url", "page.ref", "at"]
    _, problems = read_catalog({**catalog, "subjects": {"x": {"owner": "orders-team", "schema_type": "PROTOBUF", "schema": "broken.proto"},
                                                        "y": {"owner": "orders-team", "schema_type": "thrift"}}},
                               lambda path: (tmp_path / path).read_text())
    assert [p.place for p in problems if p.place.startswith("subjects")] == ["subjects.x.schema", "subjects.y.schema_type"]
    assert "broken.proto is not a valid PROTOBUF schema: schema.proto:2:" in problems[0].message and "unknown schema type 'thrift'" in problems[1].message
    _, problems = read_catalog({**catalog, "subjects": {"x": {"owner": "orders-team", "schema_type": "PROTOBUF", "buf": ["WIRE", "FIELD_SAME_NAMES"]},
                                                        "y": {"owner": "orders-team", "schema_type": "JSON", "buf": "WIRE"},
                                                        "z": {"owner": "orders-team", "schema_type": "PROTOBUF", "buf": ["WIRE_JSON", "FIELD_SAME_DEFAULT"]}}},
                               lambda path: (tmp_path / path).read_text())
    assert [(p.place, p.message) for p in problems if p.place.startswith("subjects")] == [
        ("subjects.x.buf", "'FIELD_SAME_NAMES' is not a breaking rule or category of buf.yaml v2 (categories: FILE, PACKAGE, WIRE_JSON, WIRE, CSR; "
                           "`bot rules --buf` lists the rules)"),
        ("subjects.y.buf", "Buf's rules judge Protobuf schemas: set schema_type: PROTOBUF, or leave buf out")]

    monkeypatch.setenv("DATABASE_URL", migrated_url)
    assert main(["catalog", "load", str(file)]) == 0
    capsys.readouterr()
    for fields in ("#/properties/page/properties/url", "page.url"):
        assert main(["impact", "clicks-value", "--fields", fields, "--format", "json"]) == 0
        assert {(i["dataset"], i["field"]) for i in answer(capsys.readouterr().out)["impacted"]} == {("dwd_pages", "url")}
    assert main(["impact", "orders-proto", "--fields", "items[].quantity", "--format", "json"]) == 0
    assert {(i["dataset"], i["field"]) for i in answer(capsys.readouterr().out)["impacted"]} == {("dwd_units", "quantity")}
    for fields, refusal in (("items[].qty", "orders has no field 'items.qty' (items has quantity, sku)"),
                            ("placed_at.seconds.x", "orders has no field 'placed_at.seconds.x' (placed_at.seconds holds no fields)")):
        assert main(["impact", "orders-proto", "--fields", fields]) == 1  # a subject's topic lists its schema's every path
        assert refusal in capsys.readouterr().err
    assert main(["impact", "clicks-value", "--fields", "#/properties/page/properties/uri"]) == 1
    assert "has no field 'page.uri' (page has ref, url)" in capsys.readouterr().err


def answer(out: str) -> dict[str, Any]:
    """The JSON document a command printed (after any line of its own)."""
    return dict(json.loads(out[out.index("{"):]))
