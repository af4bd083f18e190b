"""Who really reads a topic: the consumer groups Kafka knows (committed offsets on the topic, or live members
assigned to it), set against the groups people declared (catalog jobs, pipelines, OpenLineage, attributions).
Pure: the census comes in as data."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any


class Activity(StrEnum):
    """How a group stands toward a topic."""

    ACTIVE = "active"    # live members are assigned the topic's partitions
    IDLE = "idle"        # committed offsets, nobody connected now
    STALE = "stale"      # idle, and its last commit is older than the topic keeps data: not a reader any more
    RETIRED = "retired"  # someone said it is gone


@dataclass(frozen=True)
class Member:
    """A connected client of a group."""

    client_id: str
    host: str


@dataclass(frozen=True)
class Reading:
    """One group on one topic, as the census saw it."""

    group: str
    topic: str
    state: str  # the broker's word: STABLE, EMPTY, ...
    members: tuple[Member, ...] = ()  # those assigned partitions of this topic
    lag: int | None = None
    last_commit: datetime | None = None  # when its committed offsets last moved (as the bot saw them)
    first_seen: datetime | None = None
    seen_at: datetime | None = None  # the census that last saw it (older than the census's own time: Kafka did not answer for it since)


@dataclass(frozen=True)
class Declared:
    """Who said they read with a group: a job (and its team), or a team by attribution."""

    job: str | None
    team: str | None
    source: str  # "catalog", "pipeline", "openlineage", "attributed"


@dataclass(frozen=True)
class Reader:
    """A reading, judged: declared or not, and how active; ``live`` False when what it says is only as of ``seen_at``
    (the census is older than its interval, or Kafka did not answer for this group in the newest one)."""

    reading: Reading
    activity: Activity
    declared: Declared | None
    live: bool = True

    @property
    def state(self) -> str:
        """Its activity, or ``last seen <activity>`` when that is not known to hold now."""
        return self.activity.value if self.live else f"last seen {self.activity.value}"

    def state_text(self) -> str:
        """For people: ``active``, or ``last seen active at 2026-12-03 09:00 UTC``."""
        seen = self.reading.seen_at
        return self.state if self.live or seen is None else f"{self.state} at {seen:%Y-%m-%d %H:%M} UTC"

    def as_json(self) -> dict[str, Any]:
        """``{"group", "state", "live", "seen_at", "members", "declared_by", "team", "last_commit", "lag"}`` (and how it was judged)."""
        r = self.reading
        return {"group": r.group, "state": self.state, "live": self.live, "seen_at": r.seen_at.isoformat() if r.seen_at else None,
                "broker_state": r.state, "members": [{"client_id": m.client_id, "host": m.host} for m in r.members],
                "declared_by": self.declared.job if self.declared else None, "team": self.declared.team if self.declared else None,
                "declared_in": self.declared.source if self.declared else None,
                "last_commit": r.last_commit.isoformat() if r.last_commit else None, "lag": r.lag}


@dataclass
class Census:
    """The readers of one topic, and how fresh and complete that knowledge is."""

    topic: str
    readers: list[Reader] = field(default_factory=list)
    taken_at: datetime | None = None  # the last census that answered
    failed: str | None = None  # why the newest attempt did not answer (the readers are then the last census's)
    partial: int = 0  # groups Kafka did not answer for in the last census (kept as last seen)
    partial_reason: str | None = None
    age: timedelta | None = None  # of ``taken_at``, when the census was read
    stale: bool = False  # older than the census interval: nobody has taken one since

    @property
    def live(self) -> bool:
        """Whether the newest census answered and is not older than its interval (a partial one is live for what it saw)."""
        return self.taken_at is not None and self.failed is None and not self.stale

    @property
    def undeclared(self) -> list[Reader]:
        """Readers nobody declared that still read (active or idle, not stale or retired)."""
        return [r for r in self.readers if r.declared is None and r.activity in (Activity.ACTIVE, Activity.IDLE)]

    @property
    def reading(self) -> list[Reader]:
        """Every group that reads (stale and retired ones left out)."""
        return [r for r in self.readers if r.activity in (Activity.ACTIVE, Activity.IDLE)]

    def notes(self) -> list[str]:
        """What makes this census less than a live and complete answer, for people (empty when it is one)."""
        found = []
        if self.failed:
            found.append(failed_note(self.failed, self.taken_at is not None))
        elif self.stale:
            found.append("no census since: states are as last seen")
        if self.partial:
            found.append(f"partial: Kafka did not answer for {self.partial} group{'s' if self.partial != 1 else ''}"
                         + (f" ({self.partial_reason})" if self.partial_reason else "") + "; those are shown as last seen")
        return found

    def as_json(self) -> dict[str, Any]:
        """``{"topic", "taken_at", "age_seconds", "partial", "unanswered", "partial_reason", "failed", "live", "notes", "readers"}``."""
        return {"topic": self.topic, "taken_at": self.taken_at.isoformat() if self.taken_at else None,
                "age_seconds": round(self.age.total_seconds()) if self.age is not None else None, "partial": bool(self.partial),
                "unanswered": self.partial, "partial_reason": self.partial_reason, "failed": self.failed, "live": self.live,
                "notes": self.notes(), "readers": [r.as_json() for r in self.shown()]}

    def shown(self) -> list[Reader]:
        """The readers as this answer may state them: none is live when the census itself is not (it failed, or is older than
        its interval) — each says its state as last seen — except a retirement, which is people's word."""
        if self.live:
            return list(self.readers)
        return [r if r.activity is Activity.RETIRED else replace(r, live=False) for r in self.readers]


def judge(readings: list[Reading], declared: dict[str, Declared], retired: set[str], retention: timedelta | None, now: datetime,
          fresh_since: datetime | None = None) -> list[Reader]:
    """Each reading judged: active when members hold its partitions; retired when someone said so; stale when idle and
    last committed longer ago than the topic keeps data (``retention`` None: forever); else idle. Active first. A reading
    seen before ``fresh_since`` (None: every reading is old) is not live: it says what was, not what is (a retirement is
    people's word, always current)."""
    readers = []
    for reading in readings:
        if reading.group in retired:
            activity = Activity.RETIRED
        elif reading.members:
            activity = Activity.ACTIVE
        elif retention is not None and reading.last_commit is not None and now - reading.last_commit > retention:
            activity = Activity.STALE
        else:
            activity = Activity.IDLE
        live = activity is Activity.RETIRED or (fresh_since is not None and reading.seen_at is not None and reading.seen_at >= fresh_since)
        readers.append(Reader(reading, activity, declared.get(reading.group), live))
    order = list(Activity)
    return sorted(readers, key=lambda r: (order.index(r.activity), r.declared is not None, r.reading.group))


def failed_note(reason: str, answered: bool) -> str:
    """The note of a census whose newest attempt failed: the readers shown are the last census's, or (``answered`` False: none
    ever answered) unknown."""
    return f"the newest census failed ({reason}): " + ("these are the readers it last saw" if answered else
                                                       "no census has answered yet, so its readers are unknown")
