"""The change calendar: entries with windows and scopes, freeze windows, and the conflicts between them (no I/O).

Windows are half-open, ``[start, end)``, in UTC: one that ends when the next starts does not overlap it. A
zero-length window is the instant ``start``. Recurring freezes follow their cron expression (five fields) in
their own time zone, so a freeze "every Friday 18:00 Europe/Berlin" starts at 18:00 local time in winter and
in summer; a local time that a DST change skips fires at the first valid time after it (cron's convention).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError


class Kind(enum.StrEnum):
    """What an entry books."""

    SCHEMA_CHANGE = "schema_change"
    JOB_UPGRADE = "job_upgrade"
    STATE_MIGRATION = "state_migration"
    RELEASE = "release"
    BACKFILL = "backfill"
    REPLAY = "replay"
    MAINTENANCE = "maintenance"
    EMERGENCY = "emergency"  # a held change shipped during a freeze, by two oncall people
    TRANSITION = "transition"  # the deadline of a transition: by then every reader of its old fields has moved


class Status(enum.StrEnum):
    """Where an entry stands."""

    TENTATIVE = "tentative"
    CONFIRMED = "confirmed"
    CANCELLED = "cancelled"


class CalendarError(ValueError):
    """Input the calendar refuses; the message says which field and why."""


@dataclass(frozen=True)
class Window:
    """``[start, end)`` in UTC."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise CalendarError("a window needs times with a time zone")
        if self.end < self.start:
            raise CalendarError(f"end: the window ends ({self.end:%Y-%m-%d %H:%M} UTC) before it starts ({self.start:%Y-%m-%d %H:%M} UTC)")

    def contains(self, moment: datetime) -> bool:
        """Whether ``moment`` falls inside (the end excluded)."""
        return self.start <= moment < self.end

    def overlaps(self, other: Window) -> bool:
        """Whether the two windows share a moment (touching windows do not)."""
        if self.start == self.end:
            return other.contains(self.start) or other.start == other.end == self.start
        if other.start == other.end:
            return self.contains(other.start)
        return self.start < other.end and other.start < self.end


MAX_BOOKING = timedelta(days=366)


def booked(window: Window) -> Window:
    """A window a person books or moves an entry to: it lasts, and for at most a year (a longer one is a typo in the year)."""
    if window.end == window.start:
        raise CalendarError(f"end: the window ends when it starts ({window.start:%Y-%m-%d %H:%M} UTC): give it a length")
    if window.end - window.start > MAX_BOOKING:
        raise CalendarError(f"end: {window.start:%Y-%m-%d} to {window.end:%Y-%m-%d} is {(window.end - window.start).days:,} days; "
                            "book at most a year (is the year right?)")
    return window


@dataclass(frozen=True)
class Scope:
    """What an entry or a freeze is about: subjects, datasets and jobs by name (and, for freezes, teams)."""

    subjects: frozenset[str] = frozenset()
    datasets: frozenset[str] = frozenset()
    jobs: frozenset[str] = frozenset()
    teams: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        """Nothing named: for a freeze, everything is frozen."""
        return not (self.subjects or self.datasets or self.jobs or self.teams)

    def shared(self, other: Scope) -> list[str]:
        """The subjects, datasets and jobs both name, as ``subject orders-value``."""
        return ([f"subject {n}" for n in sorted(self.subjects & other.subjects)] + [f"dataset {n}" for n in sorted(self.datasets & other.datasets)]
                + [f"job {n}" for n in sorted(self.jobs & other.jobs)])

    def as_json(self) -> dict[str, list[str]]:
        """``{"subjects", "datasets", "jobs"}`` (and ``teams`` when set)."""
        data = {"subjects": sorted(self.subjects), "datasets": sorted(self.datasets), "jobs": sorted(self.jobs)}
        if self.teams:
            data["teams"] = sorted(self.teams)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Iterable[str]] | None) -> Scope:
        """The inverse of ``as_json``."""
        data = data or {}
        return cls(*(frozenset(data.get(key, ())) for key in ("subjects", "datasets", "jobs", "teams")))


