"""Data loss before it happens: when a topic's retention will delete records a consumer group has not read yet.

Per partition, from what successive polls saw: the group's committed offset and the time of the oldest record it
has not read (its time lag), how fast both move, and the topic's ``retention.ms`` and ``retention.bytes``.

- By time: Kafka deletes a segment once its newest record is older than ``retention.ms``, so the oldest unread record
  goes no earlier than its own time plus ``retention.ms``. The time lag grows by ``1 - a`` per second, ``a`` being how
  fast the time of the oldest unread record moves on (0 for a stopped group): unread data goes in
  ``(retention - lag) / (1 - a)``; never at the current rate when the group keeps pace.
- By size: a partition keeps at least ``retention.bytes``; unread data goes once the unread records outgrow it, in
  ``(capacity - unread) / (produced/s - consumed/s)``, the capacity counted in records of the mean size read (keys,
  values and headers as read: compressed topics count larger, so the forecast errs early).
- Lost: a committed offset below the log start offset. The offsets between were deleted unread; the time they
  covered runs from the oldest unread record's time as last seen to the time of the first record kept.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

HORIZON = timedelta(days=7)   # farther forecasts are reported as this: "not within 7 days at the current rate"
WINDOW = timedelta(minutes=15)  # rates are measured over the polls of this long
KEPT = 32                     # polls remembered per partition


@dataclass(frozen=True, slots=True)
class Seen:
    """One partition a group reads, as one poll saw it."""

    topic: str
    partition: int
    at: datetime
    low: int  # log start offset
    high: int  # end offset (the next record's)
    committed: int | None  # None: the group never committed here
    oldest_ms: int | None = None  # time (ms) of the record at ``committed``, when it could be read
    first_ms: int | None = None  # time (ms) of the record at ``low`` (asked only when data was lost)
    record_bytes: int | None = None  # size of the record read at ``committed``


@dataclass(frozen=True, slots=True)
class Retention:
    """A topic's retention; None: unlimited."""

    ms: int | None
    bytes: int | None  # per partition


@dataclass(frozen=True, slots=True)
class Lost:
    """Offsets ``first``..``last`` of a partition deleted before the group read them, and the time they covered."""

    topic: str
    partition: int
    first: int
    last: int
    since: datetime | None  # the oldest of them, as last seen (None: deleted before the bot saw it)
    until: datetime | None  # the first record kept

    def text(self) -> str:
        """``orders/4 offsets 120–4,999 (4,880 messages written 09:12–11:40 UTC)``."""
        span = ""
        if self.since is not None and self.until is not None:
            span = f" written {_utc(self.since)} to {_utc(self.until)}"
        elif self.until is not None:
            span = f" written before {_utc(self.until)}"
        count = self.last - self.first + 1
        return f"{self.topic}/{self.partition} offsets {self.first:,}–{self.last:,} ({count:,} message{'s' if count != 1 else ''}{span})"

    def as_json(self) -> list[Any]:
        """For a sample's label."""
        return [self.topic, self.partition, self.first, self.last, _ms(self.since), _ms(self.until)]

    @classmethod
    def from_json(cls, data: list[Any]) -> Lost:
        """From a sample's label."""
        topic, partition, first, last, since, until = data
        return cls(str(topic), int(partition), int(first), int(last), _time(since), _time(until))


@dataclass(frozen=True, slots=True)
class Forecast:
    """When a group first loses unread data: ``seconds`` from now (0: already lost, or any moment), where, by which
    retention; ``lost``: what is already gone."""

    seconds: float
    topic: str | None = None
    partition: int | None = None
    by: str = ""  # "retention.ms" or "retention.bytes"
    lost: tuple[Lost, ...] = ()

    def labels(self, group: str) -> dict[str, str]:
        """The sample's labels (the alert message reads them)."""
        found = {"group": group}
        if self.topic is not None:
            found["partition"] = f"{self.topic}/{self.partition}"
            found["by"] = self.by
        if self.lost:
            found["lost"] = json.dumps([lost.as_json() for lost in self.lost], separators=(",", ":"))
        return found


