"""A dataset renamed: OpenLineage's ``lifecycleStateChange`` facet (RENAME, with ``previousIdentifier``) makes the table
under its new name the one a job last seen reading the old name is downstream of."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.domain.lineage.graph import LineageGraph
from bot.domain.lineage.model import Dataset, DatasetId
from bot.domain.lineage.openlineage import OpenLineageError, parse_event
from bot.services.lineage import LineageService
from bot.store.database import Database
from tests.test_lineage_symlinks import spark

TOPIC = DatasetId("kafka://broker:9092", "orders")
OLD, NEW = DatasetId("iceberg://lake", "sales.orders"), DatasetId("iceberg://lake", "sales.orders_eu")
ROOT = Path(__file__).resolve().parents[1]


def table(ident: DatasetId, fields: list[str], renamed_from: DatasetId | None = None, change: str = "RENAME") -> dict[str, Any]:
    facets: dict[str, Any] = {"schema": {"_producer": "x", "_schemaURL": "x", "fields": [{"name": f, "type": "string"} for f in fields]}}
    if renamed_from is not None:
        facets["lifecycleStateChange"] = {
            "_producer": "x", "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/LifecycleStateChangeDatasetFacet.json",
            "lifecycleStateChange": change, "previousIdentifier": {"namespace": renamed_from.namespace, "name": renamed_from.name}}
    return {"namespace": ident.namespace, "name": ident.name, "facets": facets}


def run(job: str, read: DatasetId, write: dict[str, Any], source: str, target: str, team: str, when: str) -> dict[str, Any]:
    """A Spark job reading ``read`` into ``write``, its ``target`` field from ``source``."""
    event = spark(job, {"namespace": read.namespace, "name": read.name}, team, when)
    event["outputs"] = [{**write, "facets": {**write.get("facets", {}), "columnLineage": {"_producer": "x", "_schemaURL": "x", "fields": {
        target: {"inputFields": [{"namespace": read.namespace, "name": read.name, "field": source}]}}}}}]
    return event


def rename(when: str) -> dict[str, Any]:
    """``ALTER TABLE sales.orders RENAME TO sales.orders_eu``, as a DatasetEvent."""
    return {"eventTime": when, "producer": "x", "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
            "dataset": table(NEW, ["amount", "region"], OLD)}


def test_the_old_name_is_read_from_a_rename_and_nothing_else() -> None:
    assert parse_event(rename("2026-12-02T10:00:00Z")).datasets[0].previous == {OLD: datetime(2026, 12, 2, 10, tzinfo=UTC)}
    assert parse_event({**rename("2026-12-02T10:00:00Z"), "dataset": table(NEW, ["amount"], OLD, "ALTER")}).datasets[0].previous == {}
    assert parse_event({**rename("2026-12-02T10:00:00Z"), "dataset": table(NEW, ["amount"], NEW)}).datasets[0].previous == {}  # itself
    created = table(NEW, ["amount"])
    created["facets"]["lifecycleStateChange"] = {"_producer": "x", "_schemaURL": "x", "lifecycleStateChange": "CREATE"}
    assert parse_event({**rename("2026-12-02T10:00:00Z"), "dataset": created}).datasets[0].previous == {}
    later = table(NEW, ["amount"], OLD, "MERGE")  # a change a later spec may add: read, and no rename
    assert parse_event({**rename("2026-12-02T10:00:00Z"), "dataset": later}).datasets[0].previous == {}
    place = "dataset.facets.lifecycleStateChange"
    bad: list[tuple[Any, str]] = [
        ({"lifecycleStateChange": 3}, f"{place}.lifecycleStateChange: expected a string (RENAME, CREATE, ALTER, DROP, OVERWRITE, TRUNCATE)"),
        ("RENAME", f"{place}.lifecycleStateChange: expected a string (RENAME, CREATE, ALTER, DROP, OVERWRITE, TRUNCATE)"),
        ({"lifecycleStateChange": "RENAME", "previousIdentifier": "sales.orders"}, f"{place}.previousIdentifier: expected an object {{namespace, name}}"),
        ({"lifecycleStateChange": "RENAME", "previousIdentifier": {"namespace": "iceberg://lake"}}, f"{place}.previousIdentifier.name: required string is missing"),
    ]
    for facet, message in bad:
        raw = table(NEW, ["amount"])
        raw["facets"]["lifecycleStateChange"] = facet
        with pytest.raises(OpenLineageError) as refused:
            parse_event({**rename("2026-12-02T10:00:00Z"), "dataset": raw})
        assert str(refused.value) == message


async def test_a_reader_of_the_old_name_stays_downstream_under_the_new_one(migrated_url: str) -> None:
    db = Database(migrated_url)
    try:
        service = LineageService(db)
        events = [run("etl", TOPIC, table(OLD, ["amount"]), "amount", "amount", "sales-team", "2026-12-01T10:00:00Z"),
                  run("report", OLD, {"namespace": "s3://reports", "name": "daily"}, "amount", "total", "finance-team", "2026-12-01T11:00:00Z")]
        assert await service.ingest([parse_event(e) for e in events]) == 2
        assert await service.ingest([parse_event(rename("2026-12-02T10:00:00Z"))]) == 1
        assert await service.ingest([parse_event(rename("2026-12-02T10:00:00Z"))]) == 0  # a retry changes nothing
        graph = await service.graph()
        assert OLD not in graph.datasets and graph.datasets[NEW].fields == ["amount", "region"]  # the table as it is now
        assert graph.find_dataset("sales.orders") == graph.find_dataset("sales.orders_eu") == NEW
        assert graph.jobs[next(j for j in graph.jobs if j.name == "report")].inputs == [NEW]
        assert "finance-team" in graph.impact(TOPIC, ["amount"]).owners  # orders.amount -> the table's amount -> the report
        # the writer moves to the new name: still one table
        await service.ingest([parse_event(run("etl", TOPIC, table(NEW, ["amount", "region"]), "amount", "amount", "sales-team",
                                              "2026-12-02T11:00:00Z"))])
        graph = await service.graph()
        assert [d for d in graph.datasets if d.namespace == "iceberg://lake"] == [NEW]
        assert "finance-team" in graph.impact(TOPIC, ["amount"]).owners
    finally:
        await db.close()


def test_the_catalogs_name_stands_over_a_rename() -> None:
    old, new = Dataset(OLD, fields=["amount"]), Dataset(NEW, fields=["amount", "region"], previous={OLD: datetime(2026, 12, 2, tzinfo=UTC)})
    assert list(LineageGraph([old, new], []).datasets) == [NEW]
    assert list(LineageGraph([old, new], [], declared=[OLD]).datasets) == [OLD]  # the catalog still says the old name
    assert LineageGraph([old, new], [], declared=[OLD]).datasets[OLD].fields == ["amount"]  # and its fields
    assert sorted(LineageGraph([old, new], [], declared=[OLD, NEW]).datasets) == [OLD, NEW]  # declares both: two


def renamed(old: DatasetId, new: DatasetId, when: str) -> dict[str, Any]:
    """``ALTER TABLE old RENAME TO new`` at ``when``, as a DatasetEvent."""
    return {**rename(when), "dataset": table(new, ["amount"], old)}


async def test_a_table_renamed_and_renamed_back_is_under_its_first_name_whatever_order_the_events_come_in(migrated_url: str) -> None:
    db = Database(migrated_url)
    try:
        service = LineageService(db)
        report = run("report", OLD, {"namespace": "s3://reports", "name": "daily"}, "amount", "total", "finance-team", "2026-12-01T11:00:00Z")
        await service.ingest([parse_event(run("etl", TOPIC, table(OLD, ["amount"]), "amount", "amount", "sales-team", "2026-12-01T10:00:00Z")),
                              parse_event(report)])
        # renamed to orders_eu on the 2nd and back on the 3rd; the rename back arrives first
        assert await service.ingest([parse_event(renamed(NEW, OLD, "2026-12-03T10:00:00Z"))]) == 1
        assert await service.ingest([parse_event(renamed(OLD, NEW, "2026-12-02T10:00:00Z"))]) == 1
        graph = await service.graph()
        assert NEW not in graph.datasets and graph.find_dataset("sales.orders_eu") == OLD
        assert "finance-team" in graph.impact(TOPIC, ["amount"]).owners
        # renamed again to orders_eu on the 4th: the newest rename's name is kept
        assert await service.ingest([parse_event(renamed(OLD, NEW, "2026-12-04T10:00:00Z"))]) == 1
        assert await service.ingest([parse_event(renamed(OLD, NEW, "2026-12-04T10:00:00Z"))]) == 0  # a retry changes nothing
        graph = await service.graph()
        assert OLD not in graph.datasets and graph.find_dataset("sales.orders") == NEW
        assert "finance-team" in graph.impact(TOPIC, ["amount"]).owners
    finally:
        await db.close()


def test_a_name_the_catalog_declares_and_a_rename_gave_up_is_listed_until_renamed_back() -> None:
    old, when = Dataset(OLD, fields=["amount"], owners=["sales-team"]), datetime(2026, 12, 2, tzinfo=UTC)
    renamed_to = Dataset(NEW, fields=["amount"], previous={OLD: when})
    assert LineageGraph([old, renamed_to], [], declared=[OLD]).outdated == [(OLD, NEW, when)]
    assert LineageGraph([old, renamed_to], [], declared=[OLD, NEW]).outdated == []  # the catalog knows the new name too
    assert LineageGraph([old, renamed_to], []).outdated == []  # no catalog: the new name is kept, nothing is out of date
    back = Dataset(OLD, previous={NEW: datetime(2026, 12, 3, tzinfo=UTC)})
    assert LineageGraph([old, renamed_to, back], [], declared=[OLD]).outdated == []  # renamed back: the catalog is right again
    third = DatasetId("iceberg://lake", "sales.orders_all")
    onward = Dataset(third, previous={NEW: datetime(2026, 12, 4, tzinfo=UTC)})
    assert LineageGraph([old, renamed_to, onward], [], declared=[OLD]).outdated == [(OLD, third, datetime(2026, 12, 4, tzinfo=UTC))]


def test_loading_the_catalog_and_the_health_report_name_a_declared_table_renamed_since(migrated_url: str) -> None:
    def bot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot", *args], env={**os.environ, "DATABASE_URL": migrated_url}, capture_output=True,
                              text=True, timeout=60, cwd=ROOT)

    def renamed(old: str, new: str, when: str) -> str:
        return json.dumps({"eventTime": when, "producer": "x", "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
                           "dataset": {"namespace": "doris://olap", "name": new, "facets": {"lifecycleStateChange": {
                               "_producer": "x", "_schemaURL": "x", "lifecycleStateChange": "RENAME",
                               "previousIdentifier": {"namespace": "doris://olap", "name": old}}}}}) + "\n"

    assert bot("catalog", "load", "examples/catalog.yaml").returncode == 0
    with tempfile.TemporaryDirectory() as folder:
        events = Path(folder) / "rename.jsonl"
        events.write_text(renamed("ads_daily_sales", "ads_daily_sales_v2", "2026-12-02T10:00:00Z"))
        assert bot("lineage", "import", str(events)).returncode == 0
        loaded = bot("catalog", "load", "examples/catalog.yaml")
        assert loaded.returncode == 0 and (
            "examples/catalog.yaml: warning: ads_daily_sales (doris://olap) was renamed ads_daily_sales_v2 (doris://olap) at 2026-12-02 10:00 "
            "UTC, OpenLineage says: the catalog's name is kept until the catalog says the new one") in loaded.stderr, loaded.stderr
        report = json.loads(bot("health", "report", "--format", "json").stdout)
        said = [{"dataset": "ads_daily_sales", "renamed_to": "ads_daily_sales_v2", "at": "2026-12-02T10:00:00+00:00"}]
        assert report["overall"]["catalog_renamed"] == said and report["teams"]["analytics-team"]["catalog_renamed"] == said
        assert report["teams"]["orders-team"]["catalog_renamed"] == []
        text = bot("health", "report").stdout
        assert ("Datasets renamed since the catalog named them (OpenLineage; the catalog's name stays until it changes): ads_daily_sales → "
                "ads_daily_sales_v2 (2026-12-02)") in text, text
        events.write_text(renamed("ads_daily_sales_v2", "ads_daily_sales", "2026-12-03T10:00:00Z"))  # renamed back
        assert bot("lineage", "import", str(events)).returncode == 0
        again = bot("catalog", "load", "examples/catalog.yaml")
        assert again.returncode == 0 and "warning" not in again.stderr
        assert json.loads(bot("health", "report", "--format", "json").stdout)["overall"]["catalog_renamed"] == []
