"""Flink in the loop: a group a Flink job reads is never reset (its next checkpoint would write its own offsets back),
whether the catalog says so or the group's commits give it away (they move while it has no member); a job's status
from Flink's REST API, on a real standalone cluster running a real SQL job."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from bot.domain.flink.statements import split
from bot.domain.flink.status import FlinkError
from bot.domain.lineage.catalog import read_catalog
from bot.emulator.render import as_text
from bot.flink.rest import FlinkRest, savepoint_on_disk
from bot.flink.savepoints import without_operators
from bot.flink.submit import submit
from bot.runtime import Bot
from bot.slack import ids
from tests.conftest import API_TOKEN, SlackHarness, bot_config
from tests.test_ops import ALICE, BOB, NOW, answer, clicked, committed, database_url, latest, new_topic, op_message, operations, ops, produce, read_some, thread

__all__ = ["database_url", "ops"]  # fixtures shared with the other operations tests


def assigned_commit(bootstrap: str, topic: str, group: str, upto: dict[int, int]) -> None:
    """Commit as a Flink source does: partitions assigned by the job itself, no group membership."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, o) for p, o in upto.items()])
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in upto.items()], asynchronous=False)
    consumer.close()


def flink_event(job: str, topic: str, group: str, run_facets: dict[str, Any], job_facets: dict[str, Any]) -> dict[str, Any]:
    """An OpenLineage event as Flink's integration sends one: the job reading ``topic`` with ``group``."""
    return {"eventType": "RUNNING", "eventTime": "2026-12-01T10:00:00Z", "producer": "https://github.com/OpenLineage/OpenLineage/tree/1.30.0/integration/flink",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
            "run": {"runId": str(uuid.uuid4()), "facets": run_facets}, "job": {"namespace": "flink-jobs", "name": job, "facets": job_facets},
            "inputs": [{"namespace": "kafka://127.0.0.1:9092", "name": topic, "facets": {"kafka": {"consumerGroup": group}}}],
            "outputs": [{"namespace": "jdbc:postgresql://db/shop", "name": "daily_totals"}]}


async def test_a_job_openlineage_says_runs_on_flink_is_never_reset(migrated_url: str, kafka_bootstrap: str, tmp_path: Path) -> None:
    """Flink's OpenLineage integration says what the job runs on (the jobType facet's integration, the processing_engine run
    facet): a job known only from those events, or one the catalog declares without `flink:`, keeps its group untouched."""
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic, group = new_topic(admin, "orders"), f"totals-{uuid.uuid4().hex[:8]}"
    await asyncio.to_thread(produce, kafka_bootstrap, topic, 30, NOW - timedelta(hours=1), timedelta(seconds=1))
    await asyncio.to_thread(assigned_commit, kafka_bootstrap, topic, group, {0: 10, 1: 10, 2: 10})
    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}
    env.pop("FLINK_REST_URL", None)

    def bot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot", *args], env=env, capture_output=True, text=True, timeout=120)

    streaming = {"jobType": {"_producer": "x", "_schemaURL": "x", "processingType": "STREAMING", "integration": "FLINK", "jobType": "JOB"}}
    (tmp_path / "events.jsonl").write_text(json.dumps(flink_event("daily-totals", topic, group, {}, streaming)) + "\n")
    assert (await asyncio.to_thread(bot, "lineage", "import", str(tmp_path / "events.jsonl"))).returncode == 0
    refused = await asyncio.to_thread(bot, "backfill", group, topic, "--to-earliest", "--yes")
    assert refused.returncode == 1 and "read by the Flink job daily-totals" in refused.stderr and "Nothing moved" in refused.stderr
    assert "FLINK_REST_URL is not set" in refused.stderr  # it would go the Flink way, with Flink's version of the bot
    assert committed(kafka_bootstrap, group, topic) == {0: 10, 1: 10, 2: 10}

    other = f"totals-{uuid.uuid4().hex[:8]}"  # another job's group, declared in the catalog without `flink:`
    await asyncio.to_thread(assigned_commit, kafka_bootstrap, topic, other, {0: 20, 1: 20, 2: 20})
    (tmp_path / "catalog.yaml").write_text(json.dumps({"teams": {"orders-team": {"members": ["U0000ALICE"], "oncall": ["U0000ALICE"]}},
                                                       "jobs": [{"name": "totals", "namespace": "flink-jobs", "owner": "orders-team",
                                                                 "consumer_groups": [other]}]}))
    assert (await asyncio.to_thread(bot, "catalog", "load", str(tmp_path / "catalog.yaml"))).returncode == 0
    engine = {"processing_engine": {"_producer": "x", "_schemaURL": "x", "name": "flink", "version": "1.20.1"}}
    (tmp_path / "events.jsonl").write_text(json.dumps(flink_event("totals", topic, other, engine, {})) + "\n")
    assert (await asyncio.to_thread(bot, "lineage", "import", str(tmp_path / "events.jsonl"))).returncode == 0
    refused = await asyncio.to_thread(bot, "backfill", other, topic, "--to-earliest", "--yes")
    assert refused.returncode == 1 and "read by the Flink job totals" in refused.stderr, refused.stderr
    assert "OpenLineage says so (its event of 2026-12-01 10:00 UTC), though the catalog does not say `flink:`" in refused.stderr
    assert committed(kafka_bootstrap, other, topic) == {0: 20, 1: 20, 2: 20}
    coverage = await asyncio.to_thread(bot, "lineage", "coverage")
    assert "runs on Flink 1.20.1 (the catalog does not say `flink:`)" in coverage.stdout, coverage.stdout
    status = await asyncio.to_thread(bot, "flink", "status", "totals")
    assert status.returncode != 0 and "OpenLineage says totals runs on Flink, but the catalog declares it without `flink:`" in status.stderr


def catalog(topic: str, group: str, flink: bool) -> str:
    job = {"name": "count-orders", "owner": "orders-team", "consumer_groups": [group], **({"flink": "2.3.0"} if flink else {})}
    return json.dumps({"teams": {"orders-team": {"members": ["U0000ALICE"], "oncall": ["U0000ALICE"]}},
                       "jobs": [job], "pipelines": [{"name": "count-orders", "owner": "orders-team", "source": {"topics": [topic], "group": group}}]})


