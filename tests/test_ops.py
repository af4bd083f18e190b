"""Oncall operations on the real broker, through the Slack emulator and the terminal: backfills by time and by
offsets (verified by consuming afterwards), refusals (an active member, someone not oncall, bad arguments),
Undo, the retention warning; replays of 10,000 messages exactly once with keys, headers and timestamps, a
replaying process killed with SIGKILL and resumed, a second replay of the same range skipped, cancel."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from sqlmodel import select

from bot.domain.calendar import Freeze, Scope
from bot.domain.lineage.catalog import read_catalog
from bot.domain.ops import OpsError
from bot.emulator.render import as_text
from bot.emulator.workspace import Message
from bot.kafka.operations import Cluster
from bot.runtime import Bot
from bot.services.operations import Actor
from bot.slack import ids
from bot.store.database import Database
from bot.store.models import Operation
from tests.conftest import SlackHarness, bot_config
from tests.leaks import descendants, in_group, wait_gone

ALICE, BOB, CAROL = "U0000ALICE", "U00000BOB", "U0000CAROL"  # ALICE: oncall of orders-team; CAROL: global oncall; BOB: neither
NOW = datetime.now(UTC)


@pytest.fixture
def database_url(postgres_url: str) -> str:
    """These tests run on PostgreSQL only (the broker is the slow part; SQLite is covered elsewhere)."""
    return postgres_url


def new_topic(admin: AdminClient, prefix: str, partitions: int = 3) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(timeout=30)
    return name


@pytest.fixture
async def ops(slack: SlackHarness, migrated_url: str, kafka_bootstrap: str) -> AsyncIterator[tuple[SlackHarness, dict[str, str]]]:
    """The harness's bot on the real broker with the real clock, a catalog whose pipeline reads ``source`` with ``group``
    and dead-letters to ``dlq``, and those topics (three partitions each) plus a replay-only target."""
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    names = {"source": new_topic(admin, "orders"), "dlq": new_topic(admin, "orders-dlq"), "target": new_topic(admin, "orders.replay"),
             "group": f"enrich-{uuid.uuid4().hex[:8]}"}
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap, OPS_LEASE_SECONDS="2"))
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    data = {"oncall": {"members": [CAROL]},
            "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE, BOB], "oncall": [ALICE], "channel": "#orders-pipeline"}},
            "pipelines": [{"name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline",
                           "source": {"topics": [names["source"]], "group": names["group"]}, "dlq": names["dlq"]}]}
    parsed, problems = read_catalog(data, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    yield slack, names


def produce(bootstrap: str, topic: str, count: int, start: datetime, step: timedelta, partitions: int = 3) -> None:
    """``count`` messages round-robin over the partitions, with keys, two headers and timestamps ``start + i*step``."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(count):
        producer.produce(topic, f"value-{i}".encode(), f"key-{i}".encode(), partition=i % partitions,
                         headers=[("error", b"timeout" if i % 2 else b"schema"), ("trace", f"t{i}".encode())],
                         timestamp=int((start + step * i).timestamp() * 1000))
        if i % 50_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def consume_all(bootstrap: str, topic: str, group: str) -> None:
    """Read the whole topic with ``group``, commit, leave."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.subscribe([topic])
    ended: set[int] = set()
    while len(ended) < 3:
        message = consumer.poll(10)
        assert message is not None, "the topic did not end"
        if message.error() is not None:
            ended.add(int(message.partition() or 0))
    consumer.commit(asynchronous=False)
    consumer.close()


def committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    asked = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(3)])
    return {tp.partition: tp.offset for tp in admin.list_consumer_group_offsets([asked])[group].result(timeout=10).topic_partitions or []}


def read_committed(bootstrap: str, topic: str, expect: int | None = None) -> list[Any]:
    """Every message of ``topic`` a read_committed consumer sees (waits for ``expect`` when given)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed", "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.subscribe([topic])
    found: list[Any] = []
    ended: set[int] = set()
    while len(ended) < 3 or (expect is not None and len(found) < expect):
        message = consumer.poll(10)
        if message is None:
            break
        if message.error() is not None:
            ended.add(int(message.partition() or 0))
            continue
        ended.discard(int(message.partition() or 0))
        found.append(message)
    consumer.close()
    return found


async def answer(slack: SlackHarness, text: str, user: str) -> str:
    before = len(slack.ws.ephemerals_for(user))
    await slack.driver.command(text, user=user, channel="orders-pipeline")
    found = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(user)[before:] or None, timeout=60)
    return "\n".join(as_text(e.text, e.blocks) for e in found)


async def clicked(slack: SlackHarness, message: Message, action: str, user: str) -> str:
    before = len(slack.ws.ephemerals_for(user))
    await slack.driver.click(message, action, user=user)
    found = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(user)[before:] or None, timeout=60)
    return "\n".join(e.text for e in found)


async def op_message(slack: SlackHarness, number: int, predicate: Any = lambda text: True) -> Message:
    """The operation's message once it reads as ``predicate`` wants."""
    def find() -> Message | None:
        for message in slack.ws.channel_messages("orders-pipeline"):
            if any(b.get("block_id") == f"op_{number}" for b in message.blocks) or f"#{number}:" in message.text:
                if predicate(as_text(message.text, message.blocks)):
                    return message
        return None
    return await slack.ws.wait_for(find, timeout=90)


def thread(slack: SlackHarness, message: Message) -> str:
    return "\n".join(m.text for m in slack.ws.channel_messages("orders-pipeline", thread_ts=message.ts))


async def operations(slack: SlackHarness) -> list[Operation]:
    return await slack.bot.ops.recent(100)


async def latest(slack: SlackHarness) -> Operation:
    return max(await operations(slack), key=lambda row: int(row.id or 0))


