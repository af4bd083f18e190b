"""The Flink release gate against Flink's own planner (the runtime scripts/flink.sh installs): a valid job passes;
each kind of bad release is blocked by the right check, with the position Flink gives; state schemas follow the
last passed release; the planner stays warm and comes back when killed; bad input is refused (exit 2)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.domain.avro.parse import parse
from bot.domain.flink.checks import Report, read_planner
from bot.domain.flink.statements import split
from bot.domain.lineage.catalog import read_catalog
from bot.flink.planner import Planner
from tests.conftest import API_TOKEN, SlackHarness
from tests.test_proposals_slack import ALICE, BOB

pytestmark = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)  # the planner is the point: one database

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "order_id", "type": "string"},
    {"name": "customer_id", "type": "long"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "shipping", "type": {"type": "record", "name": "Address", "fields": [
        {"name": "country", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": None}]}},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
KAFKA = ("'connector' = 'kafka', 'properties.bootstrap.servers' = 'kafka:9092', 'properties.group.id' = 'enrich', "
         "'scan.startup.mode' = 'earliest-offset', 'format' = 'avro-confluent', 'avro-confluent.url' = 'http://registry:8081'")
SOURCE = f"""CREATE TABLE orders (
  order_id STRING NOT NULL,
  customer_id BIGINT NOT NULL,
  price DECIMAL(10, 2) NOT NULL,
  shipping ROW<country STRING NOT NULL, zip STRING> NOT NULL,
  ts TIMESTAMP(3) NOT NULL{{extra}}
) WITH ({KAFKA}, 'topic' = 'orders');
"""
SINK = f"""CREATE TABLE dwd_orders (order_id STRING, country STRING, total DECIMAL({{precision}}, 2)) WITH ({KAFKA}, 'topic' = '{{topic}}');
"""
INSERT = "INSERT INTO dwd_orders\nSELECT {select}\nFROM orders;\n"
GOOD = "order_id, shipping.country AS country, price AS total"
SEEN = {"type": "record", "name": "Seen", "fields": [{"name": "count", "type": "long"}]}


def job_sql(select: str = GOOD, *, extra: str = "", precision: int = 10, topic: str = "dwd_orders", tail: str = "") -> str:
    return "-- enrich-orders: orders joined with nothing, flattened\n" + SOURCE.format(extra=extra) + SINK.format(precision=precision, topic=topic) \
        + INSERT.format(select=select) + tail


async def setup(slack: SlackHarness, flink: str | None = None) -> None:
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    catalog: dict[str, Any] = {
        "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE]},
                  "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB], "oncall": [BOB], "channel": "#orders-pipeline"}},
        "subjects": {"orders-value": {"owner": "orders-team"}, "refunds-value": {"owner": "orders-team"}},
        "datasets": [{"name": "dwd_orders", "namespace": "kafka://kafka:9092", "owner": "analytics-team", "fields": ["order_id", "country", "total"]},
                     {"name": "customers", "namespace": "postgres://crm:5432", "owner": "orders-team", "fields": ["customer_id", "segment"]},
                     {"name": "order_totals", "namespace": "postgres://dw:5432", "owner": "analytics-team", "fields": ["segment", "country", "total"]}],
        "jobs": [{"name": "enrich-orders", "owner": "analytics-team", "inputs": ["orders-value"], "outputs": ["dwd_orders"],
                  **({"flink": flink} if flink else {})}],
    }
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    await slack.bot.registry.record("orders-value", parse(ORDER))


async def gate(slack: SlackHarness, sql: str, state: dict[str, Any] | None = None, job: str = "enrich-orders") -> tuple[int, Any]:
    body = {"sql": sql, "state": state or {}, "author": BOB}
    async with aiohttp.ClientSession() as http, http.post(f"{slack.bot.url}/api/v1/jobs/{job}/check", data=json.dumps(body),
                                                          headers={"Authorization": f"Bearer {API_TOKEN}"}) as response:
        return response.status, await response.json()


def blocked(answer: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The failing checks and their error findings."""
    assert answer["verdict"] == "blocked", answer
    return {c["check"]: [f for f in c["findings"] if f["level"] == "error"] for c in answer["checks"] if not c["ok"]}


