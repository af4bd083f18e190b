"""The alert state machine of one (pipeline, SLI) series.

ok -> pending (beyond a threshold, not yet for its sustained duration) -> firing (warn or page) ->
resolved (back to ok). A value in the hysteresis band between the threshold and the ``clear`` value
neither fires nor clears, so a value hovering at the threshold does not flap. A warn episode escalates
to page; a firing, unacknowledged episode is reminded every ``repeat``; a mandatory SLI whose samples stop
arriving for three intervals opens a "no data" episode. Silences belong to the series (they may be
set before anything fires); acknowledgements to the episode. Every function here is pure: the caller
stores the state and acts on the returned events.

Two clocks. Thresholds, sustained durations, hysteresis, escalation and clearing run on the samples' own
times, so a backlog replayed at full speed gives the same episodes as the same samples arriving live. "No
data", reminders and silences run on arrival (wall) time: samples that arrive on time but carry old
timestamps (a metrics pipeline catching up) are data, not silence. A sample older than the newest one already
evaluated for its series is late: counted, and dropped whole, so it never reopens, resolves or edits anything.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from bot.domain.sli.pipeline import GROWTH_WINDOW, Mode, Rule
from bot.domain.sli.retention import read_lost
from bot.domain.sli.samples import moment

TREND = 8  # values kept for the message's trend line
MATERIAL = 0.10  # a firing episode's message is edited when its value moves this much from the value it shows (or peaks)
NO_DATA_INTERVALS = 3


class Status(StrEnum):
    """Where a series stands."""

    OK = "ok"
    PENDING = "pending"
    FIRING = "firing"
    NO_DATA = "no_data"


class Level(StrEnum):
    """How loud an episode is."""

    WARN = "warn"
    PAGE = "page"


class Kind(StrEnum):
    """What happened to an episode (each becomes a line of its thread)."""

    OPENED = "opened"
    ESCALATED = "escalated"
    UPDATED = "updated"
    REMINDER = "reminder"
    ACKNOWLEDGED = "acknowledged"
    SILENCED = "silenced"
    UNSILENCED = "unsilenced"
    UNFOLDED = "unfolded"  # its root cause upstream recovered and it still breaches: it pages on its own
    HANDED_ON = "handed_on"  # nobody acknowledged the page in time: the next step of the team's escalation is paged
    LOST = "lost"  # retention deleted records a consumer group had not read (the sample's ``lost`` label moved)
    UNMEASURED = "unmeasured"  # no sample for three intervals while it fires (and no "no data" for it): it shows the last one
    REMEASURED = "remeasured"  # samples arrive again for it
    NOTED = "noted"  # something said of it elsewhere (resolved in PagerDuty): a line of its thread
    RESOLVED = "resolved"


class StateError(Exception):
    """An action that does not apply to the series as it stands (nothing to acknowledge, say)."""


@dataclass(slots=True)
class Episode:
    """The current breach: since when, how loud, who acknowledged it."""

    fingerprint: str
    started_at: datetime
    level: Level
    no_data: bool = False
    peak: float | None = None
    acked_by: str | None = None
    acked_at: datetime | None = None
    reminded_at: datetime | None = None  # wall time
    opened_at: datetime | None = None  # wall time it was opened (reminders count from here)
    shown: float | None = None  # the value its message shows (edited when a sample moves materially from it)
    held: str | None = None  # why its pages are held ("caused upstream by enrich-orders", "expected: backfill #12 ...")
    held_until: datetime | None = None  # the end of the expected window that holds them (None: a root cause upstream)
    released_at: datetime | None = None  # wall time the root cause was last seen gone (it pages once it breaches on its own)
    escalation: int = 0  # steps of the team's escalation chain taken so far
    escalated_at: datetime | None = None  # wall time of the last step (or when the page was first seen waiting)
    unmeasured_since: datetime | None = None  # wall time of the last sample, once none came for three intervals

    def as_json(self) -> dict[str, Any]:
        """For storage."""
        return {"fingerprint": self.fingerprint, "started_at": _iso(self.started_at), "level": self.level.value, "no_data": self.no_data,
                "peak": self.peak, "acked_by": self.acked_by, "acked_at": _iso(self.acked_at), "reminded_at": _iso(self.reminded_at),
                "opened_at": _iso(self.opened_at), "shown": self.shown, "held": self.held, "held_until": _iso(self.held_until),
                "released_at": _iso(self.released_at), "escalation": self.escalation, "escalated_at": _iso(self.escalated_at),
                **({"unmeasured_since": _iso(self.unmeasured_since)} if self.unmeasured_since else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Episode:
        """From storage."""
        return cls(data["fingerprint"], _time(data["started_at"]) or datetime.min.replace(tzinfo=UTC), Level(data["level"]),
                   bool(data.get("no_data")), data.get("peak"), data.get("acked_by"), _time(data.get("acked_at")),
                   _time(data.get("reminded_at")), _time(data.get("opened_at")), data.get("shown"), data.get("held"),
                   _time(data.get("held_until")), _time(data.get("released_at")), int(data.get("escalation") or 0),
                   _time(data.get("escalated_at")), _time(data.get("unmeasured_since")))


@dataclass(slots=True)
class State:
    """Everything the machine remembers about one series."""

    status: Status = Status.OK
    since: datetime | None = None          # when the series entered its status
    breach_since: datetime | None = None   # beyond the warn threshold continuously since
    page_since: datetime | None = None     # beyond the page threshold continuously since
    clear_since: datetime | None = None    # healthy (beyond ``clear``) continuously since
    last_time: datetime | None = None      # the newest sample's own time
    last_arrival: datetime | None = None   # when a sample last arrived (wall time): "no data" counts from here
    late: int = 0                          # samples dropped for being older than ``last_time``
    last_value: float | None = None
    trend: list[float] = field(default_factory=list)
    history: list[tuple[datetime, float]] = field(default_factory=list)  # GROWING rules: samples of the last window
    episode: Episode | None = None
    silenced_until: datetime | None = None
    silenced_by: str | None = None
    silence_reason: str = ""
    labels: dict[str, str] = field(default_factory=dict)  # the newest sample's labels (what it measured, where)

    def silenced(self, at: datetime) -> bool:
        """Whether a silence covers ``at``."""
        return self.silenced_until is not None and at < self.silenced_until

    def as_json(self) -> dict[str, Any]:
        """For storage."""
        return {"status": self.status.value, "since": _iso(self.since), "breach_since": _iso(self.breach_since),
                "page_since": _iso(self.page_since), "clear_since": _iso(self.clear_since), "last_time": _iso(self.last_time),
                "last_arrival": _iso(self.last_arrival), "late": self.late, "last_value": self.last_value, "trend": self.trend, "history": [[_iso(t), v] for t, v in self.history],
                "episode": self.episode.as_json() if self.episode else None, "silenced_until": _iso(self.silenced_until),
                "silenced_by": self.silenced_by, "silence_reason": self.silence_reason, **({"labels": self.labels} if self.labels else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> State:
        """From storage (an empty state for None)."""
        if not data:
            return cls()
        return cls(Status(data.get("status", "ok")), _time(data.get("since")), _time(data.get("breach_since")), _time(data.get("page_since")),
                   _time(data.get("clear_since")), _time(data.get("last_time")), _time(data.get("last_arrival")), int(data.get("late") or 0),
                   data.get("last_value"), list(data.get("trend") or []),
                   [(t, float(v)) for t, v in ((_time(a), b) for a, b in data.get("history") or []) if t is not None],
                   Episode.from_json(data["episode"]) if data.get("episode") else None, _time(data.get("silenced_until")),
                   data.get("silenced_by"), str(data.get("silence_reason") or ""), dict(data.get("labels") or {}))


@dataclass(frozen=True, slots=True)
class Event:
    """Something to tell people about an episode."""

    kind: Kind
    fingerprint: str
    at: datetime
    level: Level
    value: float | None = None
    actor: str | None = None
    detail: str = ""
    silenced: bool = False  # the series is silenced: recorded, not announced
    started_at: datetime | None = None  # for OPENED: when the breach began (before its sustained duration passed)
    held: str | None = None  # why a page is held (folded under a root cause upstream, or expected): shown, not paged


def fingerprint(labels: dict[str, str]) -> str:
    """A stable id for a set of labels (sorted, so their order does not matter)."""
    text = "\xff".join(f"{k}\xff{v}" for k, v in sorted(labels.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def episode_fingerprint(pipeline: str, sli: str, started_at: datetime, no_data: bool = False) -> str:
    """An episode's identity: its series and its start (the same samples give the same episode)."""
    return fingerprint({"pipeline": pipeline, "sli": sli, "start": _iso(started_at) or "", "kind": "no_data" if no_data else "threshold"})


