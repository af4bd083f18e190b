"""A census that is complete or says it is not, on the real broker: 300 groups seeded while another producer loads
the broker, twenty censuses in a row (every other one reading the offsets log), each lists all 300 or names what Kafka did not answer for; a group Kafka does
not answer for is kept as last seen, never dropped; `bot consumers` refuses a topic the cluster does not have and,
with the cluster away, shows the stored census with its age and exit 3, never a live state; a broker of the test's own stopped
between two censuses of a bot following its offsets log, then brought back, is followed on from where it was."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from bot.cli import main
from bot.emulator import Workspace
from bot.kafka import census as kafka_census
from bot.kafka.census import Snapshot, take
from bot.kafka.offsets_log import OffsetsLog
from bot.runtime import Bot
from bot.services import census as census_module
from bot.services.census import CensusService, _changes
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.sli import SliService
from bot.store.database import Database
from tests.conftest import Clock, bot_config, seed_workspace, start_emulator
from tests.test_ops import new_topic


@pytest.fixture
def database_url(postgres_url: str) -> str:
    """PostgreSQL only: the broker is the slow part."""
    return postgres_url


def seed_groups(admin: AdminClient, topic: str, groups: list[str], partitions: int = 3, offset: int = 1) -> None:
    """Commit offsets for each group, again for those whose commit came back with a partition error (a coordinator
    still loading refuses them: the group would not exist, and a census would be right not to list it)."""
    left = list(groups)
    for _ in range(20):
        futures = {g: admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, [TopicPartition(topic, p, offset) for p in range(partitions)])])[g]
                   for g in left}
        left = [g for g, f in futures.items() if any(tp.error is not None for tp in f.result(timeout=30).topic_partitions)]
        if not left:
            return
        time.sleep(0.5)
    raise AssertionError(f"{len(left)} groups could not be seeded")


def census_service(url: str, bootstrap: str) -> tuple[Database, Clock, CensusService]:
    """A census service on its own database and clock (a census every five minutes)."""
    db = Database(url)
    lineage = LineageService(db)
    clock = Clock()
    return db, clock, CensusService(db, lineage, SliService(db, lineage, Outbox()), bootstrap, "test", lambda: clock.now, timedelta(minutes=5))


@pytest.fixture
def loaded_broker(kafka_bootstrap: str) -> Iterator[None]:
    """Another producer keeps the broker busy meanwhile."""
    stop = threading.Event()
    topic = new_topic(AdminClient({"bootstrap.servers": kafka_bootstrap}), "census-load")

    def load() -> None:
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
        deadline = time.monotonic() + 120
        while not stop.is_set() and time.monotonic() < deadline:
            for _ in range(2_000):
                try:
                    producer.produce(topic, b"x" * 200)
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        producer.flush(10)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(30)


def test_twenty_censuses_of_300_groups_under_load_each_list_all_or_say_what_is_missing(kafka_bootstrap: str, loaded_broker: None) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic = new_topic(admin, "census-300")
    groups = [f"{topic}-reader-{n}" for n in range(300)]
    seed_groups(admin, topic, groups)
    complete = 0
    followed = OffsetsLog({"bootstrap.servers": kafka_bootstrap})  # every other census reads the offsets log
    for n in range(20):
        snapshot = take(admin, [topic], followed if n % 2 else None)
        found = {g.group for g in snapshot.groups if topic in g.topics()}
        missing = set(groups) - found
        told = set(snapshot.unanswered) | ({g for g in groups if g not in snapshot.listed} if snapshot.listing else set())
        assert missing <= told, f"{len(missing - told)} groups missing and not said: {sorted(missing - told)[:5]}"
        assert missing == set() or snapshot.partial
        complete += not missing
        assert topic in snapshot.topics
    followed.close()
    assert complete >= 1  # a healthy broker answers in full at least once in twenty


def test_a_group_kafka_does_not_answer_for_is_kept_as_last_seen_and_counted() -> None:
    """The stored rows of a group that Kafka did not answer for stay (with their old ``seen_at``); a group answered and gone
    is dropped; with an incomplete listing, a group it did not name stays too."""
    earlier = Clock().now
    stored = [(1, "orders", "a", {"0": 5}, earlier), (2, "orders", "b", {"0": 5}, earlier), (3, "orders", "c", {"0": 5}, earlier),
              (4, "orders", "d", {"0": 5}, earlier)]
    snapshot = Snapshot([], {}, {}, listed={"a", "b", "c"}, unanswered={"b": "committed offsets of b: no answer in 10 s"})
    _, _, gone, partial = _changes(snapshot, stored, earlier + timedelta(minutes=5))
    assert sorted(gone) == [1, 3, 4] and partial == 1  # a and c answered without reading it; d is not listed by a complete listing
    snapshot.listing = "listing consumer groups: Coordinator load in progress"
    _, _, gone, partial = _changes(snapshot, stored, earlier + timedelta(minutes=5))
    assert sorted(gone) == [1, 3] and partial == 2


async def test_a_partial_census_keeps_the_unanswered_group_and_says_so_and_the_cli_without_a_cluster_shows_the_stored_one(
        migrated_url: str, kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic = new_topic(admin, "census-partial")
    groups = [f"{topic}-a", f"{topic}-b"]
    seed_groups(admin, topic, groups)
    db, clock, census = census_service(migrated_url, kafka_bootstrap)
    try:
        assert await census.refresh()
        first = await census.census(topic)
        assert {r.reading.group for r in first.readers} == set(groups) and first.live and first.partial == 0

        real = kafka_census.take

        def refused(client: Any, topics: Any = None, offsets_log: Any = None) -> Snapshot:
            snapshot = real(client, topics, offsets_log)
            snapshot.groups = [g for g in snapshot.groups if g.group != groups[1]]
            snapshot.unanswered[groups[1]] = f"committed offsets of {groups[1]}: no answer in 10 s"
            return snapshot

        monkeypatch.setattr(census_module, "take", refused)
        clock.advance(minutes=1)
        assert await census.refresh()
        second = await census.census(topic)
        by_group = {r.reading.group: r for r in second.readers}
        assert set(by_group) == set(groups) and second.partial == 1 and second.live  # never dropped
        assert by_group[groups[0]].live and by_group[groups[0]].state == "idle"
        assert not by_group[groups[1]].live and by_group[groups[1]].state == "last seen idle"
        assert "last seen idle at" in by_group[groups[1]].state_text()
        assert any("partial: Kafka did not answer for 1 group" in note for note in second.notes())
        shown = second.as_json()
        assert shown["partial"] is True and shown["unanswered"] == 1 and "no answer" in shown["partial_reason"]

        clock.advance(minutes=10)  # nobody took a census since: nothing is live any more
        old = await census.census(topic)
        assert not old.live and old.stale and all(r.state.startswith("last seen") for r in old.readers)
    finally:
        await db.close()

    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9"}  # the cluster is away
    printed = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "consumers", topic, "--format", "json"], env=env,
                                      capture_output=True, text=True, timeout=120)
    assert printed.returncode == 3, printed.stderr
    assert "FAIL" not in printed.stderr and "%3|" not in printed.stderr, printed.stderr  # its Kafka clients ended with their use, silently
    answer = json.loads(printed.stdout)
    assert answer["live"] is False and "did not answer" in answer["failed"] and answer["age_seconds"] > 0 and answer["taken_at"]
    assert answer["partial"] is True and {r["group"] for r in answer["readers"]} == set(groups)
    assert all(r["state"].startswith("last seen") and r["live"] is False for r in answer["readers"])


async def test_an_unknown_topic_is_bad_input_with_the_nearest_names(migrated_url: str, kafka_bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic = new_topic(admin, "payments")
    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    for args in ([topic[:-1], "--refresh"], [topic[:-1] + "x", "--format", "json"]):
        done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "consumers", *args], env=env, capture_output=True, text=True,
                                       timeout=120)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"no topic {args[0]} on the cluster" in done.stderr and f"did you mean {topic}" in done.stderr
        assert done.stdout == ""
    far = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "consumers", "zzzz-qqqq"], env=env, capture_output=True,
                                  text=True, timeout=120)
    assert far.returncode == 2 and "no topic zzzz-qqqq on the cluster" in far.stderr


def test_a_name_kafka_would_refuse_is_bad_input_before_any_census_is_read(migrated_url: str, capsys: pytest.CaptureFixture[str],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", migrated_url)
    monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    for topic in ("bad topic!", "..", "", "x" * 250):
        assert main(["consumers", topic]) == 2
        captured = capsys.readouterr()
        assert "is not a topic name" in captured.err and captured.out == ""


def kafka_script(action: str, run_dir: Path) -> str:
    """scripts/kafka.sh ``action`` on a broker of the test's own; the bootstrap address it prints."""
    done = subprocess.run(["bash", "scripts/kafka.sh", action, str(run_dir)], cwd=Path(__file__).parents[1], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    return done.stdout.rpartition("=")[2].strip().strip("'")


async def test_the_cluster_stopping_between_two_censuses_of_the_offsets_log_shows_the_stored_one_and_the_log_goes_on_after_it_returns(
        migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bot following ``__consumer_offsets`` on a broker of this test's own: the broker stops (the census fails, within its
    timeouts, and the readers are shown as last seen with the failure, never live), comes back on its storage (the
    follower goes on from where it was: offsets committed meanwhile are in the next census, read from the log)."""
    bootstrap = await asyncio.to_thread(kafka_script, "start", tmp_path)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = new_topic(admin, "census-away")
    groups = [f"{topic}-a", f"{topic}-b"]
    seed_groups(admin, topic, groups)
    taken: list[Snapshot] = []
    real = kafka_census.take

    def recorded(client: Any, topics: Any = None, offsets_log: Any = None) -> Snapshot:
        taken.append(real(client, topics, offsets_log))
        return taken[-1]

    monkeypatch.setattr(census_module, "take", recorded)
    db, clock, census = census_service(migrated_url, bootstrap)
    try:
        assert await census.refresh()
        assert taken[-1].offsets_from == "log" and {g.group for g in taken[-1].groups} == set(groups)
        assert (await census.census(topic)).live

        await asyncio.to_thread(kafka_script, "stop", tmp_path)
        clock.advance(minutes=1)
        assert not await census.refresh()
        away = await census.census(topic)
        assert not away.live and away.failed and {r.reading.group for r in away.readers} == set(groups)
        assert all(not r.live and r.state.startswith("last seen") for r in away.readers)

        assert await asyncio.to_thread(kafka_script, "restart", tmp_path) == bootstrap
        moved = groups[0]
        seed_groups(AdminClient({"bootstrap.servers": bootstrap}), topic, [moved], offset=7)  # a coordinator still loading refuses it a while
        for _ in range(5):  # the first census after the return may still find a coordinator loading: it says so, and the next one answers
            clock.advance(minutes=1)
            if await census.refresh():
                break
        back = taken[-1]
        assert back.offsets_from == "log" and not back.unanswered
        assert {g.group: g.committed for g in back.groups}[moved] == {(topic, p): 7 for p in range(3)}
        assert (await census.census(topic)).live
    finally:
        await asyncio.to_thread(census.close)
        await db.close()
        await asyncio.to_thread(kafka_script, "stop", tmp_path)


async def test_a_bot_started_a_while_after_it_was_built_takes_its_first_census_at_once(migrated_url: str, kafka_bootstrap: str) -> None:
    """The first census is due as the bot is built; a start that comes seconds later (migrations, a process pool on a small
    machine) still takes it then, not one interval (five minutes) later: the scheduler runs a late job, it does not drop it."""
    ws = Workspace(f"xoxb-test-{secrets.token_hex(6)}")
    seed_workspace(ws)
    emulator, runner = await start_emulator(ws)
    bot = Bot(bot_config(emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap))
    await asyncio.sleep(2)  # more than the second APScheduler 3 allows a run to be late by default
    await bot.start(0)
    try:
        for _ in range(150):
            if (await bot.census.census("orders")).live:
                break
            await asyncio.sleep(0.2)
        assert (await bot.census.census("orders")).live, "no census in the 30 s after the bot started"
    finally:
        await bot.stop()
        await runner.cleanup()


async def test_a_group_named_with_control_characters_cannot_drive_the_terminal_and_json_stays_json(migrated_url: str, kafka_bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic = new_topic(admin, "census-names")
    evil = f"{topic}-\x1b]0;pwned\x07\x1b[2J\x9bq\u202e"  # retitle, clear, an 8-bit CSI, a reordering: Kafka takes any group id
    long = f"{topic}-" + "spark-kafka-source-" * 20  # of any length (past 255 characters: PostgreSQL refused the whole census)
    seed_groups(admin, topic, [evil, long])
    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    text = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "consumers", topic, "--refresh"], env=env, capture_output=True,
                                   text=True, timeout=120)
    assert text.returncode == 1, text.stderr  # undeclared
    assert f"{topic}-\\u001b]0;pwned\\u0007\\u001b[2J\\u009bq\\u202e" in text.stdout
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", text.stdout)
    answer = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "consumers", topic, "--format", "json"], env=env,
                                     capture_output=True, text=True, timeout=120)
    assert sorted(r["group"] for r in json.loads(answer.stdout)["readers"]) == sorted([evil, long])  # the same names, escaped the way
    # JSON escapes
