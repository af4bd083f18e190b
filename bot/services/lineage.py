"""Lineage in the database: the catalog, OpenLineage events, and the graph every replica rebuilds on change."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.domain.calendar import Freeze
from bot.domain.compat.formats import paths_of
from bot.domain.lineage.catalog import Catalog
from bot.domain.lineage.graph import LineageGraph
from bot.domain.lineage.model import Dataset, DatasetId, FieldRef, Job, JobId, Team
from bot.domain.lineage.namespaces import Namespaces
from bot.domain.lineage.openlineage import LineageEvent
from bot.domain.sli.pipeline import Pipeline
from bot.services.watchers import Watchers
from bot.store.database import Database
from bot.store.models import (
    CatalogSetting,
    FlinkRelease,
    FreezeRow,
    LineageDataset,
    LineageJob,
    LineageObservation,
    LineageRevision,
    PipelineRow,
    SchemaVersion,
    Subject,
    TeamRow,
    aware,
)

CATALOG, OPENLINEAGE = "catalog", "openlineage"
FLINK = "flink"  # an observation's key: the Flink (version, or '') an event said a catalog job runs on
CLAIMED = "claimed_by"  # an observation that records a claim of ownership from Slack


GLOBAL_ONCALL, RETIRED_GROUPS, DOCUMENT, NAMESPACES = "oncall", "retired_groups", "document", "namespaces"  # catalog-wide settings


class LineageService:
    """Stores lineage and answers with a graph built from the store (cached until the revision moves)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.watchers = Watchers()  # told of each change to the lineage: a catalog load, events that changed it, a claim
        self._graph: LineageGraph | None = None
        self._revision = -1
        self._lock = asyncio.Lock()

    # --- writing --------------------------------------------------------------------------------

    async def load_catalog(self, catalog: Catalog) -> None:
        """Replace everything the previous catalog declared with this one, in one transaction."""
        async with self.db.session() as session:
            for row in (await session.exec(select(TeamRow))).all():
                await session.delete(row)
            await session.flush()
            for team in catalog.teams.values():
                session.add(TeamRow(name=team.name, usergroup=team.usergroup, members=team.members, oncall=team.oncall,
                                    oncall_usergroup=team.oncall_usergroup, consumer_groups=team.consumer_groups, channel=team.channel,
                                    change_hours=team.change_hours, self_approval=team.self_approval, escalation=team.escalation,
                                    escalate_after=team.escalate_after, receivers=team.receivers))
            oncall = await session.get(CatalogSetting, GLOBAL_ONCALL) or CatalogSetting(name=GLOBAL_ONCALL)
            oncall.value = {"usergroup": catalog.oncall.usergroup, "members": catalog.oncall.members} if catalog.oncall else {}
            session.add(oncall)
            document = json.loads(json.dumps(catalog.document, default=_as_text))  # YAML's dates become ISO 8601 text
            for name, value in ((RETIRED_GROUPS, {"groups": catalog.retired_groups}), (DOCUMENT, document),
                                (NAMESPACES, catalog.namespaces.as_json())):
                setting = await session.get(CatalogSetting, name) or CatalogSetting(name=name)
                setting.value = value
                session.add(setting)
            for entry in catalog.subjects.values():
                subject = (await session.exec(select(Subject).where(Subject.name == entry.name))).first() or Subject(name=entry.name)
                subject.topic, subject.namespace, subject.owner_team = entry.topic, entry.namespace, entry.owner
                subject.compatibility, subject.channel, subject.policy = entry.compatibility, entry.channel, entry.approval
                subject.format, subject.buf = entry.schema_type.value, entry.buf
                session.add(subject)
            await self._replace_catalog_rows(session, catalog)
            await _replace_freezes(session, catalog.freezes)
            await _replace_pipelines(session, catalog.pipelines)
            await bump_revision(session)
            await self.watchers.changed(session)
            await session.commit()

    async def _replace_catalog_rows(self, session: AsyncSession, catalog: Catalog) -> None:
        datasets = {(r.namespace, r.name): r for r in (await session.exec(select(LineageDataset))).all()}
        for ident, dataset in catalog.datasets.items():
            row = datasets.pop((ident.namespace, ident.name), None) or LineageDataset(namespace=ident.namespace, name=ident.name, source=CATALOG)
            row.kind, row.owners, row.fields, row.subject, row.source = dataset.kind, dataset.owners, dataset.fields, dataset.subject, CATALOG
            session.add(row)
        for row in datasets.values():
            if row.source == CATALOG:
                await session.delete(row)
        jobs = {(r.namespace, r.name): r for r in (await session.exec(select(LineageJob))).all()}
        for job in catalog.jobs:
            job_row = jobs.pop((job.id.namespace, job.id.name), None) or LineageJob(namespace=job.id.namespace, name=job.id.name, source=CATALOG)
            _fill(job_row, job)
            job_row.source, job_row.channel, job_row.flink = CATALOG, job.channel, job.flink  # the catalog says it whole
            session.add(job_row)
        for job_row in jobs.values():
            if job_row.source == CATALOG:
                await session.delete(job_row)

    async def ingest(self, events: Iterable[LineageEvent]) -> int:
        """Store events in order, all in one transaction; returns how many of them changed the lineage."""
        for attempt in range(3):
            try:
                return await self._ingest(list(events))
            except IntegrityError:
                if attempt == 2:
                    raise
        return 0

    async def _ingest(self, events: list[LineageEvent]) -> int:
        changed = 0
        async with self.db.session() as session:
            namespaces = await _namespaces(session)
            for event in events:
                changed += await self._ingest_one(session, event, namespaces)
            if changed:
                await bump_revision(session)
                await self.watchers.changed(session)
            await session.commit()
        return changed

    async def _ingest_one(self, session: AsyncSession, event: LineageEvent, namespaces: Namespaces) -> int:
        catalog = await _declared(session, namespaces, event.datasets)
        namespaces = namespaces.linked([*catalog, *event.datasets], [d.id for d in catalog])
        plain, given = Namespaces(namespaces.names), list(event.datasets)
        renamed = [Dataset(plain.dataset(d.id), d.kind, previous=d.previous) for d in given if d.previous and namespaces.dataset(d.id) != plain.dataset(d.id)]
        if namespaces.names or namespaces.same:  # stored under the catalog's name for each place and dataset: the same event
            # by another name changes nothing
            event = dataclasses.replace(event, job=namespaces.job(event.job) if event.job else None, datasets=namespaces.datasets(given))
        moved = False
        for dataset in [*event.datasets, *renamed]:  # a rename kept under the catalog's (old) name is also kept under the new
            # name, with its time: the graph orders renames by it, and tells the catalog its name is out of date
            row = (await session.exec(select(LineageDataset).where(
                LineageDataset.namespace == dataset.id.namespace, LineageDataset.name == dataset.id.name))).first()
            if row is None:
                row = LineageDataset(namespace=dataset.id.namespace, name=dataset.id.name, kind=dataset.kind, source=OPENLINEAGE)
                moved = True
            moved = _said(row, dataset, event.event_time) or moved
            session.add(row)
        if event.job is None:  # a DatasetEvent: the dataset's metadata alone
            await session.flush()
            return int(moved)
        job = (await session.exec(select(LineageJob).where(
            LineageJob.namespace == event.job.id.namespace, LineageJob.name == event.job.id.name))).first()
        if job is not None and job.source == CATALOG:
            await self._observe(session, job, event.job, event)
            await session.flush()
            return int(moved)
        if job is None:
            job = LineageJob(namespace=event.job.id.namespace, name=event.job.id.name, source=OPENLINEAGE)
        newer = job.event_time is None or event.event_time >= aware(job.event_time)
        if event.job.owners and job.owners != event.job.owners:
            job.owners, moved = event.job.owners, True
        elif "ownership" in event.job.cleared and job.owners and newer:  # the facet deleted: nobody owns it, as far as events say
            job.owners, moved = [], True
        said = event.job.flink  # what runs the job, said by any event, with lineage or without: once Flink, always Flink
        if said is not None:
            later = job.flink_at is None or event.event_time >= aware(job.flink_at)
            if job.flink is None or (said and (not job.flink or (said != job.flink and later))):  # a version fills an unknown one
                job.flink, moved = said or job.flink or "", True
            job.flink_at = event.event_time if later else job.flink_at
        if event.carries_lineage and newer and job.digest != _digest(event.job):
            _fill(job, event.job)
            job.event_time, job.source, moved = event.event_time, OPENLINEAGE, True
        session.add(job)
        await session.flush()
        return int(moved)

    async def _observe(self, session: AsyncSession, declared: LineageJob, observed: Job, event: LineageEvent) -> None:
        """Keep what an event says about a job the catalog declares (``observed``), where it disagrees (never applied)."""
        catalog = _job(declared)
        conflicts = []
        if observed.owners and sorted(observed.owners) != sorted(catalog.owners):
            conflicts.append(f"owners {', '.join(observed.owners)} (the catalog says {', '.join(catalog.owners) or 'none'})")
        if event.carries_lineage:
            for what, seen, known in (("inputs", observed.inputs, catalog.inputs), ("outputs", observed.outputs, catalog.outputs)):
                if {(d.namespace, d.name) for d in seen} != {(d.namespace, d.name) for d in known}:
                    conflicts.append(f"{what} {', '.join(d.name for d in seen) or 'none'} (the catalog says {', '.join(d.name for d in known) or 'none'})")
            if observed.mappings and {(s.path, t.path) for s, t in observed.mappings} != {(s.path, t.path) for s, t in catalog.mappings}:
                conflicts.append(f"{len(observed.mappings)} field mapping(s) that differ from the catalog's {len(catalog.mappings)}")
        if observed.flink is not None and catalog.flink is None:
            conflicts.append(f"runs on Flink{' ' + observed.flink if observed.flink else ''} (the catalog does not say `flink:`)")
        if not conflicts:
            return
        text = "; ".join(conflicts)
        latest = (await session.exec(select(LineageObservation).where(LineageObservation.namespace == declared.namespace,
                                                                      LineageObservation.name == declared.name)
                                     .order_by(col(LineageObservation.id).desc()))).first()
        if latest is not None and latest.conflict == text:
            latest.event_time = max(aware(latest.event_time), event.event_time)
            session.add(latest)
            return
        session.add(LineageObservation(namespace=declared.namespace, name=declared.name, event_time=event.event_time, conflict=text,
                                       observed={"owners": observed.owners, "digest": _digest(observed),
                                                 **({FLINK: observed.flink} if observed.flink is not None else {})}))

    async def observations(self) -> list[LineageObservation]:
        """What OpenLineage said that disagrees with the catalog, newest first."""
        return [o for o in await self._observed() if CLAIMED not in o.observed]

    async def seen_on_flink(self) -> dict[tuple[str, str], LineageObservation]:
        """Catalog jobs without ``flink:`` whose newest disagreeing OpenLineage event said they run on Flink, by (namespace, name)."""
        newest: dict[tuple[str, str], LineageObservation] = {}
        for row in await self.observations():
            newest.setdefault((row.namespace, row.name), row)
        return {key: row for key, row in newest.items() if FLINK in row.observed}

    async def claims(self) -> list[LineageObservation]:
        """Jobs nobody owned that a team claimed from Slack, newest first."""
        return [o for o in await self._observed() if CLAIMED in o.observed]

    async def _observed(self) -> list[LineageObservation]:
        async with self.db.session() as session:
            return list((await session.exec(select(LineageObservation).order_by(col(LineageObservation.event_time).desc(),
                                                                                 col(LineageObservation.id).desc()))).all())

    async def claim(self, job: JobId, team: str, user: str, when: datetime) -> None:
        """Record that ``team`` owns ``job`` (a job the catalog does not declare); the graph uses it from now on.

        A claim is an observation: it never changes what the catalog declares, and the catalog wins over it."""
        async with self.db.session() as session:
            session.add(LineageObservation(namespace=job.namespace, name=job.name, event_time=when,
                                           conflict=f"claimed for {team} by {user}", observed={CLAIMED: team, "user": user}))
            await bump_revision(session)
            await self.watchers.changed(session)
            await session.commit()

    # --- reading --------------------------------------------------------------------------------

    async def graph(self) -> LineageGraph:
        """The lineage graph, rebuilt only when another write moved the revision."""
        async with self._lock:
            async with self.db.session() as session:
                revision = (await session.exec(select(LineageRevision.revision).where(LineageRevision.id == 1))).one()
                if self._graph is None or revision != self._revision:
                    self._graph = await self._build(session)
                    self._revision = revision
            return self._graph

    async def _build(self, session: AsyncSession) -> LineageGraph:
        latest = await _latest_schemas(session)
        datasets = []
        rows = (await session.exec(select(LineageDataset).order_by(col(LineageDataset.id)))).all()
        for row in sorted(rows, key=lambda r: r.source != CATALOG):  # the catalog's word on a place first, where events name it
            # too; then in the order stored (the name a dataset's events gave it first is the one kept)
            fields = row.fields or (latest.get(row.subject, []) if row.subject else [])
            names = row.symlinks or []
            datasets.append(Dataset(DatasetId(row.namespace, row.name), row.kind, list(row.owners), list(fields), row.subject,
                                    [DatasetId(n["namespace"], n["name"]) for n in names if not n.get(RENAMED)],
                                    previous={DatasetId(n["namespace"], n["name"]): _renamed_at(n) for n in names if n.get(RENAMED)},
                                    dropped_at=dropped(row)))
        teams = set((await session.exec(select(TeamRow.name))).all())
        claimed: dict[tuple[str, str], str] = {}
        for claim in (await session.exec(select(LineageObservation).order_by(col(LineageObservation.id)))).all():
            if CLAIMED in claim.observed:
                claimed[(claim.namespace, claim.name)] = str(claim.observed[CLAIMED])
        released: dict[str, FlinkRelease] = {}
        for release in (await session.exec(select(FlinkRelease).where(col(FlinkRelease.passed)).order_by(col(FlinkRelease.id)))).all():
            released[release.job] = release  # the newest passed release of each job
        jobs = []
        for job_row in (await session.exec(select(LineageJob))).all():
            job = _job(job_row)
            if job.id.name in released and job.black_box and released[job.id.name].lineage:
                _learn_release(job, released[job.id.name])
            owner = claimed.get((job_row.namespace, job_row.name))
            if owner is not None and job_row.source != CATALOG and not set(job.owners) & teams:
                job.owners, job.learned = [owner], f"{job.learned}, claimed for {owner}"
            jobs.append(job)
        declared = [DatasetId(row.namespace, row.name) for row in rows if row.source == CATALOG]
        return LineageGraph(datasets, jobs, await _namespaces(session), declared)

    async def unowned_readers(self, owners: set[str]) -> list[tuple[Job, str]]:
        """Jobs nobody owns (no catalog team) that read a subject owned by one of ``owners``, with that subject."""
        graph, teams = await self.graph(), set(await self.teams())
        owned = {d.id: d.subject for d in graph.datasets.values() if d.subject and set(d.owners) & owners}
        return [(job, owned[dataset]) for job in graph.jobs.values() if not set(job.owners) & teams
                for dataset in job.inputs if dataset in owned]

    async def teams(self) -> dict[str, Team]:
        """The catalog's teams."""
        async with self.db.session() as session:
            rows = (await session.exec(select(TeamRow))).all()
        return {r.name: Team(r.name, r.usergroup, list(r.members), list(r.oncall), r.channel, r.change_hours, r.oncall_usergroup,
                             list(r.consumer_groups or []), r.self_approval, list(r.escalation or []), r.escalate_after,
                             list(r.receivers or [])) for r in rows}

    async def setting(self, name: str) -> dict[str, Any]:
        """A catalog-wide setting (``RETIRED_GROUPS``, ``DOCUMENT``...): {} when the catalog has none."""
        async with self.db.session() as session:
            row = await session.get(CatalogSetting, name)
        return dict(row.value) if row is not None else {}

    async def global_oncall(self) -> Team | None:
        """The catalog's global oncall group (``oncall:``), if it declares one."""
        value = await self.setting(GLOBAL_ONCALL)
        if not value:
            return None
        members = list(value.get("members") or [])
        return Team("oncall", value.get("usergroup"), members, members)


