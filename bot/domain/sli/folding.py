"""Root causes through lineage, and breaches the calendar expects: while an upstream pipeline's episode fires (lag, no
data, DLQ growth, commit failures), the lag and freshness episodes of the pipelines downstream of it are folded under it —
shown, never paged on their own; and while a booked backfill, replay, maintenance or upgrade reaches a pipeline, its lag
and freshness are expected. Once the root cause resolves, a held episode that still breaches pages on its own after its
sustained duration; once the window ends, at once.

Alertmanager users write ``inhibit_rules`` by hand for this; here the edges come from the lineage graph: pipeline A is
upstream of B when what A writes (its sink, its jobs' outputs) reaches what B reads (its topics, its jobs' inputs)
through jobs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.domain.calendar import Kind as EntryKind
from bot.domain.sli.evaluator import Event, Kind, Level, State, Status
from bot.domain.sli.pipeline import Pipeline, Rule, Sli

CAUSES = frozenset({Sli.SOURCE_LAG, Sli.DLQ_VOLUME, Sli.COMMIT_SUCCESS_RATE})  # (and any "no data" episode)
FOLDABLE = frozenset({Sli.SOURCE_LAG, Sli.FRESHNESS})
HELD_KINDS = frozenset({Kind.OPENED, Kind.ESCALATED, Kind.REMINDER, Kind.UNSILENCED})
EXPECTING = frozenset({EntryKind.BACKFILL, EntryKind.REPLAY, EntryKind.MAINTENANCE, EntryKind.JOB_UPGRADE})  # booked lag


@dataclass(frozen=True, slots=True)
class Firing:
    """An open episode, as folding sees it."""

    fingerprint: str
    pipeline: str
    sli: str
    level: str
    no_data: bool
    started_at: datetime

    @property
    def causes(self) -> bool:
        """Whether it can be the root cause of episodes downstream."""
        return self.no_data or self.sli in CAUSES

    @property
    def foldable(self) -> bool:
        """Whether it can be caused upstream."""
        return not self.no_data and self.sli in FOLDABLE


def upstream_map(pipelines: Mapping[str, Pipeline], edges: Iterable[tuple[str, str]], outputs: Mapping[str, Iterable[str]],
                 inputs: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """For each pipeline, every pipeline upstream of it (transitively). ``edges``: dataset -> dataset through a job;
    ``outputs``/``inputs``: each pipeline's datasets written and read (names)."""
    after: dict[str, set[str]] = {}
    for source, target in edges:
        after.setdefault(source, set()).add(target)
    reach: dict[str, set[str]] = {}
    for name in pipelines:
        seen = set(outputs.get(name, ()))
        stack = list(seen)
        while stack:
            for nxt in after.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        reach[name] = seen
    return {name: frozenset(other for other in pipelines if other != name and reach[other] & set(inputs.get(name, ())))
            for name in pipelines}


def folds(firing: Sequence[Firing], upstream: Mapping[str, frozenset[str]]) -> dict[str, Firing]:
    """Each folded episode's fingerprint -> its root cause: the most upstream firing cause (the earliest, on a tie)."""
    causes = [f for f in firing if f.causes]
    found: dict[str, Firing] = {}
    for episode in firing:
        if not episode.foldable:
            continue
        above = upstream.get(episode.pipeline, frozenset())
        candidates = [c for c in causes if c.pipeline in above]
        if not candidates:
            continue
        roots = [c for c in candidates if not any(o.pipeline in upstream.get(c.pipeline, frozenset()) for o in candidates)] or candidates
        found[episode.fingerprint] = min(roots, key=lambda c: (c.started_at, c.pipeline, c.sli))
    return found


@dataclass(frozen=True, slots=True)
class Hold:
    """Why an episode's pages are held: a root cause upstream (``until`` None: it ends when the root resolves), or an
    expected breach (a booked backfill, replay, maintenance or upgrade that reaches the pipeline, until its window ends)."""

    reason: str  # "caused upstream by enrich-orders", "expected: backfill #12 until 14:00 UTC"
    until: datetime | None = None


def expected(title: str, number: int, kind: str, end: datetime) -> Hold:
    """The hold of a booked entry: ``expected: backfill #12 "Backfill enrich" until 2026-12-01 14:00 UTC``."""
    return Hold(f"expected: {kind.replace('_', ' ')} #{number} \"{title[:80]}\" until {end:%Y-%m-%d %H:%M} UTC", end)


def hold(events: list[Event], state: State, why: Hold | None) -> list[Event]:
    """Pages of a held episode (recorded and shown, not paged); the episode remembers why."""
    episode = state.episode
    if why is None or episode is None:
        return events
    held = [Event(e.kind, e.fingerprint, e.at, e.level, e.value, e.actor, e.detail, e.silenced, e.started_at, held=why.reason)
            if e.level is Level.PAGE and e.kind in HELD_KINDS and e.fingerprint == episode.fingerprint else e for e in events]
    if any(e.held for e in held) or episode.held is not None:
        episode.held, episode.held_until, episode.released_at = why.reason, why.until, None
    return held


def release(state: State, rule: Rule, now: datetime, why: Hold | None) -> list[Event]:
    """A held episode whose reason is gone: after an expected window, at once if it still breaches; after a root cause
    upstream, once it has breached on its own for its sustained duration (``page_for``, on wall time)."""
    episode = state.episode
    if episode is None or episode.held is None or state.status is not Status.FIRING:
        return []
    if why is not None:
        episode.held, episode.held_until, episode.released_at = why.reason, why.until, None
        return []
    if episode.held_until is None:
        if episode.released_at is None:
            episode.released_at = now
            return []
        if now - episode.released_at < rule.page_for:
            return []
        detail = f"the root cause is over ({episode.held}), and this still breaches after {int(rule.page_for.total_seconds())} s"
    else:
        detail = f"it outlived its window ({episode.held})"
    episode.held, episode.held_until, episode.released_at = None, None, None
    if episode.level is not Level.PAGE:
        return []
    return [Event(Kind.UNFOLDED, episode.fingerprint, now, Level.PAGE, state.last_value, silenced=state.silenced(now), detail=detail)]
