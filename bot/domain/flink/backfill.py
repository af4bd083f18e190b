"""A backfill the Flink way, as data: which tables and operators read the topics, where each source starts again,
and what the plan says. A Flink source keeps its offsets in the job's state, so the job is stopped with a
savepoint, a copy of it is written without those sources' state, and the job starts again from the copy with the
sources told where to begin; every other operator keeps its state."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from bot.domain.flink.status import FlinkError

STEPS = ("savepoint", "rewrite", "submit", "verify")  # in order; each is recorded once done, so a run resumes after the last


def kafka_tables(tables: dict[str, dict[str, Any]], topics: list[str]) -> dict[str, list[str]]:
    """The tables of the ``kafka`` connector reading one of ``topics``, each with every topic it reads (table -> topics), from
    the planner's description. FlinkError for a table reading by ``topic-pattern`` a name among them: which topics its
    source would start again cannot be told from the SQL."""
    found: dict[str, list[str]] = {}
    for name, table in sorted(tables.items()):
        options = table.get("options") or {}
        if options.get("connector") != "kafka":
            continue
        if pattern := options.get("topic-pattern"):
            if any(_matches(str(pattern), topic) for topic in topics):
                raise FlinkError(f"table {name} reads every topic matching {pattern!r}: a backfill drops its source's state for all of "
                                 "them, and which topics that is cannot be told from the SQL. Name the topics in 'topic' to backfill it")
            continue
        read = [t.strip() for t in str(options.get("topic", "")).split(";") if t.strip()]
        if set(read) & set(topics):
            found[name] = read
    return found


def _matches(pattern: str, topic: str) -> bool:
    try:
        return re.fullmatch(pattern, topic) is not None
    except re.error:
        return True  # a pattern Python cannot read may still match: say so rather than guess it does not


def restarts(sources: dict[str, list[str]], moves: list[dict[str, Any]], partitions: dict[str, list[int]], to_time: datetime | None,
             to_end: str | None) -> dict[str, dict[str, str]]:
    """Per topic, the start options of its Kafka sources: where the plan puts each partition. A source's state is dropped
    whole, so it starts again on every topic and partition it reads: FlinkError when the plan leaves some of them out
    (they would be read again from wherever the source's fallback puts them), or asks a source of several topics for
    offsets per partition, which Flink's Kafka source takes only for a table of one topic (a time or either end it takes)."""
    targets: dict[str, dict[int, int]] = {}
    for move in moves:
        targets.setdefault(move["topic"], {})[int(move["partition"])] = int(move["target"])
    for table, read in sorted(sources.items()):
        if left := [t for t in read if t not in targets]:
            raise FlinkError(f"table {table} reads {', '.join(read)}, and a backfill drops its source's state as a whole: "
                             f"{', '.join(left)} would start again too. Backfill them together ({','.join(read)})")
        for topic in read:
            if missing := sorted(set(partitions[topic]) - set(targets[topic])):
                raise FlinkError(f"a backfill drops the state of table {table}'s source as a whole, so partition"
                                 f"{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} of {topic} would start again too: "
                                 "backfill every partition (leave out --partitions; --to-offsets naming each)")
    if all(len(read) == 1 for read in sources.values()):
        return {topic: {"scan.startup.mode": "specific-offsets",
                        "scan.startup.specific-offsets": ";".join(f"partition:{p},offset:{o}" for p, o in sorted(offsets.items()))}
                for topic, offsets in sorted(targets.items())}
    several = next(table for table, read in sorted(sources.items()) if len(read) > 1)
    if to_time is not None:
        start = {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": str(int(to_time.timestamp() * 1000))}
    elif to_end is not None:
        start = {"scan.startup.mode": f"{to_end}-offset"}
    else:
        raise FlinkError(f"table {several} reads {', '.join(sources[several])}, and Flink's Kafka source starts a table of several topics "
                         "at a time or at either end, not at offsets per partition: backfill with --to-time, --by-duration or --to-earliest")
    return {topic: dict(start) for topic in sorted(targets)}


def source_vertices(vertices: list[dict[str, Any]], tables: list[str]) -> dict[str, str]:
    """The job graph's source vertex of each table (table -> vertex id): Flink names it ``Source: ...<catalog>.<db>.<table>``."""
    found: dict[str, str] = {}
    for table in tables:
        pattern = re.compile(r"^Source: .*\." + re.escape(table) + r"(?=$|[\s\[,]|->)")
        matches = [str(v["id"]) for v in vertices if pattern.search(str(v.get("name", "")))]
        if len(matches) == 1:
            found[table] = matches[0]
    return found


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
