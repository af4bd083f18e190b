"""The release gate's five checks, from what the planner answered and what ChangeOps knows: each gives its
findings (an error blocks the release, a warning is shown). Pure: the service gathers the inputs."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from bot.domain.avro.parse import SchemaError, parse
from bot.domain.compat.changes import Direction
from bot.domain.compat.classify import Mode, classify
from bot.domain.compat.formats import INVALID
from bot.domain.flink.plan import PlanLineage, lineage
from bot.domain.flink.statements import Statement
from bot.domain.flink.types import SqlType, SqlTypeError, from_avro, lossy, parse_type, read_problems

CHECKS = ("source_schema", "sql", "sink", "state", "lineage")
SCHEMA_FORMATS = {"avro-confluent": "AVRO", "avro": "AVRO", "debezium-avro-confluent": "AVRO", "protobuf": "PROTOBUF", "json": "JSON"}
TYPE_WORDS = {"AVRO": "Avro", "PROTOBUF": "Protobuf", "JSON": "JSON Schema"}
KAFKA = ("kafka", "upsert-kafka")
NOT_DATA = ("datagen", "print", "blackhole")  # test connectors: nothing flows to or from a dataset
INSTALLABLE = ("jdbc",)  # connectors `scripts/flink.sh install --connector NAME` knows by name
SINK_MISMATCH = ("Column types of query result and sink", "Different number of columns")
SINK_COLUMN = re.compile(r"sink column '([^']+)' at position (\d+)")
CREATE_TABLE = re.compile(r"(?is)CREATE\s+(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([`\w.]+)")
CHECK_DATABASE = re.compile(r"default_catalog\.check_\d+\.")  # the planner's scratch database for a check: not the user's
INSERT_TARGET = re.compile(r"(?is)INSERT\s+(?:INTO|OVERWRITE)\s+([`\w.]+)")


@dataclass
class Finding:
    """One reason, with where it is when known."""

    message: str
    table: str | None = None
    column: str | None = None
    line: int | None = None
    column_number: int | None = None
    level: str = "error"


@dataclass
class Table:
    """A table the job declares, as the planner resolved it."""

    name: str
    options: dict[str, str]
    columns: list[tuple[str, SqlType, str]]  # (name, type, kind: physical, metadata or computed)
    line: int | None = None

    @property
    def connector(self) -> str:
        return self.options.get("connector", "")

    @property
    def topic(self) -> str | None:
        return self.options.get("topic")

    @property
    def value_format(self) -> str:
        return self.options.get("value.format") or self.options.get("format", "")

    def dataset_names(self) -> list[str]:
        """The names a catalog dataset of this table may carry: its topic, its table or its path where the connector
        names one (that is where the data is), else the table's own name (a catalog table such as Iceberg's)."""
        return [self.options[k] for k in ("topic", "table-name", "path") if self.options.get(k)][:1] or [self.name]


@dataclass
class Report:
    """The gate's answer for one job."""

    job: str
    checks: dict[str, list[Finding]] = field(default_factory=lambda: {c: [] for c in CHECKS})
    lineage: PlanLineage | None = None
    tables: dict[str, Table] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not any(f.level == "error" for findings in self.checks.values() for f in findings)

    def failed(self) -> list[str]:
        """The checks that block, in order."""
        return [c for c in CHECKS if any(f.level == "error" for f in self.checks[c])]

    def as_json(self) -> dict[str, Any]:
        return {"job": self.job, "verdict": "pass" if self.passed else "blocked",
                "checks": [{"check": c, "ok": not any(f.level == "error" for f in self.checks[c]),
                            "findings": [asdict(f) for f in self.checks[c]]} for c in CHECKS]}


def read_planner(report: Report, statements: list[Statement], answer: dict[str, Any]) -> None:
    """Checks 2 and 3 from the planner's answer, plus the gate's own (names lined up, lossy casts); the tables
    the job declares and the column lineage of the INSERTs that planned go into the report."""
    for name, raw in answer.get("tables", {}).items():
        columns = []
        for column in raw.get("columns", []):
            try:
                columns.append((column["name"], parse_type(column["type"]), column["kind"]))
            except SqlTypeError:
                columns.append((column["name"], SqlType("RAW"), column["kind"]))
        report.tables[name] = Table(name, raw.get("options", {}), columns)
    for statement in statements:
        found = CREATE_TABLE.match(statement.sql)
        if found and _bare(found.group(1)) in report.tables:
            report.tables[_bare(found.group(1))].line = statement.line
    for name, connector in sorted(answer.get("unchecked", {}).items()):
        how = connector if connector in INSTALLABLE else "GROUP:ARTIFACT:VERSION of its jar"
        table = report.tables.get(name)
        report.checks["sql"].append(Finding(
            f"connector '{connector}' is not installed in the checker: its options were not checked (scripts/flink.sh install --connector {how})",
            name, None, table.line if table else None, 1, "warning"))
    merged = PlanLineage()
    for statement, result in zip(statements, answer.get("results", []), strict=False):
        if not result.get("ok"):
            _planner_error(report, statement, result.get("error") or [["", "the planner refused this statement"]])
            if statement.kind == "insert":
                _named_tables(report, statement, merged)
        elif statement.kind == "insert":
            _insert(report, statement, result, merged)
    if not any(s.kind == "insert" for s in statements):
        report.checks["sql"].append(Finding("the job has no INSERT INTO: nothing would run", line=1, column_number=1))
    report.lineage = merged