async def test_backfill_by_time_confirm_undo_then_by_offsets_verified_by_consuming(ops: tuple[SlackHarness, dict[str, str]],
                                                                                     kafka_bootstrap: str) -> None:
    slack, names = ops
    start = NOW - timedelta(hours=3)
    await asyncio.to_thread(produce, kafka_bootstrap, names["source"], 300, start, timedelta(seconds=30))  # 300 over 2.5 hours
    await asyncio.to_thread(consume_all, kafka_bootstrap, names["source"], names["group"])
    back_to = start + timedelta(seconds=30 * 200)  # messages 200..299 are at or after it: 100 to re-read
    command = f"/backfill {names['group']} {names['source']} --to-time {back_to.isoformat().replace('+00:00', 'Z')}"

    assert "Only oncall may run this: it belongs to the oncall of orders-team" in await answer(slack, command, BOB)
    assert await operations(slack) == []
    assert "is posted in this channel" in await answer(slack, command, ALICE)
    [row] = await operations(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "100 messages will be read again" in t)
    shown = as_text(plan.text, plan.blocks)
    assert "Nothing moves until Confirm" in shown and "Retention" not in shown
    assert "Only oncall" in await clicked(slack, plan, ids.OPS_CONFIRM, BOB)
    assert committed(kafka_bootstrap, names["group"], names["source"]) == {0: 100, 1: 100, 2: 100}  # nothing moved
    assert "is applied" in await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    after = committed(kafka_bootstrap, names["group"], names["source"])
    assert sum(100 - o for o in after.values()) == 100 and after == {p: m["target"] for p, m in
                                                                     ((m["partition"], m) for m in row.plan["moves"])}
    applied = await op_message(slack, int(row.id or 0), lambda t: "applied" in t and "Lag: 100 of 100 to re-read, as of" in t)
    assert "Start the job" in await slack.ws.wait_for(lambda: thread(slack, applied) or None)
    with pytest.raises(OpsError, match="is applied, not waiting for a confirmation"):  # a second Confirm (a stale message) changes nothing
        await slack.bot.ops.confirm(int(row.id or 0), Actor(ALICE, "slack"))

    assert "undone" in await clicked(slack, applied, ids.OPS_UNDO, CAROL)  # the global oncall may too
    assert committed(kafka_bootstrap, names["group"], names["source"]) == {0: 100, 1: 100, 2: 100}
    entries = await slack.bot.calendar.listing(NOW - timedelta(hours=1), NOW + timedelta(hours=2))
    assert any(e["kind"] == "backfill" and f"#{row.id}" in e["title"] for e in entries)

    command = f"/backfill {names['group']} {names['source']} --to-offsets 0:90,2:95"
    assert "is posted" in await answer(slack, command, ALICE)
    second = await latest(slack)
    plan = await op_message(slack, int(second.id or 0), lambda t: "15 messages will be read again" in t)
    assert "is applied" in await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": names["group"], "enable.auto.commit": False,
                         "enable.partition.eof": True})
    consumer.subscribe([names["source"]])
    read: list[tuple[int, int]] = []
    ended: set[int] = set()
    while len(ended) < 3:
        message = await asyncio.to_thread(consumer.poll, 10)
        assert message is not None
        if message.error() is None:
            read.append((int(message.partition() or 0), int(message.offset() or 0)))
        else:
            ended.add(int(message.partition() or 0))
    consumer.commit(asynchronous=False)
    assert sorted(read) == [(0, o) for o in range(90, 100)] + [(2, o) for o in range(95, 100)]
    assert await slack.bot.ops.follow() == 1  # the consumer is still in the group: it read them again
    consumer.close()
    caught = await op_message(slack, int(second.id or 0), lambda t: "Caught up" in t)
    await slack.ws.wait_for(lambda: "has caught up" in thread(slack, caught) or None)

    # A client that keeps its own offsets and only commits them, as a Flink source does, writes its position back unread:
    # the offsets are at the end again, and the bot does not call that caught up
    assert "is posted" in await answer(slack, f"/backfill {names['group']} {names['source']} --to-offsets 0:80", ALICE)
    third = await latest(slack)
    plan = await op_message(slack, int(third.id or 0), lambda t: "20 messages will be read again" in t)
    assert "is applied" in await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    # The broker away while the bot follows: the message keeps the last lag, says from when, and that Kafka is not answering
    slack.bot.ops._cluster = Cluster("127.0.0.1:1")  # a real client on an address no broker answers
    assert await slack.bot.ops.follow() == 0
    noted = await slack.bot.ops.get(int(third.id or 0))
    assert await slack.bot.ops.follow() == 0 and (await slack.bot.ops.get(int(third.id or 0))).version == noted.version  # said once
    away = await op_message(slack, int(third.id or 0), lambda t: "Kafka has not answered since" in t)
    assert "Lag: 20 of 20 to re-read, as of" in as_text(away.text, away.blocks) and "Caught up" not in away.text
    slack.bot.ops._cluster = None  # the broker back
    keeper = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": names["group"], "enable.auto.commit": False})
    keeper.commit(offsets=[TopicPartition(names["source"], 0, 100)], asynchronous=False)  # assigned, never a member
    keeper.close()
    assert await slack.bot.ops.follow() == 1
    unseen = await op_message(slack, int(third.id or 0), lambda t: "Kafka has not answered" not in t and "not shown to have read them again" in t)
    unseen = await op_message(slack, int(third.id or 0), lambda t: "not shown to have read them again" in t)
    said = await slack.ws.wait_for(lambda: "no client was in the group" in thread(slack, unseen) and thread(slack, unseen))
    assert ":checkered_flag:" not in said and "writes its old position back without reading" in said


async def test_earliest_latest_and_shifts_each_checked_by_the_committed_offsets_and_undone(ops: tuple[SlackHarness, dict[str, str]],
                                                                                           kafka_bootstrap: str) -> None:
    slack, names = ops
    await asyncio.to_thread(produce, kafka_bootstrap, names["source"], 300, NOW - timedelta(hours=1), timedelta(seconds=1))  # 100 each
    await asyncio.to_thread(read_some, kafka_bootstrap, names["source"], names["group"], {0: 60, 1: 60, 2: 60})
    where = {0: 60, 1: 60, 2: 60}
    assert committed(kafka_bootstrap, names["group"], names["source"]) == where

    async def planned(options: str, shown: str) -> tuple[Operation, Message]:
        assert "is posted" in await answer(slack, f"/backfill {names['group']} {names['source']} {options}", ALICE)
        row = await latest(slack)
        return row, await op_message(slack, int(row.id or 0), lambda t: shown in t)

    async def applied_then_undone(row: Operation, message: Message, expected: dict[int, int]) -> None:
        assert "is applied" in await clicked(slack, message, ids.OPS_CONFIRM, ALICE)
        assert committed(kafka_bootstrap, names["group"], names["source"]) == expected
        done = await op_message(slack, int(row.id or 0), lambda t: "applied" in t)
        assert "undone" in await clicked(slack, done, ids.OPS_UNDO, ALICE)
        assert committed(kafka_bootstrap, names["group"], names["source"]) == where

    row, message = await planned("--to-earliest", "180 messages will be read again")
    assert row.plan["skipped"] == {"total": 0, "partitions": []}
    await applied_then_undone(row, message, {0: 0, 1: 0, 2: 0})

    row, message = await planned("--to-latest", "120 messages will be skipped")
    assert row.plan["skipped"] == {"total": 120, "partitions": [{"topic": names["source"], "partition": p, "messages": 40} for p in range(3)]}
    confirm = next(e for b in message.blocks if b.get("type") == "actions" for e in b["elements"] if e["action_id"] == ids.OPS_CONFIRM)
    assert "skipping 120 messages it has not read" in confirm["confirm"]["text"]["text"]  # the dialog names the loss
    await asyncio.to_thread(produce, kafka_bootstrap, names["source"], 30, NOW, timedelta(seconds=1))  # the topic goes on meanwhile
    await applied_then_undone(row, message, {0: 100, 1: 100, 2: 100})  # the ends it planned: it skips exactly what was confirmed

    row, message = await planned("--shift-by -80 --partitions 0,1", "120 messages will be read again")  # 60 - 80: clamped to 0
    assert "asked -20: clamped to the log" in as_text(message.text, message.blocks)
    await applied_then_undone(row, message, {0: 0, 1: 0, 2: 60})

    row, message = await planned("--shift-by 15", "45 messages will be skipped")
    assert row.plan["skipped"]["total"] == 45 and [x["messages"] for x in row.plan["skipped"]["partitions"]] == [15, 15, 15]
    await applied_then_undone(row, message, {0: 75, 1: 75, 2: 75})

    for options, said in (("--shift-by 0", "other than zero"), ("--to-offsets 0:-5", "is not PARTITION:OFFSET"),
                          ("--to-earliest --partitions 7", "has no partition 7"), ("--to-latest --to-earliest", "exactly one of")):
        assert said in await answer(slack, f"/backfill {names['group']} {names['source']} {options}", ALICE)
    assert committed(kafka_bootstrap, names["group"], names["source"]) == where  # nothing moved

    extra = new_topic(AdminClient({"bootstrap.servers": kafka_bootstrap}), "payments")  # the group reads a second topic
    await asyncio.to_thread(produce, kafka_bootstrap, extra, 300, NOW - timedelta(hours=1), timedelta(seconds=1))
    assert "it does not read it" in await answer(slack, f"/backfill {names['group']} {names['source']},{extra} --to-earliest", ALICE)
    await asyncio.to_thread(read_some, kafka_bootstrap, extra, names["group"], {0: 90, 1: 90, 2: 90})
    assert "is posted" in await answer(slack, f"/backfill {names['group']} --all-topics --to-earliest", ALICE)
    row = await latest(slack)
    message = await op_message(slack, int(row.id or 0), lambda t: "450 messages will be read again" in t)
    shown = as_text(message.text, message.blocks)
    assert f"on all its topics ({names['source']}, {extra})" in shown and "topic" in shown.split("partition")[0]
    assert "is applied" in await clicked(slack, message, ids.OPS_CONFIRM, ALICE)
    assert (committed(kafka_bootstrap, names["group"], names["source"]), committed(kafka_bootstrap, names["group"], extra)) == \
        ({0: 0, 1: 0, 2: 0}, {0: 0, 1: 0, 2: 0})
    done = await op_message(slack, int(row.id or 0), lambda t: "applied" in t)
    assert "undone" in await clicked(slack, done, ids.OPS_UNDO, ALICE)
    assert (committed(kafka_bootstrap, names["group"], names["source"]), committed(kafka_bootstrap, names["group"], extra)) == \
        (where, {0: 90, 1: 90, 2: 90})
    entries = await slack.bot.calendar.listing(NOW - timedelta(hours=1), NOW + timedelta(hours=2))
    assert any(f"#{row.id}" in e["title"] and extra in e["title"] for e in entries)  # booked over both topics


