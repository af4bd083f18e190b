"""A DLQ replay through the bot's operations service against a plain confluent-kafka consume→produce loop.

Both copy the same DLQ topic (6 partitions; each message with a key, two headers and its own timestamp) into a
topic of their own: the baseline with one consumer and one producer, no transactions, no database, nothing
else; the bot as oncall runs it — the plan's scan (count, samples, what earlier replays copied), then the run:
one transaction per batch with the consumer offsets committed inside it, progress saved to the database
(SQLite) and the lease renewed. Both copies are then checked for their count. Uses $KAFKA_BOOTSTRAP_SERVERS,
or starts a broker with scripts/kafka.sh.

The plain loop runs twice a round: with librdkafka's defaults (the baseline the aim is set against: a bare script),
and with the bot's own fetch settings (``BACKLOG_READER``: no second-long pause when the local queue is full), which
says what the bot's extra work (transactions, three headers a copy, progress) costs like for like.

Each round runs the plain loops, then the bot, on the same DLQ; the ratios are per round (the broker on a busy
machine drifts between rounds more than within one), and their median is printed. Before the rounds, one empty
transaction: a fresh broker creates and loads its transaction log for the first transactional producer, a cost
of the cluster's first transaction, not of a replay (it made the first round 0.6 on a broker the bench started).

Run: .venv/bin/python bench/replay.py [--messages 200000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _kafka import broker, produce, stop_broker
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bot.domain.ops import ReplayRequest
from bot.kafka.clients import BACKLOG_READER
from bot.services.calendar import CalendarService
from bot.services.lineage import LineageService
from bot.services.operations import Actor, Operations
from bot.services.outbox import Outbox
from bot.services.sli import SliService
from bot.store import migrate
from bot.store.database import Database

PARTITIONS = 6


def fill(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000})
    start = datetime.now(UTC) - timedelta(hours=1)
    for i in range(count):
        produce(producer, topic, value=b'{"order": %d, "error": "price out of range", "payload": "%s"}' % (i, b"x" * 120), key=f"order-{i}".encode(),
                partition=i % PARTITIONS, headers=[("error", b"price out of range"), ("trace", f"t-{i}".encode())],
                timestamp=int((start + timedelta(milliseconds=i)).timestamp() * 1000))
        if i % 10000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0, "the DLQ was not filled"


def plain_loop(bootstrap: str, source: str, target: str, count: int, fetching: dict[str, Any]) -> float:
    """Seconds to copy ``count`` messages with a bare consumer (``fetching``: its fetch settings) and producer (key, headers,
    timestamp kept)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-plain-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, **fetching})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    consumer.subscribe([source])
    copied, began = 0, time.perf_counter()
    while copied < count:
        for message in consumer.consume(500, 1.0):
            if message.error() is not None:
                continue
            kind, stamp = message.timestamp()
            producer.produce(target, message.value(), message.key(), partition=message.partition(), headers=message.headers(),
                             timestamp=stamp)
            copied += 1
        producer.poll(0)
    producer.flush(120)
    consumer.commit(asynchronous=False)
    seconds = time.perf_counter() - began
    consumer.close()
    return seconds


