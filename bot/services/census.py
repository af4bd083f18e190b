"""The reader census: which consumer groups really read each topic, kept in the database (so it survives
restarts), refreshed on a schedule by one replica at a time (a lease) and on demand, and judged against the
groups people declared (catalog jobs and pipelines, OpenLineage, attributions made in Slack).

A census that fails (a slow or absent broker) leaves the last one in place; its age and the failure are
shown wherever the readers are. A partial one (Kafka did not answer for some groups) keeps those groups as they
were last seen, and says how many; a census older than its interval shows states as "last seen", never as live."""

from __future__ import annotations

import asyncio
import copy
import difflib
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from confluent_kafka.admin import AdminClient
from sqlalchemy import bindparam, delete, insert, update
from sqlalchemy import select as rows_of
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from bot.domain.readers import Census, Declared, Member, Reading, judge
from bot.kafka.census import CensusFailed, Snapshot, cluster_topics, take
from bot.kafka.clients import settings
from bot.kafka.offsets_log import OffsetsLog
from bot.services import leases
from bot.services.audit import record as audit
from bot.services.lineage import DOCUMENT, RETIRED_GROUPS, LineageService
from bot.services.sli import SliService
from bot.store.database import Database
from bot.store.models import CensusRun, GroupAttribution, TopicReader, aware, utcnow

log = logging.getLogger(__name__)
CHUNK = 500  # rows per bulk statement


class CensusError(ValueError):
    """A request about readers that cannot be served; the message is for people."""


def _changes(snapshot: Snapshot, stored: list[tuple[Any, ...]], now: datetime) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[int], int]:
    """The rows to insert, the rows to update (by ``row_id``), the ids to delete, and how many groups Kafka did not answer
    for: a reader's ``last_moved`` moves when its committed offsets did; a group Kafka did not answer for (or that an
    incomplete listing did not name) keeps its rows as they were, their ``seen_at`` telling their age."""
    known = {(topic, group): (row_id, committed, last_moved) for row_id, topic, group, committed, last_moved in stored}
    inserts, updates, seen = [], [], set()
    for group in snapshot.groups:
        for topic in group.topics():
            seen.add((topic, group.group))
            committed = {str(p): o for (t, p), o in sorted(group.committed.items()) if t == topic}
            members = [{"client_id": c, "host": h} for c, h, parts in group.members if any(t == topic for t, _ in parts)]
            lag = sum(max(0, snapshot.ends[(topic, int(p))] - o) for p, o in committed.items() if (topic, int(p)) in snapshot.ends) \
                if committed else None
            values = {"state": group.state, "members": members, "committed": committed, "lag": lag,
                      "retention_ms": snapshot.retention_ms.get(topic), "seen_at": now}
            before = known.get((topic, group.group))
            if before is None:
                inserts.append({**values, "topic": topic, "group_id": group.group, "first_seen": now, "last_moved": now if committed else None})
            else:
                row_id, old, last_moved = before
                updates.append({**values, "row_id": row_id, "last_moved": now if committed and committed != old else last_moved})
    def unknown(group: str) -> bool:
        return group in snapshot.unanswered or (snapshot.listing is not None and group not in snapshot.listed)

    gone = [row_id for key, (row_id, _, _) in known.items() if key not in seen and not unknown(key[1])]
    kept = {group for _, group in known if unknown(group)}
    return inserts, updates, gone, len(kept | set(snapshot.unanswered))


