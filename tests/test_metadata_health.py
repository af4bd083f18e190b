"""The monthly metadata health report on a seeded month of history: the figures match figures computed by hand here;
it is posted once on the first working day of the month (claimed by its row), with a PNG chart uploaded in its
thread through files.uploadV2's three steps; `/schema health TEAM` and `bot health report` show the same."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import subprocess
import sys
from datetime import UTC, date, datetime
from typing import Any

from sqlmodel import select

from bot.domain.avro.parse import parse
from bot.domain.health import Facts, SubjectFacts, describe, first_working_day, month_of, report
from bot.domain.lineage.catalog import read_catalog
from bot.emulator.render import as_text
from bot.services.health import STATE_FIGURES
from bot.store.models import Acknowledgement, HealthReport, ObservedSchema, Proposal, SchemaVersion, SliEpisode, Subject
from tests.conftest import SlackHarness
from tests.test_proposals_slack import ALICE, BOB, V1

NOV = datetime(2026, 11, 1, tzinfo=UTC)


def at(day: int, hour: int = 10, minute: int = 0) -> datetime:
    return NOV.replace(day=day, hour=hour, minute=minute)


async def seed(slack: SlackHarness) -> None:
    """Two teams; orders-value read by a mapped job, payments-value read by nobody; a black box; November's history."""
    catalog = {
        "teams": {"orders-team": {"members": [ALICE], "oncall": [ALICE], "channel": "#orders-pipeline"},
                  "analytics-team": {"members": [BOB], "oncall": [BOB]}},
        "subjects": {"orders-value": {"owner": "orders-team"}, "payments-value": {"owner": "analytics-team"}},
        "datasets": [{"name": "dwd_orders", "namespace": "iceberg://lake", "owner": "orders-team", "fields": ["amount"]},
                     {"name": "reco", "namespace": "redis://cache", "owner": "analytics-team"}],
        "jobs": [{"name": "enrich", "owner": "orders-team", "inputs": ["orders-value"], "outputs": ["dwd_orders"],
                  "mappings": {"dwd_orders.amount": ["orders-value.price"]}},
                 {"name": "recommendations", "owner": "analytics-team", "inputs": ["dwd_orders"], "outputs": ["reco"]}],
        "pipelines": [{"name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline", "interval": "1m"}],
    }
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    for name in ("orders-value", "payments-value"):
        await slack.bot.registry.record(name, parse(V1))
    async with slack.bot.db.session() as session:
        subjects = {s.name: s for s in (await session.exec(select(Subject))).all()}
        for version in (await session.exec(select(SchemaVersion))).all():
            version.created_at = at(10) if version.subject_id == subjects["orders-value"].id else datetime(2026, 3, 1, tzinfo=UTC)
            session.add(version)
        orders = subjects["orders-value"].id
        assert orders is not None
        rows = [Proposal(subject_id=orders, proposer=ALICE, schema_text="{}", level="breaking", state="approved", created_at=at(3),
                         decided_at=at(4, 12), deadline=at(4)),                                  # approved two hours late
                Proposal(subject_id=orders, proposer=ALICE, schema_text="{}", level="compatible", state="expired", created_at=at(10),
                         decided_at=at(11), deadline=at(11)),
                Proposal(subject_id=orders, proposer=ALICE, schema_text="{}", level="breaking", state="pending", created_at=at(20),
                         deadline=at(21)),
                Proposal(subject_id=orders, proposer=ALICE, schema_text="{}", level="safe", state="approved",
                         created_at=datetime(2026, 10, 30, tzinfo=UTC))]                        # October: not counted
        session.add_all(rows)
        await session.flush()
        session.add_all([Acknowledgement(proposal_id=rows[0].id, team="orders-team", user=ALICE, decision="approve", created_at=at(3, 13)),
                         Acknowledgement(proposal_id=rows[2].id, team="orders-team", user=ALICE, decision="approve", created_at=at(20, 15)),
                         ObservedSchema(subject="orders-value", source="registry", schema_id=7, version=3, accounted=False, seen_at=at(15)),
                         ObservedSchema(subject="orders-value", source="registry", schema_id=1, version=1, accounted=True, seen_at=at(15)),
                         SliEpisode(fingerprint="e1", pipeline="enrich-orders", sli="freshness", level="page", started_at=at(5),
                                    acked_at=at(5, 10, 12), channel="#orders-pipeline"),
                         SliEpisode(fingerprint="e2", pipeline="enrich-orders", sli="freshness", level="warn", started_at=at(6),
                                    acked_at=at(6, 10, 30), channel="#orders-pipeline"),
                         HealthReport(month="2026-10", figures={"overall": {"black_box_share": 0.0}, "teams": {}}, created_at=NOV)])
        await session.commit()


