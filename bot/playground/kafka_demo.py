"""The demo world's Kafka side, on the broker `make run` starts: the `orders` topic with a consumer group that
lags behind (its offsets committed, nobody reading, so a backfill may reset it) and a dead-letter topic of
a few hundred failed events (keys, headers, original timestamps, so a replay has something to move). The
bot's own pollers then measure the lag and the DLQ, and alert on them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from bot.domain.sli.pipeline import Sli
from bot.domain.sli.samples import Sample
from bot.kafka.clients import settings

TOPIC, DLQ, GROUP, PARTITIONS = "orders", "orders.dlq", "enrich-orders", 3
EVENTS, LAG, DEAD = 3_000, 600, 300
TIMEOUT = 30.0
HEALTHY = {Sli.COMMIT_SUCCESS_RATE: 1.0, Sli.SCHEMA_ERROR_RATE: 0.0, Sli.FRESHNESS: 45.0, Sli.CHECKPOINT_DURATION: 4.0,
           Sli.SINK_COMMIT_LATENCY: 1.5}  # what the demo pipeline reports each minute; lag and DLQ the bot measures


@dataclass(frozen=True)
class Seeded:
    """What the seeding left on the broker."""

    events: int
    lag: int
    dead_letters: int

    def __str__(self) -> str:
        return (f"Kafka demo: {self.events:,} events on `{TOPIC}`, group `{GROUP}` {self.lag:,} behind, "
                f"{self.dead_letters:,} dead letters on `{DLQ}`")


def seed(bootstrap: str, now: datetime | None = None, *, topic: str = TOPIC, dlq: str = DLQ, group: str = GROUP) -> Seeded:
    """Create the demo topics and fill them (a broker that already has them is left alone)."""
    now = now or datetime.now(UTC)
    admin = AdminClient(settings(bootstrap))
    existing = admin.list_topics(timeout=TIMEOUT).topics
    if topic in existing and dlq in existing:
        return Seeded(0, 0, 0)
    futures = admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)
                                   for name in (topic, dlq) if name not in existing])
    for future in futures.values():
        future.result(timeout=TIMEOUT)
    producer = Producer(settings(bootstrap, {"linger.ms": 20}))
    start = now - timedelta(hours=2)
    for i in range(EVENTS):
        key = f"o-{i:05d}"
        order = {"id": key, "quantity": 1 + i % 7, "country": ["DE", "FR", "NL", "SE"][i % 4]}
        producer.produce(topic, json.dumps(order).encode(), key.encode(), partition=i % PARTITIONS,
                         timestamp=int((start + timedelta(seconds=2 * i)).timestamp() * 1000))
    for i in range(DEAD):
        reason = "schema" if i % 3 else "timeout"
        producer.produce(dlq, json.dumps({"id": f"o-{i * 7:05d}", "quantity": "seven" if reason == "schema" else 7}).encode(),
                         f"o-{i * 7:05d}".encode(), partition=i % PARTITIONS,
                         headers=[("error", reason.encode()), ("original.topic", topic.encode()), ("event.id", f"dlq-{i}".encode())],
                         timestamp=int((start + timedelta(seconds=20 * i)).timestamp() * 1000))
    if producer.flush(TIMEOUT) != 0:
        raise RuntimeError("the demo events were not all written")
    read = (EVENTS - LAG) // PARTITIONS
    offsets = [TopicPartition(topic, partition, read) for partition in range(PARTITIONS)]
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, offsets)])[group].result(timeout=TIMEOUT)
    return Seeded(EVENTS, EVENTS - read * PARTITIONS, DEAD)


def healthy_samples(pipeline: str, now: datetime) -> list[Sample]:
    """One healthy sample of each SLI the demo pipeline reports itself (so it is not "no data")."""
    return [Sample(pipeline, sli, value, now) for sli, value in HEALTHY.items()]
