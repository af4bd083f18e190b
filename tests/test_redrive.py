"""Dead letters sent back where they came from, on the real broker: a redrive of 3,000 letters from three original
topics (Kafka Connect's and Spring's headers) killed with SIGKILL mid-way and resumed from the terminal, each letter
exactly once in its own topic and partition under read_committed; targets the pipeline does not own refused, nothing
copied; and the loop guard through Slack: a letter that fails every time is replayed three times, and parked the
fourth time it is dead-lettered."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from bot.emulator.render import as_text
from bot.slack import ids
from tests.conftest import SlackHarness
from tests.leaks import descendants, in_group, wait_gone
from tests.test_ops import (
    ALICE,
    answer,
    cli,
    clicked,
    committed,
    database_url,
    latest,
    new_topic,
    op_message,
    operations,
    ops,
    read_committed,
    replay_past,
)

__all__ = ["database_url", "ops"]  # the fixtures of the operations' tests, used here too

NOW = datetime.now(UTC)
ERRORS = {"connect": ("__connect.errors.exception.class.name", "org.apache.kafka.connect.errors.DataException",
                      "__connect.errors.exception.message", "Unknown magic byte!"),
          "spring": ("kafka_dlt-exception-fqcn", "java.lang.IllegalStateException", "kafka_dlt-exception-message", "price is negative")}


def letter_headers(writer: str, topic: str, partition: int, extra: list[tuple[str, bytes]] | None = None) -> list[tuple[str, bytes]]:
    """The headers a dead-letter writer adds: Connect's (the partition as text) or Spring's (as four bytes)."""
    kind, kind_value, message, message_value = ERRORS[writer]
    if writer == "connect":
        where = [("__connect.errors.topic", topic.encode()), ("__connect.errors.partition", str(partition).encode())]
    else:
        where = [("kafka_dlt-original-topic", topic.encode()), ("kafka_dlt-original-partition", partition.to_bytes(4, "big"))]
    return [("trace", b"t"), *where, (kind, kind_value.encode()), (message, message_value.encode()), *(extra or [])]


def consume(bootstrap: str, topic: str, partitions: int) -> list[Any]:
    """Every message of ``topic`` a read_committed reader sees."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.subscribe([topic])
    found: list[Any] = []
    ended: set[int] = set()
    while len(ended) < partitions:
        message = consumer.poll(10)
        assert message is not None, f"{topic} did not end"
        if message.error() is not None:
            ended.add(int(message.partition() or 0))
        else:
            ended.discard(int(message.partition() or 0))
            found.append(message)
    consumer.close()
    return found