async def test_a_group_named_with_spaces_and_colons_is_reset_as_kafka_names_it(ops: tuple[SlackHarness, dict[str, str]],
                                                                               kafka_bootstrap: str) -> None:
    """Kafka takes any string as a group's id (Kafka Connect names a sink's group after its connector): quoted, it is planned,
    applied and undone, checked by the offsets Kafka commits for it."""
    slack, names = ops  # no pipeline declares the group: the global oncall (carol) runs it
    group = f"connect-{names['group']} sink:v2"
    await asyncio.to_thread(produce, kafka_bootstrap, names["source"], 60, NOW - timedelta(hours=1), timedelta(seconds=1))
    await asyncio.to_thread(read_some, kafka_bootstrap, names["source"], group, {0: 20, 1: 20, 2: 20})
    assert "is posted" in await answer(slack, f"/backfill '{group}' {names['source']} --to-earliest", CAROL)
    row = await latest(slack)
    assert row.request["group"] == group
    message = await op_message(slack, int(row.id or 0), lambda t: "60 messages will be read again" in t)
    assert "is applied" in await clicked(slack, message, ids.OPS_CONFIRM, CAROL)
    assert committed(kafka_bootstrap, group, names["source"]) == {0: 0, 1: 0, 2: 0}
    done = await op_message(slack, int(row.id or 0), lambda t: "applied" in t)
    assert "undone" in await clicked(slack, done, ids.OPS_UNDO, CAROL)
    assert committed(kafka_bootstrap, group, names["source"]) == {0: 20, 1: 20, 2: 20}
    assert "is not a consumer group id" in await answer(slack, f"/backfill 'a\tb' {names['source']} --to-earliest", CAROL)