class CensusService:
    """Takes, stores and answers the census."""

    def __init__(self, db: Database, lineage: LineageService, sli: SliService, bootstrap: str | None, owner: str,
                 clock: Callable[[], datetime] = utcnow, interval: timedelta = timedelta(minutes=5)) -> None:
        self.db, self.lineage, self.sli, self.bootstrap, self.owner, self.clock = db, lineage, sli, bootstrap, owner, clock
        self.interval = interval  # how often the census is taken: an older one says what was, not what is
        self._admin: AdminClient | None = None
        self._offsets_log: OffsetsLog | None = None  # followed from one census to the next: each reads only what is new
        self._writing = asyncio.Lock()

    # --- taking it ------------------------------------------------------------------------------

    async def scheduled(self, every: timedelta) -> bool:
        """The periodic census, by whichever replica holds the lease; False when another one does."""
        if not await leases.hold(self.db, "census", self.owner, every * 2, self.clock()):
            return False
        return await self.refresh()

    async def refresh(self) -> bool:
        """Take a census now and store it; False (and the failure recorded) when the cluster did not answer."""
        if not self.bootstrap:
            raise CensusError("Kafka is not configured for this bot: set KAFKA_BOOTSTRAP_SERVERS")
        admin = self._admin_client()
        try:
            if self._offsets_log is None:
                self._offsets_log = OffsetsLog(settings(self.bootstrap, {"client.id": "changeops-census"}))
            snapshot = await asyncio.to_thread(take, admin, None, self._offsets_log)
        except Exception as err:  # a CensusFailed, or whatever else the client raised: the last census stays, the failure is shown
            reason = str(err) if isinstance(err, CensusFailed) else f"{type(err).__name__}: {err}"
            log.warning("reader census failed: %s", reason)
            async with self.db.session() as session:
                session.add(CensusRun(at=self.clock(), ok=False, error=reason[:1000]))
                await session.commit()
            return False
        async with self._writing:
            try:
                await self._store(snapshot)
            except IntegrityError:  # another replica (or a terminal) stored a census at the same moment: on top of theirs
                await self._store(snapshot)
        return True

    async def _store(self, snapshot: Snapshot) -> None:
        """Upsert every (topic, group) reading and drop those no longer seen: the rows are worked out in a worker thread and
        written in bulk statements of ``CHUNK`` rows, so a census of thousands of groups never holds the event loop."""
        now = self.clock()
        table = TopicReader.__table__  # type: ignore[attr-defined]
        async with self.db.session() as session:
            connection = await session.connection()
            stored = (await connection.execute(rows_of(table.c.id, table.c.topic, table.c.group_id, table.c.committed, table.c.last_moved))).all()
            inserts, updates, gone, partial = await asyncio.to_thread(_changes, snapshot, [tuple(r) for r in stored], now)
            for start in range(0, len(inserts), CHUNK):
                await connection.execute(insert(table), inserts[start:start + CHUNK])
            statement = update(table).where(table.c.id == bindparam("row_id")).values(
                {name: bindparam(name) for name in ("state", "members", "committed", "lag", "retention_ms", "last_moved", "seen_at")})
            for start in range(0, len(updates), CHUNK):
                await connection.execute(statement, updates[start:start + CHUNK])
            for start in range(0, len(gone), CHUNK):
                await connection.execute(delete(table).where(table.c.id.in_(gone[start:start + CHUNK])))
            reason = snapshot.listing or next(iter(sorted(snapshot.unanswered.values())), None)
            session.add(CensusRun(at=now, ok=True, groups=len(snapshot.groups), partial=partial, error=reason[:1000] if partial and reason else None))
            if partial:
                log.warning("reader census: partial, Kafka did not answer for %d group(s) (%s); they are kept as last seen", partial, reason)
            await session.exec(delete(CensusRun).where(col(CensusRun.at) < now - timedelta(days=30)))
            await session.commit()

    def _admin_client(self) -> AdminClient:
        if self._admin is None:
            assert self.bootstrap is not None
            self._admin = AdminClient(settings(self.bootstrap, {"client.id": "changeops-census"}))
        return self._admin

    def close(self) -> None:
        """Release the admin client and leave the offsets log (librdkafka ends a client when the last reference goes:
        call from a thread)."""
        self._admin = None
        if self._offsets_log is not None:
            self._offsets_log.close()

    # --- answering ------------------------------------------------------------------------------

    async def declared(self) -> dict[str, Declared]:
        """Every group someone declared: catalog and OpenLineage jobs (with their teams), pipelines' source groups, and
        groups attributed to a team in Slack."""
        found: dict[str, Declared] = {}
        for row in await self.attributions():
            if row.team:
                found[row.group_id] = Declared(None, row.team, "attributed")
        for team in (await self.lineage.teams()).values():
            for group in team.consumer_groups:
                found[group] = Declared(None, team.name, "catalog")
        for pipeline in (await self.sli.pipelines()).values():
            if pipeline.group:
                found[pipeline.group] = Declared(pipeline.jobs[0] if pipeline.jobs else f"pipeline {pipeline.name}", pipeline.owner, "pipeline")
        graph = await self.lineage.graph()
        for job in graph.jobs.values():
            for group in job.consumer_groups:
                found[group] = Declared(job.id.name, job.owners[0] if job.owners else None,
                                        "catalog" if job.learned.startswith("catalog") else "openlineage")
        return found

    async def attributions(self) -> list[GroupAttribution]:
        """What people said of undeclared groups."""
        async with self.db.session() as session:
            return list((await session.exec(select(GroupAttribution))).all())

    async def census(self, topic: str) -> Census:
        """The readers of ``topic`` as the last census saw them, judged; with the census's age and the newest failure."""
        return (await self.censuses([topic]))[topic]

    async def censuses(self, topics: list[str]) -> dict[str, Census]:
        """``census`` for many topics at once: the declarations, the retired groups and the census runs are read once. A
        reading is live only when the newest census answered, is not older than its interval, and saw it."""
        async with self.db.session() as session:
            rows = list((await session.exec(select(TopicReader).where(col(TopicReader.topic).in_(topics)))).all())
            last_ok = (await session.exec(select(CensusRun).where(col(CensusRun.ok)).order_by(col(CensusRun.at).desc()).limit(1))).first()
            newest = (await session.exec(select(CensusRun).order_by(col(CensusRun.at).desc()).limit(1))).first()
        retired = {a.group_id for a in await self.attributions() if a.retired} | set(
            (await self.lineage.setting(RETIRED_GROUPS)).get("groups") or [])
        declared, now = await self.declared(), self.clock()
        failed = newest.error if newest is not None and not newest.ok else None
        taken = aware(last_ok.at) if last_ok else None
        fresh = taken if taken is not None and failed is None and now - taken <= self.interval else None
        found = {}
        for topic in topics:
            mine = [r for r in rows if r.topic == topic]
            retention = next((timedelta(milliseconds=r.retention_ms) for r in mine if r.retention_ms is not None), None)
            readings = [Reading(r.group_id, r.topic, r.state, tuple(Member(m["client_id"], m["host"]) for m in r.members), r.lag,
                                aware(r.last_moved) if r.last_moved else None, aware(r.first_seen), aware(r.seen_at)) for r in mine]
            found[topic] = Census(topic, judge(readings, declared, retired, retention, now, fresh), taken, failed,
                                  last_ok.partial if last_ok else 0, last_ok.error if last_ok and last_ok.partial else None,
                                  now - taken if taken else None, taken is not None and now - taken > self.interval)
        return found

    async def topic_named(self, topic: str) -> list[str] | None:
        """None when ``topic`` is on the cluster, else the names nearest to it (maybe none); CensusError when the cluster
        cannot be asked (not configured, or it did not answer)."""
        if not self.bootstrap:
            raise CensusError("Kafka is not configured for this bot: set KAFKA_BOOTSTRAP_SERVERS")
        try:
            names = await asyncio.to_thread(cluster_topics, self._admin_client())
        except CensusFailed as err:
            raise CensusError(f"the cluster did not answer: {err}") from None
        return None if topic in names else difflib.get_close_matches(topic, sorted(names), n=3, cutoff=0.5)

    async def exported(self) -> dict[str, Any]:
        """The catalog as loaded, with what people said since: attributed groups under their team's ``consumer_groups``,
        retired ones in ``retired_consumer_groups`` (load it back and they stay declared)."""
        document = copy.deepcopy(await self.lineage.setting(DOCUMENT))
        if not document:
            raise CensusError("no catalog is loaded: `bot catalog load FILE` first")
        teams = document.setdefault("teams", {})
        retired = list(document.get("retired_consumer_groups") or [])
        for row in sorted(await self.attributions(), key=lambda a: a.group_id):
            if row.team and isinstance(teams.get(row.team), dict):
                groups = teams[row.team].setdefault("consumer_groups", [])
                if row.group_id not in groups:
                    groups.append(row.group_id)
            elif row.retired and row.group_id not in retired:
                retired.append(row.group_id)
        if retired:
            document["retired_consumer_groups"] = retired
        return document

    async def attribute(self, group: str, team: str | None, user: str, surface: str) -> GroupAttribution:
        """Record that ``team`` answers for ``group`` (or, ``team`` None, that the group is retired); audited."""
        if team is not None and team not in await self.lineage.teams():
            raise CensusError(f"there is no team {team!r} in the catalog")
        async with self.db.session() as session:
            row = await session.get(GroupAttribution, group) or GroupAttribution(group_id=group, by_user=user, at=self.clock())
            row.team, row.retired, row.by_user, row.at = team, team is None, user, self.clock()
            session.add(row)
            audit(session, user, surface, "attributed" if team else "retired", "consumer_group", group[:64], {"team": team})
            await session.commit()
            await session.refresh(row)
        return row
