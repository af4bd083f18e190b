"""The bot's own SLI measurements on the real cluster: consumer-group lag of each pipeline's source (messages,
and seconds since the oldest record not yet consumed) and the size of its DLQ (end offsets summed).

Blocking client calls run in a worker thread, each with a timeout; one replica polls at a time (a lease)."""

from __future__ import annotations

import logging
from datetime import datetime

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from bot.domain.sli.pipeline import Pipeline, Sli
from bot.domain.sli.samples import Sample

log = logging.getLogger(__name__)
TIMEOUT = 10.0


class Pollers:
    """Measures lag and DLQ size (blocking: call from a worker thread)."""

    def __init__(self, bootstrap: str) -> None:
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "changeops-poller"})
        self.probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "changeops-probe", "enable.auto.commit": False,
                               "client.id": "changeops-poller", "enable.partition.eof": False})
        self._failing: set[str] = set()

    def measure(self, pipelines: list[Pipeline], now: datetime) -> list[Sample]:
        """One sample per measurable SLI; a pipeline whose measurement fails is logged (once until it recovers) and skipped."""
        samples = []
        for pipeline in pipelines:
            for sli, measure in ((Sli.SOURCE_LAG, self._lag), (Sli.DLQ_VOLUME, self._dlq)):
                name = f"{pipeline.name}/{sli}"
                try:
                    found = measure(pipeline, now)
                except (KafkaException, RuntimeError, ValueError) as err:
                    if name not in self._failing:
                        log.warning("SLI poller: cannot measure %s: %s", name, err)
                    self._failing.add(name)
                    continue
                self._failing.discard(name)
                if found is not None:
                    samples.append(found)
        return samples

    def close(self) -> None:
        """Release the probe consumer."""
        self.probe.close()

    def _partitions(self, topic: str) -> list[int]:
        metadata = self.probe.list_topics(topic, timeout=TIMEOUT).topics.get(topic)
        if metadata is None or metadata.error is not None:
            raise ValueError(f"topic {topic} is unknown to the cluster ({metadata.error if metadata else 'no metadata'})")
        return sorted(metadata.partitions)

    def _lag(self, pipeline: Pipeline, now: datetime) -> Sample | None:
        if not (pipeline.topics and pipeline.group):
            return None
        result = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(pipeline.group)], request_timeout=TIMEOUT)
        committed = {(tp.topic, tp.partition): tp.offset for tp in result[pipeline.group].result(timeout=TIMEOUT).topic_partitions or []}
        messages, oldest_ms = 0, None
        for topic in pipeline.topics:
            for partition in self._partitions(topic):
                low, high = self.probe.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT)
                position = committed.get((topic, partition), -1)
                position = low if position is None or position < low else position
                if high <= position:
                    continue
                messages += high - position
                stamp = self._timestamp(topic, partition, position)
                if stamp is not None and (oldest_ms is None or stamp < oldest_ms):
                    oldest_ms = stamp
        seconds = max(0.0, now.timestamp() - oldest_ms / 1000) if oldest_ms is not None else 0.0
        return Sample(pipeline.name, Sli.SOURCE_LAG, seconds, now, {"messages": str(messages), "group": pipeline.group})

    def _timestamp(self, topic: str, partition: int, offset: int) -> int | None:
        """The timestamp (ms) of the record at ``offset`` (the oldest one the group has not consumed)."""
        self.probe.assign([TopicPartition(topic, partition, offset)])
        try:
            message = self.probe.poll(TIMEOUT)
        finally:
            self.probe.unassign()
        if message is None or message.error() is not None:
            return None
        kind, stamp = message.timestamp()
        return int(stamp) if kind and stamp > 0 else None

    def _dlq(self, pipeline: Pipeline, now: datetime) -> Sample | None:
        if not pipeline.dlq:
            return None
        total = sum(self.probe.get_watermark_offsets(TopicPartition(pipeline.dlq, p), timeout=TIMEOUT)[1] for p in self._partitions(pipeline.dlq))
        return Sample(pipeline.name, Sli.DLQ_VOLUME, float(total), now, {"topic": pipeline.dlq})