async def test_a_redrive_to_the_original_topics_killed_mid_way_resumes_each_letter_exactly_once_in_its_own_topic(
        migrated_url: str, kafka_bootstrap: str, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    orders, payments, refunds = new_topic(admin, "orders"), new_topic(admin, "payments"), new_topic(admin, "refunds", partitions=2)
    audit, dlq = new_topic(admin, "audit"), new_topic(admin, "enrich-dlq")
    originals = {orders: ("connect", 3), payments: ("spring", 3), refunds: ("spring", 2)}
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20})
    early = int((NOW - timedelta(hours=3)).timestamp() * 1000)
    producer.produce(dlq, b"lost", b"x", partition=0, headers=letter_headers("connect", "orders-v0", 0), timestamp=early)  # no such topic
    producer.produce(dlq, b"audit", b"y", partition=1, headers=letter_headers("spring", audit, 0), timestamp=early)  # not the pipeline's
    producer.produce(dlq, b"bare", b"z", partition=2, headers=[("error", b"?")], timestamp=early)  # names no original topic
    start = NOW - timedelta(hours=2)
    for i in range(3_000):
        topic = (orders, payments, refunds)[i % 3]
        writer, partitions = originals[topic]
        producer.produce(dlq, f"{topic}:{i}".encode(), f"key-{i}".encode(), partition=i % 3,
                         headers=letter_headers(writer, topic, i % partitions), timestamp=int((start + timedelta(milliseconds=100 * i)).timestamp() * 1000))
    for i in range(7):  # dead-lettered for the fourth time: parked, not replayed
        producer.produce(dlq, f"again:{i}".encode(), f"again-{i}".encode(), partition=i % 3,
                         headers=letter_headers("spring", payments, 0, [("changeops-replay-count", b"3")]),
                         timestamp=int((start + timedelta(minutes=10, seconds=i)).timestamp() * 1000))
    assert producer.flush(60) == 0
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps({"teams": {"orders-team": {"members": [ALICE], "oncall": [ALICE]}},
                                   "pipelines": [{"name": "enrich", "owner": "orders-team", "dlq": dlq,
                                                  "source": {"topics": [orders, payments, refunds], "group": "enrich"}}]}))
    env = {"DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "OPS_LEASE_SECONDS": "2"}
    loaded = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "catalog", "load", str(catalog)], env={**os.environ, **env},
                                     capture_output=True, text=True, timeout=120)
    assert loaded.returncode == 0, loaded.stderr

    refused = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "replay", dlq, "--to-original", "--yes"],
                                      env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "nothing is planned or copied" in refused.stderr
    assert "1 names orders-v0, which the cluster does not have" in refused.stderr
    assert f"1 names {audit}, which pipeline enrich does not read (it reads {orders}, {payments}, {refunds})" in refused.stderr
    assert "1 names no original topic" in refused.stderr
    status = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "ops", "status", "--format", "json"],
                                     env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert [o for o in json.loads(status.stdout) if o["request"]["dlq"] == dlq] == []  # nothing planned

    since = (start - timedelta(minutes=1)).isoformat()
    first = cli("replay", dlq, "--to-original", "--since", since, "--rate", "600/s", "--yes", env=env)
    group = await replay_past(admin, kafka_bootstrap, dlq, 600)
    below = descendants(first.pid)
    first.send_signal(signal.SIGKILL)
    _, said = await asyncio.to_thread(first.communicate)
    assert group is not None, said
    assert await asyncio.to_thread(wait_gone, below, 5) == set() and in_group(first.pid) == []
    assert sum(max(0, v) for v in committed(kafka_bootstrap, group, dlq).values()) < 3_007

    second = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "replay", dlq, "--to-original", "--since", since, "--yes",
                                                      "--format", "json"], env={**os.environ, **env}, capture_output=True, text=True, timeout=180)
    assert second.returncode == 0, second.stderr
    assert "resuming it from its last committed transaction" in second.stderr
    outcome = json.loads(second.stdout)
    assert outcome["state"] == "done" and outcome["progress"]["copied"] == 3_007 and outcome["progress"]["parked"] == 7
    assert outcome["progress"]["to"] == {orders: 1_000, payments: 1_000, refunds: 1_000}
    assert outcome["plan"]["targets"] == {orders: 1_000, payments: 1_000, refunds: 1_000} and outcome["plan"]["parked"] == 7
    assert "Sent 3,000 of 3,007 back to their original topics" in outcome["result"]
    assert (f"Parked 7 in {dlq}.parked: they were dead-lettered more than 3 times (last error: java.lang.IllegalStateException: price is "
            "negative ×7)") in outcome["result"]

    for topic, (_, partitions) in originals.items():
        copies = await asyncio.to_thread(consume, kafka_bootstrap, topic, partitions)
        assert len(copies) == 1_000 and len({m.value() for m in copies}) == 1_000  # each of its letters, once
        for message in copies:
            i = int(message.value().decode().rsplit(":", 1)[1])
            headers = message.headers()
            assert message.value() == f"{topic}:{i}".encode() and message.key() == f"key-{i}".encode()
            assert message.partition() == i % partitions  # the partition it was read from
            assert message.timestamp()[1] == int((start + timedelta(milliseconds=100 * i)).timestamp() * 1000)
            assert [v for k, v in headers if k == "changeops-replay-count"] == [b"1"]  # replayed once, said once
    parked = await asyncio.to_thread(consume, kafka_bootstrap, f"{dlq}.parked", 3)
    assert sorted(m.value() for m in parked) == [f"again:{i}".encode() for i in range(7)]
    for message in parked:
        headers = dict(message.headers())
        assert headers["changeops-replay-count"] == b"3" and b"max_replays 3" in headers["changeops-parked-reason"]
    assert await asyncio.to_thread(consume, kafka_bootstrap, audit, 3) == []