def _named_tables(report: Report, statement: Statement, merged: PlanLineage) -> None:
    """An INSERT the planner refused has no plan: the declared tables its text names still count as read (and its
    target as written), so the source schemas and the lineage are checked too — every reason in one report."""
    target = INSERT_TARGET.match(statement.sql)
    written = _bare(target.group(1)) if target else None
    for name in report.tables:
        if name == written:
            merged.sinks.setdefault(name, {})
        elif re.search(rf"(?<![\w`]){re.escape(name)}(?![\w`])|`{re.escape(name)}`", statement.sql):
            merged.sources.add(name)


def _planner_error(report: Report, statement: Statement, chain: list[list[str]]) -> None:
    messages = [_clean(m) for _, m in chain if m and m != "None"]
    positioned = [m for m in messages if "line " in m and ", column " in m]
    message = (positioned[-1] if positioned else messages[0] if messages else "the planner refused this statement").split("\n\nQuery schema")[0]
    if message.startswith("Unable to create a") and len(messages) > 1:  # the connector's factory refused: its reason is the cause's
        head = message.split("\n")[0].rstrip(".")
        message = f"{head}: {messages[-1]}"
    message = CHECK_DATABASE.sub("", message)
    line, column = statement.position(message)
    if line is None:
        line, column = statement.line, statement.column
    created, target = CREATE_TABLE.match(statement.sql), INSERT_TARGET.match(statement.sql)
    table = _bare(created.group(1)) if created else _bare(target.group(1)) if target else None
    if target and any(marker in m for m in messages for marker in SINK_MISMATCH):
        whole = next(m for m in messages if any(marker in m for marker in SINK_MISMATCH))
        sink_column = SINK_COLUMN.search(whole)
        text = whole.split("\n\nQuery schema")[0].replace("\n", " ")
        report.checks["sink"].append(Finding(text, table, sink_column.group(1) if sink_column else None, line, column))
        return
    report.checks["sql"].append(Finding(message.replace("\n", " ")[:600], table, _column_in(message), line, column))


def _insert(report: Report, statement: Statement, result: dict[str, Any], merged: PlanLineage) -> None:
    target = result.get("target", "")
    sink = report.tables.get(target)
    plan = lineage(result["plan"]) if result.get("plan") else None
    if plan is not None:
        for table, mapped in plan.sinks.items():
            merged.sinks.setdefault(table, {}).update(mapped)
        merged.sources |= plan.sources
        merged.casts += plan.casts
        merged.coarse += plan.coarse
    if sink is None:
        return
    physical = [(name, sql_type) for name, sql_type, kind in sink.columns if kind == "physical"]
    query = [(name, _type(text)) for name, text in result.get("query", [])]
    if result.get("target_columns") is None:
        sink_names = {name for name, _ in physical}
        for position, ((got, _), (into, _)) in enumerate(zip(query, physical, strict=False), start=1):
            if got == into:
                continue
            if got in sink_names:
                report.checks["sink"].append(Finding(
                    f"query column '{got}' goes into sink column '{into}' (position {position}): INSERT lines columns up by position; "
                    f"reorder the SELECT or name the columns (INSERT INTO {target} ({', '.join(n for n, _ in physical)}) ...)",
                    target, into, statement.line, statement.column))
            else:
                report.checks["sink"].append(Finding(
                    f"query column '{got}' goes into sink column '{into}' (position {position}) by position: alias it AS {into}",
                    target, into, statement.line, statement.column, "warning"))
    columns = physical if result.get("target_columns") is None else [
        physical[path[0]] for path in result["target_columns"] if path and path[0] < len(physical)]
    for (_, got), (into, sink_type) in zip(query, columns, strict=False):
        for path, reason in lossy(got, sink_type, into):
            if "a null fails the job" in reason:
                report.checks["sink"].append(Finding(f"sink column '{path}': {reason}", target, into, statement.line, statement.column))
    seen: set[tuple[str, str, str]] = set()
    for cast in plan.casts if plan is not None else []:
        for path, reason in lossy(SqlType(cast.source.name, cast.source.params, False, cast.source.fields, cast.source.parts),
                                  cast.target, cast.column):
            key = (path, str(cast.source), str(cast.target))
            if key not in seen:
                seen.add(key)
                report.checks["sink"].append(Finding(f"'{path}': a cast of {reason}", target, cast.column, statement.line, statement.column))