async def test_a_valid_job_passes_and_each_bad_release_is_blocked_by_the_right_check(slack: SlackHarness) -> None:
    await setup(slack)
    status, answer = await gate(slack, job_sql())
    assert status == 200 and answer["verdict"] == "pass", answer
    assert answer["flink"] == "2.3.0" and [c["check"] for c in answer["checks"]] == ["source_schema", "sql", "sink", "state", "lineage"]

    missing = blocked((await gate(slack, job_sql("order_idx, shipping.country AS country, price AS total")))[1])
    [finding] = missing["sql"]
    assert "order_idx" in finding["message"] and finding["column"] == "order_idx"
    assert (finding["line"], finding["column_number"]) == (11, 8)  # the SELECT's line in the file, the column Flink gives

    nested = blocked((await gate(slack, job_sql("order_id, shipping.countryx AS country, price AS total")))[1])
    assert "shipping.countryx" in nested["sql"][0]["message"] and nested["sql"][0]["line"] == 11

    into_sink = blocked((await gate(slack, job_sql("order_id, customer_id, price AS total")))[1])
    assert list(into_sink) == ["sink"] and into_sink["sink"][0]["column"] == "country" and into_sink["sink"][0]["table"] == "dwd_orders"

    count = blocked((await gate(slack, job_sql("order_id, price AS total")))[1])
    assert "Different number of columns" in count["sink"][0]["message"]

    swapped = blocked((await gate(slack, job_sql("shipping.country AS country, order_id, price AS total")))[1])
    assert list(swapped) == ["sink"] and {f["column"] for f in swapped["sink"]} == {"order_id", "country"}
    assert "by position" in swapped["sink"][0]["message"]

    narrowed = blocked((await gate(slack, job_sql("order_id, shipping.country AS country, price * 100 AS total")))[1])
    assert list(narrowed) == ["sink"] and narrowed["sink"][0]["column"] == "total" and "DECIMAL" in narrowed["sink"][0]["message"]

    lacking = blocked((await gate(slack, job_sql(extra=",\n  discount DOUBLE")))[1])
    assert list(lacking) == ["source_schema"] and lacking["source_schema"][0]["column"] == "discount"
    assert lacking["source_schema"][0]["table"] == "orders" and lacking["source_schema"][0]["line"] == 2

    refunds = f"CREATE TABLE refunds (order_id STRING) WITH ({KAFKA}, 'topic' = 'refunds');\n" \
              "INSERT INTO dwd_orders SELECT order_id, CAST(NULL AS STRING), CAST(0 AS DECIMAL(10, 2)) FROM refunds;\n"
    unapproved = blocked((await gate(slack, job_sql(tail=refunds)))[1])
    assert list(unapproved) == ["source_schema"] and "refunds-value" in unapproved["source_schema"][0]["message"]

    unknown_sink = blocked((await gate(slack, job_sql(topic="dwd_orders_tmp")))[1])
    assert list(unknown_sink) == ["lineage"] and "dwd_orders_tmp" in unknown_sink["lineage"][0]["message"]

    unregistered = blocked((await gate(slack, job_sql(), job="nobody-knows"))[1])
    assert list(unregistered) == ["lineage"] and "not registered" in unregistered["lineage"][0]["message"]
    assert slack.bot.planner.started == 1  # eleven checks, one warm worker


JDBC_JOB = SOURCE.format(extra=",\n  proc AS PROCTIME()") + """CREATE TABLE customers (customer_id BIGINT, segment STRING, PRIMARY KEY (customer_id) NOT ENFORCED)
WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://crm:5432/crm', 'table-name' = 'customers');
CREATE TABLE order_totals (country STRING, segment {segment}, total DECIMAL(38, 2), PRIMARY KEY (country) NOT ENFORCED)
WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://dw:5432/dw', 'table-name' = 'order_totals', 'sink.buffer-flush.interval' = '1s');
INSERT INTO order_totals
SELECT o.shipping.country AS country, MAX(c.segment) AS segment, SUM(o.price) AS total
FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF o.proc AS c ON o.customer_id = c.customer_id
GROUP BY o.shipping.country;
"""


