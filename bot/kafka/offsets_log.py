"""Committed offsets read from Kafka's own log of them, the ``__consumer_offsets`` topic, as a follower.

The Admin API asks a group's committed offsets one group a request; the log holds every group's. The follower reads
it once from its beginning (unless it holds more records than can be read in the timeout: an uncompacted log of a
busy cluster), then only what was written since (a compacted topic: each key's newest value, a tombstone
when an offset was deleted or expired). Each answer first takes the log's last stable offsets (read_committed, so
an open or aborted transaction's offsets are not counted) and reads up to them: every commit Kafka acknowledged
before the question is in the answer. A log that cannot be read (not allowed, or not caught up in time) raises
OffsetsUnreadable: the caller asks the API instead. Blocking: run it in a worker thread.

Offset-commit records (the key's version 0 or 1): key = version int16, group, topic (int16-length strings),
partition int32; value = version int16 then the offset int64 (every value version so far), or none (a tombstone).
Other records of the topic (group metadata, the new coordinator's records) are skipped."""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from bot.kafka.clients import BACKLOG_READER

TOPIC = "__consumer_offsets"
DENIED = (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED)
BATCH = 10_000  # records a poll
RECORDS_A_SECOND = 100_000  # a first read of the log, conservatively (about 400,000 a second measured on two cores)
_SHORT, _INT, _LONG = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class OffsetsUnreadable(Exception):
    """The log could not be read (the message says why); the offsets are to be asked one group at a time."""


def offset_commit(key: bytes, value: bytes | None) -> tuple[str, str, int, int | None] | None:
    """(group, topic, partition, offset; None for a tombstone) of an offset-commit record; None for any other record."""
    if len(key) < 2 or _SHORT.unpack_from(key)[0] not in (0, 1):
        return None
    size = _SHORT.unpack_from(key, 2)[0]
    group = key[4:4 + size].decode()
    at = 4 + size
    size = _SHORT.unpack_from(key, at)[0]
    topic = key[at + 2:at + 2 + size].decode()
    partition = _INT.unpack_from(key, at + 2 + size)[0]
    return group, topic, partition, None if value is None else _LONG.unpack_from(value, 2)[0]