def read_some(bootstrap: str, topic: str, group: str, upto: dict[int, int]) -> None:
    """Commit ``group`` at ``upto`` on each partition (as a job that read that far), then leave."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in upto.items()], asynchronous=False)
    consumer.close()


async def test_the_backfill_form_takes_every_reset_and_puts_errors_at_their_field(ops: tuple[SlackHarness, dict[str, str]],
                                                                                    kafka_bootstrap: str) -> None:
    slack, names = ops
    await asyncio.to_thread(produce, kafka_bootstrap, names["source"], 300, NOW - timedelta(hours=1), timedelta(seconds=1))  # 100 each
    await asyncio.to_thread(read_some, kafka_bootstrap, names["source"], names["group"], {0: 60, 1: 60, 2: 60})
    await slack.driver.command("/backfill", user=ALICE, channel="orders-pipeline")
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.BACKFILL_VIEW), None))

    def values(reset: str = "", picked: int | None = None, partitions: str = "") -> dict[str, Any]:
        return {ids.GROUP_BLOCK: {ids.GROUP_ACTION: {"type": "plain_text_input", "value": names["group"]}},
                ids.TOPIC_BLOCK: {ids.TOPIC_ACTION: {"type": "plain_text_input", "value": names["source"]}},
                ids.SINCE_BLOCK: {ids.SINCE_ACTION: {"type": "datetimepicker", "selected_date_time": picked}},
                ids.RESET_BLOCK: {ids.RESET_ACTION: {"type": "plain_text_input", "value": reset}},
                ids.OPTIONS_BLOCK: {ids.OPTIONS_ACTION: {"type": "plain_text_input", "value": partitions}}}

    neither = await slack.driver.submit(form.id, values(), user=ALICE)
    assert "give exactly one of" in neither.json["errors"][ids.SINCE_BLOCK]
    both = await slack.driver.submit(form.id, values("--to-earliest", int(NOW.timestamp()) - 600), user=ALICE)
    assert "give exactly one of" in both.json["errors"][ids.SINCE_BLOCK]
    wrong = await slack.driver.submit(form.id, values("--shift-by lots"), user=ALICE)
    assert "is not a number of messages" in wrong.json["errors"][ids.RESET_BLOCK]
    assert await operations(slack) == []
    await slack.driver.submit(form.id, values("--shift-by -10", partitions="0,1"), user=ALICE)
    row = await slack.ws.wait_for(lambda: (lambda rows: rows[0] if rows else None)(
        [r for r in slack.ws.channel_messages("orders-pipeline") if "Backfill #" in r.text]), timeout=30)
    shown = as_text(row.text, row.blocks)
    assert "by -10 messages from where it is" in shown and "20 messages will be read again" in shown
    assert committed(kafka_bootstrap, names["group"], names["source"]) == {0: 60, 1: 60, 2: 60}  # a plan: nothing moved


async def test_offsets_exported_then_imported_from_a_file_round_trip_and_bad_files_move_nothing(migrated_url: str, kafka_bootstrap: str,
                                                                                                 tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic, group = new_topic(admin, "orders"), f"enrich-{uuid.uuid4().hex[:8]}"
    await asyncio.to_thread(produce, kafka_bootstrap, topic, 300, NOW - timedelta(hours=1), timedelta(seconds=1))  # 100 each
    await asyncio.to_thread(read_some, kafka_bootstrap, topic, group, {0: 60, 1: 70, 2: 80})
    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}

    def bot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot", "backfill", group, topic, *args], env=env, capture_output=True, text=True, timeout=120)

    saved = await asyncio.to_thread(bot, "--export")
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout == f"{topic},0,60\n{topic},1,70\n{topic},2,80\n" and "nothing moved" in saved.stderr
    (tmp_path / "before.csv").write_text(saved.stdout)
    planned = await asyncio.to_thread(bot, "--shift-by", "-10", "--export")  # the plan's targets, as kafka-consumer-groups --export
    assert planned.stdout == f"{topic},0,50\n{topic},1,60\n{topic},2,70\n"
    assert committed(kafka_bootstrap, group, topic) == {0: 60, 1: 70, 2: 80}
    moved = await asyncio.to_thread(bot, "--to-earliest", "--yes")
    assert moved.returncode == 0, moved.stderr
    assert committed(kafka_bootstrap, group, topic) == {0: 0, 1: 0, 2: 0}
    back = await asyncio.to_thread(bot, "--from-file", str(tmp_path / "before.csv"), "--yes")
    assert back.returncode == 0, back.stderr
    assert committed(kafka_bootstrap, group, topic) == {0: 60, 1: 70, 2: 80}  # the round trip

    files = (("unknown.csv", f"{topic},0,10\n{topic},7,10\n", 1, f"{topic} has no partition 7"),
             ("other.csv", f"{topic},0,10\npayments,0,10\n", 2, "the file also names payments"),
             ("bad.csv", f"{topic},0,10\n{topic};1;10\n", 2, "line 2 of the file is not topic,partition,offset"),
             ("past.csv", f"{topic},0,1000\n", 1, "past the end of the partition"))
    for name, text, _, _ in files:
        (tmp_path / name).write_text(text)
    refusals = await asyncio.gather(*(asyncio.to_thread(bot, "--from-file", str(tmp_path / name), "--yes") for name, *_ in files))
    for (name, _, code, said), refused in zip(files, refusals, strict=True):
        assert refused.returncode == code and said in refused.stderr, (name, refused.stderr)
    missing = await asyncio.to_thread(bot, "--from-file", str(tmp_path / "none.csv"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    both = await asyncio.to_thread(bot, "--export", "--yes")
    assert both.returncode == 2 and "moves nothing" in both.stderr
    nobody = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "backfill", "no-such-group", topic, "--export"], env=env,
                                     capture_output=True, text=True, timeout=120)
    assert nobody.returncode == 1 and "has committed no offset" in nobody.stderr
    assert committed(kafka_bootstrap, group, topic) == {0: 60, 1: 70, 2: 80}  # nothing moved


async def test_an_export_or_an_import_against_a_cluster_that_does_not_answer_says_so_and_writes_nothing(migrated_url: str,
                                                                                                        tmp_path: Path) -> None:
    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9"}  # nothing listens there
    (tmp_path / "before.csv").write_text("orders,0,60\n")
    asked = (["--export"], ["--from-file", str(tmp_path / "before.csv"), "--yes"])
    runs = await asyncio.gather(*(asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "backfill", "enrich", "orders", *args], env=env,
                                                    capture_output=True, text=True, timeout=120) for args in asked))  # each waits out Kafka
    for args, run in zip(asked, runs, strict=True):
        assert run.returncode == 1 and "Kafka did not answer as expected" in run.stderr, (args, run.stderr)
        assert "FAIL" not in run.stderr and "%3|" not in run.stderr, run.stderr  # no librdkafka line: the bot says what failed
        assert run.stdout == ""  # no offsets printed as if they were the group's
    db = Database(migrated_url)
    async with db.session() as session:
        assert (await session.exec(select(Operation))).all() == []  # nothing planned or applied
    await db.close()


async def test_backfill_refusals_and_the_retention_warning(ops: tuple[SlackHarness, dict[str, str]], kafka_bootstrap: str) -> None:
    slack, names = ops
    await asyncio.to_thread(produce, kafka_bootstrap, names["source"], 30, NOW - timedelta(hours=1), timedelta(seconds=1))
    await asyncio.to_thread(consume_all, kafka_bootstrap, names["source"], names["group"])
    live = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": names["group"], "client.id": "flink-taskmanager-7"})
    live.subscribe([names["source"]])
    for _ in range(50):
        await asyncio.to_thread(live.poll, 0.2)
        if live.assignment():
            break
    group, source = names["group"], names["source"]
    refused = await answer(slack, f"/backfill {group} {source} --by-duration 30m", ALICE)
    assert "1 connected client" in refused and "flink-taskmanager-7" in refused and "stop the job first" in refused
    await asyncio.to_thread(live.close)

    bad = {
        f"/backfill {group} no-such-topic-{uuid.uuid4().hex[:6]} --by-duration 1h": "the cluster has no topic",
        f"/backfill nobody-{uuid.uuid4().hex[:6]} {source} --by-duration 1h": "has never committed",
        f"/backfill {group} {source} --to-time 2099-01-01T00:00:00Z": "is in the future",
        f"/backfill {group} {source} --to-offsets 0:12x": "is not PARTITION:OFFSET",
        f"/backfill {group} {source} --to-offsets 7:1": "has no partition 7",
        f"/backfill {group} {source} --to-offsets 0:999999": "past the end of the partition",
        f"/backfill {group} {source}": "give exactly one of",
        f"/backfill {group} {source} --by-duration soon": "is not a duration",
        f"/backfill {group} {source} --to-time 2026-12-01T00:00 --by-duration 1h": "give exactly one of",
        f"/backfill {group} {source} --to-time 2026-12-01T00:00": "needs a zone",
        f"/backfill {group} {source} --by-duration 1h --bogus": "unknown option --bogus",
        "/replay orders-dlq --to orders-dlq": "into itself",
        f"/replay {names['dlq']}": "say where to",
        f"/replay {names['dlq']} --to {names['target']} --since 2099-01-01T00:00Z": "is in the future",
        f"/replay {names['dlq']} --to {names['target']} --limit many": "is not a number",
        f"/replay {names['dlq']} --to {names['target']} --rate fast": "is not a rate",
        f"/replay {names['dlq']} --to {names['target']} --filter nothing": "is not header=value",
        f"/replay {names['dlq']} --to no-such-target-{uuid.uuid4().hex[:6]}": "the cluster has no topic",
        f"/replay {names['dlq']} --to {names['target']}": "Only oncall",
    }
    for text, expected in bad.items():
        user = BOB if expected == "Only oncall" else CAROL if "nobody-" in text else ALICE
        said = await answer(slack, text, user)
        assert expected in said, (text, said)
        assert "Nothing was planned" in said, (text, said)
    assert await operations(slack) == []

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})  # retention deleted the oldest records of partition 0
    admin.delete_records([TopicPartition(source, 0, 5)])[TopicPartition(source, 0, 5)].result(timeout=10)
    assert "is posted" in await answer(slack, f"/backfill {group} {source} --to-offsets 0:0,1:0", ALICE)
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "Retention" in t)
    assert row.plan["moves"][0]["before_retention"] and row.plan["moves"][0]["target"] == 5
    assert "partition 0 still keeps" in as_text(plan.text, plan.blocks)
    assert "is cancelled" in await clicked(slack, plan, ids.OPS_CANCEL, ALICE)
    assert "cancelled" in as_text(*(lambda m: (m.text, m.blocks))(await op_message(slack, int(row.id or 0), lambda t: "cancelled" in t)))

    # The group stopped at offset 2 of partition 0, and retention has since taken offsets 2–4: gone for it whatever the backfill does.
    back = [TopicPartition(source, 0, 2)]
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, back)])[group].result(timeout=10)
    assert "is posted" in await answer(slack, f"/backfill {group} {source} --to-earliest --partitions 0", ALICE)
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "deleted by retention" in t)
    said = as_text(plan.text, plan.blocks)
    assert "3 messages the group had not read were deleted by retention before it read them: partition 0 (offsets 2–4)" in said, said
    assert "will be skipped" not in said and row.plan["skipped"]["total"] == 0 and row.plan["moves"][0]["reread"] == 0
    assert "is cancelled" in await clicked(slack, plan, ids.OPS_CANCEL, ALICE)


async def test_replay_of_ten_thousand_exactly_once_then_skipped_when_asked_again(ops: tuple[SlackHarness, dict[str, str]],
                                                                                 kafka_bootstrap: str) -> None:
    slack, names = ops
    start = NOW - timedelta(days=1)
    await asyncio.to_thread(produce, kafka_bootstrap, names["dlq"], 10_000, start, timedelta(milliseconds=500))
    command = f"/replay {names['dlq']} --to {names['target']}"
    assert "Only oncall" in await answer(slack, command, BOB)
    assert "is posted" in await answer(slack, command, ALICE)
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "10,000" in t)
    shown = as_text(plan.text, plan.blocks)
    assert "key=key-0" in shown and "error=schema" in shown and "0 already copied" in shown
    assert "is running" in await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    await op_message(slack, int(row.id or 0), lambda t: "done" in t and "Copied 10,000 of 10,000" in t)

    copies = await asyncio.to_thread(read_committed, kafka_bootstrap, names["target"], 10_000)
    assert len(copies) == 10_000
    sources = [dict(m.headers())["changeops-source"].decode() for m in copies]
    assert len(set(sources)) == 10_000
    for message in copies:
        headers = dict(message.headers())
        dlq, partition, offset = headers["changeops-source"].decode().rsplit("/", 2)
        i = int(offset) * 3 + int(partition)
        assert dlq == names["dlq"] and message.partition() == int(partition)
        assert message.key() == f"key-{i}".encode() and message.value() == f"value-{i}".encode()
        assert headers["error"] == (b"timeout" if i % 2 else b"schema") and headers["trace"] == f"t{i}".encode()
        assert headers["changeops-replay-id"] == str(row.id).encode()
        assert message.timestamp()[1] == int((start + timedelta(milliseconds=500) * i).timestamp() * 1000)
    for p in range(3):
        offsets = [int(dict(m.headers())["changeops-source"].decode().rsplit("/", 1)[1]) for m in copies if m.partition() == p]
        assert offsets == sorted(offsets)  # the DLQ's order, partition by partition

    assert "is posted" in await answer(slack, command, ALICE)
    again = await latest(slack)
    assert again.plan["count"] == 0 and again.plan["skipped"] == 10_000
    await op_message(slack, int(again.id or 0), lambda t: "10,000 already copied by an earlier replay (skipped)" in t)
    assert "is posted" in await answer(slack, f"{command} --filter error=timeout --again --dry-run", CAROL)
    dry = await latest(slack)
    assert dry.state == "dry-run" and dry.plan["count"] == 5_000 and dry.plan["filtered"] == 5_000
    assert "is posted" in await answer(slack, f"{command} --limit 100 --again --dry-run", CAROL)  # the 100 oldest: 34, 33 and 33
    limited = await latest(slack)
    assert limited.plan["count"] == 100 and limited.plan["spans"] == [[0, 0, 34], [1, 0, 33], [2, 0, 33]]
    status = await answer(slack, "/ops status", BOB)
    assert f"Replay #{row.id}" in status and "done" in status and "message" in status
    assert "`99` is not understood here" in await answer(slack, "/ops status 99", BOB)  # no operation is picked by a number


async def test_cancel_stops_a_running_replay_at_a_transaction_boundary(ops: tuple[SlackHarness, dict[str, str]], kafka_bootstrap: str) -> None:
    slack, names = ops
    await asyncio.to_thread(produce, kafka_bootstrap, names["dlq"], 3_000, NOW - timedelta(hours=1), timedelta(milliseconds=10))
    assert "is posted" in await answer(slack, f"/replay {names['dlq']} --to {names['target']} --rate 300/s", CAROL)
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "3,000" in t)
    await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    running = await op_message(slack, int(row.id or 0), lambda t: "Progress:" in t)
    listed = await answer(slack, "/ops status", ALICE)
    assert f"Replay #{row.id}" in listed and "(as of " in listed  # a run's figures say when they were written
    told = await clicked(slack, running, ids.OPS_CANCEL, ALICE)
    assert "#%d is cancelling." % row.id == told or "#%d is cancelled." % row.id == told  # as it stands when answered: it may end at once
    await op_message(slack, int(row.id or 0), lambda t: "Cancelled after" in t)
    ended = await slack.bot.ops.get(int(row.id or 0))
    assert ended.state == "cancelled" and 0 < ended.progress["copied"] < 3_000
    copies = await asyncio.to_thread(read_committed, kafka_bootstrap, names["target"])
    assert len(copies) == ended.progress["copied"]
    assert sum(ended.progress["positions"].values()) == ended.progress["copied"]  # the DLQ was copied exactly up to there


def cli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "bot", *args], env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def groups_of(admin: AdminClient) -> set[str]:
    return {g.group_id for g in admin.list_consumer_groups().result(timeout=10).valid}


async def replay_past(admin: AdminClient, bootstrap: str, dlq: str, least: int) -> str | None:
    """The replay group once it has committed more than ``least`` messages of ``dlq`` (30 s at most). Each test's database
    numbers its operations from 1, so the group's name may have served another test's topics before: its offsets on
    ``dlq`` tell."""
    for _ in range(600):
        await asyncio.sleep(0.05)
        for group in sorted(g for g in groups_of(admin) if g.startswith("changeops-replay-")):
            if sum(max(0, v) for v in committed(bootstrap, group, dlq).values()) > least:
                return group
    return None


async def test_a_replay_killed_mid_way_resumes_from_its_last_transaction_exactly_once(migrated_url: str, kafka_bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    dlq, target = new_topic(admin, "payments-dlq"), new_topic(admin, "payments.replay")
    await asyncio.to_thread(produce, kafka_bootstrap, dlq, 10_000, NOW - timedelta(hours=2), timedelta(milliseconds=100))
    # a lease far longer than the test: the dead run is known dead (its process is gone from this machine), not timed out
    env = {"DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "OPS_LEASE_SECONDS": "600"}
    first = cli("replay", dlq, "--to", target, "--rate", "1000/s", "--yes", env=env)  # 10 s: a loaded machine still kills it mid-way
    group = await replay_past(admin, kafka_bootstrap, dlq, 1_000)
    twice = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "replay", dlq, "--to", target, "--yes"],
                                    env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert twice.returncode == 1 and "is running in another process" in twice.stderr and "not run twice" in twice.stderr, twice.stderr
    below = descendants(first.pid)
    first.send_signal(signal.SIGKILL)
    _, said = await asyncio.to_thread(first.communicate)
    assert group is not None, said
    assert await asyncio.to_thread(wait_gone, below, 5) == set() and in_group(first.pid) == []  # nothing of it outlives it
    at_kill = sum(max(0, v) for v in committed(kafka_bootstrap, group, dlq).values())
    assert at_kill < 10_000
    looked = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "ops", "status"], env={**os.environ, **env}, capture_output=True,
                                     text=True, timeout=60)
    line = next(line for line in looked.stdout.splitlines() if dlq in line)
    assert " running " in line and "; last heard " in line and "the process running it has ended" in line, line  # not shown as live

    second = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "replay", dlq, "--to", target, "--yes", "--format", "json"],
                                     env={**os.environ, **env}, capture_output=True, text=True, timeout=180)
    assert second.returncode == 0, second.stderr
    outcome = json.loads(second.stdout)
    assert outcome["state"] == "done" and outcome["progress"]["copied"] == 10_000
    assert "resuming it from its last committed transaction" in second.stderr
    copies = await asyncio.to_thread(read_committed, kafka_bootstrap, target, 10_000)
    sources = sorted(dict(m.headers())["changeops-source"].decode() for m in copies)
    assert len(sources) == 10_000 and len(set(sources)) == 10_000

    status = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "ops", "status", "--format", "json"],
                                     env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    [listed] = [o for o in json.loads(status.stdout) if o["request"]["dlq"] == dlq]
    assert listed["surface"] == "cli" and listed["state"] == "done"


async def test_a_replay_whose_bot_stops_is_resumed_by_the_next_bot_and_says_so(ops: tuple[SlackHarness, dict[str, str]],
                                                                                migrated_url: str, kafka_bootstrap: str) -> None:
    slack, names = ops
    await asyncio.to_thread(produce, kafka_bootstrap, names["dlq"], 4_000, NOW - timedelta(hours=1), timedelta(milliseconds=10))
    assert "is posted" in await answer(slack, f"/replay {names['dlq']} --to {names['target']} --rate 400/s", ALICE)
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "4,000" in t)
    await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    await op_message(slack, int(row.id or 0), lambda t: "Progress:" in t)
    await slack.bot.stop()  # mid-way: it stops at a transaction boundary and hands its lease back
    db = Database(migrated_url)
    async with db.session() as session:
        left = await session.get(Operation, row.id)
    await db.close()
    assert left is not None and left.state == "running" and 0 < left.progress["copied"] < 4_000

    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap, OPS_LEASE_SECONDS="2"))
    await slack.bot.start(0)
    assert await slack.bot.ops.resume_orphans() == 1
    done = await op_message(slack, int(row.id or 0), lambda t: "Copied 4,000 of 4,000" in t)
    assert "Resumed by this bot from the last committed transaction" in await slack.ws.wait_for(
        lambda: (lambda t: t if "Resumed" in t else None)(thread(slack, done)), timeout=30)
    copies = await asyncio.to_thread(read_committed, kafka_bootstrap, names["target"], 4_000)
    assert len({dict(m.headers())["changeops-source"] for m in copies}) == len(copies) == 4_000


async def test_a_replay_planned_inside_a_freeze_names_it_in_the_plan_and_the_confirm_dialog(ops: tuple[SlackHarness, dict[str, str]],
                                                                                            kafka_bootstrap: str) -> None:
    slack, names = ops
    now = datetime.now(UTC)
    await slack.bot.calendar.add_freeze(Freeze("year-end", "the year-end close", start=now - timedelta(hours=1), end=now + timedelta(hours=2)), ALICE)
    await asyncio.to_thread(produce, kafka_bootstrap, names["dlq"], 30, NOW - timedelta(hours=1), timedelta(seconds=1))
    assert "is posted" in await answer(slack, f"/replay {names['dlq']} --to {names['target']}", ALICE)  # not refused: an incident
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "Inside the freeze year-end" in t)
    assert "the year-end close" in as_text(plan.text, plan.blocks)
    [confirm] = [e for b in plan.blocks if b.get("type") == "actions" for e in b["elements"] if e["action_id"] == ids.OPS_CONFIRM]
    assert "inside the freeze *year-end*" in confirm["confirm"]["text"]["text"]


async def test_an_operation_names_the_booked_changes_it_meets_through_lineage_in_its_plan_and_confirm_dialog(
        ops: tuple[SlackHarness, dict[str, str]], kafka_bootstrap: str) -> None:
    slack, names = ops
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    data = {"oncall": {"members": [CAROL]},
            "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE, BOB], "oncall": [ALICE], "channel": "#orders-pipeline"}},
            "datasets": [{"name": names["target"], "namespace": "kafka://broker:9092", "kind": "kafka", "owner": "orders-team"},
                         {"name": names["source"], "namespace": "kafka://broker:9092", "kind": "kafka", "owner": "orders-team"},
                         {"name": "dwd_orders", "namespace": "iceberg://lake", "kind": "iceberg", "owner": "orders-team"},
                         {"name": "elsewhere", "namespace": "iceberg://lake", "kind": "iceberg", "owner": "orders-team"}],
            "jobs": [{"name": "replay-reader", "namespace": "flink://prod", "owner": "orders-team", "inputs": [names["target"]],
                      "outputs": ["dwd_orders"]}],
            "pipelines": [{"name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline",
                           "source": {"topics": [names["source"]], "group": names["group"]}, "dlq": names["dlq"]}]}
    parsed, problems = read_catalog(data, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    now = datetime.now(UTC)
    upgrade = await slack.bot.calendar.add(kind="job_upgrade", title="Flink 1.20 upgrade of replay-reader", start=now - timedelta(minutes=10),
                                           end=now + timedelta(hours=2), owner="orders-team", booked_by=ALICE,
                                           scope=Scope(jobs=frozenset({"replay-reader"})), surface="slack")
    await slack.bot.calendar.add(kind="maintenance", title="lake compaction", start=now - timedelta(minutes=10), end=now + timedelta(hours=2),
                                 owner="orders-team", booked_by=ALICE, scope=Scope(datasets=frozenset({"elsewhere"})), surface="slack")
    later = await slack.bot.calendar.add(kind="maintenance", title="tomorrow's broker patch", start=now + timedelta(days=1),
                                         end=now + timedelta(days=1, hours=1), owner="orders-team", booked_by=ALICE,
                                         scope=Scope(datasets=frozenset({names["source"]})), surface="slack")
    await asyncio.to_thread(produce, kafka_bootstrap, names["dlq"], 30, NOW - timedelta(hours=1), timedelta(seconds=1))

    assert "is posted" in await answer(slack, f"/replay {names['dlq']} --to {names['target']}", ALICE)
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "It meets booked changes" in t)
    shown = as_text(plan.text, plan.blocks)
    assert f"#{upgrade} Flink 1.20 upgrade of replay-reader (job upgrade" in shown and "a common downstream: dataset dwd_orders, job replay-reader" in shown
    assert "lake compaction" not in shown and f"#{later}" not in shown  # another scope; another time
    [confirm] = [e for b in plan.blocks if b.get("type") == "actions" for e in b["elements"] if e["action_id"] == ids.OPS_CONFIRM]
    assert f"meeting booked change #{upgrade} Flink 1.20 upgrade of replay-reader" in confirm["confirm"]["text"]["text"]
    assert len(confirm["confirm"]["text"]["text"]) <= 300

    await asyncio.to_thread(read_some, kafka_bootstrap, names["source"], names["group"], {0: 5, 1: 5, 2: 5})
    await asyncio.to_thread(produce, kafka_bootstrap, names["source"], 30, NOW - timedelta(hours=1), timedelta(seconds=1))
    assert "is posted" in await answer(slack, f"/backfill {names['group']} {names['source']} --to-earliest", ALICE)
    backfill = await latest(slack)
    plan = await op_message(slack, int(backfill.id or 0), lambda t: "messages will be read again" in t)
    assert "It meets booked changes" not in as_text(plan.text, plan.blocks)  # the patch on its topic is tomorrow


async def test_peek_shows_the_newest_dead_letters_by_error_before_any_replay(ops: tuple[SlackHarness, dict[str, str]], kafka_bootstrap: str,
                                                                             migrated_url: str) -> None:
    slack, names = ops
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    connect = [("__connect.errors.topic", b"orders"), ("__connect.errors.exception.class.name", b"org.apache.kafka.connect.errors.DataException"),
               ("__connect.errors.exception.message", b"Unknown magic byte!")]
    spring = [("kafka_dlt-original-topic", b"payments"), ("kafka_dlt-exception-fqcn", b"java.lang.IllegalStateException"),
              ("kafka_dlt-exception-message", b"price is <negative> & wrong")]
    for i in range(30):
        headers = connect if i % 3 else spring  # 20 of Connect's, 10 of Spring's
        producer.produce(names["dlq"], key=f"k{i}".encode(), value=b'{"id": "o%d"}' % i, headers=headers, partition=i % 3)
    producer.produce(names["dlq"], value=b"\xff\x00 not text", partition=0)  # no error header at all
    producer.produce(names["dlq"], value=None, key=b"gone", partition=1, headers=[("kafka_dlt-original-topic", b"\xff\xfe"),
                                                                                  ("kafka_dlt-exception-message", b"\x1b[2Jcleared")])
    producer.produce(names["dlq"], value=b"\x00\x00\x00\x00\x07\x02ab", partition=2)  # framed for schema 7; this bot has no registry
    assert producer.flush(30) == 0

    text = await answer(slack, f"/replay peek {names['dlq']} 100", ALICE)
    assert "the newest 33 of the 33 it holds" in text
    assert "*1 ×* 0x1b5b324a636c6561726564" in text and "from 0xfffe (not text) ×1" in text and "\x1b" not in text
    assert "(no value: a tombstone)" in text and "(schema 7; no registry to decode it) 0x0261" in text
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if "20 ×" in line)
    second = next(i for i, line in enumerate(lines) if "10 ×" in line)
    assert first < second and "org.apache.kafka.connect.errors.DataException: Unknown magic byte!" in lines[first]
    assert "from orders ×20" in lines[first] and "from payments ×10" in lines[second]
    assert "price is &lt;negative&gt; &amp; wrong" in lines[second]  # escaped before it reaches mrkdwn
    assert "*2 ×* (no error header)" in text and '{"id": "o29"}' in text  # the newest example of Connect's
    assert "0x" in text  # bytes that are not text, shown as hex
    assert "Only oncall may run this" in await answer(slack, f"/replay peek {names['dlq']}", BOB)
    assert "5 of the 33" in await answer(slack, f"/replay {names['dlq']} --peek 5", CAROL)  # as the CLI writes it; the global oncall
    refused = await answer(slack, "/replay peek no-such-dlq", CAROL)  # the global oncall may look at any topic
    assert "unknown to the cluster" in refused and "Nothing was read" in refused
    assert "not a number of dead letters from 1 to 500" in await answer(slack, f"/replay peek {names['dlq']} 9999", ALICE)
    assert await operations(slack) == []  # looking plans nothing

    env = {"DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    run = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "replay", names["dlq"], "--peek", "10", "--format", "json"],
                                  env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    peeked = json.loads(run.stdout)
    assert peeked["read"] == 10 and peeked["held"] == 33 and sum(g["count"] for g in peeked["groups"]) == 10
    run = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "replay", names["dlq"], "--peek", "0"],
                                  env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "not a number of dead letters" in run.stderr


async def test_peek_on_a_cluster_that_does_not_answer_says_so_and_reads_nothing(slack: SlackHarness, migrated_url: str) -> None:
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:9"))  # nothing listens there
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    parsed, problems = read_catalog({"oncall": {"members": [CAROL]}}, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    told = await answer(slack, "/replay peek orders-dlq", CAROL)
    assert "Kafka did not answer as expected" in told and "Nothing was read" in told
    assert await operations(slack) == []


async def test_several_topics_and_all_topics_of_a_group_reset_together_undone_exported_and_imported(migrated_url: str, kafka_bootstrap: str,
                                                                                                     tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    orders, payments, refunds, other = (new_topic(admin, name) for name in ("orders", "payments", "refunds", "audit"))
    group = f"enrich-{uuid.uuid4().hex[:8]}"
    for topic in (orders, payments, refunds, other):
        await asyncio.to_thread(produce, kafka_bootstrap, topic, 300, NOW - timedelta(hours=1), timedelta(seconds=1))  # 100 each
    where = {0: 60, 1: 70, 2: 80}
    for topic in (orders, payments, refunds):
        await asyncio.to_thread(read_some, kafka_bootstrap, topic, group, where)
    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}

    def bot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot", *args], env=env, capture_output=True, text=True, timeout=120)

    def positions() -> dict[str, dict[int, int]]:
        return {topic: committed(kafka_bootstrap, group, topic) for topic in (orders, payments, refunds)}

    saved = await asyncio.to_thread(bot, "backfill", group, "--all-topics", "--export")
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout == "".join(f"{t},{p},{o}\n" for t in sorted((orders, payments, refunds)) for p, o in where.items())
    assert "9 partitions" in saved.stderr and other not in saved.stdout
    (tmp_path / "before.csv").write_text(saved.stdout)

    everything = await asyncio.to_thread(bot, "backfill", group, "--all-topics", "--to-earliest", "--yes")
    assert everything.returncode == 0, everything.stderr
    assert f"on all its topics ({', '.join(sorted((orders, payments, refunds)))})" in everything.stdout
    assert all(line.split()[0] in (orders, payments, refunds) for line in everything.stdout.splitlines() if line.strip().endswith(("60", "70", "80")))
    assert positions() == {t: {0: 0, 1: 0, 2: 0} for t in (orders, payments, refunds)}
    assert set(committed(kafka_bootstrap, group, other).values()) == {-1001}  # a topic the group does not read is left alone (-1001: none)
    operation = everything.stdout.split()[0].lstrip("#")
    undone = await asyncio.to_thread(bot, "ops", "undo", operation)
    assert undone.returncode == 0, undone.stderr
    assert positions() == {t: where for t in (orders, payments, refunds)}

    two = await asyncio.to_thread(bot, "backfill", group, f"{orders},{payments}", "--shift-by", "-10", "--yes")
    assert two.returncode == 0, two.stderr
    assert positions() == {orders: {0: 50, 1: 60, 2: 70}, payments: {0: 50, 1: 60, 2: 70}, refunds: where}

    bad = (([f"{orders},{other}", "--to-earliest"], 1, f"has no committed offset on {other}: it does not read it"),
           ([f"{orders},no-such-{uuid.uuid4().hex[:6]}", "--to-earliest"], 1, "the cluster has no topic no-such-"),
           ([f"{orders},{payments}", "--to-offsets", "0:5"], 2, "gives the partitions of one topic"),
           ([orders, "--all-topics", "--to-earliest"], 2, "not both"),
           ([orders, "--from-file", str(tmp_path / "before.csv")], 2, "the file also names"))
    refusals = await asyncio.gather(*(asyncio.to_thread(bot, "backfill", group, *args) for args, _, _ in bad))
    for (args, code, said), refused in zip(bad, refusals, strict=True):
        assert refused.returncode == code and said in refused.stderr, (args, refused.stderr)
    assert positions() == {orders: {0: 50, 1: 60, 2: 70}, payments: {0: 50, 1: 60, 2: 70}, refunds: where}  # nothing moved

    back = await asyncio.to_thread(bot, "backfill", group, "--all-topics", "--from-file", str(tmp_path / "before.csv"), "--yes")
    assert back.returncode == 0, back.stderr
    assert positions() == {t: where for t in (orders, payments, refunds)}  # the round trip over three topics


async def test_a_backfill_of_several_topics_confirmed_while_kafka_is_away_moves_nothing_then_runs_once_when_it_is_back(
        ops: tuple[SlackHarness, dict[str, str]], migrated_url: str, kafka_bootstrap: str) -> None:
    slack, names = ops
    extra = new_topic(AdminClient({"bootstrap.servers": kafka_bootstrap}), "payments")
    for topic in (names["source"], extra):
        await asyncio.to_thread(produce, kafka_bootstrap, topic, 300, NOW - timedelta(hours=1), timedelta(seconds=1))
        await asyncio.to_thread(read_some, kafka_bootstrap, topic, names["group"], {0: 60, 1: 60, 2: 60})
    assert "is posted" in await answer(slack, f"/backfill {names['group']} --all-topics --to-earliest", ALICE)
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "360 messages will be read again" in t)

    await slack.bot.stop()  # the broker away: a bot that cannot reach it
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:9"))
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    assert "Kafka did not answer as expected" in await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    assert (await slack.bot.ops.get(int(row.id or 0))).state == "planned"  # still a plan, shown as one
    assert committed(kafka_bootstrap, names["group"], names["source"]) == committed(kafka_bootstrap, names["group"], extra) == \
        {0: 60, 1: 60, 2: 60}

    await slack.bot.stop()  # back: the same Confirm, clicked twice (a stale message), moves the group once
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap))
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    assert "is applied" in await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    with pytest.raises(OpsError, match="is applied, not waiting for a confirmation"):  # a second Confirm from a stale client
        await slack.bot.ops.confirm(int(row.id or 0), Actor(ALICE, "slack"))
    assert committed(kafka_bootstrap, names["group"], names["source"]) == committed(kafka_bootstrap, names["group"], extra) == \
        {0: 0, 1: 0, 2: 0}
    done = await op_message(slack, int(row.id or 0), lambda t: "applied" in t)
    assert "undone" in await clicked(slack, done, ids.OPS_UNDO, ALICE)
    with pytest.raises(OpsError, match="only an applied backfill can be undone"):  # a second Undo changes nothing
        await slack.bot.ops.undo(int(row.id or 0), Actor(ALICE, "slack"))
    assert committed(kafka_bootstrap, names["group"], names["source"]) == committed(kafka_bootstrap, names["group"], extra) == \
        {0: 60, 1: 60, 2: 60}
    undone = await op_message(slack, int(row.id or 0), lambda t: "undone" in t)
    assert not [b for b in undone.blocks if b.get("type") == "actions"]  # no button left to press


async def test_a_replay_of_a_dlq_written_in_transactions_copies_the_committed_letters_once_and_ends(migrated_url: str,
                                                                                                    kafka_bootstrap: str) -> None:
    """A DLQ an exactly-once pipeline writes (Flink's or Kafka Streams' sinks): transaction markers take offsets and an aborted
    transaction's letters sit in the log. The replay reads what was committed, asks the consumer for no more than its spans hold
    (so a span's end is not waited for), copies each committed letter once, and is done."""
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    dlq, target = new_topic(admin, "flink-dlq"), new_topic(admin, "flink.replay")

    def write() -> None:
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"sink-{uuid.uuid4().hex[:6]}"})
        producer.init_transactions(30)
        for number, (count, keep) in enumerate(((50, True), (20, False), (30, True))):
            producer.begin_transaction()
            for i in range(count):
                producer.produce(dlq, f"letter-{number}-{i}".encode(), partition=i % 3, headers=[("error", b"timeout")])
            producer.commit_transaction(30) if keep else producer.abort_transaction(30)

    await asyncio.to_thread(write)
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "replay", dlq, "--to", target, "--yes", "--format", "json"],
                                   env={**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap},
                                   capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["state"] == "done" and outcome["progress"]["copied"] == 80
    copies = await asyncio.to_thread(read_committed, kafka_bootstrap, target, 80)
    values = sorted(m.value().decode() for m in copies)
    assert len(values) == 80 == len(set(values)) and not any(v.startswith("letter-1-") for v in values)  # the aborted ones stay out


