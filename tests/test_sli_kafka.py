"""SLIs on the real broker: PipelineSample records in both encodings through the metrics topic, bad records counted and
skipped while the consumer advances, the lag poller on a consumer group that stops, the DLQ poller and its dead letters."""

from __future__ import annotations

import asyncio
import io
import logging
import struct
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType
from fastavro import parse_schema, schemaless_writer

from bot.domain.sli.samples import PIPELINE_SAMPLE_SCHEMA
from bot.emulator.render import as_text
from bot.emulator.workspace import Message
from bot.kafka.metrics import MetricsConsumer
from bot.runtime import Bot
from bot.slack import ids
from tests.conftest import SlackHarness, bot_config
from tests.registry import RealRegistry
from tests.test_sli_alerts import ALICE, BOB, FAST, alerts, catalog, load, read, sample, send

PARSED = parse_schema(PIPELINE_SAMPLE_SCHEMA)


def avro(record: dict[str, Any], schema: Any = PARSED) -> bytes:
    buffer = io.BytesIO()
    schemaless_writer(buffer, schema, record)
    return buffer.getvalue()


def framed(schema_id: int, body: bytes) -> bytes:
    return b"\x00" + struct.pack(">I", schema_id) + body


def record(pipeline: str, sli: str, value: float, at: datetime | None = None) -> dict[str, Any]:
    return {"pipeline": pipeline, "sli": sli, "value": value, "time": at or datetime.now(UTC), "labels": {"host": "tm-1"}}


def topic(admin: AdminClient, prefix: str, partitions: int = 1) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name].result(timeout=30)
    return name


async def read_and_commit(bootstrap: str, source: str, group: str, count: int) -> None:
    """A job of ``group`` reads ``count`` records of ``source``, committing each, and stops."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([source])
    taken = 0
    while taken < count:
        message = await asyncio.to_thread(consumer.poll, 1.0)
        if message is not None and message.error() is None:
            taken += 1
            await asyncio.to_thread(consumer.commit, message=message, asynchronous=False)
    await asyncio.to_thread(consumer.close)


@pytest.fixture
async def kafka_bot(slack: SlackHarness, migrated_url: str, kafka_bootstrap: str, schema_registry: RealRegistry) -> AsyncIterator[
        tuple[SlackHarness, str]]:
    """The harness's bot, now on the real broker and registry, with the real clock (lag is measured against now)."""
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    metrics = topic(admin, "metrics", partitions=3)
    await slack.bot.stop()
    config = bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap, SLI_METRICS_TOPIC=metrics,
                        SLI_METRICS_GROUP=f"g-{metrics}", SCHEMA_REGISTRY_URL=schema_registry.url)
    slack.bot = Bot(config)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    yield slack, metrics