def fail_again(bootstrap: str, topic: str, dlq: str, seen: set[bytes]) -> int:
    """What the pipeline does with a letter that always fails: dead-letter it again as Spring does (its headers kept, the
    error headers written anew); how many it sent back."""
    producer = Producer({"bootstrap.servers": bootstrap})
    sent = 0
    for message in consume(bootstrap, topic, 3):
        source = dict(message.headers())["changeops-source"]
        if source in seen:
            continue
        seen.add(source)
        kept = [(k, v) for k, v in message.headers() if not k.startswith("kafka_dlt-")]
        producer.produce(dlq, message.value(), message.key(), partition=0, headers=kept + letter_headers("spring", topic, 0)[1:])
        sent += 1
    assert producer.flush(30) == 0
    return sent


async def test_a_letter_that_always_fails_is_replayed_three_times_then_parked_with_its_last_error(ops: tuple[SlackHarness, dict[str, str]],
                                                                                                    kafka_bootstrap: str) -> None:
    slack, names = ops
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(names["dlq"], b'{"id": "o1", "price": -5}', b"o1", partition=0, headers=letter_headers("spring", names["source"], 0))
    assert producer.flush(30) == 0
    seen: set[bytes] = set()
    for round_ in range(1, 4):
        assert "is posted" in await answer(slack, f"/replay {names['dlq']} --to-original", ALICE)
        row = await latest(slack)
        plan = await op_message(slack, int(row.id or 0), lambda t: "back to their original topics" in t)
        shown = as_text(plan.text, plan.blocks)
        assert f"*1* messages to copy back to their original topics (`{names['source']}` 1)" in shown and "parked" not in shown
        await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
        done = await op_message(slack, int(row.id or 0), lambda t: "Sent 1 of 1 back" in t)
        assert f"({names['source']} 1)" in as_text(done.text, done.blocks)
        assert await asyncio.to_thread(fail_again, kafka_bootstrap, names["source"], names["dlq"], seen) == 1
        [copy] = [m for m in await asyncio.to_thread(read_committed, kafka_bootstrap, names["source"])
                  if dict(m.headers())["changeops-replay-id"] == str(row.id).encode()]
        assert dict(copy.headers())["changeops-replay-count"] == str(round_).encode()

    assert "is posted" in await answer(slack, f"/replay {names['dlq']} --to-original", ALICE)  # dead-lettered a fourth time
    row = await latest(slack)
    assert row.plan["parked"] == 1 and row.plan["targets"] == {} and row.plan["skipped"] == 3
    plan = await op_message(slack, int(row.id or 0), lambda t: "will be parked" in t)
    shown = as_text(plan.text, plan.blocks)
    assert f"1 will be parked* in `{names['dlq']}.parked` (created for them), not replayed: they were dead-lettered more than 3 times" in shown
    assert "Last error: java.lang.IllegalStateException: price is negative ×1" in shown
    [confirm] = [e for b in plan.blocks if b.get("type") == "actions" for e in b["elements"] if e["action_id"] == ids.OPS_CONFIRM]
    assert "This will park 1 now" in confirm["confirm"]["text"]["text"]
    await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    done = await op_message(slack, int(row.id or 0), lambda t: "Parked 1 in" in t)
    assert "price is negative ×1" in as_text(done.text, done.blocks)
    [parked] = await asyncio.to_thread(read_committed, kafka_bootstrap, f"{names['dlq']}.parked")
    assert parked.key() == b"o1" and dict(parked.headers())["changeops-replay-count"] == b"3"
    assert len([m for m in await asyncio.to_thread(read_committed, kafka_bootstrap, names["source"])]) == 3  # not a fourth time

    producer.produce(names["dlq"], b"{}", b"o2", partition=1, headers=letter_headers("connect", "somewhere-else", 0))
    assert producer.flush(30) == 0
    before = len(await operations(slack))
    refused = await answer(slack, f"/replay {names['dlq']} --to-original", ALICE)
    assert "1 names somewhere-else, which the cluster does not have" in refused and "Nothing was planned or copied" in refused
    assert len(await operations(slack)) == before