def count(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-count-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.subscribe([topic])
    seen, ended = 0, set()
    while len(ended) < PARTITIONS:
        for message in consumer.consume(1000, 0.5):  # short: the end of each partition is not waited for
            error = message.error()
            if error is None:
                seen += 1
            elif error.code() == KafkaError._PARTITION_EOF:
                ended.add(message.partition())
    consumer.close()
    return seen


async def rounds(bootstrap: str, source: str, count: int, plain_targets: list[str], bot_targets: list[str]) -> list[tuple[float, float, float, int]]:
    """Per round, the plain loop then the bot on the same DLQ, one after the other (so both meet the same broker):
    seconds of the plain copy, of the bot's plan, of its run, and how many it copied (``--again`` after the first)."""
    folder = tempfile.mkdtemp(prefix="bench-replay-")
    url = f"sqlite:///{Path(folder) / 'changeops.db'}"
    migrate.upgrade(url)
    db = Database(url)
    lineage = LineageService(db)
    ops = Operations(db, lineage, SliService(db, lineage, Outbox()), Outbox(), CalendarService(db, lineage), None, bootstrap, None, "bench")
    figures = []
    try:
        for number, (plain_target, target) in enumerate(zip(plain_targets, bot_targets, strict=True)):
            plain = await asyncio.to_thread(plain_loop, bootstrap, source, plain_target, count, {})
            like = await asyncio.to_thread(plain_loop, bootstrap, source, f"{plain_target}-like", count, BACKLOG_READER)
            began = time.perf_counter()
            row = await ops.plan_replay(ReplayRequest(source, target, again=number > 0), False, Actor("bench", "cli"), None)
            planned = time.perf_counter()
            await ops.confirm(int(row.id or 0), Actor("bench", "cli"))
            done = await ops.run(int(row.id or 0))
            figures.append((plain, planned - began, time.perf_counter() - planned, int(done.progress["copied"]), like))
        return figures
    finally:
        await asyncio.to_thread(ops.close)
        await db.close()


def warm_transactions(bootstrap: str) -> None:
    """One empty transaction before the rounds: a fresh broker creates and loads its transaction log on the first
    transactional producer (seconds, once per cluster), which would otherwise fall on the bot's first round."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-warm-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.commit_transaction(60)


def main(messages: int, rounds_: int, bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    suffix = uuid.uuid4().hex[:8]
    source = f"bench-dlq-{suffix}"
    plain_targets = [f"bench-plain-{suffix}-{n}" for n in range(rounds_)]
    bot_targets = [f"bench-replay-{suffix}-{n}" for n in range(rounds_)]
    for future in admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=1)
                                       for t in (source, *plain_targets, *(f"{t}-like" for t in plain_targets), *bot_targets)]).values():
        future.result(timeout=30)
    fill(bootstrap, source, messages)
    warm_transactions(bootstrap)
    figures = asyncio.run(rounds(bootstrap, source, messages, plain_targets, bot_targets))
    for target in (*plain_targets, *(f"{t}-like" for t in plain_targets), *bot_targets):
        assert count(bootstrap, target) == messages, f"{target} does not hold {messages} messages"
    assert all(copied == messages for _, _, _, copied, _ in figures)
    plain_s, plan_s, run_s = (statistics.median(f[i] for f in figures) for i in range(3))
    like_s = statistics.median(f[4] for f in figures)
    ratios = [plain / run for plain, _, run, *_ in figures]
    likes = [like / run for _, _, run, _, like in figures]
    print(f"messages: {messages:,} over {PARTITIONS} partitions; medians of {rounds_} rounds, each the plain loops then the bot "
          "(after one empty transaction: the broker's transaction log loaded before the rounds)")
    print(f"plain consume→produce loop (no transactions):   {messages / plain_s:>10,.0f} msg/s ({plain_s:.2f} s)")
    print(f"  the same with the bot's fetch settings:       {messages / like_s:>10,.0f} msg/s ({like_s:.2f} s)")
    print(f"bot replay, run (exactly once, transactions):   {messages / run_s:>10,.0f} msg/s ({run_s:.2f} s)")
    print(f"bot replay, plan's scan (count, samples, skips): {messages / plan_s:>10,.0f} msg/s ({plan_s:.2f} s)")
    print(f"per round run/plain: {', '.join(f'{r:.2f}' for r in ratios)}")
    print(f"ratio run/plain: {statistics.median(ratios):.2f} (aim >= 0.9, no round under 0.8: lowest {min(ratios):.2f}); with the plan's scan: "
          f"{statistics.median(plain / (plan + run) for plain, plan, run, *_ in figures):.2f}; scan/run: {plan_s / run_s:.2f} (aim < 1)")
    print(f"like for like (the plain loop with the bot's fetch settings): run/plain {statistics.median(likes):.2f} "
          f"(rounds {', '.join(f'{r:.2f}' for r in likes)}): what transactions, the copies' headers and the progress cost")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    address, started_in = broker()
    try:
        main(args.messages, args.rounds, address)
    finally:
        stop_broker(started_in)
