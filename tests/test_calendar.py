"""The change calendar: windows at their edges, freezes through DST in two zones, conflicts through lineage,
proposals booking their windows, and the CLI and API contract."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import aiohttp
import pytest
import yaml

from bot.domain.calendar import CalendarError, Entry, Freeze, Kind, Scope, Status, Window, conflicts
from bot.domain.lineage.catalog import read_catalog
from tests.conftest import API_TOKEN, SlackHarness
from tests.test_proposals_slack import ALICE, BOB, V1, retyped

BERLIN, NEW_YORK = ZoneInfo("Europe/Berlin"), ZoneInfo("America/New_York")


def at(day: int, hour: int = 0, minute: int = 0, month: int = 12) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


def entry(number: int, start: datetime, end: datetime, **scope: Any) -> Entry:
    return Entry(number, Kind.MAINTENANCE, f"entry {number}", Window(start, end), Status.CONFIRMED, "orders-team",
                 Scope(**{k: frozenset(v) for k, v in scope.items()}))


@pytest.mark.parametrize("first, second, overlap", [
    ((at(3, 2), at(3, 4)), (at(3, 4), at(3, 6)), False),  # touching: one ends when the next starts
    ((at(3, 2), at(3, 4)), (at(3, 3), at(3, 5)), True),
    ((at(3, 2), at(3, 2)), (at(3, 2), at(3, 4)), True),  # an instant at the start of a window is inside it
    ((at(3, 4), at(3, 4)), (at(3, 2), at(3, 4)), False),  # ... at its end is not
    ((at(3, 2), at(3, 2)), (at(3, 2), at(3, 2)), True),
    ((at(1), at(5)), (at(3, 12), at(3, 13)), True),  # multi-day
])
def test_windows_overlap_at_the_edges(first: tuple[datetime, datetime], second: tuple[datetime, datetime], overlap: bool) -> None:
    assert Window(*first).overlaps(Window(*second)) is overlap
    assert Window(*second).overlaps(Window(*first)) is overlap
    found = conflicts([entry(1, *first, subjects=["orders-value"]), entry(2, *second, subjects=["orders-value"])], [], {})
    assert bool(found) is overlap


@pytest.mark.parametrize("local_start, local_end, hours", [
    (datetime(2026, 3, 29, 1, 0, tzinfo=BERLIN), datetime(2026, 3, 29, 4, 0, tzinfo=BERLIN), 2),  # spring forward: 02:00 is skipped
    (datetime(2026, 10, 25, 1, 0, tzinfo=BERLIN), datetime(2026, 10, 25, 4, 0, tzinfo=BERLIN), 4),  # fall back: 02:00-03:00 twice
])
def test_windows_across_a_dst_change_keep_their_real_length(local_start: datetime, local_end: datetime, hours: int) -> None:
    window = Window(local_start.astimezone(UTC), local_end.astimezone(UTC))
    assert window.end - window.start == timedelta(hours=hours)
    middle = window.start + (window.end - window.start) / 2
    assert window.overlaps(Window(middle, middle + timedelta(minutes=1)))


@pytest.mark.parametrize("tz, winter_utc_hour, summer_utc_hour", [("Europe/Berlin", 17, 16), ("America/New_York", 23, 22)])
def test_a_recurring_freeze_follows_its_zone_through_a_year(tz: str, winter_utc_hour: int, summer_utc_hour: int) -> None:
    freeze = Freeze("weekend", "no changes over the weekend", cron="0 18 * * 5", duration=timedelta(hours=62), timezone=tz)
    windows = freeze.occurrences(at(1, month=1), datetime(2027, 1, 1, tzinfo=UTC))
    assert len(windows) == 52
    for window in windows:
        local = window.start.astimezone(ZoneInfo(tz))
        assert (local.weekday(), local.hour, local.minute) == (4, 18, 0)  # every Friday at 18:00 local time
        assert window.end - window.start == timedelta(hours=62)
    hours = {w.start.hour for w in windows}
    assert hours == {winter_utc_hour, summer_utc_hour}
    assert windows[0].start.hour == winter_utc_hour and windows[26].start.hour == summer_utc_hour


def test_an_entry_inside_a_freeze_conflicts_and_a_touching_one_does_not() -> None:
    freeze = Freeze("xmas", "holidays", start=at(24), end=at(27))
    inside, touching = entry(1, at(26, 10), at(26, 11), jobs=["daily-sales"]), entry(2, at(27), at(27, 1))
    found = conflicts([inside, touching], [freeze], {})
    assert [(c.entry, c.with_) for c in found] == [(1, "freeze:xmas")] and "holidays" in found[0].reason
    scoped = Freeze("orders", scope=Scope(subjects=frozenset({"orders-value"})), start=at(24), end=at(27))
    assert conflicts([inside], [scoped], {}) == []


@pytest.mark.parametrize("make, message", [
    (lambda: Window(at(3, 4), at(3, 2)), "ends (2026-12-03 02:00 UTC) before it starts"),
    (lambda: Freeze("f", cron="0 18 * * 8", duration=timedelta(hours=1)), "is not a five-field cron expression"),
    (lambda: Freeze("f", cron="0 18 * * 5", duration=timedelta(hours=1), timezone="Mars/Olympus"), "unknown time zone 'Mars/Olympus'"),
    (lambda: Freeze("f", cron="0 18 * * 5"), "needs a positive duration"),
    (lambda: Freeze("f"), "give cron, duration and timezone, or start and end"),
    (lambda: Freeze("n" * 101, start=at(24), end=at(27)), "a freeze's name is 1 to 100 characters (101 given)"),  # as it is stored
    (lambda: Freeze(" ", start=at(24), end=at(27)), "a freeze's name is 1 to 100 characters (1 given)"),
    (lambda: Freeze("f", cron="0 18 * * 5" + " " * 95, duration=timedelta(hours=1)), "a cron expression of at most 100 characters (105"),
])
def test_bad_windows_and_freezes_are_refused_with_the_reason(make: Any, message: str) -> None:
    with pytest.raises(CalendarError) as refused:
        make()
    assert message in str(refused.value)


def test_the_catalog_declares_freezes_and_names_what_is_wrong() -> None:
    base: dict[str, Any] = {"teams": {"orders-team": {"members": [ALICE]}}, "subjects": {"orders-value": {"owner": "orders-team"}}}
    good, problems = read_catalog({**base, "freezes": [
        {"name": "weekend", "cron": "0 18 * * 5", "duration": "62h", "timezone": "Europe/Berlin", "reason": "no weekend changes"},
        {"name": "xmas", "start": "2026-12-24T00:00:00Z", "end": "2026-12-27T00:00:00Z", "scope": {"teams": ["orders-team"]}}]},
        lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == [] and [f.name for f in good.freezes] == ["weekend", "xmas"] and good.freezes[0].duration == timedelta(hours=62)
    _, problems = read_catalog({**base, "freezes": [
        {"name": "a", "cron": "61 * * * *", "duration": "1h"}, {"name": "b", "cron": "0 1 * * *", "duration": "soon"},
        {"name": "c", "start": "2026-12-27T00:00:00Z", "end": "2026-12-24T00:00:00Z"}, {"name": "d", "start": "x", "end": "y"},
        {"name": "e", "cron": "0 1 * * *", "duration": "1h", "timezone": "Nowhere/Land"},
        {"name": "f", "start": "2026-12-24T00:00:00Z", "end": "2026-12-25T00:00:00Z", "scope": {"subjects": ["ghost"]}}]},
        lambda _: None)  # type: ignore[arg-type, return-value]
    text = "\n".join(str(p) for p in problems)
    for expected in ("freezes[0] (a)", "five-field cron", "freezes[1] (b)", "like 62h", "freezes[2] (c)", "before it starts",
                     "freezes[3] (d)", "ISO 8601", "freezes[4] (e)", "Nowhere/Land", "unknown subject 'ghost'"):
        assert expected in text, expected


async def three_hops(slack: SlackHarness, freezes: list[dict[str, Any]] | None = None) -> None:
    """orders-value -> enrich -> dwd_orders -> daily -> ads_daily -> export -> report (and the ``freezes``)."""
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    hop = [("orders-value", "enrich", "dwd_orders"), ("dwd_orders", "daily", "ads_daily"), ("ads_daily", "export", "report")]
    catalog, problems = read_catalog({
        "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE]},
                  "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB], "oncall": [BOB]}},
        "subjects": {"orders-value": {"owner": "orders-team"}},
        "datasets": [{"name": out, "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["amount"]} for _, _, out in hop],
        "jobs": [{"name": job, "owner": "analytics-team", "inputs": [source], "outputs": [out],
                  "mappings": {f"{out}.amount": [f"{source}.{'price' if source == 'orders-value' else 'amount'}"]}} for source, job, out in hop],
        "freezes": freezes or []},
        lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(catalog)
    from bot.domain.avro.parse import parse

    await slack.bot.registry.record("orders-value", parse(V1))


async def api(slack: SlackHarness, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {API_TOKEN}"}) as http, \
            http.request(method, f"{slack.bot.url}{path}", json=body) as response:
        return response.status, await response.json()


async def test_windows_conflict_through_a_three_hop_downstream(slack: SlackHarness) -> None:
    await three_hops(slack)
    status, export = await api(slack, "POST", "/api/v1/calendar", {
        "kind": "job_upgrade", "title": "export v2", "start": "2026-12-03T02:00:00Z", "end": "2026-12-03T04:00:00Z",
        "owner": "analytics-team", "booked_by": BOB, "scope": {"jobs": ["export"]}})
    assert status == 201 and export["conflicts"] == [] and export["source"] is None
    status, later = await api(slack, "POST", "/api/v1/calendar", {
        "kind": "maintenance", "title": "topic compaction", "start": "2026-12-03T04:00:00Z", "end": "2026-12-03T05:00:00Z",
        "owner": "orders-team", "booked_by": ALICE, "scope": {"subjects": ["orders-value"]}})
    assert status == 201 and later["conflicts"] == []  # touching windows
    status, upstream = await api(slack, "POST", "/api/v1/calendar", {
        "kind": "maintenance", "title": "broker upgrade", "start": "2026-12-03T03:00:00Z", "end": "2026-12-03T03:30:00Z",
        "owner": "orders-team", "booked_by": ALICE, "scope": {"subjects": ["orders-value"]}})
    assert status == 201
    [conflict] = upstream["conflicts"]
    assert conflict["with"] == export["id"] and "common downstream" in conflict["reason"] and "job export" in conflict["reason"]
    status, listed = await api(slack, "GET", "/api/v1/calendar?from=2026-12-03T00:00:00Z&to=2026-12-04T00:00:00Z")
    assert status == 200 and [e["id"] for e in listed] == [export["id"], upstream["id"], later["id"]]
    assert [c["with"] for c in listed[0]["conflicts"]] == [upstream["id"]]
    status, refused = await api(slack, "GET", "/api/v1/calendar?start=2026-12-03T00:00:00Z")  # not silently the default window
    assert (status, refused["error"]) == (400, "/api/v1/calendar does not take the query parameter start (it takes from, to); nothing changed")
    status, refused = await api(slack, "GET", "/api/v1/proposals/1?verbose=1")
    assert (status, refused["error"]) == (400, "/api/v1/proposals/1 does not take the query parameter verbose (it takes none); nothing changed")


async def test_entries_conflict_on_their_own_datasets_not_only_below_them(slack: SlackHarness) -> None:
    """Two jobs writing one dataset, and a job with a maintenance of its output, conflict; touching windows do not."""
    catalog, problems = read_catalog({
        "teams": {"orders-team": {"members": [ALICE]}, "analytics-team": {"members": [BOB]}},
        "subjects": {"orders-value": {"owner": "orders-team"}},
        "datasets": [{"name": "dwd_orders", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["amount"]}],
        "jobs": [{"name": job, "owner": "analytics-team", "inputs": ["orders-value"], "outputs": ["dwd_orders"]} for job in ("enrich", "repair")]},
        lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(catalog)

    async def book(kind: str, title: str, start: str, end: str, scope: dict[str, list[str]]) -> dict[str, Any]:
        status, entry = await api(slack, "POST", "/api/v1/calendar", {
            "kind": kind, "title": title, "start": f"2026-12-03T{start}:00Z", "end": f"2026-12-03T{end}:00Z", "owner": "analytics-team",
            "booked_by": BOB, "scope": scope})
        assert status == 201, entry
        return entry

    enrich = await book("job_upgrade", "enrich v2", "02:00", "04:00", {"jobs": ["enrich"]})
    repair = await book("job_upgrade", "repair run", "03:00", "05:00", {"jobs": ["repair"]})
    [both] = repair["conflicts"]
    assert both["with"] == enrich["id"] and "dataset dwd_orders" in both["reason"]
    compaction = await book("maintenance", "compact dwd_orders", "05:00", "06:00", {"datasets": ["dwd_orders"]})
    assert compaction["conflicts"] == []  # touches the repair run's end: no overlap
    vacuum = await book("maintenance", "vacuum dwd_orders", "01:00", "02:30", {"datasets": ["dwd_orders"]})
    assert [c["with"] for c in vacuum["conflicts"]] == [enrich["id"]] and "dataset dwd_orders" in vacuum["conflicts"][0]["reason"]


@pytest.mark.parametrize("body, field, message", [
    ({"end": "2026-12-03T01:00:00Z"}, "end", "before it starts"),
    ({"end": "2026-12-03T02:00:00Z"}, "end", "the window ends when it starts (2026-12-03 02:00 UTC): give it a length"),
    ({"end": "2036-12-03T02:00:00Z"}, "end", "2026-12-03 to 2036-12-03 is 3,653 days; book at most a year (is the year right?)"),
    ({"scope": {"jobs": ["ghost"]}}, "scope", "unknown job ghost"),
    ({"kind": "party"}, "kind", "is not one of"),
    ({"kind": "schema_change"}, "kind", "booked by their proposals"),
    ({"owner": "nobody-team"}, "owner", "unknown team"),
    ({"start": "tomorrow"}, "start", "start: 'tomorrow' is not an ISO 8601 time"),
])
async def test_bad_bookings_are_refused_and_nothing_is_stored(slack: SlackHarness, body: dict[str, Any], field: str, message: str) -> None:
    await three_hops(slack)
    booking = {"kind": "maintenance", "title": "t", "start": "2026-12-03T02:00:00Z", "end": "2026-12-03T04:00:00Z",
               "owner": "orders-team", "booked_by": ALICE, "scope": {}, **body}
    status, answer = await api(slack, "POST", "/api/v1/calendar", booking)
    assert status == 400 and message in answer["error"] and answer.get("field") == (field or None), answer
    assert await slack.bot.calendar.listing(at(1), at(31)) == []


async def test_a_proposal_books_its_window_and_the_entry_follows_it(slack: SlackHarness, migrated_url: str, tmp_path: Path) -> None:
    await three_hops(slack)
    start = at(3, 2)
    first = await slack.bot.proposals.propose("orders-value", json.dumps(retyped(V1, "price", "string")), ALICE, surface="api",
                                              window_start=start, window_hours=2)
    second = await slack.bot.proposals.propose("orders-value", json.dumps(retyped(V1, "price", "long")), ALICE, surface="api",
                                               window_start=start + timedelta(hours=1), window_hours=2)
    entries = await slack.bot.calendar.listing(at(1), at(31))
    assert [(e["source"], e["status"], e["kind"]) for e in entries] == [
        ({"proposal": first.id}, "tentative", "schema_change"), ({"proposal": second.id}, "tentative", "schema_change")]
    assert entries[0]["conflicts"][0]["with"] == entries[1]["id"] and "subject orders-value" in entries[0]["conflicts"][0]["reason"]
    await slack.bot.proposals.decide(first.id, BOB, __import__("bot.domain.approvals", fromlist=["Decision"]).Decision.APPROVE)
    await slack.bot.proposals.withdraw(second.id, ALICE)
    entries = await slack.bot.calendar.listing(at(1), at(31))
    assert [e["status"] for e in entries] == ["confirmed", "cancelled"] and all(e["conflicts"] == [] for e in entries)

    (tmp_path / "catalog.yaml").write_text(yaml.safe_dump({"teams": {"orders-team": {"members": [ALICE]}}}))
    env = {**os.environ, "DATABASE_URL": migrated_url}

    async def bot(*args: str) -> subprocess.CompletedProcess[str]:  # off the loop: the bot under test keeps running meanwhile
        return await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "calendar", *args], env=env, capture_output=True,
                                       text=True, timeout=60)

    listed = await bot("list", "--from", "2026-12-01T00:00:00Z", "--to", "2026-12-31T00:00:00Z", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    [confirmed, cancelled] = json.loads(listed.stdout)
    assert set(confirmed) == {"id", "kind", "title", "start", "end", "status", "owner", "scope", "source", "conflicts"}
    assert confirmed["start"] == "2026-12-03T02:00:00Z" and confirmed["end"] == "2026-12-03T04:00:00Z"
    assert confirmed["scope"] == {"subjects": ["orders-value"], "datasets": [], "jobs": []} and confirmed["owner"] == "orders-team"
    booked = await bot("add", "--kind", "backfill", "--title", "replay of Dec 1", "--start", "2026-12-03T03:00:00Z", "--end", "2026-12-03T05:00:00Z",
                 "--owner", "analytics-team", "--dataset", "dwd_orders")
    assert booked.returncode == 0 and booked.stdout.startswith("booked #3"), booked.stderr
    clashes = json.loads((await bot("conflicts", "--from", "2026-12-01T00:00:00Z", "--format", "json")).stdout)
    assert {e["id"] for e in clashes} == {confirmed["id"], 3}
    refused = await bot("add", "--kind", "backfill", "--title", "x", "--start", "2026-12-03T05:00:00Z", "--end", "2026-12-03T03:00:00Z",
                  "--owner", "analytics-team")
    assert refused.returncode == 1 and "before it starts" in refused.stderr and "Traceback" not in refused.stderr
    assert len(json.loads((await bot("list", "--from", "2026-12-01T00:00:00Z", "--format", "json")).stdout)) == 3
    await slack.bot.idle()


async def test_the_feed_is_private_and_clients_update_events_rather_than_duplicate(slack: SlackHarness) -> None:
    from icalendar import Calendar

    from bot.domain.approvals import Decision

    await three_hops(slack)
    async with slack.bot.db.session() as session:
        from bot.services.lineage import _replace_freezes

        await _replace_freezes(session, [Freeze("weekend", "no weekend changes", cron="0 18 * * 5", duration=timedelta(hours=62),
                                                timezone="Europe/Berlin")])
        await session.commit()
    proposed = await slack.bot.proposals.propose("orders-value", json.dumps(retyped(V1, "price", "string")), ALICE, surface="api",
                                                 window_start=slack.clock.now + timedelta(days=1), window_hours=2)
    await slack.driver.command("/calendar feed", user=ALICE, channel="changes")
    shown = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "calendar.ics?token=" in e.text])
    url = shown[0].text.split("\n")[1]
    assert url.startswith(f"{slack.bot.url}/calendar.ics?token=")

    async def fetch(address: str) -> tuple[int, bytes]:
        async with aiohttp.ClientSession() as http, http.get(address) as response:
            return response.status, await response.read()

    status, first = await fetch(url)
    assert status == 200
    events = {str(e["UID"]): e for e in Calendar.from_ical(first).walk("VEVENT")}
    entry_uid = next(uid for uid in events if uid.startswith("entry-"))
    assert events[entry_uid]["STATUS"] == "TENTATIVE" and "orders-value" in str(events[entry_uid]["DESCRIPTION"])
    freezes = [e for uid, e in events.items() if uid.startswith("freeze-weekend-")]
    assert freezes and all(e.decoded("DTSTART").astimezone(BERLIN).hour == 18 for e in freezes)
    await slack.bot.proposals.decide(proposed.id, BOB, Decision.APPROVE)
    status, second = await fetch(url)
    again = {str(e["UID"]): e for e in Calendar.from_ical(second).walk("VEVENT")}
    assert set(again) == set(events)  # same UIDs: the client updates, never duplicates
    assert again[entry_uid]["STATUS"] == "CONFIRMED" and int(again[entry_uid]["SEQUENCE"]) > int(events[entry_uid]["SEQUENCE"])
    assert (await fetch(url.replace("token=", "token=x")))[0] == 404
    narrowed = {str(e["UID"]) for e in Calendar.from_ical((await fetch(f"{url}&subject=orders-value"))[1]).walk("VEVENT")}
    assert entry_uid in narrowed
    for typo in ("&team=orders-taem", "&subject=orders-valeu"):  # an empty feed would read as "nothing planned"
        status, body = await fetch(url + typo)
        assert status == 404 and b"unknown" in body and typo.split("=")[1].encode() in body
    await slack.driver.command("/calendar feed orders-team", user=ALICE, channel="changes")  # a stray word replaces nothing
    await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "your feed is unchanged" in e.text])
    assert (await fetch(url))[0] == 200
    await slack.driver.command("/calendar feed", user=ALICE, channel="changes")  # a new token replaces the old one
    await slack.ws.wait_for(lambda: len([e for e in slack.ws.ephemerals_for(ALICE) if "calendar.ics?token=" in e.text]) == 2)
    assert (await fetch(url))[0] == 404
    await slack.bot.idle()


async def test_the_agenda_is_grouped_by_day_in_the_readers_time_zone(slack: SlackHarness) -> None:
    await three_hops(slack)
    slack.ws.users[BOB]["tz"] = "America/New_York"
    await slack.bot.calendar.add(kind="job_upgrade", title="export <!channel> v2", start=slack.clock.now + timedelta(hours=20),
                                 end=slack.clock.now + timedelta(hours=22), owner="analytics-team", booked_by=BOB,
                                 scope=Scope(jobs=frozenset({"export"})), surface="test")
    await slack.bot.calendar.add(kind="maintenance", title="broker", start=slack.clock.now + timedelta(hours=21),
                                 end=slack.clock.now + timedelta(hours=23), owner="orders-team", booked_by=ALICE,
                                 scope=Scope(subjects=frozenset({"orders-value"})), surface="test")
    await slack.driver.command("/calendar", user=BOB, channel="changes")
    agenda = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "Change calendar" in e.text])
    text = agenda[0].text
    assert "(America/New_York)" in text and "— Tue 1 Dec to Mon 7 Dec" in text and "*Wednesday 2 December*" in text  # 05:00 UTC is midnight in New York
    assert "00:00–02:00" in text and "01:00–03:00" in text and ":warning: conflicts with" in text
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text
    await slack.driver.command("/calendar next year", user=BOB, channel="changes")
    [unread] = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "could not read" in e.text])
    assert "`/calendar add`" in unread.text and "`/calendar cancel ID`" in unread.text  # what else the command does
    await slack.driver.command("/calendar help", user=BOB, channel="changes")
    [listed] = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "`/calendar` commands" in e.text])
    assert "`/calendar feed`" in listed.text
    await slack.bot.idle()


FREEZE = {"name": "peak", "start": "2026-12-02T00:00:00Z", "end": "2026-12-05T00:00:00Z", "scope": {"teams": ["orders-team"]},
          "reason": "peak season"}


async def held_proposal(slack: SlackHarness) -> Any:
    """A breaking change planned inside the freeze, approved by its only team: held."""
    from tests.test_proposals_slack import card_message, thread

    await three_hops(slack, [FREEZE])
    await slack.bot.proposals.propose("orders-value", json.dumps(retyped(V1, "price", "string")), ALICE, surface="api",
                                      window_start=at(3, 2), window_hours=2)
    card = await card_message(slack)
    await slack.driver.click(card, __import__("bot.slack.ids", fromlist=["APPROVE"]).APPROVE, user=BOB)
    await slack.ws.wait_for(lambda: any("Every team approved, but its planned window is inside the freeze peak" in t for t in thread(slack, card)))
    view = await slack.bot.proposals.view(1)
    assert view.state.value == "pending" and view.proposal.version is None and "Next free window: 2026-12-05 00:00–2026-12-05 02:00 UTC" in view.proposal.held
    assert [v.number for v in await slack.bot.registry.history("orders-value")] == [1]
    [entry] = await slack.bot.calendar.listing(at(1), at(31))
    assert entry["status"] == "tentative" and entry["conflicts"][0]["with"] == "freeze:peak"
    held = slack.ws.find_message(card.channel, card.ts)
    assert held is not None and "held" in json.dumps(held.blocks) and "Move to the next free window" in json.dumps(held.blocks)
    return card


async def test_a_breaking_change_held_by_a_freeze_is_confirmed_once_the_freeze_ends(slack: SlackHarness) -> None:
    from tests.test_proposals_slack import thread

    card = await held_proposal(slack)
    assert await slack.bot.proposals.release_held() == 0  # still frozen
    await three_hops(slack, [])  # the freeze is lifted
    assert await slack.bot.proposals.release_held() == 1
    assert await slack.bot.proposals.release_held() == 0
    view = await slack.bot.proposals.view(1)
    assert view.state.value == "approved" and view.proposal.version == 2 and view.proposal.held is None
    assert [e["status"] for e in await slack.bot.calendar.listing(at(1), at(31))] == ["confirmed"]
    await slack.ws.wait_for(lambda: any("No freeze covers the planned window any more" in t for t in thread(slack, card)))
    await slack.bot.idle()


async def test_the_proposer_moves_a_held_change_to_the_next_free_window(slack: SlackHarness) -> None:
    from bot.slack import ids

    card = await held_proposal(slack)
    held = slack.ws.find_message(card.channel, card.ts)
    assert held is not None
    await slack.driver.click(held, ids.RESCHEDULE, user=BOB)
    await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "can move its window" in e.text])
    await slack.driver.click(held, ids.RESCHEDULE, user=ALICE)
    moved = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "now plans" in e.text])
    assert "2026-12-05 00:00–2026-12-05 02:00 UTC" in moved[0].text and "approved" in moved[0].text
    view = await slack.bot.proposals.view(1)
    assert view.state.value == "approved" and view.proposal.version == 2
    [entry] = await slack.bot.calendar.listing(at(1), at(31))
    assert (entry["start"], entry["status"], entry["conflicts"]) == ("2026-12-05T00:00:00Z", "confirmed", [])
    await slack.bot.idle()


async def test_oncall_adds_and_lifts_freezes_and_teams_move_or_cancel_their_entries(slack: SlackHarness) -> None:
    await three_hops(slack)
    number = await slack.bot.calendar.add(kind="maintenance", title="broker", start=at(3, 2), end=at(3, 4), owner="analytics-team",
                                          booked_by=BOB, scope=Scope(jobs=frozenset({"export"})), surface="test")

    async def say(text: str, user: str, expect: str) -> str:
        before = len(slack.ws.ephemerals_for(user))
        await slack.driver.command(text, user=user, channel="changes")
        shown = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(user)[before:] or None)
        assert expect in shown[0].text, shown[0].text
        return shown[0].text

    await say("/calendar freeze", "U0000CAROL", "_none_")
    await say("/calendar freeze add xmas 2026-12-24T00:00:00Z 2026-12-27T00:00:00Z holidays", "U0000CAROL", "Only oncall members")
    await say("/calendar freeze add xmas 2026-12-27T00:00:00Z 2026-12-24T00:00:00Z holidays", ALICE, "before it starts")
    await say("/calendar freeze add weekly “0 18 * * 8” 62h Europe/Berlin", ALICE, "five-field cron")
    await say("/calendar freeze add weekly “0 18 * * 5” 62h Mars/Olympus", ALICE, "unknown time zone")
    assert await slack.bot.calendar.freezes() == []
    await say("/calendar freeze add weekly “0 18 * * 5” 62h Europe/Berlin no weekend changes", ALICE, "Added the freeze *weekly*")
    await say("/calendar freeze add weekly 2026-12-24T00:00:00Z 2026-12-27T00:00:00Z", ALICE, "exists already")
    listed = await say("/calendar freeze", BOB, "*weekly*")
    assert "Europe/Berlin" in listed and "no weekend changes" in listed and "next 2026-12-04 17:00 UTC" in listed

    await say(f"/calendar cancel {number}", "U0000CAROL", "cancelled")  # carol is in analytics-team's user group
    await say(f"/calendar cancel {number}", BOB, "already cancelled")
    other = await slack.bot.calendar.add(kind="maintenance", title="compaction", start=at(3, 2), end=at(3, 4), owner="analytics-team",
                                         booked_by=BOB, scope=Scope(jobs=frozenset({"export"})), surface="test")
    upgrade = await slack.bot.calendar.add(kind="job_upgrade", title="export v2", start=at(5, 6), end=at(5, 8), owner="analytics-team",
                                           booked_by=BOB, scope=Scope(jobs=frozenset({"export"})), surface="test")
    slack.ws.usergroups[next(g for g, v in slack.ws.usergroups.items() if v["handle"] == "orders-team")]["users"].append("U0000CAROL")
    await say(f"/calendar move {other} 2026-12-03T05:00:00Z 2026-12-03T04:00:00Z", BOB, "before it starts")
    await say(f"/calendar move {other} 2026-12-03T05:00:00Z 2036-12-03T04:00:00Z", BOB, "book at most a year (is the year right?); nothing changed")
    await say(f"/calendar move {other} 2026-12-04T05:00:00Z 2026-12-04T07:00:00Z", BOB, "now runs 2026-12-04 05:00–07:00 UTC.\nNo conflict.")
    moved = await slack.bot.calendar.entry(other)
    assert moved is not None and moved.sequence == 1 and moved.start.replace(tzinfo=UTC) == at(4, 5)
    clash = await say(f"/calendar move {other} 2026-12-05T07:00:00Z 2027-12-05T09:00:00Z", BOB, "now runs 2026-12-05 07:00 → 2027-12-05 09:00 UTC.")
    assert f":warning: conflicts with #{upgrade}" in clash and "already ended" not in clash
    await say(f"/calendar move {other} 2025-12-04T05:00:00Z 2025-12-04T07:00:00Z", BOB,
              "now runs 2025-12-04 05:00–07:00 UTC. It has already ended: it stays on the calendar as a record.\nNo conflict.")
    await say("/calendar move 999 2026-12-04T05:00:00Z 2026-12-04T07:00:00Z", BOB, "no calendar entry #999")
    await say("/calendar freeze lift weekly", ALICE, "Lifted the freeze *weekly*")
    from sqlmodel import select

    from bot.store.models import AuditEntry

    async with slack.bot.db.session() as session:
        trail = [(e.action, e.target_kind) for e in (await session.exec(select(AuditEntry).where(AuditEntry.target_kind != "proposal"))).all()]
    assert trail == [("booked", "calendar"), ("froze", "freeze"), ("cancelled", "calendar"), ("booked", "calendar"), ("booked", "calendar"),
                     ("moved", "calendar"), ("moved", "calendar"), ("moved", "calendar"), ("lifted", "freeze")]
    await slack.bot.idle()


async def test_the_home_tab_and_the_card_show_the_calendar(slack: SlackHarness) -> None:
    from tests.test_proposals_slack import card_message

    await three_hops(slack, [{**FREEZE, "name": "peak"}])
    await slack.bot.calendar.add(kind="job_upgrade", title="export v2", start=slack.clock.now + timedelta(days=1),
                                 end=slack.clock.now + timedelta(days=1, hours=2), owner="analytics-team", booked_by=BOB,
                                 scope=Scope(jobs=frozenset({"export"})), surface="test")
    await slack.bot.proposals.propose("orders-value", json.dumps(retyped(V1, "price", "string")), ALICE, surface="api",
                                      window_start=at(3, 2), window_hours=2)
    card = await card_message(slack)
    assert "Calendar conflict: inside the freeze peak" in json.dumps(card.blocks)
    for user, sees_upgrade, sees_change in ((BOB, True, False), (ALICE, False, True)):  # each sees their own team's
        await slack.driver.event({"type": "app_home_opened", "user": user, "channel": "D1", "tab": "home"})
        home = json.dumps((await slack.ws.wait_for(lambda u=user: slack.ws.home.get(u))).view)
        assert "next seven days" in home and ("export v2" in home) is sees_upgrade
        assert ("Schema change #1 on orders-value" in home) is sees_change
    await slack.bot.idle()


async def test_an_open_home_tab_follows_bookings_and_cancellations(slack: SlackHarness) -> None:
    await three_hops(slack)
    await slack.driver.event({"type": "app_home_opened", "user": BOB, "channel": "D2", "tab": "home"})
    await slack.ws.wait_for(lambda: slack.ws.home.get(BOB))
    shown = lambda: json.dumps(slack.ws.home[BOB].view)  # noqa: E731 - what Bob's tab shows now
    assert "export v2" not in shown()
    number = await slack.bot.calendar.add(kind="job_upgrade", title="export v2", start=slack.clock.now + timedelta(days=1),
                                          end=slack.clock.now + timedelta(days=1, hours=2), owner="analytics-team", booked_by=BOB,
                                          scope=Scope(jobs=frozenset({"export"})), surface="test")
    await slack.ws.wait_for(lambda: "*export v2* (analytics-team, confirmed)" in shown())  # booked: in the tab, not opened again
    await slack.driver.command(f"/calendar cancel {number}", user=BOB, channel="changes")
    await slack.ws.wait_for(lambda: "*export v2* (analytics-team, cancelled)" in shown())  # cancelled: shown so
    await slack.bot.idle()


async def test_the_booking_form_shows_every_problem_at_its_field_and_books(slack: SlackHarness) -> None:
    from bot.slack import ids

    await three_hops(slack)
    await slack.driver.command("/calendar add", user=BOB, channel="changes")
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.CALENDAR_ADD_VIEW), None))

    def values(start: int, end: int, jobs: str = "export") -> dict[str, Any]:
        return {ids.KIND_BLOCK: {ids.KIND_ACTION: {"type": "static_select", "selected_option": {"value": "job_upgrade"}}},
                ids.TITLE_BLOCK: {ids.TITLE_ACTION: {"type": "plain_text_input", "value": "export v2"}},
                ids.START_BLOCK: {ids.START_ACTION: {"type": "datetimepicker", "selected_date_time": start}},
                ids.END_BLOCK: {ids.END_ACTION: {"type": "datetimepicker", "selected_date_time": end}},
                ids.OWNER_BLOCK: {ids.OWNER_ACTION: {"type": "static_select", "selected_option": {"value": "analytics-team"}}},
                ids.SUBJECTS_BLOCK: {ids.SUBJECTS_ACTION: {"type": "multi_static_select", "selected_options": []}},
                ids.JOBS_BLOCK: {ids.JOBS_ACTION: {"type": "plain_text_input", "value": jobs}}}

    start = int(at(3, 2).timestamp())
    backwards = await slack.driver.submit(form.id, values(start, start - 3600), user=BOB)
    assert backwards.json["errors"] == {ids.END_BLOCK: "The window ends before it starts"}
    instant = await slack.driver.submit(form.id, values(start, start), user=BOB)
    assert instant.json["errors"] == {ids.END_BLOCK: "The window ends when it starts (2026-12-03 02:00 UTC): give it a length"}
    ghost = await slack.driver.submit(form.id, values(start, start + 7200, "export, ghost"), user=BOB)
    assert ghost.json["errors"][ids.JOBS_BLOCK].startswith("Unknown job ghost")  # at its field, without "scope: "
    assert await slack.bot.calendar.listing(at(1), at(31)) == []
    booked = await slack.driver.submit(form.id, values(start, start + 7200), user=BOB)
    assert booked.json["response_action"] == "update" and booked.json["view"]["title"]["text"] == "Booked #1"
    [entry] = await slack.bot.calendar.listing(at(1), at(31))
    assert (entry["kind"], entry["owner"], entry["scope"]["jobs"], entry["start"]) == ("job_upgrade", "analytics-team", ["export"], "2026-12-03T02:00:00Z")
    await slack.bot.idle()


def test_change_hours_follow_the_teams_zone() -> None:
    from bot.domain.calendar import ChangeHours

    hours = ChangeHours.from_json({"days": ["mon", "tue", "wed", "thu", "fri"], "start": "09:00", "end": "17:00", "timezone": "Europe/Berlin"})
    assert hours.allows(Window(at(3, 8), at(3, 10)))  # Thursday 09:00–11:00 in Berlin (UTC+1 in December)
    assert not hours.allows(Window(at(3, 7), at(3, 9)))  # starts at 08:00 local
    assert not hours.allows(Window(at(5, 9), at(5, 10)))  # a Saturday
    assert not hours.allows(Window(at(3, 15), at(4, 9)))  # spans the night
    assert hours.allows(Window(datetime(2026, 7, 2, 7, tzinfo=UTC), datetime(2026, 7, 2, 9, tzinfo=UTC)))  # 09:00 local in summer (UTC+2)
    found = conflicts([entry(1, at(3, 2), at(3, 3))], [], {}, {"orders-team": hours})
    assert [(c.with_, c.reason) for c in found] == [("hours:orders-team", "outside orders-team's change hours (Mon, Tue, Wed, Thu, Fri 09:00–17:00 Europe/Berlin)")]
    for bad, message in (({"days": ["someday"]}, "weekdays"), ({"start": "18:00", "end": "09:00"}, "end after"), ({"timezone": "X/Y"}, "unknown time zone")):
        with pytest.raises(CalendarError) as refused:
            ChangeHours.from_json(bad)
        assert message in str(refused.value)