def observe(state: State, rule: Rule, at: datetime, value: float, *, now: datetime | None = None, pipeline: str = "",
            sli: str = "", labels: dict[str, str] | None = None) -> list[Event]:
    """Apply one sample taken at ``at`` that arrived at ``now`` (default ``at``), with its ``labels``; the events it causes.
    A sample older than the newest one seen is late: counted in ``state.late`` and otherwise ignored."""
    if state.last_time is not None and at < state.last_time:
        state.late += 1
        return []
    arrived = at if now is None else now
    events: list[Event] = []
    if state.status is Status.NO_DATA and state.episode is not None:
        events.append(_resolve(state, arrived, value, "samples arrived again"))
    state.last_time, state.last_value, state.last_arrival = at, value, arrived
    lost = None
    if labels or state.labels:
        lost = (labels or {}).get("lost")
        lost = lost if lost and lost != state.labels.get("lost") else None  # more records deleted unread than told
        state.labels = dict(labels or {})
    unmeasured = state.episode if state.episode is not None and state.episode.unmeasured_since is not None else None
    events += _judged(state, rule, at, value, arrived, pipeline, sli)
    if unmeasured is not None and state.episode is unmeasured:  # still firing, measured again (a resolve says so itself)
        unmeasured.unmeasured_since = None
        events.append(Event(Kind.REMEASURED, unmeasured.fingerprint, at, unmeasured.level, value, silenced=state.silenced(arrived)))
    if lost is not None and state.episode is not None and state.status is Status.FIRING:
        gone = "; ".join(item.text() for item in read_lost(lost))
        events.append(Event(Kind.LOST, state.episode.fingerprint, at, state.episode.level, value, detail=gone, silenced=state.silenced(arrived)))
    return events