async def test_samples_in_both_encodings_alert_and_resolve_and_bad_records_are_skipped(kafka_bot: tuple[SlackHarness, str],
                                                                                       kafka_bootstrap: str,
                                                                                       schema_registry: RealRegistry) -> None:
    slack, metrics = kafka_bot
    await load(slack, catalog(slack, [
        {"name": "raw-pipe", "owner": "orders-team", "channel": "#orders-pipeline", "reports": ["schema_error_rate"],
         "slis": {"schema_error_rate": FAST}},
        {"name": "framed-pipe", "owner": "orders-team", "channel": "#orders-pipeline", "reports": ["schema_error_rate"],
         "slis": {"schema_error_rate": FAST}}]))
    schema_id = await schema_registry.register(f"{metrics}-value", PIPELINE_SAMPLE_SCHEMA)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    good = [(b"raw-pipe", avro(record("raw-pipe", "schema_error_rate", 0.5))),
            (b"framed-pipe", framed(schema_id, avro(record("framed-pipe", "schema_error_rate", 0.5))))]
    bad = [(b"x", framed(999, avro(record("raw-pipe", "schema_error_rate", 0.5)))),        # an id the registry does not know
           (b"x", avro(record("raw-pipe", "schema_error_rate", 0.5))[:-4]),               # truncated
           (b"x", avro(record("ghost", "schema_error_rate", 0.5))),                       # unknown pipeline
           (b"x", avro(record("raw-pipe", "lag", 0.5))),                                  # unknown SLI
           (b"x", avro(record("raw-pipe", "schema_error_rate", float("nan")))),           # NaN
           (b"x", b"{\"pipeline\": \"raw-pipe\"}")]                                      # not Avro at all
    for key, value in [*bad, *good]:
        producer.produce(metrics, key=key, value=value)
    assert producer.flush(30) == 0
    await slack.ws.wait_for(lambda: len([m for m in alerts(slack) if "PAGE" in read(m)]) == 2, timeout=60)
    shown = "\n".join(read(m) for m in alerts(slack))
    assert "raw-pipe" in shown and "framed-pipe" in shown
    rejected = slack.bot.sli.rejected
    assert rejected["unknown_schema_id"] == 1 and rejected["unknown_pipeline"] == 1 and rejected["unknown_sli"] == 1
    assert rejected["bad_value"] == 1 and rejected["undecodable"] == 2

    producer.produce(metrics, key=b"raw-pipe", value=avro(record("raw-pipe", "schema_error_rate", 0.0)))
    producer.produce(metrics, key=b"framed-pipe", value=framed(schema_id, avro(record("framed-pipe", "schema_error_rate", 0.0))))
    assert producer.flush(30) == 0
    await slack.ws.wait_for(lambda: len([m for m in alerts(slack) if "Resolved" in read(m)]) == 2, timeout=60)
    assert len(alerts(slack)) == 2
    producer.produce(metrics, key=b"raw-pipe", value=avro(record("raw-pipe", "schema_error_rate", 1.7)))  # no ratio: refused on the fast path too
    assert producer.flush(30) == 0
    for _ in range(200):
        if rejected["bad_value"] == 2:
            break
        await asyncio.sleep(0.1)
    assert rejected["bad_value"] == 2 and len(alerts(slack)) == 2 and not [m for m in alerts(slack) if "PAGE" in read(m) and "Resolved" not in read(m)]

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    group = f"g-{metrics}"
    for _ in range(100):  # the consumer committed past every record, the bad ones included
        committed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=10).topic_partitions
        if sum(max(tp.offset, 0) for tp in committed or []) == len(bad) + len(good) + 3:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError(f"committed offsets {committed} do not cover all {len(bad) + len(good) + 3} records")


async def test_the_lag_poller_alerts_on_a_group_that_stops_and_resolves_when_it_catches_up(kafka_bot: tuple[SlackHarness, str],
                                                                                            kafka_bootstrap: str) -> None:
    slack, _ = kafka_bot
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    source, dlq = topic(admin, "orders", partitions=2), topic(admin, "orders-dlq")
    group = f"enrich-{source}"
    await load(slack, catalog(slack, [{"name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline",
                                       "source": {"topics": [source], "group": group}, "dlq": dlq,
                                       "slis": {"source_lag": {"warn": 60, "page": 3600, **FAST}}}]))
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    old = int((time.time() - 600) * 1000)
    for i in range(10):
        producer.produce(source, key=f"k{i}".encode(), value=b"order", partition=i % 2, timestamp=old + i)
    assert producer.flush(30) == 0
    await read_and_commit(kafka_bootstrap, source, group, 4)  # the job reads a little, commits, and stops

    assert await slack.bot.poll() == 2  # source lag and DLQ volume
    alert = await slack.ws.wait_for(lambda: next((m for m in alerts(slack) if "Source lag" in read(m)), None), timeout=30)
    assert "WARN" in read(alert)
    lag = next(r for r in await slack.bot.sli.status("enrich-orders") if r["sli"] == "source_lag")
    assert 590 < lag["value"] < 700

    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([source])
    seen = 0
    while seen < 6:  # the job is back and catches up
        message = await asyncio.to_thread(consumer.poll, 1.0)
        if message is not None and message.error() is None:
            seen += 1
    await asyncio.to_thread(consumer.commit, asynchronous=False)
    await asyncio.to_thread(consumer.close)
    await slack.bot.poll()
    await slack.ws.wait_for(lambda: any("Resolved" in read(m) and "Source lag" in read(m) for m in alerts(slack)), timeout=30)