async def _namespaces(session: AsyncSession) -> Namespaces:
    """The catalog's name for each name of a place (none before a catalog is loaded)."""
    row = await session.get(CatalogSetting, NAMESPACES)
    return Namespaces.from_json(row.value) if row is not None else Namespaces()


async def _declared(session: AsyncSession, namespaces: Namespaces, datasets: list[Dataset]) -> list[Dataset]:
    """The catalog's datasets among the names of ``datasets`` that have other names (their name is the one kept)."""
    wanted = {namespaces.dataset(n) for d in datasets if d.symlinks or d.previous for n in (d.id, *d.symlinks, *d.previous)}
    if not wanted:
        return []
    rows = (await session.exec(select(LineageDataset.namespace, LineageDataset.name).where(
        LineageDataset.source == CATALOG, col(LineageDataset.name).in_(sorted({n.name for n in wanted}))))).all()
    return [Dataset(DatasetId(namespace, name)) for namespace, name in rows if DatasetId(namespace, name) in wanted]


def _said(row: LineageDataset, dataset: Dataset, when: datetime) -> bool:
    """Apply to ``row`` what an event of ``when`` says of its dataset; whether that changed it. The catalog's owners and
    fields stand (an event only fills what it left out); an event older than the newest that said them, late, changes
    neither; a deleted facet takes back what events said."""
    declared, moved = row.source == CATALOG, False
    fresh = bool(dataset.fields or dataset.owners or dataset.cleared) and (row.said_at is None or when >= aware(row.said_at))
    if fresh:
        row.said_at = when
        for facet, attribute in (("schema", "fields"), ("ownership", "owners")):
            said, kept = getattr(dataset, attribute), getattr(row, attribute)
            if said and kept != said and not (declared and kept):
                setattr(row, attribute, said)
                moved = True
            elif facet in dataset.cleared and not said and kept and not declared:
                setattr(row, attribute, [])
                moved = True
    was = dropped(row)
    if dataset.dropped_at is not None:  # a DROP: the newest is kept; an event that said its fields or owners names it too
        row.dropped_at = max(aware(row.dropped_at), when) if row.dropped_at else when
        row.named_at = row.named_at or row.said_at
    elif row.dropped_at is not None and (row.named_at is None or when > aware(row.named_at)):  # named otherwise, once it was
        row.named_at = when  # dropped: later than the drop, it is there again (made again by its next run, say)
    moved = moved or dropped(row) != was
    symlinks: list[dict[str, Any]] = list(row.symlinks or [])
    if fresh and "symlinks" in dataset.cleared and not dataset.symlinks:  # the names it was renamed from are no symlinks
        symlinks = [n for n in symlinks if n.get(RENAMED)]
    symlinks += [n for n in map(_name, dataset.symlinks) if n not in symlinks]
    for old, at in dataset.previous.items():
        known = next((n for n in symlinks if n.get(RENAMED) and _name(old).items() <= n.items()), None)
        if known is None:
            symlinks.append({**_name(old), RENAMED: True, RENAMED_AT: at.isoformat()})
        elif at > _renamed_at(known):  # renamed again from that name since: the newest time is kept
            symlinks = [{**n, RENAMED_AT: at.isoformat()} if n is known else n for n in symlinks]
    if symlinks != (row.symlinks or []):
        row.symlinks, moved = symlinks, True
    return moved