async def test_a_sink_the_checker_has_no_connector_for_is_checked_by_its_types(slack: SlackHarness) -> None:
    """JDBC (a dimension table joined by lookup, an upserting sink of an aggregate) is not in the checker's runtime:
    the job passes with a warning per table, and a type that cannot go into the JDBC sink still blocks, naming it."""
    await setup(slack)
    status, answer = await gate(slack, JDBC_JOB.format(segment="STRING"))
    assert status == 200 and answer["verdict"] == "pass", json.dumps(answer["checks"], indent=1)
    warnings = [f for c in answer["checks"] for f in c["findings"] if f["level"] == "warning"]
    assert sorted((f["table"] or "", f["line"], f["message"]) for f in warnings) == [
        (table, line, "connector 'jdbc' is not installed in the checker: its options were not checked (scripts/flink.sh install --connector jdbc)")
        for table, line in (("customers", 9), ("order_totals", 11))]
    graph = await slack.bot.lineage.graph()
    [job] = [j for j in graph.jobs.values() if j.id.name == "enrich-orders"]
    assert "Flink release #1" in job.learned  # the plan compiled, the dimension table's lookup followed: its column lineage learned
    for dataset, field, written in (("customers", "segment", "order_totals.segment"), ("orders-value", "price", "order_totals.total")):
        reached = {f"{f.dataset}.{f.field}" for f in graph.impact(graph.find_dataset(dataset), [field]).impacted}
        assert {r for r in reached if r.startswith("order_totals.")} == {written}  # (dwd_orders, declared, stays a black box)

    mismatch = blocked((await gate(slack, JDBC_JOB.format(segment="INT")))[1])
    assert list(mismatch) == ["sink"]
    [finding] = mismatch["sink"]
    assert finding["table"] == "order_totals" and finding["column"] == "segment" and finding["line"] == 13


async def test_a_connector_installed_into_the_checker_has_its_options_checked(tmp_path: Path, database_url: str) -> None:
    """`scripts/flink.sh install --connector jdbc` (the official jars, from Maven Central) into a runtime: the JDBC
    tables are checked by the real connector, whose missing option then blocks; a name it does not know is refused."""
    real = Path(os.environ.get("CHANGEOPS_FLINK_ROOT", Path.home() / ".cache/changeops/flink")) / "flink-2.3.0"
    home = tmp_path / "flink-2.3.0"
    home.mkdir()
    for part in ("venv", "jars", "gate", "tools", ".complete"):  # the installed runtime, shared; its connectors its own
        (home / part).symlink_to(real / part)
    script = Path(__file__).resolve().parents[1] / "scripts" / "flink.sh"
    env = {**os.environ, "CHANGEOPS_FLINK_ROOT": str(tmp_path)}
    planner = Planner(str(tmp_path))

    async def check(sql: str) -> Report:
        statements, report = split(sql), Report("enrich-orders")
        read_planner(report, statements, await planner.check("2.3.0", [{"sql": s.sql, "kind": s.kind} for s in statements]))
        return report

    def unchecked(report: Report) -> list[str]:
        return sorted(f.table or "" for f in report.checks["sql"] if "not installed in the checker" in f.message)

    no_url = JDBC_JOB.format(segment="STRING").replace("'url' = 'jdbc:postgresql://dw:5432/dw', ", "")
    try:
        before = await check(no_url)
        assert before.passed and unchecked(before) == ["customers", "order_totals"]  # a warm worker without the connector
        unknown = await asyncio.to_thread(subprocess.run, ["bash", str(script), "install", "--connector", "nosuch"], env=env, capture_output=True, text=True)
        assert unknown.returncode == 2 and "unknown connector 'nosuch'" in unknown.stderr and not (home / "connectors").exists()
        installed = await asyncio.to_thread(subprocess.run, ["bash", str(script), "install", "--connector", "jdbc"], env=env, capture_output=True, text=True)
        assert installed.returncode == 0, installed.stderr
        assert any(j.name.startswith("flink-connector-jdbc-core-") for j in (home / "connectors" / "jdbc").glob("*.jar"))

        good = await check(JDBC_JOB.format(segment="STRING"))  # the worker restarted with the connector's jars
        assert good.passed and unchecked(good) == [] and planner.started == 2, good.as_json()
        refused = await check(no_url)
        assert not refused.passed and unchecked(refused) == []
        [missing] = refused.checks["sql"]
        assert missing.message.startswith("Unable to create a sink for writing table 'order_totals': ") and missing.table == "order_totals"
        assert "Missing required options are:  url" in missing.message, missing.message
    finally:
        await planner.close()


