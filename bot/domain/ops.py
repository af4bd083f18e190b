"""Oncall operations on Kafka, as plans: a backfill (reset a stopped consumer group's offsets) and a DLQ replay
(copy dead letters back, exactly once, keeping event time). Pure: the cluster's answers come in as data.

Arguments are read the same way from Slack and from the terminal; every refusal is an ``OpsError`` whose
message says what to change.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from bot.domain.lineage.model import GROUP, GROUP_RULE
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
    PAUSE = "pause"  # a Flink job stopped with a savepoint
    RESUME = "resume"  # a Flink job started again from a savepoint


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
    """Reset ``group`` on ``topics`` (none: every topic it has committed offsets on) to a time (or a duration ago), to
    explicit offsets (per topic), to the earliest or the latest offset (``to_end``), or by ``shift`` messages from where it is."""

    group: str
    topics: tuple[str, ...]
    to_time: datetime | None = None
    to_offsets: dict[str, dict[int, int]] = field(default_factory=dict)
    partitions: tuple[int, ...] = ()  # of its one topic
    to_end: str | None = None  # "earliest" or "latest"
    shift: int | None = None

    @property
    def all_topics(self) -> bool:
        """Every topic the group has committed offsets on (``--all-topics``)."""
        return not self.topics

    def topics_text(self) -> str:
        """``orders``, ``orders, payments``, or ``all its topics``."""
        return ", ".join(self.topics) if self.topics else "all its topics"

    def target_text(self) -> str:
        """Where it resets to, as the command said it: ``2026-12-02 08:00:00 UTC``, ``the earliest offset``, ``-500``."""
        if self.to_time is not None:
            return f"{self.to_time:%Y-%m-%d %H:%M:%S} UTC"
        if self.to_end is not None:
            return f"the {self.to_end} offset"
        if self.shift is not None:
            return f"{self.shift:+,} messages from where it is"
        if len(self.to_offsets) == 1:
            return "offsets " + ", ".join(f"{p}:{o}" for p, o in sorted(next(iter(self.to_offsets.values())).items()))
        return "offsets " + "; ".join(f"{topic} " + ", ".join(f"{p}:{o}" for p, o in sorted(offsets.items()))
                                      for topic, offsets in sorted(self.to_offsets.items()))

    def as_json(self) -> dict[str, Any]:
        """For storage."""
        return {"group": self.group, "topics": list(self.topics), "to_time": self.to_time.isoformat() if self.to_time else None,
                "to_offsets": {t: {str(p): o for p, o in offsets.items()} for t, offsets in self.to_offsets.items()},
                "partitions": list(self.partitions),
                **({"to_end": self.to_end} if self.to_end else {}), **({"shift": self.shift} if self.shift is not None else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BackfillRequest:
        """From storage."""
        return cls(data["group"], tuple(data["topics"]), datetime.fromisoformat(data["to_time"]) if data.get("to_time") else None,
                   {t: {int(p): int(o) for p, o in offsets.items()} for t, offsets in (data.get("to_offsets") or {}).items()},
                   tuple(data.get("partitions") or ()), data.get("to_end"), data.get("shift"))


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


def stamp_notes(dlq: str, append_time: list[str]) -> list[str]:
    """What a replay cannot keep of the events' own times, where a topic's broker stamps messages as they are appended."""
    notes = [f"{dlq} stamps each letter when it is appended (message.timestamp.type=LogAppendTime): the timestamps the copies carry "
             "are when the letters reached it, not the events' own"] if dlq in append_time else []
    if others := [t for t in append_time if t != dlq]:
        notes.append(f"{', '.join(others)} stamp{'s' if len(others) == 1 else ''} each message when it is appended (LogAppendTime): the "
                     "copies written there carry the time of the replay, not the events' own")
    return notes


def header_matches(wanted: tuple[str, str] | None, headers: Headers) -> bool:
    """Whether ``headers`` hold the header ``wanted`` (name, value); everything matches no filter."""
    if wanted is None:
        return True
    name, value = wanted
    return any(k == name and (v or b"").decode("utf-8", "replace") == value for k, v in headers)


BACKFILL_USAGE = ("`/backfill GROUP TOPIC[,TOPIC...] | --all-topics  --to-time 2026-12-02T08:00Z | --by-duration 2h | "
                  "--to-offsets 0:1200,1:980 | --to-earliest | --to-latest | --shift-by -500 [--partitions 0,1]`")
TARGETS = ("--to-time", "--by-duration", "--to-offsets", "--to-earliest", "--to-latest", "--shift-by")
REPLAY_USAGE = ("`/replay DLQ_TOPIC --to TOPIC | --to-original [--since T] [--until T] [--limit N] [--filter header=value] [--rate N/s] [--again]` "
                "(a plan first; add `--dry-run` to only see it)")


def backfill_request(args: list[str], now: datetime, file: str | None = None) -> BackfillRequest:
    """``GROUP TOPIC[,TOPIC...] | GROUP --all-topics``, then ``--to-time T | --by-duration 2h | --to-offsets P:O,... |
    --to-earliest | --to-latest | --shift-by N | --from-file F [--partitions 0,1]``; ``file`` is the text of ``--from-file``
    (a terminal reads it; elsewhere it is refused)."""
    positional, options = _split(args, {"--to-time", "--to-offsets", "--by-duration", "--shift-by", "--partitions", "--from-file"},
                                 {"--to-earliest", "--to-latest", "--all-topics"})
    if "--from-file" in options and file is None:
        raise OpsError("a file of offsets is read from a terminal (`bot backfill GROUP TOPIC --from-file FILE`); here, give them as "
                       "--to-offsets 0:1200,1:980")
    every = "--all-topics" in options
    if len(positional) != (1 if every else 2):
        raise OpsError(("give the consumer group, and the topics or --all-topics, not both" if every else
                        "give the consumer group and the topic (several separated by commas, or --all-topics)") + f". Usage: {BACKFILL_USAGE}")
    group = group_id(positional[0])
    topics = () if every else topics_of(positional[1])
    given = [k for k in (*TARGETS, "--from-file") if k in options]
    if len(given) != 1:
        raise OpsError(f"give exactly one of {', '.join(TARGETS)}{' or --from-file' if file is not None else ''}. Usage: {BACKFILL_USAGE}")
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
    elif "--from-file" in options:
        assert file is not None
        offsets = offsets_file(file, topics)
        topics = tuple(sorted(offsets))
    else:
        if len(topics) != 1:
            raise OpsError("--to-offsets gives the partitions of one topic: name one topic (for several, give a file of "
                           "topic,partition,offset lines with --from-file in a terminal)")
        offsets = {topics[0]: offsets_of(options["--to-offsets"])}
    partitions = tuple(partitions_of(options["--partitions"])) if "--partitions" in options else ()
    if partitions and len(topics) != 1:
        raise OpsError("--partitions picks partitions of one topic: name one topic, or leave --partitions out")
    if partitions and offsets and set(offsets[topics[0]]) - set(partitions):
        raise OpsError("--to-offsets names partitions that --partitions leaves out")
    return BackfillRequest(group, topics, to_time, offsets, partitions, to_end, shift)


def topics_of(text: str) -> tuple[str, ...]:
    """``orders,payments`` -> ("orders", "payments"), each a topic name, none twice."""
    topics = tuple(topic_name(part.strip()) for part in text.split(","))
    twice = sorted({t for t in topics if topics.count(t) > 1})
    if twice:
        raise OpsError(f"{', '.join(twice)} is named twice")
    return topics


def replay_request(args: list[str], now: datetime) -> tuple[ReplayRequest, bool]:
    """``DLQ --to TOPIC | --to-original [--since T] [--until T] [--limit N] [--filter h=v] [--rate N/s] [--again] [--dry-run]``;
    the request and whether only a dry run is wanted."""
    positional, options = _split(args, {"--to", "--since", "--until", "--limit", "--filter", "--rate"}, {"--again", "--dry-run", "--to-original"})
    if len(positional) != 1:
        raise OpsError(f"give the DLQ topic. Usage: {REPLAY_USAGE}")
    dlq = topic_name(positional[0])
    if ("--to" in options) == ("--to-original" in options):
        raise OpsError("say where to: --to TOPIC (a replay-only topic keeps replays out of live windows) or --to-original (each back to the "
                       f"topic its headers name), not both. Usage: {REPLAY_USAGE}")
    target = topic_name(options["--to"]) if "--to" in options else None
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


def topic_name(text: str) -> str:
    """A Kafka topic name, or OpsError (Kafka refuses a topic called ``.`` or ``..``)."""
    if not TOPIC.fullmatch(text) or text in (".", ".."):
        raise OpsError(f"{text[:80]!r} is not a topic name (at most 249 letters, digits, . _ -; not . or ..)")
    return text


def group_id(text: str) -> str:
    """A consumer group's id (Kafka takes any string), or OpsError for one that is surely a mistake."""
    if not GROUP.fullmatch(text):
        raise OpsError(f"{text[:80]!r} is not a consumer group id ({GROUP_RULE})")
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
    """``90m``, ``2h``, ``1d``, ``1h30m``, or ISO 8601 as kafka-consumer-groups' ``--by-duration`` takes it (``PT1H30M``,
    ``P1DT2H``, ``PT0.5S``)."""
    spoken = re.fullmatch(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text.strip().lower())
    iso = re.fullmatch(r"p(?:(\d+)d)?(?:t(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:[.,]\d{1,9})?)s)?)?", text.strip().lower())
    match = spoken or iso
    if not text.strip() or not match or not any(match.groups()) or (iso and text.strip().lower().endswith("t")):
        raise OpsError(f"{what} {text[:40]!r} is not a duration such as 2h, 90m, 1d or PT1H30M")
    days, hours, minutes = (int(g or 0) for g in match.groups()[:3])
    span = timedelta(days=days, hours=hours, minutes=minutes, seconds=float((match.group(4) or "0").replace(",", ".")))
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


