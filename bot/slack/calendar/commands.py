"""``/calendar``: the agenda in the reader's time zone, grouped by day, with conflicts and freezes; the feed."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from slack_bolt.async_app import AsyncAck
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.calendar import CalendarError, Freeze, Kind, Scope, Window
from bot.domain.lineage.catalog import duration, moment
from bot.services.calendar import CalendarService
from bot.services.proposals import Membership
from bot.slack import ids
from bot.slack.choices import menu, name_of
from bot.slack.render import Reply, escape, section
from bot.slack.request import CommandRequest

USAGE = ("Usage: `/calendar [today|week|next week|YYYY-MM-DD]`, `/calendar add`, `/calendar feed`, `/calendar freeze`, "
         "`/calendar move ID START END`, `/calendar cancel ID` (`/calendar help` says what each does)")
FREEZE_USAGE = ("`/calendar freeze` lists them; oncall: `/calendar freeze add NAME 2026-12-24T00:00Z 2026-12-27T00:00Z reason…`, "
                "`/calendar freeze add NAME \"0 18 * * 5\" 62h Europe/Berlin reason…`, `/calendar freeze lift NAME`")
STATUS_MARK = {"tentative": ":grey_question:", "confirmed": ":white_check_mark:", "cancelled": ":no_entry_sign:"}


class CalendarCommands:
    """What the ``/calendar`` subcommands call."""

    def __init__(self, calendar: CalendarService, client: AsyncWebClient, membership: Membership, public_url: Callable[[], str]) -> None:
        self.calendar, self.client, self.membership, self.public_url = calendar, client, membership, public_url

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
        if request.args:  # minting replaces the caller's feed: a stray word must not break their subscription
            return Reply.text(f"`{escape(' '.join(request.args))}` is not understood here; your feed is unchanged. `/calendar feed` "
                              "takes nothing more (it replaces your feed URL); for one team's or one subject's, add "
                              "`&team=orders-team` or `&subject=orders-value` to the URL.")
        token = await self.calendar.mint_feed(request.user)
        url = f"{self.public_url().rstrip('/')}/calendar.ics?token={token}"
        return Reply.text(f"Your private calendar feed (subscribe to it in any calendar app; keep it secret, `/calendar feed` "
                          f"again replaces it):\n{url}\nOnly one team's or one subject's: add `&team=orders-team` or `&subject=orders-value`.")

    async def freeze(self, request: CommandRequest) -> Reply:
        """``freeze`` lists; ``freeze add NAME START END [reason]`` or ``freeze add NAME "CRON" DURATION ZONE [reason]`` and
        ``freeze lift NAME`` are for oncall."""
        action = request.args[0].lower() if request.args else "list"
        if action == "list":
            return self._freezes(await self.calendar.freezes())
        if action not in ("add", "lift"):
            return Reply.text(f"Usage: {FREEZE_USAGE}")
        if not await self._oncall(request.user):
            return Reply.text("Only oncall members (the catalog's `oncall`) can add or lift freezes; nothing changed.")
        try:
            if action == "lift":
                if len(request.args) != 2:
                    return Reply.text(f"Usage: {FREEZE_USAGE}")
                source = await self.calendar.lift_freeze(request.args[1], request.user)
                again = " It is declared in the catalog: it comes back with the next `bot catalog load` unless you remove it there." if source == "catalog" else ""
                return Reply.text(f"Lifted the freeze *{escape(request.args[1])}*.{again}")
            freeze = parse_freeze(request.args[1:])
            await self.calendar.add_freeze(freeze, request.user)
        except CalendarError as err:
            return Reply.text(f"{escape(err)}. Nothing changed. Usage: {FREEZE_USAGE}")
        return Reply.text(f"Added the freeze *{escape(freeze.name)}*.").extend(self._freezes([freeze]))

    async def cancel(self, request: CommandRequest) -> Reply:
        """``cancel ID``: the owner team or oncall cancels an entry."""
        return await self._change(request, "cancel ID", moving=False)

    async def move(self, request: CommandRequest) -> Reply:
        """``move ID START END``: the owner team or oncall moves an entry (times ISO 8601 with an offset)."""
        return await self._change(request, "move ID START END", moving=True)

    async def _change(self, request: CommandRequest, usage: str, *, moving: bool) -> Reply:
        args = request.args
        if len(args) != (3 if moving else 1) or not args[0].lstrip("#").isdecimal() or len(args[0]) > 9:
            return Reply.text(f"Usage: `/calendar {usage}` (ID is the entry number; times like 2026-12-03T02:00:00Z)")
        number = int(args[0].lstrip("#"))
        try:
            window = Window(moment(args[1]), moment(args[2])) if moving else None
            entry = await self.calendar.entry(number)
            if entry is None:
                raise CalendarError(f"there is no calendar entry #{number}")
            if not await self._may_change(request.user, entry.owner):
                return Reply.text(f"Only members of {escape(entry.owner)} or oncall can change #{number}; nothing changed.")
            await self.calendar.change(number, request.user, window=window)
        except CalendarError as err:
            return Reply.text(f"{escape(err)}; nothing changed.")
        if window is None:
            return Reply.text(f"#{number} is cancelled.")
        over = " It has already ended: it stays on the calendar as a record." if window.end < self.calendar.clock() else ""
        return Reply.text(f"#{number} now runs {_utc_window(window.start, window.end)}.{over}{_clashes(await self.calendar.listed(number))}")

    async def add(self, request: CommandRequest) -> Reply | None:
        """Open the booking form."""
        teams = sorted(await self.calendar.lineage.teams())
        subjects = sorted(await self.calendar.subjects())
        if not teams:
            return Reply.text("There are no teams yet: load the catalog first (`bot catalog load catalog.yaml`).")
        try:
            await self.client.views_open(trigger_id=request.trigger_id, view=booking_form(teams, subjects))
        except SlackApiError as err:
            return Reply.text(f"Slack would not open the form ({escape(err.response.get('error'))}); try again.")
        return None

    async def on_booking(self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        """The form's submission: every problem shown at its field, else booked and shown with its conflicts."""
        values = view["state"]["values"]

        def picked(block: str, action: str, key: str = "value") -> Any:
            return (values.get(block, {}).get(action) or {}).get(key)

        kind = (picked(ids.KIND_BLOCK, ids.KIND_ACTION, "selected_option") or {}).get("value", "")
        owner = (picked(ids.OWNER_BLOCK, ids.OWNER_ACTION, "selected_option") or {}).get("value", "")
        subjects = [await name_of(o["value"], self.calendar.subjects) for o in picked(ids.SUBJECTS_BLOCK, ids.SUBJECTS_ACTION, "selected_options") or []]
        jobs, datasets = (_names(picked(block, action)) for block, action in ((ids.JOBS_BLOCK, ids.JOBS_ACTION), (ids.DATASETS_BLOCK, ids.DATASETS_ACTION)))
        starts, ends = picked(ids.START_BLOCK, ids.START_ACTION, "selected_date_time"), picked(ids.END_BLOCK, ids.END_ACTION, "selected_date_time")
        errors = {}
        if not starts:
            errors[ids.START_BLOCK] = "When does it start?"
        if not ends:
            errors[ids.END_BLOCK] = "When does it end?"
        elif starts and int(ends) < int(starts):
            errors[ids.END_BLOCK] = "The window ends before it starts"
        if errors:
            await ack(response_action="errors", errors=errors)
            return
        start, end = datetime.fromtimestamp(int(starts), UTC), datetime.fromtimestamp(int(ends), UTC)
        try:
            number = await self.calendar.add(kind=kind, title=picked(ids.TITLE_BLOCK, ids.TITLE_ACTION) or "", start=start, end=end, owner=owner,
                                             booked_by=body["user"]["id"], scope=Scope(frozenset(subjects), frozenset(datasets), frozenset(jobs)),
                                             surface="slack")
        except CalendarError as err:
            field, _, said = str(err).partition(": ")
            blocks = {"kind": ids.KIND_BLOCK, "title": ids.TITLE_BLOCK, "owner": ids.OWNER_BLOCK, "scope": ids.JOBS_BLOCK, "end": ids.END_BLOCK}
            shown = said[:1].upper() + said[1:] if field in blocks else str(err)  # at its field, the field's name goes without saying
            await ack(response_action="errors", errors={blocks.get(field, ids.END_BLOCK): shown[:150]})
            return
        booked = await self.calendar.listed(number)
        await ack(response_action="update", view={"type": "modal", "callback_id": ids.CALENDAR_RESULT_VIEW,
                                                  "title": {"type": "plain_text", "text": f"Booked #{number}"},
                                                  "close": {"type": "plain_text", "text": "Close"},
                                                  "blocks": [section(f"*{escape(booked['title'])}* ({escape(kind)}, {escape(owner)}) "
                                                                     f"{_utc_window(start, end)}{_clashes(booked)}")]})

    async def _oncall(self, user: str) -> bool:
        return any(user in team.oncall for team in (await self.calendar.lineage.teams()).values())

    async def _may_change(self, user: str, owner: str) -> bool:
        teams = await self.calendar.lineage.teams()
        return await self._oncall(user) or (owner in teams and user in await self.membership.members(teams[owner]))

    def _freezes(self, freezes: list[Freeze]) -> Reply:
        now = self.calendar.clock()
        lines = []
        for freeze in freezes:
            when = (f"`{escape(freeze.cron)}` for {freeze.duration} ({escape(freeze.timezone)})" if freeze.cron
                    else f"{freeze.start:%Y-%m-%d %H:%M} → {freeze.end:%Y-%m-%d %H:%M} UTC")
            upcoming = freeze.occurrences(now, now + timedelta(days=366), limit=1)
            scope = ", ".join(f"{kind} {', '.join(names)}" for kind, names in freeze.scope.as_json().items() if names) or "everything"
            lines.append(f"• *{escape(freeze.name)}*: {when}; {escape(scope)}"
                         + (f"; next {upcoming[0].start:%Y-%m-%d %H:%M} UTC" if upcoming else "; over") + (f" — {escape(freeze.reason)}" if freeze.reason else ""))
        return Reply.sections("*Freezes*", lines or ["_none_"])

    async def _zone(self, user: str) -> ZoneInfo:
        try:
            name = (await self.client.users_info(user=user))["user"].get("tz") or "UTC"
            return ZoneInfo(name)
        except (SlackApiError, ZoneInfoNotFoundError, ValueError, KeyError):
            return ZoneInfo("UTC")


