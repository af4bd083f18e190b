"""``/calendar``: the agenda in the reader's time zone, grouped by day, with conflicts and freezes; the feed."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.calendar import Freeze, Window
from bot.domain.lineage.catalog import moment
from bot.services.calendar import CalendarService
from bot.slack.render import Reply, escape
from bot.slack.request import CommandRequest

USAGE = "Usage: `/calendar [today|week|next week|YYYY-MM-DD]`, `/calendar feed`"
STATUS_MARK = {"tentative": ":grey_question:", "confirmed": ":white_check_mark:", "cancelled": ":no_entry_sign:"}


class CalendarCommands:
    """What the ``/calendar`` subcommands call."""

    def __init__(self, calendar: CalendarService, client: AsyncWebClient, public_url: Callable[[], str]) -> None:
        self.calendar, self.client, self.public_url = calendar, client, public_url

    async def agenda(self, request: CommandRequest) -> Reply:
        """``today``, ``week`` (seven days from today, the default), ``next week`` (Monday to Sunday) or one day."""
        zone = await self._zone(request.user)
        today = self.calendar.clock().astimezone(zone).date()
        span = period(" ".join(request.args).strip().lower(), today)
        if span is None:
            return Reply.text(f"I could not read `{escape(' '.join(request.args))}` as a day or a period. {USAGE}")
        first, days = span
        start = datetime.combine(first, time(), zone)
        end = datetime.combine(first + timedelta(days=days), time(), zone)
        entries = await self.calendar.listing(start, end)
        freezes = [(f, w) for f in await self.calendar.freezes() for w in f.occurrences(start, end)]
        title = f"*Change calendar* — {first:%a %-d %b}{f' to {first + timedelta(days=days - 1):%a %-d %b}' if days > 1 else ''} ({zone.key})"
        lines = agenda_lines(entries, freezes, first, days, zone)
        return Reply.sections(title, lines or ["_Nothing booked, no freeze._"])

    async def feed(self, request: CommandRequest) -> Reply:
        """A new private iCalendar feed URL for the caller."""
        token = await self.calendar.mint_feed(request.user)
        url = f"{self.public_url().rstrip('/')}/calendar.ics?token={token}"
        return Reply.text(f"Your private calendar feed (subscribe to it in any calendar app; keep it secret, `/calendar feed` "
                          f"again replaces it):\n{url}\nOnly one team's or one subject's: add `&team=orders-team` or `&subject=orders-value`.")

    async def _zone(self, user: str) -> ZoneInfo:
        try:
            name = (await self.client.users_info(user=user))["user"].get("tz") or "UTC"
            return ZoneInfo(name)
        except (SlackApiError, ZoneInfoNotFoundError, ValueError, KeyError):
            return ZoneInfo("UTC")


def period(text: str, today: date) -> tuple[date, int] | None:
    """``(first day, number of days)`` for what someone typed after ``/calendar``."""
    if text in ("", "week", "this week"):
        return today, 7
    if text == "today":
        return today, 1
    if text == "tomorrow":
        return today + timedelta(days=1), 1
    if text == "next week":
        return today + timedelta(days=7 - today.weekday()), 7
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            return date.fromisoformat(text), 1
        except ValueError:
            return None
    return None


def agenda_lines(entries: list[dict[str, Any]], freezes: list[tuple[Freeze, Window]], first: date, days: int, zone: ZoneInfo) -> list[str]:
    """One heading per day that has something, then its freezes and entries, times in ``zone``."""
    lines: list[str] = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        start = datetime.combine(day, time(), zone)
        today = Window(start, datetime.combine(day + timedelta(days=1), time(), zone))
        items: list[tuple[datetime, str]] = []
        for freeze, window in freezes:
            if window.overlaps(today):
                items.append((window.start, f":snowflake: {_span(window.start, window.end, zone)} freeze *{escape(freeze.name)}*"
                                             + (f" — {escape(freeze.reason)}" if freeze.reason else "")))
        for entry in entries:
            begins, ends = moment(entry["start"]), moment(entry["end"])
            if not Window(begins, ends).overlaps(today) and not (begins == ends and today.contains(begins)):
                continue
            clashes = "".join(f"\n      :warning: conflicts with {escape(c['with'])}: {escape(c['reason'])}" for c in entry["conflicts"])
            items.append((begins, f"{STATUS_MARK.get(entry['status'], '')} {_span(begins, ends, zone)} `#{entry['id']}` "
                                  f"{escape(entry['kind'])} · *{escape(entry['title'])}* ({escape(entry['owner'])}, {entry['status']}){clashes}"))
        if items:
            lines.append(f"*{day:%A %-d %B}*")
            lines += [f"• {text}" for _, text in sorted(items, key=lambda item: item[0])]
    return lines


def _span(start: datetime, end: datetime, zone: ZoneInfo) -> str:
    local_start, local_end = start.astimezone(zone), end.astimezone(zone)
    if local_start.date() == local_end.date():
        return f"{local_start:%H:%M}–{local_end:%H:%M}"
    return f"{local_start:%a %H:%M} → {local_end:%a %-d %b %H:%M}"
