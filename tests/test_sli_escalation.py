"""Escalation: a page nobody acknowledges goes on to the team's escalation chain, step by step, then to the global oncall."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.domain.sli.escalation import GLOBAL, chain, escalate
from bot.domain.sli.evaluator import Episode, Kind, Level, State, Status
from bot.slack import ids
from tests.conftest import SlackHarness
from tests.test_sli_alerts import ALICE, BOB, CAROL, catalog, load, read, sample, send, the_alert

T = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def test_each_step_waits_its_delay_and_an_acknowledgement_or_a_hold_stops_the_chain() -> None:
    state = State(Status.FIRING, episode=Episode("fp", T, Level.PAGE), last_value=0.5)
    steps = chain(["S0ANALYTICS", "U0000CAROL"], True)
    assert steps == ["S0ANALYTICS", "U0000CAROL", GLOBAL]
    after = timedelta(minutes=15)
    assert escalate(state, T, after, steps) == []  # first seen waiting: the clock starts
    assert escalate(state, T + timedelta(minutes=14), after, steps) == []
    [first] = escalate(state, T + timedelta(minutes=15), after, steps)
    assert first.kind is Kind.HANDED_ON and first.detail == "S0ANALYTICS"
    assert escalate(state, T + timedelta(minutes=29), after, steps) == []
    assert [e.detail for e in escalate(state, T + timedelta(minutes=30), after, steps)] == ["U0000CAROL"]
    assert [e.detail for e in escalate(state, T + timedelta(minutes=45), after, steps)] == [GLOBAL]
    assert escalate(state, T + timedelta(hours=5), after, steps) == []  # the chain is done
    acked = State(Status.FIRING, episode=Episode("fp", T, Level.PAGE, acked_by=ALICE, escalated_at=T))
    assert escalate(acked, T + timedelta(hours=1), after, steps) == []
    warn = State(Status.FIRING, episode=Episode("fp", T, Level.WARN, escalated_at=T))
    assert escalate(warn, T + timedelta(hours=1), after, steps) == []
    held = State(Status.FIRING, episode=Episode("fp", T, Level.PAGE, held="caused upstream by enrich", escalated_at=T))
    assert escalate(held, T + timedelta(hours=1), after, steps) == []


def escalating(slack: SlackHarness) -> dict[str, Any]:
    data = catalog(slack)
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    data["teams"]["orders-team"].update({"escalation": [groups["analytics-team"], CAROL], "escalate_after": "10m"})
    data["oncall"] = {"members": [BOB]}
    return data


def dms(slack: SlackHarness, user: str) -> list[str]:
    return [read(m) for m in slack.ws.channel_messages(slack.ws.open_dm(user)) if "You are oncall" in m.text]


async def test_an_unacknowledged_page_escalates_twice_then_to_the_global_oncall_and_stops_when_acknowledged(slack: SlackHarness) -> None:
    await load(slack, escalating(slack))
    await send(slack, [sample("schema_error_rate", 0.05)])
    message = await the_alert(slack, lambda t: "PAGE" in t)
    await slack.bot.idle()
    assert len(dms(slack, ALICE)) == 1 and dms(slack, BOB) == [] and dms(slack, CAROL) == []
    await slack.bot.sli.sweep()  # the page is seen waiting
    for minutes, who in [(10, {BOB, CAROL}), (20, {CAROL}), (30, {BOB})]:  # the analytics-team group, carol, the global oncall
        slack.clock.advance(minutes=5)
        await send(slack, [sample("schema_error_rate", 0.05, minutes - 5)])
        await slack.bot.sli.sweep()
        slack.clock.advance(minutes=5)
        await send(slack, [sample("schema_error_rate", 0.05, minutes)])
        before = {u: len(dms(slack, u)) for u in (BOB, CAROL)}
        await slack.bot.sli.sweep()
        await slack.bot.idle()
        got = {u for u in (BOB, CAROL) if len(dms(slack, u)) > before[u]}
        assert got == who, (minutes, got)
        assert all("escalated to you" in dms(slack, u)[-1] for u in who)
    thread = "\n".join(read(m) for m in slack.ws.channel_messages(message.channel, thread_ts=message.ts))
    assert "escalated to <!subteam^" in thread and f"escalated to <@{CAROL}>" in thread and "escalated to the global oncall" in thread
    assert "escalated 3 steps up its team's chain" in read(await the_alert(slack, lambda t: "escalated 3 steps" in t))

    await slack.driver.click(slack.ws.find_message(message.channel, message.ts), ids.SLI_ACK, user=ALICE)  # type: ignore[arg-type]
    await the_alert(slack, lambda t: "Acknowledged by" in t)
    slack.clock.advance(hours=2)
    before = {u: len(dms(slack, u)) for u in (ALICE, BOB, CAROL)}
    await send(slack, [sample("schema_error_rate", 0.05, 150)])
    await slack.bot.sli.sweep()
    await slack.bot.idle()
    assert {u: len(dms(slack, u)) for u in (ALICE, BOB, CAROL)} == before  # acknowledged: nobody is paged again


async def test_a_bad_escalation_is_named_in_the_catalog(slack: SlackHarness) -> None:
    from bot.domain.lineage.catalog import read_catalog

    data = escalating(slack)
    data["teams"]["orders-team"].update({"escalation": ["platform-leads"], "escalate_after": "10s"})
    _, problems = read_catalog(data, lambda _: None)  # type: ignore[arg-type, return-value]
    assert any("teams.orders-team.escalation" in str(p) and "user group ids" in str(p) for p in problems), problems
    assert any("teams.orders-team.escalate_after" in str(p) and "at least 1m" in str(p) for p in problems), problems


async def test_oncall_shows_who_is_on_call_now_and_each_teams_chain(slack: SlackHarness) -> None:
    await load(slack, escalating(slack))
    answer = await slack.driver.command("/oncall", user=CAROL, channel="orders-pipeline")
    text = read(await slack.ws.wait_for(lambda: next((m for m in slack.ws.ephemerals_for(CAROL) if "Who is on call now" in m.text), None)))
    assert answer.status == 200
    assert f"*orders-team*: <@{ALICE}> (the catalog)" in text and "unacknowledged pages go on every 10 min to: <!subteam^" in text
    assert f"→ <@{CAROL}> → the global oncall" in text and f"*Global oncall*: <@{BOB}>" in text
    assert "*analytics-team*" in text and "go on every 15 min to: the global oncall" in text  # no chain of its own: the default delay
    await slack.driver.command("/oncall nobody", user=CAROL, channel="orders-pipeline")
    refused = await slack.ws.wait_for(lambda: next((m for m in slack.ws.ephemerals_for(CAROL) if "There is no team nobody" in m.text), None))
    assert "orders-team" in refused.text