def source_schemas(report: Report, subjects: dict[str, str | None], approved: dict[str, tuple[str, str, dict[str, str]] | None]) -> None:
    """Check 1: each Kafka source read with a schema's format (Avro, Protobuf, JSON), against its subject's approved schema.

    ``subjects``: source table -> subject (the service resolves it; None: a json or protobuf topic no subject describes);
    ``approved``: subject -> the newest approved version's type, text and referenced schemas (by import path or URI)."""
    for name, subject in sorted(subjects.items()):
        table = report.tables[name]
        found = report.checks["source_schema"]
        if subject is None:
            found.append(Finding(f"topic '{table.topic}' is read as {table.value_format}, but no subject describes it: its columns are not checked "
                                 "(declare the topic's subject in the catalog, with its schema_type)", name, None, table.line, 1, "warning"))
            continue
        stored = approved.get(subject)
        if stored is None:
            found.append(Finding(f"topic '{table.topic}' has no approved schema under subject '{subject}': propose it before a job reads it",
                                 name, None, table.line, 1))
            continue
        schema_type, text, refs = stored
        wanted = SCHEMA_FORMATS[table.value_format]
        if schema_type != wanted:
            found.append(Finding(f"the table reads '{table.value_format}' ({TYPE_WORDS[wanted]}), but subject '{subject}' holds "
                                 f"{TYPE_WORDS.get(schema_type, schema_type)} schemas: every record fails to decode", name, None, table.line, 1))
            continue
        try:
            problems = _column_problems(table, schema_type, text, refs)
        except INVALID as err:
            found.append(Finding(f"the approved schema of '{subject}' does not parse: {err}", name, None, table.line, 1))
            continue
        if problems is None:
            found.append(Finding(f"subject '{subject}' is not a record: a table reads records", name, None, table.line, 1))
            continue
        for column, path, reason, level in problems:
            found.append(Finding(f"column '{path}': {reason} (subject '{subject}')" if path else f"{reason} (subject '{subject}')",
                                 name, column, table.line, 1, level))


def _column_problems(table: Table, schema_type: str, text: str, refs: dict[str, str]) -> list[tuple[str | None, str, str, str]] | None:
    """``(column, path, reason, level)`` for each physical value column the format cannot read; None when the schema is no record."""
    key_fields = set(filter(None, (f.strip() for f in table.options.get("key.fields", "").split(";"))))
    except_key = table.options.get("value.fields-include", "ALL").upper() == "EXCEPT_KEY"
    columns = [(c, t) for c, t, kind in table.columns if kind == "physical" and not (except_key and c in key_fields)]
    found: list[tuple[str | None, str, str, str]] = []
    if schema_type == "JSON":  # each format's parser imported on its first use: Avro-only gates never pay for them
        from bot.domain.flink.formats import json_problems
        from bot.domain.jsonschema.model import parse_json_schema

        document = parse_json_schema(text, refs)
        row = SqlType("ROW", (), False, tuple(columns))
        for path, reason in json_problems(document, row, document.root, document.base, "", required=True):
            column = path.lstrip(".").split(".")[0].split("[")[0] or None
            found.append((column, path.lstrip("."), reason, "warning" if "is open" in reason else "error"))
        return found
    if schema_type == "PROTOBUF":
        from bot.domain.flink.formats import from_proto, proto_message, proto_problems
        from bot.domain.protobuf.model import parse_proto

        proto = parse_proto(text, refs)
        message = proto_message(proto, table.options.get("protobuf.message-class-name"))
        if message is None:
            return [(None, "", f"no message {table.options.get('protobuf.message-class-name')!r} in the approved schema", "error")]
        written, judge = from_proto(proto, message), proto_problems
    else:
        written, judge = from_avro(parse(text).root), read_problems
    if written.name != "ROW":
        return None
    for column, sql_type in columns:
        field_type = written.field(column)
        if field_type is None:
            found.append((column, column, "it is not in the approved schema", "error"))
            continue
        found += [(column, path, reason, "error") for path, reason in judge(sql_type, field_type, column)]
    return found