async def test_a_flink_jobs_group_is_never_reset_from_the_terminal(migrated_url: str, kafka_bootstrap: str, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic, group = new_topic(admin, "orders"), f"count-orders-{uuid.uuid4().hex[:8]}"
    await asyncio.to_thread(produce, kafka_bootstrap, topic, 300, NOW - timedelta(hours=1), timedelta(seconds=1))
    await asyncio.to_thread(assigned_commit, kafka_bootstrap, topic, group, {0: 100, 1: 100, 2: 100})
    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}

    def bot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot", *args], env=env, capture_output=True, text=True, timeout=120)

    (tmp_path / "catalog.yaml").write_text(catalog(topic, group, flink=True))
    assert (await asyncio.to_thread(bot, "catalog", "load", str(tmp_path / "catalog.yaml"))).returncode == 0
    for reset in (["--to-earliest"], ["--by-duration", "30m"], ["--to-offsets", "0:0"], ["--shift-by", "-10"]):
        refused = await asyncio.to_thread(bot, "backfill", group, topic, *reset, "--yes", "--format", "json")
        assert refused.returncode == 1, (reset, refused.stdout, refused.stderr)
        assert "read by the Flink job count-orders" in refused.stderr and "Nothing moved" in refused.stderr
        assert "the Flink way" in refused.stderr and refused.stdout == ""
    status = await asyncio.to_thread(bot, "ops", "status", "--format", "json")
    assert json.loads(status.stdout) == []  # nothing was even planned
    assert committed(kafka_bootstrap, group, topic) == {0: 100, 1: 100, 2: 100}

    # The same job without `flink:` in the catalog: its commits move while the group has no member, and give it away
    (tmp_path / "catalog.yaml").write_text(catalog(topic, group, flink=False))
    assert (await asyncio.to_thread(bot, "catalog", "load", str(tmp_path / "catalog.yaml"))).returncode == 0
    assert (await asyncio.to_thread(bot, "consumers", topic, "--refresh", "--format", "json")).returncode in (0, 1)
    await asyncio.to_thread(assigned_commit, kafka_bootstrap, topic, group, {0: 90, 1: 90, 2: 90})  # its next checkpoint
    refused = await asyncio.to_thread(bot, "backfill", group, topic, "--to-earliest", "--yes")
    assert refused.returncode == 1 and "no connected client, yet its committed offsets moved since the census of" in refused.stderr
    assert f"{topic}[0]" in refused.stderr and "Nothing moved" in refused.stderr
    assert committed(kafka_bootstrap, group, topic) == {0: 90, 1: 90, 2: 90}

    # A consumer that stopped since the census: once the census sees it stopped, the reset is planned and applied
    assert (await asyncio.to_thread(bot, "consumers", topic, "--refresh", "--format", "json")).returncode in (0, 1)
    applied = await asyncio.to_thread(bot, "backfill", group, topic, "--to-earliest", "--yes", "--format", "json")
    assert applied.returncode == 0, applied.stderr
    assert committed(kafka_bootstrap, group, topic) == {0: 0, 1: 0, 2: 0}
    again = await asyncio.to_thread(bot, "backfill", group, topic, "--to-offsets", "0:50,1:50,2:50", "--yes")  # our own reset is no hidden reader
    assert again.returncode == 0, again.stderr
    assert committed(kafka_bootstrap, group, topic) == {0: 50, 1: 50, 2: 50}


