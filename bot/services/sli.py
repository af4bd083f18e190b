"""SLI alerting in the database: samples evaluated into episodes, what is owed to Slack, ack and silence.

Every series (pipeline, SLI) is one row whose ``version`` grows with every write; writes are conditional on
the version read, so two replicas (or a sample and a click) never both act on one state: the loser reloads
and evaluates again. The replica that reads a pipeline's samples keeps its series in memory between
batches and writes a series when something about it changed (an event, a status, a timer) or at least
once per interval, so the database is the truth after a restart or a rebalance.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.domain.calendar import Scope
from bot.domain.calendar import Status as EntryStatus
from bot.domain.lineage.model import Team
from bot.domain.sli import evaluator
from bot.domain.sli.escalation import DEFAULT_AFTER, chain, escalate
from bot.domain.sli.evaluator import Event, Kind, Level, State, StateError, Status
from bot.domain.sli.folding import EXPECTING, Firing, Hold, expected, folds, hold, release, upstream_map
from bot.domain.sli.pipeline import MANDATORY, Mode, Pipeline, Rule, Sli
from bot.domain.sli.receivers import FROM_PAGERDUTY, action
from bot.domain.sli.samples import Sample, Series, by_series, moment
from bot.services.audit import record as audit
from bot.services.calendar import reach
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.store.database import Database, same
from bot.store.models import CalendarEntry, LineageRevision, PipelineRow, SliEpisode, SliSeries, TeamRow, aware, utcnow

log = logging.getLogger(__name__)
SLI_EVENT = "sli.event"  # outbox kind: something happened to an episode (coalesced per channel by the Slack side)
SLI_RECEIVER = "sli.receiver"  # outbox kind: a team's pager is owed a trigger, acknowledge or resolve
AUTO_PAUSE = "sli.auto_pause"  # outbox kind: a page of a pipeline that opted in pauses its Flink job by savepoint
FLUSH_SECONDS = 10.0     # a series read in memory is written at least this often (or every interval, if shorter)
FEED_BEHIND = timedelta(seconds=60)  # the metrics consumer reading records older than this, with more to read, is behind
Key = tuple[str, str]


class SliError(Exception):
    """A request about SLIs that cannot be done (unknown pipeline, nothing firing...); the message says why."""


@dataclass
class _Series:
    """A series held in memory: its state, the row's id and the version this state was read at."""

    row_id: int
    version: int
    state: State
    persisted: float  # time.monotonic() of the last write


@dataclass(frozen=True)
class _Catalog:
    revision: int
    pipelines: dict[str, Pipeline]
    rules: dict[str, dict[str, Rule]]  # pipeline -> SLI name -> rule
    channels: dict[str, str]  # where each pipeline's alerts go: its channel, else its team's


@dataclass(frozen=True)
class Folding:
    """The open episodes, which are folded under which root cause, and each pipeline's upstream pipelines."""

    firing: list[Firing]
    roots: dict[str, Firing]  # folded episode's fingerprint -> its root cause
    upstream: dict[str, frozenset[str]]
    expected: dict[str, Hold] = field(default_factory=dict)  # pipeline -> the booked entry that expects its lag and freshness now

    def hold_of(self, fingerprint: str) -> Hold | None:
        """Why an open episode's pages are held now (a root cause upstream first, then an expected window), or None."""
        root = self.roots.get(fingerprint)
        if root is not None:
            return Hold(f"caused upstream by {root.pipeline}")
        episode = next((f for f in self.firing if f.fingerprint == fingerprint), None)
        return self.expected.get(episode.pipeline) if episode is not None and episode.foldable else None

    def downstream_of(self, fingerprint: str) -> list[Firing]:
        """The episodes folded under this one."""
        return sorted((f for f in self.firing if self.roots.get(f.fingerprint, None) is not None
                       and self.roots[f.fingerprint].fingerprint == fingerprint), key=lambda f: (f.pipeline, f.sli))


