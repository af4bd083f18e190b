"""The newest messages of a DLQ topic, decoded for people: Confluent-framed Avro through the Schema Registry,
else the bytes as text (or hex when they are not text), with key, headers, time and position."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from bot.domain.dead_letters import Letter, shown
from bot.kafka.avro import DecodeError, Decoder, Registry, wire_schema_id
from bot.kafka.clients import settings

TIMEOUT = 10.0


def newest(bootstrap: str, topic: str, registry: Registry | None, count: int = 5) -> list[str]:
    """Up to ``count`` of the newest messages of ``topic``, newest first, one readable line each (blocking)."""
    found, _ = _newest(bootstrap, topic, count)
    return [describe(m.value(), m.key(), _pairs(m.headers()), m.timestamp()[1], int(m.partition() or 0), int(m.offset() or 0), registry)
            for m in found]


def peek(bootstrap: str, topic: str, registry: Registry | None, count: int) -> tuple[list[Letter], int]:
    """Up to ``count`` of the newest messages of ``topic`` with their headers and decoded values, and how many messages
    the topic holds (blocking)."""
    found, held = _newest(bootstrap, topic, count)
    return [Letter(int(m.partition() or 0), int(m.offset() or 0), m.timestamp()[1], _pairs(m.headers()), decoded(m.value(), registry)[:1500])
            for m in found], held


def _newest(bootstrap: str, topic: str, count: int) -> tuple[list[Message], int]:
    """The newest ``count`` messages over the topic's partitions, newest first, and how many it holds; ValueError for a
    topic the cluster does not know."""
    probe = Consumer(settings(bootstrap, {"group.id": "changeops-dead-letters", "enable.auto.commit": False,
                      "client.id": "changeops-dead-letters", "enable.partition.eof": True}))  # the end, even past transaction markers
    held = 0
    try:
        metadata = probe.list_topics(topic, timeout=TIMEOUT).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise ValueError(f"topic {topic} is unknown to the cluster")
        wanted: list[TopicPartition] = []
        ends: dict[int, int] = {}
        for partition in sorted(metadata.partitions):
            low, high = probe.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT)
            held += max(0, high - low)
            if high > low:
                wanted.append(TopicPartition(topic, partition, max(low, high - count)))
                ends[partition] = high
        if not wanted:
            return [], 0
        probe.assign(wanted)
        remaining = {tp.partition: ends[tp.partition] - tp.offset for tp in wanted}
        found = []
        while sum(remaining.values()) > 0:
            message = probe.poll(TIMEOUT)
            if message is None:
                break
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    remaining[int(message.partition() or 0)] = 0
                continue
            remaining[int(message.partition() or 0)] -= 1
            found.append(message)
    finally:
        probe.close()
    found.sort(key=lambda m: (m.timestamp()[1], m.offset()), reverse=True)
    return found[:count], held


def describe(value: bytes | None, key: str | bytes | None, headers: list[tuple[str, str | bytes | None]], stamp: int, partition: int, offset: int,
             registry: Registry | None) -> str:
    """One dead letter as a line: where, when, key, headers, and the value decoded as far as it can be."""
    when = datetime.fromtimestamp(stamp / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if stamp > 0 else "no timestamp"
    head = f"[{partition}@{offset}] {when} key={shown(key) if key is not None else '(none)'}"
    if headers:
        head += " headers={" + ", ".join(f"{k}={shown(v)}" for k, v in headers[:10]) + "}"
    return f"{head}\n{decoded(value, registry)[:1500]}"


def decoded(value: bytes | None, registry: Registry | None) -> str:
    """The value: Avro through the registry when framed and a registry is known, else text, else hex."""
    if value is None:
        return "(no value: a tombstone)"
    schema_id = wire_schema_id(value)
    if schema_id is not None and registry is not None:
        try:
            return f"(schema {schema_id}) " + json.dumps(Decoder(None, registry).decode(value), default=str, ensure_ascii=False)
        except DecodeError as err:
            return f"(schema {schema_id}, not decoded: {err}) {value[5:65].hex()}"
    if schema_id is not None:
        return f"(schema {schema_id}; no registry to decode it) {shown(value[5:])}"
    return shown(value)


def _pairs(headers: object) -> list[tuple[str, str | bytes | None]]:
    """Headers as (name, value) pairs, whichever shape the client hands them in."""
    if isinstance(headers, dict):
        return list(headers.items())
    return list(headers) if isinstance(headers, list) else []