async def test_the_same_release_checked_again_is_answered_the_same_and_recorded_once(slack: SlackHarness) -> None:
    await setup(slack)
    first = (await gate(slack, job_sql()))[1]
    again = (await gate(slack, job_sql()))[1]  # a CI retry of the same release
    assert again["verdict"] == first["verdict"] == "pass" and again["release"] == first["release"] and again["repeated"] is True
    await slack.bot.idle()
    entries = [e for e in await slack.bot.calendar.listing(slack.clock.now - timedelta(days=1), slack.clock.now + timedelta(days=1))
               if e["kind"] == "release"]
    assert len(entries) == 1
    assert len([m for m in slack.ws.channel_messages(slack.ws.open_dm(BOB)) if "Flink release of" in m.text]) == 1
    changed = (await gate(slack, job_sql("order_id, shipping.country AS country, price AS total") + "\n-- reviewed"))[1]
    assert changed["release"] != first["release"] and "repeated" not in changed  # another text: another release


async def test_state_schemas_follow_the_last_passed_release(slack: SlackHarness) -> None:
    await setup(slack)
    added_with_default = {**SEEN, "fields": [*SEEN["fields"], {"name": "last", "type": ["null", "long"], "default": None}]}
    added_without = {**SEEN, "fields": [*SEEN["fields"], {"name": "first", "type": "long"}]}

    async def reached(field: str) -> list[str]:
        graph = await slack.bot.lineage.graph()
        return sorted(f"{f.dataset}.{f.field}" for f in graph.impact(graph.find_dataset("orders-value"), [field]).impacted)

    assert await reached("customer_id") == ["dwd_orders.country", "dwd_orders.order_id", "dwd_orders.total"]  # declared without mappings: a black box
    assert (await gate(slack, job_sql(), {"seen": SEEN}))[1]["verdict"] == "pass"
    assert await reached("customer_id") == []  # the passed release's compiled plan: the job does not read it
    assert await reached("shipping.country") == ["dwd_orders.country"] and await reached("price") == ["dwd_orders.total"]
    [job] = [j for j in (await slack.bot.lineage.graph()).jobs.values() if j.id.name == "enrich-orders"]
    assert not job.black_box and "Flink release #1" in job.learned
    refused = blocked((await gate(slack, job_sql(), {"seen": added_without}))[1])
    assert list(refused) == ["state"] and "restore from the savepoint will fail" in refused["state"][0]["message"]
    assert (await gate(slack, job_sql(), {"seen": added_with_default}))[1]["verdict"] == "pass"
    removed = (await gate(slack, job_sql(), {"seen": SEEN}))[1]  # the field added just before is dropped: readable, its values lost
    assert removed["verdict"] == "pass"
    [warning] = next(c for c in removed["checks"] if c["check"] == "state")["findings"]
    assert warning["level"] == "warning" and "dropped on restore" in warning["message"]
    gone = blocked((await gate(slack, job_sql(), {}))[1])
    assert "state 'seen'" in gone["state"][0]["message"]
    async with slack.bot.db.session() as session:
        from sqlmodel import select

        from bot.store.models import AuditEntry, CalendarEntry
        actions = [a.action for a in (await session.exec(select(AuditEntry).where(AuditEntry.target_kind == "job"))).all()]
        releases = [e for e in (await session.exec(select(CalendarEntry))).all() if e.kind == "release"]
    assert actions == ["release passed", "release blocked", "release passed", "release passed", "release blocked"]
    assert len(releases) == 3 and all(e.owner == "analytics-team" for e in releases)

    # the developer's DM and the team's channel: each verdict once, the blocked ones with their reasons
    def reports(channel: str) -> list[str]:
        return [m.text for m in slack.ws.channel_messages(channel) if "Flink release of" in m.text]

    await slack.bot.idle()
    for channel in (slack.ws.open_dm(BOB), slack.ws.channel_id("#orders-pipeline") or ""):
        await slack.ws.wait_for(lambda channel=channel: len(reports(channel)) == 5)
        shown = reports(channel)
        assert ["blocked" in text for text in shown] == [False, True, False, False, True]
        assert "restore from the savepoint will fail" in shown[1] and "dropped on restore" in shown[3]
    figures = (await slack.bot.health.compute(slack.clock().date().replace(day=1)))["teams"]["analytics-team"]
    assert (figures["releases_passed"], figures["releases_blocked"]) == (3, {"state": 2})


