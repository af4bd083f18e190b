"""Who really reads a topic: the consumer groups Kafka knows (committed offsets on the topic, or live members
assigned to it), set against the groups people declared (catalog jobs, pipelines, OpenLineage, attributions).
Pure: the census comes in as data."""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass(frozen=True)
class Declared:
    """Who said they read with a group: a job (and its team), or a team by attribution."""

    job: str | None
    team: str | None
    source: str  # "catalog", "pipeline", "openlineage", "attributed"


@dataclass(frozen=True)
class Reader:
    """A reading, judged: declared or not, and how active."""

    reading: Reading
    activity: Activity
    declared: Declared | None

    def as_json(self) -> dict[str, Any]:
        """``{"group", "state", "members", "declared_by", "team", "last_commit", "lag"}`` (and how it was judged)."""
        r = self.reading
        return {"group": r.group, "state": self.activity.value, "broker_state": r.state,
                "members": [{"client_id": m.client_id, "host": m.host} for m in r.members],
                "declared_by": self.declared.job if self.declared else None, "team": self.declared.team if self.declared else None,
                "declared_in": self.declared.source if self.declared else None,
                "last_commit": r.last_commit.isoformat() if r.last_commit else None, "lag": r.lag}


@dataclass
class Census:
    """The readers of one topic, and how fresh that knowledge is."""

    topic: str
    readers: list[Reader] = field(default_factory=list)
    taken_at: datetime | None = None  # the last census that answered
    failed: str | None = None  # why the newest attempt did not answer (the readers are then the last census's)

    @property
    def undeclared(self) -> list[Reader]:
        """Readers nobody declared that still read (active or idle, not stale or retired)."""
        return [r for r in self.readers if r.declared is None and r.activity in (Activity.ACTIVE, Activity.IDLE)]

    @property
    def reading(self) -> list[Reader]:
        """Every group that reads (stale and retired ones left out)."""
        return [r for r in self.readers if r.activity in (Activity.ACTIVE, Activity.IDLE)]

    def as_json(self) -> dict[str, Any]:
        """For the proposal's impact and the API."""
        return {"topic": self.topic, "taken_at": self.taken_at.isoformat() if self.taken_at else None, "failed": self.failed,
                "groups": [r.as_json() for r in self.readers]}


def judge(readings: list[Reading], declared: dict[str, Declared], retired: set[str], retention: timedelta | None, now: datetime) -> list[Reader]:
    """Each reading judged: active when members hold its partitions; retired when someone said so; stale when idle and
    last committed longer ago than the topic keeps data (``retention`` None: forever); else idle. Active first."""
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
        readers.append(Reader(reading, activity, declared.get(reading.group)))
    order = list(Activity)
    return sorted(readers, key=lambda r: (order.index(r.activity), r.declared is not None, r.reading.group))