def quietly(state: State, rule: Rule, times: list[int], values: list[float], arrived: datetime) -> bool:
    """Apply a healthy series' samples (``times`` in microseconds since the epoch, in order, no labels) at once, when
    none of them can cause anything: the series is ok, no sample is late, and every value is clear (beyond no
    threshold), so each would only have moved the last time, value and trend. False (nothing changed) otherwise:
    apply them one by one."""
    if state.status is not Status.OK or state.episode is not None or state.breach_since is not None or state.labels:
        return False
    first = moment(times[0])
    if state.last_time is not None and first < state.last_time:
        return False
    if rule.alerting:
        calm = rule.calm
        if calm is None or (max(values) > calm if rule.mode is Mode.ABOVE else min(values) < calm):
            return False
        state.clear_since = state.clear_since or first
    state.last_time, state.last_value, state.last_arrival = moment(times[-1]), values[-1], arrived
    trend = state.trend
    trend += values[-TREND:]
    if len(trend) > TREND:
        del trend[:len(trend) - TREND]
    return True


def _judged(state: State, rule: Rule, at: datetime, value: float, arrived: datetime, pipeline: str, sli: str) -> list[Event]:
    """The events of one sample against its rule (its time and arrival already recorded)."""
    events: list[Event] = []
    trend = state.trend
    trend.append(value)
    if len(trend) > TREND:
        del trend[0]
    growth = _growth(state, at, value) if rule.mode is Mode.GROWING else None
    if not rule.alerting:
        return events
    warn, page, clear = rule.judge(value, growth)
    beyond = warn or page
    if beyond:
        state.breach_since = state.breach_since or at
        state.page_since = (state.page_since or at) if page else None
        state.clear_since = None
    elif clear:
        state.breach_since = state.page_since = None
        state.clear_since = state.clear_since or at
    else:  # the hysteresis band: neither breached nor clear
        state.clear_since = None
        if state.status is not Status.FIRING:
            state.breach_since = state.page_since = None
    silenced = state.silenced(arrived)
    if state.status is Status.FIRING and state.episode is not None:
        episode = state.episode
        peaked = beyond and episode.peak is not None and _worse(rule, episode.peak, value) == value != episode.peak
        if beyond:
            episode.peak = value if episode.peak is None else _worse(rule, episode.peak, value)
        if (episode.level is Level.WARN and page and state.page_since is not None and at - state.page_since >= rule.page_for):
            episode.level, episode.shown = Level.PAGE, value
            events.append(Event(Kind.ESCALATED, episode.fingerprint, at, Level.PAGE, value, silenced=silenced))
        elif clear and state.clear_since is not None and at - state.clear_since >= rule.clear_for:
            events.append(_resolve(state, at, value, ""))
        elif peaked or _moved(episode.shown, value):
            episode.shown = value
            events.append(Event(Kind.UPDATED, episode.fingerprint, at, episode.level, value, silenced=silenced,
                                detail="a new peak" if peaked else ""))
        return events
    level = None
    if page and state.page_since is not None and at - state.page_since >= rule.page_for:
        level = Level.PAGE
    elif warn and state.breach_since is not None and at - state.breach_since >= rule.warn_for:
        level = Level.WARN
    elif page and rule.warn is None and state.breach_since is not None and at - state.breach_since >= rule.page_for:
        level = Level.PAGE
    if level is not None:
        started = state.breach_since or at
        episode = Episode(episode_fingerprint(pipeline, sli, started), started, level, peak=value, opened_at=arrived, shown=value)
        state.episode, state.status, state.since = episode, Status.FIRING, at
        events.append(Event(Kind.OPENED, episode.fingerprint, at, level, value, silenced=silenced, started_at=started))
    elif beyond:
        if state.status is not Status.PENDING:
            state.status, state.since = Status.PENDING, at
    elif state.status is not Status.OK:
        state.status, state.since = Status.OK, at
    return events


