"""The real broker started by scripts/test.sh: produce, then consume through a consumer group."""

from __future__ import annotations

import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic


def test_produce_and_consume(kafka_bootstrap: str) -> None:
    topic = f"smoke-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    for i in range(10):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), headers={"n": str(i).encode()})
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen: dict[bytes, bytes] = {}
    try:
        for _ in range(120):
            message = consumer.poll(0.5)
            if message is None:
                if len(seen) == 10:
                    break
                continue
            assert message.error() is None, message.error()
            seen[message.key()] = message.value()
            assert dict(message.headers())["n"] == message.key()[1:]
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    assert seen == {f"k{i}".encode(): f"v{i}".encode() for i in range(10)}
