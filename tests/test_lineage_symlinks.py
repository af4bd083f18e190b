"""One dataset, several names: a Spark job that reads the catalog's Iceberg table by its storage path, naming the table
only in OpenLineage's ``symlinks`` facet, is still downstream of a change to the subject that feeds that table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.cli import main
from bot.domain.calendar import Scope
from bot.domain.lineage.catalog import read_catalog
from bot.domain.lineage.graph import LineageError, LineageGraph
from bot.domain.lineage.model import Dataset, DatasetId, FieldRef, Job, JobId
from bot.domain.lineage.namespaces import Namespaces
from bot.domain.lineage.openlineage import OpenLineageError, parse_event
from bot.services.calendar import reach
from bot.services.lineage import LineageService
from bot.store.database import Database

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "catalog.yaml"
TABLE = DatasetId("iceberg://lake", "dwd_orders")  # the example catalog's table, fed by enrich-orders from orders-value
PATH = DatasetId("s3://warehouse", "lake/dwd_orders")  # where the table's files are


def dataset(ident: DatasetId, symlinks: list[DatasetId] | None = None, fields: list[str] | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = {"namespace": ident.namespace, "name": ident.name, "facets": {}}
    if symlinks is not None:
        raw["facets"]["symlinks"] = {"_producer": "x", "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/SymlinksDatasetFacet.json",
                                     "identifiers": [{"namespace": s.namespace, "name": s.name, "type": "TABLE"} for s in symlinks]}
    if fields is not None:
        raw["facets"]["schema"] = {"_producer": "x", "_schemaURL": "x", "fields": [{"name": f, "type": "string"} for f in fields]}
    return raw


def spark(job: str, read: dict[str, Any], team: str = "finance-team", when: str = "2026-12-01T10:00:00Z") -> dict[str, Any]:
    """A Spark job reading ``read`` (the table by some name) into a report, its ``amount`` from the table's ``amount``."""
    return {
        "eventType": "COMPLETE", "eventTime": when, "producer": "https://github.com/OpenLineage/OpenLineage/tree/1.40.0/integration/spark",
        "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
        "run": {"runId": "0192c2a0-0000-7000-8000-000000000001"},
        "job": {"namespace": "spark://prod", "name": job,
                "facets": {"ownership": {"_producer": "x", "_schemaURL": "x", "owners": [{"name": f"team:{team}"}]}}},
        "inputs": [read],
        "outputs": [{"namespace": "s3://reports", "name": f"{job}/out", "facets": {"columnLineage": {
            "_producer": "x", "_schemaURL": "x",
            "fields": {"total": {"inputFields": [{"namespace": read["namespace"], "name": read["name"], "field": "amount"}]}}}}}],
    }


def test_symlinks_are_read_with_the_place_of_what_is_wrong() -> None:
    event = parse_event(spark("ledger", dataset(PATH, [TABLE, PATH, TABLE])))
    assert [d.symlinks for d in event.datasets if d.id == PATH] == [[TABLE]]  # its own name and a repeat left out
    assert parse_event(spark("ledger", dataset(PATH))).datasets[0].symlinks == []
    bad: list[tuple[Any, str]] = [
        ({"identifiers": "dwd_orders"}, "inputs[0].facets.symlinks.identifiers: expected an array of {namespace, name, type}"),
        ("dwd_orders", "inputs[0].facets.symlinks.identifiers: expected an array of {namespace, name, type}"),
        ({"identifiers": ["dwd_orders"]}, "inputs[0].facets.symlinks.identifiers[0]: expected an object"),
        ({"identifiers": [{"namespace": "iceberg://lake", "type": "TABLE"}]}, "inputs[0].facets.symlinks.identifiers[0].name: required string is missing"),
        ({"identifiers": [{"namespace": "iceberg://lake", "name": "t", "type": 3}]}, "inputs[0].facets.symlinks.identifiers[0].type: expected a string (TABLE, LOCATION)"),
    ]
    for facet, message in bad:
        raw = dataset(PATH)
        raw["facets"]["symlinks"] = facet
        with pytest.raises(OpenLineageError) as refused:
            parse_event(spark("ledger", raw))
        assert str(refused.value) == message


def test_a_graph_keeps_one_dataset_under_the_name_listed_first() -> None:
    report = DatasetId("s3://reports", "ledger/out")
    job = Job(JobId("spark://prod", "ledger"), ["finance-team"], inputs=[PATH], outputs=[report],
              mappings=[(FieldRef(PATH, "amount"), FieldRef(report, "total"))])
    table = Dataset(TABLE, "iceberg", ["analytics-team"], ["amount", "country"])
    graph = LineageGraph([table, Dataset(PATH, "s3", [], ["amount"], symlinks=[TABLE])], [job])
    assert [d for d in graph.datasets if d in (TABLE, PATH)] == [TABLE] and graph.datasets[TABLE].symlinks == [PATH]
    assert graph.jobs[job.id].inputs == [TABLE] and graph.impact(TABLE, ["amount"]).owners == ("finance-team",)
    assert graph.find_dataset("lake/dwd_orders") == graph.find_dataset("dwd_orders", "iceberg://lake") == TABLE
    assert graph.find_dataset("lake/dwd_orders", "s3://warehouse") == TABLE
    with pytest.raises(LineageError):
        graph.find_dataset("lake/dwd_orders", "s3://elsewhere")
    assert graph.named("lake/dwd_orders") == graph.named("dwd_orders") == [TABLE] and graph.named("nope") == []
    assert reach(graph, Scope(datasets=frozenset({"lake/dwd_orders"}))) == {"dataset dwd_orders", "dataset ledger/out", "job ledger"}
    apart = LineageGraph([table, Dataset(PATH, "s3", [], ["amount"])], [job])  # no symlink: two datasets
    assert apart.impact(TABLE, ["amount"]).owners == ()
    # names linked through a third, in any order: one dataset, named as the first of them listed
    view = DatasetId("hive://metastore", "lake.dwd_orders")
    chained = Namespaces().linked([Dataset(PATH, symlinks=[view]), Dataset(TABLE, symlinks=[view])])
    assert chained.same == {view: PATH, TABLE: PATH}
    assert Namespaces().linked([Dataset(PATH)]) == Namespaces()


