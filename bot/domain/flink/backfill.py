"""A backfill the Flink way, as data: which tables and operators read the topics, where each source starts again,
and what the plan says. A Flink source keeps its offsets in the job's state, so the job is stopped with a
savepoint, a copy of it is written without those sources' state, and the job starts again from the copy with the
sources told where to begin; every other operator keeps its state."""

from __future__ import annotations

import re
from typing import Any

STEPS = ("savepoint", "rewrite", "submit", "verify")  # in order; each is recorded once done, so a run resumes after the last


def kafka_tables(tables: dict[str, dict[str, Any]], topics: list[str]) -> dict[str, str]:
    """The tables of the ``kafka`` connector reading one of ``topics`` (table -> topic), from the planner's description."""
    found: dict[str, str] = {}
    for name, table in sorted(tables.items()):
        options = table.get("options") or {}
        if options.get("connector") != "kafka":
            continue
        for topic in (t.strip() for t in str(options.get("topic", "")).split(";")):
            if topic in topics:
                found[name] = topic
    return found


def source_vertices(vertices: list[dict[str, Any]], tables: list[str]) -> dict[str, str]:
    """The job graph's source vertex of each table (table -> vertex id): Flink names it ``Source: ...<catalog>.<db>.<table>``."""
    found: dict[str, str] = {}
    for table in tables:
        pattern = re.compile(r"^Source: .*\." + re.escape(table) + r"(?=$|[\s\[,]|->)")
        matches = [str(v["id"]) for v in vertices if pattern.search(str(v.get("name", "")))]
        if len(matches) == 1:
            found[table] = matches[0]
    return found


def starts(moves: list[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """Per topic, the source options that start it at the plan's targets: every partition at its exact offset."""
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for move in moves:
        by_topic.setdefault(move["topic"], []).append((int(move["partition"]), int(move["target"])))
    return {topic: {"scan.startup.mode": "specific-offsets",
                    "scan.startup.specific-offsets": ";".join(f"partition:{p},offset:{o}" for p, o in sorted(offsets))}
            for topic, offsets in sorted(by_topic.items())}


def plan_lines(flink: dict[str, Any], reread: int) -> list[str]:
    """What the plan of a Flink backfill says it will do (plain text)."""
    tables = ", ".join(f"{table} (operator {vertex})" for table, vertex in sorted(flink["vertices"].items()))
    return [f"The Flink way: {flink['job']} (job {flink['job_id']}) is stopped with a savepoint (not drained), the state of its source "
            f"{tables} is left out of a copy of that savepoint, and the job starts again from the copy with the source at the offsets "
            "below; every other operator keeps its state. The group's offsets themselves are never reset (the job would write them back).",
            f"Downstream sees these {reread:,} records again: an aggregate counts them twice unless its sink upserts or the job "
            "deduplicates. Undo restarts the job from the original savepoint.",
            f"The job's SQL: {flink['sql_from']}."]


def step_text(step: str | None) -> str:
    """Where a running Flink backfill is, for its message."""
    return {None: "stopping the job with a savepoint…", "savepoint": "savepoint taken; writing the copy without the source's state…",
            "rewrite": "copy written; starting the job from it…", "submit": "job started; checking it restored from the copy…",
            "verify": "done"}.get(step, str(step))