async def test_a_plan_whose_group_commits_with_no_member_before_confirm_is_refused_and_moves_nothing(
        ops: tuple[SlackHarness, dict[str, str]], kafka_bootstrap: str) -> None:
    slack, names = ops
    group, source = names["group"], names["source"]
    await asyncio.to_thread(produce, kafka_bootstrap, source, 300, NOW - timedelta(hours=1), timedelta(seconds=1))
    await asyncio.to_thread(read_some, kafka_bootstrap, source, group, {0: 60, 1: 60, 2: 60})
    assert "is posted" in await answer(slack, f"/backfill {group} {source} --to-earliest", ALICE)
    row = await latest(slack)
    plan = await op_message(slack, int(row.id or 0), lambda t: "read again" in t)
    await asyncio.to_thread(assigned_commit, kafka_bootstrap, source, group, {0: 70, 1: 70, 2: 70})  # a checkpoint meanwhile
    said = await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
    assert "no connected client, yet its committed offsets moved since" in said
    assert (await slack.bot.ops.get(int(row.id or 0))).state == "failed"
    refused = await op_message(slack, int(row.id or 0), lambda t: "Not applied" in t or "failed" in t)
    assert not [b for b in refused.blocks if b.get("type") == "actions"]  # nothing left to press
    assert committed(kafka_bootstrap, group, source) == {0: 70, 1: 70, 2: 70}

    # The pipeline's job named a Flink job in the catalog: refused at the plan, from Slack as from the terminal
    data = {"oncall": {"members": ["U0000CAROL"]},
            "teams": {"orders-team": {"usergroup": next(g["id"] for g in slack.ws.usergroups.values() if g["handle"] == "orders-team"),
                                      "members": [ALICE], "oncall": [ALICE], "channel": "#orders-pipeline"}},
            "jobs": [{"name": "enrich-orders-job", "owner": "orders-team", "flink": "2.3.0"}],
            "pipelines": [{"name": "enrich-orders", "owner": "orders-team", "channel": "#orders-pipeline", "jobs": ["enrich-orders-job"],
                           "source": {"topics": [source], "group": group}, "dlq": names["dlq"]}]}
    parsed, problems = read_catalog(data, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    said = await answer(slack, f"/backfill {group} {source} --to-earliest", ALICE)
    assert "read by the Flink job enrich-orders-job" in said and "Nothing was planned" in said
    assert committed(kafka_bootstrap, group, source) == {0: 70, 1: 70, 2: 70}


COUNT_SQL = """CREATE TABLE orders (customer STRING, amount INT) WITH (
  'connector' = 'kafka', 'topic' = '{orders}', 'properties.bootstrap.servers' = '{bootstrap}',
  'properties.group.id' = '{group}', 'scan.startup.mode' = 'group-offsets', 'properties.auto.offset.reset' = 'earliest',
  'format' = 'json');
CREATE TABLE counts (customer STRING, n BIGINT, PRIMARY KEY (customer) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{counts}', 'properties.bootstrap.servers' = '{bootstrap}',
  'key.format' = 'json', 'value.format' = 'json');
INSERT INTO counts SELECT COALESCE(customer, '') AS customer, COUNT(*) AS n FROM orders GROUP BY COALESCE(customer, '');
"""


def produce_orders(bootstrap: str, topic: str, count: int, first: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(first, first + count):
        producer.produce(topic, json.dumps({"customer": f"c{i % 4}", "amount": i}).encode(), partition=i % 3)
    assert producer.flush(30) == 0


async def until(predicate: Any, timeout: float = 120.0) -> Any:
    """Poll ``predicate`` (a coroutine function) until it returns something true."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await predicate()
        if value or asyncio.get_running_loop().time() > deadline:
            return value
        await asyncio.sleep(0.5)


@dataclass
class Counting:
    """A job counting orders per customer into an upsert-kafka topic on the real cluster: its topics, names and SQL."""

    bootstrap: str
    rest: FlinkRest
    orders: str
    counts: str
    name: str
    group: str

    @classmethod
    def new(cls, bootstrap: str, rest_url: str) -> Counting:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        return cls(bootstrap, FlinkRest(rest_url), new_topic(admin, "orders"), new_topic(admin, "counts", partitions=1),
                   f"count-orders-{uuid.uuid4().hex[:6]}", f"count-orders-g-{uuid.uuid4().hex[:6]}")

    @property
    def sql(self) -> str:
        return "SET 'execution.checkpointing.interval' = '1s';\n" + COUNT_SQL.format(orders=self.orders, counts=self.counts, group=self.group,
                                                                                      bootstrap=self.bootstrap)

    async def start(self) -> str:
        return await submit(os.environ["CHANGEOPS_FLINK_ROOT"], "2.3.0", self.rest.url, self.name, split(self.sql), {})

    def counted(self, n: int) -> Any:
        """For ``until``: every customer's newest count is ``n``."""
        return lambda: asyncio.to_thread(lambda: latest_counts(self.bootstrap, self.counts) == {f"c{i}": n for i in range(4)} or None)

    def committed(self, total: int) -> Any:
        """For ``until``: the job has committed ``total`` offsets to its group (it commits as it checkpoints)."""
        return lambda: asyncio.to_thread(lambda: sum(committed(self.bootstrap, self.group, self.orders).values()) == total or None)

    async def running(self) -> list[str]:
        return [j["jid"] for j in (await self.rest.get("/jobs/overview"))["jobs"] if j["name"] == self.name and j["state"] == "RUNNING"]

    async def cancel(self) -> None:
        for jid in await self.running():
            await self.rest.cancel(jid)


def terminal(job: Counting, database_url: str, folder: Path) -> tuple[Any, dict[str, str]]:
    """The job's SQL and a catalog naming it in ``folder``, loaded; the ``bot`` command in a process, as oncall runs it, and
    its environment."""
    (folder / "job.sql").write_text(job.sql)
    (folder / "catalog.yaml").write_text(json.dumps({
        "teams": {"orders-team": {"members": [ALICE], "oncall": [ALICE]}},
        "jobs": [{"name": job.name, "owner": "orders-team", "flink": "2.3.0", "consumer_groups": [job.group]}]}))
    env = {**os.environ, "DATABASE_URL": database_url, "KAFKA_BOOTSTRAP_SERVERS": job.bootstrap, "FLINK_REST_URL": job.rest.url,
           "FLINK_SAVEPOINT_DIR": os.environ["TEST_FLINK_SAVEPOINT_DIR"], "OPS_LEASE_SECONDS": "3"}

    def bot(*args: str, **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot", *args], env={**env, **more}, capture_output=True, text=True, timeout=600)

    assert bot("catalog", "load", str(folder / "catalog.yaml")).returncode == 0
    return bot, env


async def test_a_running_flink_job_as_flink_sees_it_and_its_group_never_reset(slack: SlackHarness, migrated_url: str, kafka_bootstrap: str,
                                                                              flink_rest_url: str, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    orders, counts = new_topic(admin, "orders"), new_topic(admin, "counts", partitions=1)
    name, group = f"count-orders-{uuid.uuid4().hex[:6]}", f"count-orders-g-{uuid.uuid4().hex[:6]}"
    await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 200)
    (tmp_path / "catalog.yaml").write_text(json.dumps({
        "teams": {"orders-team": {"members": [ALICE], "oncall": [ALICE], "channel": "#orders-pipeline"}},
        "jobs": [{"name": name, "owner": "orders-team", "flink": "2.3.0", "consumer_groups": [group]}]}))
    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "FLINK_REST_URL": flink_rest_url}

    def bot(*args: str, **more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot", *args], env={**env, **more}, capture_output=True, text=True, timeout=180)

    assert (await asyncio.to_thread(bot, "catalog", "load", str(tmp_path / "catalog.yaml"))).returncode == 0
    sql = COUNT_SQL.format(orders=orders, counts=counts, group=group, bootstrap=kafka_bootstrap)
    job_id = await submit(os.environ["CHANGEOPS_FLINK_ROOT"], "2.3.0", flink_rest_url, name, split(sql),
                          {"execution.checkpointing.interval": "1s"})
    try:
        async def checkpointed() -> dict[str, Any] | None:
            shown = await asyncio.to_thread(bot, "flink", "status", name, "--format", "json")
            assert shown.returncode == 0, shown.stderr
            status: dict[str, Any] = json.loads(shown.stdout)
            return status if status["state"] == "RUNNING" and status["checkpoints"]["last"] else None

        status = await until(checkpointed)
        assert status, "the job took no checkpoint"
        assert status["job"] == name and status["job_id"] == job_id and status["checkpoints"]["interval_seconds"] == 1.0
        assert status["restarts"] == 0 and status["savepoint"] is None and status["backpressure"] in (None, "ok", "low", "high")
        assert 0 <= status["checkpoints"]["duration_over_interval"] < 60
        text = await asyncio.to_thread(bot, "flink", "status", name)
        assert f"{name}: RUNNING (job {job_id}" in text.stdout and "last checkpoint: #" in text.stdout

        # The group the job commits to (for monitoring only) can never be reset
        assert await until(lambda: asyncio.to_thread(lambda: sum(committed(kafka_bootstrap, group, orders).values()) >= 200 or None))
        refused = await asyncio.to_thread(bot, "backfill", group, orders, "--to-earliest", "--yes")
        assert refused.returncode == 1 and f"read by the Flink job {name}" in refused.stderr

        # In Slack, the same status
        await slack.bot.stop()
        slack.bot = Bot(bot_config(slack.emulator, migrated_url, FLINK_REST_URL=flink_rest_url))
        await slack.bot.start(0)
        slack.driver.request_url = f"{slack.bot.url}/slack/events"
        said = await answer(slack, f"/flink status {name}", ALICE)
        assert f"{name}: RUNNING (job {job_id}" in said and "last checkpoint" in said and "as Flink said at" in said
        assert "no catalog job 'nope' runs on Flink" in await answer(slack, "/flink status nope", ALICE)
        assert "Say which job" in await answer(slack, "/flink status", ALICE)

        # Bad input and an absent Flink: a clear message, the right exit code
        (tmp_path / "catalog.yaml").write_text(json.dumps({
            "teams": {"orders-team": {"members": [ALICE], "oncall": [ALICE]}},
            "jobs": [{"name": name, "owner": "orders-team", "flink": "2.3.0", "consumer_groups": [group]},
                     {"name": "not-deployed", "owner": "orders-team", "flink": "2.3.0"}]}))
        assert (await asyncio.to_thread(bot, "catalog", "load", str(tmp_path / "catalog.yaml"))).returncode == 0
        missing = await asyncio.to_thread(bot, "flink", "status", "not-deployed")
        assert missing.returncode == 1 and "has no job named not-deployed" in missing.stderr and name in missing.stderr
        away = await asyncio.to_thread(bot, "flink", "status", name, FLINK_REST_URL="http://127.0.0.1:9")
        assert away.returncode == 3 and "Flink did not answer at http://127.0.0.1:9" in away.stderr
        unset = await asyncio.to_thread(bot, "flink", "status", name, FLINK_REST_URL="")
        assert unset.returncode == 2 and "FLINK_REST_URL" in unset.stderr
    finally:
        async with aiohttp.ClientSession() as session:
            await session.patch(f"{flink_rest_url}/jobs/{job_id}?mode=cancel")


def latest_counts(bootstrap: str, topic: str) -> dict[str, int]:
    """The newest count per customer in an upsert-kafka topic."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.subscribe([topic])
    found: dict[str, int] = {}
    while (message := consumer.poll(10)) is not None and message.error() is None:
        if message.value() is not None:
            value = json.loads(message.value() or b"{}")
            found[value["customer"]] = value["n"]
    consumer.close()
    return found


async def test_a_job_stopped_with_a_savepoint_reads_nothing_and_restored_from_it_loses_and_doubles_nothing(
        kafka_bootstrap: str, flink_rest_url: str) -> None:
    case = Counting.new(kafka_bootstrap, flink_rest_url)
    name, group, orders, counts, rest, root = case.name, case.group, case.orders, case.counts, case.rest, os.environ["CHANGEOPS_FLINK_ROOT"]
    await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 200)
    statements = split(case.sql)
    job = await case.start()
    jobs = [job]
    try:
        assert await until(lambda: asyncio.to_thread(lambda: latest_counts(kafka_bootstrap, counts) == {f"c{i}": 50 for i in range(4)} or None))
        assert await until(lambda: asyncio.to_thread(lambda: sum(committed(kafka_bootstrap, group, orders).values()) == 200 or None))
        location = await rest.stop_with_savepoint(job, os.environ["TEST_FLINK_SAVEPOINT_DIR"])
        assert savepoint_on_disk(location) is True and await rest.state(job) == "FINISHED"
        assert (await rest.status(name)).savepoint is not None

        await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 100, first=200)  # while paused: nothing reads them
        await asyncio.sleep(3)
        assert sum(committed(kafka_bootstrap, group, orders).values()) == 200
        assert latest_counts(kafka_bootstrap, counts) == {f"c{i}": 50 for i in range(4)}

        resumed = await submit(root, "2.3.0", flink_rest_url, name, statements,
                               {"execution.checkpointing.interval": "1s", "execution.state-recovery.path": location})
        jobs.append(resumed)
        assert await until(lambda: asyncio.to_thread(lambda: latest_counts(kafka_bootstrap, counts) == {f"c{i}": 75 for i in range(4)} or None))
        status = await until(lambda: rest.status(name))
        assert status.job_id == resumed and status.restored_from == location  # restored from the savepoint: nothing lost or counted twice

        with pytest.raises(FlinkError, match="could not take the savepoint|refused"):  # a savepoint Flink cannot write: the job runs on
            await rest.stop_with_savepoint(resumed, "/proc/no-savepoint-here")
        assert await rest.state(resumed) == "RUNNING"
        with pytest.raises(FlinkError, match="Flink refused"):
            await submit(root, "2.3.0", flink_rest_url, name, split("CREATE TABLE t (a INT) WITH ('connector' = 'datagen');"), {})
    finally:
        for jid in jobs:
            if await rest.state(jid) == "RUNNING":
                await rest.cancel(jid)


async def test_a_savepoint_copied_without_the_source_re_reads_from_where_it_is_told_and_keeps_every_other_state(
        kafka_bootstrap: str, flink_rest_url: str) -> None:
    case = Counting.new(kafka_bootstrap, flink_rest_url)
    name, orders, counts, rest, root = case.name, case.orders, case.counts, case.rest, os.environ["CHANGEOPS_FLINK_ROOT"]
    await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 200)
    statements, every = split(case.sql), {"execution.checkpointing.interval": "1s"}
    jobs = [await case.start()]
    try:
        assert await until(lambda: asyncio.to_thread(lambda: latest_counts(kafka_bootstrap, counts) == {f"c{i}": 50 for i in range(4)} or None))
        vertices = (await rest.get(f"/jobs/{jobs[0]}"))["vertices"]
        source = next(v["id"] for v in vertices if v["name"].startswith("Source:") and ".orders" in v["name"])
        original = await rest.stop_with_savepoint(jobs[0], os.environ["TEST_FLINK_SAVEPOINT_DIR"])
        copy = await without_operators(root, "2.3.0", original, f"{original}-without-source", [source])
        assert savepoint_on_disk(copy) is True

        jobs.append(await submit(root, "2.3.0", flink_rest_url, name, statements, {**every, "execution.state-recovery.path": copy},
                                 starts={orders: {"scan.startup.mode": "earliest-offset"}}))
        # the 200 orders again, on top of the aggregate's kept state: every count doubles (downstream sees them twice)
        assert await until(lambda: asyncio.to_thread(lambda: latest_counts(kafka_bootstrap, counts) == {f"c{i}": 100 for i in range(4)} or None))

        await rest.cancel(jobs[1])  # Undo: the original savepoint again, as it was before the backfill
        jobs.append(await submit(root, "2.3.0", flink_rest_url, name, statements, {**every, "execution.state-recovery.path": original}))
        await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 4, first=200)
        assert await until(lambda: asyncio.to_thread(lambda: latest_counts(kafka_bootstrap, counts) == {f"c{i}": 51 for i in range(4)} or None))

        with pytest.raises(FlinkError, match="could not rewrite the savepoint"):
            await without_operators(root, "2.3.0", "file:/nowhere/savepoint-0", "file:/tmp/never", [source])
        with pytest.raises(FlinkError, match="no table of the 'kafka' connector in the SQL reads nope"):
            await submit(root, "2.3.0", flink_rest_url, name, statements, every, starts={"nope": {"scan.startup.mode": "earliest-offset"}})
        assert [j["jid"] for j in (await rest.get("/jobs/overview"))["jobs"] if j["name"] == name and j["state"] == "RUNNING"] == [jobs[2]]
    finally:
        for jid in jobs:
            if await rest.state(jid) == "RUNNING":
                await rest.cancel(jid)


def produce_timed(bootstrap: str, topic: str, count: int, at: datetime, first: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(first, first + count):
        producer.produce(topic, json.dumps({"customer": f"c{i % 4}", "amount": i}).encode(), partition=i % 3,
                         timestamp=int(at.timestamp() * 1000))
    assert producer.flush(30) == 0


async def test_a_flink_jobs_backfill_from_the_terminal_re_reads_keeps_the_rest_undoes_and_survives_a_killed_bot(
        migrated_url: str, kafka_bootstrap: str, flink_rest_url: str, tmp_path: Path) -> None:
    job = Counting.new(kafka_bootstrap, flink_rest_url)
    name, group, orders, rest, counted, running = job.name, job.group, job.orders, job.rest, job.counted, job.running
    await asyncio.to_thread(produce_timed, kafka_bootstrap, orders, 100, datetime.now(UTC) - timedelta(hours=3))
    await asyncio.to_thread(produce_timed, kafka_bootstrap, orders, 100, datetime.now(UTC) - timedelta(minutes=10), first=100)
    bot, env = await asyncio.to_thread(terminal, job, migrated_url, tmp_path)
    first = await job.start()
    try:
        assert await until(counted(50)) and await until(job.committed(200))

        nosql = await asyncio.to_thread(bot, "backfill", group, orders, "--to-earliest")  # no release recorded its SQL
        assert nosql.returncode == 1 and "no passed release of" in nosql.stderr and "--sql FILE" in nosql.stderr
        planned = await asyncio.to_thread(bot, "backfill", group, orders, "--to-earliest", "--sql", str(tmp_path / "job.sql"))
        assert planned.returncode == 0, planned.stderr
        assert "The Flink way" in planned.stdout and "Downstream sees these 200 records again" in planned.stdout
        assert "the job keeps running until then" in planned.stdout and await running() == [first]

        applied = await asyncio.to_thread(bot, "backfill", group, orders, "--to-earliest", "--sql", str(tmp_path / "job.sql"), "--yes",
                                          "--format", "json")
        assert applied.returncode == 0, applied.stderr
        outcome = json.loads(applied.stdout)
        assert outcome["state"] == "applied" and outcome["progress"]["step"] == "verify"
        assert savepoint_on_disk(outcome["progress"]["savepoint"]) and savepoint_on_disk(outcome["progress"]["copy"])
        assert await running() == [outcome["progress"]["new_job"]]
        assert await until(counted(100))  # the 200 re-read on top of the kept aggregate
        assert (await rest.status(name)).restored_from is not None

        undone = await asyncio.to_thread(bot, "ops", "undo", str(outcome["operation"]), "--format", "json")
        assert undone.returncode == 0, undone.stderr
        assert json.loads(undone.stdout)["state"] == "undone"
        await asyncio.to_thread(produce_timed, kafka_bootstrap, orders, 4, datetime.now(UTC), first=200)
        assert await until(counted(51))  # the original state again: 50, then one more each
        assert len(await running()) == 1

        # To a time, from a bot killed midway: the next run resumes after the last recorded step and does nothing twice
        process = subprocess.Popen([sys.executable, "-m", "bot", "backfill", group, orders, "--by-duration", "1h", "--sql",
                                    str(tmp_path / "job.sql"), "--yes"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        async def step() -> str | None:
            rows = json.loads((await asyncio.to_thread(bot, "ops", "status", "--format", "json")).stdout)
            return next((r["progress"].get("step") for r in rows if r["state"] == "running"), None)

        assert await until(lambda: step()) in ("savepoint", "rewrite")
        process.kill()
        process.wait()
        resumed = await asyncio.to_thread(bot, "backfill", group, orders, "--by-duration", "1h", "--sql", str(tmp_path / "job.sql"), "--yes")
        assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
        assert "resuming it after its last step" in resumed.stderr and "applied" in resumed.stdout
        assert await until(counted(51 + 26))  # the 104 orders of the last hour again (and not the 100 older ones)
        assert len(await running()) == 1
    finally:
        await job.cancel()


async def test_a_stateful_job_only_openlineage_knows_is_backfilled_the_flink_way(migrated_url: str, kafka_bootstrap: str, flink_rest_url: str,
                                                                                 tmp_path: Path) -> None:
    """No catalog entry for the job: Flink's OpenLineage events (jobType FLINK, no version, a sink that is not Kafka in its
    lineage) make it a Flink job, so its backfill restarts it from its savepoint on the bot's Flink and it re-reads, keeping
    its aggregate."""
    job = Counting.new(kafka_bootstrap, flink_rest_url)
    await asyncio.to_thread(produce_timed, kafka_bootstrap, job.orders, 100, datetime.now(UTC) - timedelta(hours=1))
    (tmp_path / "job.sql").write_text(job.sql)
    (tmp_path / "catalog.yaml").write_text(json.dumps({"teams": {"orders-team": {"members": [ALICE], "oncall": [ALICE]}}}))
    streaming = {"jobType": {"_producer": "x", "_schemaURL": "x", "processingType": "STREAMING", "integration": "FLINK", "jobType": "JOB"}}
    (tmp_path / "events.jsonl").write_text(json.dumps(flink_event(job.name, job.orders, job.group, {}, streaming)) + "\n")
    env = {**os.environ, "DATABASE_URL": migrated_url, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap, "FLINK_REST_URL": flink_rest_url,
           "FLINK_SAVEPOINT_DIR": os.environ["TEST_FLINK_SAVEPOINT_DIR"], "OPS_LEASE_SECONDS": "3"}

    def bot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot", *args], env=env, capture_output=True, text=True, timeout=600)

    assert (await asyncio.to_thread(bot, "catalog", "load", str(tmp_path / "catalog.yaml"))).returncode == 0
    assert (await asyncio.to_thread(bot, "lineage", "import", str(tmp_path / "events.jsonl"))).returncode == 0
    await job.start()
    try:
        assert await until(job.counted(25)) and await until(job.committed(100))
        applied = await asyncio.to_thread(bot, "backfill", job.group, job.orders, "--to-earliest", "--sql", str(tmp_path / "job.sql"), "--yes",
                                          "--format", "json")
        assert applied.returncode == 0, applied.stderr
        outcome = json.loads(applied.stdout)
        assert outcome["state"] == "applied" and outcome["plan"]["flink"]["version"] == "2.3.0"  # FLINK_VERSION's: the events named none
        assert await until(job.counted(50))  # the 100 re-read on top of the kept aggregate
        assert (await job.rest.status(job.name)).restored_from is not None and len(await job.running()) == 1
    finally:
        await job.cancel()


async def test_a_flink_jobs_backfill_through_slack_with_the_sql_its_passed_release_recorded(
        slack: SlackHarness, migrated_url: str, kafka_bootstrap: str, flink_rest_url: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    orders, counts = new_topic(admin, "orders"), new_topic(admin, "counts", partitions=1)
    name, group = f"count-orders-{uuid.uuid4().hex[:6]}", f"count-orders-g-{uuid.uuid4().hex[:6]}"
    await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 200)
    sql = "SET 'execution.checkpointing.interval' = '1s';\n" + COUNT_SQL.format(orders=orders, counts=counts, group=group, bootstrap=kafka_bootstrap)
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap, FLINK_REST_URL=flink_rest_url,
                               FLINK_SAVEPOINT_DIR=os.environ["TEST_FLINK_SAVEPOINT_DIR"], OPS_LEASE_SECONDS="2"))
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    usergroup = next(g["id"] for g in slack.ws.usergroups.values() if g["handle"] == "orders-team")
    data = {"teams": {"orders-team": {"usergroup": usergroup, "members": [ALICE], "oncall": [ALICE], "channel": "#orders-pipeline"}},
            "datasets": [{"name": topic, "namespace": "kafka://test", "kind": "topic", "owner": "orders-team"} for topic in (orders, counts)],
            "jobs": [{"name": name, "owner": "orders-team", "flink": "2.3.0", "consumer_groups": [group], "inputs": [orders],
                      "outputs": [counts]}],
            "pipelines": [{"name": name, "owner": "orders-team", "channel": "#orders-pipeline", "jobs": [name],
                           "source": {"topics": [orders], "group": group}, "reports": ["schema_error_rate"], "auto_pause": True,
                           "slis": {"schema_error_rate": {"for": "0s", "clear_for": "0s"}}}]}
    parsed, problems = read_catalog(data, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    async with aiohttp.ClientSession() as http, http.post(f"{slack.bot.url}/api/v1/jobs/{name}/check", data=json.dumps({"sql": sql}),
                                                          headers={"Authorization": f"Bearer {API_TOKEN}"}) as response:
        verdict = await response.json()
    assert verdict["verdict"] == "pass", [c for c in verdict["checks"] if not c["ok"]]  # the release gate passes it, and records its SQL

    rest, root = FlinkRest(flink_rest_url), os.environ["CHANGEOPS_FLINK_ROOT"]
    jobs = [await submit(root, "2.3.0", flink_rest_url, name, split(sql), {})]

    def counted(n: int) -> Any:
        return lambda: asyncio.to_thread(lambda: latest_counts(kafka_bootstrap, counts) == {f"c{i}": n for i in range(4)} or None)

    try:
        assert await until(counted(50))
        assert await until(lambda: asyncio.to_thread(lambda: sum(committed(kafka_bootstrap, group, orders).values()) == 200 or None))
        # The release gate restores a new release from a fresh savepoint in a dry run that never touches the running job
        async def gate(text: str) -> dict[str, Any]:
            async with aiohttp.ClientSession() as http, http.post(f"{slack.bot.url}/api/v1/jobs/{name}/check", data=json.dumps({"sql": text}),
                                                                  headers={"Authorization": f"Bearer {API_TOKEN}"}) as response:
                return dict(await response.json())

        unmappable = sql.split("INSERT INTO")[0] + ("CREATE TABLE audit (customer STRING, amount INT) WITH ('connector' = 'blackhole');\n"
                                                    "INSERT INTO audit SELECT customer, amount FROM orders;\n")
        blocked = await gate(unmappable)
        state = next(c for c in blocked["checks"] if c["check"] == "state")
        assert blocked["verdict"] == "blocked" and not state["ok"], blocked
        assert "Cannot map checkpoint/savepoint state for operator" in state["findings"][0]["message"]
        assert (await gate("-- the same job, checked again\n" + sql))["verdict"] == "pass"
        assert [j["jid"] for j in (await rest.get("/jobs/overview"))["jobs"] if j["state"] == "RUNNING" and j["name"].startswith(name)] == jobs
        assert latest_counts(kafka_bootstrap, counts) == {f"c{i}": 50 for i in range(4)}  # the dry runs read and wrote nothing

        # A restore drill with the release's SQL, recorded: the monthly report no longer names the job as undrilled
        month = datetime.now(UTC).date().replace(day=1)
        assert name in (await slack.bot.health.compute(month))["overall"]["jobs_without_drill"]
        env = {**os.environ, "DATABASE_URL": migrated_url, "FLINK_REST_URL": flink_rest_url, "FLINK_SAVEPOINT_DIR": os.environ["TEST_FLINK_SAVEPOINT_DIR"]}
        drilled = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "flink", "drill", name, "--format", "json"], env=env,
                                          capture_output=True, text=True, timeout=300)
        assert drilled.returncode == 0, drilled.stderr
        assert json.loads(drilled.stdout)["ok"] is True and savepoint_on_disk(json.loads(drilled.stdout)["savepoint"])
        assert name not in (await slack.bot.health.compute(month))["overall"]["jobs_without_drill"]
        assert [j["jid"] for j in (await rest.get("/jobs/overview"))["jobs"] if j["state"] == "RUNNING" and j["name"].startswith(name)] == jobs

        assert "is posted" in await answer(slack, f"/backfill {group} {orders} --to-earliest", ALICE)
        row = await latest(slack)
        plan = await op_message(slack, int(row.id or 0), lambda t: "The Flink way" in t)
        text = as_text(plan.text, plan.blocks)
        assert "its last passed release, #" in text and "Downstream sees these 200 records again" in text
        assert "the job keeps running until then" in text
        assert "is running" in await clicked(slack, plan, ids.OPS_CONFIRM, ALICE)
        done = await op_message(slack, int(row.id or 0), lambda t: "applied" in t and "Undo" in t)
        assert await slack.ws.wait_for(lambda: "restored from" in thread(slack, done) or None, timeout=30)
        assert await until(counted(100))
        jobs.append((await slack.bot.ops.get(int(row.id or 0))).progress["new_job"])

        assert "being undone" in await clicked(slack, done, ids.OPS_UNDO, ALICE)
        undone = await op_message(slack, int(row.id or 0), lambda t: "undone" in t)
        assert not [b for b in undone.blocks if b.get("type") == "actions"]
        jobs.append((await slack.bot.ops.get(int(row.id or 0))).progress["undone_job"])
        await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 4, first=200)
        assert await until(counted(51))
        entry = await slack.bot.calendar.entry(int((await slack.bot.ops.get(int(row.id or 0))).calendar_entry or 0))
        assert entry is not None and entry.kind == "backfill"  # booked in the calendar like every operation

        # Pause and resume from Slack: oncall only, a plan first, the savepoint of the pause used by the resume
        assert "Only oncall" in await answer(slack, f"/flink pause {name}", BOB)
        assert "Pause plan" in await answer(slack, f"/flink pause {name}", ALICE)
        pause = await latest(slack)
        message = await op_message(slack, int(pause.id or 0), lambda t: "not drained" in t)
        assert "is running" in await clicked(slack, message, ids.OPS_CONFIRM, ALICE)
        paused = await op_message(slack, int(pause.id or 0), lambda t: "applied" in t)
        savepoint = (await slack.bot.ops.get(int(pause.id or 0))).progress["savepoint"]
        assert savepoint_on_disk(savepoint) and await rest.state(jobs[-1]) == "FINISHED"
        assert await slack.ws.wait_for(lambda: f"/flink resume {name}" in thread(slack, paused) or None, timeout=30)
        assert "Resume plan" in await answer(slack, f"/flink resume {name}", ALICE)
        resume = await latest(slack)
        message = await op_message(slack, int(resume.id or 0), lambda t: "its last pause" in t and "its last passed release" in t)
        assert "is running" in await clicked(slack, message, ids.OPS_CONFIRM, ALICE)
        await op_message(slack, int(resume.id or 0), lambda t: "done" in t)
        jobs.append((await slack.bot.ops.get(int(resume.id or 0))).progress["new_job"])
        await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 4, first=204)
        assert await until(counted(52))
        assert "already runs on Flink" in await answer(slack, f"/flink resume {name}", ALICE)

        # A schema-error page of a pipeline that opted in pauses its job by savepoint; its alert carries Pause and Resume
        async with aiohttp.ClientSession() as http:
            await http.post(f"{slack.bot.url}/api/v1/metrics", headers={"Authorization": f"Bearer {API_TOKEN}"},
                            json=[{"pipeline": name, "sli": "schema_error_rate", "value": 0.05, "time": datetime.now(UTC).isoformat()}])
        alert = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("orders-pipeline")
                                                      if any(b.get("block_id", "").startswith("sli:") for b in m.blocks)), None), timeout=60)
        assert f"Pause {name}" in as_text(alert.text, alert.blocks) and f"Resume {name}" in as_text(alert.text, alert.blocks)

        async def auto() -> Any:
            rows = [r for r in await operations(slack) if r.kind == "pause" and r.requested_by == "changeops"]
            return rows[0] if rows and rows[0].state == "applied" else None

        automatic = await until(auto)
        assert automatic and "schema error rate paged" in automatic.plan["reason"] and await rest.state(jobs[-1]) == "FINISHED"
        await op_message(slack, int(automatic.id or 0), lambda t: "Paused automatically" in t)
        await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 4, first=208)  # nothing reads them while paused
        before = len(slack.ws.ephemerals_for(BOB))
        await slack.driver.click(alert, ids.SLI_FLINK_RESUME, user=BOB)
        refused = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(BOB)[before:] or None, timeout=60)
        assert "Only oncall" in refused[0].text and "nothing was planned" in refused[0].text
        before = len(slack.ws.ephemerals_for(ALICE))
        await slack.driver.click(alert, ids.SLI_FLINK_PAUSE, user=ALICE)
        told = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(ALICE)[before:] or None, timeout=60)
        assert "nothing to pause" in told[0].text  # once is enough
        before = len(slack.ws.ephemerals_for(ALICE))
        await slack.driver.click(alert, ids.SLI_FLINK_RESUME, user=ALICE)
        told = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(ALICE)[before:] or None, timeout=60)
        assert "Resume plan #" in told[0].text
        resume = await latest(slack)
        message = await op_message(slack, int(resume.id or 0), lambda t: "its last pause" in t)
        assert "is running" in await clicked(slack, message, ids.OPS_CONFIRM, ALICE)
        await op_message(slack, int(resume.id or 0), lambda t: "done" in t)
        jobs.append((await slack.bot.ops.get(int(resume.id or 0))).progress["new_job"])
        assert await until(counted(53))  # what came while it was paused, once
    finally:
        for jid in jobs:
            if await rest.state(jid) == "RUNNING":
                await rest.cancel(jid)


async def test_pause_and_resume_from_the_terminal_lose_and_double_nothing_and_a_pause_killed_midway_finishes(
        migrated_url: str, kafka_bootstrap: str, flink_rest_url: str, tmp_path: Path) -> None:
    job = Counting.new(kafka_bootstrap, flink_rest_url)
    name, group, orders, counts, counted, running = job.name, job.group, job.orders, job.counts, job.counted, job.running
    await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 200)
    bot, env = await asyncio.to_thread(terminal, job, migrated_url, tmp_path)
    await job.start()
    try:
        assert await until(counted(50)) and await until(job.committed(200))
        planned = await asyncio.to_thread(bot, "flink", "pause", name)
        assert planned.returncode == 0 and "dry-run" in planned.stdout and len(await running()) == 1
        away = await asyncio.to_thread(bot, "flink", "pause", name, "--yes", FLINK_REST_URL="http://127.0.0.1:9")
        assert away.returncode == 1 and "Flink did not answer" in away.stderr and len(await running()) == 1
        unknown = await asyncio.to_thread(bot, "flink", "pause", "nope", "--yes")
        assert unknown.returncode == 1 and "no catalog job 'nope' runs on Flink" in unknown.stderr

        paused = await asyncio.to_thread(bot, "flink", "pause", name, "--yes", "--format", "json")
        assert paused.returncode == 0, paused.stderr
        outcome = json.loads(paused.stdout)
        assert outcome["state"] == "applied" and savepoint_on_disk(outcome["savepoint"]) and await running() == []
        await asyncio.to_thread(produce_orders, kafka_bootstrap, orders, 100, first=200)  # nothing reads them while paused
        await asyncio.sleep(3)
        assert sum(committed(kafka_bootstrap, group, orders).values()) == 200 and latest_counts(kafka_bootstrap, counts)["c0"] == 50

        resumed = await asyncio.to_thread(bot, "flink", "resume", name, "--sql", str(tmp_path / "job.sql"), "--yes", "--format", "json")
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["state"] == "done" and json.loads(resumed.stdout)["savepoint"] == outcome["savepoint"]
        assert await until(counted(75))  # the 100 that came meanwhile, once each; the 200 before not again
        again = await asyncio.to_thread(bot, "flink", "resume", name, "--sql", str(tmp_path / "job.sql"), "--yes")
        assert again.returncode == 1 and "already runs on Flink" in again.stderr and len(await running()) == 1

        # A pause whose bot is killed once it has asked Flink: the next run takes the savepoint Flink took, and says so
        process = subprocess.Popen([sys.executable, "-m", "bot", "flink", "pause", name, "--yes"], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)

        async def stopping() -> bool | None:
            return (await running()) == [] or None

        assert await until(stopping)
        process.kill()
        process.wait()
        finished = await asyncio.to_thread(bot, "flink", "pause", name, "--yes", "--format", "json")
        assert finished.returncode == 0, finished.stderr + finished.stdout
        assert "resuming it" in finished.stderr and json.loads(finished.stdout)["state"] == "applied"
        assert savepoint_on_disk(json.loads(finished.stdout)["savepoint"])

        # Resumed, then cancelled by hand (no savepoint): the old pause's savepoint is older state than the job had, so a
        # resume without --savepoint is refused rather than re-reading (and counting twice) what came since
        again = await asyncio.to_thread(bot, "flink", "resume", name, "--sql", str(tmp_path / "job.sql"), "--yes")
        assert again.returncode == 0, again.stderr
        await job.cancel()
        stale = await asyncio.to_thread(bot, "flink", "resume", name, "--sql", str(tmp_path / "job.sql"), "--yes")
        assert stale.returncode == 1 and "no savepoint of" in stale.stderr and "--savepoint PATH" in stale.stderr
        assert await running() == []
    finally:
        await job.cancel()


async def test_slis_read_from_flink_itself_a_restart_loop_pages_with_its_exception_and_checkpoints_are_judged(
        slack: SlackHarness, migrated_url: str, kafka_bootstrap: str, flink_rest_url: str) -> None:
    job = Counting.new(kafka_bootstrap, flink_rest_url)
    broken = Counting(kafka_bootstrap, job.rest, f"no-such-topic-{uuid.uuid4().hex[:6]}", job.counts, f"broken-{uuid.uuid4().hex[:6]}",
                      job.group + "-b")  # its source topic does not exist: it fails and restarts, again and again
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, FLINK_REST_URL=flink_rest_url, SLI_POLL_SECONDS="600"))
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    usergroup = next(g["id"] for g in slack.ws.usergroups.values() if g["handle"] == "orders-team")
    data = {"teams": {"orders-team": {"usergroup": usergroup, "members": [ALICE], "oncall": [ALICE], "channel": "#orders-pipeline"}},
            "jobs": [{"name": j.name, "owner": "orders-team", "flink": "2.3.0"} for j in (job, broken)],
            "pipelines": [{"name": f"p-{j.name}", "owner": "orders-team", "channel": "#orders-pipeline", "jobs": [j.name],
                           "checkpoint_interval": "1s", "slis": {"checkpoint_duration": {"warn": 0.0001, "for": "0s"}}} for j in (job, broken)]}
    parsed, problems = read_catalog(data, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    await asyncio.to_thread(produce_orders, kafka_bootstrap, job.orders, 20)
    await job.start()
    await broken.start()
    try:
        def alert(title: str, pipeline: str) -> Any:
            return next((m for m in slack.ws.channel_messages("orders-pipeline") if any(b.get("block_id", "").startswith("sli:") for b in m.blocks)
                         and title in as_text(m.text, m.blocks) and pipeline in as_text(m.text, m.blocks)), None)

        async def paged() -> Any:
            await slack.bot.poll_flink()  # what the scheduler does every SLI_POLL_SECONDS
            await slack.bot.idle()
            found = alert("Job restarts", f"p-{broken.name}")
            return found if found is not None and "PAGE" in as_text(found.text, found.blocks) else None

        loop = await until(paged, timeout=180)
        assert loop, "no page for a job restarting again and again"
        text = as_text(loop.text, loop.blocks)
        assert "UnknownTopicOrPartition" in text or broken.orders in text  # the exception, as Flink gives it
        assert f"Pause {broken.name}" in text  # its runbook: pause it rather than let it cycle

        slow = alert("Checkpoint duration", f"p-{job.name}")  # every checkpoint is slower than the (absurd) threshold
        assert slow is not None and "WARN" in as_text(slow.text, slow.blocks)
        assert alert("Job restarts", f"p-{job.name}") is None  # the healthy job restarts not
        async def measured() -> dict[str, Any] | None:
            await slack.bot.poll_flink()
            rows = {row["sli"]: row for row in await slack.bot.sli.status(f"p-{job.name}")}
            return rows if "backpressure" in rows and "pending_records" in rows else None  # Flink samples backpressure when first asked

        rows = await until(measured, timeout=60)
        assert rows and rows["restarts"]["value"] == 0 and rows["checkpoint_duration"]["value"] is not None
        assert rows["backpressure"]["value"] == 0 and rows["pending_records"]["value"] == 0  # it has read all 20 and idles
        assert rows["checkpoint_failures"]["value"] == 0
    finally:
        await job.cancel()
        for jid in [j["jid"] for j in (await job.rest.get("/jobs/overview"))["jobs"] if j["name"] == broken.name
                    and j["state"] not in ("FINISHED", "CANCELED", "FAILED")]:
            await job.rest.cancel(jid)


async def test_a_source_reading_two_topics_is_backfilled_whole_or_refused_before_the_job_is_touched(
        migrated_url: str, kafka_bootstrap: str, flink_rest_url: str, tmp_path: Path) -> None:
    """A table of the Kafka connector may read several topics ('topic' = 'a;b'). Its source's state goes as one, and Flink's Kafka
    source takes offsets per partition only for a table of one topic: a backfill of one of them, or by offsets, is refused while
    the job runs on; both together to the earliest offset re-read both."""
    job = Counting.new(kafka_bootstrap, flink_rest_url)
    payments = new_topic(AdminClient({"bootstrap.servers": kafka_bootstrap}), "payments")
    job.orders = f"{job.orders};{payments}"  # the SQL's topic option now names both
    orders = job.orders.split(";")[0]
    for topic in (orders, payments):
        await asyncio.to_thread(produce_orders, kafka_bootstrap, topic, 100)
    bot, _ = terminal(job, migrated_url, tmp_path)
    jid = await job.start()
    try:
        assert await until(job.counted(50))
        assert await until(lambda: asyncio.to_thread(lambda: sum(committed(kafka_bootstrap, job.group, payments).values()) == 100 or None))
        for args, words in (([orders, "--to-earliest"], f"table orders reads {orders}, {payments}, and a backfill drops its source's state "
                                                         f"as a whole: {payments} would start again too. Backfill them together"),
                            ([f"{orders},{payments}", "--shift-by", "-10"], "at a time or at either end, not at offsets per partition")):
            refused = await asyncio.to_thread(bot, "backfill", job.group, *args, "--sql", str(tmp_path / "job.sql"), "--yes")
            assert refused.returncode == 1 and words in refused.stderr, refused.stderr
            assert "Nothing moved" in refused.stderr
        assert await job.running() == [jid]  # never stopped

        applied = await asyncio.to_thread(bot, "backfill", job.group, f"{orders},{payments}", "--to-earliest", "--sql", str(tmp_path / "job.sql"),
                                          "--yes", "--format", "json")
        assert applied.returncode == 0, json.loads(applied.stdout).get("result")
        outcome = json.loads(applied.stdout)
        assert outcome["state"] == "applied" and outcome["plan"]["flink"]["starts"][payments] == {"scan.startup.mode": "earliest-offset"}
        assert await until(job.counted(100))  # both topics read again on top of the kept counts
    finally:
        await job.cancel()