async def test_a_planner_killed_mid_check_is_restarted_and_the_check_answered(slack: SlackHarness) -> None:
    await setup(slack)
    assert (await gate(slack, job_sql()))[1]["verdict"] == "pass"
    worker = slack.bot.planner._workers["2.3.0"]
    lock = slack.bot.planner._locks["2.3.0"]
    asked = asyncio.create_task(gate(slack, job_sql("order_idx, shipping.country AS country, price AS total")))
    while not lock.locked():
        await asyncio.sleep(0.005)
    worker.process.kill()
    status, answer = await asked
    assert status == 200 and "sql" in blocked(answer)
    assert slack.bot.planner.started == 2


async def test_bad_input_is_refused_and_the_cli_exits_by_verdict(slack: SlackHarness, tmp_path: Path) -> None:
    await setup(slack)
    status, answer = await gate(slack, job_sql("order_id,, price FROM"))
    assert status == 400 and "does not parse" in answer["error"] and "line 11" in answer["error"]
    status, answer = await gate(slack, SOURCE.format(extra=""))
    assert status == 400 and "no INSERT" in answer["error"]
    status, answer = await gate(slack, job_sql(), {"seen": {"type": "record", "name": "Seen"}})
    assert status == 400 and "state seen" in answer["error"]

    env = {**os.environ, "CHANGEOPS_API_TOKEN": API_TOKEN, "CHANGEOPS_URL": slack.bot.url}
    (tmp_path / "good.sql").write_text(job_sql())
    (tmp_path / "bad.sql").write_text(job_sql("order_idx, shipping.country AS country, price AS total"))
    (tmp_path / "seen.avsc").write_text(json.dumps(SEEN))
    (tmp_path / "not-avro.avsc").write_text("{not json")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot", "gate", "job", *args], env=env, capture_output=True, text=True, timeout=600)

    passed = await asyncio.to_thread(cli, "enrich-orders", "--sql", str(tmp_path / "good.sql"), "--state", f"seen={tmp_path / 'seen.avsc'}")
    assert passed.returncode == 0 and "release may ship" in passed.stdout, passed.stderr
    refused = await asyncio.to_thread(cli, "enrich-orders", "--sql", str(tmp_path / "bad.sql"))
    assert refused.returncode == 1 and "BLOCKED sql" in refused.stdout and "bad.sql:line 11, column 8" in refused.stdout
    as_json = await asyncio.to_thread(cli, "enrich-orders", "--sql", str(tmp_path / "bad.sql"), "--format", "json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["verdict"] == "blocked"
    not_avro = await asyncio.to_thread(cli, "enrich-orders", "--sql", str(tmp_path / "good.sql"), "--state", f"seen={tmp_path / 'not-avro.avsc'}")
    assert not_avro.returncode == 2 and "state seen" in not_avro.stderr
    no_file = await asyncio.to_thread(cli, "enrich-orders", "--sql", str(tmp_path / "missing.sql"))
    assert no_file.returncode == 2 and "cannot read" in no_file.stderr


async def test_without_the_planner_the_gate_says_how_to_install_it(slack: SlackHarness) -> None:
    await setup(slack, flink="1.20.3")  # the catalog pins the job to a Flink this machine has no planner for
    status, answer = await gate(slack, job_sql())
    assert status == 503 and "the Flink 1.20.3 planner is not installed here (installed: 2.3.0)" in answer["error"]
    assert "scripts/flink.sh install 1.20.3" in answer["error"]
    async with slack.bot.db.session() as session:
        from sqlmodel import select

        from bot.store.models import FlinkRelease
        assert (await session.exec(select(FlinkRelease))).all() == []  # nothing checked, nothing recorded


async def test_a_report_slack_refuses_arrives_once_when_slack_answers_again(slack: SlackHarness) -> None:
    await setup(slack)
    slack.ws.outage = 500
    assert (await gate(slack, job_sql("order_idx, shipping.country AS country, price AS total")))[1]["verdict"] == "blocked"
    await asyncio.sleep(1.5)  # the outbox tries while Slack fails
    assert not [m for m in slack.ws.channel_messages(slack.ws.open_dm(BOB)) if "Flink release of" in m.text]
    slack.ws.outage = 429
    await asyncio.sleep(1)
    slack.ws.outage = None
    for channel in (slack.ws.open_dm(BOB), slack.ws.channel_id("#orders-pipeline") or ""):
        await slack.ws.wait_for(lambda channel=channel: any("Flink release of" in m.text for m in slack.ws.channel_messages(channel)))
    await slack.bot.idle()
    for channel in (slack.ws.open_dm(BOB), slack.ws.channel_id("#orders-pipeline") or ""):
        [report] = [m.text for m in slack.ws.channel_messages(channel) if "Flink release of" in m.text]
        assert "blocked" in report and "order_idx" in report


CLICK = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Click", "type": "object", "required": ["page", "seen_at"],
         "properties": {"page": {"type": "object", "required": ["url"], "properties": {"url": {"type": "string"}, "referrer": {"type": "string"}}},
                        "seen_at": {"type": "string", "format": "date-time"}, "dwell": {"type": "number"},
                        "clicks": {"type": "integer", "minimum": 0, "maximum": 1000000}}}