class SliService:
    """The alerting side of the bot."""

    def __init__(self, db: Database, lineage: LineageService, outbox: Outbox, clock: Callable[[], datetime] = utcnow,
                 changes_channel: str = "#schema-changes") -> None:
        self.db, self.lineage, self.outbox, self.clock, self.changes_channel = db, lineage, outbox, clock, changes_channel
        self.rejected: Counter[str] = Counter()
        self.ingested = 0  # samples evaluated since the start
        self._logged: set[str] = set()
        self._series: dict[Key, _Series] = {}
        self._catalog = _Catalog(-1, {}, {}, {})
        self._checked = 0.0
        self._lock = asyncio.Lock()
        self._upstream: tuple[int, dict[str, frozenset[str]], dict[str, set[str]]] = (-1, {}, {})
        self.feed: Feed | None = None  # this replica's metrics consumer, once it has read

    # --- the catalog's pipelines ----------------------------------------------------------------

    async def catalog(self, *, fresh: bool = False) -> _Catalog:
        """The pipelines, reread when the catalog changed (checked at most once a second, unless ``fresh``)."""
        if not fresh and time.monotonic() - self._checked < 1.0 and self._catalog.revision >= 0:
            return self._catalog
        async with self.db.session() as session:
            row = await session.get(LineageRevision, 1)
            revision = row.revision if row else 0
            if revision != self._catalog.revision:
                pipelines = {r.name: Pipeline.from_json(r.spec) for r in (await session.exec(select(PipelineRow))).all()}
                teams = {r.name: r.channel for r in (await session.exec(select(TeamRow))).all()}
                channels = {name: p.channel or teams.get(p.owner) or self.changes_channel for name, p in pipelines.items()}
                self._catalog = _Catalog(revision, pipelines, {name: {s.value: r for s, r in p.rules().items()} for name, p in pipelines.items()}, channels)
        self._checked = time.monotonic()
        return self._catalog

    async def pipelines(self) -> dict[str, Pipeline]:
        """Every pipeline of the catalog, by name."""
        return (await self.catalog()).pipelines

    async def known(self, names: Iterable[str]) -> frozenset[str]:
        """The names of every pipeline, read afresh when ``names`` include one not known yet (the catalog may just have changed)."""
        return frozenset((await self._naming(names)).pipelines)

    async def _naming(self, names: Iterable[str]) -> _Catalog:
        catalog = await self.catalog()
        return catalog if set(names) <= set(catalog.pipelines) else await self.catalog(fresh=True)

    async def pipeline(self, name: str) -> Pipeline:
        """One pipeline; SliError naming the known ones otherwise."""
        pipelines = await self.pipelines()
        if name not in pipelines:
            known = ", ".join(sorted(pipelines)[:20]) or "none: add `pipelines:` to the catalog"
            raise SliError(f"there is no pipeline {name!r} (known: {known})")
        return pipelines[name]

    def reject(self, kind: str, message: str) -> None:
        """Count a refused sample; the first of each kind is logged."""
        self.rejected[kind] += 1
        if kind not in self._logged:
            self._logged.add(kind)
            log.warning("SLI samples: refused one (%s): %s; further refusals of this kind are counted, not logged", kind, message)

    # --- samples in -----------------------------------------------------------------------------

    async def ingest(self, samples: Iterable[Sample]) -> int:
        """Evaluate samples (any order; each series in time order) and store what changed; how many were used."""
        return await self.ingest_series(by_series(samples))

    async def ingest_series(self, batch: dict[Key, Series]) -> int:
        """``ingest`` for samples already gathered by series (the metrics consumer's batches)."""
        catalog = await self._naming({pipeline for pipeline, _ in batch})
        grouped: dict[Key, Series] = {}
        for key, series in batch.items():
            if key[0] in catalog.pipelines:
                grouped[key] = series.ordered()
            else:
                for _ in series.times:
                    self.reject("unknown_pipeline", f"unknown pipeline {key[0][:100]!r} (not in the catalog)")
        if not grouped:
            return 0
        async with self._lock:
            await self._load([k for k in grouped if k not in self._series])
            now = self.clock()
            results = {key: self._evaluate(catalog, key, series, now) for key, series in grouped.items()}
            await self._fold(catalog, results)
            for _ in range(5):
                conflicts = await self._write(catalog, {k: r for k, r in results.items() if r[1]})
                if not conflicts:
                    break
                await self._load(conflicts, force=True)
                for key in conflicts:
                    results[key] = self._evaluate(catalog, key, grouped[key], now)
                await self._fold(catalog, {k: results[k] for k in conflicts})
            else:
                log.warning("SLI samples: %d series kept changing under this replica; their samples are dropped", len(conflicts))
        used = sum(len(s.times) for s in grouped.values())
        self.ingested += used
        return used

    def _evaluate(self, catalog: _Catalog, key: Key, samples: Series, now: datetime) -> tuple[list[Event], bool]:
        """Apply one series' samples in memory (at once when they are healthy: ``evaluator.quietly``): its events, and
        whether it must be written now."""
        series = self._series[key]
        state, rule = series.state, catalog.rules[key[0]][key[1]]
        pipeline, sli = key
        flush = min(FLUSH_SECONDS, catalog.pipelines[pipeline].interval.total_seconds())
        if samples.labels is None and evaluator.quietly(state, rule, samples.times, samples.values, now):
            return [], time.monotonic() - series.persisted >= flush  # healthy: nothing to tell, written with the others
        before, late = _core(state), state.late
        events: list[Event] = []
        observe, labels = evaluator.observe, samples.labels
        for index, (time_us, value) in enumerate(zip(samples.times, samples.values, strict=True)):
            events += observe(state, rule, moment(time_us), value, now=now, pipeline=pipeline, sli=sli,
                              labels=labels[index] if labels is not None else None)
        if state.late > late:
            self.reject("late", f"{state.late - late} sample(s) of {pipeline}/{sli} older than its newest one "
                                f"({state.last_time.isoformat() if state.last_time else '?'}): dropped, so they change nothing")
        return events, bool(events) or _core(state) != before or time.monotonic() - series.persisted >= flush

    async def _load(self, keys: list[Key], *, force: bool = False) -> None:
        """Read series into memory (creating rows for new ones)."""
        wanted = [k for k in keys if force or k not in self._series]
        if not wanted:
            return
        for attempt in range(2):
            async with self.db.session() as session:
                rows = {(r.pipeline, r.sli): r for r in (await session.exec(
                    select(SliSeries).where(col(SliSeries.pipeline).in_({p for p, _ in wanted})))).all()}
                new = [k for k in wanted if k not in rows]
                if not new:
                    for key in wanted:
                        row = rows[key]
                        self._series[key] = _Series(int(row.id or 0), row.version, State.from_json(row.state), time.monotonic())
                    return
                for pipeline, sli in new:
                    session.add(SliSeries(pipeline=pipeline, sli=sli, state={}, version=0))
                try:
                    await session.commit()
                except IntegrityError:  # another replica created one of them first: read again
                    if attempt:
                        raise

    async def _write(self, catalog: _Catalog, results: dict[Key, tuple[list[Event], bool]]) -> list[Key]:
        """Write changed series conditionally, with their episodes and what they owe, in one transaction; the keys
        that another writer changed first (then nothing is written)."""
        if not results:
            return []
        now = self.clock()
        conflicts: list[Key] = []
        teams = await self.lineage.teams() if any(events for events, _ in results.values()) else {}
        async with self.db.session() as session:
            for key, (events, _) in results.items():
                series = self._series[key]
                moved = await session.exec(update(SliSeries).where(col(SliSeries.id) == series.row_id, col(SliSeries.version) == series.version)
                                           .values(state=series.state.as_json(), version=series.version + 1, updated_at=now))
                if not getattr(moved, "rowcount", 0):
                    conflicts.append(key)
                    continue
                if events:
                    await self._record(session, catalog, catalog.pipelines[key[0]], key[1], events, teams)
            if conflicts:
                await session.rollback()
                return conflicts
            await session.commit()
        stamp = time.monotonic()
        for key in results:
            self._series[key].version += 1
            self._series[key].persisted = stamp
        self.outbox.wake()
        return []

    async def _record(self, session: AsyncSession, catalog: _Catalog, pipeline: Pipeline, sli: str, events: list[Event],
                      teams: dict[str, Team] | None = None) -> None:
        """Store each event on its episode (creating it when it opens) and owe Slack a notice of it, and the team's
        receivers (PagerDuty, webhooks) what a page's events mean to them."""
        receivers = (teams or {}).get(pipeline.owner, Team("")).receivers
        channel = catalog.channels.get(pipeline.name) or self.changes_channel
        for event in events:
            row = (await session.exec(select(SliEpisode).where(SliEpisode.fingerprint == event.fingerprint))).first()
            if row is None:
                if event.kind is not Kind.OPENED:
                    log.warning("SLI: %s event for unknown episode %s of %s/%s", event.kind, event.fingerprint, pipeline.name, sli)
                    continue
                row = SliEpisode(fingerprint=event.fingerprint, pipeline=pipeline.name, sli=sli, level=event.level.value,
                                 started_at=event.started_at or event.at,
                                 channel=channel, no_data=event.value is None, peak=event.value, timeline=[])
            row.level = event.level.value
            if event.value is not None and event.kind is not Kind.RESOLVED:
                row.peak = event.value if row.peak is None else (min if catalog.rules[pipeline.name][sli].mode is Mode.BELOW else max)(row.peak, event.value)
            if event.kind is Kind.RESOLVED:
                row.resolved_at = event.at
            elif event.kind is Kind.ACKNOWLEDGED:
                row.acked_by, row.acked_at = event.actor, event.at
            act = action(event.kind, event.level, event.held is not None, event.silenced, row.paged_out, event.actor) if receivers else None
            if act == "trigger":
                row.paged_out = True
            for index, _receiver in enumerate(receivers if act else []):
                self.outbox.add(session, SLI_RECEIVER, f"receiver:{pipeline.owner}:{index}:{event.fingerprint}",
                                {"team": pipeline.owner, "receiver": index, "action": act, "episode": event.fingerprint, "at": event.at.isoformat()})
            if pipeline.auto_pause and event.level is Level.PAGE and event.kind in (Kind.OPENED, Kind.ESCALATED) and event.held is None \
                    and sli in (Sli.SCHEMA_ERROR_RATE.value, Sli.DLQ_VOLUME.value):  # the second source document's automatic response
                self.outbox.add(session, AUTO_PAUSE, f"auto-pause:{event.fingerprint}", {"pipeline": pipeline.name, "episode": event.fingerprint})
            if event.kind is not Kind.UPDATED:
                row.timeline = [*row.timeline, {"kind": event.kind.value, "at": event.at.isoformat(), "value": event.value,
                                                "actor": event.actor, "detail": event.detail, "level": event.level.value,
                                                "held": event.held}][-50:]
            session.add(row)
            self.outbox.add(session, SLI_EVENT, f"sli:{channel}",
                            {"episode": event.fingerprint, "kind": event.kind.value, "at": event.at.isoformat(), "value": event.value,
                             "actor": event.actor, "detail": event.detail, "silenced": event.silenced, "level": event.level.value,
                             "held": event.held},
                            priority=1 if event.level is Level.PAGE and event.kind is not Kind.UPDATED else 0)  # an edit never jumps a post

    # --- root causes through lineage ------------------------------------------------------------

    async def folding(self, pending: dict[Key, tuple[list[Event], bool]] | None = None) -> Folding:
        """Which open episodes are folded under which root cause upstream; ``pending``: events not stored yet, counted."""
        catalog = await self.catalog()
        upstream = await self._upstream_map(catalog)
        async with self.db.session() as session:
            rows = (await session.exec(select(SliEpisode).where(col(SliEpisode.resolved_at).is_(None)))).all()
        firing = {r.fingerprint: Firing(r.fingerprint, r.pipeline, r.sli, r.level, r.no_data, aware(r.started_at)) for r in rows}
        for (pipeline, sli), (events, _) in (pending or {}).items():
            for event in events:
                if event.kind is Kind.RESOLVED:
                    firing.pop(event.fingerprint, None)
                elif event.kind is Kind.OPENED:
                    episode = self._series[(pipeline, sli)].state.episode if (pipeline, sli) in self._series else None
                    no_data = episode is not None and episode.fingerprint == event.fingerprint and episode.no_data
                    firing[event.fingerprint] = Firing(event.fingerprint, pipeline, sli, event.level.value, no_data, event.started_at or event.at)
                elif event.fingerprint in firing:
                    known = firing[event.fingerprint]
                    firing[event.fingerprint] = Firing(known.fingerprint, known.pipeline, known.sli, event.level.value, known.no_data, known.started_at)
        listed = list(firing.values())
        return Folding(listed, folds(listed, upstream), upstream, await self._expected(catalog))

    async def _expected(self, catalog: _Catalog) -> dict[str, Hold]:
        """The pipelines a booked backfill, replay, maintenance or upgrade reaches now (its scope, and downstream of it
        through lineage): their lag and freshness are expected until its window ends."""
        now = self.clock()
        async with self.db.session() as session:
            rows = (await session.exec(select(CalendarEntry).where(col(CalendarEntry.start) <= now, col(CalendarEntry.end) > now,
                                                                   col(CalendarEntry.kind).in_([k.value for k in EXPECTING]),
                                                                   col(CalendarEntry.status) != EntryStatus.CANCELLED.value)
                                       .order_by(col(CalendarEntry.end).desc()))).all()
        if not rows:
            return {}
        graph = await self.lineage.graph()
        inputs = self._upstream[2] if self._upstream[0] == catalog.revision else {}
        found: dict[str, Hold] = {}
        for row in rows:
            scope = Scope.from_json(row.scope)
            reached = reach(graph, scope)
            for name, pipeline in catalog.pipelines.items():
                touched = (scope.jobs & set(pipeline.jobs) or scope.datasets & {*pipeline.topics, *([pipeline.sink] if pipeline.sink else [])}
                           or any(f"job {j}" in reached for j in pipeline.jobs) or any(f"dataset {d}" in reached for d in inputs.get(name, ())))
                if touched and name not in found:
                    assert row.id is not None
                    found[name] = expected(row.title, row.id, row.kind, aware(row.end))
        return found

    async def _fold(self, catalog: _Catalog, results: dict[Key, tuple[list[Event], bool]], *, releasing: bool = True,
                    folding: Folding | None = None) -> None:
        """Hold the pages of this batch's episodes that are folded under a root cause or expected (they are shown, not
        paged); and (``releasing``) start or finish the wait of held ones whose reason is gone."""
        if folding is None:
            if not any(events or _held(self._series[key].state) for key, (events, _) in results.items()):
                return  # healthy series, nothing held: nothing to fold (the common batch costs no query)
            folding = await self.folding(results)
        now = self.clock()
        for key, (events, flush) in list(results.items()):
            state = self._series[key].state
            if state.episode is None:
                continue
            why = folding.hold_of(state.episode.fingerprint)
            events = hold(events, state, why) if events else events
            if releasing:
                events = [*events, *release(state, catalog.rules[key[0]][key[1]], now, why)]
            results[key] = (events, flush or bool(events) or state.episode.held is not None)

    async def _upstream_map(self, catalog: _Catalog) -> dict[str, frozenset[str]]:
        """Each pipeline's upstream pipelines through the lineage graph (recomputed when the catalog changes)."""
        if self._upstream[0] == catalog.revision:
            return self._upstream[1]
        graph = await self.lineage.graph()
        jobs = {job.id.name: job for job in graph.jobs.values()}
        edges = [(i.name, o.name) for job in graph.jobs.values() for i in job.inputs for o in job.outputs]
        outputs = {name: {*([p.sink] if p.sink else []), *(o.name for j in p.jobs if j in jobs for o in jobs[j].outputs)}
                   for name, p in catalog.pipelines.items()}
        inputs = {name: {*p.topics, *(f"{t}-value" for t in p.topics), *(i.name for j in p.jobs if j in jobs for i in jobs[j].inputs)}
                  for name, p in catalog.pipelines.items()}
        found = upstream_map(catalog.pipelines, edges, outputs, inputs)
        self._upstream = (catalog.revision, found, inputs)
        return found

    # --- time passing ---------------------------------------------------------------------------

    async def sweep(self) -> int:
        """No data, reminders, silences that ran out: for every series; how many events it caused."""
        catalog = await self.catalog()
        now = self.clock()
        held = self.feed is not None and self.feed.behind  # the bot's own metrics consumer is behind: not the pipelines' silence
        teams, everyone = await self.lineage.teams(), await self.lineage.global_oncall()
        caused = 0
        async with self._lock:
            async with self.db.session() as session:
                rows = (await session.exec(select(SliSeries))).all()
            await self._load([(r.pipeline, r.sli) for r in rows if (r.pipeline, r.sli) not in self._series])
            results: dict[Key, tuple[list[Event], bool]] = {}
            for row in rows:
                key = (row.pipeline, row.sli)
                pipeline = catalog.pipelines.get(row.pipeline)
                if pipeline is None or key not in self._series:
                    continue
                series = self._series[key]
                if series.version < row.version:  # another replica wrote it since we read it
                    series.state, series.version = State.from_json(row.state), row.version
                rule = catalog.rules[row.pipeline][row.sli]
                before = _core(series.state)
                events = evaluator.tick(series.state, rule, now, interval=pipeline.interval, mandatory=Sli(row.sli) in MANDATORY,
                                        pipeline=row.pipeline, sli=row.sli, hold_no_data=held and Sli(row.sli) in pipeline.reports)
                team = teams.get(pipeline.owner)
                after = timedelta(seconds=team.escalate_after) if team is not None and team.escalate_after else DEFAULT_AFTER
                events += escalate(series.state, now, after, chain(team.escalation if team is not None else [], everyone is not None))
                if events or _core(series.state) != before:
                    results[key] = (events, True)
            folding = await self.folding(results)
            await self._fold(catalog, results, releasing=False, folding=folding)
            for row in rows:  # held pages whose root cause recovered: each pages on its own once it still breaches
                key = (row.pipeline, row.sli)
                kept = self._series.get(key)
                if kept is None or row.pipeline not in catalog.pipelines or kept.state.episode is None:
                    continue
                before = _core(kept.state)
                released = release(kept.state, catalog.rules[row.pipeline][row.sli], now, folding.hold_of(kept.state.episode.fingerprint))
                if released or _core(kept.state) != before:
                    events, _ = results.get(key, ([], True))
                    results[key] = ([*events, *released], True)
            caused = sum(len(events) for events, _ in results.values())
            conflicts = await self._write(catalog, results)
            for key in conflicts:  # the next sweep sees what the other writer did
                self._series.pop(key, None)
        return caused

    # --- people acting --------------------------------------------------------------------------

    async def act(self, pipeline_name: str, sli: str, user: str, action: Callable[[State, datetime], Event | None], audit_as: str,
                  detail: dict[str, Any], surface: str = "slack") -> Event | None:
        """Apply ``action`` to the series as stored now, conditionally; audited; StateError/SliError say why not."""
        catalog = await self.catalog()
        pipeline = await self.pipeline(pipeline_name)
        if sli not in {s.value for s in Sli}:
            raise SliError(f"there is no SLI {sli!r} (one of {', '.join(Sli)})")
        key = (pipeline.name, sli)
        teams = await self.lineage.teams()
        async with self._lock:
            for _ in range(5):
                await self._load([key], force=True)
                series = self._series[key]
                event = action(series.state, self.clock())
                now = self.clock()
                async with self.db.session() as session:
                    moved = await session.exec(update(SliSeries).where(col(SliSeries.id) == series.row_id, col(SliSeries.version) == series.version)
                                               .values(state=series.state.as_json(), version=series.version + 1, updated_at=now))
                    if not getattr(moved, "rowcount", 0):
                        await session.rollback()
                        continue
                    if event is not None:
                        await self._record(session, catalog, catalog.pipelines[pipeline.name], sli, [event], teams)
                    audit(session, user, surface, audit_as, "sli", f"{pipeline.name}/{sli}", detail)
                    await session.commit()
                series.version += 1
                series.persisted = time.monotonic()
                self.outbox.wake()
                return event
        raise SliError("the alert kept changing while you acted; try again")

    async def acknowledge(self, fingerprint: str, user: str, surface: str = "slack") -> SliEpisode:
        """Acknowledge the episode ``fingerprint`` (it must be the series' current one)."""
        episode = await self.episode(fingerprint)

        def ack(state: State, at: datetime) -> Event:
            if state.episode is None or state.episode.fingerprint != fingerprint:
                raise StateError("that alert is already resolved")
            return evaluator.acknowledge(state, user, at)

        await self.act(episode.pipeline, episode.sli, user, ack, "acknowledge", {"episode": fingerprint}, surface)
        return await self.episode(fingerprint)

    async def from_pagerduty(self, change: str, fingerprint: str, who: str) -> str:
        """An incident acknowledged or resolved in PagerDuty (``change``: its V3 event type): the episode is acknowledged, or
        the resolve is said in its thread (the episode itself ends with its samples). What happened, for the answer;
        SliError for an episode this bot does not know."""
        episode = await self.episode(fingerprint)
        if change == "incident.acknowledged":
            try:
                await self.acknowledge(fingerprint, who, "pagerduty")
            except StateError as err:
                return str(err)
            return "acknowledged"
        if episode.resolved_at is not None:
            return "already resolved here"

        def noted(state: State, at: datetime) -> Event:
            current = state.episode
            if current is None or current.fingerprint != fingerprint:
                raise StateError("already resolved here")
            return Event(Kind.NOTED, fingerprint, at, current.level, state.last_value, actor=who,
                         detail=f"resolved in PagerDuty by {who.removesuffix(FROM_PAGERDUTY)}: it still breaches here, and ends when its "
                                "samples are healthy")

        try:
            await self.act(episode.pipeline, episode.sli, who, noted, "resolved", {"episode": fingerprint}, "pagerduty")
        except StateError as err:
            return str(err)
        return "said in its thread"

    async def silence(self, pipeline: str, sli: str, until: datetime, user: str, reason: str = "") -> Event | None:
        """Silence one SLI of a pipeline (or ``all`` of them) until ``until``."""
        names = [s.value for s in Sli] if sli == "all" else [sli]
        last = None
        for name in names:
            last = await self.act(pipeline, name, user, lambda state, at: evaluator.silence(state, until, user, reason, at), "silence",
                                  {"until": until.isoformat(), "reason": reason}) or last
        return last

    async def unsilence(self, pipeline: str, sli: str, user: str) -> None:
        """Lift a silence early (``all``: every silenced SLI of the pipeline)."""
        if sli != "all":
            await self.act(pipeline, sli, user, lambda state, at: evaluator.unsilence(state, user, at), "unsilence", {})
            return
        lifted = 0
        for row in await self.series(pipeline):
            if State.from_json(row.state).silenced(self.clock()):
                await self.act(pipeline, row.sli, user, lambda state, at: evaluator.unsilence(state, user, at), "unsilence", {})
                lifted += 1
        if not lifted:
            raise StateError("nothing of it is silenced")

    # --- reading --------------------------------------------------------------------------------

    async def flink_job(self, pipeline: str) -> str | None:
        """The pipeline's Flink job (the first of its ``jobs`` that the catalog says runs on Flink), if it has one."""
        jobs = (await self.catalog()).pipelines.get(pipeline)
        if jobs is None or not jobs.jobs:
            return None
        graph = await self.lineage.graph()
        flink = {job.id.name for job in graph.jobs.values() if job.flink is not None}
        return next((name for name in jobs.jobs if name in flink), None)

    async def episode(self, fingerprint: str) -> SliEpisode:
        """One episode; SliError when unknown."""
        async with self.db.session() as session:
            row = (await session.exec(select(SliEpisode).where(SliEpisode.fingerprint == fingerprint))).first()
        if row is None:
            raise SliError("that alert is unknown to this bot")
        return row

    async def episodes(self, fingerprints: Iterable[str]) -> dict[str, SliEpisode]:
        """Several episodes, by fingerprint."""
        async with self.db.session() as session:
            rows = (await session.exec(select(SliEpisode).where(col(SliEpisode.fingerprint).in_(list(fingerprints))))).all()
        return {r.fingerprint: r for r in rows}

    async def in_message(self, channel: str, ts: str) -> list[SliEpisode]:
        """The episodes a message shows (one, or a digest's many)."""
        async with self.db.session() as session:
            return list((await session.exec(select(SliEpisode).where(SliEpisode.message_channel == channel, SliEpisode.message_ts == ts)
                                            .order_by(col(SliEpisode.id)))).all())

    async def save_message(self, fingerprints: list[str], channel: str, ts: str, *, digest: bool, replacing: str | None = None) -> bool:
        """Remember the message that shows these episodes (before anything else, so a retry edits it): the first one, or
        one in place of ``replacing`` (deleted in Slack); False when another post got there first."""
        async with self.db.session() as session:
            moved = await session.exec(update(SliEpisode).where(col(SliEpisode.fingerprint).in_(fingerprints), same(col(SliEpisode.message_ts), replacing))
                                       .values(message_channel=channel, message_ts=ts, digest=digest))
            await session.commit()
        return bool(getattr(moved, "rowcount", 0))

    async def series(self, pipeline: str | None = None) -> list[SliSeries]:
        """Stored series (with this replica's newer state where it holds one in memory)."""
        async with self.db.session() as session:
            query = select(SliSeries)
            if pipeline is not None:
                query = query.where(SliSeries.pipeline == pipeline)
            rows = list((await session.exec(query.order_by(col(SliSeries.pipeline), col(SliSeries.sli)))).all())
        for row in rows:
            held = self._series.get((row.pipeline, row.sli))
            if held is not None and held.version >= row.version:
                row.state = held.state.as_json()
        return rows

    async def status(self, pipeline: str | None = None) -> list[dict[str, Any]]:
        """``[{"pipeline", "sli", "value", "threshold", "state", "since", "episode", "measured_at", "age_seconds"}]`` for every SLI of
        every (or one) pipeline: ``value`` is the newest sample's, taken at ``measured_at`` (its own time), ``age_seconds`` ago."""
        catalog = await self.catalog()
        names = [(await self.pipeline(pipeline)).name] if pipeline is not None else sorted(catalog.pipelines)
        stored = {(r.pipeline, r.sli): State.from_json(r.state) for r in await self.series(pipeline)}
        folding = await self.folding()
        now = self.clock()
        out = []
        for name in names:
            for sli in Sli:
                if sli is Sli.RETENTION_HEADROOM and (name, sli.value) not in stored and sli not in catalog.pipelines[name].sources():
                    continue  # nothing forecasts it: the pipeline names no source topics and group
                if sli in (Sli.RESTARTS, Sli.CHECKPOINT_FAILURES, Sli.BACKPRESSURE, Sli.PENDING_RECORDS) and (name, sli.value) not in stored:
                    continue  # only a pipeline whose Flink job the bot reads has it
                rule = catalog.rules[name][sli]
                state = stored.get((name, sli.value), State())
                shown = "disabled" if not rule.enabled else state.status.value
                if state.silenced(now):
                    shown += " (silenced)"
                if state.episode is not None and state.status in (Status.FIRING, Status.NO_DATA):
                    shown = f"{state.episode.level.value} {shown}"
                    if state.episode.acked_by:
                        shown += " (acknowledged)"
                    if state.episode.unmeasured_since is not None:
                        shown += f" (not measured since {state.episode.unmeasured_since.astimezone(UTC):%Y-%m-%d %H:%M} UTC)"
                    why = folding.hold_of(state.episode.fingerprint)
                    if why is not None:
                        shown += f" ({why.reason}: not paged)"
                    below = sorted({f.pipeline for f in folding.downstream_of(state.episode.fingerprint)})
                    if below:
                        shown += f" (also late downstream: {', '.join(below)})"
                out.append({"pipeline": name, "sli": sli.value, "value": state.last_value, "threshold": rule.threshold_text(),
                            "state": shown, "since": state.since.isoformat() if state.since else None,
                            "episode": state.episode.fingerprint if state.episode and state.status in (Status.FIRING, Status.NO_DATA) else None,
                            "measured_at": state.last_time.isoformat() if state.last_time else None,
                            "age_seconds": max(0, int((now - state.last_time).total_seconds())) if state.last_time else None})
        return out

    async def history(self, pipeline: str, days: int = 7) -> list[SliEpisode]:
        """A pipeline's episodes of the last ``days`` days, newest first."""
        name = (await self.pipeline(pipeline)).name
        since = self.clock() - timedelta(days=days)
        async with self.db.session() as session:
            return list((await session.exec(select(SliEpisode).where(SliEpisode.pipeline == name, col(SliEpisode.started_at) >= since)
                                            .order_by(col(SliEpisode.started_at).desc()).limit(200))).all())

    async def coverage(self) -> list[dict[str, Any]]:
        """Per pipeline: the mandatory SLIs nothing measures, those declared but silent (no sample arrived for three
        intervals), and how many late samples were dropped."""
        catalog = await self.catalog()
        stored = {(r.pipeline, r.sli): State.from_json(r.state) for r in await self.series()}
        now = self.clock()
        out = []
        for name, pipeline in sorted(catalog.pipelines.items()):
            silent = []
            for sli in MANDATORY:
                state = stored.get((name, sli.value))
                last = (state.last_arrival or state.last_time) if state else None
                if sli not in pipeline.missing() and (last is None or now - aware(last) > 3 * pipeline.interval):
                    silent.append(sli.value)
            late = {sli: state.late for (p, sli), state in stored.items() if p == name and state.late}
            out.append({"pipeline": name, "owner": pipeline.owner, "missing": [s.value for s in pipeline.missing()], "silent": silent,
                        "late": late, "sources": {s.value: text for s, text in pipeline.sources().items()}})
        return out

    # --- the bot's own feed of samples ----------------------------------------------------------

    def feed_report(self, topic: str, messages: int, age: timedelta, unreachable: str | None = None) -> None:
        """What the metrics consumer of this replica read last: ``messages`` still to read on ``topic``, the newest record
        read written ``age`` ago, and why it cannot reach the cluster (None: it can). Falling behind and losing the cluster
        are each said once in the log, and once when over; while either lasts, "no data" waits for the samples the
        pipelines report (their silence would be the bot's lag, or its reachability, not theirs)."""
        before = self.feed
        was_lagging, was_away = before is not None and before.lagging, before is not None and before.unreachable is not None
        lagging = messages > 0 and (age > FEED_BEHIND or (was_lagging and age > FEED_BEHIND / 2))
        since = before.since if before is not None and before.behind else self.clock()
        self.feed = Feed(topic, messages, age, lagging, since, unreachable)
        if unreachable is not None and not was_away:
            log.warning("SLI metrics: this bot cannot reach the cluster to read %s (%s); no data waits until it can: this is the bot's "
                        "reachability, not the pipelines'", topic, unreachable)
        elif unreachable is None and was_away:
            log.warning("SLI metrics: the cluster answers again for %s", topic)
        if lagging and not was_lagging:
            log.warning("SLI metrics: this bot reads %s late (%d message(s) behind, reading samples written %.0f s ago); samples are "
                        "evaluated on their own times, and no data waits until it catches up: this is the bot's lag, not the pipelines'",
                        topic, messages, age.total_seconds())
        elif was_lagging and not lagging:
            log.warning("SLI metrics: caught up on %s", topic)


@dataclass(frozen=True)
class Feed:
    """How far behind this replica's metrics consumer is, or why it cannot read at all."""

    topic: str
    messages: int  # still to read
    age: timedelta  # of the newest record read
    lagging: bool
    since: datetime  # behind since, or when this was measured
    unreachable: str | None = None  # why the consumer cannot reach the cluster now

    @property
    def behind(self) -> bool:
        """Whether samples the pipelines report may be missing because of the bot: it lags, or cannot reach the cluster."""
        return self.lagging or self.unreachable is not None


def _held(state: State) -> bool:
    return state.episode is not None and state.episode.held is not None


def _core(state: State) -> tuple[Any, ...]:
    """What must reach the database as soon as it changes (the rest — last value, trend — may lag a little)."""
    episode = state.episode
    firing = state.status is Status.FIRING
    return (state.status, state.breach_since, state.page_since, state.clear_since if firing else None, state.silenced_until,
            None if episode is None else (episode.fingerprint, episode.level, episode.acked_by, episode.reminded_at, episode.held,
                                          episode.released_at, episode.escalation, episode.escalated_at, episode.unmeasured_since))
