"""What the outside world says about schemas: every version in the Schema Registry (through confluent-kafka's
Schema Registry client) and the schema ids producers really write on a topic (Confluent wire format, read from
the newest messages). Blocking calls, each with a timeout: run them in a worker thread."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient

from bot.kafka.avro import referenced, wire_schema_id
from bot.kafka.clients import settings

TIMEOUT = 10.0
NEWEST = 50  # messages read from the end of each partition


@dataclass(frozen=True)
class Registered:
    """One version of a subject in the registry."""

    subject: str
    version: int
    schema_id: int
    text: str
    references: tuple[dict[str, Any], ...] = ()  # as registered: ``{name, subject, version}``
    referenced: tuple[dict[str, Any], ...] = ()  # the schemas behind them, dependencies first
    schema_type: str = "AVRO"  # the registry's schemaType


def new_versions(client: SchemaRegistryClient, seen: set[tuple[str, int]]) -> list[Registered]:
    """Every registry version not in ``seen`` ((subject, version) pairs already observed)."""
    found = []
    for subject in client.get_subjects():
        for version in client.get_versions(subject):
            if (subject, version) not in seen:
                registered = client.get_version(subject, version)
                references = registered.schema.references or []
                found.append(Registered(subject, version, int(registered.schema_id or -1), registered.schema.schema_str or "",
                                        tuple(r.to_dict() for r in references), tuple(referenced(client, references)),
                                        registered.schema.schema_type or "AVRO"))
    return found


def schema_text(client: SchemaRegistryClient, schema_id: int) -> Registered | None:
    """The schema a registry id names, with its references resolved (None when the registry does not know it, or a
    reference does not resolve)."""
    try:
        schema = client.get_schema(schema_id)
        references = schema.references or []
        return Registered("", -1, schema_id, schema.schema_str or "", tuple(r.to_dict() for r in references),
                          tuple(referenced(client, references)), schema.schema_type or "AVRO")
    except Exception:  # the registry's 404, or its absence: the id stays unexplained
        return None


def schema_ids(bootstrap: str, topic: str, newest: int = NEWEST) -> set[int]:
    """The schema ids in the Confluent wire format of the newest messages of ``topic`` (an unknown topic: none)."""
    probe = Consumer(settings(bootstrap, {"group.id": "changeops-out-of-band", "enable.auto.commit": False,
                      "client.id": "changeops-out-of-band", "enable.partition.eof": True, "allow.auto.create.topics": False}))
    try:
        metadata = probe.list_topics(timeout=TIMEOUT).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return set()
        wanted = []
        for partition in sorted(metadata.partitions):
            low, high = probe.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT)
            if high > low:
                wanted.append(TopicPartition(topic, partition, max(low, high - newest)))
        if not wanted:
            return set()
        probe.assign(wanted)
        open_, found = {tp.partition for tp in wanted}, set()
        deadline = time.monotonic() + TIMEOUT
        while open_ and time.monotonic() < deadline:
            for message in probe.consume(500, 0.2):  # short: the end of each partition is not waited for
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        open_.discard(message.partition() or 0)
                    continue
                schema_id = wire_schema_id(message.value() or b"")
                if schema_id is not None:
                    found.add(schema_id)
        return found
    finally:
        probe.close()
