"""Escalation: a page nobody acknowledges goes on, after a delay, to the next step of its team's chain (user groups or
people, in order), then to the global oncall. Each step is an event on the episode (its message and thread say so, and
the step's people are paged); an acknowledgement, a silence or a hold stops the chain."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.domain.sli.evaluator import Event, Kind, Level, State, Status

DEFAULT_AFTER = timedelta(minutes=15)


GLOBAL = "oncall"  # the chain's last step: the catalog's global oncall


def chain(escalation: list[str], global_oncall: bool) -> list[str]:
    """The steps after the team's own oncall: its ``escalation`` (user group or user ids), then the global oncall."""
    return [*escalation, *([GLOBAL] if global_oncall else [])]


def escalate(state: State, now: datetime, after: timedelta, steps: list[str]) -> list[Event]:
    """The next step of an unacknowledged page (``steps``: see ``chain``; the event's detail names the step's target),
    once it has waited ``after`` (on wall time) since it was first seen waiting or since the previous step."""
    episode = state.episode
    if (episode is None or state.status is not Status.FIRING or episode.level is not Level.PAGE or episode.acked_by is not None
            or episode.held is not None or state.silenced(now) or episode.escalation >= len(steps)):
        return []
    if episode.escalated_at is None:
        episode.escalated_at = now  # the wait starts when the page is first seen waiting
        return []
    if now - episode.escalated_at < after:
        return []
    episode.escalation += 1
    episode.escalated_at = now
    return [Event(Kind.HANDED_ON, episode.fingerprint, now, Level.PAGE, state.last_value, detail=steps[episode.escalation - 1])]