def states(report: Report, new: dict[str, str], old: dict[str, str] | None) -> None:
    """Check 4: each state's new schema must read the state the last passed release wrote (Avro resolution)."""
    findings = report.checks["state"]
    for name, text in sorted(new.items()):
        try:
            parse(text)
        except SchemaError as err:
            findings.append(Finding(f"state '{name}' is not a valid Avro schema: {err}", column=name))
    if old is None or any(f.level == "error" for f in findings):
        return
    for name in sorted(set(old) - set(new)):
        findings.append(Finding(f"state '{name}' of the last passed release is gone: restore from the savepoint will fail "
                                f"(its state has no reader; drop it with allowNonRestoredState only on purpose)", column=name))
    for name in sorted(set(old) & set(new)):
        verdict = classify([parse(old[name])], parse(new[name]), Mode.BACKWARD)
        for finding in verdict.findings:
            if Direction.BACKWARD in finding.breaks:
                findings.append(Finding(f"state '{name}' {finding.path}: {finding.message} — restore from the savepoint will fail",
                                        column=name))
            elif finding.rule.startswith("FIELD_REMOVED"):
                findings.append(Finding(f"state '{name}': field {finding.path} was removed — its values are dropped on restore",
                                        column=name, level="warning"))


def registered(report: Report, job_owners: list[str] | None, known: dict[str, bool]) -> None:
    """Check 5: the job is registered with an owner, and every table it reads or writes is a known dataset.

    ``known``: table name -> whether the catalog knows it (the service looks each one up)."""
    findings = report.checks["lineage"]
    if job_owners is None:
        findings.append(Finding(f"job '{report.job}' is not registered: add it to the catalog (jobs:) with an owner, "
                                f"or it is an unregistered black box"))
    elif not job_owners:
        findings.append(Finding(f"job '{report.job}' has no owner: nobody would be asked about changes that reach it"))
    if report.lineage is not None and report.lineage.coarse:
        kinds = ", ".join(sorted(set(report.lineage.coarse)))
        findings.append(Finding(f"the plan has steps the gate cannot follow field by field ({kinds}): the job's field lineage is not "
                                f"learned from this release", level="warning"))
    for name, is_known in sorted(known.items()):
        if not is_known:
            table = report.tables[name]
            what = f"topic '{table.topic}'" if table.topic else f"table '{name}' ({table.connector})"
            findings.append(Finding(f"{what} is not in the catalog (no subject or dataset): an unregistered black box in the lineage graph",
                                    name, None, table.line, 1))


def data_tables(report: Report) -> list[str]:
    """The tables the job reads or writes that hold data (the test connectors do not)."""
    used = set(report.lineage.sources if report.lineage else ()) | set(report.lineage.sinks if report.lineage else ())
    return sorted(n for n in used if n in report.tables and report.tables[n].connector not in NOT_DATA)


def schema_sources(report: Report) -> list[str]:
    """The Kafka source tables read with a schema's format: Avro, Protobuf or JSON (those check 1 applies to)."""
    sources = report.lineage.sources if report.lineage else set()
    return sorted(n for n in sources if n in report.tables and report.tables[n].connector in KAFKA
                  and report.tables[n].value_format in SCHEMA_FORMATS)


def field_lineage(report: Report, datasets: dict[str, tuple[str, str]]) -> list[list[str]]:
    """The job's column lineage as dataset field mappings ``[src_ns, src_name, path, dst_ns, dst_name, column]``,
    for the tables ``datasets`` resolves (table -> (namespace, name))."""
    if report.lineage is None or report.lineage.coarse:
        return []  # not exact: the job stays as the catalog declares it
    mappings = []
    for sink, columns in sorted(report.lineage.sinks.items()):
        if sink not in datasets:
            continue
        for column, origins in sorted(columns.items()):
            for table, path in sorted(origins):
                if table in datasets:
                    mappings.append([*datasets[table], path, *datasets[sink], column])
    return mappings


def _type(text: str) -> SqlType:
    try:
        return parse_type(text)
    except SqlTypeError:
        return SqlType("RAW")


def _bare(identifier: str) -> str:
    return identifier.rsplit(".", 1)[-1].strip("`")


def _clean(message: str) -> str:
    while message.startswith("SQL validation failed. "):
        message = message.removeprefix("SQL validation failed. ")
    return message.strip()


def _column_in(message: str) -> str | None:
    found = re.search(r"Column '([^']+)'", message)
    return found.group(1) if found else None


