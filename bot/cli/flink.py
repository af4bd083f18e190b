"""``bot flink status JOB``: a catalog Flink job as Flink itself sees it (state, checkpoints against their interval,
restarts, backpressure, the sources' pending records, the newest savepoint)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from bot.cli.errors import USAGE_ERROR, CommandError, command
from bot.cli.store import NotMigrated, with_database
from bot.config import Config
from bot.domain.flink.status import FlinkError, FlinkJobMissing, FlinkUnavailable, JobStatus
from bot.services.flink import FlinkService
from bot.services.lineage import LineageService
from bot.store.database import Database

JOB_MISSING, FLINK_AWAY = 1, 3


def add_parsers(sub: Any) -> None:
    """Register ``flink``."""
    flink = sub.add_parser("flink", help="Flink jobs of the catalog, from Flink's REST API (FLINK_REST_URL)",
                           description="Exit codes: 0 answered; 1 Flink runs no job of that name; 2 bad input (not a catalog job "
                                       "with flink:, FLINK_REST_URL unset); 3 Flink did not answer.").add_subparsers(metavar="ACTION")
    status = flink.add_parser("status", help="state, job id, last checkpoint (age, duration against the interval), failures, restarts, "
                                             "backpressure, the newest savepoint")
    status.add_argument("job", help="the catalog job's name (Flink's pipeline.name)")
    status.add_argument("--format", choices=("text", "json"), default="text")
    status.set_defaults(run=command(run_status))


def _flink(work: Any) -> Any:
    config = Config.from_env(os.environ, require_slack=False)

    async def run(db: Database) -> Any:
        try:
            return await work(FlinkService(db, LineageService(db), config.flink_rest_url))
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