def booking_form(teams: list[str], subjects: list[str]) -> dict[str, Any]:
    """The ``/calendar add`` form: kind, title, window, owner team and scope."""
    def block(block_id: str, label: str, element: dict[str, Any], optional: bool = False) -> dict[str, Any]:
        return {"type": "input", "block_id": block_id, "optional": optional, "label": {"type": "plain_text", "text": label}, "element": element}

    kinds = [k.value for k in Kind if k not in (Kind.SCHEMA_CHANGE, Kind.TRANSITION)]
    blocks = [
        block(ids.KIND_BLOCK, "Kind", menu(ids.KIND_ACTION, kinds)),
        block(ids.TITLE_BLOCK, "Title", {"type": "plain_text_input", "action_id": ids.TITLE_ACTION, "max_length": 200}),
        block(ids.START_BLOCK, "Starts", {"type": "datetimepicker", "action_id": ids.START_ACTION}),
        block(ids.END_BLOCK, "Ends", {"type": "datetimepicker", "action_id": ids.END_ACTION}),
        block(ids.OWNER_BLOCK, "Owning team", menu(ids.OWNER_ACTION, teams)),
        block(ids.JOBS_BLOCK, "Jobs (names, comma-separated)", {"type": "plain_text_input", "action_id": ids.JOBS_ACTION}, optional=True),
        block(ids.DATASETS_BLOCK, "Datasets (names, comma-separated)", {"type": "plain_text_input", "action_id": ids.DATASETS_ACTION}, optional=True),
    ]
    if subjects:
        blocks.insert(5, block(ids.SUBJECTS_BLOCK, "Subjects", menu(ids.SUBJECTS_ACTION, subjects, multi=True), optional=True))
    return {"type": "modal", "callback_id": ids.CALENDAR_ADD_VIEW, "title": {"type": "plain_text", "text": "Book a window"},
            "submit": {"type": "plain_text", "text": "Book"}, "close": {"type": "plain_text", "text": "Cancel"}, "blocks": blocks}


