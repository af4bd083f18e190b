"""The Flink release gate during a transition: a job may read either side of the mapping while both are written, and
is told which side to read (the new one) and by when. Pure: the report's tables and the open transitions come in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.domain.flink.checks import Finding, Report, Table
from bot.domain.flink.types import SqlType
from bot.domain.transitions.model import Rename


@dataclass(frozen=True)
class Open:
    """An open transition as the gate needs it."""

    number: int
    phase: str
    mapping: tuple[Rename, ...]
    deadline: datetime


def transition_notes(report: Report, subjects: Mapping[str, str | None], transitions: Mapping[str, Open]) -> None:
    """For each source table whose subject is in a transition, a warning per old field it reads (move to the new one by
    the deadline) or a note that it already reads the new side; both sides pass while the transition runs."""
    for table_name, subject in sorted(subjects.items()):
        if subject is None or subject not in transitions:
            continue
        current = transitions[subject]
        table = report.tables[table_name]
        for rename in current.mapping:
            if _reads(table, rename.old):
                report.checks["source_schema"].append(Finding(
                    f"reads {rename.old}, which transition #{current.number} on {subject} replaces with {rename.new}: both are written "
                    f"during the transition, so this release passes, but read {rename.new} before the contract "
                    f"(deadline {current.deadline:%Y-%m-%d %H:%M} UTC) or the job breaks when {rename.old} goes",
                    table=table_name, column=rename.old, line=table.line, level="warning"))
            elif _reads(table, rename.new):
                report.checks["source_schema"].append(Finding(
                    f"reads {rename.new}, the new side of transition #{current.number} on {subject} ({rename.old} → {rename.new}): "
                    "nothing to move", table=table_name, column=rename.new, line=table.line, level="info"))


def _reads(table: Table, path: str) -> bool:
    """Whether the table declares the field at ``path`` (a column, or a field of a ROW column)."""
    head, *rest = path.split(".")
    found = next((t for name, t, kind in table.columns if name == head and kind != "computed"), None)
    return found is not None and _has(found, rest)


def _has(sql: SqlType, rest: Sequence[str]) -> bool:
    if not rest:
        return True
    for name, inner in sql.fields:
        if name == rest[0]:
            return _has(inner, rest[1:])
    return any(_has(part, rest) for part in sql.parts)