ORDER_PROTO = 'syntax = "proto3";\npackage shop;\nmessage Order {\n  string order_id = 1;\n  int64 customer_id = 2;\n  repeated string tags = 3;\n}\n'
FORMAT_SINK = ("CREATE TABLE dwd_orders (order_id STRING, country STRING, total DECIMAL(10, 2)) WITH ('connector' = 'kafka', "
               "'properties.bootstrap.servers' = 'kafka:9092', 'format' = 'json', 'topic' = 'dwd_orders');\n")


def format_job(source: str, select: str) -> str:
    return source + FORMAT_SINK + f"INSERT INTO dwd_orders SELECT {select};\n"


async def test_json_and_protobuf_sources_are_checked_against_their_subjects_as_flink_reads_them(slack: SlackHarness) -> None:
    """Flink's json format reads a JSON Schema subject's documents into the table's columns, its protobuf format a Protobuf
    subject's messages: each column is judged the way that format converts, and a table reading another format than the
    subject holds is blocked."""
    await setup(slack)
    for subject, kind in (("clicks-value", "JSON"), ("orders-pb-value", "PROTOBUF")):
        parsed, problems = read_catalog({"teams": {"orders-team": {"members": [ALICE]}, "analytics-team": {"members": [BOB]}},
                                         "subjects": {"orders-value": {"owner": "orders-team"}, subject: {"owner": "orders-team", "schema_type": kind}},
                                         "datasets": [{"name": "dwd_orders", "namespace": "kafka://kafka:9092", "owner": "analytics-team"}],
                                         "jobs": [{"name": "enrich-orders", "owner": "analytics-team", "inputs": [subject], "outputs": ["dwd_orders"]}]},
                                        lambda _: "")
        assert problems == []
        await slack.bot.lineage.load_catalog(parsed)
    view = await slack.bot.proposals.propose("clicks-value", json.dumps(CLICK), ALICE)
    assert view.proposal.state == "approved"
    view = await slack.bot.proposals.propose("orders-pb-value", ORDER_PROTO, ALICE)
    assert view.proposal.state == "approved"
    kafka = "'connector' = 'kafka', 'properties.bootstrap.servers' = 'kafka:9092', 'properties.group.id' = 'g', 'scan.startup.mode' = 'earliest-offset'"

    def clicks(columns: str, fmt: str = "json") -> str:
        return f"CREATE TABLE clicks ({columns}) WITH ({kafka}, 'topic' = 'clicks', 'format' = '{fmt}');\n"

    good = clicks("page ROW<url STRING NOT NULL, referrer STRING> NOT NULL, seen_at TIMESTAMP_LTZ(3) NOT NULL, dwell DOUBLE, clicks INT")
    status, answer = await gate(slack, format_job(good, "page.url, page.referrer, CAST(dwell AS DECIMAL(10, 2)) FROM clicks"))
    assert status == 200 and [c["findings"] for c in answer["checks"] if c["check"] == "source_schema"] == [[]], answer

    bad = clicks("page ROW<url STRING NOT NULL, referrer STRING NOT NULL> NOT NULL, seen_at DATE, dwell INT, clicks TINYINT, browser STRING")
    findings = blocked((await gate(slack, format_job(bad, "page.url, page.referrer, CAST(dwell AS DECIMAL(10, 2)) FROM clicks")))[1])
    assert sorted((f["column"], f["message"].split(" (subject")[0]) for f in findings["source_schema"]) == [
        ("clicks", "column 'clicks': the approved schema allows integers from 0 to 1000000, beyond TINYINT: larger values overflow"),
        ("dwell", "column 'dwell': the approved schema has numbers with fractions, the column reads INT: Flink's json format truncates them"),
        ("page", "column 'page.referrer': the approved schema allows it to be absent, but the column is STRING NOT NULL: a null fails the job"),
        ("seen_at", "column 'seen_at': the approved schema has a string of format date-time, the column reads DATE: strings that are not a date fail the job")]
    open_ = blocked((await gate(slack, format_job(bad, "page.url, page.referrer, CAST(dwell AS DECIMAL(10, 2)) FROM clicks")))[1])
    assert open_ == findings  # (the same release answered the same)
    status, answer = await gate(slack, format_job(clicks("page ROW<url STRING>, browser STRING"), "page.url, browser, CAST(NULL AS DECIMAL(10, 2)) FROM clicks"))
    warned = [f for c in answer["checks"] for f in c["findings"] if c["check"] == "source_schema"]
    assert answer["verdict"] == "pass" and [(f["level"], f["column"]) for f in warned] == [("warning", "browser")], answer

    wrong_format = blocked((await gate(slack, format_job(clicks("page ROW<url STRING>", "avro-confluent', 'avro-confluent.url' = 'http://r:8081"),
                                                         "page.url, CAST(NULL AS STRING), CAST(NULL AS DECIMAL(10, 2)) FROM clicks")))[1])
    assert "reads 'avro-confluent' (Avro), but subject 'clicks-value' holds JSON Schema schemas" in wrong_format["source_schema"][0]["message"]

    status, answer = await gate(slack, format_job(clicks("page ROW<url STRING>").replace("'topic' = 'clicks'", "'topic' = 'visits'"),
                                                  "page.url, CAST(NULL AS STRING), CAST(NULL AS DECIMAL(10, 2)) FROM clicks"))
    unchecked = [f for c in answer["checks"] for f in c["findings"] if c["check"] == "source_schema"]
    assert [c["ok"] for c in answer["checks"] if c["check"] == "source_schema"] == [True], answer  # json needs no registry: not blocked
    assert [f["level"] for f in unchecked] == ["warning"], answer
    assert "topic 'visits' is read as json, but no subject describes it: its columns are not checked" in unchecked[0]["message"]

    def orders(columns: str) -> str:
        return (f"CREATE TABLE orders_pb ({columns}) WITH ({kafka}, 'topic' = 'orders-pb', 'format' = 'protobuf', "
                "'protobuf.message-class-name' = 'shop.OrderOuterClass$Order');\n")

    status, answer = await gate(slack, format_job(orders("order_id STRING, customer_id BIGINT, tags ARRAY<STRING>"),
                                                  "order_id, CAST(NULL AS STRING), CAST(customer_id AS DECIMAL(10, 2)) FROM orders_pb"))
    assert [f for c in answer["checks"] for f in c["findings"] if c["check"] == "source_schema"] == [], answer
    mismatch = blocked((await gate(slack, format_job(orders("order_id STRING, customer_id INT, tags ARRAY<INT>"),
                                                     "order_id, CAST(NULL AS STRING), CAST(customer_id AS DECIMAL(10, 2)) FROM orders_pb")))[1])
    assert [(f["column"], f["message"].split(" (subject")[0]) for f in mismatch["source_schema"]] == [
        ("customer_id", "column 'customer_id': Flink's protobuf format reads this field as BIGINT, the column is INT: the job fails when it starts"),
        ("tags", "column 'tags[]': Flink's protobuf format reads this field as STRING, the column is INT: the job fails when it starts")]
