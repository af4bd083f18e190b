"""Root causes through lineage: downstream lag and freshness folded under the upstream pipeline that pages, shown and
not paged; paging on their own once the root cause recovered and they still breach."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.domain.calendar import Scope
from bot.domain.sli.evaluator import Episode, Event, Kind, Level, State, Status
from bot.domain.sli.folding import Firing, Hold, expected, folds, hold, release, upstream_map
from bot.domain.sli.pipeline import Mode as RuleMode
from bot.domain.sli.pipeline import Pipeline, Rule, Sli
from tests.conftest import SlackHarness
from tests.test_sli_alerts import ALICE, BOB, load, read, sample, send, the_alert

T = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def firing(pipeline: str, sli: str, minutes: int = 0, *, no_data: bool = False) -> Firing:
    return Firing(f"{pipeline}/{sli}", pipeline, sli, "page", no_data, T + timedelta(minutes=minutes))


def test_the_upstream_map_follows_datasets_through_jobs() -> None:
    pipelines = {name: Pipeline(name, "team") for name in ("enrich", "agg", "ads", "other")}
    edges = [("orders-value", "dwd_orders"), ("dwd_orders", "dws_agg"), ("dws_agg", "ads_report")]
    outputs = {"enrich": ["dwd_orders"], "agg": ["dws_agg"], "ads": ["ads_report"], "other": ["elsewhere"]}
    inputs = {"enrich": ["orders-value"], "agg": ["dwd_orders"], "ads": ["dws_agg"], "other": ["dwd_orders"]}
    upstream = upstream_map(pipelines, edges, outputs, inputs)
    assert upstream == {"enrich": frozenset(), "agg": frozenset({"enrich"}), "ads": frozenset({"enrich", "agg"}),
                        "other": frozenset({"enrich"})}


def test_folding_picks_the_most_upstream_cause_and_only_folds_lag_and_freshness() -> None:
    upstream = {"enrich": frozenset(), "agg": frozenset({"enrich"}), "ads": frozenset({"enrich", "agg"})}
    root, middle = firing("enrich", "source_lag"), firing("agg", "dlq_volume", 1)
    late, lagging, errors = firing("ads", "freshness", 2), firing("agg", "source_lag", 2), firing("ads", "schema_error_rate", 2)
    found = folds([root, middle, late, lagging, errors], upstream)
    assert found == {late.fingerprint: root, lagging.fingerprint: root}  # schema errors are the pipeline's own; agg's DLQ is not folded
    assert folds([middle, late], upstream) == {late.fingerprint: middle}
    assert folds([firing("enrich", "freshness"), late], upstream) == {}  # freshness is not a cause
    silent = firing("enrich", "commit_success_rate", 5, no_data=True)
    assert folds([silent, late], upstream) == {late.fingerprint: silent}


def test_a_held_page_is_released_only_after_its_sustained_duration_without_the_root() -> None:
    rule = Rule(Sli.FRESHNESS, RuleMode.ABOVE, 420, 600, page_for=timedelta(minutes=5), clear=360)
    state = State(Status.FIRING, episode=Episode("fp", T, Level.PAGE), last_value=900.0)
    opened = [Event(Kind.OPENED, "fp", T, Level.PAGE, 900.0), Event(Kind.UPDATED, "fp", T, Level.PAGE, 950.0)]
    upstream = Hold("caused upstream by enrich")
    held = hold(opened, state, upstream)
    assert [e.held for e in held] == ["caused upstream by enrich", None] and state.episode is not None
    assert state.episode.held == "caused upstream by enrich"
    assert release(state, rule, T + timedelta(minutes=1), upstream) == []  # the root still fires
    assert release(state, rule, T + timedelta(minutes=2), None) == []  # the root is gone: the clock starts
    assert release(state, rule, T + timedelta(minutes=6), upstream) == []  # back: the clock stops
    assert release(state, rule, T + timedelta(minutes=7), None) == []
    assert release(state, rule, T + timedelta(minutes=11), None) == []
    [paged] = release(state, rule, T + timedelta(minutes=12), None)
    assert paged.kind is Kind.UNFOLDED and paged.level is Level.PAGE and "the root cause is over (caused upstream by enrich)" in paged.detail
    assert state.episode.held is None and release(state, rule, T + timedelta(minutes=20), None) == []


def test_an_expected_breach_pages_as_soon_as_it_outlives_its_window() -> None:
    rule = Rule(Sli.SOURCE_LAG, RuleMode.ABOVE, 60, 60, page_for=timedelta(minutes=5), clear=45)
    state = State(Status.FIRING, episode=Episode("fp", T, Level.PAGE), last_value=900.0)
    window = expected("Backfill enrich on orders (#3)", 12, "backfill", T + timedelta(hours=1))
    assert window.reason == 'expected: backfill #12 "Backfill enrich on orders (#3)" until 2026-12-01 10:00 UTC'
    [opened] = hold([Event(Kind.OPENED, "fp", T, Level.PAGE, 900.0)], state, window)
    assert opened.held == window.reason
    assert release(state, rule, T + timedelta(minutes=30), window) == []
    [paged] = release(state, rule, T + timedelta(hours=1), None)  # the window is over and it still breaches: at once
    assert paged.kind is Kind.UNFOLDED and "it outlived its window (expected: backfill #12" in paged.detail


FRESH = {"warn_for": "0s", "page_for": "5m", "clear_for": "0s"}


def chain(slack: SlackHarness) -> dict[str, Any]:
    """enrich-orders (orders-team) writes dwd_orders; dwd-agg (analytics-team) reads it into dws_agg; ads-daily reads that."""
    return {
        "teams": {"orders-team": {"members": [ALICE], "oncall": [ALICE], "channel": "#orders-pipeline"},
                  "analytics-team": {"members": [BOB], "oncall": [BOB], "channel": "#orders-pipeline"}},
        "subjects": {"orders-value": {"owner": "orders-team", "channel": "#orders-pipeline", "topic": "orders"}},
        "datasets": [{"name": "dwd_orders", "namespace": "iceberg://lake", "owner": "orders-team", "fields": ["id"]},
                     {"name": "dws_agg", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["id"]},
                     {"name": "ads_report", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["id"]}],
        "jobs": [{"name": "enrich", "owner": "orders-team", "inputs": ["orders-value"], "outputs": ["dwd_orders"]},
                 {"name": "agg", "owner": "analytics-team", "inputs": ["dwd_orders"], "outputs": ["dws_agg"]},
                 {"name": "ads", "owner": "analytics-team", "inputs": ["dws_agg"], "outputs": ["ads_report"]}],
        "pipelines": [
            {"name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline", "jobs": ["enrich"], "sink": "dwd_orders",
             "source": {"topics": ["orders"], "group": "enrich"},
             "interval": "1m", "reports": ["source_lag"], "slis": {"source_lag": {"for": "0s", "clear_for": "0s"}}},
            {"name": "dwd-agg", "owner": "analytics-team", "channel": "#orders-pipeline", "jobs": ["agg"], "sink": "dws_agg", "sla": "10m",
             "interval": "1m", "reports": ["freshness"], "slis": {"freshness": FRESH}},
            {"name": "ads-daily", "owner": "analytics-team", "channel": "#orders-pipeline", "jobs": ["ads"], "sla": "10m",
             "interval": "1m", "reports": ["freshness"], "slis": {"freshness": FRESH}}]}


def paged(slack: SlackHarness, user: str) -> list[str]:
    return [read(m) for m in slack.ws.channel_messages(slack.ws.open_dm(user)) if "You are oncall" in m.text]


async def test_downstream_breaches_fold_under_the_upstream_page_and_page_alone_after_it_recovers(slack: SlackHarness) -> None:
    await load(slack, chain(slack))
    late = [sample("freshness", 900, m, pipeline=p) for m in (0, 5) for p in ("dwd-agg", "ads-daily")]
    assert (await send(slack, [sample("source_lag", 900, 0, pipeline="enrich-orders"), *late]))[0] == 200
    root = await the_alert(slack, lambda t: "enrich-orders" in t and "Also late downstream: ads-daily, dwd-agg" in t)
    assert "PAGE" in read(root)
    for name in ("dwd-agg", "ads-daily"):
        folded = await the_alert(slack, lambda t, name=name: f"*{name}*" in t and "PAGE" in t)
        assert "Caused upstream by enrich-orders" in read(folded)
    await slack.bot.idle()
    assert len(paged(slack, ALICE)) == 1 and "enrich-orders" in paged(slack, ALICE)[0]  # one page: the root cause
    assert paged(slack, BOB) == []  # the two folded breaches page nobody
    status = {(r["pipeline"], r["sli"]): r["state"] for r in await slack.bot.sli.status()}
    assert "caused upstream by enrich-orders: not paged" in status[("dwd-agg", "freshness")]
    assert "also late downstream: ads-daily, dwd-agg" in status[("enrich-orders", "source_lag")]

    # The upstream recovers and ads-daily with it; dwd-agg stays late: it pages on its own after its 5 minutes
    await send(slack, [sample("source_lag", 0, 6, pipeline="enrich-orders"), sample("freshness", 0, 6, pipeline="ads-daily"),
                       sample("freshness", 900, 6, pipeline="dwd-agg")])
    alone = await the_alert(slack, lambda t: "*dwd-agg*" in t and "Caused upstream" not in t and "PAGE" in t)
    assert "Also late downstream" not in read(alone)
    for minute in range(1, 6):
        slack.clock.advance(minutes=1)
        await send(slack, [sample("source_lag", 0, 6 + minute, pipeline="enrich-orders"), sample("freshness", 900, 6 + minute, pipeline="dwd-agg")])
        await slack.bot.sli.sweep()
        await slack.bot.idle()
        assert (paged(slack, BOB) != []) == (minute == 5), minute  # on the sweep five minutes after the root cause went away
    [page] = paged(slack, BOB)
    assert "dwd-agg" in page and "ads-daily" not in page
    thread = "\n".join(read(m) for m in slack.ws.channel_messages(alone.channel, thread_ts=alone.ts))
    assert "not paged: caused upstream by enrich-orders" in thread and "pages on its own: the root cause is over" in thread


async def test_a_booked_maintenance_makes_lag_expected_and_it_pages_when_it_outlives_the_window(slack: SlackHarness) -> None:
    await load(slack, chain(slack))
    number = await slack.bot.calendar.add(kind="maintenance", title="enrich: new parallelism", start=slack.clock.now,
                                          end=slack.clock.now + timedelta(minutes=30), owner="orders-team", booked_by=ALICE,
                                          scope=Scope(jobs=frozenset({"enrich"})), surface="api")
    assert (await send(slack, [sample("source_lag", 900, 0, pipeline="enrich-orders"),
                               *[sample("freshness", 900, m, pipeline="dwd-agg") for m in (0, 5)]]))[0] == 200
    held = await the_alert(slack, lambda t: "*enrich-orders*" in t and "PAGE" in t)
    assert f"Expected: maintenance #{number} \"enrich: new parallelism\" until 2026-12-01 09:30 UTC" in read(held)
    assert "Caused upstream by enrich-orders" in read(await the_alert(slack, lambda t: "*dwd-agg*" in t and "PAGE" in t))
    await slack.bot.idle()
    assert paged(slack, ALICE) == [] and paged(slack, BOB) == []  # expected, and folded under what is expected: nobody paged
    status = {(r["pipeline"], r["sli"]): r["state"] for r in await slack.bot.sli.status()}
    assert f"expected: maintenance #{number}" in status[("enrich-orders", "source_lag")]

    for minute in range(6, 31, 3):  # the lag stays through the window; at its end it pages
        slack.clock.advance(minutes=minute - slack.clock.now.minute)
        await send(slack, [sample("source_lag", 900, minute, pipeline="enrich-orders"), sample("freshness", 900, minute, pipeline="dwd-agg")])
        await slack.bot.sli.sweep()
        await slack.bot.idle()
        assert (paged(slack, ALICE) != []) == (minute >= 30), minute
    [page] = paged(slack, ALICE)
    assert "enrich-orders" in page and paged(slack, BOB) == []  # dwd-agg stays folded under it
    thread = "\n".join(read(m) for m in slack.ws.channel_messages(held.channel, thread_ts=held.ts))
    assert "pages on its own: it outlived its window" in thread


async def test_a_backfill_booked_on_a_pipelines_topic_expects_its_lag_and_a_cancelled_one_does_not(slack: SlackHarness) -> None:
    await load(slack, chain(slack))
    window = {"start": slack.clock.now - timedelta(minutes=1), "end": slack.clock.now + timedelta(hours=1), "owner": "orders-team",
              "booked_by": ALICE, "surface": "api"}
    number = await slack.bot.calendar.add(kind="backfill", title="Backfill enrich on orders", scope=Scope(datasets=frozenset({"orders"})), **window)
    await slack.bot.calendar.add(kind="release", title="not an expected breach", scope=Scope(jobs=frozenset({"agg"})), **window)
    folding = await slack.bot.sli.folding()
    # the topic's readers, and everything downstream of it through lineage (what the calendar's conflicts use)
    assert set(folding.expected) == {"enrich-orders", "dwd-agg", "ads-daily"}
    assert folding.expected["enrich-orders"].reason.startswith(f"expected: backfill #{number} ")
    await slack.bot.calendar.change(number, ALICE)  # cancelled
    assert (await slack.bot.sli.folding()).expected == {}