def _moved(shown: float | None, value: float) -> bool:
    """Whether ``value`` is materially different from the value a message shows (by ``MATERIAL`` of it, or from zero)."""
    if shown is None:
        return True
    if shown == 0:
        return value != 0
    return abs(value - shown) >= MATERIAL * abs(shown)


def tick(state: State, rule: Rule, now: datetime, *, interval: timedelta, mandatory: bool, pipeline: str = "",
         sli: str = "", hold_no_data: bool = False) -> list[Event]:
    """What the passing of (wall) time causes: no data (nothing arrived for three intervals; not while ``hold_no_data``,
    when the bot's own feed of samples is behind), reminders, a silence that ran out. A firing episode whose samples
    stop without "no data" (an SLI that is not mandatory, or while no data waits) is said to be unmeasured, once: what
    it shows is then the last measurement, not now."""
    events: list[Event] = []
    if state.silenced_until is not None and now >= state.silenced_until:
        state.silenced_until, state.silenced_by, state.silence_reason = None, None, ""
        if state.episode is not None and state.status in (Status.FIRING, Status.NO_DATA):
            state.episode.reminded_at = now  # the notice is the reminder
            events.append(Event(Kind.UNSILENCED, state.episode.fingerprint, now, state.episode.level, state.last_value, detail="expired"))
    arrived = state.last_arrival or state.last_time  # series stored before arrivals were kept: their newest sample time
    silent = (mandatory and rule.enabled and not hold_no_data and arrived is not None
              and now - arrived > NO_DATA_INTERVALS * interval)
    if silent and state.status is not Status.NO_DATA:
        assert arrived is not None
        started = arrived + NO_DATA_INTERVALS * interval
        if state.status is Status.FIRING and state.episode is not None:
            events.append(_resolve(state, now, None, "no samples any more: watching for data instead"))
        silent_episode = Episode(episode_fingerprint(pipeline, sli, started, no_data=True), started, Level.WARN, no_data=True, opened_at=now)
        state.episode, state.status, state.since = silent_episode, Status.NO_DATA, now
        state.breach_since = state.page_since = state.clear_since = None
        events.append(Event(Kind.OPENED, silent_episode.fingerprint, now, Level.WARN, None, silenced=state.silenced(now),
                            detail=f"no sample has arrived since {_iso(arrived)}", started_at=started))
        return events
    episode = state.episode
    if (episode is not None and state.status is Status.FIRING and episode.unmeasured_since is None and rule.enabled
            and arrived is not None and now - arrived > NO_DATA_INTERVALS * interval):
        episode.unmeasured_since = arrived
        events.append(Event(Kind.UNMEASURED, episode.fingerprint, now, episode.level, state.last_value, silenced=state.silenced(now),
                            detail=_iso(arrived) or ""))  # the last sample's arrival
    if (episode is not None and state.status in (Status.FIRING, Status.NO_DATA) and episode.acked_by is None
            and not state.silenced(now) and now - (episode.reminded_at or episode.opened_at or episode.started_at) >= rule.repeat):
        episode.reminded_at = now
        events.append(Event(Kind.REMINDER, episode.fingerprint, now, episode.level, state.last_value))
    return events


