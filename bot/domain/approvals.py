"""The approval policy and the proposal state machine (no I/O: the service applies what this decides)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.domain.compat.rules import Level


class State(enum.StrEnum):
    """Where a proposal stands."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    CHANGES_REQUESTED = "changes_requested"
    EXPIRED = "expired"
    WITHDRAWN = "withdrawn"

    @property
    def final(self) -> bool:
        """No decision can change it any more."""
        return self is not State.PENDING


class Decision(enum.StrEnum):
    """What a downstream team says."""

    APPROVE = "approve"
    REJECT = "reject"
    REQUEST_CHANGES = "request_changes"


@dataclass(frozen=True)
class Policy:
    """Who must acknowledge, within how long, and when to remind (per subject; these are the defaults)."""

    window: timedelta = timedelta(hours=24)
    reminders: tuple[float, ...] = (0.5, 0.9)
    acknowledge: frozenset[Level] = frozenset({Level.COMPATIBLE, Level.BREAKING})

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Policy:
        """A policy from the catalog's ``approval`` block (``window_hours``, ``reminders``, ``acknowledge``)."""
        if not data:
            return cls()
        return cls(
            window=timedelta(hours=float(data.get("window_hours", 24))),
            reminders=tuple(sorted(float(r) for r in data.get("reminders", (0.5, 0.9)))),
            acknowledge=frozenset(Level.parse(level) for level in data.get("acknowledge", ("compatible", "breaking"))),
        )

    def as_json(self) -> dict[str, Any]:
        """The catalog form."""
        return {"window_hours": self.window.total_seconds() / 3600, "reminders": list(self.reminders),
                "acknowledge": sorted(str(level) for level in self.acknowledge)}

    def needs_acknowledgement(self, level: Level, teams: Sequence[str]) -> bool:
        """Whether the proposal waits for teams (safe changes, and changes nobody reads, do not)."""
        return level in self.acknowledge and bool(teams)

    def reminder_due(self, created: datetime, deadline: datetime, sent: int, now: datetime) -> bool:
        """Whether reminder number ``sent`` (0-based) is due."""
        if sent >= len(self.reminders):
            return False
        return now >= created + (deadline - created) * self.reminders[sent]


def outcome(teams: Sequence[str], decisions: Mapping[str, Decision]) -> State:
    """The state that the teams' decisions add up to: any reject blocks, any request for changes holds it."""
    if any(d is Decision.REJECT for d in decisions.values()):
        return State.REJECTED
    if any(d is Decision.REQUEST_CHANGES for d in decisions.values()):
        return State.CHANGES_REQUESTED
    if all(decisions.get(team) is Decision.APPROVE for team in teams):
        return State.APPROVED
    return State.PENDING
