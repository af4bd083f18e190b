"""One Kafka cluster, several names: OpenLineage events that name a topic by another bootstrap server (or a listener's
protocol, or another case) still reach the catalog's subject, its readers and their owners."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from bot.domain.lineage.catalog import read_catalog
from bot.domain.lineage.graph import LineageGraph
from bot.domain.lineage.model import Dataset, DatasetId, FieldRef, Job, JobId
from bot.domain.lineage.namespaces import Namespaces, place_of
from bot.domain.lineage.openlineage import parse_event
from bot.services.lineage import LineageService
from bot.store.database import Database

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "catalog.yaml"
KAFKA = "kafka://broker:9092"  # the example catalog's kafka_namespace


def catalog_data(aliases: Any = None) -> dict[str, Any]:
    data = yaml.safe_load(EXAMPLE.read_text())
    if aliases is not None:
        data["namespace_aliases"] = aliases
    return data


def read(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    catalog, problems = read_catalog(data, lambda relative: (EXAMPLE.parent / relative).read_text())
    return [str(p) for p in problems], [str(w) for w in catalog.warnings]


def reader(job: str, namespace: str, field: str, team: str, when: str = "2026-12-01T10:00:00Z") -> dict[str, Any]:
    """A job reading topic orders (named by ``namespace``) into a Redis cache, with column lineage from ``field``."""
    return {
        "eventType": "COMPLETE", "eventTime": when, "producer": "https://github.com/OpenLineage/OpenLineage/tree/1.40.0/integration/flink",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "0192c2a0-0000-7000-8000-00000000000" + str(len(job) % 10)},
        "job": {"namespace": "flink://prod", "name": job,
                "facets": {"ownership": {"_producer": "x", "_schemaURL": "x", "owners": [{"name": f"team:{team}"}]}}},
        "inputs": [{"namespace": namespace, "name": "orders"}],
        "outputs": [{"namespace": "redis://cache", "name": f"{job}_cache", "facets": {"columnLineage": {
            "_producer": "x", "_schemaURL": "x",
            "fields": {"value": {"inputFields": [{"namespace": namespace, "name": "orders", "field": field}]}}}}}],
    }


def test_the_names_one_kafka_place_goes_by() -> None:
    assert place_of("kafka://SASL_SSL://Broker-1.prod:9093") == "kafka://broker-1.prod:9093"
    assert place_of("kafka://broker-1:9092,broker-2:9092") == place_of("kafka://broker-1:9092;broker-3:9092") == "kafka://broker-1:9092"
    assert place_of("iceberg://Lake") == "iceberg://Lake" and place_of("kafka") == "kafka"
    names = Namespaces.of([KAFKA, "iceberg://lake"], {"kafka://broker-2:9092": KAFKA})
    assert [names.canonical(n) for n in ("kafka://BROKER-2:9092", "kafka://PLAINTEXT://broker:9092", "kafka://other:9092")] == [
        KAFKA, KAFKA, "kafka://other:9092"]
    assert Namespaces.from_json(json.loads(json.dumps(names.as_json()))) == names


def test_a_graph_keeps_each_place_once_and_finds_it_by_any_name() -> None:
    names = Namespaces.of([KAFKA], {"kafka://broker-2:9092": KAFKA})
    topic, alias = DatasetId(KAFKA, "orders"), DatasetId("kafka://broker-2:9092", "orders")
    job = Job(JobId("flink://prod", "fraud"), ["risk-team"], inputs=[alias], outputs=[DatasetId("redis://c", "scores")],
              mappings=[(FieldRef(alias, "amount"), FieldRef(DatasetId("redis://c", "scores"), "score"))])
    graph = LineageGraph([Dataset(topic, "topic", ["orders-team"], ["amount", "id"], "orders-value"),
                          Dataset(alias, "topic", [], ["amount"])], [job], names)
    assert [d.name for d in graph.datasets if d.name == "orders"] == ["orders"] and graph.datasets[topic].fields == ["amount", "id"]
    assert graph.find_dataset("orders", "kafka://broker-2:9092") == topic
    assert graph.impact(topic, ["amount"]).owners == ("risk-team",)
    assert graph.jobs[job.id].inputs == [topic]
    plain = LineageGraph([Dataset(topic, "topic", ["orders-team"], ["amount"], "orders-value")], [job])  # no names known: two places
    assert plain.impact(topic, ["amount"]).owners == ()


def test_aliases_that_would_name_two_places_are_refused() -> None:
    assert read(catalog_data({KAFKA: ["kafka://broker-2:9092", "kafka://broker-3:9092"]})) == ([], [])
    assert read(catalog_data({KAFKA: "kafka://broker-2:9092"})) == ([], [])
    problems, _ = read(catalog_data({KAFKA: ["iceberg://lake"]}))
    assert problems == [f"namespace_aliases['{KAFKA}']: iceberg://lake is a namespace the catalog declares its own datasets in "
                        "(iceberg://lake): an alias cannot also name another place"]
    problems, _ = read(catalog_data({KAFKA: ["kafka://b2:9092"], "kafka://other:9092": ["kafka://B2:9092"]}))
    assert problems == ["namespace_aliases['kafka://other:9092']: kafka://B2:9092 is already an alias of kafka://broker:9092: "
                        "a name stands for one place"]
    problems, _ = read(catalog_data({KAFKA: [42]}))
    assert problems == [f"namespace_aliases['{KAFKA}']: expected the namespace's other names, such as [kafka://broker-2:9092, "
                        "kafka://broker-3:9092]"]
    assert read(catalog_data([KAFKA]))[0] == ["namespace_aliases: expected a mapping"]
    problems, warnings = read(catalog_data({KAFKA: ["kafka://SSL://BROKER:9092"]}))
    assert problems == [] and warnings[-1] == (f"namespace_aliases['{KAFKA}']: kafka://SSL://BROKER:9092 is already matched as "
                                               f"{KAFKA} (a Kafka host is matched in any case, without a listener's protocol)")
    twice = catalog_data()
    twice["datasets"].append({"name": "clicks", "namespace": "kafka://BROKER:9092", "kind": "topic", "owner": "growth-team"})
    assert read(twice)[0] == [f"namespace_aliases: {KAFKA} and kafka://BROKER:9092 name one place: write it one way throughout the catalog"]


def test_readers_named_by_other_brokers_are_asked(migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Events stored before and after the catalog, naming the topic three ways, all reach orders-value's impact."""
    monkeypatch.setenv("DATABASE_URL", migrated_url)
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(reader("fraud-scoring", "kafka://broker-2:9092", "buyer.country", "risk-team")) + "\n")
    assert main(["lineage", "import", str(events)]) == 0  # before any catalog: stored as it was said
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(yaml.safe_dump(catalog_data({KAFKA: ["kafka://broker-2:9092"]})))
    (tmp_path / "schemas").symlink_to(EXAMPLE.parent / "schemas")
    assert main(["catalog", "load", str(catalog)]) == 0
    events.write_text(json.dumps(reader("geo-stats", "kafka://SASL_SSL://BROKER:9092", "buyer.country", "geo-team")) + "\n")
    assert main(["lineage", "import", str(events)]) == 0
    capsys.readouterr()
    assert main(["impact", "orders-value", "--fields", "buyer.country", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    owners = {j["name"]: j["owners"] for j in result["jobs"]}
    assert (owners["fraud-scoring"], owners["geo-stats"]) == (["risk-team"], ["geo-team"])
    assert {"fraud-scoring", "geo-stats"} <= {j["name"] for j in result["unowned"]}  # teams the catalog does not declare
    assert {(i["dataset"], i["field"]) for i in result["impacted"]} >= {("fraud-scoring_cache", "value"), ("geo-stats_cache", "value")}
    assert main(["impact", "orders", "--namespace", "kafka://broker-2:9092", "--fields", "buyer.country"]) == 0
    assert "fraud-scoring" in capsys.readouterr().out


@asynccontextmanager
async def aliased(url: str) -> AsyncIterator[LineageService]:
    """The lineage service on ``url`` with the example catalog loaded, kafka://broker-2:9092 an alias of its cluster."""
    catalog, problems = read_catalog(catalog_data({KAFKA: ["kafka://broker-2:9092"]}), lambda r: (EXAMPLE.parent / r).read_text())
    assert problems == []
    db = Database(url)
    try:
        service = LineageService(db)
        await service.load_catalog(catalog)
        yield service
    finally:
        await db.close()


async def test_a_catalog_job_named_by_another_broker_is_no_disagreement(migrated_url: str) -> None:
    def enrich(namespace: str, when: str) -> Any:
        event = reader("enrich-orders", namespace, "id", "orders-team", when)
        event["outputs"] = [{"namespace": "iceberg://lake", "name": "dwd_orders"}]
        return parse_event(event)

    async with aliased(migrated_url) as service:
        await service.ingest([enrich("kafka://broker-2:9092", "2026-12-01T10:00:00Z")])
        assert await service.observations() == []  # the same topic, by another of the cluster's names
        await service.ingest([enrich("kafka://elsewhere:9092", "2026-12-01T11:00:00Z")])
        assert [o.conflict for o in await service.observations()] == ["inputs orders (the catalog says orders)"]


async def test_the_same_event_under_another_name_of_the_place_changes_nothing(migrated_url: str) -> None:
    async with aliased(migrated_url) as service:
        first = parse_event(reader("fraud-scoring", "kafka://broker-2:9092", "buyer.country", "risk-team"))
        assert await service.ingest([first]) == 1
        for name in ("kafka://broker-2:9092", "kafka://SASL_SSL://BROKER:9092", KAFKA):  # a retry, and the same place by its other names
            assert await service.ingest([parse_event(reader("fraud-scoring", name, "buyer.country", "risk-team"))]) == 0, name
        graph = await service.graph()
        assert [d for d in graph.datasets if d.name == "orders"] == [DatasetId(KAFKA, "orders")]
        assert graph.jobs[JobId("flink://prod", "fraud-scoring")].inputs == [DatasetId(KAFKA, "orders")]
