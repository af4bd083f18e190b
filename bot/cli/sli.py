"""``bot sli status|coverage``: the pipelines' SLIs for scripts and terminals."""

from __future__ import annotations

import argparse
import json
from typing import Any

from bot.cli.errors import USAGE_ERROR, CommandError, command
from bot.cli.store import NotMigrated, with_database
from bot.domain.text import ago
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.sli import SliError, SliService
from bot.store.database import Database


def add_parsers(sub: Any) -> None:
    """Register ``sli``."""
    sli = sub.add_parser("sli", help="pipeline SLIs: status and coverage").add_subparsers(metavar="ACTION")
    status = sli.add_parser("status", help="every SLI of every pipeline (or of one): value, threshold, state, since")
    status.add_argument("pipeline", nargs="?")
    status.add_argument("--format", choices=("text", "json"), default="text")
    status.set_defaults(run=command(run_status))
    coverage = sli.add_parser("coverage", help="pipelines that are not production-ready: a mandatory SLI unmeasured or silent")
    coverage.add_argument("--format", choices=("text", "json"), default="text")
    coverage.set_defaults(run=command(run_coverage))


def _sli(work: Any) -> Any:
    async def run(db: Database) -> Any:
        try:
            return await work(SliService(db, LineageService(db), Outbox()))
        except SliError as err:
            raise CommandError(str(err)) from None

    try:
        return with_database(run)
    except NotMigrated as err:
        raise CommandError(str(err), USAGE_ERROR) from None


def run_status(args: argparse.Namespace) -> int:
    """``bot sli status [PIPELINE]``: ``[{"pipeline", "sli", "value", "threshold", "state", "since", "episode", "measured_at",
    "age_seconds"}]`` (the value is the newest sample's, as old as it says: the bot may not be running)."""
    rows = _sli(lambda service: service.status(args.pipeline))
    if args.format == "json":
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("no pipeline is declared: add `pipelines:` to the catalog and `bot catalog load` it")
    for row in rows:
        value = "—" if row["value"] is None else f"{row['value']:g}"
        since = f" since {row['since']}" if row["since"] else ""
        measured = f"  measured {row['measured_at'][:16].replace('T', ' ')} UTC ({ago(row['age_seconds'])} ago)" if row["measured_at"] else ""
        print(f"{row['pipeline']:<24} {row['sli']:<20} {value:>12}  {row['state']:<22} ({row['threshold']}){since}{measured}")
    return 0


def run_coverage(args: argparse.Namespace) -> int:
    """``bot sli coverage``: exit 1 when some pipeline is not production-ready."""
    rows = _sli(lambda service: service.coverage())
    if args.format == "json":
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        for row in rows:
            verdict = ("not production-ready: nothing measures " + ", ".join(row["missing"]) if row["missing"]
                       else "silent: no recent samples of " + ", ".join(row["silent"]) if row["silent"] else "covered")
            late = ", ".join(f"{count:,} late {sli}" for sli, count in sorted(row["late"].items()))
            print(f"{row['pipeline']} ({row['owner']}): {verdict}" + (f"; dropped {late} sample(s)" if late else ""))
    return 1 if any(r["missing"] for r in rows) else 0
