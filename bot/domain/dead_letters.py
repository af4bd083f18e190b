"""Dead letters grouped by the error that sent them to the DLQ: what an oncall reads before deciding what to replay.

The error is read from the headers the common dead-letter writers add: Kafka Connect's
(``errors.deadletterqueue.context.headers.enable``: ``__connect.errors.exception.class.name`` and
``…exception.message``) and Spring Kafka's ``DeadLetterPublishingRecoverer`` (``kafka_dlt-exception-fqcn`` and
``…-message``), or a header named by the oncall. Their original topic likewise (``__connect.errors.topic``,
``kafka_dlt-original-topic``), and where a replay sends each one: its one target, or back to its original topic,
parked instead once it has come back too often."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.domain.ops import REPLAY_HEADER_ID, REPLAY_HEADER_SOURCE, OpsError, topic_name
from bot.domain.text import CONTROL

PEEK_DEFAULT = 20
PEEK_MAX = 500
EXAMPLES = 2  # decoded dead letters shown per error
ERROR_TEXT = 300  # characters of an error kept for grouping and display
NO_ERROR = "(no error header)"
CONNECT = ("__connect.errors.exception.class.name", "__connect.errors.exception.message")
SPRING = ("kafka_dlt-exception-fqcn", "kafka_dlt-exception-message")
ORIGINAL_TOPIC = ("__connect.errors.topic", "kafka_dlt-original-topic")
ORIGINAL_PARTITION = {"__connect.errors.partition": "text", "kafka_dlt-original-partition": "int32"}  # how each writer encodes it
REPLAY_COUNT = "changeops-replay-count"  # how many times a replay has sent the letter back before
PARKED_REASON = "changeops-parked-reason"  # why a replay parked it
MAX_REPLAYS = 3  # a letter that has come back more often than this is parked, not replayed
PARKED = ".parked"  # the parked letters' topic: the DLQ's name and this
OURS = frozenset({REPLAY_HEADER_ID, REPLAY_HEADER_SOURCE, REPLAY_COUNT, PARKED_REASON})  # a copy sets them anew, never twice
PEEK_USAGE = "`/replay peek DLQ_TOPIC [N] [--error-header NAME]` (the newest N dead letters, 20 by default, at most 500)"

Headers = Sequence[tuple[str, str | bytes | None]]


@dataclass(frozen=True)
class PeekRequest:
    """Read the newest ``count`` messages of ``dlq``; ``error_header``: the header that holds the error, when not a
    standard one."""

    dlq: str
    count: int = PEEK_DEFAULT
    error_header: str | None = None


@dataclass(frozen=True)
class Letter:
    """One dead letter as read: where it sits, its time, its headers, and its value described for people."""

    partition: int
    offset: int
    stamp: int  # milliseconds since the epoch (0: none)
    headers: Headers
    text: str


@dataclass
class ErrorGroup:
    """The dead letters of one error."""

    error: str
    count: int = 0
    topics: dict[str, int] = field(default_factory=dict)  # original topic -> dead letters
    first: int = 0  # time of the oldest (ms)
    last: int = 0  # and of the newest
    examples: list[Letter] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """For ``--format json``."""
        return {"error": self.error, "count": self.count, "original_topics": self.topics, "first": self.first, "last": self.last,
                "examples": [{"partition": e.partition, "offset": e.offset, "text": e.text} for e in self.examples]}


def peek_request(args: list[str]) -> PeekRequest:
    """``DLQ [N] [--error-header NAME]`` (``--peek N`` is taken for ``N`` too, as ``bot replay DLQ --peek N`` writes it)."""
    words, header, count = [], None, None
    index = 0
    while index < len(args):
        word = args[index]
        key, equals, inline = word.partition("=")
        if key in ("--error-header", "--peek"):
            value = inline if equals else (args[index + 1] if index + 1 < len(args) and not args[index + 1].startswith("--") else None)
            index += 1 if equals or value is None else 2
            if key == "--error-header":
                if not value:
                    raise OpsError("--error-header needs the name of the header that holds the error")
                header = value
            elif value is not None:
                count = _count(value)
            continue
        if word.startswith("--"):
            raise OpsError(f"{word} is not an option of peek. Usage: {PEEK_USAGE}")
        words.append(word)
        index += 1
    if not words or len(words) > 2:
        raise OpsError(f"give the DLQ topic, and how many to read if not {PEEK_DEFAULT}. Usage: {PEEK_USAGE}")
    if len(words) == 2:
        count = _count(words[1])
    return PeekRequest(topic_name(words[0]), PEEK_DEFAULT if count is None else count, header)


def _count(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) <= PEEK_MAX:
        raise OpsError(f"{text!r} is not a number of dead letters from 1 to {PEEK_MAX}")
    return int(text)


def error_of(headers: Headers, named: str | None = None) -> str:
    """The error a dead letter carries: the named header, else Connect's or Spring's class and message."""
    found = {key: shown(value) for key, value in headers}
    if named is not None:
        return _short(found.get(named) or NO_ERROR)
    for kind, message in (CONNECT, SPRING):
        if found.get(kind) or found.get(message):
            return _short(": ".join(part for part in (found.get(kind), found.get(message)) if part))
    return NO_ERROR


def original_topic(headers: Headers, named: str | None = None) -> str | None:
    """The topic the dead letter was read from before it failed, when its writer said (``named``: the header the
    pipeline's catalog entry names, read first)."""
    found = dict(headers)  # only the headers asked for are decoded: a redrive asks this of every letter
    for key in ((named,) if named else ()) + ORIGINAL_TOPIC:
        value = found.get(key)
        text = shown(value).strip()
        if text:  # bytes that are not text name no topic: said as hex, with a space no topic name has, so never routed to
            readable = value if isinstance(value, str) else _utf8(value) if value is not None else None
            return text if readable is not None and text == readable.strip() else f"{text} (not text)"
    return None


def original_partition(headers: Headers) -> int | None:
    """The partition the dead letter was read from, when its writer said: Connect writes it as text, Spring as a
    big-endian 32-bit integer."""
    for key, value in headers:
        kind = ORIGINAL_PARTITION.get(key)
        if kind is None or value is None:
            continue
        raw = value.encode() if isinstance(value, str) else value
        number = int.from_bytes(raw, "big", signed=True) if kind == "int32" and len(raw) == 4 else \
            int(raw) if kind == "text" and raw.strip().isdigit() else None
        if number is not None and number >= 0:
            return number
    return None


def replays(headers: Headers) -> int:
    """How many times a replay has sent this letter back before (its last ``changeops-replay-count``; 0 when none or not
    a number)."""
    return split(headers)[1]


def split(headers: Headers) -> tuple[list[tuple[str, str | bytes | None]], int]:
    """The letter's headers without ChangeOps' own (a copy sets them anew), and its replay count (see ``replays``)."""
    if OURS.isdisjoint(dict(headers)):  # the common case, answered without a loop in Python (a replay runs it per message)
        return list(headers), 0
    kept, count = [], 0
    for header in headers:
        if header[0] in OURS:
            if header[0] == REPLAY_COUNT:
                text = shown(header[1]).strip()
                count = int(text) if text.isdigit() and len(text) < 10 else 0
        else:
            kept.append(header)
    return kept, count


@dataclass(frozen=True)
class Route:
    """Where a replay sends each dead letter: to ``target``, or (``target`` None) back to the topic its headers name; a
    letter that has come back to the DLQ more than ``max_replays`` times (replayed that often already) goes to ``parked``
    instead, so a message that always fails cannot loop forever."""

    dlq: str
    target: str | None
    max_replays: int = MAX_REPLAYS
    header: str | None = None  # the original topic's header the catalog names, read before Connect's and Spring's

    @property
    def parked(self) -> str:
        """``<dlq>.parked``."""
        return self.dlq + PARKED

    def of(self, headers: Headers) -> tuple[str | None, int]:
        """The letter's destination (None: it names no original topic) and how many times it was replayed before."""
        count = replays(headers)
        return self.destination(headers, count), count

    def destination(self, headers: Headers, count: int) -> str | None:
        """Where a letter with these headers, replayed ``count`` times before, goes (None: it names no original topic)."""
        if count >= self.max_replays:
            return self.parked
        return self.target if self.target is not None else original_topic(headers, self.header)

    def as_json(self) -> dict[str, Any]:
        """For storage in the plan: a resumed run routes as planned, whatever the catalog says since."""
        return {"target": self.target, "max_replays": self.max_replays, "header": self.header}

    @classmethod
    def from_json(cls, dlq: str, data: dict[str, Any]) -> Route:
        """From storage."""
        return cls(dlq, data.get("target"), int(data.get("max_replays", MAX_REPLAYS)), data.get("header"))


def group_by_error(letters: list[Letter], named: str | None = None) -> list[ErrorGroup]:
    """The letters by error, the most frequent first; each with its original topics, its time span, and its newest examples."""
    groups: dict[str, ErrorGroup] = {}
    for letter in sorted(letters, key=lambda item: (item.stamp, item.partition, item.offset), reverse=True):
        error = error_of(letter.headers, named)
        group = groups.get(error)
        if group is None:
            group = groups[error] = ErrorGroup(error, first=letter.stamp, last=letter.stamp)
        group.count += 1
        group.first = min(group.first, letter.stamp)
        group.last = max(group.last, letter.stamp)
        topic = original_topic(letter.headers)
        if topic is not None:
            group.topics[topic] = group.topics.get(topic, 0) + 1
        if len(group.examples) < EXAMPLES:
            group.examples.append(letter)
    return sorted(groups.values(), key=lambda g: (-g.count, g.error == NO_ERROR, g.error))


def _short(text: str) -> str:
    line = " ".join(text.split())  # one line: stack traces and messages span several
    return line if len(line) <= ERROR_TEXT else line[:ERROR_TEXT - 1] + "…"


def shown(value: str | bytes | None) -> str:
    """Header or value bytes as a person may safely read them: UTF-8 text, else ``0x`` and hex (bytes that are not UTF-8, or
    text with control characters, which a terminal would obey)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else _utf8(value)
    if text is not None and not CONTROL.search(text):
        return text
    data = value.encode("utf-8") if isinstance(value, str) else value
    return "0x" + data[:64].hex() + ("…" if len(data) > 64 else "")


def _utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None

