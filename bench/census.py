"""The reader census of 2,000 consumer groups on a 12-partition topic against the naive way, in the same run.

The baseline lists the groups and asks each one's committed offsets one request after the other. The census
(bot.kafka.census) reads the committed offsets from Kafka's log of them (``__consumer_offsets``, followed by
bot.kafka.offsets_log), describes groups with members in batches, then asks end offsets and retention. The ratio is
the first census's, which reads the log from its beginning (the service's first census after a start); the next one,
reading only what was written since, is printed too, and so is the census asking offsets group by group (64
requests in flight: what it does where the log cannot be read). Through the service it also stores every reader
(SQLite) while a ticker on the event loop measures the longest stall (the census must not block the loop). Uses
$KAFKA_BOOTSTRAP_SERVERS, or starts a broker with scripts/kafka.sh. Groups are created by committing offsets for
them with the Admin API.

Run: .venv/bin/python bench/census.py [--groups 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from _kafka import broker, stop_broker
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bot.kafka.census import one_by_one, take
from bot.kafka.offsets_log import OffsetsLog
from bot.services.census import CensusService
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.sli import SliService
from bot.store import migrate
from bot.store.database import Database

PARTITIONS = 12


def seed(admin: AdminClient, bootstrap: str, groups: int) -> str:
    topic = f"bench-census-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(PARTITIONS * 100):
        producer.produce(topic, b"x", partition=i % PARTITIONS)
    producer.flush(30)
    left = list(range(groups))
    for _ in range(20):  # a commit refused per partition (a coordinator still loading) is no error of the call: commit it again
        refused = []
        for start in range(0, len(left), 100):
            futures = {}
            for number in left[start:start + 100]:
                group = f"{topic}-reader-{number}"
                offsets = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, number % 100) for p in range(PARTITIONS)])
                futures[number] = admin.alter_consumer_group_offsets([offsets])[group]
            refused += [n for n, f in futures.items() if any(tp.error is not None for tp in f.result(timeout=30).topic_partitions)]
        if not refused:
            return topic
        left = refused
        time.sleep(0.5)
    raise SystemExit(f"{len(left)} groups could not be seeded")


async def through_the_service(bootstrap: str) -> tuple[float, float]:
    """Seconds for a stored census, and the longest event-loop stall meanwhile (seconds)."""
    folder = tempfile.mkdtemp(prefix="bench-census-")
    url = f"sqlite:///{Path(folder) / 'changeops.db'}"
    migrate.upgrade(url)
    db = Database(url)
    lineage = LineageService(db)
    census = CensusService(db, lineage, SliService(db, lineage, Outbox()), bootstrap, "bench")
    worst = 0.0
    running = True

    async def ticker() -> None:
        nonlocal worst
        while running:
            before = time.perf_counter()
            await asyncio.sleep(0.01)
            worst = max(worst, time.perf_counter() - before - 0.01)

    tick = asyncio.create_task(ticker())
    began = time.perf_counter()
    try:
        assert await census.refresh()
        return time.perf_counter() - began, worst
    finally:
        running = False
        await tick
        await asyncio.to_thread(census.close)
        await db.close()


def main(groups: int, bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = seed(admin, bootstrap, groups)
    began = time.perf_counter()
    naive = one_by_one(admin)
    baseline = time.perf_counter() - began
    followed = OffsetsLog({"bootstrap.servers": bootstrap})
    began = time.perf_counter()
    snapshot = take(admin, [topic], followed)
    census = time.perf_counter() - began
    began = time.perf_counter()
    warm = take(admin, [topic], followed)
    following = time.perf_counter() - began
    followed.close()
    began = time.perf_counter()
    asked = take(admin, [topic])
    by_group = time.perf_counter() - began
    assert (snapshot.offsets_from, warm.offsets_from, asked.offsets_from) == ("log", "log", "api"), "the census did not read the offsets log"
    readers = [g for g in snapshot.groups if topic in g.topics()]
    for other in (warm, asked):
        assert {g.group: g.committed for g in other.groups} == {g.group: g.committed for g in snapshot.groups}, "the censuses disagree"
    assert len(readers) == groups or snapshot.partial, f"the census found {len(readers)} of {groups} groups and did not say it was partial"
    assert sum(1 for offsets in naive.values() if any(t == topic and o >= 0 for (t, _), o in offsets.items())) == groups
    stored, stall = asyncio.run(through_the_service(bootstrap))
    print(f"groups on {topic}: {groups:,} ({len(naive):,} on the cluster); {PARTITIONS} partitions; the census found {len(readers):,}"
          + (f", Kafka did not answer for {len(snapshot.unanswered)}" if snapshot.partial else ""))
    print(f"baseline, committed offsets one group after the other: {baseline:6.2f} s")
    print(f"census, reading the offsets log from its beginning (batched describes, end offsets, retention): {census:6.2f} s")
    print(f"  the next census, reading only what the log got since: {following:6.2f} s")
    print(f"  a census asking offsets group by group instead (64 requests in flight): {by_group:6.2f} s")
    print(f"census through the service, stored in SQLite: {stored:6.2f} s; longest event-loop stall meanwhile {stall * 1000:.0f} ms")
    print(f"ratio census/baseline: {census / baseline:.2f} (lower is better); speed-up {baseline / census:.1f}x (aim: at least 3x, complete)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2000)
    args = parser.parse_args()
    address, started_in = broker()
    try:
        main(args.groups, address)
    finally:
        stop_broker(started_in)
