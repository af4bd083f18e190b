"""``bot backfill``, ``bot replay`` and ``bot ops status|cancel|undo``: the oncall operations from a terminal.

The plan is printed first; ``--yes`` runs it to the end (a replay of the same request left running by a bot or a
terminal that died is resumed from its last committed transaction once its lease runs out). The audit records
the surface ``cli`` and the operating-system user."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import os
import sys
from datetime import datetime, timedelta
from typing import Any

from bot.cli.errors import USAGE_ERROR, CommandError, command
from bot.cli.store import NotMigrated, with_database
from bot.config import Config
from bot.domain.dead_letters import PEEK_DEFAULT, peek_request
from bot.domain.flink.backfill import plan_lines
from bot.domain.ops import (
    TARGETS,
    BackfillRequest,
    OpKind,
    OpsError,
    OpState,
    ReplayRequest,
    backfill_request,
    deleted_text,
    group_id,
    moves_table,
    offsets_csv,
    replay_request,
    skipped,
    stamp_notes,
    topics_named,
    topics_of,
)
from bot.domain.text import ago
from bot.flink.planner import Planner
from bot.kafka.avro import Registry
from bot.services import leases
from bot.services.calendar import CalendarService
from bot.services.flink import FlinkService
from bot.services.lineage import LineageService
from bot.services.operations import DRY_RUN, Actor, Operations
from bot.services.outbox import Outbox
from bot.services.sli import SliService
from bot.store.database import Database
from bot.store.models import Operation, aware, utcnow

REFUSED = 1


def add_parsers(sub: Any) -> None:
    """Register ``backfill``, ``replay`` and ``ops``."""
    backfill = sub.add_parser("backfill", help="reset a stopped consumer group to a time or offsets (a plan first; --yes applies it)")
    backfill.add_argument("group")
    backfill.add_argument("topic", nargs="?", help="the topic, or several separated by commas (orders,payments)")
    backfill.add_argument("--all-topics", action="store_true", help="every topic the group has committed offsets on")
    target = backfill.add_mutually_exclusive_group()
    target.add_argument("--to-time", help="ISO 8601 with a zone, e.g. 2026-12-02T08:00:00Z")
    target.add_argument("--to-offsets", help="PARTITION:OFFSET,... e.g. 0:1200,1:980")
    target.add_argument("--by-duration", help="go back this long, e.g. 2h, 90m or PT1H30M (ISO 8601, as kafka-consumer-groups takes it)")
    target.add_argument("--to-earliest", action="store_true", help="to the earliest retained offset (everything retained is read again)")
    target.add_argument("--to-latest", action="store_true", help="to the latest offset (what the group has not read is skipped: data loss for it)")
    target.add_argument("--shift-by", metavar="N", help="move by N messages from the committed offset (negative: read again; positive: skip), "
                                                        "clamped to the log")
    target.add_argument("--from-file", metavar="FILE", help="to the offsets of a topic,partition,offset CSV (what kafka-consumer-groups "
                                                            "--export and bot backfill --export write)")
    backfill.add_argument("--partitions", help="only these partitions, e.g. 0,1")
    backfill.add_argument("--export", action="store_true", help="print the offsets as topic,partition,offset CSV instead: the plan's targets, "
                                                                "or alone the group's committed offsets now (nothing moves)")
    backfill.add_argument("--sql", metavar="FILE", help="a Flink job's group: the job's SQL, to start it again with (default: its last "
                                                         "passed release's)")
    backfill.add_argument("--yes", action="store_true", help="apply the plan (a Flink job's: stop it with a savepoint, restart it from a "
                                                             "copy without its source's state)")
    backfill.add_argument("--format", choices=("text", "json"), default="text")
    backfill.set_defaults(run=command(run_backfill))

    replay = sub.add_parser("replay", help="copy a DLQ's messages back exactly once, keeping event time (a plan first; --yes runs it)")
    replay.add_argument("dlq")
    replay.add_argument("--to", help="the target topic (a replay-only topic keeps replays out of live windows)")
    replay.add_argument("--to-original", action="store_true", help="send each dead letter back to the topic its headers name (Kafka "
                                                                   "Connect's, Spring's, or the header the pipeline's catalog entry names)")
    replay.add_argument("--peek", nargs="?", const=str(PEEK_DEFAULT), metavar="N",
                        help=f"look before you replay: the newest N dead letters ({PEEK_DEFAULT} by default) decoded, grouped by error")
    replay.add_argument("--error-header", help="with --peek: the header that holds the error, when not Kafka Connect's or Spring's")
    replay.add_argument("--since", help="only messages from this time (ISO 8601)")
    replay.add_argument("--until", help="only messages before this time (ISO 8601)")
    replay.add_argument("--limit", help="at most this many (the oldest)")
    replay.add_argument("--filter", help="only messages with this header, e.g. error=timeout")
    replay.add_argument("--rate", help="at most this many per second, e.g. 500/s")
    replay.add_argument("--again", action="store_true", help="copy messages an earlier replay already copied")
    replay.add_argument("--dry-run", action="store_true", help="only show the plan")
    replay.add_argument("--yes", action="store_true", help="run the plan to the end")
    replay.add_argument("--format", choices=("text", "json"), default="text")
    replay.set_defaults(run=command(run_replay))

    ops = sub.add_parser("ops", help="oncall operations: status, cancel, undo").add_subparsers(metavar="ACTION")
    status = ops.add_parser("status", help="running and recent backfills and replays")
    status.add_argument("--format", choices=("text", "json"), default="text")
    status.set_defaults(run=command(run_status))
    for name, text in (("cancel", "cancel a plan, or stop a running replay at its next transaction"),
                       ("undo", "put an applied backfill's group back where it was")):
        action = ops.add_parser(name, help=text)
        action.add_argument("operation", type=int)
        action.add_argument("--format", choices=("text", "json"), default="text")
        action.set_defaults(run=command(run_cancel if name == "cancel" else run_undo))


def _options(args: argparse.Namespace, names: tuple[str, ...], flags: tuple[str, ...] = ()) -> list[str]:
    words: list[str] = []
    for name in names:
        value = getattr(args, name.strip("-").replace("-", "_"))
        if value is not None:
            words += [name, value]
    return words + [flag for flag in flags if getattr(args, flag.strip("-").replace("-", "_"))]


def with_ops(work: Any) -> Any:
    config = Config.from_env(os.environ, require_slack=False)

    async def run(db: Database) -> Any:
        lineage = LineageService(db)
        registry = Registry(config.schema_registry_url) if config.schema_registry_url else None
        planner = Planner(config.flink_root)
        flink = FlinkService(db, lineage, config.flink_rest_url, config.flink_savepoint_dir, config.flink_root, planner, version=config.flink_version)
        ops = Operations(db, lineage, SliService(db, lineage, Outbox()), Outbox(), CalendarService(db, lineage), None,
                         config.kafka_bootstrap_servers, registry, leases.process_owner("cli"),
                         lease=timedelta(seconds=config.ops_lease_seconds), flink=flink)
        try:
            return await work(ops)
        except OpsError as err:
            raise CommandError(str(err), REFUSED) from None
        finally:
            await planner.close()
            await asyncio.to_thread(ops.close)
            if registry is not None:
                registry.close()

    try:
        return with_database(run)
    except NotMigrated as err:
        raise CommandError(str(err), USAGE_ERROR) from None


def actor() -> Actor:
    return Actor(getpass.getuser(), "cli")


def _needs_kafka() -> None:
    if not Config.from_env(os.environ, require_slack=False).kafka_bootstrap_servers:
        raise CommandError("KAFKA_BOOTSTRAP_SERVERS is not set: say which cluster (host:port,...)", USAGE_ERROR)


def run_backfill(args: argparse.Namespace) -> int:
    """``bot backfill GROUP TOPIC[,TOPIC...] | --all-topics ...``: the plan; with ``--yes`` applied."""
    _needs_kafka()
    if args.export and args.yes:
        raise CommandError("--export prints offsets and moves nothing: leave out --yes (apply them later with --from-file FILE --yes)", USAGE_ERROR)
    words = _options(args, ("--to-time", "--to-offsets", "--by-duration", "--shift-by", "--partitions", "--from-file"),
                     ("--to-earliest", "--to-latest", "--all-topics"))
    try:
        if args.export and not any(w in (*TARGETS, "--from-file") for w in words):
            return run_export(args)
        file = read_file(args.from_file) if args.from_file is not None else None
        sql = read_file(args.sql) if args.sql is not None else None
        request = backfill_request([args.group, *([args.topic] if args.topic else []), *words], utcnow(), file)
    except OpsError as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    if args.export:
        row = with_ops(lambda ops: ops.plan_backfill(request, actor(), None, dry_run=True))
        planned: dict[str, dict[int, int]] = {}
        for move in row.plan["moves"]:
            planned.setdefault(move["topic"], {})[move["partition"]] = move["target"]
        sys.stdout.write(offsets_csv(planned))
        print(f"#{row.id}: the planned offsets of {request.group} on {', '.join(sorted(planned))}; nothing moved", file=sys.stderr)
        return 0

    async def work(ops: Operations) -> Operation:
        left = await ops.find_unfinished(OpKind.BACKFILL, request.as_json()) if args.yes else None
        if left is not None:  # a Flink backfill of this group whose run stopped midway: on from its last step
            print(f"#{left.id} is a backfill of {request.group} left {left.state} by {left.lease_owner}: resuming it after its last step",
                  file=sys.stderr)
            claimed = await take_over(ops, left)
            return await ops.run_flink(int(left.id or 0), resumed=True) if claimed is not None else await ops.get(int(left.id or 0))
        row = await ops.plan_backfill(request, actor(), None, dry_run=not args.yes, sql=sql)
        show(row, args.format, final=not args.yes)
        if not args.yes:
            return row
        row = await ops.confirm(int(row.id or 0), actor())
        return await ops.run_flink(int(row.id or 0)) if row.state == OpState.RUNNING.value else row

    row = with_ops(work)
    if args.yes:
        show(row, args.format, final=True)
    return 0 if row.state in (OpState.APPLIED.value, DRY_RUN) else REFUSED


def read_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read(10_000_000)
    except (OSError, UnicodeDecodeError) as err:
        raise OpsError(f"cannot read {path}: {err}") from None


def run_export(args: argparse.Namespace) -> int:
    """``bot backfill GROUP TOPIC[,TOPIC...] | --all-topics --export``: the group's committed offsets now, as ``--from-file``
    reads them."""
    try:
        group_id(args.group)
        if bool(args.topic) == args.all_topics:
            raise OpsError("give the topics or --all-topics, one of them")
        topics = topics_of(args.topic) if args.topic else ()
    except OpsError as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    offsets = with_ops(lambda ops: ops.committed_offsets(args.group, topics))
    sys.stdout.write(offsets_csv(offsets))
    count = sum(len(o) for o in offsets.values())
    print(f"the committed offsets of {args.group} on {', '.join(sorted(offsets))} ({count} partitions); nothing moved", file=sys.stderr)
    return 0


async def take_over(ops: Operations, left: Operation) -> Operation | None:
    """Take an unfinished operation over to resume it: at once when its holder is a process of this machine that ended,
    when its lease runs out when its holder cannot be told; refused while a live process runs it (never two at once).
    None when it ended meanwhile."""
    first = left.lease_until
    while (claimed := await ops.claim(left)) is None:
        fresh = await ops.get(int(left.id or 0))
        if fresh.state not in (OpState.RUNNING.value, OpState.CANCELLING.value):
            return None
        renewed = first is not None and fresh.lease_until is not None and fresh.lease_until > first
        if leases.holder(fresh.lease_owner) is leases.Holder.ALIVE or renewed:
            raise CommandError(f"#{left.id} is running in another process ({fresh.lease_owner}), which holds it: it is not run twice. "
                               f"Follow it with `bot ops status`, or stop that process first", REFUSED)
        if first is None:
            first = fresh.lease_until
        await asyncio.sleep(1.0)
    return claimed


def run_replay(args: argparse.Namespace) -> int:
    """``bot replay DLQ --to TOPIC ...``: the plan; with ``--yes`` run to the end (or an interrupted run of it resumed)."""
    _needs_kafka()
    if args.peek is not None:
        return run_peek(args)
    try:
        request, dry_run = replay_request([args.dlq, *_options(args, ("--to", "--since", "--until", "--limit", "--filter", "--rate"),
                                                                ("--again", "--dry-run", "--to-original"))], utcnow())
    except OpsError as err:
        raise CommandError(str(err), USAGE_ERROR) from None

    async def work(ops: Operations) -> Operation:
        left = None if dry_run else await ops.find_unfinished(OpKind.REPLAY, request.as_json())
        if left is not None and args.yes:
            print(f"#{left.id} is this same replay, left {left.state} by {left.lease_owner}: resuming it from its last committed transaction",
                  file=sys.stderr)
            claimed = await take_over(ops, left)
            return await ops.run(int(left.id or 0), resumed=True) if claimed is not None else await ops.get(int(left.id or 0))
        row = await ops.plan_replay(request, dry_run or not args.yes, actor(), None)
        show(row, args.format, final=dry_run or not args.yes)
        if dry_run or not args.yes:
            return row
        await ops.confirm(int(row.id or 0), actor())
        return await ops.run(int(row.id or 0))

    row = with_ops(work)
    if args.yes and not dry_run:
        show(row, args.format, final=True)
    return 0 if row.state in (OpState.DONE.value, OpState.PLANNED.value, DRY_RUN) else REFUSED


def run_peek(args: argparse.Namespace) -> int:
    """``bot replay DLQ --peek [N]``: the newest dead letters, decoded and grouped by error; nothing is copied."""
    try:
        request = peek_request([args.dlq, args.peek, *(["--error-header", args.error_header] if args.error_header else [])])
    except OpsError as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    peek = with_ops(lambda ops: ops.peek(request, actor()))
    if args.format == "json":
        print(json.dumps(peek.as_json(), indent=2))
        return 0
    if not peek.read:
        print(f"{request.dlq} holds no dead letters now: nothing to replay")
        return 0
    print(f"{request.dlq}: the newest {peek.read:,} of the {peek.held:,} dead letters it holds, by error:")
    for group in peek.groups:
        topics = ", ".join(f"{topic} x{count:,}" for topic, count in sorted(group.topics.items(), key=lambda item: -item[1]))
        print(f"\n  {group.count:,} x {group.error}" + (f"  (from {topics})" if topics else ""))
        for letter in group.examples:
            print(f"    [{letter.partition}@{letter.offset}] " + letter.text[:500].replace("\n", "\n    "))
    return 0


def run_status(args: argparse.Namespace) -> int:
    """``bot ops status``: running operations first, then the most recent."""
    rows = with_ops(lambda ops: ops.recent(50))
    if args.format == "json":
        print(json.dumps([as_json(r) for r in rows], indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no operation yet: `bot backfill` or `bot replay` plans one")
    now = utcnow()
    for row in rows:
        print(f"#{row.id:<5} {row.kind:<9} {row.state:<11} {summary(row)}  ({row.requested_by} via {row.surface}, {row.created_at:%Y-%m-%d %H:%M})"
              + heard(row, now))
    return 0


def heard(row: Operation, now: datetime) -> str:
    """For a run under way: when its runner last wrote, and whether it went quiet (its lease ran out: the figures are from
    then, and the next bot to look takes the run over). Empty for anything else."""
    if row.state not in (OpState.RUNNING.value, OpState.CANCELLING.value):
        return ""
    said = f"; last heard {aware(row.updated_at):%H:%M} UTC ({ago((now - aware(row.updated_at)).total_seconds())} ago)"
    if leases.holder(row.lease_owner) is leases.Holder.DEAD:
        said += "; the process running it has ended: the next `bot replay … --yes` or a running bot takes it over"
    elif row.lease_until is not None and aware(row.lease_until) < now:
        said += f"; its runner went quiet at {aware(row.lease_until):%Y-%m-%d %H:%M} UTC: a running bot takes it over"
    return said


def run_cancel(args: argparse.Namespace) -> int:
    """``bot ops cancel ID``."""
    row = with_ops(lambda ops: ops.cancel(args.operation, actor()))
    show(row, args.format, final=True)
    return 0


def run_undo(args: argparse.Namespace) -> int:
    """``bot ops undo ID``."""
    _needs_kafka()
    async def work(ops: Operations) -> Operation:
        row = await ops.undo(args.operation, actor())
        return await ops.run_flink(int(row.id or 0)) if row.state == OpState.RUNNING.value else row  # a Flink backfill's

    row = with_ops(work)
    show(row, args.format, final=True)
    return 0 if row.state == OpState.UNDONE.value else REFUSED


def as_json(row: Operation) -> dict[str, Any]:
    """An operation for scripts."""
    return {"operation": row.id, "kind": row.kind, "state": row.state, "team": row.team, "requested_by": row.requested_by, "surface": row.surface,
            "request": row.request, "plan": row.plan, "progress": row.progress, "result": row.result or None,
            "created_at": row.created_at.isoformat(), "updated_at": aware(row.updated_at).isoformat(), "calendar_entry": row.calendar_entry,
            "lease_until": aware(row.lease_until).isoformat() if row.lease_until else None}


def summary(row: Operation) -> str:
    """One line: what it does."""
    if row.kind in (OpKind.PAUSE.value, OpKind.RESUME.value):
        flink = row.plan.get("flink") or {}
        return f"the Flink job {row.request['job']}" + (f" from {flink['savepoint']}" if row.kind == OpKind.RESUME.value else "") + \
            (f": {row.result}" if row.result else "")
    if row.kind == OpKind.BACKFILL.value:
        request = BackfillRequest.from_json(row.request)
        return f"{request.group} on {topics_named(request, row.plan.get('moves', []))} {'by' if request.shift is not None else 'to'} {request.target_text()}"
    replay = ReplayRequest.from_json(row.request)
    copied = row.progress.get("copied")
    return f"{replay.dlq} -> {replay.target_text()}: {row.plan.get('count', 0):,} to copy" + (f", {copied:,} copied" if copied is not None else "")


def show(row: Operation, form: str, final: bool, extra: dict[str, Any] | None = None) -> None:
    """The plan or the outcome; JSON once, at the end (with ``extra`` keys)."""
    if form == "json":
        if final:
            print(json.dumps({**as_json(row), **(extra or {})}, indent=2, ensure_ascii=False))
        return
    print(f"#{row.id} {row.kind} {row.state}: {summary(row)}")
    freeze = row.plan.get("freeze")
    if freeze and row.state in (OpState.PLANNED.value, DRY_RUN):
        print(f"  inside the freeze {freeze['name']} (until {freeze['ends']}): it is not refused, and the run is booked in the calendar inside it")
    if row.state in (OpState.PLANNED.value, DRY_RUN):
        for booked in row.plan.get("booked") or []:
            print(f"  meets booked change #{booked['id']} {booked['title']} ({booked['kind']}, {booked['start']} – {booked['end']}): {booked['why']}")
    if row.kind == OpKind.BACKFILL.value and row.state in (OpState.PLANNED.value, DRY_RUN):
        for line in moves_table(row.plan["moves"], "  ! before the earliest retained offset: starts there; older data is gone"):
            print(f"  {line}")
        if deleted_text(row.plan["moves"]):
            print(f"  ! {deleted_text(row.plan['moves'])}")
        if skipped(row.plan["moves"]):
            print(f"  ! {skipped(row.plan['moves']):,} messages will be skipped: the group has not read them and never will (data loss for it)")
        flink = row.plan.get("flink")
        for line in plan_lines(flink, sum(max(0, m["reread"]) for m in row.plan["moves"])) if flink else []:
            print(f"  {line}")
        if final and row.state == DRY_RUN:
            print("nothing moved: run again with --yes to apply" + (" (the job keeps running until then)" if flink else " (stop the job first)"))
    elif row.kind == OpKind.REPLAY.value and row.state in (OpState.PLANNED.value, DRY_RUN):
        plan = row.plan
        parked = plan.get("parked", 0)
        print(f"  {plan['count'] - parked:,} to copy; {plan['skipped']:,} already copied by an earlier replay (skipped; --again copies them); "
              f"{plan['filtered']:,} left out by the filter")
        if plan.get("route", {}).get("target", "") is None:
            for topic, count in sorted(plan["targets"].items(), key=lambda item: -item[1]):
                print(f"    {count:>10,} back to {topic}")
        for note in stamp_notes(str(row.request["dlq"]), plan.get("append_time") or []):
            print(f"  ! {note}")
        if parked:
            print(f"  {parked:,} will be parked in {plan['parked_topic']}, not replayed: dead-lettered more than {plan['route']['max_replays']} times")
            for error, count in plan["parked_errors"].items():
                print(f"    {count:>10,} last error: {error}")
        for sample in plan["samples"]:
            print("  " + sample.replace("\n", "\n    "))
        if final:
            print("nothing copied: run again with --yes to run it")
    elif row.result:
        print(f"  {row.result}")