@dataclass
class Track:
    """What the polls saw of one partition: recent (time, committed, oldest unread time, end offset), the time of the
    oldest unread record at the last committed offset, and the mean record size read."""

    polls: deque[tuple[datetime, int, int | None, int]] = field(default_factory=lambda: deque(maxlen=KEPT))
    oldest: tuple[int, int] | None = None  # (committed offset, its record's time ms), as last read
    record_bytes: float | None = None

    def add(self, seen: Seen) -> None:
        """Remember one poll."""
        if seen.committed is None:
            return
        self.polls.append((seen.at, seen.committed, seen.oldest_ms, seen.high))
        if seen.oldest_ms is not None and seen.committed >= seen.low:
            self.oldest = (seen.committed, seen.oldest_ms)
        if seen.record_bytes is not None:
            self.record_bytes = seen.record_bytes if self.record_bytes is None else 0.8 * self.record_bytes + 0.2 * seen.record_bytes

    def before(self, now: datetime) -> tuple[datetime, int, int | None, int] | None:
        """The oldest poll within ``WINDOW`` of ``now`` that is older than now (None: only this one)."""
        for poll in self.polls:
            if now - poll[0] <= WINDOW and poll[0] < now:
                return poll
        return None


def lost_of(seen: Seen, track: Track | None) -> Lost | None:
    """What of this partition was deleted unread (None: nothing)."""
    if seen.committed is None or seen.committed >= seen.low:
        return None
    since = None
    if track is not None and track.oldest is not None and track.oldest[0] == seen.committed:
        since = _time(track.oldest[1])
    return Lost(seen.topic, seen.partition, seen.committed, seen.low - 1, since, _time(seen.first_ms))


def seconds_left(seen: Seen, track: Track | None, retention: Retention) -> tuple[float, str] | None:
    """Seconds until the oldest unread record of this partition is deleted at the current rate, and by which retention
    (None: nothing unread, nothing known yet, or not at this rate)."""
    if seen.committed is None or seen.committed >= seen.high or seen.committed < seen.low:
        return None
    then = track.before(seen.at) if track is not None else None
    if then is None:
        return None  # one poll says nothing about rates
    at, committed, oldest_ms, high = then
    elapsed = (seen.at - at).total_seconds()
    found: list[tuple[float, str]] = []
    if retention.ms is not None and seen.oldest_ms is not None and oldest_ms is not None:
        pace = (seen.oldest_ms - oldest_ms) / 1000 / elapsed  # seconds of records read per second
        lag = seen.at.timestamp() - seen.oldest_ms / 1000
        if pace < 1:
            found.append((max(0.0, (retention.ms / 1000 - lag) / (1 - pace)), "retention.ms"))
    if retention.bytes is not None and track is not None and track.record_bytes:
        capacity = retention.bytes / track.record_bytes
        unread = seen.high - seen.committed
        growth = ((seen.high - high) - (seen.committed - committed)) / elapsed  # unread records per second
        if unread >= capacity:
            found.append((0.0, "retention.bytes"))
        elif growth > 0:
            found.append(((capacity - unread) / growth, "retention.bytes"))
    return min(found) if found else None


def forecast(seen: list[Seen], tracks: dict[tuple[str, int], Track], retention: dict[str, Retention]) -> Forecast | None:
    """The group's forecast over its partitions (each poll then remembered in ``tracks``); None while a partition with
    unread data has been polled only once (its rates are not known yet) and none lost any."""
    lost = []
    best: tuple[float, str, int, str] | None = None
    for one in seen:
        key = (one.topic, one.partition)
        track = tracks.get(key)
        gone = lost_of(one, track)
        if gone is not None:
            lost.append(gone)
        left = seconds_left(one, track, retention.get(one.topic, Retention(None, None)))
        if left is not None and (best is None or left[0] < best[0]):
            best = (left[0], one.topic, one.partition, left[1])
        tracks.setdefault(key, Track()).add(one)
    if lost:
        first = lost[0]
        return Forecast(0.0, first.topic, first.partition, "deleted", tuple(lost))
    if best is not None:
        return Forecast(min(best[0], HORIZON.total_seconds()), best[1], best[2], best[3])
    unknown = any(one.committed is not None and one.committed < one.high and len(tracks[(one.topic, one.partition)].polls) < 2
                  for one in seen)
    return None if unknown else Forecast(HORIZON.total_seconds())  # nothing unread, or the group keeps pace


def read_lost(label: str | None) -> list[Lost]:
    """The ``lost`` label of a sample, read back (empty when absent or unreadable)."""
    if not label:
        return []
    try:
        return [Lost.from_json(item) for item in json.loads(label)]
    except (ValueError, TypeError):
        return []


def duration_text(seconds: float) -> str:
    """``2 h 40 m``, ``3 d 4 h``, ``45 s``."""
    total = int(round(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} m" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} m"
    return f"{secs} s"


def _utc(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def _ms(moment: datetime | None) -> int | None:
    return int(moment.timestamp() * 1000) if moment is not None else None


def _time(ms: int | None) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, UTC) if ms is not None else None
