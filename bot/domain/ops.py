"""Oncall operations on Kafka, as plans: a backfill (reset a stopped consumer group's offsets) and a DLQ replay
(copy dead letters back, exactly once, keeping event time). Pure: the cluster's answers come in as data.

Arguments are read the same way from Slack and from the terminal; every refusal is an ``OpsError`` whose
message says what to change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from bot.domain.readers import Member

TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
REPLAY_HEADER_ID, REPLAY_HEADER_SOURCE = "changeops-replay-id", "changeops-source"
Headers = list[tuple[str, bytes | None]]


class OpsError(ValueError):
    """Bad arguments or a plan that cannot be run; the message is for people."""


class OpKind(StrEnum):
    """What an operation does."""

    BACKFILL = "backfill"
    REPLAY = "replay"


class OpState(StrEnum):
    """Where an operation stands. A backfill: planned -> applied (-> undone); a replay: planned -> running ->
    done | cancelled | failed (``cancelling`` while it reaches a transaction boundary). Either may be cancelled
    while planned."""

    PLANNED = "planned"
    APPLIED = "applied"
    UNDONE = "undone"
    RUNNING = "running"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    DONE = "done"
    FAILED = "failed"

    @property
    def final(self) -> bool:
        """Nothing more will happen."""
        return self in (OpState.UNDONE, OpState.CANCELLED, OpState.DONE, OpState.FAILED)


# --- arguments ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BackfillRequest:
    """Reset ``group`` on ``topic`` to a time (or a duration ago), to explicit offsets, to the earliest or the latest
    offset (``to_end``), or by ``shift`` messages from where it is."""

    group: str
    topic: str
    to_time: datetime | None = None
    to_offsets: dict[int, int] = field(default_factory=dict)
    partitions: tuple[int, ...] = ()
    to_end: str | None = None  # "earliest" or "latest"
    shift: int | None = None

    def target_text(self) -> str:
        """Where it resets to, as the command said it: ``2026-12-02 08:00:00 UTC``, ``the earliest offset``, ``-500``."""
        if self.to_time is not None:
            return f"{self.to_time:%Y-%m-%d %H:%M:%S} UTC"
        if self.to_end is not None:
            return f"the {self.to_end} offset"
        if self.shift is not None:
            return f"{self.shift:+,} messages from where it is"
        return "offsets " + ", ".join(f"{p}:{o}" for p, o in sorted(self.to_offsets.items()))

    def as_json(self) -> dict[str, Any]:
        """For storage."""
        return {"group": self.group, "topic": self.topic, "to_time": self.to_time.isoformat() if self.to_time else None,
                "to_offsets": {str(p): o for p, o in self.to_offsets.items()}, "partitions": list(self.partitions),
                **({"to_end": self.to_end} if self.to_end else {}), **({"shift": self.shift} if self.shift is not None else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BackfillRequest:
        """From storage."""
        return cls(data["group"], data["topic"], datetime.fromisoformat(data["to_time"]) if data.get("to_time") else None,
                   {int(p): int(o) for p, o in (data.get("to_offsets") or {}).items()}, tuple(data.get("partitions") or ()),
                   data.get("to_end"), data.get("shift"))


@dataclass(frozen=True)
class ReplayRequest:
    """Copy the messages of ``dlq`` (optionally a time range, a header filter, the first ``limit``) to ``target``, or
    (``target`` None) each back to the topic its headers name."""

    dlq: str
    target: str | None
    since: datetime | None = None
    until: datetime | None = None
    limit: int | None = None
    header: tuple[str, str] | None = None
    rate: float | None = None  # messages per second at most
    again: bool = False  # copy messages an earlier replay already copied

    def as_json(self) -> dict[str, Any]:
        """For storage."""
        return {"dlq": self.dlq, "target": self.target, "since": _iso(self.since), "until": _iso(self.until), "limit": self.limit,
                "header": list(self.header) if self.header else None, "rate": self.rate, "again": self.again}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplayRequest:
        """From storage."""
        header = data.get("header")
        return cls(data["dlq"], data["target"], _time(data.get("since")), _time(data.get("until")), data.get("limit"),
                   (str(header[0]), str(header[1])) if header else None, data.get("rate"), bool(data.get("again")))

    def matches(self, headers: Headers) -> bool:
        """Whether a message with these headers passes the ``--filter``."""
        return header_matches(self.header, headers)

    @property
    def to_original(self) -> bool:
        """Each dead letter goes back to its original topic."""
        return self.target is None

    def target_text(self) -> str:
        """``orders.replay``, or ``their original topics``."""
        return self.target if self.target is not None else "their original topics"


def header_matches(wanted: tuple[str, str] | None, headers: Headers) -> bool:
    """Whether ``headers`` hold the header ``wanted`` (name, value); everything matches no filter."""
    if wanted is None:
        return True
    name, value = wanted
    return any(k == name and (v or b"").decode("utf-8", "replace") == value for k, v in headers)


BACKFILL_USAGE = ("`/backfill GROUP TOPIC --to-time 2026-12-02T08:00Z | --by-duration 2h | --to-offsets 0:1200,1:980 | --to-earliest | "
                  "--to-latest | --shift-by -500 [--partitions 0,1]`")
TARGETS = ("--to-time", "--by-duration", "--to-offsets", "--to-earliest", "--to-latest", "--shift-by")
REPLAY_USAGE = ("`/replay DLQ_TOPIC --to TOPIC | --to-original [--since T] [--until T] [--limit N] [--filter header=value] [--rate N/s] [--again]` "
                "(a plan first; add `--dry-run` to only see it)")


def backfill_request(args: list[str], now: datetime) -> BackfillRequest:
    """``GROUP TOPIC --to-time T | --by-duration 2h | --to-offsets P:O,... | --to-earliest | --to-latest | --shift-by N
    [--partitions 0,1]``."""
    positional, options = _split(args, {"--to-time", "--to-offsets", "--by-duration", "--shift-by", "--partitions", "--from-file"},
                                 {"--to-earliest", "--to-latest"})
    if "--from-file" in options:
        raise OpsError("a file of offsets is read from a terminal (`bot backfill GROUP TOPIC --from-file FILE`); here, give them as "
                       "--to-offsets 0:1200,1:980")
    if len(positional) != 2:
        raise OpsError(f"give the consumer group and the topic. Usage: {BACKFILL_USAGE}")
    group, topic = positional
    name(group, "consumer group")
    name(topic, "topic")
    given = [k for k in TARGETS if k in options]
    if len(given) != 1:
        raise OpsError(f"give exactly one of {', '.join(TARGETS)}. Usage: {BACKFILL_USAGE}")
    to_time, offsets, to_end, shift = None, {}, None, None
    if "--to-earliest" in options or "--to-latest" in options:
        to_end = "earliest" if "--to-earliest" in options else "latest"
    elif "--shift-by" in options:
        if not re.fullmatch(r"[+-]?\d{1,18}", options["--shift-by"]) or int(options["--shift-by"]) == 0:
            raise OpsError(f"--shift-by {options['--shift-by'][:40]!r} is not a number of messages other than zero (negative: read again; "
                           "positive: skip)")
        shift = int(options["--shift-by"])
    elif "--to-time" in options:
        to_time = moment(options["--to-time"], "--to-time")
        if to_time > now:
            raise OpsError(f"--to-time {to_time:%Y-%m-%d %H:%M} UTC is in the future: a backfill goes back in time")
    elif "--by-duration" in options:
        to_time = now - duration(options["--by-duration"], "--by-duration")
    else:
        offsets = offsets_of(options["--to-offsets"])
    partitions = tuple(partitions_of(options["--partitions"])) if "--partitions" in options else ()
    if offsets and partitions and set(offsets) - set(partitions):
        raise OpsError("--to-offsets names partitions that --partitions leaves out")
    return BackfillRequest(group, topic, to_time, offsets, partitions, to_end, shift)


def replay_request(args: list[str], now: datetime) -> tuple[ReplayRequest, bool]:
    """``DLQ --to TOPIC | --to-original [--since T] [--until T] [--limit N] [--filter h=v] [--rate N/s] [--again] [--dry-run]``;
    the request and whether only a dry run is wanted."""
    positional, options = _split(args, {"--to", "--since", "--until", "--limit", "--filter", "--rate"}, {"--again", "--dry-run", "--to-original"})
    if len(positional) != 1:
        raise OpsError(f"give the DLQ topic. Usage: {REPLAY_USAGE}")
    dlq = name(positional[0], "topic")
    if ("--to" in options) == ("--to-original" in options):
        raise OpsError("say where to: --to TOPIC (a replay-only topic keeps replays out of live windows) or --to-original (each back to the "
                       f"topic its headers name), not both. Usage: {REPLAY_USAGE}")
    target = name(options["--to"], "topic") if "--to" in options else None
    if target == dlq:
        raise OpsError("the target is the DLQ itself: replaying a topic into itself would copy forever")
    since = moment(options["--since"], "--since") if "--since" in options else None
    until = moment(options["--until"], "--until") if "--until" in options else None
    for label, when in (("--since", since), ("--until", until)):
        if when is not None and when > now:
            raise OpsError(f"{label} {when:%Y-%m-%d %H:%M} UTC is in the future")
    if since and until and until <= since:
        raise OpsError("--until is not after --since")
    limit = None
    if "--limit" in options:
        if not options["--limit"].isdigit() or not 0 < int(options["--limit"]) <= 100_000_000:
            raise OpsError(f"--limit {options['--limit']!r} is not a number of messages")
        limit = int(options["--limit"])
    header = None
    if "--filter" in options:
        key, equals, value = options["--filter"].partition("=")
        if not equals or not key:
            raise OpsError(f"--filter {options['--filter']!r} is not header=value")
        header = (key, value)
    rate = None
    if "--rate" in options:
        match = re.fullmatch(r"(\d+(?:\.\d+)?)(?:/s)?", options["--rate"])
        if not match or float(match.group(1)) <= 0:
            raise OpsError(f"--rate {options['--rate']!r} is not a rate such as 500/s")
        rate = float(match.group(1))
    return ReplayRequest(dlq, target, since, until, limit, header, rate, "--again" in options), "--dry-run" in options


def _split(args: list[str], valued: set[str], flags: set[str]) -> tuple[list[str], dict[str, str]]:
    positional: list[str] = []
    options: dict[str, str] = {}
    index = 0
    while index < len(args):
        word = args[index]
        key, equals, inline = word.partition("=")
        if key in valued:
            if equals:
                value = inline
            elif index + 1 < len(args):
                index += 1
                value = args[index]
            else:
                raise OpsError(f"{key} needs a value")
            if key in options:
                raise OpsError(f"{key} is given twice")
            options[key] = value
        elif word in flags:
            options[word] = ""
        elif word.startswith("--"):
            raise OpsError(f"unknown option {word} (known: {', '.join(sorted(valued | flags))})")
        else:
            positional.append(word)
        index += 1
    return positional, options


def name(text: str, what: str) -> str:
    """A Kafka topic or group name, or OpsError."""
    if not TOPIC.fullmatch(text):
        raise OpsError(f"{text[:80]!r} is not a {what} name (letters, digits, . _ -)")
    return text


def moment(text: str, what: str) -> datetime:
    """An ISO 8601 time with a zone (``Z`` or ``+01:00``), in UTC."""
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise OpsError(f"{what} {text[:40]!r} is not an ISO 8601 time such as 2026-12-02T08:00:00Z") from None
    if parsed.tzinfo is None:
        raise OpsError(f"{what} {text!r} needs a zone (Z or +01:00)")
    return parsed.astimezone(UTC)


def duration(text: str, what: str) -> timedelta:
    """``90m``, ``2h``, ``1d``, ``1h30m``."""
    match = re.fullmatch(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text.strip().lower())
    if not text.strip() or not match or not any(match.groups()):
        raise OpsError(f"{what} {text[:40]!r} is not a duration such as 2h, 90m or 1d")
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    span = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if span <= timedelta(0):
        raise OpsError(f"{what} must be longer than zero")
    return span


def offsets_of(text: str) -> dict[int, int]:
    """``0:1200,1:980`` -> {0: 1200, 1: 980}."""
    found: dict[int, int] = {}
    for part in text.split(","):
        partition, colon, offset = part.strip().partition(":")
        if not colon or not partition.isdigit() or not offset.isdigit():
            raise OpsError(f"--to-offsets {text[:80]!r} is not PARTITION:OFFSET,... (e.g. 0:1200,1:980)")
        if int(partition) in found:
            raise OpsError(f"--to-offsets names partition {partition} twice")
        found[int(partition)] = int(offset)
    return found


def offsets_file(text: str, topic: str) -> dict[int, int]:
    """The offsets of ``topic`` in a ``topic,partition,offset`` CSV (what ``kafka-consumer-groups --reset-offsets --export``
    and ``bot backfill --export`` write); OpsError naming the line for anything else, or when it names other topics."""
    found: dict[int, int] = {}
    others: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != 3 or not TOPIC.fullmatch(cells[0]) or not cells[1].isdigit() or not re.fullmatch(r"-?\d{1,19}", cells[2]):
            raise OpsError(f"line {number} of the file is not topic,partition,offset: {line.strip()[:80]!r}")
        if int(cells[2]) < 0:
            raise OpsError(f"line {number} of the file gives partition {cells[1]} of {cells[0]} no offset ({cells[2]}): the group never committed "
                           "there; leave the line out")
        if cells[0] != topic:
            others.add(cells[0])
            continue
        if int(cells[1]) in found:
            raise OpsError(f"line {number} of the file names partition {cells[1]} of {topic} a second time")
        found[int(cells[1])] = int(cells[2])
    if others:
        raise OpsError(f"the file also names {', '.join(sorted(others)[:5])}: a backfill resets one topic; split the file by topic")
    if not found:
        raise OpsError(f"the file names no offset of {topic}")
    return found


def offsets_csv(topic: str, offsets: dict[int, int]) -> str:
    """``topic,partition,offset`` lines, as ``kafka-consumer-groups --export`` writes them."""
    return "".join(f"{topic},{partition},{offset}\n" for partition, offset in sorted(offsets.items()))


def partitions_of(text: str) -> list[int]:
    """``0,1,4`` -> [0, 1, 4]."""
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() for p in parts):
        raise OpsError(f"--partitions {text[:80]!r} is not a list of partition numbers (e.g. 0,1)")
    return sorted({int(p) for p in parts})


# --- backfill plans ---------------------------------------------------------------------------

@dataclass(frozen=True)
class PartitionMove:
    """One partition of a backfill: where the group is, where it goes, what that re-reads."""

    partition: int
    committed: int | None  # None: the group never committed on this partition
    target: int
    earliest: int
    latest: int
    clamped: bool = False  # the asked time or offset was before the earliest retained offset: data is gone
    asked: int | None = None  # a shifted offset outside the log, before it was clamped to the log's bounds

    @property
    def reread(self) -> int:
        """Messages the group will read again (negative: it skips that many)."""
        return (self.committed if self.committed is not None else self.latest) - self.target

    def as_json(self) -> dict[str, Any]:
        """For storage and ``--format json``."""
        return {"partition": self.partition, "committed": self.committed, "target": self.target, "earliest": self.earliest,
                "latest": self.latest, "reread": self.reread, "before_retention": self.clamped,
                **({"asked": self.asked} if self.asked is not None else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartitionMove:
        """From storage."""
        return cls(data["partition"], data["committed"], data["target"], data["earliest"], data["latest"], bool(data.get("before_retention")),
                   data.get("asked"))


def skipped(moves: list[dict[str, Any]]) -> int:
    """Messages a reset skips (stored moves): unread ones the group will never read, lost to it."""
    return sum(max(0, -m["reread"]) for m in moves)


def plan_backfill(request: BackfillRequest, partitions: list[int], watermarks: dict[int, tuple[int, int]], committed: dict[int, int],
                  by_time: dict[int, int]) -> list[PartitionMove]:
    """The moves, from the cluster's answers: the topic's partitions, their (earliest, latest) offsets, the group's committed
    offsets, and for a time the first offset at or after it (-1 when every message is older: the end)."""
    chosen = list(request.partitions) or sorted(request.to_offsets) or partitions
    unknown = sorted(set(chosen) - set(partitions))
    if unknown:
        raise OpsError(f"{request.topic} has no partition {', '.join(map(str, unknown))} (it has {', '.join(map(str, partitions))})")
    moves = []
    for partition in chosen:
        earliest, latest = watermarks[partition]
        asked = None
        if request.to_time is not None:
            found = by_time.get(partition, -1)
            target = latest if found < 0 else found
        elif request.to_end is not None:
            target = earliest if request.to_end == "earliest" else latest
        elif request.shift is not None:
            base = committed.get(partition)
            if base is None:
                raise OpsError(f"partition {partition}: group {request.group} has no committed offset to shift from; give --to-time, "
                               "--to-offsets or --to-earliest instead")
            target = base + request.shift
            if not earliest <= target <= latest:  # clamped to the log, as kafka-consumer-groups does, and shown
                asked, target = target, min(max(target, earliest), latest)
        else:
            target = request.to_offsets[partition]
            if target > latest:
                raise OpsError(f"partition {partition}: offset {target} is past the end of the partition ({latest})")
        moves.append(PartitionMove(partition, committed.get(partition), max(target, earliest), earliest, latest,
                                   target < earliest and asked is None, asked))
    return moves


def refuse_active(group: str, state: str, members: list[Member]) -> None:
    """OpsError while the group has members: its job must be stopped before its offsets move."""
    if members:
        who = ", ".join(f"{m.client_id} on {m.host}" for m in members[:10]) + (f" and {len(members) - 10} more" if len(members) > 10 else "")
        raise OpsError(f"consumer group {group} is {state.lower()} with {len(members)} connected client{'s' if len(members) != 1 else ''} "
                       f"({who}): stop the job first (take a savepoint, then stop it), then plan again")


# --- replay --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Span:
    """Offsets ``[start, end)`` of one DLQ partition that a replay covers."""

    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class Copied:
    """What an earlier replay copied: its spans (as far as it got) and its filter."""

    replay: int
    spans: tuple[Span, ...]
    header: tuple[str, str] | None


def already_copied(partition: int, offset: int, headers: Headers, earlier: list[Copied]) -> int | None:
    """The earlier replay that copied this message, if any."""
    for copied in earlier:
        for span in copied.spans:
            if span.partition == partition and span.start <= offset < span.end:
                if header_matches(copied.header, headers):
                    return copied.replay
    return None


def progress_text(copied: int, total: int, seconds: float, moved: int | None = None) -> str:
    """``1,200 of 10,000 (12%) · 850/s · about 10 s left``; the rate from the ``moved`` copied in these ``seconds`` (a resumed
    run copied the rest before)."""
    rate = (copied if moved is None else moved) / seconds if seconds > 0 else 0.0
    share = f" ({copied / total:.0%})" if total else ""
    left = f" · about {_span((total - copied) / rate)} left" if rate > 0 and total > copied else ""
    return f"{copied:,} of {total:,}{share} · {rate:,.0f}/s{left}"


def _span(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds} s"


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _time(text: Any) -> datetime | None:
    return datetime.fromisoformat(text) if text else None
