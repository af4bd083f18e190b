"""The declarative catalog: every problem reported with its place; load, then query impact from the store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlmodel import select

from bot.cli import main
from bot.domain.avro.parse import parse
from bot.domain.lineage.catalog import read_catalog
from bot.services.census import CensusService
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.registry import Registry
from bot.services.sli import SliService
from bot.store.database import Database
from bot.store.models import SchemaVersion, Subject

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "catalog.yaml"


def example() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())


def load(relative: str) -> str:
    return (EXAMPLE.parent / relative).read_text()


def problems(data: dict[str, Any]) -> list[str]:
    return [str(p) for p in read_catalog(data, load)[1]]


def test_the_example_catalog_is_valid() -> None:
    catalog, found = read_catalog(example(), load)
    assert found == []
    assert set(catalog.teams) == {"orders-team", "analytics-team", "growth-team"}
    [enrich, daily, recommendations] = catalog.jobs
    assert not enrich.black_box and recommendations.black_box
    orders = catalog.subjects["orders-value"]
    assert orders.topic == "orders" and "payload.detail.price" in catalog.datasets[orders.dataset].fields


def test_unknown_team_dangling_dataset_and_missing_field_are_all_reported() -> None:
    data = example()
    data["jobs"][0]["owner"] = "ghost-team"
    data["jobs"][1]["inputs"].append("no_such_table")
    data["jobs"][0]["mappings"]["dwd_orders.amount"].append("orders-value.payload.detail.cost")
    data["jobs"][1]["mappings"]["ads_daily_sales.margin"] = ["dwd_orders.amount"]
    data["teams"]["growth-team"]["members"] = ["alice"]
    found = problems(data)
    assert "jobs[0] (enrich-orders).owner: unknown team 'ghost-team'" in found
    assert any(p.startswith("jobs[1] (daily-sales).inputs: dangling dataset 'no_such_table'") for p in found)
    assert 'jobs[0] (enrich-orders).mappings["dwd_orders.amount"]: orders has no field \'payload.detail.cost\'' in found
    assert 'jobs[1] (daily-sales).mappings["ads_daily_sales.margin"]: ads_daily_sales has no field \'margin\'' in found
    assert "teams.growth-team.members: 'alice' is not a Slack user id (U... or W...)" in found
    assert len(found) == 5


def test_structural_problems() -> None:
    assert problems([]) == ["catalog: expected a mapping with teams, subjects, datasets and jobs"]  # type: ignore[arg-type]
    long = example()
    long["subjects"]["s" * 256] = {"owner": "orders-team"}
    assert problems(long) == [f"subjects.{'s' * 60}…: a subject's name holds at most 255 characters (256 here)"]
    long = example()
    long["teams"]["t" * 300] = {"members": []}
    assert problems(long) == [f"teams.{'t' * 60}…: a team's name holds at most 255 characters (300 here)"]
    long = example()
    long["kafka_namespace"] = "kafka://" + ",".join(f"broker-{i}.kafka.internal:9092" for i in range(10))
    assert problems(long) == ["kafka_namespace: expected a namespace such as kafka://broker:9092 (one server; at most 255 characters)"]
    data = example()
    data["subjects"]["orders-value"]["schema"] = "schemas/missing.avsc"
    data["subjects"]["orders-value"]["compatibility"] = "SOMETIMES"
    data["datasets"].append({"name": "dwd_orders", "namespace": "iceberg://lake", "owner": "analytics-team"})
    data["jobs"].append({"name": "daily-sales", "namespace": "flink://prod", "owner": "analytics-team"})
    data["extra"] = 1
    found = "\n".join(problems(data))
    for expected in ("subjects.orders-value.schema: cannot use schemas/missing.avsc", "compatibility: 'SOMETIMES'",
                     "declared twice", "job daily-sales is declared twice", "extra: unknown section"):
        assert expected in found


async def test_load_then_query_from_the_store(migrated_url: str) -> None:
    catalog, _ = read_catalog(example(), load)
    db = Database(migrated_url)
    try:
        service = LineageService(db)
        await service.load_catalog(catalog)
        await service.load_catalog(catalog)
        graph = await service.graph()
        impact = graph.impact(graph.find_dataset("orders-value"), ["quantity"])
        assert [i.as_json()["path"] for i in impact.impacted if not i.black_box_only] == [
            "orders.quantity -> enrich-orders -> dwd_orders.amount",
            "orders.quantity -> enrich-orders -> dwd_orders.amount -> daily-sales -> ads_daily_sales.revenue"]
        assert set(impact.owners) == {"orders-team", "analytics-team", "growth-team"}
        teams = await service.teams()
        assert teams["orders-team"].usergroup == "S0ORDERS" and teams["analytics-team"].oncall == ["U00000BOB"]
        smaller = example()
        smaller["jobs"] = smaller["jobs"][:1]
        catalog2, _ = read_catalog(smaller, load)
        await service.load_catalog(catalog2)
        assert {j.name for j in (await service.graph()).jobs} == {"enrich-orders"}
    finally:
        await db.close()


async def test_channels_are_slack_channels_as_long_as_slack_names_them(migrated_url: str) -> None:
    """A channel of 80 characters (Slack's longest) is kept wherever the catalog names one; what cannot be a channel is refused."""
    longest = "#" + "data-platform-alerts-" * 3 + "x" * 17
    data = example()
    data["teams"]["orders-team"]["channel"] = longest
    data["subjects"]["orders-value"]["channel"] = longest
    data["jobs"][0]["channel"] = longest
    data["pipelines"][0]["channel"] = longest
    catalog, found = read_catalog(data, load)
    assert found == [] and len(longest) == 81
    db = Database(migrated_url)
    try:
        await LineageService(db).load_catalog(catalog)  # PostgreSQL kept 64 characters of a channel: it refused this catalog
        assert (await LineageService(db).teams())["orders-team"].channel == longest
    finally:
        await db.close()
    for bad in (42, "#orders pipeline", longest + "x", "##orders", ""):
        data["subjects"]["orders-value"]["channel"] = bad
        assert [p for p in problems(data) if ".channel" in p] == [
            f"subjects.orders-value.channel: {str(bad)!r} is not a Slack channel (#name, at most 80 characters without spaces, or a "
            "channel id such as C0123ABCD)"], bad


def test_cli_validate_load_impact_coverage(migrated_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    monkeypatch.setenv("DATABASE_URL", migrated_url)
    assert main(["catalog", "validate", str(EXAMPLE)]) == 0
    assert "OK — 3 teams, 1 subjects, 4 datasets, 3 jobs (1 black box)" in capsys.readouterr().out
    assert main(["catalog", "load", str(EXAMPLE)]) == 0
    assert main(["impact", "orders-value", "--fields", "payload.detail.price,buyer.segment", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert set(result) == {"dataset", "namespace", "fields", "impacted", "impacted_total", "datasets_total", "jobs", "owners", "unowned",
                           "consumer_groups", "census"}
    assert result["impacted_total"] == len(result["impacted"])
    assert result["consumer_groups"] == []  # no census has been taken, and the answer says so: no reader is known, not none
    assert result["census"]["taken_at"] is None and result["census"]["live"] is False
    assert result["unowned"] == []  # every job of the example catalog has a team
    assert {(i["dataset"], i["field"]) for i in result["impacted"]} == {
        ("dwd_orders", "amount"), ("dwd_orders", "buyer.segment"), ("ads_daily_sales", "revenue"), ("recommendation_cache", "*")}
    assert {j["name"]: j["black_box"] for j in result["jobs"]} == {"enrich-orders": False, "daily-sales": False, "recommendations": True}
    assert main(["impact", "orders", "--fields", "nope"]) == 1
    assert main(["impact", "nowhere"]) == 1
    assert "orders has no field 'nope'" in capsys.readouterr().err
    assert main(["impact", "orders", "--fields", "payload.detail.colour"]) == 1  # the schema lists Detail's fields: a typo
    assert "orders has no field 'payload.detail.colour' (payload.detail has color, price)" in capsys.readouterr().err
    assert main(["impact", "dwd_orders", "--fields", "buyer.segment.code"]) == 0  # declared without members: it may have this one
    assert "(buyer.segment.code is not listed for dwd_orders: answered for buyer.segment, which holds it)" in capsys.readouterr().out
    assert main(["lineage", "coverage", "--format", "json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["black_box_share"] == round(1 / 3, 4) and figures["subjects_with_field_lineage"] == []
    broken = tmp_path / "broken.yaml"
    broken.write_text("teams: [unclosed\n")
    assert main(["catalog", "load", str(broken)]) == 1
    assert "not valid YAML at line 2" in capsys.readouterr().err


def test_impact_asks_the_subjects_newest_version_for_a_path_past_the_listing(
        migrated_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The lineage lists a subject's shallowest 20,000 paths: ``deep.a`` is past them, and the newest stored version says
    it exists (answered for ``deep``) while ``deep.b`` does not."""
    monkeypatch.setenv("DATABASE_URL", migrated_url)
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(yaml.safe_dump({"teams": {"t": {"members": ["U0000ALICE"]}}, "subjects": {"wide-value": {"owner": "t"}}}))
    assert main(["catalog", "load", str(catalog)]) == 0
    deep = {"name": "deep", "type": {"type": "record", "name": "Deep", "fields": [{"name": "a", "type": "int"}]}}
    wide = {"type": "record", "name": "Wide", "fields": [{"name": f"f{i}", "type": "int"} for i in range(19_999)] + [deep]}

    async def record() -> None:
        db = Database(migrated_url)
        try:
            await Registry(db).record("wide-value", parse(wide))
        finally:
            await db.close()

    asyncio.run(record())
    capsys.readouterr()
    assert main(["impact", "wide-value", "--fields", "deep.a", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["enclosed"] == {"deep.a": "deep"}
    assert main(["impact", "wide-value", "--fields", "deep.b"]) == 1
    assert "wide has no field 'deep.b'\n" in capsys.readouterr().err  # no hint: the listing does not show what deep holds


def test_impact_on_a_subject_whose_newest_version_imports_another_subjects_file(
        migrated_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The newest Protobuf version imports a file the bot does not hold: it does not parse alone, so its fields are not
    known. Nothing is refused for it and nothing breaks: the answer is every reader of the whole topic (`orders.*`)."""
    monkeypatch.setenv("DATABASE_URL", migrated_url)
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(yaml.safe_dump({
        "teams": {"t": {"members": ["U0000ALICE"]}}, "subjects": {"orders-proto": {"owner": "t", "schema_type": "PROTOBUF", "topic": "orders"}},
        "datasets": [{"name": "sink", "namespace": "jdbc://warehouse", "owner": "t", "fields": ["total"]}],
        "jobs": [{"name": "load", "owner": "t", "inputs": ["orders-proto"], "outputs": ["sink"]}]}))
    assert main(["catalog", "load", str(catalog)]) == 0
    text = 'syntax = "proto3";\npackage shop;\nimport "common/money.proto";\nmessage Order {\n  acme.common.Money total = 1;\n}\n'

    async def record() -> None:
        db = Database(migrated_url)
        try:
            async with db.session() as session:
                subject = (await session.exec(select(Subject).where(Subject.name == "orders-proto"))).one()
                session.add(SchemaVersion(subject_id=subject.id, version=1, schema_text=text, fingerprint="imports-money"))
                await session.commit()
        finally:
            await db.close()

    asyncio.run(record())
    capsys.readouterr()
    assert main(["impact", "orders-proto", "--fields", "total.units"]) == 0
    out = capsys.readouterr().out
    assert "sink.total: orders.* -> load (black box) -> sink.total" in out, out


def test_cli_refuses_an_unmigrated_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'fresh.db'}")
    assert main(["catalog", "load", str(EXAMPLE)]) == 2
    assert "run `bot migrate` first" in capsys.readouterr().err


async def test_the_export_is_the_loaded_catalog_with_attributed_and_retired_consumer_groups(migrated_url: str, tmp_path: Path) -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["freezes"] = [{"name": "new year", "start": "2026-12-31T00:00:00Z", "end": "2027-01-02T00:00:00Z"}]
    data["freezes"][0]["start"] = yaml.safe_load("2026-12-31T00:00:00Z")  # YAML reads unquoted times as datetimes
    catalog, problems = read_catalog(data, load)
    assert problems == []
    db = Database(migrated_url)
    try:
        lineage = LineageService(db)
        await lineage.load_catalog(catalog)
        census = CensusService(db, lineage, SliService(db, lineage, Outbox()), None, "test")
        await census.attribute("fraud-scorer", "growth-team", "U0000ALICE", "slack")
        await census.attribute("old-report", None, "U0000ALICE", "slack")
        exported = await census.exported()
        assert exported["teams"]["growth-team"]["consumer_groups"] == ["fraud-scorer"]
        assert exported["retired_consumer_groups"] == ["old-report"]
        assert exported["jobs"][0]["consumer_groups"] == ["enrich-orders"]
        again, problems = read_catalog(yaml.safe_load(yaml.safe_dump(exported)), load)
        assert problems == []
        assert again.teams["growth-team"].consumer_groups == ["fraud-scorer"] and again.retired_groups == ["old-report"]
        await lineage.load_catalog(again)  # loaded back, the groups stay declared and retired without the attributions
        declared = await census.declared()
        assert declared["fraud-scorer"].team == "growth-team" and declared["enrich-orders"].job == "enrich-orders"
        assert (await lineage.setting("retired_groups"))["groups"] == ["old-report"]
    finally:
        await db.close()
