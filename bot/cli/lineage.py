"""``bot catalog``, ``bot lineage`` and ``bot impact``: lineage from the command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from bot.cli.errors import USAGE_ERROR, CommandError, command
from bot.cli.store import NotMigrated, with_database
from bot.config import Config
from bot.domain.compat.formats import INVALID, SchemaType, field_walk_of, parse_schema
from bot.domain.lineage.catalog import Catalog, Problem, read_catalog
from bot.domain.lineage.coverage import coverage
from bot.domain.lineage.field_paths import FieldWalk
from bot.domain.lineage.graph import Impact, LineageError, LineageGraph
from bot.domain.lineage.model import DatasetId
from bot.domain.lineage.openlineage import LineageEvent, OpenLineageError, parse_event
from bot.domain.readers import Activity, Census
from bot.domain.text import ago
from bot.services.census import CensusError, CensusService
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.registry import Registry
from bot.services.sli import SliService
from bot.store.database import Database
from bot.store.models import aware


def add_parsers(sub: Any) -> None:
    """Register ``catalog``, ``lineage`` and ``impact``."""
    catalog = sub.add_parser("catalog", help="check or load the declarative catalog (YAML)").add_subparsers(metavar="ACTION")
    validate = catalog.add_parser("validate", help="report every problem in a catalog file, with its place")
    validate.add_argument("file")
    validate.set_defaults(run=command(run_validate))
    load = catalog.add_parser("load", help="check a catalog file and store it (replaces the previous catalog)")
    load.add_argument("file")
    load.set_defaults(run=command(run_load))

    lineage = sub.add_parser("lineage", help="import OpenLineage events, report coverage").add_subparsers(metavar="ACTION")
    imported = lineage.add_parser("import", help="store OpenLineage RunEvents, one JSON object per line")
    imported.add_argument("file", help="FILE.jsonl, or - for stdin")
    imported.set_defaults(run=command(run_import))
    covered = lineage.add_parser("coverage", help="black-box share, field-level share of subjects, unread datasets")
    covered.add_argument("--format", choices=("text", "json"), default="text")
    covered.set_defaults(run=command(run_coverage))

    export = catalog.add_parser("export", help="the loaded catalog as YAML, with the consumer groups attributed or retired since")
    export.add_argument("--output", help="write it to this file (default: standard output)")
    export.set_defaults(run=command(run_export))
    impact = sub.add_parser("impact", help="what is downstream of some fields of a dataset or subject")
    impact.add_argument("dataset", help="a dataset name or a catalog subject")
    impact.add_argument("--fields", help="comma-separated field paths (a,b.c, or items[].price, or a JSON Schema pointer #/properties/a); default: the whole dataset")
    impact.add_argument("--namespace", help="the dataset's namespace, when its name is not unique")
    impact.add_argument("--format", choices=("text", "json"), default="text")
    impact.set_defaults(run=command(run_impact))


# --- catalog ------------------------------------------------------------------------------------

def read_catalog_file(path: str) -> tuple[Catalog, list[Problem]]:
    """Read a catalog file; schema files are relative to it."""
    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as err:
        raise CommandError(f"cannot read {path}: {err.strerror}", USAGE_ERROR) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise CommandError(f"{path}: not valid YAML{where}: {getattr(err, 'problem', err)}") from None

    def load_schema(relative: str) -> str:
        return (file.parent / relative).read_text(encoding="utf-8")

    return read_catalog(data, load_schema)


def _summary(catalog: Catalog) -> str:
    black = sum(1 for job in catalog.jobs if job.black_box)
    return (f"{len(catalog.teams)} teams, {len(catalog.subjects)} subjects, {len(catalog.datasets)} datasets, "
            f"{len(catalog.jobs)} jobs ({black} black box{'es' if black != 1 else ''}), {len(catalog.pipelines)} pipelines")


def _checked(path: str) -> Catalog:
    catalog, problems = read_catalog_file(path)
    if problems:
        for problem in problems:
            print(f"{path}: {problem}", file=sys.stderr)
        raise CommandError(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} in {path}; nothing was stored")
    return catalog


def run_validate(args: argparse.Namespace) -> int:
    """``bot catalog validate FILE``."""
    catalog = _checked(args.file)
    for warning in catalog.warnings:
        print(f"{args.file}: warning: {warning}", file=sys.stderr)
    print(f"{args.file}: OK — {_summary(catalog)}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    """``bot catalog export [--output FILE]``: the loaded catalog, with the consumer groups attributed or retired in Slack."""
    config = Config.from_env(os.environ, require_slack=False)

    async def work(db: Database) -> dict[str, Any]:
        lineage = LineageService(db)
        census = CensusService(db, lineage, SliService(db, lineage, Outbox()), config.kafka_bootstrap_servers, "cli")
        try:
            return await census.exported()
        except CensusError as err:
            raise CommandError(str(err)) from None
        finally:
            await asyncio.to_thread(census.close)

    try:
        document = with_database(work)
    except NotMigrated as err:
        raise CommandError(str(err), USAGE_ERROR) from None
    text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"{args.output}: written (schema files are named as in the loaded catalog, relative to it)")
    else:
        sys.stdout.write(text)
    return 0


def run_load(args: argparse.Namespace) -> int:
    """``bot catalog load FILE``."""
    catalog = _checked(args.file)

    async def store(service: LineageService) -> list[tuple[DatasetId, DatasetId, datetime]]:
        await service.load_catalog(catalog)
        return (await service.graph()).outdated

    for old, new, at in _with_service(store):
        print(f"{args.file}: warning: {old.name} ({old.namespace}) was renamed {new.name} ({new.namespace}) at {at.astimezone(UTC):%Y-%m-%d %H:%M} "
              "UTC, OpenLineage says: the catalog's name is kept until the catalog says the new one", file=sys.stderr)
    print(f"{args.file}: loaded — {_summary(catalog)}")
    return 0


# --- OpenLineage --------------------------------------------------------------------------------

def read_events(lines: list[str]) -> list[LineageEvent]:
    """Every event of a JSON-lines file, or CommandError listing every bad line (nothing is stored)."""
    events, problems = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            events.append(parse_event(json.loads(line)))
        except json.JSONDecodeError as err:
            problems.append(f"line {number}: malformed JSON: {err.msg} (column {err.colno})")
        except OpenLineageError as err:
            problems.append(f"line {number}: {err}")
    if problems:
        for problem in problems:
            print(problem, file=sys.stderr)
        raise CommandError(f"{len(problems)} bad event{'s' if len(problems) != 1 else ''}; nothing was stored")
    return events


def run_import(args: argparse.Namespace) -> int:
    """``bot lineage import FILE.jsonl``."""
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    except OSError as err:
        raise CommandError(f"cannot read {args.file}: {err.strerror}", USAGE_ERROR) from None
    events = read_events(text.splitlines())

    async def store(service: LineageService) -> int:
        return await service.ingest(events)

    changed = _with_service(store)
    print(f"imported {len(events)} event{'s' if len(events) != 1 else ''}; {changed} changed the lineage")
    return 0


def run_coverage(args: argparse.Namespace) -> int:
    """``bot lineage coverage``."""
    async def figures(service: LineageService) -> Any:
        graph = await service.graph()
        teams = set(await service.teams())
        unowned = [j for j in graph.jobs.values() if not set(j.owners) & teams]
        return coverage(graph), await service.observations(), unowned, await service.claims()

    result, observations, unowned, claims = _with_service(figures)
    conflicts = [{"namespace": o.namespace, "job": o.name, "event_time": aware(o.event_time).isoformat(), "conflict": o.conflict}
                 for o in observations]
    nobody = [{"namespace": j.id.namespace, "job": j.id.name, "owners": list(j.owners), "learned": j.learned}
              for j in sorted(unowned, key=lambda j: (j.id.namespace, j.id.name))]
    claimed = [{"namespace": c.namespace, "job": c.name, "team": c.observed.get("claimed_by"), "by": c.observed.get("user"),
                "at": aware(c.event_time).isoformat()} for c in claims]
    if args.format == "json":
        print(json.dumps({**result.as_json(), "catalog_conflicts": conflicts, "unowned_jobs": nobody, "claims": claimed}, indent=2))
        return 0
    print(f"jobs: {result.jobs}, black boxes: {len(result.black_box_jobs)} ({result.black_box_share:.0%})")
    print(f"subjects with field-level lineage: {len(result.subjects_with_field_lineage)} of {result.subjects} ({result.field_lineage_share:.0%})")
    unread = ", ".join(d.name for d in result.datasets_without_consumer) or "none"
    print(f"datasets no job reads: {unread}")
    print(f"jobs nobody owns (no catalog team; claim one with /schema claim JOB TEAM): {len(nobody) or 'none'}")
    for job in nobody:
        print(f"  {job['job']} ({job['namespace']}) — learned from {job['learned']}"
              + (f"; named owners not in the catalog: {', '.join(job['owners'])}" if job["owners"] else ""))
    print(f"jobs claimed from Slack (not in the catalog; declare them there to make it permanent): {len(claimed) or 'none'}")
    for item in claimed:
        print(f"  {item['job']} ({item['namespace']}) for {item['team']} by {item['by']} at {item['at']}")
    print(f"OpenLineage events that disagree with the catalog (kept, not applied): {len(conflicts) or 'none'}")
    for item in conflicts:
        print(f"  {item['job']} ({item['namespace']}) at {item['event_time']}: {item['conflict']}")
    return 0


# --- impact -------------------------------------------------------------------------------------

def run_impact(args: argparse.Namespace) -> int:
    """``bot impact DATASET --fields a,b.c``."""
    fields = [_field_path(f.strip()) for f in args.fields.split(",") if f.strip()] if args.fields else None
    if args.fields is not None and not fields:
        raise CommandError("--fields is empty: give field paths such as price,payload.detail.price", USAGE_ERROR)

    async def query(service: LineageService) -> tuple[LineageGraph, DatasetId, tuple[str, str] | None, set[str]]:
        graph = await service.graph()
        try:
            dataset = graph.find_dataset(args.dataset, args.namespace)
        except LineageError as err:
            raise CommandError(str(err)) from None
        subject = graph.datasets[dataset].subject
        newest = await _newest_schema(service.db, subject) if fields and subject else None
        return graph, dataset, newest, set(await service.teams())

    graph, dataset, newest, teams = _with_service(query)
    try:
        graph.check_fields(dataset, fields or (), _schema_walk(*newest) if newest else None)
        impact = graph.impact(dataset, fields)
    except LineageError as err:
        raise CommandError(str(err)) from None
    census = census_of(impact.dataset.name) if impact.dataset.namespace.startswith("kafka://") else None
    if args.format == "json":
        answer = impact.as_json(teams)
        if census is not None:  # the readers, and how far to trust them: an empty list from no census says nothing
            answer["consumer_groups"] = [r.as_json() for r in census.shown()]
            answer["census"] = {key: value for key, value in census.as_json().items() if key != "readers"}
        print(json.dumps(answer, indent=2, ensure_ascii=False))
    else:
        print(impact_text(impact, teams) + ("\nConsumer groups (the reader census):\n" + "\n".join(census_lines(census)) if census else ""))
    return 0


def field_path(text: str) -> str:
    """A field as ``bot impact`` takes it: a lineage path (``items.price``), a classifier's (``items[].price``), or a JSON
    Schema pointer (``#/properties/items/items/properties/price``)."""
    if text.startswith("#"):
        from bot.domain.jsonschema.model import pointer_path

        return pointer_path(text)
    return text.replace("[]", "").replace("{}", "")


def _field_path(text: str) -> str:
    path = field_path(text)
    if not path or not text.startswith("#") and "" in path.split("."):  # a JSON property's name may hold a dot
        raise CommandError(f"{text!r} names no field: give a path such as payload.detail.price, or a pointer such as "
                           "#/properties/payload/properties/detail", USAGE_ERROR)
    return path


async def _newest_schema(db: Database, subject: str) -> tuple[str, str] | None:
    """The schema type and text of ``subject``'s newest stored version, if any."""
    registry = Registry(db)
    row, history = await registry.subject(subject), await registry.history(subject)
    return (row.format, history[-1].schema_text) if row is not None and history else None


def _schema_walk(schema_type: str, text: str) -> FieldWalk | None:
    """The fields of a stored version (None when it does not parse alone: its references are other subjects')."""
    kind = SchemaType(schema_type)
    try:
        return field_walk_of(kind, parse_schema(kind, text))
    except INVALID:
        return None


def census_of(topic: str, refresh: bool = False, *, ask: bool = False) -> Census:
    """The stored census of ``topic`` (taken afresh first with ``refresh``). With ``ask`` (or ``refresh``) the cluster is
    asked whether the topic exists: one it does not have is a CommandError naming the nearest names; one it does not
    answer for is the stored census marked failed."""
    config = Config.from_env(os.environ, require_slack=False)

    async def work(db: Database) -> Census:
        lineage = LineageService(db)
        census = CensusService(db, lineage, SliService(db, lineage, Outbox()), config.kafka_bootstrap_servers, "cli",
                               interval=timedelta(seconds=config.census_seconds))
        if refresh and not config.kafka_bootstrap_servers:
            raise CommandError("Kafka is not configured for this bot: set KAFKA_BOOTSTRAP_SERVERS", USAGE_ERROR)
        unreachable = None
        try:
            if (ask or refresh) and config.kafka_bootstrap_servers:
                try:
                    nearest = await census.topic_named(topic)
                except CensusError as err:
                    nearest, unreachable = None, str(err)
                if nearest is not None:
                    hint = f" (did you mean {', '.join(nearest)}?)" if nearest else ""
                    raise CommandError(f"no topic {topic} on the cluster{hint}", USAGE_ERROR)
                if refresh and unreachable is None:
                    await census.refresh()
            answer = await census.census(topic)
        finally:
            await asyncio.to_thread(census.close)  # its admin client ends now, not with the interpreter (reconnecting until then)
        answer.failed = answer.failed or unreachable
        return answer

    try:
        return with_database(work)
    except NotMigrated as err:
        raise CommandError(str(err), USAGE_ERROR) from None


def census_lines(census: Census) -> list[str]:
    """The census for a terminal."""
    age = (f"census of {census.taken_at:%Y-%m-%d %H:%M} UTC, {_age(census)} old" if census.taken_at
           else "no census has answered yet (bot consumers --refresh)")
    told = f"{len(census.reading)} group(s) read it" if census.taken_at else "who reads it is not known yet"
    lines = [f"{census.topic}: {told} ({age})"] + [f"  ! {note}" for note in census.notes()]
    for reader in census.shown():
        r, declared = reader.reading, reader.declared
        who = f"job {declared.job}" if declared and declared.job else "attributed" if declared else "NOT DECLARED"
        team = f" ({declared.team})" if declared and declared.team else ""
        clients = ", ".join(f"{m.client_id}@{m.host}" for m in r.members)
        flag = "! " if declared is None and reader.activity in (Activity.ACTIVE, Activity.IDLE) else "  "
        lines.append(f"{flag}{r.group:<40} {reader.state_text():<8} {who}{team}" + (f"  [{clients}]" if clients else "")
                     + (f"  last commit {r.last_commit:%Y-%m-%d %H:%M}" if r.last_commit else "") + (f"  lag {r.lag:,}" if r.lag is not None else ""))
    return lines


def _age(census: Census) -> str:
    return ago(census.age.total_seconds() if census.age is not None else 0)


def impact_text(impact: Impact, teams: set[str]) -> str:
    """The impact for people: what is reached, through which jobs, whom to ask, and who cannot be asked."""
    what = ", ".join(impact.fields) if impact.fields else "the whole dataset"
    lines = [f"Impact of {what} in {impact.dataset.name}: {len(impact.impacted)} field(s) in {len(impact.datasets)} dataset(s), "
             f"{len(impact.jobs)} job(s)"]
    lines += [f"  ({path} is not listed for {impact.dataset.name}: answered for {outer}, which holds it)"
              for path, outer in impact.enclosed.items()]
    for item in impact.impacted:
        note = "  [only through a black box]" if item.black_box_only else ""
        lines.append(f"  {item.dataset.name}.{item.field}: {' -> '.join(item.path)}{note}")
    lines += [f"  ({dataset.name} was dropped at {at.astimezone(UTC):%Y-%m-%d %H:%M} UTC, OpenLineage says: its readers are listed still, "
              "in case it is made again)" for dataset, at in impact.dropped]
    if impact.jobs:
        lines.append("Jobs:")
        lines += [f"  {j.id.name} ({', '.join(j.owners) or 'no owner'}){' — black box: assumed to read every input field' if j.black_box else ''}"
                  for j in impact.jobs]
    unowned = impact.unowned(teams)
    owners = [o for o in impact.owners if o in teams]
    nobody = f"{len(unowned)} reader{'s' if len(unowned) != 1 else ''} nobody owns" if unowned else ""
    lines.append(f"Teams to ask: {', '.join(owners) or 'none'}{' — ' + nobody if nobody and not owners else ''}")
    if unowned:
        lines.append(f"Readers nobody owns ({len(unowned)}): a compatible or breaking change waits for the subject's fallback approvers")
        lines += [f"  {j.id.name} ({j.id.namespace}) — learned from {j.learned}" for j in unowned]
    return "\n".join(lines)


# --- plumbing -----------------------------------------------------------------------------------

def _with_service(work: Any) -> Any:
    async def run(db: Database) -> Any:
        return await work(LineageService(db))

    try:
        return with_database(run)
    except NotMigrated as err:
        raise CommandError(str(err), USAGE_ERROR) from None