async def test_a_stopped_upstream_group_pages_once_with_two_downstream_folded_and_one_pages_alone_once_it_recovers(
        kafka_bot: tuple[SlackHarness, str], kafka_bootstrap: str) -> None:
    """enrich-orders writes dwd_orders, which dwd-agg reads into dws_agg, which ads-daily reads: each with its own topic and
    consumer group on the real broker, their lag measured by the bot's own poller."""
    slack, _ = kafka_bot
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    names = ("enrich-orders", "dwd-agg", "ads-daily")
    topics = {name: topic(admin, name) for name in names}
    lag = {"source_lag": {"warn": 60, "page": 120, "for": "0s", "clear_for": "0s"}}
    data = catalog(slack)
    data["datasets"] += [{"name": "dws_agg", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["id"]},
                         {"name": "ads_report", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["id"]}]
    data["jobs"] += [{"name": "agg", "owner": "analytics-team", "inputs": ["dwd_orders"], "outputs": ["dws_agg"]},
                     {"name": "ads", "owner": "analytics-team", "inputs": ["dws_agg"], "outputs": ["ads_report"]}]
    data["teams"]["analytics-team"]["channel"] = "#orders-pipeline"
    data["pipelines"] = [
        {"name": "enrich-orders", "owner": "orders-team", "jobs": ["enrich"], "sink": "dwd_orders",
         "source": {"topics": [topics["enrich-orders"]], "group": f"g-{topics['enrich-orders']}"}, "slis": lag},
        {"name": "dwd-agg", "owner": "analytics-team", "jobs": ["agg"], "sink": "dws_agg",
         "source": {"topics": [topics["dwd-agg"]], "group": f"g-{topics['dwd-agg']}"}, "slis": lag},
        {"name": "ads-daily", "owner": "analytics-team", "jobs": ["ads"],
         "source": {"topics": [topics["ads-daily"]], "group": f"g-{topics['ads-daily']}"}, "slis": lag}]
    await load(slack, data)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    written = int((time.time() - 600) * 1000)  # ten minutes ago
    for name in names:
        for i in range(5):
            producer.produce(topics[name], key=f"k{i}".encode(), value=b"row", timestamp=written + i)
    assert producer.flush(30) == 0

    async def read_up_to(name: str, count: int) -> None:
        await read_and_commit(kafka_bootstrap, topics[name], f"g-{topics[name]}", count)

    for name in names:  # every job read one record and stopped: all three lag ten minutes
        await read_up_to(name, 1)
    await slack.bot.poll()
    await slack.bot.idle()

    def lag_alert(name: str) -> Message | None:
        return next((m for m in alerts(slack) if f"*{name}*" in read(m) and "Source lag" in read(m)), None)

    root = await slack.ws.wait_for(lambda: lag_alert("enrich-orders"), timeout=30)
    await slack.ws.wait_for(lambda: "Also late downstream: ads-daily, dwd-agg" in read(lag_alert("enrich-orders") or root), timeout=30)
    for name in ("dwd-agg", "ads-daily"):
        folded = await slack.ws.wait_for(lambda name=name: lag_alert(name), timeout=30)
        assert "Caused upstream by enrich-orders" in read(folded) and "PAGE" in read(folded)

    def paged(user: str) -> list[str]:
        return [read(m) for m in slack.ws.channel_messages(slack.ws.open_dm(user)) if "You are oncall" in m.text]

    assert len(paged(ALICE)) == 1 and "enrich-orders" in paged(ALICE)[0]  # one page: the root cause
    assert paged(BOB) == []  # the two folded breaches page nobody

    await read_up_to("enrich-orders", 4)  # the upstream job is back and catches up, and ads-daily with it; dwd-agg stays stopped
    await read_up_to("ads-daily", 4)
    await slack.bot.poll()
    await slack.bot.sli.sweep()
    await slack.bot.idle()
    await slack.ws.wait_for(lambda: "Resolved" in read(lag_alert("enrich-orders") or root), timeout=30)
    await slack.ws.wait_for(lambda: len(paged(BOB)) == 1, timeout=30)
    [page] = paged(BOB)
    assert "dwd-agg" in page and "ads-daily" not in page
    alone = lag_alert("dwd-agg")
    assert alone is not None and "Caused upstream" not in read(alone)
    thread = "\n".join(read(m) for m in slack.ws.channel_messages(alone.channel, thread_ts=alone.ts))
    assert "pages on its own: the root cause is over" in thread