def _names(text: str | None) -> list[str]:
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def parse_freeze(args: list[str]) -> Freeze:
    """``NAME START END [reason...]`` or ``NAME "CRON" DURATION ZONE [reason...]``; CalendarError says what is wrong."""
    if len(args) < 3:
        raise CalendarError("give a name and a window")
    name = args[0]
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", name):
        raise CalendarError(f"{name!r} is not a freeze name (letters, digits, - _ .)")
    if len(args[1].split()) == 5:
        if len(args) < 4:
            raise CalendarError("a recurring freeze needs a cron expression, a duration and a time zone")
        return Freeze(name, " ".join(args[4:]), cron=args[1], duration=duration(args[2]), timezone=args[3])
    return Freeze(name, " ".join(args[3:]), start=moment(args[1]), end=moment(args[2]))


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
            clashes = "".join(f"\n      :warning: {_conflict(c)}" for c in entry["conflicts"])
            items.append((begins, f"{STATUS_MARK.get(entry['status'], '')} {_span(begins, ends, zone)} `#{entry['id']}` "
                                  f"{escape(entry['kind'])} · *{escape(entry['title'])}* ({escape(entry['owner'])}, {entry['status']}){clashes}"))
        if items:
            lines.append(f"*{day:%A %-d %B}*")
            lines += [f"• {text}" for _, text in sorted(items, key=lambda item: item[0])]
    return lines


