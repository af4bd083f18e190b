"""The bot's own SLI measurements on the real cluster: consumer-group lag of each pipeline's source (messages,
and seconds since the oldest record not yet consumed), the retention headroom of that group (when the topic's
retention will delete what it has not read, from successive polls: see ``bot.domain.sli.retention``) and the size of
its DLQ (end offsets summed).

Blocking client calls run in a worker thread, each with a timeout; one replica polls at a time (a lease)."""

from __future__ import annotations

import logging
from datetime import datetime

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from bot.domain.sli.pipeline import Pipeline, Sli
from bot.domain.sli.retention import Retention, Seen, Track, forecast
from bot.domain.sli.samples import Sample
from bot.kafka.census import CensusFailed, retentions
from bot.kafka.clients import settings

log = logging.getLogger(__name__)
TIMEOUT = 10.0


class Pollers:
    """Measures lag and DLQ size (blocking: call from a worker thread)."""

    def __init__(self, bootstrap: str) -> None:
        self.admin = AdminClient(settings(bootstrap, {"client.id": "changeops-poller"}))
        self.probe = Consumer(settings(bootstrap, {"group.id": "changeops-probe", "enable.auto.commit": False,
                               "client.id": "changeops-poller", "enable.partition.eof": False}))
        self._failing: set[str] = set()
        self._tracks: dict[str, dict[tuple[str, int], Track]] = {}  # group -> partition -> what the polls saw

    def measure(self, pipelines: list[Pipeline], now: datetime) -> list[Sample]:
        """The samples of every measurable SLI; a pipeline whose measurement fails is logged (once until it recovers) and
        skipped."""
        samples: list[Sample] = []
        retention = self._retentions({t for p in pipelines if p.group for t in p.topics})
        for pipeline in pipelines:
            for sli, measure in ((Sli.SOURCE_LAG, self._source), (Sli.DLQ_VOLUME, self._dlq)):
                name = f"{pipeline.name}/{sli}"
                try:
                    found = measure(pipeline, now, retention)
                except (KafkaException, RuntimeError, ValueError) as err:
                    if name not in self._failing:
                        log.warning("SLI poller: cannot measure %s: %s", name, err)
                    self._failing.add(name)
                    continue
                self._failing.discard(name)
                samples += found
        return samples

    def close(self) -> None:
        """Release the probe consumer and the admin client (librdkafka ends a client when the last reference goes)."""
        self.probe.close()
        del self.admin

    def _partitions(self, topic: str) -> list[int]:
        metadata = self.probe.list_topics(topic, timeout=TIMEOUT).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise ValueError(f"topic {topic} is unknown to the cluster ({metadata.error if metadata else 'no metadata'})")
        return sorted(metadata.partitions)

    def _source(self, pipeline: Pipeline, now: datetime, retention: dict[str, Retention] | None) -> list[Sample]:
        """Source lag, and the retention headroom once two polls tell the rates (and a topic's retention is finite)."""
        if not (pipeline.topics and pipeline.group):
            return []
        result = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(pipeline.group)], request_timeout=TIMEOUT)
        committed = {(tp.topic, tp.partition): tp.offset for tp in result[pipeline.group].result(timeout=TIMEOUT).topic_partitions or []}
        messages, oldest_ms, seen = 0, None, []
        for topic in pipeline.topics:
            for partition in self._partitions(topic):
                low, high = self.probe.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT)
                mine = committed.get((topic, partition))
                mine = mine if mine is not None and mine >= 0 else None
                position = low if mine is None or mine < low else mine
                if high <= position:
                    seen.append(Seen(topic, partition, now, low, high, mine))
                    continue
                messages += high - position
                stamp, size = self._record(topic, partition, position)
                if stamp is not None and (oldest_ms is None or stamp < oldest_ms):
                    oldest_ms = stamp
                lost = mine is not None and mine < low
                seen.append(Seen(topic, partition, now, low, high, mine, None if lost else stamp, stamp if lost else None, size))
        seconds = max(0.0, now.timestamp() - oldest_ms / 1000) if oldest_ms is not None else 0.0
        samples = [Sample(pipeline.name, Sli.SOURCE_LAG, seconds, now, {"messages": str(messages), "group": pipeline.group})]
        kept = {t: retention[t] for t in pipeline.topics if t in retention} if retention is not None else {}
        if any(r.ms is not None or r.bytes is not None for r in kept.values()):
            found = forecast(seen, self._tracks.setdefault(pipeline.group, {}), kept)
            if found is not None:
                samples.append(Sample(pipeline.name, Sli.RETENTION_HEADROOM, found.seconds, now, found.labels(pipeline.group)))
        return samples

    def _record(self, topic: str, partition: int, offset: int) -> tuple[int | None, int | None]:
        """The timestamp (ms) and size (key, value and headers) of the record at ``offset``."""
        self.probe.assign([TopicPartition(topic, partition, offset)])
        try:
            message = self.probe.poll(TIMEOUT)
        finally:
            self.probe.unassign()
        if message is None or message.error() is not None:
            return None, None
        kind, stamp = message.timestamp()
        headers: list[tuple[str, bytes | None]] = message.headers() or []  # type: ignore[assignment]
        size = len(message.key() or b"") + len(message.value() or b"") + sum(len(k) + len(v or b"") for k, v in headers)
        return (int(stamp) if kind and stamp > 0 else None), size

    def _retentions(self, topics: set[str]) -> dict[str, Retention] | None:
        """Each topic's retention, asked every poll in one request (a changed retention counts at once); None when the
        cluster does not say (logged once until it does)."""
        try:
            found = retentions(self.admin, topics)
        except (KafkaException, CensusFailed) as err:
            if "retention" not in self._failing:
                log.warning("SLI poller: cannot read the retention of the source topics: %s", err)
            self._failing.add("retention")
            return None
        self._failing.discard("retention")
        return found

    def _dlq(self, pipeline: Pipeline, now: datetime, _retention: dict[str, Retention] | None) -> list[Sample]:
        if not pipeline.dlq:
            return []
        total = sum(self.probe.get_watermark_offsets(TopicPartition(pipeline.dlq, p), timeout=TIMEOUT)[1] for p in self._partitions(pipeline.dlq))
        return [Sample(pipeline.name, Sli.DLQ_VOLUME, float(total), now, {"topic": pipeline.dlq})]