@dataclass(frozen=True)
class Entry:
    """A booked window: a schema change, an upgrade, a backfill..."""

    id: int
    kind: Kind
    title: str
    window: Window
    status: Status
    owner: str
    scope: Scope

    @property
    def active(self) -> bool:
        """Cancelled entries conflict with nothing."""
        return self.status is not Status.CANCELLED


FREEZE_NAME_MAX, CRON_MAX = 100, 100  # characters of a freeze's name and of its cron expression


@dataclass(frozen=True)
class Freeze:
    """A window in which changes wait: recurring (cron, duration, zone) or one-off (start, end)."""

    name: str
    reason: str = ""
    scope: Scope = field(default_factory=Scope)
    cron: str | None = None
    duration: timedelta | None = None
    timezone: str = "UTC"
    start: datetime | None = None
    end: datetime | None = None
    excepted: Scope = field(default_factory=Scope)  # what it leaves out (``except:``): teams, subjects, datasets, jobs

    def __post_init__(self) -> None:
        if not self.name.strip() or len(self.name) > FREEZE_NAME_MAX:
            raise CalendarError(f"a freeze's name is 1 to {FREEZE_NAME_MAX} characters ({len(self.name)} given)")
        if self.cron is not None and len(self.cron) > CRON_MAX:
            raise CalendarError(f"freeze {self.name}: a cron expression of at most {CRON_MAX} characters ({len(self.cron)} given)")
        if self.cron is not None:
            if self.duration is None or self.duration <= timedelta(0):
                raise CalendarError(f"freeze {self.name}: a recurring freeze needs a positive duration")
            zone(self.timezone)
            try:
                CronSim(self.cron, datetime(2026, 1, 1, tzinfo=UTC))
            except CronSimError as err:
                raise CalendarError(f"freeze {self.name}: {self.cron!r} is not a five-field cron expression ({err})") from None
        elif self.start is None or self.end is None:
            raise CalendarError(f"freeze {self.name}: give cron, duration and timezone, or start and end")
        else:
            Window(self.start, self.end)

    def occurrences(self, start: datetime, end: datetime, limit: int = 1000) -> list[Window]:
        """The windows of this freeze that overlap ``[start, end)``, in UTC (at most ``limit``)."""
        if self.cron is None:
            assert self.start is not None and self.end is not None
            once = Window(self.start, self.end)
            return [once] if once.overlaps(Window(start, end)) else []
        assert self.duration is not None
        tz = zone(self.timezone)
        found: list[Window] = []
        for moment in CronSim(self.cron, (start - self.duration - timedelta(minutes=1)).astimezone(tz)):
            begins = moment.astimezone(UTC)
            if begins >= end:
                break
            window = Window(begins, begins + self.duration)
            if window.overlaps(Window(start, end)):
                found.append(window)
                if len(found) == limit:
                    break
        return found

    def applies_to(self, entry: Entry) -> bool:
        """Global, or the entry's owner, subjects, datasets or jobs are among the frozen ones; and the freeze does not leave
        it out (its owner team is excepted, or everything it names is)."""
        if self.excepted.teams and entry.owner in self.excepted.teams:
            return False
        named, left_out = entry.scope, self.excepted
        if (named.subjects or named.datasets or named.jobs) and (
                named.subjects <= left_out.subjects and named.datasets <= left_out.datasets and named.jobs <= left_out.jobs):
            return False
        if self.scope.empty:
            return True
        return (entry.owner in self.scope.teams or bool(self.scope.subjects & named.subjects) or bool(self.scope.datasets & named.datasets)
                or bool(self.scope.jobs & named.jobs))


DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class ChangeHours:
    """When a team changes things: some weekdays, between two local times, in its time zone."""

    days: tuple[str, ...] = DAYS[:5]
    start: time = time(9)
    end: time = time(17)
    timezone: str = "UTC"

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ChangeHours:
        """``{days: [mon, ...], start: "09:00", end: "17:00", timezone}``; CalendarError says what is wrong."""
        days = data.get("days", DAYS[:5])
        if not isinstance(days, list | tuple) or not days or any(str(d).lower()[:3] not in DAYS for d in days):
            raise CalendarError(f"days: expected weekdays such as [mon, tue, wed, thu, fri], got {days!r}")
        try:
            start, end = time.fromisoformat(str(data.get("start", "09:00"))), time.fromisoformat(str(data.get("end", "17:00")))
        except ValueError:
            raise CalendarError("start and end: times such as 09:00 and 17:00") from None
        if end <= start:
            raise CalendarError("end: change hours end after they start")
        hours = cls(tuple(str(d).lower()[:3] for d in days), start, end, str(data.get("timezone", "UTC")))
        zone(hours.timezone)
        return hours

    def as_json(self) -> dict[str, object]:
        """The catalog form."""
        return {"days": list(self.days), "start": self.start.isoformat("minutes"), "end": self.end.isoformat("minutes"), "timezone": self.timezone}

    def allows(self, window: Window) -> bool:
        """Whether the whole window falls within one allowed day's hours, in the team's zone."""
        tz = zone(self.timezone)
        first, last = window.start.astimezone(tz), window.end.astimezone(tz)
        if DAYS[first.weekday()] not in self.days or not self.start <= first.time() <= self.end:
            return False
        return last.date() == first.date() and last.time() <= self.end

    def __str__(self) -> str:
        return f"{', '.join(d.title() for d in self.days)} {self.start:%H:%M}–{self.end:%H:%M} {self.timezone}"


@dataclass(frozen=True)
class Conflict:
    """One entry's clash with another entry (``with_`` its id) or a freeze (``freeze:NAME``), and why."""

    entry: int
    with_: str
    reason: str

    def as_json(self) -> dict[str, object]:
        """``{"with": ID | "freeze:NAME", "reason"}``."""
        return {"with": int(self.with_) if self.with_.isdigit() else self.with_, "reason": self.reason}


def zone(name: str) -> ZoneInfo:
    """An IANA time zone; CalendarError for an unknown one."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CalendarError(f"unknown time zone {name!r} (use an IANA name such as Europe/Berlin)") from None


def conflicts(entries: Sequence[Entry], freezes: Sequence[Freeze], downstream: Mapping[int, frozenset[str]],
              hours: Mapping[str, ChangeHours] | None = None) -> list[Conflict]:
    """Every conflict, on both sides: active entries whose windows overlap and whose scopes, or downstream impacts
    (``downstream[id]``: the lineage closure of the entry's scope), touch; entries inside a freeze; and entries
    outside their owner team's change ``hours``."""
    found: list[Conflict] = []
    active = [e for e in entries if e.active]
    for number, first in enumerate(active):
        allowed = (hours or {}).get(first.owner)
        if allowed is not None and not allowed.allows(first.window):
            found.append(Conflict(first.id, f"hours:{first.owner}", f"outside {first.owner}'s change hours ({allowed})"))
        for second in active[number + 1:]:
            if not first.window.overlaps(second.window):
                continue
            shared = first.scope.shared(second.scope)
            if shared:
                why = f"overlapping windows, both touch {', '.join(shared[:5])}"
            else:
                common = sorted(downstream.get(first.id, frozenset()) & downstream.get(second.id, frozenset()))
                if not common:
                    continue
                why = f"overlapping windows with a common downstream: {', '.join(common[:5])}{' …' if len(common) > 5 else ''}"
            found.append(Conflict(first.id, str(second.id), f"{why} (#{second.id} {second.title})"))
            found.append(Conflict(second.id, str(first.id), f"{why} (#{first.id} {first.title})"))
        for freeze in freezes:
            if not freeze.applies_to(first):
                continue
            frozen = freeze.occurrences(first.window.start, max(first.window.end, first.window.start + timedelta(microseconds=1)))
            if frozen:
                when = f"{frozen[0].start:%Y-%m-%d %H:%M}–{frozen[0].end:%Y-%m-%d %H:%M} UTC"
                found.append(Conflict(first.id, f"freeze:{freeze.name}", f"inside the freeze {freeze.name} ({when}){': ' + freeze.reason if freeze.reason else ''}"))
    return found
