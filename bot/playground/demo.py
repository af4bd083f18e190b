"""The demo world's calendar, booked on the playground's first start (the catalog and the subject's versions
are loaded by ``make run`` itself): a freeze window and a few entries around today, so that ``/calendar``
and the proposals' window checks show something real."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.domain.calendar import Freeze, Scope
from bot.services.calendar import CalendarService


async def book_demo_calendar(calendar: CalendarService, booked_by: str, now: datetime | None = None) -> bool:
    """Book the demo entries, as ``booked_by``, unless the calendar has any (a restart keeps what is there); whether it booked."""
    now = now or datetime.now(UTC)
    if await calendar.freezes() or await calendar.listing(now - timedelta(days=30), now + timedelta(days=60)):
        return False
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    friday = day + timedelta(days=(4 - day.weekday()) % 7 or 7)
    await calendar.add_freeze(Freeze("quarter-end close", "finance closes the books: no schema changes on the orders topic",
                                     Scope(subjects=frozenset({"orders-value"})), start=friday + timedelta(hours=18),
                                     end=friday + timedelta(days=3, hours=6)), booked_by)
    entries = [
        ("job_upgrade", "Flink 1.20 upgrade of enrich-orders", day + timedelta(days=1, hours=10), 1, "orders-team",
         Scope(jobs=frozenset({"enrich-orders"}))),
        ("backfill", "Backfill dwd_orders for the country fix", day + timedelta(days=2, hours=14), 2, "analytics-team",
         Scope(datasets=frozenset({"dwd_orders"}))),
        ("maintenance", "Doris compaction of ads_daily_sales", day + timedelta(days=3, hours=2), 3, "analytics-team",
         Scope(datasets=frozenset({"ads_daily_sales"}))),
    ]
    for kind, title, start, hours, owner, scope in entries:
        await calendar.add(kind=kind, title=title, start=start, end=start + timedelta(hours=hours), owner=owner,
                           booked_by=booked_by, scope=scope, surface="playground")
    return True
