"""The approval policy and the proposal state machine (no I/O: the service applies what this decides)."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.domain.compat.rules import Level
from bot.domain.lineage.model import Team

UNOWNED = "unowned readers"  # asked, through the fallback approvers, when readers nobody owns (or nobody knows) are affected
GOVERNANCE = "governance"  # a catalog-wide team that, when declared, is a fallback approver of every subject


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
    fallback: tuple[str, ...] = ()  # teams that answer for readers nobody owns; default: the owner's oncall, then governance

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Policy:
        """A policy from the catalog's ``approval`` block (``window_hours``, ``reminders``, ``acknowledge``, ``fallback``)."""
        if not data:
            return cls()
        fallback = data.get("fallback", ())
        if not isinstance(fallback, list | tuple) or not all(isinstance(t, str) for t in fallback):
            raise ValueError("fallback: expected a list of team names")
        return cls(
            window=timedelta(hours=float(data.get("window_hours", 24))),
            reminders=tuple(sorted(float(r) for r in data.get("reminders", (0.5, 0.9)))),
            acknowledge=frozenset(Level.parse(level) for level in data.get("acknowledge", ("compatible", "breaking"))),
            fallback=tuple(fallback),
        )

    def as_json(self) -> dict[str, Any]:
        """The catalog form."""
        data: dict[str, Any] = {"window_hours": self.window.total_seconds() / 3600, "reminders": list(self.reminders),
                                "acknowledge": sorted(str(level) for level in self.acknowledge)}
        if self.fallback:
            data["fallback"] = list(self.fallback)
        return data

    def fallback_teams(self, owner: str | None, teams: Mapping[str, Team]) -> list[Team]:
        """Who answers for readers nobody owns: the ``fallback`` teams, else the owning team's oncall, then the
        catalog's ``governance`` team when there is one (an empty list: nobody can)."""
        if self.fallback:
            return [teams[name] for name in self.fallback if name in teams]
        chosen = []
        if owner is not None and owner in teams and teams[owner].oncall:
            chosen.append(Team(f"{owner} oncall", None, list(teams[owner].oncall), list(teams[owner].oncall)))
        if GOVERNANCE in teams and GOVERNANCE != owner:
            chosen.append(teams[GOVERNANCE])
        return chosen

    def needs_acknowledgement(self, level: Level, teams: Sequence[str]) -> bool:
        """Whether the proposal waits for teams (safe changes, and changes nobody reads, do not)."""
        return level in self.acknowledge and bool(teams)

    def reminders_past(self, created: datetime, deadline: datetime, now: datetime) -> int:
        """How many reminders' moments in the span from ``created`` to ``deadline`` are past at ``now`` (after an extension:
        those still ahead in the longer span are sent, so the teams still waiting hear of it before the new deadline)."""
        return sum(now >= created + (deadline - created) * share for share in self.reminders)

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
