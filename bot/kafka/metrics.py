"""The metrics topic: Avro ``PipelineSample`` values (raw or Confluent-framed) into the SLI evaluator.

Polling and decoding run in a worker thread (the next batch while this one is evaluated); evaluation and
storage on the event loop. Records of the common shape (written with ``PipelineSample`` itself, no labels) are read
by ``bot.domain.sli.wire`` straight into per-series columns; the rest go through the general Avro decoder. Offsets are committed only once a batch is evaluated and stored; when storing fails, the consumer seeks back and tries the batch
again. A bad record is counted (by kind), logged once per kind, and skipped: the consumer always advances.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from bot.domain.sli.samples import EARLIEST_US, PIPELINE_SAMPLE_SCHEMA, RANGES, Sample, SampleError, Series, checked, latest_believed, micros
from bot.domain.sli.wire import Key, Reader
from bot.kafka.avro import DecodeError, Decoder, Registry
from bot.kafka.clients import BACKLOG_READER, settings

log = logging.getLogger(__name__)
BATCH = 20_000  # records per poll at most: a healthy series' samples of one poll are evaluated at once
STEP = 2_000  # records per consume call: a poll waits for the first ones, then takes what is already fetched
Batch = tuple["Read", dict[Key, Series], list[tuple[str, str]], tuple[int, timedelta, str | None]]
UNREACHABLE = (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE)  # the cluster, not a record


@dataclass
class Read:
    """Where one poll read: how many records, and per partition its first offset and its last record's (offset, timestamp)."""

    count: int = 0
    first: dict[int, int] = field(default_factory=dict)
    last: dict[int, tuple[int, int]] = field(default_factory=dict)


class SampleSink(Protocol):
    """Where the consumer hands what it read (the SLI service): a batch's decoded samples, stored before its offsets are
    committed; each sample it refused; how far behind it reads and whether it reaches the cluster."""

    async def ingest_series(self, batch: dict[Key, Series]) -> int: ...

    def reject(self, kind: str, message: str) -> None: ...

    def feed_report(self, topic: str, messages: int, age: timedelta, unreachable: str | None = None) -> None: ...