async def test_a_stopped_group_is_warned_then_paged_before_retention_deletes_its_unread_data_then_told_what_was_lost(
        kafka_bot: tuple[SlackHarness, str], kafka_bootstrap: str) -> None:
    slack, _ = kafka_bot
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    source = f"orders-{uuid.uuid4().hex[:8]}"  # segments roll when records ten minutes apart meet, so old ones can go alone
    admin.create_topics([NewTopic(source, num_partitions=1, replication_factor=1,
                                  config={"retention.ms": str(20 * 3600_000), "segment.ms": "600000"})])[source].result(timeout=30)
    group = f"enrich-{source}"
    await load(slack, catalog(slack, [{"name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline",
                                       "source": {"topics": [source], "group": group}}]))
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    written = int((time.time() - 3600) * 1000)  # an hour ago
    for i in range(10):
        producer.produce(source, key=f"k{i}".encode(), value=b"order", timestamp=written + i)
    assert producer.flush(30) == 0
    await read_and_commit(kafka_bootstrap, source, group, 3)  # the job reads three records, commits, and stops

    def headroom() -> Message | None:
        return next((m for m in alerts(slack) if "Retention headroom" in read(m)), None)

    def retention(value: int) -> None:
        resource = ConfigResource(ResourceType.TOPIC, source, incremental_configs=[
            ConfigEntry("retention.ms", str(value), incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(timeout=30)

    await slack.bot.poll()  # one poll tells no rate: nothing forecast yet
    assert all(r["value"] is None for r in await slack.bot.sli.status("enrich-orders") if r["sli"] == "retention_headroom")
    await asyncio.sleep(1.0)
    await slack.bot.poll()  # stopped: its oldest unread record (an hour old) goes in about 19 hours
    alert = await slack.ws.wait_for(headroom, timeout=30)
    assert "WARN" in read(alert) and f"on partition {source}/0 in 18 h 59 m" in read(alert)

    retention(2 * 3600_000)  # two hours: about one left
    await slack.bot.poll()
    await slack.ws.wait_for(lambda: "PAGE" in read(headroom() or alert) and "in 59 m" in read(headroom() or alert), timeout=30)

    for i in range(5):  # new records (in a new segment), then a retention the old segment is past: the broker deletes it
        producer.produce(source, key=f"n{i}".encode(), value=b"order")
    assert producer.flush(30) == 0
    retention(1800_000)
    probe = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"probe-{source}"})
    for _ in range(300):
        low, _high = await asyncio.to_thread(probe.get_watermark_offsets, TopicPartition(source, 0), 10)
        if low > 0:
            break
        await asyncio.sleep(0.2)
    probe.close()
    assert low == 10, "the broker did not delete the old segment"
    await slack.bot.poll()
    await slack.bot.poll()  # the same loss again: told once
    lost = await slack.ws.wait_for(lambda: "Data lost" in read(headroom() or alert) and headroom(), timeout=30)
    assert f"retention deleted offsets 3–9 of {source}/0 (7 messages, written from" in read(lost)
    assert f"before group {group} read them" in read(lost)
    await slack.bot.idle()
    thread = [read(m) for m in slack.ws.channel_messages("orders-pipeline", thread_ts=lost.ts)]
    told = [line for line in thread if "retention deleted unread data" in line]
    assert len(told) == 1 and f"{source}/0 offsets 3–9 (7 messages written" in told[0]
    dm = "\n".join(read(m) for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)))
    assert "Retention headroom" in dm


async def test_a_forecast_the_bot_can_no_longer_measure_says_since_when_and_the_time_it_gave_not_a_countdown(
        kafka_bot: tuple[SlackHarness, str], kafka_bootstrap: str) -> None:
    slack, _ = kafka_bot
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    source = topic(admin, "orders")
    group = f"enrich-{source}"
    await load(slack, catalog(slack, [{"name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline", "interval": "1s",
                                       "source": {"topics": [source], "group": group}, "slis": {"retention_headroom": {"warn": 8 * 86400, "clear": 9 * 86400}}}]))
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(10):
        producer.produce(source, key=f"k{i}".encode(), value=b"order", timestamp=int((time.time() - 3600) * 1000) + i)
    assert producer.flush(30) == 0
    await read_and_commit(kafka_bootstrap, source, group, 3)
    await slack.bot.poll()
    await asyncio.sleep(1.0)
    await slack.bot.poll()  # a stopped group on a topic of seven days' retention: it warns (below eight days here)
    alert = await slack.ws.wait_for(lambda: next((m for m in alerts(slack) if "Retention headroom" in read(m)), None), timeout=30)
    assert "WARN" in read(alert) and "at the current rate" in read(alert)

    admin.delete_topics([source])[source].result(timeout=30)  # the cluster loses the topic: nothing measures the group any more
    for _ in range(10):
        await slack.bot.poll()  # each poll fails to measure it (logged), so no sample
        await asyncio.sleep(0.5)
    await slack.bot.sli.sweep()  # three intervals without a sample
    edited = await slack.ws.wait_for(lambda: (m := slack.ws.find_message(alert.channel, alert.ts)) and "not measured since" in read(m) and m,
                                     timeout=30)
    assert "WARN" in read(edited) and "at the current rate" not in read(edited)
    assert "would lose unread data" in read(edited) and "the last time it was measured" in read(edited)
    await slack.bot.sli.sweep()
    await slack.bot.idle()
    thread = [read(m) for m in slack.ws.channel_messages("orders-pipeline", thread_ts=alert.ts)]
    assert len([line for line in thread if "not measured since" in line]) == 1  # said once
    [row] = [r for r in await slack.bot.sli.status("enrich-orders") if r["sli"] == "retention_headroom"]
    assert row["state"].startswith("warn firing (not measured since ")