class OffsetsLog:
    """Follows ``__consumer_offsets``: every group's committed offsets, as of the moment asked."""

    def __init__(self, options: dict[str, Any], timeout: float = 10.0, most_records: int | None = None) -> None:
        self._options = {**options, "group.id": "changeops-offsets-log", "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 10, "queued.max.messages.kbytes": 8192, **BACKLOG_READER}
        self._timeout = timeout
        self._most = most_records if most_records is not None else int(timeout * RECORDS_A_SECOND)  # a first read longer is not begun
        self._consumer: Consumer | None = None
        self._read: dict[int, int] = {}  # partition of the log -> the next offset to read
        self._groups: dict[str, dict[tuple[str, int], int]] = {}
        self._lock = threading.Lock()

    def committed(self, admin: AdminClient, groups: Iterable[str]) -> dict[str, dict[tuple[str, int], int]]:
        """The committed offsets (non-negative) of each of ``groups`` that has any, with each commit acknowledged
        before this call."""
        with self._lock:
            partitions = self._partitions(admin)
            if not partitions:
                return {}  # no group ever committed
            ends = self._offsets(admin, partitions, OffsetSpec.latest(), "end")  # type: ignore[no-untyped-call]
            consumer = self._consumer
            if consumer is None or set(partitions) != set(self._read):
                self._drop()
                starts = self._offsets(admin, partitions, OffsetSpec.earliest(), "start")  # type: ignore[no-untyped-call]
                backlog = sum(max(0, ends[p] - starts[p]) for p in partitions)
                if backlog > self._most:  # an uncompacted log of a busy cluster: asking group by group is sooner done
                    raise OffsetsUnreadable(f"{TOPIC} holds {backlog:,} records, more than a first read takes on (at most {self._most:,})")
                consumer = self._consumer = Consumer(self._options)
                consumer.assign([TopicPartition(TOPIC, p, offset) for p, offset in sorted(starts.items())])  # -2 would cost a lookup of 0.5 s
                self._read = starts
            else:
                consumer.resume([TopicPartition(TOPIC, p) for p in partitions])
            self._follow(consumer, ends)
            known = self._groups
            return {group: dict(known[group]) for group in groups if group in known}

    def close(self) -> None:
        """Leave the log (blocking: from a thread)."""
        with self._lock:
            self._drop()

    def _partitions(self, admin: AdminClient) -> list[int]:
        """The log's partitions (none when no group ever committed: there is no log yet)."""
        try:
            found = admin.list_topics(topic=TOPIC, timeout=self._timeout).topics.get(TOPIC)
        except KafkaException as err:
            raise OffsetsUnreadable(f"the partitions of {TOPIC}: {err.args[0] if err.args else err}") from None
        if found is None or found.error is not None and found.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return []
        if found.error is not None:
            raise OffsetsUnreadable(f"{TOPIC}: {found.error.str()}")
        return sorted(found.partitions)

    def _offsets(self, admin: AdminClient, partitions: list[int], spec: OffsetSpec, what: str) -> dict[int, int]:
        """Each partition's offset at ``spec``: its last stable offset for the latest (an open transaction's records are
        past it), its log start for the earliest."""
        if not partitions:
            return {}
        try:
            answers = admin.list_offsets({TopicPartition(TOPIC, p): spec for p in partitions}, isolation_level=IsolationLevel.READ_COMMITTED,
                                         request_timeout=self._timeout)
            return {tp.partition: int(future.result(timeout=self._timeout + 5).offset) for tp, future in answers.items()}
        except KafkaException as err:
            raise OffsetsUnreadable(f"the {what} of {TOPIC}: {err.args[0] if err.args else err}") from None
        except TimeoutError:
            raise OffsetsUnreadable(f"the {what} of {TOPIC}: no answer in {self._timeout:g} s") from None

    def _follow(self, consumer: Consumer, ends: dict[int, int]) -> None:
        """Read until every partition is read up to ``ends``, then pause it (no fetching between answers);
        OffsetsUnreadable when refused or not done in time (what was read is kept: the next call goes on from there)."""
        read, groups = self._read, self._groups
        deadline, last_error = time.monotonic() + self._timeout, None
        while any(read[p] < end for p, end in ends.items()):
            if time.monotonic() > deadline:
                behind = sum(max(0, end - read[p]) for p, end in ends.items())
                raise OffsetsUnreadable(f"{TOPIC} not read to its end in {self._timeout:g} s ({behind:,} records behind"
                                        + (f"; {last_error}" if last_error else "") + ")")
            for message in consumer.consume(BATCH, 0.01):
                error, part, at = message.error(), message.partition() or 0, message.offset() or 0
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        read[part] = max(read[part], at)  # the offset at which it ended
                    elif error.code() in DENIED or error.fatal():
                        raise OffsetsUnreadable(f"reading {TOPIC}: {error.str()}")
                    else:
                        last_error = error.str()
                    continue
                read[part] = at + 1
                record = offset_commit(message.key() or b"", message.value())
                if record is None:
                    continue
                group, topic, partition, offset = record
                if offset is not None and offset >= 0:
                    groups.setdefault(group, {})[(topic, partition)] = offset
                elif (offsets := groups.get(group)) is not None:
                    offsets.pop((topic, partition), None)
                    if not offsets:
                        del groups[group]
        consumer.pause([TopicPartition(TOPIC, p) for p in ends])

    def _drop(self) -> None:
        """Leave the log and forget it (a new consumer reads it again from its beginning)."""
        if self._consumer is not None:
            self._consumer.close()
        self._consumer, self._read, self._groups = None, {}, {}
