"""``bot flink status JOB``: a catalog Flink job as Flink itself sees it (state, checkpoints against their interval,
restarts, backpressure, the sources' pending records, the newest savepoint); ``bot flink pause|resume JOB``: the job
stopped with a savepoint and started again from it, as oncall operations (a plan first, ``--yes`` runs it)."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from bot.cli.errors import USAGE_ERROR, CommandError, command
from bot.cli.ops import REFUSED, actor, read_file, show, take_over, with_ops
from bot.cli.store import NotMigrated, with_database
from bot.config import Config
from bot.domain.flink.status import FlinkError, FlinkJobMissing, FlinkUnavailable, JobStatus
from bot.domain.ops import OpKind, OpsError, OpState
from bot.services.flink import FlinkService
from bot.services.lineage import LineageService
from bot.services.operations import DRY_RUN, Operations
from bot.store.database import Database
from bot.store.models import Operation

JOB_MISSING, FLINK_AWAY = 1, 3


def add_parsers(sub: Any) -> None:
    """Register ``flink``."""
    flink = sub.add_parser("flink", help="Flink jobs of the catalog, from Flink's REST API (FLINK_REST_URL)",
                           description="Exit codes: 0 answered; 1 Flink runs no job of that name; 2 bad input (not a catalog job "
                                       "with flink:, FLINK_REST_URL unset); 3 Flink did not answer. A drill exits 1 when the state cannot "
                                       "be restored.").add_subparsers(metavar="ACTION")
    status = flink.add_parser("status", help="state, job id, last checkpoint (age, duration against the interval), failures, restarts, "
                                             "backpressure, the newest savepoint")
    status.add_argument("job", help="the catalog job's name (Flink's pipeline.name)")
    status.add_argument("--format", choices=("text", "json"), default="text")
    status.set_defaults(run=command(run_status))
    pause = flink.add_parser("pause", help="stop a job with a savepoint (a plan first; --yes does it); oncall's, audited, in the calendar")
    pause.add_argument("job")
    pause.add_argument("--yes", action="store_true", help="stop it now")
    pause.add_argument("--format", choices=("text", "json"), default="text")
    pause.set_defaults(run=command(run_pause))
    drill = flink.add_parser("drill", help="a restore drill: the job's state, from a fresh savepoint, restored into a throwaway job that "
                                           "never runs (the running job untouched); recorded for the monthly report")
    drill.add_argument("job")
    drill.add_argument("--sql", metavar="FILE", help="the job's SQL (default: its last passed release's)")
    drill.add_argument("--format", choices=("text", "json"), default="text")
    drill.set_defaults(run=command(run_drill))
    resume = flink.add_parser("resume", help="start a job again from its savepoint with its SQL (a plan first; --yes does it)")
    resume.add_argument("job")
    resume.add_argument("--sql", metavar="FILE", help="the job's SQL (default: its last passed release's)")
    resume.add_argument("--savepoint", metavar="PATH", help="the savepoint to start from (default: its last pause's)")
    resume.add_argument("--yes", action="store_true", help="start it now")
    resume.add_argument("--format", choices=("text", "json"), default="text")
    resume.set_defaults(run=command(run_resume))


def _flink(work: Any) -> Any:
    config = Config.from_env(os.environ, require_slack=False)

    async def run(db: Database) -> Any:
        try:
            return await work(FlinkService(db, LineageService(db), config.flink_rest_url, config.flink_savepoint_dir, config.flink_root,
                                             version=config.flink_version))
        except FlinkUnavailable as err:
            raise CommandError(str(err), FLINK_AWAY) from None
        except FlinkJobMissing as err:
            raise CommandError(str(err), JOB_MISSING) from None
        except FlinkError as err:
            raise CommandError(str(err), USAGE_ERROR) from None

    try:
        return with_database(run)
    except NotMigrated as err:
        raise CommandError(str(err), USAGE_ERROR) from None


def run_status(args: argparse.Namespace) -> int:
    """One object for ``--format json``: ``{"job", "job_id", "state", "taken_at", "started", "checkpoints": {...}, "restarts",
    "backpressure", "vertices", "pending_records", "exception", "savepoint"}``."""
    status: JobStatus = _flink(lambda flink: flink.status(args.job))
    print(json.dumps(status.as_json(), indent=2) if args.format == "json" else "\n".join(status.lines()))
    return 0


def _operate(args: argparse.Namespace, kind: OpKind, plan: Callable[[Operations], Awaitable[Operation]]) -> int:
    """Plan; with ``--yes`` confirm and run to the end (a run of the same job left midway is resumed instead)."""
    async def work(ops: Operations) -> Operation:
        left = await ops.find_unfinished(kind, {"job": args.job}) if args.yes else None
        if left is not None:
            print(f"#{left.id} is a {kind.value} of {args.job} left {left.state} by {left.lease_owner}: resuming it", file=sys.stderr)
            claimed = await take_over(ops, left)
            return await ops.run_flink(int(left.id or 0), resumed=True) if claimed is not None else await ops.get(int(left.id or 0))
        row = await plan(ops)
        show(row, args.format, final=not args.yes)
        if not args.yes:
            return row
        await ops.confirm(int(row.id or 0), actor())
        return await ops.run_flink(int(row.id or 0))

    row = with_ops(work)
    if args.yes:
        show(row, args.format, final=True, extra={"savepoint": (row.progress or {}).get("savepoint") or row.plan["flink"].get("savepoint")})
    return 0 if row.state in (OpState.APPLIED.value, OpState.DONE.value, DRY_RUN) else REFUSED


def run_pause(args: argparse.Namespace) -> int:
    """``bot flink pause JOB``: the plan; with ``--yes`` the job stopped with a savepoint (its path in the answer)."""
    return _operate(args, OpKind.PAUSE, lambda ops: ops.plan_pause(args.job, actor(), None, dry_run=not args.yes))


def run_resume(args: argparse.Namespace) -> int:
    """``bot flink resume JOB``: the plan; with ``--yes`` the job started again from its savepoint."""
    try:
        sql = read_file(args.sql) if args.sql else None
    except OpsError as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    return _operate(args, OpKind.RESUME, lambda ops: ops.plan_resume(args.job, actor(), None, dry_run=not args.yes, sql=sql, savepoint=args.savepoint))


def run_drill(args: argparse.Namespace) -> int:
    """``bot flink drill JOB``: ``{"job", "ok", "savepoint", "reason", "at"}``; exit 1 when the state cannot be restored."""
    try:
        sql = read_file(args.sql) if args.sql else None
    except OpsError as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    drilled = _flink(lambda flink: flink.drill(args.job, sql, f"{getpass.getuser()} (terminal)"))
    answer = {"job": drilled.job, "ok": drilled.ok, "savepoint": drilled.savepoint, "reason": drilled.reason or None,
              "at": drilled.created_at.isoformat()}
    if args.format == "json":
        print(json.dumps(answer, indent=2))
    elif drilled.ok:
        print(f"{drilled.job}: restored from {drilled.savepoint} in a throwaway job (never scheduled, then cancelled): its state maps")
    else:
        print(f"{drilled.job}: cannot be restored from {drilled.savepoint}: {drilled.reason}")
    return 0 if drilled.ok else JOB_MISSING