async def test_the_report_of_a_seeded_month_matches_figures_computed_by_hand(slack: SlackHarness, migrated_url: str) -> None:
    await seed(slack)
    report = await slack.bot.health.compute(date(2026, 11, 1))
    overall, orders, analytics = report["overall"], report["teams"]["orders-team"], report["teams"]["analytics-team"]
    # jobs: enrich (mapped) and recommendations (no mappings: a black box) -> 1 of 2; October was 0
    assert overall["black_box_share"] == 0.5 and overall["black_box_trend"] == 0.5
    assert orders["black_box_share"] == 0.0 and analytics["black_box_share"] == 1.0
    # November: three proposals (the October one is not counted), one change found out of band -> 3 of 4
    assert (overall["proposals"], overall["out_of_band"], overall["through_proposals_share"]) == (3, 1, 0.75)
    assert (overall["expired"], overall["approved_late"]) == (1, 1)
    assert overall["median_hours_to_acknowledge"] == 4.0  # 3 h and 5 h
    assert (overall["sli_episodes"], overall["median_minutes_to_acknowledge_sli"]) == (2, 21.0)  # 12 and 30 minutes
    assert overall["pipelines_missing_sli"] == ["enrich-orders"]  # names no source and reports nothing
    assert overall["retire_candidates"] == [{"subject": "payments-value", "topic": "payments", "why": "no consumer"}]
    assert analytics["retire_candidates"] == overall["retire_candidates"] and orders["retire_candidates"] == []
    assert analytics["proposals"] == 0 and analytics["through_proposals_share"] is None
    assert overall["registered_share"] is None and any("no Schema Registry is configured" in u for u in report["unmeasured"])
    assert any("Kafka is not configured" in u for u in report["unmeasured"])
    assert report["as_of"] == slack.clock().isoformat()  # computed after November ended: its state figures are today's, and it says so
    assert [u for u in report["unmeasured"] if u.startswith("the state at the month's end: retire candidates")] == [
        f"the state at the month's end: {STATE_FIGURES} are as of {slack.clock():%Y-%m-%d %H:%M} UTC"]
    assert overall["schema_types"] == {"AVRO": {"subjects": 2, "registered_share": None, "proposals": 3}}

    assert first_working_day(date(2026, 11, 1)) == date(2026, 11, 2)  # November 1st, 2026 is a Sunday
    assert slack.clock().date() == first_working_day(date(2026, 12, 1))  # the harness's clock: Tuesday, December 1st
    assert await slack.bot.health.monthly() and not await slack.bot.health.monthly()  # claimed once
    await slack.bot.idle()
    [posted] = [m for m in slack.ws.channel_messages("schema-changes") if "Metadata health — 2026-11" in m.text]
    shown = as_text(posted.text, posted.blocks)
    assert "Lineage through black boxes: 50% (up 50 pts since last month)" in shown and "Changes through proposals: 3 of 4 (75%)" in shown
    assert "Not measured:" in shown
    [chart] = [m for m in slack.ws.channel_messages("schema-changes", thread_ts=posted.ts) if m.files]
    name, content = slack.ws.files[chart.files[0]["id"]]
    assert name == "metadata-health-2026-11.png" and content.startswith(b"\x89PNG\r\n\x1a\n") and len(content) > 5_000
    methods = [c.method for c in slack.ws.calls if c.method.startswith("files.")]
    assert methods == ["files.getUploadURLExternal", "files.completeUploadExternal"]

    before = len(slack.ws.ephemerals_for(ALICE))
    await slack.driver.command("/schema health orders-team", user=ALICE, channel="orders-pipeline")
    answer = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(ALICE)[before:] or None)
    assert "Metadata health — 2026-12 · orders-team" in answer[0].text  # this month so far
    await slack.driver.command("/schema health nobody", user=ALICE, channel="orders-pipeline")
    unknown = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(ALICE)[before + 1:] or None)
    assert "There is no team `nobody`" in unknown[0].text

    printed = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "health", "report", "--month", "2026-11", "--format", "csv"],
                                      env={**os.environ, "DATABASE_URL": migrated_url}, capture_output=True, text=True, timeout=60)
    rows: dict[tuple[str, str], Any] = {(r["team"], r["figure"]): r["value"] for r in csv.DictReader(io.StringIO(printed.stdout))}
    assert rows[("overall", "through_proposals_share")] == "0.75" and rows[("analytics-team", "retire_candidates")] == "1"
    assert rows[("overall", "avro_subjects")] == "2" and rows[("orders-team", "avro_proposals")] == "3"
    bad = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "health", "report", "--month", "November"],
                                  env={**os.environ, "DATABASE_URL": migrated_url}, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "is not a month such as 2026-11" in bad.stderr

    async def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "health", "report", *args],
                                       env={**os.environ, "DATABASE_URL": migrated_url}, capture_output=True, text=True, timeout=60)

    kept = await cli("--month", "2026-11")  # the report posted on December 1st, as it was kept
    assert kept.returncode == 0 and kept.stdout.startswith(f"Overall — 2026-11 (as of {slack.clock():%Y-%m-%d %H:%M} UTC)\n"), kept.stdout
    again = await cli("--month", "2026-11", "--recompute", "--format", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["as_of"] != slack.clock().isoformat()  # computed now, from the store
    later = await cli("--month", "2099-01")
    assert later.returncode == 2 and later.stdout == "" and "2099-01 has not begun" in later.stderr
    assert month_of("2026-11") == date(2026, 11, 1)


def test_undeclared_readers_are_counted_per_topic_with_their_trend() -> None:
    subjects = [SubjectFacts("orders-value", "orders-team", "orders", None, True, 3, 2),
                SubjectFacts("payments-value", "analytics-team", "payments", None, False, 1, 0),
                SubjectFacts("clicks-value", "analytics-team", "clicks", None, True, 0, None)]  # never censused
    figures = report(Facts(date(2026, 11, 1), subjects=subjects, teams=["orders-team", "analytics-team"],
                           previous={"overall": {"undeclared_readers_total": 5}, "teams": {"orders-team": {"undeclared_readers_total": 1}}}))
    assert figures["overall"]["undeclared_readers"] == {"orders": 2} and figures["overall"]["undeclared_readers_total"] == 2
    assert figures["overall"]["undeclared_readers_trend"] == -3 and figures["teams"]["orders-team"]["undeclared_readers_trend"] == 1
    assert figures["teams"]["analytics-team"]["undeclared_readers_total"] == 0 and figures["overall"]["registered_share"] == round(2 / 3, 4)
    assert ("Consumer groups nobody declared: 2 (down 3 since last month); `orders`: 2"
            in [text for _, text in describe(figures["overall"])])
