"""The SLI state machine, pure, on a fake clock: every SLI's thresholds, sustained durations, hysteresis,
escalation, resolution, no data, reminders, silences and acknowledgements."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.domain.sli.evaluator import Kind, Level, State, StateError, Status, acknowledge, observe, silence, tick, unsilence
from bot.domain.sli.pipeline import MANDATORY, Pipeline, PipelineError, Rule, Sli, apply_override, span

T0 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
PIPELINE = Pipeline("orders-enrich", "orders-team", sla=timedelta(minutes=10), checkpoint_interval=timedelta(minutes=1))
RULES = PIPELINE.rules()


def feed(rule: Rule, values: list[tuple[float, float]], state: State | None = None) -> tuple[State, list[tuple[float, Kind, Level]]]:
    """Samples at (seconds after T0, value); the events as (seconds, kind, level)."""
    state = state or State()
    seen = []
    for seconds, value in values:
        at = T0 + timedelta(seconds=seconds)
        seen += [(seconds, e.kind, e.level) for e in observe(state, rule, at, value, pipeline="p", sli=rule.sli.value)
                 if e.kind is not Kind.UPDATED]
    return state, seen


def every(seconds: int, until: int, value: float, start: int = 0) -> list[tuple[float, float]]:
    return [(float(t), value) for t in range(start, until + 1, seconds)]


def test_source_lag_warns_after_one_minute_and_pages_after_five() -> None:
    state, events = feed(RULES[Sli.SOURCE_LAG], every(10, 400, 90.0))
    assert events == [(60, Kind.OPENED, Level.WARN), (300, Kind.ESCALATED, Level.PAGE)]
    assert state.status is Status.FIRING and state.episode is not None and state.episode.started_at == T0


def test_a_breach_shorter_than_the_sustained_duration_stays_pending_then_ok() -> None:
    state, events = feed(RULES[Sli.SOURCE_LAG], [*every(10, 50, 90.0), (60, 10.0)])
    assert events == []
    assert state.status is Status.OK
    state, _ = feed(RULES[Sli.SOURCE_LAG], every(10, 30, 90.0))
    assert state.status is Status.PENDING


def test_the_sustained_duration_is_inclusive_at_its_boundary() -> None:
    _, events = feed(RULES[Sli.SOURCE_LAG], [(0, 61.0), (59.999, 61.0)])
    assert events == []
    _, events = feed(RULES[Sli.SOURCE_LAG], [(0, 61.0), (60, 61.0)])
    assert events == [(60, Kind.OPENED, Level.WARN)]


def test_exactly_at_the_threshold_is_not_a_breach() -> None:
    _, events = feed(RULES[Sli.SOURCE_LAG], every(10, 600, 60.0))
    assert events == []


def test_a_value_hovering_at_the_threshold_does_not_flap() -> None:
    hovering = [(float(t), 61.0 if (t // 10) % 2 == 0 else 59.0) for t in range(0, 1200, 10)]
    state, events = feed(RULES[Sli.SOURCE_LAG], [*every(10, 120, 90.0), *[(t + 130, v) for t, v in hovering]])
    assert [k for _, k, _ in events] == [Kind.OPENED, Kind.ESCALATED]  # opened once, never resolved and reopened
    assert state.status is Status.FIRING


def test_resolves_after_the_value_is_clear_for_the_clear_duration() -> None:
    rule = RULES[Sli.SOURCE_LAG]
    state, events = feed(rule, [*every(10, 70, 90.0), *every(10, 200, 40.0, start=80)])
    assert events == [(60, Kind.OPENED, Level.WARN), (140, Kind.RESOLVED, Level.WARN)]
    assert state.status is Status.OK and state.episode is None


def test_freshness_is_judged_against_the_sla() -> None:
    rule = RULES[Sli.FRESHNESS]
    assert (rule.warn, rule.page) == (420.0, 600.0)
    _, events = feed(rule, [(0, 400.0), (10, 430.0), (20, 610.0)])
    assert events == [(10, Kind.OPENED, Level.WARN), (20, Kind.ESCALATED, Level.PAGE)]
    assert not Pipeline("p", "t").rules()[Sli.FRESHNESS].alerting  # no SLA, nothing to judge against


def test_commit_success_rate_breaches_below() -> None:
    rule = RULES[Sli.COMMIT_SUCCESS_RATE]
    _, events = feed(rule, [(0, 1.0), (10, 0.985), (20, 0.94)])
    assert events == [(10, Kind.OPENED, Level.WARN), (20, Kind.ESCALATED, Level.PAGE)]
    state, events = feed(rule, [(0, 0.98), (10, 0.992), (100, 0.992), (110, 0.999), (169, 0.999), (170, 0.999)])
    assert events == [(0, Kind.OPENED, Level.WARN), (170, Kind.RESOLVED, Level.WARN)]  # 0.992 sits in the band


def test_schema_error_rate_pages_above_one_percent_at_once() -> None:
    _, events = feed(RULES[Sli.SCHEMA_ERROR_RATE], [(0, 0.0), (10, 0.02)])
    assert events == [(10, Kind.OPENED, Level.PAGE)]


def test_dlq_volume_warns_when_growing_for_five_minutes_and_pages_above_a_thousand() -> None:
    rule = RULES[Sli.DLQ_VOLUME]
    growing = [(float(t), 10.0 + t) for t in range(0, 600, 30)]
    _, events = feed(rule, growing)
    assert events == [(360, Kind.OPENED, Level.WARN)]  # growth known from 60 s; five minutes of it at 360 s
    big = [(float(t), 2000.0 + t) for t in range(0, 600, 30)]
    _, events = feed(rule, big)
    assert events == [(360, Kind.OPENED, Level.PAGE)]
    steady = [(float(t), 5000.0) for t in range(0, 900, 30)]
    _, events = feed(rule, steady)
    assert events == []  # a big DLQ that does not grow is not an alert


def test_dlq_resolves_once_it_stops_growing() -> None:
    rule = RULES[Sli.DLQ_VOLUME]
    state, events = feed(rule, [*[(float(t), 10.0 + t) for t in range(0, 390, 30)], *[(float(t), 400.0) for t in range(390, 1000, 30)]])
    assert [k for _, k, _ in events] == [Kind.OPENED, Kind.RESOLVED]
    assert events[1][0] == 450 + 300  # clear from 450 s (one window after growth stopped), for five minutes


def test_checkpoint_duration_is_judged_against_the_interval() -> None:
    rule = RULES[Sli.CHECKPOINT_DURATION]
    _, events = feed(rule, [(0, 30.0), (10, 61.0), (20, 301.0)])
    assert events == [(10, Kind.OPENED, Level.WARN), (20, Kind.ESCALATED, Level.PAGE)]


def test_sink_commit_latency_warns_above_a_minute_and_pages_above_five() -> None:
    _, events = feed(RULES[Sli.SINK_COMMIT_LATENCY], [(0, 61.0), (10, 301.0)])
    assert events == [(0, Kind.OPENED, Level.WARN), (10, Kind.ESCALATED, Level.PAGE)]


def test_backlog_never_alerts() -> None:
    state, events = feed(RULES[Sli.BACKLOG], every(10, 600, 1e9))
    assert events == [] and state.last_value == 1e9


def test_old_samples_are_ignored_and_replaying_gives_the_same_episodes() -> None:
    samples = [*every(10, 70, 90.0), (30, 500.0), *every(10, 200, 40.0, start=80)]
    first, events = feed(RULES[Sli.SOURCE_LAG], samples)
    second, again = feed(RULES[Sli.SOURCE_LAG], samples)
    assert events == again
    assert first.as_json() == second.as_json()


def test_no_data_after_three_intervals_for_a_mandatory_sli_and_it_resolves_when_data_comes() -> None:
    rule = RULES[Sli.COMMIT_SUCCESS_RATE]
    state, _ = feed(rule, [(0, 1.0)])
    assert tick(state, rule, T0 + timedelta(minutes=3), interval=timedelta(minutes=1), mandatory=True) == []
    events = tick(state, rule, T0 + timedelta(minutes=3, seconds=1), interval=timedelta(minutes=1), mandatory=True)
    assert [e.kind for e in events] == [Kind.OPENED] and state.status is Status.NO_DATA
    assert state.episode is not None and state.episode.no_data
    assert tick(state, rule, T0 + timedelta(minutes=4), interval=timedelta(minutes=1), mandatory=True) == []  # once
    events = observe(state, rule, T0 + timedelta(minutes=5), 1.0)
    assert [e.kind for e in events] == [Kind.RESOLVED] and state.status is Status.OK
    optional = RULES[Sli.SINK_COMMIT_LATENCY]
    state, _ = feed(optional, [(0, 1.0)])
    assert tick(state, optional, T0 + timedelta(hours=1), interval=timedelta(minutes=1), mandatory=False) == []


def test_a_firing_alert_whose_samples_stop_without_no_data_is_said_unmeasured_once_and_measured_again() -> None:
    rule = RULES[Sli.FRESHNESS]  # not mandatory: its silence is no "no data"
    state, seen = feed(rule, every(30, 240, 1200.0))  # 20 minutes late, for four minutes: it pages
    assert (Kind.OPENED, Level.PAGE) in [(k, level) for _, k, level in seen] and state.episode is not None
    last = T0 + timedelta(seconds=240)
    minute = timedelta(minutes=1)
    assert tick(state, rule, last + 3 * minute, interval=minute, mandatory=False) == []  # three intervals: not yet
    [event] = tick(state, rule, last + 3 * minute + timedelta(seconds=1), interval=minute, mandatory=False)
    assert event.kind is Kind.UNMEASURED and event.value == 1200.0 and event.detail == last.isoformat()
    assert state.episode.unmeasured_since == last and state.status is Status.FIRING  # still firing: nothing says it is over
    assert tick(state, rule, last + 10 * minute, interval=minute, mandatory=False) == []  # said once
    assert State.from_json(state.as_json()).episode.unmeasured_since == last  # type: ignore[union-attr]
    events = observe(state, rule, last + 11 * minute, 1300.0)
    assert [e.kind for e in events] == [Kind.UPDATED, Kind.REMEASURED] or [e.kind for e in events] == [Kind.REMEASURED]
    assert state.episode.unmeasured_since is None
    assert [e.kind for e in tick(state, rule, last + 14 * minute + timedelta(seconds=1), interval=minute, mandatory=False)] == [
        Kind.UNMEASURED]  # and again, when they stop again
    events = [e for i in range(12) for e in observe(state, rule, last + (15 + i / 2) * minute, 10.0)]
    assert [e.kind for e in events if e.kind is not Kind.UPDATED] == [Kind.REMEASURED, Kind.RESOLVED]  # clear for five minutes


def test_a_mandatory_alert_whose_no_data_waits_for_the_bots_own_feed_is_said_unmeasured() -> None:
    rule = RULES[Sli.COMMIT_SUCCESS_RATE]
    state, _ = feed(rule, every(30, 600, 0.5))
    assert state.status is Status.FIRING
    later = T0 + timedelta(minutes=20)
    events = tick(state, rule, later, interval=timedelta(minutes=1), mandatory=True, hold_no_data=True)
    assert [e.kind for e in events] == [Kind.UNMEASURED] and state.status is Status.FIRING


def test_reminders_repeat_while_firing_and_stop_once_acknowledged() -> None:
    rule = RULES[Sli.SCHEMA_ERROR_RATE]
    state, _ = feed(rule, [(0, 0.5)])
    hour = timedelta(hours=1)
    assert tick(state, rule, T0 + hour - timedelta(seconds=1), interval=hour, mandatory=False) == []
    assert [e.kind for e in tick(state, rule, T0 + hour, interval=hour, mandatory=False)] == [Kind.REMINDER]
    assert tick(state, rule, T0 + hour + timedelta(minutes=30), interval=hour, mandatory=False) == []
    event = acknowledge(state, "U0000ALICE", T0 + hour + timedelta(minutes=31))
    assert event.kind is Kind.ACKNOWLEDGED and event.actor == "U0000ALICE"
    assert [e.kind for e in tick(state, rule, T0 + 5 * hour, interval=hour, mandatory=False)] == [Kind.UNMEASURED]  # no reminder
    with pytest.raises(StateError, match="already acknowledged"):
        acknowledge(state, "U00000BOB", T0 + 5 * hour)
    with pytest.raises(StateError, match="nothing is firing"):
        acknowledge(State(), "U00000BOB", T0)


def test_a_silence_hides_events_stops_reminders_and_expires_with_a_notice() -> None:
    rule = RULES[Sli.SCHEMA_ERROR_RATE]
    state = State()
    assert silence(state, T0 + timedelta(hours=4), "U0000ALICE", "deploying", T0) is None  # before anything fires
    events = observe(state, rule, T0 + timedelta(minutes=1), 0.5)
    assert [(e.kind, e.silenced) for e in events] == [(Kind.OPENED, True)]
    assert [(e.kind, e.silenced) for e in tick(state, rule, T0 + timedelta(hours=3), interval=timedelta(minutes=1), mandatory=False)] == [
        (Kind.UNMEASURED, True)]  # no reminder: recorded, not announced
    events = tick(state, rule, T0 + timedelta(hours=4), interval=timedelta(minutes=1), mandatory=False)
    assert [(e.kind, e.detail) for e in events] == [(Kind.UNSILENCED, "expired")]
    assert not state.silenced(T0 + timedelta(hours=4))


def test_unsilence_early_and_refusals() -> None:
    rule = RULES[Sli.SCHEMA_ERROR_RATE]
    state, _ = feed(rule, [(0, 0.5)])
    event = silence(state, T0 + timedelta(hours=1), "U0000ALICE", "known", T0)
    assert event is not None and event.kind is Kind.SILENCED
    assert unsilence(state, "U0000ALICE", T0 + timedelta(minutes=5)) is not None
    with pytest.raises(StateError):
        unsilence(state, "U0000ALICE", T0 + timedelta(minutes=6))
    with pytest.raises(StateError):
        silence(state, T0, "U0000ALICE", "", T0 + timedelta(minutes=1))


def test_the_state_survives_a_round_trip_through_json() -> None:
    state, _ = feed(RULES[Sli.DLQ_VOLUME], [(float(t), 10.0 + t) for t in range(0, 400, 30)])
    acknowledge(state, "U0000ALICE", T0 + timedelta(minutes=7))
    assert State.from_json(state.as_json()).as_json() == state.as_json()


def test_overrides_and_their_refusals() -> None:
    rule = apply_override(RULES[Sli.SOURCE_LAG], {"warn": 120, "page": 600, "for": "2m", "clear_for": "30s"})
    assert (rule.warn, rule.page, rule.warn_for, rule.page_for, rule.clear_for) == (120, 600, timedelta(minutes=2), timedelta(minutes=2),
                                                                                   timedelta(seconds=30))
    assert not apply_override(RULES[Sli.SINK_COMMIT_LATENCY], "disabled").alerting
    for sli in MANDATORY:
        with pytest.raises(PipelineError, match="mandatory"):
            apply_override(RULES[sli], "disabled")
    with pytest.raises(PipelineError, match="unknown setting"):
        apply_override(RULES[Sli.SOURCE_LAG], {"warning": 1})
    with pytest.raises(PipelineError, match="number"):
        apply_override(RULES[Sli.SOURCE_LAG], {"warn": float("nan")})
    with pytest.raises(PipelineError, match="duration"):
        span("five minutes")
    assert span("1h30m") == timedelta(minutes=90) and span(45) == timedelta(seconds=45)
