"""Committed offsets read from ``__consumer_offsets`` on the real broker are what the Admin API answers, however they
were committed: by the Admin API, by a consumer (with metadata), in a committed transaction; an aborted transaction's
offsets and a transaction still open are not counted (and do not hold the answer up); a deleted group is gone; what
is committed after one answer is in the next. A log not read in time, or too long to begin reading, leaves the census
to the API, complete."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from bot.kafka.census import take
from bot.kafka.offsets_log import OffsetsLog, OffsetsUnreadable
from tests.test_census import seed_groups
from tests.test_ops import new_topic


def api(admin: AdminClient, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets as the Admin API answers."""
    answer = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=30)
    return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions or [] if tp.offset >= 0}


def fill(bootstrap: str, topic: str, partitions: int = 3, each: int = 20) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for n in range(partitions * each):
        producer.produce(topic, b"x", partition=n % partitions)
    producer.flush(30)


def consumer_commit(bootstrap: str, group: str, topic: str) -> None:
    """A consumer of ``group`` reads a few records and commits where it is, with metadata, as a client does."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    read = 0
    while read < 10:
        read += sum(1 for m in consumer.consume(10, 1.0) if m.error() is None)
    positions = [TopicPartition(tp.topic, tp.partition, tp.offset, metadata="checkpoint-7") for tp in consumer.position(consumer.assignment())
                 if tp.offset >= 0]
    consumer.commit(offsets=positions, asynchronous=False)
    consumer.close()


def transactional(bootstrap: str) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"offsets-log-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    return producer


def send_offsets(producer: Producer, bootstrap: str, group: str, offsets: list[TopicPartition]) -> None:
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group}).consumer_group_metadata()
    producer.begin_transaction()
    producer.send_offsets_to_transaction(offsets, metadata, 30)


def test_the_log_answers_what_the_api_answers_however_the_offsets_were_committed(kafka_bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic = new_topic(admin, "offsets-log")
    fill(kafka_bootstrap, topic)
    altered, consumed, committed_txn, aborted_txn, deleted = (f"{topic}-{name}" for name in ("altered", "consumed", "txn", "aborted", "deleted"))
    seed_groups(admin, topic, [altered, deleted])
    consumer_commit(kafka_bootstrap, consumed, topic)
    producer = transactional(kafka_bootstrap)
    send_offsets(producer, kafka_bootstrap, committed_txn, [TopicPartition(topic, 0, 4), TopicPartition(topic, 2, 9)])
    producer.commit_transaction(30)
    seed_groups(admin, topic, [aborted_txn])
    send_offsets(producer, kafka_bootstrap, aborted_txn, [TopicPartition(topic, 1, 15)])
    producer.abort_transaction(30)
    admin.delete_consumer_groups([deleted])[deleted].result(timeout=30)

    offsets_log = OffsetsLog({"bootstrap.servers": kafka_bootstrap})
    ours = [altered, consumed, committed_txn, aborted_txn, deleted]
    try:
        found = offsets_log.committed(admin, ours)
        for group in (altered, consumed, committed_txn, aborted_txn):
            assert found.get(group, {}) == api(admin, group) != {}, group
        assert found[committed_txn] == {(topic, 0): 4, (topic, 2): 9}
        assert found[aborted_txn] == {(topic, p): 1 for p in range(3)}  # the aborted transaction's 15 is not counted
        assert deleted not in found and api(admin, deleted) == {}

        # a transaction still open: not counted, and it does not hold the answer up (the log is read to its stable end)
        send_offsets(producer, kafka_bootstrap, committed_txn, [TopicPartition(topic, 0, 11)])
        assert offsets_log.committed(admin, ours)[committed_txn][(topic, 0)] == 4 == api(admin, committed_txn)[(topic, 0)]
        producer.commit_transaction(30)
        # what is committed after an answer is in the next one (the follower reads on from where it was)
        admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(altered, [TopicPartition(topic, 1, 17)])])[altered].result(timeout=30)
        again = offsets_log.committed(admin, ours)
        assert again[committed_txn][(topic, 0)] == 11
        assert again[altered] == api(admin, altered) and again[altered][(topic, 1)] == 17
    finally:
        offsets_log.close()


def test_the_census_reads_the_log_and_falls_back_to_the_api_when_the_log_is_not_read_in_time_or_too_long(kafka_bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic = new_topic(admin, "offsets-census")
    groups = [f"{topic}-reader-{n}" for n in range(40)]
    seed_groups(admin, topic, groups)
    followed = OffsetsLog({"bootstrap.servers": kafka_bootstrap})
    hurried = OffsetsLog({"bootstrap.servers": "127.0.0.1:9"}, timeout=0.5)  # its reader reaches no broker: never read in time
    too_long = OffsetsLog({"bootstrap.servers": kafka_bootstrap}, most_records=len(groups))  # the log holds their 120 commits at least
    try:
        snapshots = [take(admin, [topic], offsets_log) for offsets_log in (followed, hurried, too_long)]
        assert [s.offsets_from for s in snapshots] == ["log", "api", "api"]
        with pytest.raises(OffsetsUnreadable, match="more than a first read takes on"):
            too_long.committed(admin, groups)
        for snapshot in snapshots:
            assert not snapshot.partial
            assert {g.group: g.committed for g in snapshot.groups if g.group in groups} == {g: {(topic, p): 1 for p in range(3)} for g in groups}
    finally:
        for offsets_log in (followed, hurried, too_long):
            offsets_log.close()