def offsets_file(text: str, topics: tuple[str, ...] = ()) -> dict[str, dict[int, int]]:
    """The offsets of a ``topic,partition,offset`` CSV (what ``kafka-consumer-groups --reset-offsets --export`` and
    ``bot backfill --export`` write), per topic: of ``topics`` (each must be there, and no other), or of every topic it
    names when none are given; OpsError naming the line for anything else."""
    found: dict[str, dict[int, int]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != 3 or not TOPIC.fullmatch(cells[0]) or not cells[1].isdigit() or not re.fullmatch(r"-?\d{1,19}", cells[2]):
            raise OpsError(f"line {number} of the file is not topic,partition,offset: {line.strip()[:80]!r}")
        if int(cells[2]) < 0:
            raise OpsError(f"line {number} of the file gives partition {cells[1]} of {cells[0]} no offset ({cells[2]}): the group never committed "
                           "there; leave the line out")
        topic = found.setdefault(cells[0], {})
        if int(cells[1]) in topic:
            raise OpsError(f"line {number} of the file names partition {cells[1]} of {cells[0]} a second time")
        topic[int(cells[1])] = int(cells[2])
    others = sorted(set(found) - set(topics)) if topics else []
    if others:
        raise OpsError(f"the file also names {', '.join(others[:5])}{' and more' if len(others) > 5 else ''}, which this backfill does not: "
                       "name every topic of the file (GROUP orders,payments), or give --all-topics to take the file's topics")
    missing = [t for t in topics if t not in found]
    if missing or not found:
        raise OpsError(f"the file names no offset of {', '.join(missing) if missing else 'any topic'}")
    return found


def offsets_csv(offsets: dict[str, dict[int, int]]) -> str:
    """``topic,partition,offset`` lines, as ``kafka-consumer-groups --export`` writes them."""
    return "".join(f"{topic},{partition},{offset}\n" for topic, mine in sorted(offsets.items()) for partition, offset in sorted(mine.items()))


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

    topic: str
    partition: int
    committed: int | None  # None: the group never committed on this partition
    target: int
    earliest: int
    latest: int
    clamped: bool = False  # the asked time or offset was before the earliest retained offset: data is gone
    asked: int | None = None  # a shifted offset outside the log, before it was clamped to the log's bounds

    @property
    def reread(self) -> int:
        """Messages the group will read again (negative: it skips that many). A committed offset retention has passed counts
        from the log's start: the messages before it are gone whatever the backfill does (``deleted_unread``)."""
        return (max(self.committed, self.earliest) if self.committed is not None else self.latest) - self.target

    @property
    def deleted_unread(self) -> int:
        """Messages after the group's committed offset that retention deleted before the group read them."""
        return max(0, self.earliest - self.committed) if self.committed is not None else 0

    def as_json(self) -> dict[str, Any]:
        """For storage and ``--format json``."""
        return {"topic": self.topic, "partition": self.partition, "committed": self.committed, "target": self.target, "earliest": self.earliest,
                "latest": self.latest, "reread": self.reread, "deleted_unread": self.deleted_unread, "before_retention": self.clamped,
                **({"asked": self.asked} if self.asked is not None else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartitionMove:
        """From storage."""
        return cls(data["topic"], data["partition"], data["committed"], data["target"], data["earliest"], data["latest"], bool(data.get("before_retention")),
                   data.get("asked"))


def skipped(moves: list[dict[str, Any]]) -> int:
    """Messages a reset skips (stored moves): unread ones the group will never read, lost to it."""
    return sum(max(0, -m["reread"]) for m in moves)


def skipped_json(moves: list[dict[str, Any]]) -> dict[str, Any]:
    """A plan's data loss for scripts: ``{"total", "partitions": [{"topic", "partition", "messages"}]}`` (none: 0 and [])."""
    lost = [{"topic": m["topic"], "partition": m["partition"], "messages": -m["reread"]} for m in moves if m["reread"] < 0]
    return {"total": sum(x["messages"] for x in lost), "partitions": lost}


def deleted_text(moves: list[dict[str, Any]]) -> str | None:
    """What retention took before the group read it (stored moves), or None: no backfill brings that back."""
    gone = [m for m in moves if m.get("deleted_unread")]
    if not gone:
        return None
    several, total = len({m["topic"] for m in moves}) > 1, sum(m["deleted_unread"] for m in gone)
    where = ", ".join(f"{m['topic'] + ' ' if several else ''}{m['partition']} (offsets {m['committed']:,}–{m['earliest'] - 1:,})" for m in gone[:10])
    return (f"{total:,} message{'s' if total != 1 else ''} the group had not read {'were' if total != 1 else 'was'} deleted by retention "
            f"before it read {'them' if total != 1 else 'it'}: partition{'s' if len(gone) > 1 else ''} {where}"
            f"{f' and {len(gone) - 10} more' if len(gone) > 10 else ''}. No backfill brings {'them' if total != 1 else 'it'} back; "
            "the table counts from each log's start.")


def chosen_partitions(request: BackfillRequest, topic: str, partitions: list[int]) -> list[int]:
    """The partitions of ``topic`` the backfill moves: those it names, else all; OpsError for one the topic lacks."""
    chosen = list(request.partitions) or sorted(request.to_offsets.get(topic, {})) or partitions
    unknown = sorted(set(chosen) - set(partitions))
    if unknown:
        raise OpsError(f"{topic} has no partition {', '.join(map(str, unknown))} (it has {', '.join(map(str, partitions))})")
    return chosen


def plan_backfill(request: BackfillRequest, topic: str, partitions: list[int], watermarks: dict[int, tuple[int, int]],
                  committed: dict[int, int], by_time: dict[int, int]) -> list[PartitionMove]:
    """The moves on one topic, from the cluster's answers: its partitions, their (earliest, latest) offsets, the group's
    committed offsets, and for a time the first offset at or after it (-1 when every message is older: the end)."""
    chosen = chosen_partitions(request, topic, partitions)
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
                raise OpsError(f"{_where(topic, partition, request)}: group {request.group} has no committed offset to shift from; give --to-time, "
                               "--to-offsets or --to-earliest instead")
            target = base + request.shift
            if not earliest <= target <= latest:  # clamped to the log, as kafka-consumer-groups does, and shown
                asked, target = target, min(max(target, earliest), latest)
        else:
            target = request.to_offsets[topic][partition]
            if target > latest:
                raise OpsError(f"{_where(topic, partition, request)}: offset {target} is past the end of the partition ({latest})")
        moves.append(PartitionMove(topic, partition, committed.get(partition), max(target, earliest), earliest, latest,
                                   target < earliest and asked is None, asked))
    return moves


def topics_named(request: BackfillRequest, moves: list[dict[str, Any]]) -> str:
    """The topics a backfill moves, as its title says them: ``orders``, ``orders, payments``, ``all its topics (orders, …)``."""
    if request.topics:
        return request.topics_text()
    found = sorted({m["topic"] for m in moves})
    return "all its topics" + (f" ({', '.join(found[:5])}{', …' if len(found) > 5 else ''})" if found else "")


def moves_table(moves: list[dict[str, Any]], retention: str, limit: int = 10_000) -> list[str]:
    """A plan's stored moves as aligned rows (the topic column when there are several topics): committed, target, re-read,
    marked ``retention`` when the target is before the earliest retained offset, or the clamped shift."""
    several = len({m["topic"] for m in moves}) > 1
    width = max([len(m["topic"]) for m in moves] + [5]) if several else 0
    rows = [(f"{'topic':<{width}}  " if several else "") + f"{'partition':>9}  {'committed':>12}  {'target':>12}  {'re-read':>10}"]
    for move in moves[:limit]:
        committed = "none" if move["committed"] is None else f"{move['committed']:,}"
        mark = retention if move["before_retention"] else f"  (asked {move['asked']:,}: clamped to the log)" if move.get("asked") is not None else ""
        rows.append((f"{move['topic']:<{width}}  " if several else "") +
                    f"{move['partition']:>9}  {committed:>12}  {move['target']:>12,}  {move['reread']:>10,}{mark}")
    if len(moves) > limit:
        rows.append(f"… and {len(moves) - limit} more partitions")
    return rows


def _where(topic: str, partition: int, request: BackfillRequest) -> str:
    return f"partition {partition}" if len(request.topics) == 1 else f"{topic} partition {partition}"


def moved_text(offsets: dict[tuple[str, int], int | None], limit: int = 24) -> str:
    """``orders 0→1200, 1→980; payments 0→5``: offsets per topic and partition (the first ``limit`` of them)."""
    shown = sorted(offsets.items())[:limit]
    topics = sorted({topic for (topic, _), _ in shown})
    text = "; ".join(f"{topic} " + ", ".join(f"{p}→{'none' if o is None else o}" for (t, p), o in shown if t == topic) for topic in topics)
    return text + (f" and {len(offsets) - limit} more partitions" if len(offsets) > limit else "")


def refuse_active(group: str, state: str, members: list[Member]) -> None:
    """OpsError while the group has members: its job must be stopped before its offsets move."""
    if members:
        who = ", ".join(f"{m.client_id} on {m.host}" for m in members[:10]) + (f" and {len(members) - 10} more" if len(members) > 10 else "")
        raise OpsError(f"consumer group {group} is {state.lower()} with {len(members)} connected client{'s' if len(members) != 1 else ''} "
                       f"({who}): stop the job first (take a savepoint, then stop it), then plan again")



FLINK_WAY = ("By hand, the Flink way: stop the job with a savepoint, then start it again from a copy of that savepoint without the "
             "Kafka source's state, with `scan.startup.mode` at the position you want (see the operations page, \"Flink jobs\")")


def refuse_flink(group: str, jobs: list[str], why: str | None) -> None:
    """OpsError when Flink jobs read with the group and ``why`` says the bot cannot backfill them the Flink way: a Flink
    source keeps its offsets in the job's own state and commits them to the group only for monitoring, so its next
    checkpoint overwrites a reset and the job reads nothing again."""
    if jobs and why is not None:
        named = ", ".join(sorted(jobs)[:5]) + (f" and {len(jobs) - 5} more" if len(jobs) > 5 else "")
        raise OpsError(f"consumer group {group} is read by the Flink job{'s' if len(jobs) > 1 else ''} {named}: a Flink job keeps its read "
                       "offsets in its own checkpoints and savepoints and commits them to the group only for monitoring, so its next "
                       f"checkpoint would write them back over a reset and the job would read nothing again. Nothing moved. {why}")


def refuse_hidden_reader(group: str, committed: dict[tuple[str, int], int | None], seen: dict[tuple[str, int], int], since: str) -> None:
    """OpsError when the group's committed offsets differ from those ``seen`` earlier while it had no member: something
    reads with it without joining it (a Flink job, a consumer that assigns its partitions) and would overwrite a reset."""
    moved = sorted(key for key, offset in committed.items() if offset is not None and key in seen and seen[key] != offset)
    if moved:
        where = ", ".join(f"{t}[{p}]" for t, p in moved[:5]) + (f" and {len(moved) - 5} more" if len(moved) > 5 else "")
        raise OpsError(f"consumer group {group} has no connected client, yet its committed offsets moved since {since} ({where}): something "
                       "reads with it without joining the group — a Flink job keeps its offsets in its own state and commits them here "
                       "only for monitoring; a consumer that assigns its partitions does the same — and would write its offsets back "
                       f"over a reset. Nothing moved. Name the job in the catalog (`consumer_groups:` of a job with `flink:`). {FLINK_WAY}. "
                       "If it was a consumer that has stopped since, take the census again (`bot consumers TOPIC --refresh`) and plan again")


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


@dataclass
class Tally:
    """What a replay's scan counts, letter by letter: how many go to each destination, how many are parked (and their last
    errors), how many name no destination. With a ``limit``, only the ``limit`` oldest letters (by timestamp) count: they
    are kept in a bounded heap, so a scan's memory is that of the limit, never of the DLQ."""

    parked_topic: str
    limit: int | None = None
    total: int = 0
    targets: dict[str, int] = field(default_factory=dict)
    parked: int = 0
    unrouted: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    cut: bool = False  # the limit left letters out
    last: dict[int, int] = field(default_factory=dict)  # with a limit: the last offset kept per DLQ partition
    _oldest: list[tuple[int, int, int, str, str]] = field(default_factory=list)  # negated (timestamp, partition, offset): a max-heap

    def add(self, timestamp: int, partition: int, offset: int, destination: str | None, error: str) -> None:
        """One letter to send (``error``: its last error, read for a parked one)."""
        if self.limit is None:
            self._count(destination, error)
            return
        entry = (-timestamp, -partition, -offset, destination or "", error)
        if len(self._oldest) < self.limit:
            heapq.heappush(self._oldest, entry)
            return
        self.cut = True
        if entry > self._oldest[0]:  # older than the newest kept
            heapq.heapreplace(self._oldest, entry)

    def close(self) -> None:
        """Count what a limit kept."""
        for _, partition, offset, destination, error in self._oldest:
            self._count(destination or None, error)
            self.last[-partition] = max(self.last.get(-partition, -1), -offset)
        self._oldest = []

    def _count(self, destination: str | None, error: str) -> None:
        self.total += 1
        if destination is None:
            self.unrouted += 1
        elif destination == self.parked_topic:
            self.parked += 1
            self.reasons[error] = self.reasons.get(error, 0) + 1
        else:
            self.targets[destination] = self.targets.get(destination, 0) + 1


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
