"""A dataset dropped: OpenLineage's ``lifecycleStateChange`` facet (DROP) marks it dropped at the event's time, until an
event names it since (a table dropped is often made again by its next run). Its readers stay in the impact, which says
the dataset was dropped: on the card, in ``bot impact`` and in its JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bot.cli.lineage import impact_text
from bot.domain.lineage.graph import LineageGraph
from bot.domain.lineage.model import Dataset, DatasetId
from bot.domain.lineage.openlineage import parse_event
from bot.services.lineage import LineageService
from bot.store.database import Database
from tests.conftest import SlackHarness
from tests.test_lineage_renames import NEW, OLD, TOPIC, run, table
from tests.test_proposals_slack import V1, card_message, propose, retyped, setup_catalog


def dropped(ident: DatasetId, when: str, change: str = "DROP") -> dict[str, Any]:
    """``DROP TABLE`` of ``ident`` at ``when``, as a DatasetEvent (``change``: another lifecycle change instead)."""
    return {"eventTime": when, "producer": "x", "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/DatasetEvent",
            "dataset": {"namespace": ident.namespace, "name": ident.name, "facets": {"lifecycleStateChange": {
                "_producer": "x", "_schemaURL": "x", "lifecycleStateChange": change}}}}


def test_a_drop_is_read_with_its_time_and_no_other_change_is() -> None:
    assert parse_event(dropped(OLD, "2026-12-03T10:00:00Z")).datasets[0].dropped_at == datetime(2026, 12, 3, 10, tzinfo=UTC)
    for change in ("CREATE", "ALTER", "OVERWRITE", "TRUNCATE", "MERGE"):
        assert parse_event(dropped(OLD, "2026-12-03T10:00:00Z", change)).datasets[0].dropped_at is None


async def test_a_dropped_table_keeps_its_readers_says_so_and_is_back_once_an_event_names_it_later(migrated_url: str) -> None:
    db = Database(migrated_url)
    try:
        service = LineageService(db)
        report = run("report", OLD, {"namespace": "s3://reports", "name": "daily"}, "amount", "total", "finance-team", "2026-12-01T11:00:00Z")
        assert await service.ingest([parse_event(run("etl", TOPIC, table(OLD, ["amount"]), "amount", "amount", "sales-team",
                                                     "2026-12-01T10:00:00Z")), parse_event(report)]) == 2
        assert await service.ingest([parse_event(dropped(OLD, "2026-12-03T10:00:00Z"))]) == 1
        assert await service.ingest([parse_event(dropped(OLD, "2026-12-03T10:00:00Z"))]) == 0  # a retry changes nothing
        late = run("etl", TOPIC, table(OLD, ["amount"]), "amount", "amount", "sales-team", "2026-12-02T10:00:00Z")
        await service.ingest([parse_event(late)])  # a run from before the drop, arriving after it: still dropped
        graph = await service.graph()
        impact = graph.impact(TOPIC, ["amount"])
        assert "finance-team" in impact.owners  # its readers are asked still
        assert impact.as_json()["dropped"] == [{"dataset": "sales.orders", "namespace": "iceberg://lake", "at": "2026-12-03T10:00:00+00:00"}]
        assert ("  (sales.orders was dropped at 2026-12-03 10:00 UTC, OpenLineage says: its readers are listed still, in case it is made "
                "again)") in impact_text(impact, {"sales-team", "finance-team"}).splitlines()
        # the next run writes it again: it is back
        again = run("etl", TOPIC, table(OLD, ["amount"]), "amount", "amount", "sales-team", "2026-12-04T10:00:00Z")
        assert await service.ingest([parse_event(again)]) == 1
        impact = (await service.graph()).impact(TOPIC, ["amount"])
        assert "dropped" not in impact.as_json() and "finance-team" in impact.owners
        assert await service.ingest([parse_event(dropped(OLD, "2026-12-03T12:00:00Z"))]) == 0  # a drop older than that run, late
        # a table never dropped before, written at noon; its drop of the morning arrives after: it is there
        await service.ingest([parse_event(run("etl-eu", TOPIC, table(NEW, ["amount"]), "amount", "amount", "sales-team", "2026-12-05T12:00:00Z"))])
        assert await service.ingest([parse_event(dropped(NEW, "2026-12-05T08:00:00Z"))]) == 0
        assert (await service.graph()).datasets[NEW].dropped_at is None
    finally:
        await db.close()


async def test_the_card_says_a_table_on_the_way_was_dropped(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await slack.bot.lineage.ingest([parse_event(dropped(DatasetId("iceberg://lake", "dwd_orders_0"), "2026-11-30T10:00:00Z"))])
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    assert (":wastebasket: dropped since, OpenLineage says (their readers are asked still, in case they are made again): "
            "`dwd_orders_0` (2026-11-30 10:00 UTC)") in json.dumps(card.blocks, ensure_ascii=False)
    assert "analytics-team" in card.text or "analytics-team" in json.dumps(card.blocks)


def test_a_dataset_of_several_names_is_dropped_as_its_kept_name_says() -> None:
    when, table_name = datetime(2026, 12, 3, tzinfo=UTC), DatasetId("iceberg://lake", "sales.orders_t")
    path, gone = Dataset(OLD, symlinks=[table_name]), Dataset(table_name, dropped_at=when)
    assert LineageGraph([gone, path], []).datasets[table_name].dropped_at == when  # kept under the table's name: its own drop
    assert LineageGraph([path, gone], []).datasets[OLD].dropped_at is None  # kept under the path: the table name's drop does not say
    assert LineageGraph([Dataset(OLD, symlinks=[table_name], dropped_at=when), Dataset(table_name)], []).datasets[OLD].dropped_at == when
    renamed = Dataset(table_name, previous={OLD: datetime(2026, 12, 4, tzinfo=UTC)})  # kept under its new name, met after the old one
    assert LineageGraph([Dataset(OLD, dropped_at=when), renamed], []).datasets[table_name].dropped_at is None