class MetricsConsumer:
    """Consumes ``topic`` in consumer group ``group`` (samples keyed by pipeline: each replica gets whole pipelines)."""

    def __init__(self, bootstrap: str, topic: str, group: str, sli: SampleSink, registry_url: str | None = None) -> None:
        self.topic, self.sli = topic, sli
        self.consumer = Consumer(settings(bootstrap, {"group.id": group, "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest", "client.id": "changeops-sli", "session.timeout.ms": 30000,
                                  "fetch.wait.max.ms": 100, "error_cb": self._on_error, **BACKLOG_READER}))
        self.decoder = Decoder(PIPELINE_SAMPLE_SCHEMA, Registry(registry_url) if registry_url else None)
        self.wire = Reader()
        self._valid: dict[Key, tuple[float, float]] = {}  # series whose names a general decode found good, and their SLI's range
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self.consumed = 0
        self._unreachable: str | None = None  # set by the client's error callback, cleared once the cluster answers

    def start(self) -> None:
        """Consume in the background until ``stop``."""
        self.consumer.subscribe([self.topic])
        self._task = asyncio.create_task(self._run(), name="sli-metrics-consumer")

    async def stop(self) -> None:
        """Finish the batch in hand (its offsets committed), leave the group."""
        self._stopping = True
        if self._task is not None:
            await self._task
            self._task = None
        await asyncio.to_thread(self.consumer.close)
        if self.decoder.registry is not None:
            self.decoder.registry.close()

    async def _run(self) -> None:
        """Read the next batch in the worker thread while this one is evaluated and stored."""
        loop = asyncio.get_running_loop()
        reading = loop.run_in_executor(None, self._poll, datetime.now(UTC))  # submitted now, not at the next turn of the loop
        stored: list[TopicPartition] = []
        while True:
            try:
                read, samples, refused, (left, age, unreachable) = await reading
            except Exception:
                log.exception("SLI metrics: could not read the metrics topic; trying again")
                await asyncio.sleep(1.0)
                read, samples, refused, (left, age, unreachable) = Read(), {}, [], (0, timedelta(0), None)
            if self._stopping:
                break
            reading = loop.run_in_executor(None, self._poll, datetime.now(UTC))
            self.sli.feed_report(self.topic, left, age, unreachable)
            for kind, message in refused:
                self.sli.reject(kind, message)
            if not read.count:
                continue
            try:
                await self.sli.ingest_series(samples)
            except Exception:
                log.exception("SLI metrics: could not store a batch of %d samples; reading it again", read.count)
                await asyncio.gather(reading, return_exceptions=True)  # what it read comes again after the rewind
                await asyncio.to_thread(self._rewind, read)
                await asyncio.sleep(1.0)
                reading = loop.run_in_executor(None, self._poll, datetime.now(UTC))
                continue
            stored = [TopicPartition(self.topic, partition, offset + 1) for partition, (offset, _) in read.last.items()]
            self.consumer.commit(offsets=stored, asynchronous=True)
            self.consumed += read.count
        if stored:
            await asyncio.to_thread(self._commit, stored)

    def _poll(self, now: datetime) -> Batch:
        """One batch: what was read, its samples by series, what was refused (kind, why), and how far behind this consumer
        is (messages left on its partitions, age of the newest record read); whether each pipeline is known is for the
        evaluator to say. Records are decoded a consume call at a time and not kept: a batch of 20,000 live messages
        would age into the collector's oldest generation and make its full collections frequent."""
        read, batch, refused = Read(), dict[Key, Series](), list[tuple[str, str]]()
        latest = latest_believed(now)
        got = self.consumer.consume(num_messages=STEP, timeout=0.2)
        while got:
            self._decode([m for m in got if not self._failed(m)], read, batch, refused, latest)
            if read.count >= BATCH:
                break
            got = self.consumer.consume(num_messages=STEP, timeout=0)
        return read, batch, refused, (*self._behind(read, now), self._reachable(read.count > 0))

    def _decode(self, messages: list[Message], read: Read, batch: dict[Key, Series], refused: list[tuple[str, str]],
                latest: datetime) -> None:
        """Add ``messages`` to the batch: their samples to their series, the refused to ``refused``, their place to ``read``."""
        if not messages:
            return
        newest_us = micros(latest)
        wire, plain, valid = self.wire.read, self.decoder.plain, self._valid
        for message in messages:
            value = message.value() or b""
            found = None
            if value[:1] != b"\x00":
                found = wire(value)
            elif len(value) > 5 and plain(int.from_bytes(value[1:5], "big")):
                found = wire(value[5:])
            if found is not None:
                key, number, ms = found
                bounds = valid.get(key)
                if bounds is not None:
                    time_us = ms * 1000
                    if EARLIEST_US <= time_us <= newest_us and bounds[0] <= number <= bounds[1]:  # not in the future; finite, in range
                        series = batch.get(key)
                        if series is None:
                            series = batch[key] = Series()
                        if series.labels is None:
                            series.times.append(time_us)
                            series.values.append(number)
                        else:
                            series.add(time_us, number)
                        continue
            try:
                sample = sample_of(self.decoder, value, latest)
            except (DecodeError, SampleError) as err:
                refused.append((err.kind, f"{err} (partition {message.partition()}, offset {message.offset()})"))
                continue
            valid[(sample.pipeline, sample.sli)] = RANGES[sample.sli]
            series = batch.get((sample.pipeline, sample.sli))
            if series is None:
                series = batch[(sample.pipeline, sample.sli)] = Series()
            series.add(micros(sample.time), sample.value, sample.labels)
        read.count += len(messages)
        for partition, message in {m.partition(): m for m in reversed(messages)}.items():  # each partition's first record
            read.first.setdefault(int(partition or 0), int(message.offset() or 0))
        for partition, message in {m.partition(): m for m in messages}.items():  # and its last (offsets rise)
            read.last[int(partition or 0)] = (int(message.offset() or 0), message.timestamp()[1])

    def _on_error(self, error: KafkaError) -> None:
        """The client's error callback (called from ``consume``, in the worker thread)."""
        if error.code() in UNREACHABLE:
            self._unreachable = self._unreachable or str(error.str())

    def _reachable(self, read: bool) -> str | None:
        """Why the cluster cannot be reached now (None when it answers): a read clears it, else a metadata request does."""
        if self._unreachable is not None:
            try:
                if read or self.consumer.list_topics(self.topic, timeout=1.0).topics:
                    self._unreachable = None
            except KafkaException:
                pass
        return self._unreachable

    def _behind(self, read: Read, now: datetime) -> tuple[int, timedelta]:
        """Messages left to read on the assigned partitions (from the watermarks the fetches brought: no request), and how
        old the newest of the last records read on each partition is."""
        left = 0
        try:
            for tp in self.consumer.position(self.consumer.assignment()):
                low, high = self.consumer.get_watermark_offsets(tp, cached=True) or (-1, -1)
                if tp.offset >= 0 and high >= 0:
                    left += max(0, high - tp.offset)
        except KafkaException:  # between assignments: nothing to say this time
            return 0, timedelta(0)
        stamps = [stamp for _, stamp in read.last.values() if stamp > 0]
        age = now - datetime.fromtimestamp(max(stamps) / 1000, UTC) if stamps else timedelta(0)
        return left, max(age, timedelta(0))

    def _failed(self, message: Message) -> bool:
        error = message.error()
        if error is None:
            return False
        if not error.retriable() and error.fatal():
            raise KafkaException(error)
        log.debug("SLI metrics: %s", error)
        return True

    def _commit(self, offsets: list[TopicPartition]) -> None:
        self.consumer.commit(offsets=offsets, asynchronous=False)

    def _rewind(self, read: Read) -> None:
        for partition, offset in read.first.items():
            try:
                self.consumer.seek(TopicPartition(self.topic, partition, offset))
            except KafkaException as err:  # the partition moved to another replica meanwhile: it reads from the last commit
                log.info("SLI metrics: cannot rewind %s[%d]: %s", self.topic, partition, err)


def sample_of(decoder: Decoder, value: bytes, latest: datetime) -> Sample:
    """A checked sample from a metrics record; DecodeError or SampleError otherwise."""
    record: Any = decoder.decode(value)
    if not isinstance(record, dict):
        raise SampleError("undecodable", "not a PipelineSample record")
    return checked(record.get("pipeline"), record.get("sli"), record.get("value"), record.get("time"), record.get("labels"), None, latest)