async def test_dead_letters_are_sampled_from_the_alert(kafka_bot: tuple[SlackHarness, str], kafka_bootstrap: str,
                                                       schema_registry: RealRegistry) -> None:
    slack, _ = kafka_bot
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    dlq = topic(admin, "orders-dlq")
    await load(slack, catalog(slack, [{"name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline", "dlq": dlq,
                                       "slis": {"dlq_volume": {"warn": 0, "warn_for": "0s", "page_for": "0s"}}}]))
    order = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "price", "type": "double"}]}
    schema_id = await schema_registry.register("orders-value", order)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(8):
        producer.produce(dlq, key=f"order-{i}".encode(), value=framed(schema_id, avro({"id": f"o-{i}", "price": 9.5}, parse_schema(order))),
                         headers={"error": b"price out of range"})
    producer.produce(dlq, key=b"junk", value=b"\xff\xfe not avro")
    assert producer.flush(30) == 0
    now = datetime.now(UTC)
    await slack.bot.sli.ingest([])  # nothing: the DLQ alert needs growth over a minute, fed here as two polls' samples
    from bot.domain.sli.pipeline import Sli
    from bot.domain.sli.samples import Sample

    await slack.bot.sli.ingest([Sample("enrich-orders", Sli.DLQ_VOLUME, 0.0, now - timedelta(minutes=2))])
    await slack.bot.poll()
    alert = await slack.ws.wait_for(lambda: next((m for m in alerts(slack) if "DLQ volume" in read(m)), None), timeout=30)
    await slack.driver.click(alert, ids.SLI_DEAD_LETTERS, user=ALICE)
    shown = await slack.ws.wait_for(lambda: next((e for e in slack.ws.ephemerals_for(ALICE) if "dead letters" in e.text), None), timeout=30)
    text = as_text(shown.text, shown.blocks)
    assert text.count("[0@") == 5  # five of them, newest first
    assert "junk" in text and '"price": 9.5' in text and "error=price out of range" in text
    await slack.driver.click(alert, ids.SLI_REPLAY, user=ALICE)  # the replay form, prefilled with the pipeline's DLQ
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.REPLAY_VIEW), None))
    fields = {b.get("block_id"): b["element"] for b in form.view["blocks"] if b["type"] == "input"}
    assert fields[ids.TOPIC_BLOCK]["initial_value"] == dlq

    def values(target: str, options: str = "") -> dict[str, Any]:
        return {ids.TOPIC_BLOCK: {ids.TOPIC_ACTION: {"type": "plain_text_input", "value": dlq}},
                ids.TARGET_BLOCK: {ids.TARGET_ACTION: {"type": "plain_text_input", "value": target}},
                ids.OPTIONS_BLOCK: {ids.OPTIONS_ACTION: {"type": "plain_text_input", "value": options}}}

    refused = await slack.driver.submit(form.id, values(dlq), user=ALICE)
    assert "into itself" in refused.json["errors"][ids.TARGET_BLOCK]
    refused = await slack.driver.submit(form.id, values(dlq + "-replay", "--limit lots"), user=ALICE)
    assert "not a number" in refused.json["errors"][ids.OPTIONS_BLOCK]
    await slack.driver.submit(form.id, values(""), user=ALICE)  # empty: each back to its original topic, which these letters do not name
    told = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)) if "was not planned" in m.text),
                                                None), timeout=30)
    assert "9 name no original topic" in told.text and "nothing is planned or copied" in told.text
    replay_topic = topic(admin, "orders.replay")
    await slack.driver.submit(form.id, values(replay_topic, "--limit 3"), user=ALICE)
    plan = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("orders-pipeline") if "Replay #" in m.text), None),
                                   timeout=30)
    shown = as_text(plan.text, plan.blocks)
    assert "*3* messages to copy" in shown or "3 messages to copy" in shown