def dropped(row: LineageDataset) -> datetime | None:
    """When the dataset was dropped, unless an event named it since (then None)."""
    if row.dropped_at is None or (row.named_at is not None and aware(row.named_at) >= aware(row.dropped_at)):
        return None
    return aware(row.dropped_at)


RENAMED = "renamed_from"  # marks, among a stored dataset's other names, a name it was renamed from
RENAMED_AT = "at"  # and when (the newest event that said so)


def _renamed_at(name: dict[str, Any]) -> datetime:
    """When a stored dataset was renamed from ``name`` (a rename stored without its time counts as the oldest)."""
    at = name.get(RENAMED_AT)
    return aware(datetime.fromisoformat(at)) if isinstance(at, str) else datetime.min.replace(tzinfo=UTC)


def _name(ident: DatasetId) -> dict[str, Any]:
    return {"namespace": ident.namespace, "name": ident.name}


async def _replace_freezes(session: AsyncSession, freezes: Iterable[Freeze]) -> None:
    """The catalog's freeze windows replace the previous catalog's (freezes added from Slack stay)."""
    for row in (await session.exec(select(FreezeRow).where(FreezeRow.source == CATALOG))).all():
        await session.delete(row)
    await session.flush()
    for freeze in freezes:
        session.add(freeze_row(freeze, CATALOG))


