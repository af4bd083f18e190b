"""SLI samples through the real broker into the evaluator, against a consumer that only consumes and decodes.

Both read the same topic of Avro ``PipelineSample`` records (raw binary, keyed by pipeline, 6 partitions),
each in a consumer group of its own: the baseline with confluent-kafka + fastavro and nothing else; the
bot with its metrics consumer, evaluator and database (SQLite) behind it, committing only what it has
stored. The bot has seen every series once before (as a bot that has been running has: the first sample of
a series creates its row, once), its process pool has started and its start-up heap is settled as ``bot serve``
settles it, so what is measured is the steady state. Then breaching samples are produced one
at a time and the delay until the alert is posted in the Slack emulator is measured (p50, p99). Uses $KAFKA_BOOTSTRAP_SERVERS, or starts a broker with
scripts/kafka.sh.

Run: .venv/bin/python bench/sli_ingest.py [--samples 400000] [--alerts 40]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import secrets
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _kafka import broker, produce, stop_broker
from aiohttp import web
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from bot import workers
from bot.cli import settle_heap
from bot.config import Config
from bot.domain.lineage.catalog import read_catalog
from bot.domain.sli.pipeline import Sli
from bot.domain.sli.samples import PIPELINE_SAMPLE_SCHEMA, Sample
from bot.emulator import Emulator, Workspace
from bot.kafka.clients import BACKLOG_READER
from bot.runtime import Bot
from bot.store import migrate

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = 200
SCHEMA = parse_schema(PIPELINE_SAMPLE_SCHEMA)
SLIS = ("source_lag", "commit_success_rate", "schema_error_rate", "dlq_volume", "freshness", "checkpoint_duration")


def encode(record: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    schemaless_writer(buffer, SCHEMA, record)
    return buffer.getvalue()


VALUES = {"source_lag": 3.0, "commit_success_rate": 1.0, "schema_error_rate": 0.0, "dlq_volume": 12.0, "freshness": 30.0,
          "checkpoint_duration": 5.0}


def healthy(count: int, start: datetime) -> list[tuple[bytes, bytes]]:
    """``count`` samples of healthy values, spread over pipelines and SLIs, time moving on."""
    values = VALUES
    out = []
    for i in range(count):
        pipeline, sli = f"p{i % PIPELINES:03d}", SLIS[(i // PIPELINES) % len(SLIS)]
        at = start + timedelta(milliseconds=i)
        out.append((pipeline.encode(), encode({"pipeline": pipeline, "sli": sli, "value": values[sli], "time": at, "labels": {}})))
    return out


def baseline(bootstrap: str, topic: str, count: int) -> float:
    """Samples per second a bare consumer reads and decodes."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100, **BACKLOG_READER})  # as the bot's consumer
    consumer.subscribe([topic])
    seen, started = 0, None
    while seen < count:
        for message in consumer.consume(num_messages=2000, timeout=1.0):
            if message.error() is not None:
                continue
            started = started or time.perf_counter()
            schemaless_reader(io.BytesIO(message.value()), SCHEMA, None)
            seen += 1
    elapsed = time.perf_counter() - (started or time.perf_counter())
    consumer.commit(asynchronous=False)
    consumer.close()
    return seen / elapsed


async def through_the_bot(bot: Bot, count: int) -> float:
    """Samples per second the bot's metrics consumer evaluates and stores (from its first record to its last commit)."""
    assert bot.metrics is not None
    while bot.metrics.consumed == 0:
        await asyncio.sleep(0.01)
    started = time.perf_counter()
    first = bot.metrics.consumed
    while bot.metrics.consumed < count:
        await asyncio.sleep(0.005)
    return (bot.metrics.consumed - first) / (time.perf_counter() - started)


