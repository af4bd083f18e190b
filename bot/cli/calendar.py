"""``bot calendar list|add|conflicts``: the change calendar for scripts and terminals."""

from __future__ import annotations

import argparse
import json
import os
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.cli.errors import USAGE_ERROR, CommandError, command
from bot.cli.store import NotMigrated, with_database
from bot.domain.calendar import CalendarError, Kind, Scope
from bot.domain.lineage.catalog import moment
from bot.services.calendar import CalendarService
from bot.services.lineage import LineageService
from bot.store.database import Database


def add_parsers(sub: Any) -> None:
    """Register ``calendar``."""
    calendar = sub.add_parser("calendar", help="the change calendar: entries, freezes, conflicts").add_subparsers(metavar="ACTION")
    listing = calendar.add_parser("list", help="entries in a time range (default: from today, 30 days), with their conflicts")
    listing.add_argument("--from", dest="start", help="ISO 8601 time with an offset (default: today 00:00 UTC)")
    listing.add_argument("--to", dest="end", help="ISO 8601 time with an offset (default: 30 days after --from)")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    listing.set_defaults(run=command(run_list))
    conflicts = calendar.add_parser("conflicts", help="only the entries that conflict, in the same range")
    conflicts.add_argument("--from", dest="start")
    conflicts.add_argument("--to", dest="end")
    conflicts.add_argument("--format", choices=("text", "json"), default="text")
    conflicts.set_defaults(run=command(run_conflicts))
    add = calendar.add_parser("add", help="book a window (an upgrade, a backfill, maintenance...)")
    add.add_argument("--kind", required=True, choices=[k.value for k in Kind if k not in (Kind.SCHEMA_CHANGE, Kind.TRANSITION)])
    add.add_argument("--title", required=True)
    add.add_argument("--start", required=True, help="ISO 8601 with an offset, e.g. 2026-12-03T02:00:00Z")
    add.add_argument("--end", required=True)
    add.add_argument("--owner", required=True, help="the owning team (from the catalog)")
    add.add_argument("--subject", action="append", default=[], help="a subject in scope (repeatable)")
    add.add_argument("--dataset", action="append", default=[], help="a dataset in scope (repeatable)")
    add.add_argument("--job", action="append", default=[], help="a job in scope (repeatable)")
    add.add_argument("--by", default=os.environ.get("USER", "cli"), help="who books it (default: $USER)")
    add.set_defaults(run=command(run_add))


def _range(args: argparse.Namespace) -> tuple[datetime, datetime]:
    try:
        start = moment(args.start) if args.start else datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        end = moment(args.end) if args.end else start + timedelta(days=30)
    except CalendarError as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    if end < start:
        raise CommandError("--to is before --from", USAGE_ERROR)
    return start, end


def _calendar(work: Any) -> Any:
    async def run(db: Database) -> Any:
        return await work(CalendarService(db, LineageService(db)))

    try:
        return with_database(run)
    except NotMigrated as err:
        raise CommandError(str(err), USAGE_ERROR) from None


def run_list(args: argparse.Namespace, only_conflicts: bool = False) -> int:
    """``bot calendar list``: the JSON contract, or a readable agenda."""
    start, end = _range(args)
    entries = _calendar(lambda service: service.listing(start, end))
    if only_conflicts:
        entries = [e for e in entries if e["conflicts"]]
    if args.format == "json":
        print(json.dumps(entries, indent=2, ensure_ascii=False))
        return 0
    if not entries:
        print(f"nothing booked between {start:%Y-%m-%d %H:%M} and {end:%Y-%m-%d %H:%M} UTC")
    for entry in entries:
        scope = ", ".join(f"{k[:-1]} {n}" for k, names in entry["scope"].items() for n in names) or "no scope"
        print(f"#{entry['id']} {entry['start']} → {entry['end']}  {entry['kind']} · {entry['status']} · {entry['owner']}: {entry['title']} ({scope})")
        for conflict in entry["conflicts"]:
            print(f"    conflict with {conflict['with']}: {conflict['reason']}")
    return 0


def run_conflicts(args: argparse.Namespace) -> int:
    """``bot calendar conflicts``."""
    return run_list(args, only_conflicts=True)


def run_add(args: argparse.Namespace) -> int:
    """``bot calendar add``."""
    try:
        start, end = moment(args.start), moment(args.end)
    except CalendarError as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    scope = Scope(frozenset(args.subject), frozenset(args.dataset), frozenset(args.job))

    async def book(service: CalendarService) -> int:
        try:
            return await service.add(kind=args.kind, title=args.title, start=start, end=end, owner=args.owner, booked_by=args.by,
                                     scope=scope, surface="cli")
        except CalendarError as err:
            raise CommandError(str(err)) from None

    number = _calendar(book)
    print(f"booked #{number}: {args.kind} {args.title!r} {start:%Y-%m-%d %H:%M} → {end:%Y-%m-%d %H:%M} UTC")
    return 0
