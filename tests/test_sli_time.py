"""SLI time semantics: thresholds and durations on the samples' own times, "no data" on arrival. A backlog replayed at
full speed gives the episodes the same samples give live; samples that arrive on time with old timestamps are data;
samples that stop arriving open no data after three intervals; late samples never reopen, resolve or edit anything;
a firing alert is edited for each material change and only for those."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.domain.lineage.catalog import read_catalog
from bot.domain.sli.evaluator import Kind, State, Status, observe, tick
from bot.domain.sli.pipeline import Pipeline, Sli
from bot.domain.sli.samples import Sample
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.sli import SliService
from bot.store import migrate
from bot.store.database import Database
from bot.store.models import SliEpisode
from tests.conftest import Clock

T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
RULES = Pipeline("orders-enrich", "orders-team", sla=timedelta(minutes=10)).rules()


def test_samples_arriving_on_time_but_fourteen_minutes_old_never_open_no_data() -> None:
    rule = RULES[Sli.SOURCE_LAG]
    state = State()
    opened = []
    for step in range(240):  # an hour of wall time, a sample every 15 s, each written 14 minutes before it arrives
        now = T0 + timedelta(seconds=15 * step)
        opened += observe(state, rule, now - timedelta(minutes=14), 5.0, now=now, pipeline="p", sli="source_lag")
        opened += tick(state, rule, now + timedelta(seconds=7), interval=MINUTE, mandatory=True, pipeline="p", sli="source_lag")
    assert opened == [] and state.status is Status.OK


def test_samples_that_stop_arriving_open_no_data_after_three_intervals_of_wall_time() -> None:
    rule = RULES[Sli.SOURCE_LAG]
    state = State()
    arrived = T0 + timedelta(hours=1)
    observe(state, rule, T0, 5.0, now=arrived)  # written an hour ago, arrived now
    assert tick(state, rule, arrived + 3 * MINUTE, interval=MINUTE, mandatory=True) == []
    [event] = tick(state, rule, arrived + 3 * MINUTE + timedelta(seconds=1), interval=MINUTE, mandatory=True)
    assert event.kind is Kind.OPENED and event.started_at == arrived + 3 * MINUTE and state.status is Status.NO_DATA
    [resolved] = observe(state, rule, T0 + MINUTE, 5.0, now=arrived + 5 * MINUTE)
    assert resolved.kind is Kind.RESOLVED and resolved.at == arrived + 5 * MINUTE


def test_no_data_waits_while_the_bots_own_feed_is_behind() -> None:
    rule = RULES[Sli.COMMIT_SUCCESS_RATE]
    state = State()
    observe(state, rule, T0, 1.0, now=T0)
    assert tick(state, rule, T0 + 10 * MINUTE, interval=MINUTE, mandatory=True, hold_no_data=True) == []
    assert [e.kind for e in tick(state, rule, T0 + 10 * MINUTE, interval=MINUTE, mandatory=True)] == [Kind.OPENED]


def test_late_samples_never_reopen_resolve_or_edit_an_episode() -> None:
    rule = RULES[Sli.SOURCE_LAG]
    state = State()
    events = [e for t in range(0, 130, 10) for e in observe(state, rule, T0 + timedelta(seconds=t), 90.0)]
    assert [e.kind for e in events] == [Kind.OPENED]
    assert observe(state, rule, T0 + timedelta(seconds=5), 10.0) == []  # a late healthy sample: still firing
    assert observe(state, rule, T0 + timedelta(seconds=15), 500.0) == []  # a late worse one: no edit, no peak
    assert state.status is Status.FIRING and state.episode is not None and state.episode.peak == 90.0 and state.late == 2
    events = [e for t in range(130, 400, 10) for e in observe(state, rule, T0 + timedelta(seconds=t), 10.0)]
    assert [e.kind for e in events] == [Kind.UPDATED, Kind.RESOLVED]  # the message shows the value fall, then the resolution
    late = [e for t in range(0, 120, 10) for e in observe(state, rule, T0 + timedelta(seconds=t), 900.0)]
    assert late == [] and state.status is Status.OK and state.late == 14  # twelve breaching samples from the past: nothing reopens


def test_a_firing_message_is_edited_for_material_changes_only() -> None:
    rule = RULES[Sli.SOURCE_LAG]
    state = State()
    for t in range(0, 70, 10):
        observe(state, rule, T0 + timedelta(seconds=t), 120.0)
    assert state.episode is not None and state.episode.shown == 120.0

    def edits(value: float, seconds: int) -> list[tuple[float | None, str]]:
        return [(e.value, e.detail) for e in observe(state, rule, T0 + timedelta(seconds=seconds), value) if e.kind is Kind.UPDATED]

    assert edits(125.0, 80) == [(125.0, "a new peak")]  # worse than ever: shown at once
    assert edits(124.0, 90) == []  # under 10% from what it shows, not a peak
    assert edits(118.0, 100) == []
    assert edits(112.0, 110) == [(112.0, "")]  # 10% below the 125 shown
    assert edits(113.0, 120) == []
    assert edits(165.0, 130) == [(165.0, "a new peak")]
    assert state.episode.shown == 165.0 and state.episode.peak == 165.0


def catalog() -> dict[str, Any]:
    return {"teams": {"orders-team": {"members": ["U0000ALICE"]}}, "subjects": {"orders-value": {"owner": "orders-team"}},
            "pipelines": [{"name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline", "interval": "1m",
                           "reports": ["source_lag", "commit_success_rate", "schema_error_rate", "dlq_volume"]}]}


def two_hours() -> list[Sample]:
    """A sample of each of three SLIs every 15 s for two hours: lag breaches twice (one paging), commits dip, DLQ grows."""
    samples = []
    for step in range(480):
        at, minute = T0 + timedelta(seconds=15 * step), step / 4
        lag = 90.0 if 20 <= minute < 40 else 75.0 if 70 <= minute < 73 else 10.0 + 5 * math.sin(step / 7)
        commits = 0.93 if 50 <= minute < 58 else 0.999
        samples += [Sample("enrich-orders", Sli.SOURCE_LAG, lag, at), Sample("enrich-orders", Sli.COMMIT_SUCCESS_RATE, commits, at),
                    Sample("enrich-orders", Sli.DLQ_VOLUME, float(step if 90 <= minute < 100 else 0), at)]
    return samples


async def episodes_of(folder: Path, play: Any) -> list[tuple[Any, ...]]:
    url = f"sqlite:///{folder / 'sli.db'}"
    migrate.upgrade(url)
    db = Database(url)
    try:
        lineage = LineageService(db)
        parsed, problems = read_catalog(catalog(), lambda _: None)  # type: ignore[arg-type, return-value]
        assert problems == []
        await lineage.load_catalog(parsed)
        clock = Clock()
        sli = SliService(db, lineage, Outbox(), lambda: clock.now)
        await play(sli, clock)
        async with db.session() as session:
            from sqlmodel import col, select

            rows = (await session.exec(select(SliEpisode).order_by(col(SliEpisode.started_at), col(SliEpisode.sli)))).all()
        return [(r.fingerprint, r.sli, r.level, r.started_at, r.resolved_at, r.no_data, r.peak) for r in rows]
    finally:
        await db.close()


async def test_a_two_hour_backlog_at_full_speed_gives_the_episodes_of_a_live_run(tmp_path: Path) -> None:
    samples = two_hours()

    async def live(sli: SliService, clock: Clock) -> None:  # each sample arrives two seconds after it was taken; sweeps every 15 s
        for start in range(0, len(samples), 3):
            clock.now = samples[start].time + timedelta(seconds=2)
            await sli.ingest(samples[start:start + 3])
            await sli.sweep()

    async def backlog(sli: SliService, clock: Clock) -> None:  # the same samples, three hours later, in batches, as fast as they go
        clock.now = T0 + timedelta(hours=5)
        for start in range(0, len(samples), 200):
            await sli.ingest(samples[start:start + 200])
            await sli.sweep()
            clock.advance(seconds=1)

    (tmp_path / "live").mkdir()
    (tmp_path / "backlog").mkdir()
    seen_live = await episodes_of(tmp_path / "live", live)
    seen_backlog = await episodes_of(tmp_path / "backlog", backlog)
    assert seen_backlog == seen_live
    assert not any(no_data for *_, no_data, _ in seen_live)
    assert {(sli, level) for _, sli, level, *_ in seen_live} >= {("source_lag", "page"), ("commit_success_rate", "page"), ("dlq_volume", "warn")}