def freeze_row(freeze: Freeze, source: str, created_by: str | None = None) -> FreezeRow:
    """How a freeze is stored (``source``: the catalog, or Slack)."""
    return FreezeRow(name=freeze.name, reason=freeze.reason, scope=freeze.scope.as_json(), excepted=freeze.excepted.as_json(), cron=freeze.cron,
                     minutes=int(freeze.duration.total_seconds() // 60) if freeze.duration else None, timezone=freeze.timezone,
                     start=freeze.start, end=freeze.end, source=source, created_by=created_by)


async def bump_revision(session: AsyncSession) -> None:
    """Move the lineage revision: every replica rebuilds its graph on its next query."""
    await session.exec(update(LineageRevision).where(col(LineageRevision.id) == 1)
                       .values(revision=LineageRevision.revision + 1))


async def _latest_schemas(session: AsyncSession) -> dict[str, list[str]]:
    """Field paths of each subject's newest stored version (lineage for subjects the catalog gives no schema)."""
    rows = (await session.exec(select(Subject.name, SchemaVersion.schema_text, SchemaVersion.version, Subject.format)
                               .join(SchemaVersion, col(SchemaVersion.subject_id) == col(Subject.id))
                               .order_by(col(SchemaVersion.version)))).all()
    newest = {name: (text, schema_type) for name, text, _, schema_type in rows}  # ordered by version: the last one wins
    return {name: paths_of(schema_type, text) for name, (text, schema_type) in newest.items()}  # (none for a version whose
    # Protobuf or JSON references are elsewhere)


def _as_text(value: object) -> str:
    isoformat = getattr(value, "isoformat", None)
    return str(isoformat()) if callable(isoformat) else str(value)


def _fill(row: LineageJob, job: Job) -> None:
    row.owners = list(job.owners) or row.owners
    row.inputs = [[d.namespace, d.name] for d in job.inputs]
    row.outputs = [[d.namespace, d.name] for d in job.outputs]
    row.mappings = [[s.dataset.namespace, s.dataset.name, s.path, t.dataset.namespace, t.dataset.name, t.path] for s, t in job.mappings]
    row.unmapped_outputs = [[d.namespace, d.name] for d in job.unmapped_outputs]
    row.consumer_groups = list(job.consumer_groups)
    row.digest = _digest(job)


def _job(row: LineageJob) -> Job:
    learned = "catalog" if row.source == CATALOG else (
        f"OpenLineage event of {aware(row.event_time):%Y-%m-%d %H:%M} UTC" if row.event_time else "OpenLineage")
    return Job(
        JobId(row.namespace, row.name), list(row.owners), row.channel,
        [DatasetId(*d) for d in row.inputs], [DatasetId(*d) for d in row.outputs],
        [(FieldRef(DatasetId(m[0], m[1]), m[2]), FieldRef(DatasetId(m[3], m[4]), m[5])) for m in row.mappings],
        [DatasetId(*d) for d in row.unmapped_outputs], learned, list(row.consumer_groups or []), row.flink,
    )


def _learn_release(job: Job, release: FlinkRelease) -> None:
    """Fill a black box's unmapped outputs with the field lineage of its newest passed release (Flink's compiled
    plan): what the catalog or an OpenLineage event maps stays as they say."""
    learned = [(FieldRef(DatasetId(m[0], m[1]), m[2]), FieldRef(DatasetId(m[3], m[4]), m[5])) for m in release.lineage]
    open_outputs = set(job.unmapped_outputs) | {target.dataset for _, target in learned if target.dataset not in job.outputs}
    for source, target in learned:
        if target.dataset in open_outputs:
            job.mappings.append((source, target))
            if source.dataset not in job.inputs:
                job.inputs.append(source.dataset)
            if target.dataset not in job.outputs:
                job.outputs.append(target.dataset)
    mapped = {target.dataset for _, target in job.mappings}
    job.unmapped_outputs = [d for d in job.outputs if d not in mapped]
    job.learned += f", field lineage from Flink release #{release.id}"


def _digest(job: Job) -> str:
    content = [sorted(job.owners), [[d.namespace, d.name] for d in job.inputs], [[d.namespace, d.name] for d in job.outputs],
               sorted([s.dataset.namespace, s.dataset.name, s.path, t.dataset.namespace, t.dataset.name, t.path] for s, t in job.mappings),
               [[d.namespace, d.name] for d in job.unmapped_outputs]] + ([sorted(job.consumer_groups)] if job.consumer_groups else [])
    return hashlib.sha256(json.dumps(content).encode()).hexdigest()


async def _replace_pipelines(session: AsyncSession, pipelines: list[Pipeline]) -> None:
    """The catalog's pipelines replace the stored ones (their alert state and episodes stay, by name)."""
    rows = {r.name: r for r in (await session.exec(select(PipelineRow))).all()}
    for pipeline in pipelines:
        row = rows.pop(pipeline.name, None) or PipelineRow(name=pipeline.name, owner_team=pipeline.owner)
        row.owner_team, row.spec = pipeline.owner, pipeline.as_json()
        session.add(row)
    for row in rows.values():
        await session.delete(row)