def _span(start: datetime, end: datetime, zone: ZoneInfo) -> str:
    """A window under its day's heading: the end's day (and year, when it is another) only when it ends on another day."""
    local_start, local_end = start.astimezone(zone), end.astimezone(zone)
    if local_start.date() == local_end.date():
        return f"{local_start:%H:%M}–{local_end:%H:%M}"
    return f"{local_start:%a %H:%M} → {local_end:%a %-d %b{' %Y' if local_end.year != local_start.year else ''} %H:%M}"


def _utc_window(start: datetime, end: datetime) -> str:
    """A window on its own, dates in full: ``2026-12-08 08:00–09:00 UTC``, ``2026-12-08 08:00 → 2026-12-09 09:00 UTC``."""
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    return f"{start:%Y-%m-%d %H:%M}{f'–{end:%H:%M}' if start.date() == end.date() else f' → {end:%Y-%m-%d %H:%M}'} UTC"


def _clashes(entry: dict[str, Any]) -> str:
    """An entry's conflicts, one line each, or that it has none."""
    return "".join(f"\n:warning: {_conflict(c)}" for c in entry["conflicts"]) or "\nNo conflict."


def _conflict(conflict: dict[str, Any]) -> str:
    """``conflicts with #3: …`` (another entry) or ``conflicts with freeze:NAME: …``."""
    other = conflict["with"]
    return f"conflicts with {f'#{other}' if isinstance(other, int) else escape(other)}: {escape(conflict['reason'])}"
