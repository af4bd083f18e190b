"""``bot health report``: the metadata health report of a month (this month so far by default), as text, JSON or CSV
(one row per team and figure)."""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import sys
from datetime import datetime
from typing import Any

from bot.cli.errors import USAGE_ERROR, CommandError, command
from bot.cli.store import NotMigrated, with_database
from bot.config import Config
from bot.domain.health import OVERALL, describe, month_of
from bot.services.census import CensusService
from bot.services.health import HealthService
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.sli import SliService
from bot.store.database import Database
from bot.store.models import utcnow

FIGURES = ("undeclared_readers_total", "undeclared_readers_trend", "registered_share", "black_box_share", "black_box_trend", "proposals", "out_of_band", "through_proposals_share", "expired",
           "approved_late", "through_freezes", "registrations_failed", "median_hours_to_acknowledge", "sli_episodes",
           "median_minutes_to_acknowledge_sli", "transitions_open", "transitions_closed", "transitions_overdue")


def add_parsers(sub: Any) -> None:
    """Register ``health``."""
    health = sub.add_parser("health", help="the monthly metadata health report").add_subparsers(metavar="ACTION")
    report = health.add_parser("report", help="a month's report (default: this month so far)")
    report.add_argument("--month", help="YYYY-MM")
    report.add_argument("--format", choices=("text", "json", "csv"), default="text")
    report.add_argument("--recompute", action="store_true",
                        help="a past month computed now from the store, not the report kept when it was posted")
    report.set_defaults(run=command(run_report))


def run_report(args: argparse.Namespace) -> int:
    """Print the report."""
    this_month = month_of(utcnow().strftime("%Y-%m"))
    try:
        month = month_of(args.month) if args.month else this_month
    except ValueError as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    if month > this_month:
        raise CommandError(f"{month:%Y-%m} has not begun: a report covers this month so far ({this_month:%Y-%m}) or one before it",
                           USAGE_ERROR)
    config = Config.from_env(os.environ, require_slack=False)

    async def work(db: Database) -> dict[str, Any]:
        lineage = LineageService(db)
        sli = SliService(db, lineage, Outbox())
        census = CensusService(db, lineage, sli, config.kafka_bootstrap_servers, "cli")
        try:
            health = HealthService(db, lineage, sli, census, Outbox(), bool(config.schema_registry_url), bool(config.kafka_bootstrap_servers),
                                   config.changes_channel, utcnow)
            kept = await health.stored(f"{month:%Y-%m}") if month < this_month and not args.recompute else None
            return kept or await health.compute(month)
        finally:
            await asyncio.to_thread(census.close)

    try:
        figures = with_database(work)
    except NotMigrated as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    if args.format == "json":
        print(json.dumps(figures, indent=2, ensure_ascii=False))
    elif args.format == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(["month", "team", "figure", "value"])
        for team, values in [(OVERALL, figures[OVERALL]), *figures["teams"].items()]:
            for name in FIGURES:
                writer.writerow([figures["month"], team, name, "" if values[name] is None else values[name]])
            writer.writerow([figures["month"], team, "retire_candidates", len(values["retire_candidates"])])
            writer.writerow([figures["month"], team, "pipelines_missing_sli", len(values["pipelines_missing_sli"])])
            writer.writerow([figures["month"], team, "catalog_renamed", len(values.get("catalog_renamed") or [])])
            for kind, row in (values.get("schema_types") or {}).items():
                writer.writerows([figures["month"], team, f"{kind.lower()}_{name}", "" if value is None else value] for name, value in row.items())
    else:
        computed = figures.get("as_of")  # reports kept before it was recorded have none
        as_of = f" (as of {datetime.fromisoformat(computed):%Y-%m-%d %H:%M} UTC)" if computed else ""
        for team, values in [("Overall", figures[OVERALL]), *figures["teams"].items()]:
            print(f"{team} — {figures['month']}{as_of}")
            print("\n".join("  " + text.replace("`", "") for _, text in describe(values)))
        for missing in figures["unmeasured"]:
            print(f"not measured: {missing}")
    return 0
