"""The broker a benchmark runs against: $KAFKA_BOOTSTRAP_SERVERS, or one started for the run with scripts/kafka.sh."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

ROOT = Path(__file__).resolve().parents[1]


def broker() -> tuple[str, str | None]:
    """$KAFKA_BOOTSTRAP_SERVERS, or a broker started for the run (and the folder to stop it with)."""
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        return os.environ["KAFKA_BOOTSTRAP_SERVERS"], None
    run_dir = tempfile.mkdtemp(prefix="bench-kafka-")
    started = subprocess.run(["bash", "scripts/kafka.sh", "start", run_dir], cwd=ROOT, capture_output=True, text=True, check=True)
    address = next(line.split("=", 1)[1].strip("'\"") for line in started.stdout.splitlines() if line.startswith("export KAFKA_BOOTSTRAP_SERVERS="))
    return address, run_dir


def stop_broker(run_dir: str | None) -> None:
    """Stop the broker ``broker`` started (nothing when it used $KAFKA_BOOTSTRAP_SERVERS)."""
    if run_dir:
        subprocess.run(["bash", "scripts/kafka.sh", "stop", run_dir], cwd=ROOT, check=False)


def produce(producer: Producer, topic: str, **message: Any) -> None:
    """``producer.produce``, waiting for room while the local queue (librdkafka's 100,000 messages) is full: a fill loop
    outruns a fresh broker."""
    while True:
        try:
            producer.produce(topic, **message)
            return
        except BufferError:
            producer.poll(0.1)