async def test_an_operation_message_someone_deleted_in_slack_is_posted_again_when_the_operation_moves(
        ops: tuple[SlackHarness, dict[str, str]], kafka_bootstrap: str, migrated_url: str) -> None:
    slack, names = ops
    await asyncio.to_thread(produce, kafka_bootstrap, names["source"], 30, NOW - timedelta(hours=1), timedelta(seconds=1))
    await asyncio.to_thread(consume_all, kafka_bootstrap, names["source"], names["group"])
    assert "is posted" in await answer(slack, f"/backfill {names['group']} {names['source']} --to-earliest", ALICE)
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "messages will be read again" in t)
    await slack.delete(plan.channel, plan.ts)  # tidied away by someone in the channel

    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "ops", "cancel", str(row.id)], env=env, capture_output=True,
                                   text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    again = await op_message(slack, int(row.id or 0), lambda t: "cancelled" in t)  # where it stands, in sight again, in its channel
    assert again.ts != plan.ts and again.channel == plan.channel
    for _ in range(100):  # remembered right after the post
        if (await latest(slack)).message_ts == again.ts:
            break
        await asyncio.sleep(0.05)
    assert (await latest(slack)).message_ts == again.ts
    await slack.ws.wait_for(lambda: [m for m in slack.ws.channel_messages("orders-pipeline", thread_ts=again.ts) if "cancel" in m.text.lower()]
                            or None, timeout=30)
    assert [m.ts for m in slack.ws.channel_messages("orders-pipeline") if f"#{row.id}:" in m.text] == [again.ts]  # once, not once per edit


