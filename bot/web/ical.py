"""The change calendar as an iCalendar (RFC 5545) feed: one VEVENT per entry with a stable UID and a SEQUENCE
that grows on every change (so calendar clients update events rather than duplicate them), and freezes as
events too."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from icalendar import Calendar, Event

from bot.domain.calendar import Freeze, Window
from bot.domain.lineage.catalog import moment

STATUS = {"tentative": "TENTATIVE", "confirmed": "CONFIRMED", "cancelled": "CANCELLED"}


def feed(entries: Sequence[dict[str, Any]], freezes: Sequence[tuple[Freeze, Window]], now: datetime, host: str) -> bytes:
    """The VCALENDAR for ``entries`` (the calendar listing's JSON) and freeze occurrences."""
    calendar = Calendar()
    calendar.add("prodid", "-//ChangeOps//change calendar//EN")
    calendar.add("version", "2.0")
    calendar.add("calscale", "GREGORIAN")
    calendar.add("x-wr-calname", "ChangeOps change calendar")
    for item in entries:
        event = Event()
        event.add("uid", f"entry-{item['id']}@{host}")
        event.add("dtstamp", now)
        event.add("dtstart", moment(item["start"]))
        event.add("dtend", moment(item["end"]))
        event.add("summary", f"[{item['kind']}] {item['title']}")
        event.add("status", STATUS[item["status"]])
        event.add("sequence", item.get("sequence", 0))
        scope = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in item["scope"].items() if names) or "no scope"
        lines = [f"Owner: {item['owner']}", f"Scope: {scope}"]
        lines += [f"Conflict with {c['with']}: {c['reason']}" for c in item["conflicts"]]
        event.add("description", "\n".join(lines))
        event.add("categories", [item["kind"]])
        calendar.add_component(event)
    for freeze, window in freezes:
        event = Event()
        event.add("uid", f"freeze-{freeze.name}-{window.start:%Y%m%dT%H%M%SZ}@{host}")
        event.add("dtstamp", now)
        event.add("dtstart", window.start)
        event.add("dtend", window.end)
        event.add("summary", f"Freeze: {freeze.name}")
        event.add("status", "CONFIRMED")
        event.add("transp", "OPAQUE")
        event.add("description", freeze.reason or "Changes wait until the freeze ends.")
        event.add("categories", ["freeze"])
        calendar.add_component(event)
    return bytes(calendar.to_ical())