async def test_a_reader_by_storage_path_is_asked_and_a_repeat_changes_nothing(migrated_url: str) -> None:
    catalog, problems = read_catalog(yaml.safe_load(EXAMPLE.read_text()), lambda r: (EXAMPLE.parent / r).read_text())
    assert problems == []
    db = Database(migrated_url)
    try:
        service = LineageService(db)
        await service.load_catalog(catalog)
        by_path = parse_event(spark("ledger", dataset(PATH, [TABLE])))
        assert await service.ingest([by_path]) == 1
        assert await service.ingest([by_path]) == 0  # a retry
        graph = await service.graph()
        assert graph.jobs[JobId("spark://prod", "ledger")].inputs == [TABLE] and PATH not in graph.datasets
        assert graph.datasets[TABLE].fields == ["order_id", "amount", "country", "buyer.segment"]  # the catalog's word stands
        orders = graph.find_dataset("orders-value")
        assert "finance-team" in graph.impact(orders, ["quantity"]).owners  # orders-value.quantity -> dwd_orders.amount -> ledger
        assert "finance-team" not in graph.impact(orders, ["buyer.country"]).owners
        # another job names the table by its path alone, with no facet: the name the table's events gave it joins it
        assert await service.ingest([parse_event(spark("audit", dataset(PATH), team="audit-team"))]) == 1
        assert "audit-team" in (await service.graph()).impact(orders, ["quantity"]).owners
    finally:
        await db.close()


async def test_a_catalog_job_that_names_its_output_by_path_is_no_disagreement(migrated_url: str) -> None:
    catalog, problems = read_catalog(yaml.safe_load(EXAMPLE.read_text()), lambda r: (EXAMPLE.parent / r).read_text())
    assert problems == []

    def enrich(output: dict[str, Any], when: str) -> Any:
        event = spark("enrich-orders", {"namespace": "kafka://broker:9092", "name": "orders"}, "orders-team", when)
        event["job"]["namespace"] = "flink://prod"
        event["outputs"] = [output]
        return parse_event(event)

    db = Database(migrated_url)
    try:
        service = LineageService(db)
        await service.load_catalog(catalog)
        await service.ingest([enrich(dataset(PATH, [TABLE]), "2026-12-01T10:00:00Z")])
        assert await service.observations() == []
        await service.ingest([enrich(dataset(PATH), "2026-12-01T11:00:00Z")])  # no symlink: another place
        assert [o.conflict for o in await service.observations()] == ["outputs lake/dwd_orders (the catalog says dwd_orders)"]
    finally:
        await db.close()


def test_tables_named_only_by_their_events_join_before_any_catalog(migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A writer names the table by its path with its catalog name as a symlink; a reader names it by the catalog name."""
    monkeypatch.setenv("DATABASE_URL", migrated_url)
    named = DatasetId("iceberg://glue", "sales.orders")
    writer = spark("load-orders", {"namespace": "kafka://broker:9092", "name": "orders"}, "ingest-team")
    writer["outputs"] = [dataset(PATH, [named], ["amount"])]
    writer["outputs"][0]["facets"]["columnLineage"] = {"_producer": "x", "_schemaURL": "x", "fields": {
        "amount": {"inputFields": [{"namespace": "kafka://broker:9092", "name": "orders", "field": "amount"}]}}}
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(json.dumps(e) for e in (spark("ledger", dataset(named)), writer)) + "\n")
    assert main(["lineage", "import", str(events)]) == 0
    capsys.readouterr()
    assert main(["impact", "orders", "--fields", "amount", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [j["name"] for j in result["jobs"]] == ["load-orders", "ledger"]
    assert {(i["dataset"], i["field"]) for i in result["impacted"]} == {("sales.orders", "amount"), ("ledger/out", "total")}  # the name
    # stored first is kept
    assert main(["impact", "lake/dwd_orders", "--fields", "amount", "--format", "json"]) == 0  # the table by its other name
    by_path = json.loads(capsys.readouterr().out)
    assert (by_path["dataset"], [j["name"] for j in by_path["jobs"]]) == ("sales.orders", ["ledger"])


def test_two_datasets_the_catalog_declares_stay_two() -> None:
    """An event that says two catalog datasets are one does not merge them (each keeps its owners); a third name joins one."""
    view = DatasetId("hive://metastore", "lake.dwd_orders")
    table, files = Dataset(TABLE, "iceberg", ["analytics-team"], ["amount"]), Dataset(PATH, "s3", ["storage-team"], ["amount"])
    event = Dataset(PATH, symlinks=[TABLE, view])
    names = Namespaces().linked([table, files, event], [TABLE, PATH])
    assert names.dataset(PATH) == PATH and names.dataset(TABLE) == TABLE and names.dataset(view) in (TABLE, PATH)
    graph = LineageGraph([table, files, event], [], declared=[TABLE, PATH])
    assert (graph.datasets[TABLE].owners, graph.datasets[PATH].owners) == (["analytics-team"], ["storage-team"])
