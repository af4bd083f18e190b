"""The monthly metadata health report: gathered from the store (and what the census and the watcher last saw),
computed by ``bot.domain.health``, kept per month (so next month shows the trend), posted once on the first working
day of the month whichever replica gets there first, and on demand."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import or_
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from bot.domain.health import EpisodeFacts, Facts, ProposalFacts, SubjectFacts, TransitionFacts, first_working_day, report
from bot.domain.lineage.graph import LineageError
from bot.services.census import CensusService
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.proposals import topic_of
from bot.services.sli import SliService
from bot.store.database import Database
from bot.store.models import (
    Acknowledgement,
    CatalogSetting,
    CensusRun,
    FlinkDrill,
    FlinkRelease,
    HealthReport,
    ObservedSchema,
    Proposal,
    SchemaVersion,
    SliEpisode,
    Subject,
    Transition,
    aware,
)

HEALTH_REPORT = "health.report"
STATE_FIGURES = ("retire candidates, readers nobody declared, the share of topics with a registered schema, the black-box share, "
                 "pipelines missing an SLI, subjects per format and datasets renamed since the catalog named them")  # what is read from the store as it is now, not as it was


def bounds(month: date) -> tuple[datetime, datetime]:
    """The month as ``[start, end)`` in UTC."""
    start = datetime(month.year, month.month, 1, tzinfo=UTC)
    following = (month.replace(day=28) + timedelta(days=4)).replace(day=1)
    return start, datetime(following.year, following.month, 1, tzinfo=UTC)


def previous_month(month: date) -> date:
    """The month before ``month``."""
    return (month - timedelta(days=1)).replace(day=1)


class HealthService:
    """Computes, stores and posts the report."""

    def __init__(self, db: Database, lineage: LineageService, sli: SliService, census: CensusService, outbox: Outbox,
                 registry_configured: bool, kafka_configured: bool, channel: str, clock: Callable[[], datetime]) -> None:
        self.db, self.lineage, self.sli, self.census, self.outbox = db, lineage, sli, census, outbox
        self.registry_configured, self.kafka_configured, self.channel, self.clock = registry_configured, kafka_configured, channel, clock

    async def compute(self, month: date) -> dict[str, Any]:
        """The report of ``month`` (the current month so far, or a past one)."""
        return report(await self.facts(month))

    async def facts(self, month: date) -> Facts:
        """Everything the report needs, from the store; what cannot be measured is named."""
        start, end = bounds(month)
        facts = Facts(month, teams=sorted(await self.lineage.teams()))
        graph = await self.lineage.graph()
        async with self.db.session() as session:
            subjects = list((await session.exec(select(Subject))).all())
            versions = list((await session.exec(select(SchemaVersion))).all())
            proposals = list((await session.exec(select(Proposal).where(col(Proposal.created_at) >= start, col(Proposal.created_at) < end))).all())
            acks = list((await session.exec(select(Acknowledgement).where(col(Acknowledgement.proposal_id).in_([p.id for p in proposals])))).all())
            observed = list((await session.exec(select(ObservedSchema).where(col(ObservedSchema.accounted).is_(False), col(ObservedSchema.seen_at) >= start,
                                                                            col(ObservedSchema.seen_at) < end))).all())
            episodes = list((await session.exec(select(SliEpisode).where(col(SliEpisode.started_at) >= start, col(SliEpisode.started_at) < end))).all())
            newest_census = (await session.exec(select(CensusRun).order_by(col(CensusRun.at).desc()).limit(1))).first()
            blind = [r.value.get("problem") for r in (await session.exec(select(CatalogSetting).where(col(CatalogSetting.name).like("watch:%")))).all()
                     if r.value.get("down")]
            previous = await session.get(HealthReport, previous_month(month).strftime("%Y-%m"))
            releases = list((await session.exec(select(FlinkRelease).where(col(FlinkRelease.created_at) >= start, col(FlinkRelease.created_at) < end))).all())
            drills = list((await session.exec(select(FlinkDrill).where(col(FlinkDrill.ok), col(FlinkDrill.created_at) < end))).all())
            transitions = list((await session.exec(select(Transition).where(col(Transition.created_at) < end, or_(
                col(Transition.closed_at).is_(None), col(Transition.closed_at) >= start)))).all())
        owner = {s.id: s.owner_team for s in subjects}
        censuses = await self.census.censuses([topic_of(s) for s in subjects]) if self.kafka_configured else {}
        for subject in subjects:
            mine = [v for v in versions if v.subject_id == subject.id]
            try:
                dataset = graph.find_dataset(subject.name)
                jobs = sum(1 for job in graph.jobs.values() if dataset in job.inputs)
            except LineageError:
                jobs = 0
            census = censuses.get(topic_of(subject))
            groups = len(census.reading) if census else 0
            facts.subjects.append(SubjectFacts(subject.name, subject.owner_team, topic_of(subject),
                                               max((aware(v.created_at) for v in mine), default=None),
                                               any(v.registry_id is not None for v in mine) if self.registry_configured else None, jobs + groups,
                                               len(census.undeclared) if census and census.taken_at else None, subject.format))
        facts.jobs = [(job.owners[0] if job.owners else None, job.black_box) for job in graph.jobs.values()]
        for p in proposals:
            facts.proposals.append(ProposalFacts(owner.get(p.subject_id), p.state, aware(p.created_at), aware(p.decided_at) if p.decided_at else None,
                                                 aware(p.deadline) if p.deadline else None,
                                                 tuple(aware(a.created_at) for a in acks if a.proposal_id == p.id),
                                                 bool(p.emergency and p.emergency.get("confirmed_by")), p.registry_state == "failed", p.schema_type))
        names = {s.name: s.owner_team for s in subjects}
        facts.out_of_band = [names.get(o.subject) for o in observed]
        pipelines = await self.sli.pipelines()
        facts.pipelines_missing = [(row["owner"], row["pipeline"]) for row in await self.sli.coverage() if row["missing"]]
        facts.episodes = [EpisodeFacts(pipelines[e.pipeline].owner if e.pipeline in pipelines else None, aware(e.started_at),
                                       aware(e.acked_at) if e.acked_at else None) for e in episodes]
        facts.previous = previous.figures if previous else None
        facts.releases = [(r.team, tuple(r.failed_checks)) for r in releases]
        facts.transitions = [TransitionFacts(owner.get(t.subject_id), aware(t.created_at), aware(t.deadline), aware(t.closed_at) if t.closed_at else None)
                             for t in transitions]
        facts.as_of = self.clock()
        last: dict[str, datetime] = {}
        for drill in drills:
            last[drill.job] = max(last.get(drill.job, aware(drill.created_at)), aware(drill.created_at))
        facts.drills = [(job.owners[0] if job.owners else None, job.id.name, last.get(job.id.name)) for job in graph.jobs.values() if job.flink is not None]
        owners = {old: graph.datasets[old].owners if old in graph.datasets else [] for old, _, _ in graph.outdated}
        facts.renamed = [(owners[old][0] if owners[old] else None, old.name, new.name, at) for old, new, at in graph.outdated]
        if not self.registry_configured:
            facts.unmeasured.append("the share of topics with a registered schema: no Schema Registry is configured (SCHEMA_REGISTRY_URL)")
        if not self.kafka_configured:
            facts.unmeasured.append("readers Kafka knows of: Kafka is not configured (KAFKA_BOOTSTRAP_SERVERS); readers are the lineage's only")
        elif newest_census is None or not newest_census.ok:
            facts.unmeasured.append("readers Kafka knows of: " + (f"the newest census failed ({newest_census.error})" if newest_census
                                                                  else "no census has been taken")
                                    + "; readers are from the last census that answered, if any")
        facts.unmeasured += [f"changes made out of band may be missing: {problem}" for problem in blind]
        if end <= facts.as_of:
            facts.unmeasured.append(f"the state at the month's end: {STATE_FIGURES} are as of {facts.as_of.astimezone(UTC):%Y-%m-%d %H:%M} UTC")
        return facts

    async def monthly(self) -> bool:
        """On the first working day of a month, report the month before, once across replicas (claimed by its row)."""
        today = self.clock().date()
        if today != first_working_day(today.replace(day=1)):
            return False
        return await self.publish(previous_month(today.replace(day=1)))

    async def publish(self, month: date, *, again: bool = False) -> bool:
        """Compute, store and post ``month``'s report (False when it was posted already and not ``again``)."""
        figures = await self.compute(month)
        key = month.strftime("%Y-%m")
        async with self.db.session() as session:
            row = await session.get(HealthReport, key)
            if row is not None and not again:
                return False
            row = row or HealthReport(month=key, figures=figures, created_at=self.clock())
            row.figures, row.created_at = figures, self.clock()
            session.add(row)
            try:
                await session.flush()
            except IntegrityError:
                return False  # another replica claimed it
            self.outbox.add(session, HEALTH_REPORT, f"health:{key}", {"month": key, "channel": self.channel})
            await session.commit()
        self.outbox.wake()
        return True

    async def stored(self, month: str) -> dict[str, Any] | None:
        """A stored report."""
        async with self.db.session() as session:
            row = await session.get(HealthReport, month)
        return row.figures if row else None

    async def history(self, months: int = 12) -> list[dict[str, Any]]:
        """The stored reports, oldest first (the chart's trend)."""
        async with self.db.session() as session:
            rows = list((await session.exec(select(HealthReport).order_by(col(HealthReport.month).desc()).limit(months))).all())
        return [{**r.figures, "month": r.month} for r in reversed(rows)]