async def test_a_backlog_on_the_metrics_topic_is_the_bots_own_lag_said_once_and_no_pipeline_is_silent(
        kafka_bot: tuple[SlackHarness, str], kafka_bootstrap: str, caplog: pytest.LogCaptureFixture) -> None:
    slack, metrics = kafka_bot
    await load(slack, catalog(slack, [{"name": "backlog-pipe", "owner": "orders-team", "channel": "#orders-pipeline", "interval": "1m",
                                       "reports": ["commit_success_rate"]}]))
    config = slack.bot.config
    await slack.bot.stop()  # the bot is away while 15 minutes of samples pile up on the metrics topic
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 20})
    start = datetime.now(UTC) - timedelta(minutes=15)
    for i in range(30_000):  # more than one poll of the consumer takes
        at = start + timedelta(milliseconds=30 * i)
        producer.produce(metrics, key=b"backlog-pipe", value=avro(record("backlog-pipe", "commit_success_rate", 1.0, at)),
                         timestamp=int(at.timestamp() * 1000))
    assert producer.flush(30) == 0
    caplog.set_level(logging.WARNING, logger="bot.services.sli")
    slack.bot = Bot(config)
    await slack.bot.start(0)
    for _ in range(600):
        if "caught up on" in caplog.text:
            break
        await asyncio.sleep(0.1)
    said = [r.getMessage() for r in caplog.records if r.name == "bot.services.sli"]
    assert sum(f"reads {metrics} late" in m for m in said) == 1 and sum("caught up" in m for m in said) == 1, said
    assert "not the pipelines'" in said[0]
    await slack.bot.sli.sweep()
    assert await slack.bot.sli.history("backlog-pipe") == []  # fifteen-minute-old samples that arrived are data, not silence
    [row] = await slack.bot.sli.series("backlog-pipe")
    assert row.state["status"] == "ok" and row.state["late"] == 0


async def test_a_metrics_cluster_that_does_not_answer_is_the_bots_reachability_and_no_data_waits(
        slack: SlackHarness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="bot.services.sli")
    await load(slack, catalog(slack, [{"name": "away-pipe", "owner": "orders-team", "channel": "#orders-pipeline", "interval": "1m",
                                       "reports": ["commit_success_rate"]}]))
    status, _ = await send(slack, [sample("commit_success_rate", 1.0, pipeline="away-pipe")])
    assert status == 200
    consumer = MetricsConsumer("127.0.0.1:9", "metrics-away", "g-away", slack.bot.sli)  # the bot's metrics cluster is away
    consumer.start()
    try:
        for _ in range(300):
            if slack.bot.sli.feed is not None and slack.bot.sli.feed.unreachable:
                break
            await asyncio.sleep(0.1)
        assert slack.bot.sli.feed is not None and slack.bot.sli.feed.behind and slack.bot.sli.feed.unreachable
        slack.clock.advance(minutes=10)
        await slack.bot.sli.sweep()
        assert await slack.bot.sli.history("away-pipe") == []  # nothing arrived, but that is the bot's, not the pipeline's
        await slack.driver.command("/sli coverage", user=ALICE, channel="orders-pipeline")
        told = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "cannot reach the cluster" in as_text(e.text, e.blocks)]
                                       or None)
        assert "metrics-away" in as_text(told[0].text, told[0].blocks)
        await asyncio.sleep(1.0)  # more polls, still away
        said = [r.getMessage() for r in caplog.records if r.name == "bot.services.sli" and "cannot reach" in r.getMessage()]
        assert len(said) == 1, said  # said once, however many polls find it away
    finally:
        await consumer.stop()

    slack.bot.sli.feed_report("metrics-away", 0, timedelta(0))  # the cluster answers again (what the consumer reports then)
    assert not slack.bot.sli.feed.behind and any("answers again" in r.getMessage() for r in caplog.records)
    await slack.bot.sli.sweep()
    [episode] = await slack.bot.sli.history("away-pipe")  # and no data is judged again: ten minutes without a sample
    assert episode.no_data