async def alert_delays(bot: Bot, ws: Workspace, producer: Producer, topic: str, alerts: int) -> list[float]:
    """Seconds from producing a breaching sample to the alert's chat.postMessage, one pipeline at a time (a little over a
    second apart, so the bot's own pacing of one post per second per channel is not what is measured)."""
    delays = []
    for i in range(alerts):
        await asyncio.sleep(1.1)
        pipeline = f"p{i % PIPELINES:03d}"
        before = len(ws.calls_to("chat.postMessage"))
        sent = time.perf_counter()
        producer.produce(topic, key=pipeline.encode(), value=encode({"pipeline": pipeline, "sli": "schema_error_rate", "value": 0.5,
                                                                     "time": datetime.now(UTC), "labels": {}}))
        producer.flush(10)
        await ws.wait_for(lambda name=pipeline, skip=before: any(c.ok and name in str(c.args.get("text", ""))  # type: ignore[misc]
                                                                  for c in ws.calls_to("chat.postMessage")[skip:]), 60)
        delays.append(time.perf_counter() - sent)
    return delays


async def main(samples: int, alerts: int, bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"bench-metrics-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, num_partitions=6, replication_factor=1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000})
    start = datetime.now(UTC) - timedelta(milliseconds=samples)
    for key, value in healthy(samples, start):  # up to now: no "no data"
        produce(producer, topic, key=key, value=value)
        producer.poll(0)
    producer.flush(60)

    first = await asyncio.to_thread(baseline, bootstrap, topic, samples)

    ws = Workspace(f"xoxb-bench-{secrets.token_hex(6)}")
    ws.add_user("U0000ALICE", "alice")
    ws.add_channel("pipelines", ["U0000ALICE"])
    emulator = Emulator(ws)
    runner = web.AppRunner(emulator.application(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    emulator.base_url = f"http://127.0.0.1:{int(runner.addresses[0][1])}"
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/bench.db"
        migrate.upgrade(url)
        config = Config.from_env({"SLACK_BOT_TOKEN": ws.token, "SLACK_SIGNING_SECRET": secrets.token_hex(16), "DATABASE_URL": url,
                                  "SLACK_API_URL": f"{emulator.base_url}/api/", "HOST": "127.0.0.1", "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
                                  "SLI_METRICS_TOPIC": topic, "SLI_METRICS_GROUP": f"bench-bot-{uuid.uuid4().hex[:6]}",
                                  "SLI_POLL_SECONDS": "600"})
        bot = Bot(config)
        catalog, problems = read_catalog({"teams": {"t": {"members": ["U0000ALICE"], "oncall": ["U0000ALICE"], "channel": "#pipelines"}},
                                          "pipelines": [{"name": f"p{i:03d}", "owner": "t", "reports": list(SLIS[:3]),
                                                         "slis": {"schema_error_rate": {"for": "0s"}}} for i in range(PIPELINES)]},
                                         lambda _: None)  # type: ignore[arg-type, return-value]
        assert not problems, problems
        await bot.lineage.load_catalog(catalog)
        before = start - timedelta(seconds=1)  # every series seen once, just before the samples measured
        await bot.sli.ingest([Sample(f"p{i:03d}", Sli(sli), VALUES[sli], before) for i in range(PIPELINES) for sli in SLIS])
        # the bot's process pool started before it (its workers' imports take seconds of CPU on a small machine)
        await asyncio.gather(*(workers.off_loop(time.sleep, 1.0) for _ in range(workers.WORKERS)))
        await bot.start(0)
        settle_heap()  # as `bot serve` does once started
        try:
            ours = await through_the_bot(bot, samples)
            delays = await alert_delays(bot, ws, producer, topic, alerts)
        finally:
            await bot.stop()
            await runner.cleanup()
    base = max(first, await asyncio.to_thread(baseline, bootstrap, topic, samples))  # the better of a run before and one after
    print(f"samples: {samples:,} raw Avro PipelineSample records, {PIPELINES} pipelines, 6 partitions")
    print(f"baseline (consume + decode, the bot's fetch settings), best of two runs: {base:>10,.0f} samples/s")
    print(f"bot (consume, decode, evaluate, store, commit): {ours:>10,.0f} samples/s")
    print(f"ratio: {ours / base:.2f} of the baseline (aim: at least 0.85)")
    ordered = sorted(delays)
    p99 = ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]
    print(f"produce -> alert posted, {alerts} alerts one at a time: p50 {statistics.median(delays) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400_000)
    parser.add_argument("--alerts", type=int, default=40)
    args = parser.parse_args()
    address, started_in = broker()
    try:
        asyncio.run(main(args.samples, args.alerts, address))
    finally:
        stop_broker(started_in)