async def test_a_replay_into_a_topic_that_stamps_messages_as_appended_says_the_event_times_are_not_kept(
        ops: tuple[SlackHarness, dict[str, str]], kafka_bootstrap: str, migrated_url: str) -> None:
    slack, names = ops
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    stamped = f"orders.replay-{uuid.uuid4().hex[:8]}"  # message.timestamp.type=LogAppendTime: the broker overwrites each timestamp
    admin.create_topics([NewTopic(stamped, 3, 1, config={"message.timestamp.type": "LogAppendTime"})])[stamped].result(timeout=30)
    start = NOW - timedelta(days=1)
    await asyncio.to_thread(produce, kafka_bootstrap, names["dlq"], 6, start, timedelta(seconds=1))

    assert "is posted" in await answer(slack, f"/replay {names['dlq']} --to {names['target']}", ALICE)
    plain = await op_message(slack, int((await latest(slack)).id or 0), lambda t: "messages to copy" in t)
    assert "LogAppendTime" not in as_text(plain.text, plain.blocks)
    assert "is posted" in await answer(slack, f"/replay {names['dlq']} --to {stamped}", ALICE)
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "messages to copy" in t)
    assert (f"{stamped} stamps each message when it is appended (LogAppendTime): the copies written there carry the time of the replay, "
            "not the events' own") in as_text(plan.text, plan.blocks)
    assert "is running" in await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    await op_message(slack, int(row.id or 0), lambda t: "done" in t)
    copies = await asyncio.to_thread(read_committed, kafka_bootstrap, stamped, 6)
    assert all(m.timestamp()[0] == TIMESTAMP_LOG_APPEND_TIME and m.timestamp()[1] > int(NOW.timestamp() * 1000) - 60_000 for m in copies)  # as said

    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    dry = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "replay", names["dlq"], "--to", stamped, "--again", "--dry-run"],
                                  env=env, capture_output=True, text=True, timeout=120)
    assert dry.returncode == 0 and f"  ! {stamped} stamps each message when it is appended" in dry.stdout, dry.stdout + dry.stderr
