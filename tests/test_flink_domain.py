"""The release gate's pure parts: statements and positions, Flink types against Avro, lossy conversions, column
lineage through a compiled plan's joins, aggregates and unions, and the planner's messages read into findings."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bot.domain.avro.parse import parse
from bot.domain.flink.backfill import kafka_tables, restarts
from bot.domain.flink.checks import Report, data_tables, field_lineage, read_planner, registered, schema_sources, states
from bot.domain.flink.plan import lineage
from bot.domain.flink.statements import StatementError, split
from bot.domain.flink.status import FlinkError
from bot.domain.flink.types import from_avro, lossy, parse_type, read_problems

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def test_statements_keep_their_place_through_strings_comments_and_statement_sets() -> None:
    text = ("-- a job; with a comment\nSET 'pipeline.name' = 'a;b';\nCREATE TABLE `t;1` (x STRING) WITH ('connector' = 'datagen');\n"
            "/* block; */ EXECUTE STATEMENT SET BEGIN\n  INSERT INTO s SELECT 'it''s;' FROM `t;1`;\n  INSERT INTO s SELECT x FROM `t;1`;\nEND;\n")
    statements = split(text)
    assert [(s.kind, s.line, s.column) for s in statements] == [("set", 2, 1), ("other", 3, 1), ("insert", 5, 3), ("insert", 6, 3)]
    assert statements[0].key == "pipeline.name"
    assert statements[2].at(1, 22) == (5, 24) and statements[2].at(2, 5) == (6, 5)  # the first line shifts by the indent
    with pytest.raises(StatementError, match="line 2: a string never ends"):
        split("SELECT 1;\nINSERT INTO s SELECT 'oops FROM t")


def test_flink_types_read_as_the_planner_writes_them() -> None:
    row = parse_type("ROW<`country` VARCHAR(2147483647) NOT NULL, `zip` VARCHAR(2147483647) 'postal code'> NOT NULL")
    assert str(row) == "ROW<country STRING NOT NULL, zip STRING> NOT NULL" and row.field("zip") == parse_type("STRING")
    assert str(parse_type("TIMESTAMP(3) WITH LOCAL TIME ZONE")) == "TIMESTAMP_LTZ(3)" == str(parse_type("TIMESTAMP_LTZ(3)"))
    assert str(parse_type("MAP<STRING NOT NULL, ARRAY<DECIMAL(10, 2)>>")) == "MAP<STRING NOT NULL, ARRAY<DECIMAL(10, 2)>>"
    assert parse_type("DECIMAL") == parse_type("DECIMAL(10, 0)") and parse_type("INTEGER") == parse_type("INT")


@pytest.mark.parametrize(("avro", "column", "problem"), [
    ({"type": "long", "logicalType": "timestamp-millis"}, "TIMESTAMP(3) NOT NULL", None),
    ({"type": "long", "logicalType": "timestamp-millis"}, "TIMESTAMP_LTZ(3) NOT NULL", None),
    ({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}, "DECIMAL(10, 2)", None),
    ({"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}, "DECIMAL(12, 4)", "the column reads DECIMAL(12, 4)"),
    ("int", "BIGINT", None),  # Avro promotes int to long
    ("long", "INT", "the approved schema has BIGINT"),
    (["null", "string"], "STRING NOT NULL", "a null fails the job"),
    ({"type": "enum", "name": "E", "symbols": ["A"]}, "STRING NOT NULL", None),
    ({"type": "map", "values": "long"}, "MAP<STRING NOT NULL, BIGINT NOT NULL> NOT NULL", None),
])
def test_columns_read_avro_by_flinks_mapping(avro: Any, column: str, problem: str | None) -> None:
    written = from_avro(parse({"type": "record", "name": "R", "fields": [{"name": "f", "type": avro}]}).root).field("f")
    assert written is not None
    found = read_problems(parse_type(column), written, "f")
    assert (found == []) if problem is None else (problem in found[0][1])


@pytest.mark.parametrize(("source", "target", "loses"), [
    ("DECIMAL(38, 2)", "DECIMAL(10, 2)", "integer digit"), ("DECIMAL(10, 4)", "DECIMAL(12, 2)", "decimal place"),
    ("DOUBLE", "DECIMAL(20, 4)", "floating point"), ("BIGINT", "INT", "overflows"), ("INT", "DECIMAL(5, 0)", "overflows"),
    ("STRING", "STRING NOT NULL", "a null fails"), ("TIMESTAMP(6)", "TIMESTAMP(3)", "sub-second"),
    ("DECIMAL(10, 2)", "DECIMAL(12, 2)", None), ("INT", "BIGINT", None), ("STRING NOT NULL", "STRING", None), ("INT", "DECIMAL(10, 0)", None),
])
def test_lossy_conversions_are_named(source: str, target: str, loses: str | None) -> None:
    found = lossy(parse_type(source), parse_type(target), "c")
    assert (found == []) if loses is None else (loses in found[0][1])


def scan(node_id: int, table: str, columns: list[tuple[str, str]]) -> dict[str, Any]:
    return {"id": node_id, "type": "stream-exec-table-source-scan_2",
            "scanTableSource": {"table": {"identifier": f"`default_catalog`.`db`.`{table}`",
                                          "resolvedTable": {"schema": {"columns": [{"name": n, "dataType": t} for n, t in columns]}}}},
            "outputType": "ROW<" + ", ".join(f"`{n}` {t}" for n, t in columns) + ">"}


def ref(index: int, type_: str = "BIGINT") -> dict[str, Any]:
    return {"kind": "INPUT_REF", "inputIndex": index, "type": type_}


def test_column_lineage_through_a_join_an_aggregate_and_a_union() -> None:
    plan = {"nodes": [
        scan(1, "orders", [("id", "BIGINT"), ("customer", "BIGINT"), ("price", "DECIMAL(10, 2)")]),
        scan(2, "customers", [("cid", "BIGINT"), ("country", "VARCHAR(2147483647)")]),
        {"id": 3, "type": "stream-exec-join_1", "outputType": "ROW<`id` BIGINT, `customer` BIGINT, `price` DECIMAL(10, 2), `cid` BIGINT, "
                                                             "`country` VARCHAR(2147483647)>"},
        {"id": 4, "type": "stream-exec-group-aggregate_1", "grouping": [4], "aggCalls": [{"argList": [2]}],
         "outputType": "ROW<`country` VARCHAR(2147483647), `total` DECIMAL(38, 2)>"},
        scan(5, "archive", [("country", "VARCHAR(2147483647)"), ("total", "DECIMAL(38, 2)")]),
        {"id": 6, "type": "stream-exec-union_1", "outputType": "ROW<`country` VARCHAR(2147483647), `total` DECIMAL(38, 2)>"},
        {"id": 7, "type": "stream-exec-calc_1", "outputType": "ROW<`country` VARCHAR(2147483647), `total` DECIMAL(10, 2)>",
         "projection": [ref(0, "VARCHAR(2147483647)"), {"kind": "CALL", "internalName": "$CAST$1", "operands": [ref(1, "DECIMAL(38, 2)")],
                                                         "type": "DECIMAL(10, 2)"}]},
        {"id": 8, "type": "stream-exec-sink_2", "dynamicTableSink": {"table": {"identifier": "`c`.`db`.`by_country`", "resolvedTable": {
            "schema": {"columns": [{"name": "country", "dataType": "STRING"}, {"name": "revenue", "dataType": "DECIMAL(10, 2)"}]}}}},
         "outputType": "ROW<`country` VARCHAR(2147483647), `total` DECIMAL(10, 2)>"},
    ], "edges": [{"source": 1, "target": 3}, {"source": 2, "target": 3}, {"source": 3, "target": 4}, {"source": 4, "target": 6},
                 {"source": 5, "target": 6}, {"source": 6, "target": 7}, {"source": 7, "target": 8}]}
    found = lineage(plan)
    assert found.sinks == {"by_country": {"country": {("customers", "country"), ("archive", "country")},
                                          "revenue": {("orders", "price"), ("archive", "total")}}}
    assert found.sources == {"orders", "customers", "archive"} and found.coarse == []
    [cast] = found.casts
    assert (str(cast.source), str(cast.target), cast.column) == ("DECIMAL(38, 2)", "DECIMAL(10, 2)", "total")


def test_an_unknown_node_is_taken_conservatively() -> None:
    plan = {"nodes": [scan(1, "t", [("a", "BIGINT"), ("b", "BIGINT")]),
                      {"id": 2, "type": "stream-exec-python-correlate_1", "outputType": "ROW<`a` BIGINT, `b` BIGINT, `x` BIGINT>"},
                      {"id": 3, "type": "stream-exec-sink_2", "dynamicTableSink": {"table": {"identifier": "`s`", "resolvedTable": {
                          "schema": {"columns": [{"name": "x", "dataType": "BIGINT"}]}}}}, "outputType": "ROW<`x` BIGINT>"}],
            "edges": [{"source": 1, "target": 2}, {"source": 2, "target": 3}]}
    found = lineage(plan)
    assert found.sinks["s"]["x"] == {("t", "a"), ("t", "b")} and found.coarse == ["python-correlate"]


def test_planner_messages_become_findings_at_file_positions() -> None:
    statements = split("CREATE TABLE s (a STRING, b STRING) WITH ('connector' = 'blackhole');\n\nINSERT INTO s\nSELECT a, bx FROM t;\n"
                       "INSERT INTO s SELECT a FROM t;\n")
    answer = {"tables": {"s": {"options": {"connector": "blackhole"}, "columns": [
        {"name": "a", "type": "VARCHAR(2147483647)", "kind": "physical"}, {"name": "b", "type": "VARCHAR(2147483647)", "kind": "physical"}]}},
        "results": [{"ok": True},
                    {"ok": False, "error": [["org.apache.flink.table.api.ValidationException",
                                             "SQL validation failed. From line 2, column 11 to line 2, column 12: Column 'bx' not found in any table"]]},
                    {"ok": False, "error": [["org.apache.flink.table.api.ValidationException",
                                             "Column types of query result and sink for 'c.d.s' do not match.\nCause: Different number of columns."
                                             "\n\nQuery schema: [a: STRING]"]]}]}
    report = Report("job")
    read_planner(report, statements, answer)
    [sql] = report.checks["sql"]
    assert (sql.line, sql.column_number, sql.column, sql.table) == (4, 11, "bx", "s")
    [sink] = report.checks["sink"]
    assert "Different number of columns" in sink.message and "Query schema" not in sink.message and sink.line == 5
    assert report.failed() == ["sql", "sink"] and report.as_json()["verdict"] == "blocked"


def test_state_resolution_follows_the_design() -> None:
    old = '{"type": "record", "name": "S", "fields": [{"name": "n", "type": "long"}, {"name": "gone", "type": "string"}]}'
    added = '{"type": "record", "name": "S", "fields": [{"name": "n", "type": "long"}, {"name": "gone", "type": "string"}, {"name": "m", "type": "int"}]}'
    removed = '{"type": "record", "name": "S", "fields": [{"name": "n", "type": "long"}]}'
    report = Report("job")
    states(report, {"s": removed}, {"s": old})
    assert [f.level for f in report.checks["state"]] == ["warning"] and report.passed
    report = Report("job")
    states(report, {"s": added}, {"s": old})
    assert not report.passed and "restore from the savepoint will fail" in report.checks["state"][0].message
    report = Report("job")
    states(report, {}, {"s": old})
    assert not report.passed and "state 's'" in report.checks["state"][0].message
    report = Report("job")
    states(report, {"s": added}, None)  # the first release: nothing to read yet
    assert report.passed and report.checks["state"] == []


def test_a_plan_the_gate_cannot_follow_teaches_no_field_lineage() -> None:
    exact = Report("job")
    exact.lineage = lineage({"nodes": [scan(1, "t", [("a", "BIGINT")]),
                                       {"id": 2, "type": "stream-exec-sink_2", "dynamicTableSink": {"table": {"identifier": "`s`", "resolvedTable": {
                                           "schema": {"columns": [{"name": "b", "dataType": "BIGINT"}]}}}}, "outputType": "ROW<`a` BIGINT>"}],
                             "edges": [{"source": 1, "target": 2}]})
    datasets = {"t": ("kafka://k", "t"), "s": ("iceberg://lake", "s")}
    assert field_lineage(exact, datasets) == [["kafka://k", "t", "a", "iceberg://lake", "s", "b"]]
    looked_up = Report("job")
    looked_up.lineage = lineage({"nodes": [scan(1, "t", [("a", "BIGINT")]),
                                           {"id": 2, "type": "stream-exec-lookup-join_1", "outputType": "ROW<`a` BIGINT, `name` STRING>"}],
                                 "edges": [{"source": 1, "target": 2}]})
    assert looked_up.lineage.coarse == ["lookup-join"] and field_lineage(looked_up, datasets) == []
    registered(looked_up, ["team"], {})
    [warning] = looked_up.checks["lineage"]
    assert warning.level == "warning" and "lookup-join" in warning.message and looked_up.passed


def test_an_insert_the_planner_refused_still_has_its_tables_checked() -> None:
    statements = split("CREATE TABLE orders (id STRING) WITH ('connector' = 'kafka');\nCREATE TABLE out (id STRING) WITH ('connector' = 'kafka');\n"
                       "CREATE TABLE unused (id STRING) WITH ('connector' = 'kafka');\nINSERT INTO out SELECT idx FROM orders;\n")
    kafka = {"connector": "kafka", "format": "avro-confluent"}
    answer = {"tables": {name: {"options": {**kafka, "topic": name}, "columns": [{"name": "id", "type": "VARCHAR(2147483647)", "kind": "physical"}]}
                         for name in ("orders", "out", "unused")},
              "results": [{"ok": True}, {"ok": True}, {"ok": True},
                          {"ok": False, "error": [["x.ValidationException", "From line 1, column 24 to line 1, column 26: Column 'idx' not found"]]}]}
    report = Report("job")
    read_planner(report, statements, answer)
    assert schema_sources(report) == ["orders"] and data_tables(report) == ["orders", "out"]  # "unused" is named by no INSERT


def kafka(topic: str = "", pattern: str = "") -> dict[str, Any]:
    return {"options": {"connector": "kafka", **({"topic": topic} if topic else {}), **({"topic-pattern": pattern} if pattern else {})}}


def moved(topic: str, targets: dict[int, int]) -> list[dict[str, Any]]:
    return [{"topic": topic, "partition": p, "target": o} for p, o in targets.items()]


def test_a_flink_backfill_restarts_each_source_whole_and_starts_it_the_way_flinks_kafka_source_can() -> None:
    tables = {"orders": kafka("orders"), "both": kafka("orders; payments"), "lake": {"options": {"connector": "filesystem"}},
              "audit": kafka("audit")}
    assert kafka_tables(tables, ["orders"]) == {"both": ["orders", "payments"], "orders": ["orders"]}
    with pytest.raises(FlinkError, match=r"table any reads every topic matching 'ord.*'"):
        kafka_tables({"any": kafka(pattern="ord.*")}, ["orders"])
    assert kafka_tables({"any": kafka(pattern="pay.*"), "orders": kafka("orders")}, ["orders"]) == {"orders": ["orders"]}

    parts = {"orders": [0, 1], "payments": [0]}
    single = restarts({"orders": ["orders"]}, moved("orders", {0: 5, 1: 7}), parts, None, None)
    assert single == {"orders": {"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0,offset:5;partition:1,offset:7"}}
    with pytest.raises(FlinkError, match="partition 1 of orders would start again too: backfill every partition"):
        restarts({"orders": ["orders"]}, moved("orders", {0: 5}), parts, None, None)

    both = {"both": ["orders", "payments"]}
    with pytest.raises(FlinkError, match=r"table both reads orders, payments, .* payments would start again too. Backfill them together \(orders,payments\)"):
        restarts(both, moved("orders", {0: 5, 1: 7}), parts, NOW, None)
    every = moved("orders", {0: 5, 1: 7}) + moved("payments", {0: 2})
    with pytest.raises(FlinkError, match="at a time or at either end, not at offsets per partition"):  # Flink refuses specific offsets there
        restarts(both, every, parts, None, None)
    at = {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": str(int(NOW.timestamp() * 1000))}
    assert restarts(both, every, parts, NOW, None) == {"orders": at, "payments": at}
    assert restarts({**both, "orders": ["orders"]}, every, parts, None, "earliest") == {t: {"scan.startup.mode": "earliest-offset"}
                                                                                        for t in ("orders", "payments")}
