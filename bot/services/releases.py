"""The Flink release gate (``bot gate job``): the five checks on a job's SQL before it ships, by Flink's own
planner and what ChangeOps knows (approved schemas, the catalog, the last passed release's state). A passed
release is recorded with its state schemas, audited and booked in the calendar; every verdict is kept for the
health report."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import col, select

from bot.domain.avro.parse import SchemaError, parse
from bot.domain.calendar import CalendarError, Scope
from bot.domain.flink.checks import (
    SCHEMA_FORMATS,
    Finding,
    Report,
    data_tables,
    field_lineage,
    read_planner,
    registered,
    schema_sources,
    source_schemas,
    states,
)
from bot.domain.flink.statements import Statement, StatementError, split
from bot.domain.flink.status import FlinkError
from bot.domain.transitions.gate import Open, transition_notes
from bot.flink.planner import Planner, PlannerUnavailable
from bot.services.audit import record as audit
from bot.services.calendar import CalendarService
from bot.services.flink import FlinkService
from bot.services.lineage import LineageService, bump_revision
from bot.services.outbox import Outbox
from bot.services.references import References, UnresolvedReference, imports_of
from bot.services.registry import Registry
from bot.store.database import Database
from bot.store.models import FlinkRelease, Subject, aware, utcnow
from bot.workers import off_loop

PARSE_ERRORS = ("SqlParserException", "SqlParseException", "SqlParserEOFException", "ParseException")
RELEASE_WINDOW = timedelta(hours=1)
RELEASE_REPORT = "release.report"  # outbox kind: the verdict to the developer and the job's team channel (the Slack edge renders it)
MAX_SQL = 1_000_000


class ReleaseError(ValueError):
    """A job the gate cannot check: bad input (400) or no planner (503)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class Releases:
    """Checks Flink job releases."""

    def __init__(self, db: Database, lineage: LineageService, registry: Registry, calendar: CalendarService, outbox: Outbox,
                 planner: Planner, flink_version: str, clock: Callable[[], datetime] = utcnow, flink: FlinkService | None = None,
                 transitions: Callable[[set[str]], Awaitable[dict[str, Open]]] | None = None) -> None:
        self.db, self.lineage, self.registry, self.calendar, self.outbox, self.planner = db, lineage, registry, calendar, outbox, planner
        self.flink_version, self.clock, self.flink = flink_version, clock, flink
        self.transitions = transitions  # the open transitions on these subjects: a job may read either side, and is told which to read

    async def check(self, job: str, sql: str, state: dict[str, str], *, author: str | None, checked_by: str) -> dict[str, Any]:
        """The gate's answer: ``{"job", "verdict", "checks", "flink", "release"}``; ReleaseError for bad input."""
        if not job.strip() or len(job) > 255:
            raise ReleaseError("job: a job name (at most 255 characters)")
        if len(sql) > MAX_SQL:
            raise ReleaseError(f"sql: at most {MAX_SQL} characters")
        try:
            statements = await off_loop(split, sql)  # a file of up to a megabyte, character by character: off the loop
        except StatementError as err:
            raise ReleaseError(f"sql: {err}") from None
        if not any(s.kind == "insert" for s in statements):
            raise ReleaseError("sql: no INSERT INTO: the gate checks a job's CREATE TABLE statements and the INSERTs that run")
        await off_loop(_parsed_states, state)
        graph = await self.lineage.graph()
        version = next((j.flink for j in graph.jobs.values() if j.id.name == job and j.flink), None) or self.flink_version
        try:
            answer = await self.planner.check(version, [{"kind": s.kind, "sql": s.sql, "key": s.key} for s in statements])
        except PlannerUnavailable as err:
            raise ReleaseError(str(err), 503) from None
        for statement, result in zip(statements, answer.get("results", []), strict=False):
            chain = result.get("error") or []
            if any(name.rsplit(".", 1)[-1] in PARSE_ERRORS for name, _ in chain):
                message = next((m for name, m in chain if name.rsplit(".", 1)[-1] in PARSE_ERRORS), "")
                line, column = statement.position(message)
                where = f"line {line}, column {column}" if line else f"line {statement.line}"
                raise ReleaseError(f"sql: the statement at line {statement.line} does not parse ({where}): {message.splitlines()[0]}")
        report = await off_loop(_with_planner, Report(job), statements, answer)  # the plans walked, the types read
        report = await self._sources(report)
        async with self.db.session() as session:
            last = (await session.exec(select(FlinkRelease).where(col(FlinkRelease.job) == job, col(FlinkRelease.passed))
                                       .order_by(col(FlinkRelease.id).desc()))).first()
        report = await off_loop(_with_states, report, state, dict(last.states) if last is not None else None)
        datasets = await self._registered(report)
        if report.passed:
            report = await self._restorable(report, sql)
        return await self._record(report, state, sql, answer, author, checked_by, field_lineage(report, datasets) if report.passed else [])

    async def _restorable(self, report: Report, sql: str) -> Report:
        """Recoverability (seed 000 §7): the release restored from a fresh savepoint of the running job in a dry run that never
        touches it; Flink's own words block when the state cannot be mapped. Without a Flink to ask, a warning says so."""
        if self.flink is None or self.flink.rest is None:
            return report
        try:
            job = await self.flink.job(report.job)
            reason, savepoint = await self.flink.restore_check(job, sql)
        except FlinkError as err:
            report.checks["state"].append(Finding(f"no restore dry run: {err}", level="warning"))
            return report
        if reason is not None:
            report.checks["state"].append(Finding(f"this release cannot restore the job's state from its savepoint {savepoint} (a dry run that "
                                                  f"never touched the running job): {reason}"))
        return report

    async def _sources(self, report: Report) -> Report:
        subjects: dict[str, str | None] = {}
        async with self.db.session() as session:
            for name in schema_sources(report):
                table = report.tables[name]
                named = table.options.get("value.avro-confluent.subject") or table.options.get("avro-confluent.subject")
                if named is None:
                    declared = (await session.exec(select(Subject).where(Subject.topic == table.topic).order_by(col(Subject.id)))).first()
                    named = declared.name if declared is not None else f"{table.topic}-value"
                    if declared is None and SCHEMA_FORMATS[table.value_format] != "AVRO" and await self.registry.subject(named) is None:
                        named = None  # json and protobuf read without a registry: a topic no subject describes is not checked
                subjects[name] = named
        approved: dict[str, tuple[str, str, dict[str, str]] | None] = {}
        references = References(self.db, self.registry, None)
        for subject in {s for s in subjects.values() if s is not None}:
            history = await self.registry.history(subject)
            row = await self.registry.subject(subject)
            if not history or row is None:
                approved[subject] = None
                continue
            try:
                referenced = await references.resolve(await references.pins(subject))
            except UnresolvedReference:
                referenced = []  # an import that no longer resolves: the schema's parse says which
            approved[subject] = (row.format, history[-1].schema_text, imports_of(referenced))
        report = await off_loop(_with_sources, report, subjects, approved)  # parses schemas: off the loop
        if self.transitions is not None:
            transition_notes(report, subjects, await self.transitions({s for s in subjects.values() if s is not None}))
        return report

    async def _registered(self, report: Report) -> dict[str, tuple[str, str]]:
        """Check 5; the datasets the job's tables are (table -> (namespace, name)), for its lineage."""
        graph = await self.lineage.graph()
        jobs = [j for j in graph.jobs.values() if j.id.name == report.job]
        owners = sorted({o for j in jobs for o in j.owners}) if jobs else None
        by_name: dict[str, list[tuple[str, str]]] = {}
        for ident in graph.datasets:
            by_name.setdefault(ident.name, []).append((ident.namespace, ident.name))
        async with self.db.session() as session:
            topics = set((await session.exec(select(Subject.topic))).all())
        found: dict[str, tuple[str, str]] = {}
        for name in data_tables(report):
            candidates = [d for n in report.tables[name].dataset_names() for d in by_name.get(n, [])]
            if len(candidates) == 1:  # a name in several namespaces is known but not pinned: no mappings for it
                found[name] = candidates[0]
            elif candidates or report.tables[name].topic in topics:
                found[name] = ("", "")
        registered(report, owners, {name: name in found for name in data_tables(report)})
        return {name: ident for name, ident in found.items() if ident[1]}

    async def _record(self, report: Report, state: dict[str, str], sql: str, answer: dict[str, Any], author: str | None,
                      checked_by: str, mappings: list[list[str]]) -> dict[str, Any]:
        """Keep the release and its verdict (audited), owe the developer and the team their report, book a passed one."""
        now = self.clock()
        jobs = [j for j in (await self.lineage.graph()).jobs.values() if j.id.name == report.job]
        owners = sorted({o for j in jobs for o in j.owners})
        teams = await self.lineage.teams()
        channel = next((j.channel for j in jobs if j.channel), None) or next((teams[o].channel for o in owners if o in teams and teams[o].channel), None)
        flink = str(answer.get("flink") or "?")
        digest, kept = hashlib.sha256(sql.encode()).hexdigest(), state if report.passed else {}
        async with self.db.session() as session:
            newest = (await session.exec(select(FlinkRelease).where(col(FlinkRelease.job) == report.job)
                                         .order_by(col(FlinkRelease.id).desc()).limit(1))).first()
            if (newest is not None and now - aware(newest.created_at) < RELEASE_WINDOW and newest.sql_digest == digest
                    and newest.states == kept and newest.passed == report.passed and newest.failed_checks == report.failed()
                    and newest.author == author and newest.flink == flink):
                # the same release checked again (a CI retry): the same answer, nothing recorded, booked or reported twice
                return {**newest.report, "repeated": True}
            row = FlinkRelease(job=report.job, passed=report.passed, failed_checks=report.failed(), states=kept,
                               flink=flink, sql_digest=digest, sql=sql if report.passed else "", author=author, checked_by=checked_by,
                               team=owners[0] if owners else None, lineage=mappings, created_at=now)
            session.add(row)
            await session.flush()
            assert row.id is not None
            row.report = {**report.as_json(), "flink": flink, "release": row.id, "checked_at": now.isoformat()}
            session.add(row)
            if mappings:
                await bump_revision(session)  # the graph learns the job's field lineage from this release
            if author or channel:
                self.outbox.add(session, RELEASE_REPORT, f"release:{row.id}", {"release": row.id, "author": author, "channel": channel})
            audit(session, author or checked_by, "api", "release passed" if report.passed else "release blocked", "job", report.job,
                  {"release": row.id, "failed": report.failed(),
                   "findings": [asdict(f) for c in report.failed() for f in report.checks[c]][:50]})
            await session.commit()
        if report.passed and owners:
            try:
                await self.calendar.add(kind="release", title=f"release of Flink job {report.job}", start=now, end=now + RELEASE_WINDOW,
                                        owner=owners[0], booked_by=author or checked_by, scope=Scope(jobs=frozenset({report.job})), surface="api")
            except CalendarError:
                pass  # the scope names a job the calendar does not know (learned elsewhere): the release stands without an entry
        self.outbox.wake()
        return dict(row.report)

    async def stored(self, release: int) -> FlinkRelease | None:
        """One recorded release."""
        async with self.db.session() as session:
            return await session.get(FlinkRelease, release)


def _with_planner(report: Report, statements: list[Statement], answer: dict[str, Any]) -> Report:
    read_planner(report, statements, answer)
    return report


def _with_states(report: Report, new: dict[str, str], old: dict[str, str] | None) -> Report:
    states(report, new, old)
    return report


def _with_sources(report: Report, subjects: dict[str, str | None], approved: dict[str, tuple[str, str, dict[str, str]] | None]) -> Report:
    source_schemas(report, subjects, approved)
    return report


def _parsed_states(state: dict[str, str]) -> None:
    """Every state schema parses as Avro; ReleaseError names the first that does not."""
    for name, text in state.items():
        try:
            parse(text)
        except SchemaError as err:
            raise ReleaseError(f"state {name}: not an Avro schema: {err}") from None