def acknowledge(state: State, user: str, at: datetime) -> Event:
    """``user`` acknowledges the current episode (reminders stop); StateError when there is none or it already is."""
    episode = _current(state)
    if episode.acked_by is not None:
        raise StateError(f"already acknowledged by <@{episode.acked_by}>")
    episode.acked_by, episode.acked_at = user, at
    return Event(Kind.ACKNOWLEDGED, episode.fingerprint, at, episode.level, state.last_value, actor=user)


def silence(state: State, until: datetime, user: str, reason: str, at: datetime) -> Event | None:
    """Silence the series until ``until`` (an event when an episode is open); StateError for a time in the past."""
    if until <= at:
        raise StateError("a silence must end in the future")
    state.silenced_until, state.silenced_by, state.silence_reason = until, user, reason
    if state.episode is None or state.status not in (Status.FIRING, Status.NO_DATA):
        return None
    return Event(Kind.SILENCED, state.episode.fingerprint, at, state.episode.level, state.last_value, actor=user, detail=reason)


def unsilence(state: State, user: str, at: datetime) -> Event | None:
    """Lift the series' silence early; StateError when it is not silenced."""
    if not state.silenced(at):
        raise StateError("it is not silenced")
    state.silenced_until, state.silenced_by, state.silence_reason = None, None, ""
    if state.episode is None or state.status not in (Status.FIRING, Status.NO_DATA):
        return None
    state.episode.reminded_at = at
    return Event(Kind.UNSILENCED, state.episode.fingerprint, at, state.episode.level, state.last_value, actor=user)


def _current(state: State) -> Episode:
    if state.episode is None or state.status not in (Status.FIRING, Status.NO_DATA):
        raise StateError("nothing is firing")
    return state.episode


def _resolve(state: State, at: datetime, value: float | None, detail: str) -> Event:
    assert state.episode is not None
    episode = state.episode
    state.episode, state.status, state.since = None, Status.OK, at
    state.breach_since = state.page_since = state.clear_since = None
    return Event(Kind.RESOLVED, episode.fingerprint, at, episode.level, value, detail=detail, silenced=state.silenced(at))


def _growth(state: State, at: datetime, value: float) -> float | None:
    """How much the value grew over the last ``GROWTH_WINDOW`` (None until a sample that old is known)."""
    history = state.history
    history.append((at, value))
    cutoff = at - GROWTH_WINDOW
    while len(history) > 1 and history[1][0] <= cutoff:
        del history[0]
    then, before = history[0]
    if then > cutoff:
        return None
    return value - before


def _worse(rule: Rule, a: float, b: float) -> float:
    return min(a, b) if rule.mode is Mode.BELOW else max(a, b)


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment is not None else None


def _time(text: Any) -> datetime | None:
    return datetime.fromisoformat(text) if text else None
