"""The data-loss forecast, pure: when retention deletes what a group has not read (by time and by size, at the rate the
polls measure), what was lost once it has, and how the evaluator and the alert message tell it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.domain.sli.evaluator import Episode, Kind, Level, State, observe
from bot.domain.sli.pipeline import Sli, default_rules
from bot.domain.sli.retention import HORIZON, Forecast, Lost, Retention, Seen, Track, duration_text, forecast, read_lost
from bot.slack.sli.messages import retention_notes, value_text, when

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
HOUR = 3600
DAY_MS = 24 * HOUR * 1000
RULE = default_rules(None, None)[Sli.RETENTION_HEADROOM]


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def poll(tracks: dict[tuple[str, int], Track], at: datetime, committed: int | None, oldest: datetime | None, *, low: int = 0,
         high: int = 1000, retention: Retention = Retention(DAY_MS, None), first: datetime | None = None,
         size: int | None = None) -> Forecast | None:
    seen = Seen("orders", 4, at, low, high, committed, ms(oldest) if oldest else None, ms(first) if first else None, size)
    return forecast([seen], tracks, {"orders": retention})


def test_a_stopped_group_loses_its_oldest_unread_record_at_its_time_plus_retention() -> None:
    tracks: dict[tuple[str, int], Track] = {}
    oldest = T0 - timedelta(hours=21)
    assert poll(tracks, T0, 100, oldest) is None  # one poll tells no rate
    found = poll(tracks, T0 + timedelta(minutes=1), 100, oldest)
    assert found is not None
    assert found.seconds == pytest.approx(3 * HOUR - 60)
    assert (found.topic, found.partition, found.by) == ("orders", 4, "retention.ms")
    assert found.labels("enrich") == {"group": "enrich", "partition": "orders/4", "by": "retention.ms"}


def test_a_slow_group_loses_it_later_and_one_that_keeps_pace_never() -> None:
    tracks: dict[tuple[str, int], Track] = {}
    poll(tracks, T0, 100, T0 - timedelta(hours=20))
    # in 10 minutes it read 5 minutes' worth of records: its time lag grows by half a second a second
    found = poll(tracks, T0 + timedelta(minutes=10), 150, T0 - timedelta(hours=20) + timedelta(minutes=5))
    assert found is not None
    lag = 20 * HOUR + 5 * 60
    assert found.seconds == pytest.approx((24 * HOUR - lag) / 0.5)

    tracks = {}
    poll(tracks, T0, 100, T0 - timedelta(hours=20))
    found = poll(tracks, T0 + timedelta(minutes=10), 200, T0 - timedelta(hours=20) + timedelta(minutes=10))
    assert found is not None and found.seconds == HORIZON.total_seconds() and found.topic is None


def test_nothing_unread_and_unlimited_retention_forecast_nothing_to_lose() -> None:
    tracks: dict[tuple[str, int], Track] = {}
    found = poll(tracks, T0, 1000, None)
    assert found is not None and found.seconds == HORIZON.total_seconds()
    tracks = {}
    poll(tracks, T0, 100, T0 - timedelta(days=30), retention=Retention(None, None))
    found = poll(tracks, T0 + timedelta(minutes=1), 100, T0 - timedelta(days=30), retention=Retention(None, None))
    assert found is not None and found.seconds == HORIZON.total_seconds()


def test_by_size_the_unread_records_outgrow_what_the_partition_keeps() -> None:
    tracks: dict[tuple[str, int], Track] = {}
    size = Retention(None, 10_000)  # with records of 10 bytes: about 1,000 records kept
    poll(tracks, T0, 100, T0, high=500, retention=size, size=10)
    # a minute later 120 more were produced and none consumed: 2 unread records a second, 520 unread of 1,000
    found = poll(tracks, T0 + timedelta(minutes=1), 100, T0, high=620, retention=size, size=10)
    assert found is not None and found.by == "retention.bytes"
    assert found.seconds == pytest.approx((1000 - 520) / 2)
    found = poll(tracks, T0 + timedelta(minutes=2), 100, T0, high=1200, retention=size, size=10)
    assert found is not None and found.seconds == 0.0  # outgrown: any moment now


def test_offsets_below_the_log_start_are_lost_with_the_time_they_covered() -> None:
    tracks: dict[tuple[str, int], Track] = {}
    oldest, kept = T0 - timedelta(hours=25), T0 - timedelta(hours=23)
    poll(tracks, T0, 3, oldest, high=15)
    found = poll(tracks, T0 + timedelta(minutes=1), 3, None, low=10, high=15, first=kept)
    assert found is not None and found.seconds == 0.0
    assert found.lost == (Lost("orders", 4, 3, 9, oldest, kept),)
    assert read_lost(found.labels("enrich")["lost"]) == list(found.lost)
    assert found.lost[0].text() == "orders/4 offsets 3–9 (7 messages written 2026-12-02 11:00:00 UTC to 2026-12-02 13:00:00 UTC)"

    unseen = poll({}, T0, 3, None, low=10, high=15, first=kept)  # deleted before the bot ever polled it
    assert unseen is not None and unseen.lost[0].since is None
    assert "written before 2026-12-02 13:00:00 UTC" in unseen.lost[0].text()


def test_the_evaluator_warns_pages_and_tells_each_loss_once() -> None:
    state = State()
    at = T0
    events = observe(state, RULE, at, 19 * HOUR, pipeline="enrich", sli="retention_headroom", labels={"partition": "orders/4"})
    assert [(e.kind, e.level) for e in events] == [(Kind.OPENED, Level.WARN)]
    events = observe(state, RULE, at + timedelta(minutes=1), 2 * HOUR, pipeline="enrich", sli="retention_headroom")
    assert [(e.kind, e.level) for e in events] == [(Kind.ESCALATED, Level.PAGE)]
    gone = Lost("orders", 4, 3, 9, T0 - timedelta(hours=25), T0 - timedelta(hours=23))
    labels = Forecast(0.0, "orders", 4, "deleted", (gone,)).labels("enrich")
    events = observe(state, RULE, at + timedelta(minutes=2), 0.0, labels=labels)
    assert [e.kind for e in events] == [Kind.UPDATED, Kind.LOST]
    assert events[-1].detail == gone.text()
    assert observe(state, RULE, at + timedelta(minutes=3), 0.0, labels=labels) == []  # the same loss: told once
    more = Forecast(0.0, "orders", 4, "deleted", (Lost("orders", 4, 3, 14, gone.since, T0),)).labels("enrich")
    assert [e.kind for e in observe(state, RULE, at + timedelta(minutes=4), 0.0, labels=more)] == [Kind.LOST]
    assert State.from_json(state.as_json()).labels == more

    events = [e for minute in range(5, 12) for e in observe(state, RULE, at + timedelta(minutes=minute), HORIZON.total_seconds(),
                                                            labels={"group": "enrich"})]
    assert [e.kind for e in events] == [Kind.UPDATED, Kind.RESOLVED]  # caught up, past the gap: clear after five minutes


def test_the_alert_says_where_and_when_and_what_was_lost() -> None:
    state = State(last_value=2 * HOUR + 40 * 60, last_time=T0, labels={"group": "enrich", "partition": "orders/4", "by": "retention.ms"})
    around = T0 + timedelta(hours=2, minutes=40)
    assert retention_notes("orders-enrich", state) == [
        f":hourglass: orders-enrich will lose unread data on partition orders/4 in 2 h 40 m (around {when(around)}) at the current rate "
        "(by its retention.ms)"]
    state.episode = Episode("f", T0, Level.WARN, unmeasured_since=T0)  # the polls stopped: a time, not a countdown
    assert retention_notes("orders-enrich", state) == [
        f":hourglass: orders-enrich would lose unread data on partition orders/4 around {when(around)} at the rate measured {when(T0)}, "
        "the last time it was measured (by its retention.ms)"]
    gone = Lost("orders", 4, 3, 9, T0 - timedelta(hours=25), T0 - timedelta(hours=23))
    state = State(last_value=0.0, labels=Forecast(0.0, "orders", 4, "deleted", (gone,)).labels("enrich"))
    [note] = retention_notes("orders-enrich", state)
    assert note.startswith(":warning: *Data lost*: retention deleted offsets 3–9 of orders/4 (7 messages, written from <!date^")
    assert note.endswith("before group enrich read them")
    assert value_text("retention_headroom", 0.0) == "none: unread data is being deleted"
    assert value_text("retention_headroom", 9600) == "2 h 40 m"
    assert value_text("retention_headroom", HORIZON.total_seconds()) == "beyond 7 d"
    assert RULE.threshold_text() == "warn < 1 d, page < 3 h"


@pytest.mark.parametrize(("seconds", "text"), [(45, "45 s"), (600, "10 m"), (9600, "2 h 40 m"), (3 * 86400 + 4 * 3600, "3 d 4 h"),
                                               (86400, "1 d")])
def test_durations_read_as_people_say_them(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text
