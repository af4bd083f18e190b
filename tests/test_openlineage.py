"""OpenLineage events in (HTTP and file), lineage out: identity, facets, replacement, refusal."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.cli import main
from bot.domain.lineage.model import DatasetId, JobId
from bot.domain.lineage.openlineage import OpenLineageError, parse_event
from bot.emulator import Workspace
from bot.runtime import Bot
from tests.conftest import bot_config, start_emulator

TOKEN = "lineage-token-0123456789"
KAFKA = "kafka://broker:9092"


def event(when: str = "2026-12-01T10:00:00Z", mappings: dict[str, list[str]] | None = None, **extra: Any) -> dict[str, Any]:
    """A Flink job reading topic orders and writing an Iceberg table, with column lineage."""
    mappings = {"amount": ["price", "quantity"], "order_id": ["id"]} if mappings is None else mappings
    output: dict[str, Any] = {
        "namespace": "iceberg://lake", "name": "dwd_orders",
        "facets": {"schema": {"_producer": "x", "_schemaURL": "x", "fields": [{"name": "order_id", "type": "string"}, {"name": "amount", "type": "double"}]},
                   "ownership": {"_producer": "x", "_schemaURL": "x", "owners": [{"name": "team:analytics-team", "type": "MAINTAINER"}]}}}
    if mappings:
        output["facets"]["columnLineage"] = {"_producer": "x", "_schemaURL": "x", "fields": {
            out: {"inputFields": [{"namespace": KAFKA, "name": "orders", "field": f} for f in sources]} for out, sources in mappings.items()}}
    return {
        "eventType": "COMPLETE", "eventTime": when, "producer": "https://github.com/apache/flink",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "0192c2a0-0000-7000-8000-000000000001"},
        "job": {"namespace": "flink://prod", "name": "enrich-orders",
                "facets": {"ownership": {"_producer": "x", "_schemaURL": "x", "owners": [{"name": "team:orders-team"}]}}},
        "inputs": [{"namespace": KAFKA, "name": "orders", "facets": {"schema": {"_producer": "x", "_schemaURL": "x", "fields": [
            {"name": "id", "type": "string"}, {"name": "price", "type": "double"}, {"name": "quantity", "type": "int"},
            {"name": "payload", "type": "struct", "fields": [{"name": "detail", "type": "struct", "fields": [{"name": "color", "type": "string"}]}]}]}}}],
        "outputs": [output], **extra,
    }


def test_parse_reads_identities_facets_and_owners() -> None:
    parsed = parse_event(event())
    assert parsed.job.id.name == "enrich-orders" and parsed.job.owners == ["orders-team"]
    orders = next(d for d in parsed.datasets if d.id.name == "orders")
    assert orders.kind == "topic" and "payload.detail.color" in orders.fields
    assert {(s.path, t.path) for s, t in parsed.job.mappings} == {("price", "amount"), ("quantity", "amount"), ("id", "order_id")}
    assert not parsed.job.black_box
    assert parse_event(event(mappings={})).job.black_box


def test_the_engine_an_event_names_makes_a_flink_job() -> None:
    """The jobType job facet's integration and the processing_engine run facet say what runs the job (the spec's job-type and
    processing-engine facets): Flink's with its version when it is one, another engine's not at all."""
    def engine(name: str, version: Any) -> dict[str, Any]:
        raw = event()
        raw["run"]["facets"] = {"processing_engine": {"_producer": "x", "_schemaURL": "x", "name": name, "version": version}}
        return raw

    def job_type(integration: str) -> dict[str, Any]:
        raw = event()
        raw["job"]["facets"]["jobType"] = {"_producer": "x", "_schemaURL": "x", "processingType": "STREAMING", "integration": integration,
                                           "jobType": "JOB"}
        return raw

    assert parse_event(event()).job.flink is None  # nothing says: not a Flink job, whatever its namespace
    assert parse_event(engine("flink", "1.20.1")).job.flink == "1.20.1"
    assert parse_event(engine("Flink", "2.1-SNAPSHOT")).job.flink == ""  # Flink, in a version the planner cannot be picked by
    assert parse_event(engine("spark", "3.5.1")).job.flink is None
    assert parse_event(job_type("FLINK")).job.flink == "" and parse_event(job_type("SPARK")).job.flink is None


def filtered(when: str = "2026-12-01T10:00:00Z") -> dict[str, Any]:
    """The job of ``event`` keeping only paid orders: ``status`` is read for the whole output (the spec's ``dataset``)."""
    raw = event(when)
    raw["inputs"][0]["facets"]["schema"]["fields"].append({"name": "status", "type": "string"})
    raw["outputs"][0]["facets"]["columnLineage"]["dataset"] = [
        {"namespace": KAFKA, "name": "orders", "field": "status", "transformations": [{"type": "INDIRECT", "subtype": "FILTER"}]}]
    return raw


def dataset_event() -> dict[str, Any]:
    """A DatasetEvent: one dataset's own metadata, no job and no run."""
    return {"eventTime": "2026-12-01T09:00:00Z", "producer": "https://github.com/OpenLineage/OpenLineage",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
            "dataset": {"namespace": KAFKA, "name": "refunds", "facets": {
                "schema": {"_producer": "x", "_schemaURL": "x", "fields": [{"name": "order_id", "type": "string"}, {"name": "cents", "type": "long"}]},
                "ownership": {"_producer": "x", "_schemaURL": "x", "owners": [{"name": "team:payments-team"}]}}}}


def test_a_field_read_for_the_whole_output_and_a_dataset_event_are_read_as_the_spec_says() -> None:
    parsed = parse_event(filtered())
    assert parsed.job is not None
    assert {(s.path, t.path) for s, t in parsed.job.mappings if s.path == "status"} == {("status", "order_id"), ("status", "amount")}
    alone = parse_event(dataset_event())
    assert alone.job is None and not alone.carries_lineage
    assert [(d.id.name, d.fields, d.owners) for d in alone.datasets] == [("refunds", ["order_id", "cents"], ["payments-team"])]
    assert parse_event({**dataset_event(), "job": {"namespace": "x", "name": "y"}}).job is not None  # with a job: a JobEvent
    for broken, words in [({**dataset_event(), "dataset": "refunds"}, "dataset: expected an object"),
                          ({k: v for k, v in dataset_event().items() if k != "dataset"}, "a DatasetEvent has a dataset")]:
        with pytest.raises(OpenLineageError, match=words):
            parse_event(broken)
    wrong = filtered()
    wrong["outputs"][0]["facets"]["columnLineage"]["dataset"] = {"field": "status"}
    with pytest.raises(OpenLineageError, match=r"columnLineage\.dataset: expected an array"):
        parse_event(wrong)


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda e: e.pop("eventTime"), "eventTime: required string is missing"),
    (lambda e: e.update(eventTime="yesterday"), "not an ISO 8601 date-time"),
    (lambda e: e.update(eventType="FINISHED"), "eventType: 'FINISHED'"),
    (lambda e: e["job"].pop("name"), "job.name: required string is missing"),
    (lambda e: e.update(inputs={"name": "orders"}), "inputs: expected an array"),
    (lambda e: e["inputs"][0].pop("namespace"), "inputs[0].namespace: required string is missing"),
    (lambda e: e["run"].pop("runId"), "run.runId"),
    (lambda e: e["run"].update(facets=[]), "run.facets: expected an object"),
    (lambda e: e["outputs"][0]["facets"]["columnLineage"].update(fields=[]), "columnLineage.fields: expected an object"),
    (lambda e: e["outputs"][0]["facets"]["columnLineage"]["fields"]["amount"]["inputFields"][0].pop("field"), "inputFields[0].field"),
    (lambda e: e["inputs"][0]["facets"]["schema"].update(fields=[{"type": "int"}]), "a field needs a name"),
    (lambda e: e["job"]["facets"]["ownership"].update(owners="me"), "ownership.owners"),
    (lambda e: e["inputs"][0]["facets"]["schema"].update(_deleted="yes"), "inputs[0].facets.schema._deleted: expected true or false"),
    (lambda e: e["outputs"][0].update(name="lake/" + "d" * 2000), "outputs[0].name: longer than 2,000 bytes ('lake/ddd"),
    (lambda e: e["job"].update(namespace="é" * 251), "job.namespace: longer than 500 bytes"),
])
def test_malformed_events_are_refused_with_the_reason(mutate: Any, message: str) -> None:
    broken = event()
    mutate(broken)
    with pytest.raises(OpenLineageError, match=message.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        parse_event(broken)


@pytest.fixture
async def api(migrated_url: str) -> AsyncIterator[tuple[Bot, aiohttp.ClientSession]]:
    emulator, runner = await start_emulator(Workspace("xoxb-lineage-test"))
    bot = Bot(bot_config(emulator, migrated_url, CHANGEOPS_API_TOKEN=TOKEN))
    await bot.start(0)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        yield bot, http
    await bot.stop()
    await runner.cleanup()


async def post(http: aiohttp.ClientSession, bot: Bot, body: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    async with http.post(f"{bot.url}/api/v1/lineage", data=json.dumps(body) if not isinstance(body, str) else body, **kwargs) as response:
        return response.status, await response.json()


async def test_events_over_http_build_the_graph(api: tuple[Bot, aiohttp.ClientSession]) -> None:
    bot, http = api
    status, answer = await post(http, bot, event())
    assert (status, answer["changed"]) == (200, 1)
    graph = await bot.lineage.graph()
    impact = graph.impact(DatasetId(KAFKA, "orders"), ["price"])
    assert [i.as_json()["path"] for i in impact.impacted] == ["orders.price -> enrich-orders -> dwd_orders.amount"]
    assert impact.owners == ("orders-team", "analytics-team")


async def test_a_filter_field_reaches_the_job_and_a_dataset_event_fills_its_dataset(api: tuple[Bot, aiohttp.ClientSession]) -> None:
    bot, http = api
    status, answer = await post(http, bot, [filtered(), dataset_event()])
    assert (status, answer["events"], answer["changed"]) == (200, 2, 2)
    graph = await bot.lineage.graph()
    impact = graph.impact(DatasetId(KAFKA, "orders"), ["status"])  # read only to filter: every output field depends on it
    assert {i.as_json()["path"] for i in impact.impacted} == {"orders.status -> enrich-orders -> dwd_orders.amount",
                                                             "orders.status -> enrich-orders -> dwd_orders.order_id"}
    refunds = graph.datasets[DatasetId(KAFKA, "refunds")]
    assert (refunds.fields, refunds.owners) == (["order_id", "cents"], ["payments-team"]) and len(graph.jobs) == 1
    assert (await post(http, bot, dataset_event()))[1]["changed"] == 0  # the same metadata again changes nothing


async def test_a_deleted_facet_is_read_as_the_spec_says(api: tuple[Bot, aiohttp.ClientSession]) -> None:
    """A facet sent with ``_deleted: true`` (the spec's way to delete one) is no malformed facet: a deleted schema or ownership
    takes back what events said, a deleted columnLineage makes the job a black box for that output; a late deletion is ignored."""
    bot, http = api
    await post(http, bot, event())
    gone = {"_producer": "x", "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/SchemaDatasetFacet.json", "_deleted": True}
    later = event("2026-12-01T11:00:00Z")
    later["job"]["facets"]["ownership"] = dict(gone)
    later["inputs"][0]["facets"]["schema"] = dict(gone)
    later["outputs"][0]["facets"].update(ownership=dict(gone), columnLineage=dict(gone))
    late = copy.deepcopy(later)
    late["eventTime"] = "2026-12-01T09:00:00Z"
    status, answer = await post(http, bot, later)
    assert (status, answer["changed"]) == (200, 1)
    graph = await bot.lineage.graph()
    job = graph.jobs[JobId("flink://prod", "enrich-orders")]
    assert (job.owners, job.black_box) == ([], True)
    assert graph.datasets[DatasetId(KAFKA, "orders")].fields == [] and graph.datasets[DatasetId("iceberg://lake", "dwd_orders")].owners == []
    assert graph.datasets[DatasetId("iceberg://lake", "dwd_orders")].fields == ["order_id", "amount"]  # its schema still sent
    assert (await post(http, bot, later))[1]["changed"] == 0
    assert (await post(http, bot, event("2026-12-01T12:00:00Z")))[1]["changed"] == 1  # said again
    await post(http, bot, {**late, "eventTime": "2026-12-01T10:30:00Z"})  # older than what the 12:00 event said: its deletions are late
    graph = await bot.lineage.graph()
    assert graph.jobs[JobId("flink://prod", "enrich-orders")].owners == ["orders-team"] and not graph.jobs[JobId("flink://prod", "enrich-orders")].black_box
    assert "price" in graph.datasets[DatasetId(KAFKA, "orders")].fields and graph.datasets[DatasetId("iceberg://lake", "dwd_orders")].owners == ["analytics-team"]


async def test_a_dataset_named_by_a_long_storage_path_is_stored(api: tuple[Bot, aiohttp.ClientSession]) -> None:
    """OpenLineage sets no length on a name: a Spark output named by its S3 path runs past 255 characters."""
    bot, http = api
    long = event()
    path = "warehouse/" + "/".join(f"part-{i:04d}-of-a-partitioned-table" for i in range(40))  # 1,370 characters
    long["outputs"][0].update(namespace="s3://bucket", name=path)
    long["job"]["name"] = "spark_app." + "execute_insert_into_hadoop_fs_relation_command." * 8
    status, answer = await post(http, bot, long)
    assert (status, answer["changed"]) == (200, 1), answer
    graph = await bot.lineage.graph()
    assert [i.dataset.name for i in graph.impact(DatasetId(KAFKA, "orders"), ["price"]).impacted] == [path]


async def test_resending_changes_nothing_and_a_later_event_replaces_edges(api: tuple[Bot, aiohttp.ClientSession]) -> None:
    bot, http = api
    await post(http, bot, event())
    before = await bot.lineage.graph()
    assert (await post(http, bot, event()))[1]["changed"] == 0
    assert await bot.lineage.graph() is before
    await post(http, bot, event("2026-12-01T11:00:00Z", mappings={"amount": ["quantity"]}))
    graph = await bot.lineage.graph()
    assert graph.impact(DatasetId(KAFKA, "orders"), ["price"]).impacted == ()
    assert (await post(http, bot, event("2026-12-01T09:00:00Z")))[1]["changed"] == 0
    heartbeat = event("2026-12-01T12:00:00Z", eventType="RUNNING")
    heartbeat["inputs"], heartbeat["outputs"] = [], []
    await post(http, bot, heartbeat)
    assert len((await bot.lineage.graph()).impact(DatasetId(KAFKA, "orders"), ["quantity"]).impacted) == 1


async def test_an_event_that_says_flink_makes_the_job_a_flink_job_for_good(api: tuple[Bot, aiohttp.ClientSession]) -> None:
    """What runs a job is a fact about it, not an edge: an event that says Flink marks the job whatever lineage it carries
    (the same as before, or none), a later one names the version, and none that says nothing unmarks it."""
    bot, http = api
    await post(http, bot, event())
    assert (await bot.lineage.graph()).jobs[JobId("flink://prod", "enrich-orders")].flink is None
    same = event("2026-12-01T11:00:00Z")
    same["job"]["facets"]["jobType"] = {"_producer": "x", "_schemaURL": "x", "processingType": "STREAMING", "integration": "FLINK", "jobType": "JOB"}
    assert (await post(http, bot, same))[1]["changed"] == 1
    assert (await bot.lineage.graph()).jobs[JobId("flink://prod", "enrich-orders")].flink == ""
    heartbeat = event("2026-12-01T12:00:00Z", eventType="RUNNING")
    heartbeat["inputs"], heartbeat["outputs"] = [], []
    heartbeat["run"]["facets"] = {"processing_engine": {"_producer": "x", "_schemaURL": "x", "name": "flink", "version": "1.20.1"}}
    assert (await post(http, bot, heartbeat))[1]["changed"] == 1
    assert (await post(http, bot, heartbeat))[1]["changed"] == 0  # said again: nothing changes
    assert (await post(http, bot, event("2026-12-01T13:00:00Z")))[1]["changed"] == 0  # an event that says nothing of it
    late = event("2026-12-01T10:30:00Z")
    late["run"]["facets"] = {"processing_engine": {"_producer": "x", "_schemaURL": "x", "name": "flink", "version": "1.19.0"}}
    assert (await post(http, bot, late))[1]["changed"] == 0  # older than what the bot knows: its version does not win
    graph = await bot.lineage.graph()
    assert graph.jobs[JobId("flink://prod", "enrich-orders")].flink == "1.20.1" and len(graph.impact(DatasetId(KAFKA, "orders"), ["price"]).impacted) == 1


async def test_malformed_or_unauthorised_requests_store_nothing(api: tuple[Bot, aiohttp.ClientSession]) -> None:
    bot, http = api
    bad = copy.deepcopy(event())
    bad["job"].pop("namespace")
    status, answer = await post(http, bot, bad)
    assert status == 400 and "job.namespace" in answer["error"]
    status, answer = await post(http, bot, [event(), bad])
    assert status == 400 and answer["error"].startswith("event 1: ")
    status, answer = await post(http, bot, "{oops")
    assert status == 400 and "malformed JSON" in answer["error"]
    big = io.BytesIO(json.dumps([event()] * 3000).encode())  # about 6 MiB: answered in JSON, as every refusal is
    async with http.post(f"{bot.url}/api/v1/lineage", data=big, headers={"Content-Type": "application/json"}) as response:
        assert response.status == 413
        assert (await response.json())["error"].startswith("the body is larger than the 4 MiB a request may carry")
    async with http.delete(f"{bot.url}/api/v1/lineage") as response:  # what aiohttp refuses itself is JSON too
        assert (response.status, response.headers["Allow"], await response.json()) == (
            405, "POST", {"ok": False, "error": "/api/v1/lineage takes POST, not DELETE"})
    async with http.get(f"{bot.url}/api/v1/lineages") as response:
        assert (response.status, (await response.json())["error"]) == (404, "there is no /api/v1/lineages in the HTTP API (its reference "
                                                                             "lists the routes)")
    async with aiohttp.ClientSession() as anonymous:
        assert (await post(anonymous, bot, event()))[0] == 401
        assert (await post(anonymous, bot, event(), headers={"Authorization": "Bearer wrong"}))[0] == 401
    assert (await bot.lineage.graph()).jobs == {}


def test_cli_import_is_all_or_nothing(migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DATABASE_URL", migrated_url)
    source = tmp_path / "events.jsonl"
    source.write_text(json.dumps(event()) + "\nnot json\n" + json.dumps({**event(), "job": {}}) + "\n")
    assert main(["lineage", "import", str(source)]) == 1
    err = capsys.readouterr().err
    assert "line 2: malformed JSON" in err and "line 3: job.namespace" in err and "nothing was stored" in err
    source.write_text(json.dumps(event()) + "\n\n" + json.dumps(event("2026-12-02T00:00:00Z", mappings={})) + "\n")
    assert main(["lineage", "import", str(source)]) == 0
    assert "imported 2 events; 2 changed the lineage" in capsys.readouterr().out
    assert main(["impact", "orders", "--fields", "id", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {(i["field"], i["black_box_only"]) for i in result["impacted"]} == {("amount", True), ("order_id", True)}
