"""Oncall operations: plans, confirmations, runs, cancels and undos of backfills and DLQ replays.

Every change of an operation is a conditional update on the state (and version) it expects, audited, and
owes its Slack message an edit through the outbox in the same transaction. A running replay is owned through
a lease on its row with a heartbeat; a replay whose owner went quiet is resumed by whichever bot (or terminal
run) takes the lease next, from the last committed transaction. Cluster calls block, so they run in worker
threads."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.domain.calendar import Kind as EntryKind
from bot.domain.calendar import Scope, Status, Window
from bot.domain.dead_letters import MAX_REPLAYS, ORIGINAL_TOPIC, ErrorGroup, Letter, PeekRequest, Route, group_by_error
from bot.domain.flink.backfill import step_text
from bot.domain.flink.status import FlinkError
from bot.domain.lineage.model import Job, Team
from bot.domain.ops import (
    FLINK_WAY,
    BackfillRequest,
    Copied,
    OpKind,
    OpsError,
    OpState,
    PartitionMove,
    ReplayRequest,
    Span,
    moved_text,
    progress_text,
    refuse_flink,
    refuse_hidden_reader,
    skipped_json,
)
from bot.domain.sli.pipeline import Pipeline
from bot.kafka import dead_letters
from bot.kafka.avro import Registry
from bot.kafka.operations import Cluster, Progress, Replayer, ReplayPlan, group_of, is_retriable, replay_group, scan
from bot.services import leases
from bot.services.audit import record as audit
from bot.services.calendar import CalendarService
from bot.services.flink import FlinkService
from bot.services.lineage import LineageService
from bot.services.outbox import Outbox
from bot.services.proposals import Membership
from bot.services.sli import SliService
from bot.store.database import Database, same
from bot.store.models import CalendarEntry, Operation, TopicReader, aware, utcnow

log = logging.getLogger(__name__)
OPS_MESSAGE, OPS_NOTE = "ops.message", "ops.note"
PROGRESS_SECONDS = 5.0  # how often a running replay's message is edited and its lease renewed
FOLLOW_FOR = timedelta(hours=24)  # how long a backfill's catch-up is followed
UNSEEN_READER = ("a client that keeps its own offsets (a Flink job restored from its savepoint, a consumer that assigns its "
                 "partitions) writes its old position back without reading. Check what the job wrote.")
CAUGHT_UP = 0  # lag (messages) at which a backfill counts as caught up
DRY_RUN = "dry-run"


@dataclass(frozen=True)
class Actor:
    """Who acts, from where (``slack``, ``cli``)."""

    user: str
    surface: str


def key_of(operation: int) -> str:
    """The outbox key of an operation's message and thread (in order)."""
    return f"op:{operation}"


@dataclass(frozen=True)
class Peek:
    """What a peek read: the groups by error, how many letters it read, how many the DLQ holds, and when."""

    request: PeekRequest
    groups: list[ErrorGroup]
    read: int
    held: int
    at: datetime

    def as_json(self) -> dict[str, Any]:
        """For ``--format json``."""
        return {"dlq": self.request.dlq, "read": self.read, "held": self.held, "at": self.at.isoformat(),
                "groups": [g.as_json() for g in self.groups]}


def footprint(kind: OpKind, request: dict[str, Any], plan: dict[str, Any]) -> tuple[str, Scope, timedelta]:
    """What an operation books in the calendar: its title, its topics, and about how long it takes."""
    if kind in (OpKind.PAUSE, OpKind.RESUME):
        return f"{kind.value.capitalize()} the Flink job {request['job']}", Scope(jobs=frozenset([request["job"]])), timedelta(hours=1)
    if kind is OpKind.BACKFILL:
        backfill = BackfillRequest.from_json(request)
        topics = sorted({m["topic"] for m in plan.get("moves", [])} | set(backfill.topics))
        return f"Backfill {backfill.group} on {', '.join(topics[:5])}{' and more' if len(topics) > 5 else ''}", \
            Scope(datasets=frozenset(topics)), timedelta(hours=1)
    replay = ReplayRequest.from_json(request)
    count = int(plan.get("count", 0))
    length = timedelta(seconds=max(300.0, count / replay.rate if replay.rate else count / 2000))
    touched = {replay.dlq, *([replay.target] if replay.target else []), *(plan.get("targets") or {}),
               *([plan["parked_topic"]] if plan.get("parked") else [])}
    return f"Replay {replay.dlq} → {replay.target_text()}", Scope(datasets=frozenset(touched)), length


class Operations:
    """Backfills and replays, from any surface."""

    def __init__(self, db: Database, lineage: LineageService, sli: SliService, outbox: Outbox, calendar: CalendarService,
                 membership: Membership | None, bootstrap: str | None, registry: Registry | None, owner: str,
                 lease: timedelta = timedelta(seconds=30), clock: Callable[[], datetime] = utcnow, flink: FlinkService | None = None) -> None:
        self.db, self.lineage, self.sli, self.outbox, self.calendar = db, lineage, sli, outbox, calendar
        self.membership, self.bootstrap, self.registry, self.owner, self.flink = membership, bootstrap, registry, owner, flink
        self.lease, self.clock = lease, clock
        self._cluster: Cluster | None = None
        self.running: dict[int, Progress] = {}  # replays this process runs now
        self._tasks: set[asyncio.Task[Operation]] = set()

    # --- who may --------------------------------------------------------------------------------

    async def team_of(self, kind: OpKind, request: BackfillRequest | ReplayRequest) -> str | None:
        """The team whose oncall runs this: the owner of the pipeline that reads with the group (backfill) or dead-letters to
        the DLQ (replay)."""
        for pipeline in (await self.sli.pipelines()).values():
            if isinstance(request, BackfillRequest) and pipeline.group == request.group:
                return pipeline.owner
            if isinstance(request, ReplayRequest) and pipeline.dlq == request.dlq:
                return pipeline.owner
        return None

    async def refusal(self, user: str, team_name: str | None) -> str | None:
        """None when ``user`` is oncall for ``team_name`` or in the global oncall group, else why not (for people)."""
        assert self.membership is not None
        teams = await self.lineage.teams()
        team = teams.get(team_name) if team_name else None
        if team is not None and user in await self.membership.members(Team(f"{team.name} oncall", team.oncall_usergroup, list(team.oncall))):
            return None
        everyone = await self.lineage.global_oncall()
        if everyone is not None and user in await self.membership.members(everyone):
            return None
        whose = f"the oncall of {team_name}" if team_name else "no pipeline's team (no catalog pipeline uses it)"
        also = " or the global oncall group (`oncall:` in the catalog)" if everyone else " (the catalog names no global `oncall:` group)"
        return f"Only oncall may run this: it belongs to {whose}{also}"

    # --- the cluster ----------------------------------------------------------------------------

    def _kafka(self) -> Cluster:
        if not self.bootstrap:
            raise OpsError("Kafka is not configured for this bot: set KAFKA_BOOTSTRAP_SERVERS")
        if self._cluster is None:
            self._cluster = Cluster(self.bootstrap)
        return self._cluster

    def close(self) -> None:
        """Release the cluster clients."""
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    async def _ask(self, work: Callable[[Cluster], Any]) -> Any:
        """A blocking cluster call in a worker thread; a Kafka failure becomes an OpsError for people."""
        def call() -> Any:
            return work(self._kafka())
        try:
            return await asyncio.to_thread(call)
        except OpsError:
            raise
        except Exception as err:  # the broker away, a timeout, a refusal: say what Kafka said
            raise OpsError(f"Kafka did not answer as expected: {type(err).__name__}: {str(err)[:300]}") from None

    # --- planning -------------------------------------------------------------------------------

    async def plan_backfill(self, request: BackfillRequest, actor: Actor, channel: str | None, dry_run: bool = False,
                            sql: str | None = None) -> Operation:
        """Plan a backfill on the cluster as it stands (nothing moves; a dry run is only shown); OpsError when it cannot be run.
        A group a Flink job reads is planned the Flink way (its SQL: the last passed release's, or ``sql``), or refused."""
        team = await self.team_of(OpKind.BACKFILL, request)
        if actor.surface == "slack" and (why := await self.refusal(actor.user, team)):
            raise OpsError(why)
        readers = await self.flink_readers(request.group)
        if len(readers) > 1:
            refuse_flink(request.group, readers, "Backfill one job at a time: give each its own consumer group")
        if readers:
            unready = self.flink.unready() if self.flink else "Flink is not configured for this bot"
            refuse_flink(request.group, readers, f"The bot backfills it the Flink way once it can reach Flink: {unready}. {FLINK_WAY}"
                         if unready else None)
        elif seen := await self.lineage.seen_on_flink():
            if said := await self.flink_readers(request.group, lambda job: job.flink is None and (job.id.namespace, job.id.name) in seen):
                when = max(aware(row.event_time) for (_, name), row in seen.items() if name in said)
                refuse_flink(request.group, said, f"OpenLineage says so (its event of {when:%Y-%m-%d %H:%M} UTC), though the catalog does "
                             "not say `flink:` for it: declare the Flink version it runs on there (`flink: 2.3.0`), and the bot backfills it "
                             f"the Flink way. {FLINK_WAY}")
        moves, state = await self._ask(lambda cluster: cluster.plan_backfill(request))
        plan: dict[str, Any] = {"moves": [m.as_json() for m in moves], "group_state": state, "freeze": await self._freeze_now(request)}
        plan["skipped"] = skipped_json(plan["moves"])
        if readers:
            assert self.flink is not None
            try:
                topics = sorted({m.topic for m in moves})
                partitions = await self._ask(lambda cluster: cluster.partitions_of(topics))
                plan["flink"] = await self.flink.plan_backfill(await self.flink.job(readers[0]), request, plan["moves"], partitions, sql)
            except FlinkError as err:
                raise OpsError(f"{request.group} is read by the Flink job {readers[0]}, and its backfill cannot be planned the Flink way: "
                               f"{err}. Nothing moved") from None
        else:
            await self._refuse_hidden_reader(request.group, moves)
        plan["booked"] = await self._booked_now(OpKind.BACKFILL, request.as_json(), plan)
        return await self._create(OpKind.BACKFILL, DRY_RUN if dry_run else OpState.PLANNED, team, actor, request.as_json(), plan, channel)

    async def flink_readers(self, group: str, on_flink: Callable[[Job], bool] = lambda job: job.flink is not None) -> list[str]:
        """The Flink jobs that read with ``group``: jobs that run on Flink (``flink:`` in the catalog, or OpenLineage says so)
        naming it among their consumer groups, and the Flink jobs of the pipelines that read with it."""
        jobs = (await self.lineage.graph()).jobs.values()
        flink = {job.id.name for job in jobs if on_flink(job)}
        found = {job.id.name for job in jobs if on_flink(job) and group in job.consumer_groups}
        for pipeline in (await self.sli.catalog(fresh=True)).pipelines.values():  # as stored now: this refusal guards data
            if pipeline.group == group:
                found |= flink & set(pipeline.jobs)
        return sorted(found)

    async def _refuse_hidden_reader(self, group: str, moves: list[PartitionMove]) -> None:
        """Refuse when the census saw the group without members at other committed offsets than now (a census taken before
        a backfill of ours moved the group says nothing)."""
        async with self.db.session() as session:
            rows = [r for r in (await session.exec(select(TopicReader).where(TopicReader.group_id == group))).all() if not r.members]
            if not rows:
                return
            ours = (await session.exec(select(Operation).where(  # only backfills since the oldest of those censuses can matter
                Operation.kind == OpKind.BACKFILL.value, col(Operation.state).in_((OpState.APPLIED.value, OpState.UNDONE.value)),
                col(Operation.updated_at) >= min(r.seen_at for r in rows)))).all()
        moved = max((aware(op.updated_at) for op in ours if op.request.get("group") == group), default=None)
        rows = [row for row in rows if moved is None or aware(row.seen_at) > moved]
        seen = {(row.topic, int(p)): int(o) for row in rows for p, o in row.committed.items()}
        since = min((aware(row.seen_at) for row in rows), default=None)
        if since is not None:
            refuse_hidden_reader(group, {(m.topic, m.partition): m.committed for m in moves}, seen, f"the census of {since:%Y-%m-%d %H:%M} UTC")

    async def plan_replay(self, request: ReplayRequest, dry_run: bool, actor: Actor, channel: str | None) -> Operation:
        """Scan the DLQ and plan a replay (a dry run is only shown); OpsError when it cannot be run."""
        team = await self.team_of(OpKind.REPLAY, request)
        if actor.surface == "slack" and (why := await self.refusal(actor.user, team)):
            raise OpsError(why)
        await self._one_at_a_time(request.dlq)
        pipeline = next((p for p in (await self.sli.pipelines()).values() if p.dlq == request.dlq), None)
        if request.to_original and pipeline is None:
            raise OpsError(f"no catalog pipeline dead-letters to {request.dlq}, so nothing says which topics its letters may go back to: "
                           "replay them to one topic with --to TOPIC, or name the DLQ in its pipeline's catalog entry")
        route = Route(request.dlq, request.target, pipeline.max_replays if pipeline else MAX_REPLAYS, pipeline.dlq_header if pipeline else None)
        earlier = await self.copied(request.dlq)
        plan: ReplayPlan = await self._ask(lambda cluster: scan(cluster, request, earlier, self.registry, route))
        if request.to_original:
            assert pipeline is not None
            refuse_targets(plan, pipeline)
        stored = {**plan.as_json(), "freeze": await self._freeze_now(request)}
        stored["booked"] = await self._booked_now(OpKind.REPLAY, request.as_json(), stored)
        return await self._create(OpKind.REPLAY, DRY_RUN if dry_run else OpState.PLANNED, team, actor, request.as_json(), stored, channel)

    async def plan_pause(self, job: str, actor: Actor, channel: str | None, dry_run: bool = False, reason: str | None = None) -> Operation:
        """Plan to stop a catalog Flink job with a savepoint (``reason``: why the bot pauses it itself); OpsError when it cannot."""
        found, team = await self._flink_job(job, actor)
        assert self.flink is not None
        try:
            plan = {"flink": await self.flink.plan_pause(found), **({"reason": reason} if reason else {})}
        except FlinkError as err:
            raise OpsError(f"{job} cannot be paused: {err}. Nothing changed") from None
        return await self._create(OpKind.PAUSE, DRY_RUN if dry_run else OpState.PLANNED, team, actor, {"job": job}, plan, channel)

    async def plan_resume(self, job: str, actor: Actor, channel: str | None, dry_run: bool = False, sql: str | None = None,
                          savepoint: str | None = None) -> Operation:
        """Plan to start a catalog Flink job again from a savepoint (its last pause's unless given) with its SQL."""
        found, team = await self._flink_job(job, actor)
        assert self.flink is not None
        async with self.db.session() as session:
            ours = (await session.exec(select(Operation).where(  # the job's pauses and resumes, newest first
                col(Operation.kind).in_((OpKind.PAUSE.value, OpKind.RESUME.value)),
                col(Operation.state).in_((OpState.APPLIED.value, OpState.DONE.value))).order_by(col(Operation.id).desc()))).all()
        last = next((op for op in ours if op.request.get("job") == job), None)
        # the last pause's savepoint only while nothing resumed the job since: after a resume it ran on, and that state is old
        paused = str(last.progress["savepoint"]) if last is not None and last.kind == OpKind.PAUSE.value and last.progress.get("savepoint") \
            else None
        try:
            plan = {"flink": await self.flink.plan_resume(found, sql, savepoint, paused)}
        except FlinkError as err:
            raise OpsError(f"{job} cannot be resumed: {err}. Nothing changed") from None
        return await self._create(OpKind.RESUME, DRY_RUN if dry_run else OpState.PLANNED, team, actor, {"job": job}, plan, channel)

    async def _flink_job(self, name: str, actor: Actor) -> tuple[Any, str | None]:
        """The catalog Flink job and the team whose oncall may act on it (refused for anyone else in Slack)."""
        if self.flink is None:
            raise OpsError("Flink is not configured for this bot: set FLINK_REST_URL and FLINK_SAVEPOINT_DIR")
        try:
            job = await self.flink.job(name)
        except FlinkError as err:
            raise OpsError(str(err)) from None
        team = job.owners[0] if job.owners else None
        if actor.surface == "slack" and (why := await self.refusal(actor.user, team)):
            raise OpsError(why)
        return job, team

    async def committed_offsets(self, group: str, topics: tuple[str, ...]) -> dict[str, dict[int, int]]:
        """The group's committed offsets now on ``topics`` (none: every topic), for ``--export``; OpsError when it has none
        on one of them."""
        def read(cluster: Cluster) -> dict[tuple[str, int], int]:
            if topics:
                cluster.partitions_of(list(topics))
            return cluster.committed_everywhere(group)
        found: dict[str, dict[int, int]] = {}
        for (topic, partition), offset in (await self._ask(read)).items():
            if not topics or topic in topics:
                found.setdefault(topic, {})[partition] = offset
        missing = [t for t in topics if t not in found]
        if missing or not found:
            raise OpsError(f"consumer group {group} has committed no offset on {', '.join(missing) or 'any topic'}: nothing to export "
                           "(check the names: `kafka-consumer-groups --list`)")
        return found

    async def peek(self, request: PeekRequest, actor: Actor) -> Peek:
        """The newest dead letters of a DLQ, decoded and grouped by error (nothing is copied or moved); OpsError when the
        user may not read them or the cluster cannot say."""
        pipeline = next((p for p in (await self.sli.pipelines()).values() if p.dlq == request.dlq), None)
        if actor.surface == "slack" and (why := await self.refusal(actor.user, pipeline.owner if pipeline else None)):
            raise OpsError(why)

        def read(cluster: Cluster) -> tuple[list[Letter], int]:
            try:
                return dead_letters.peek(cluster.bootstrap, request.dlq, self.registry, request.count)
            except ValueError as err:
                raise OpsError(f"{err} (check the name: `kafka-topics --list`)") from None

        letters, held = await self._ask(read)
        groups = group_by_error(letters, request.error_header)
        async with self.db.session() as session:
            audit(session, actor.user, actor.surface, "peek", "topic", request.dlq, {"count": len(letters)})
            await session.commit()
        return Peek(request, groups, len(letters), held, self.clock())

    async def _freeze_now(self, request: BackfillRequest | ReplayRequest) -> dict[str, str] | None:
        """The freeze covering the operation's pipeline now, named in its plan and its confirm dialog (it is not refused:
        oncall must be able to act in an incident)."""
        pipeline = next((p for p in (await self.sli.pipelines()).values()
                         if (isinstance(request, BackfillRequest) and p.group == request.group) or (isinstance(request, ReplayRequest) and p.dlq == request.dlq)),
                        None)
        scope = Scope(jobs=frozenset(pipeline.jobs)) if pipeline is not None else Scope()
        now = self.clock()
        frozen = await self.calendar.freeze_over(Window(now, now + timedelta(microseconds=1)), pipeline.owner if pipeline else "", scope)
        if frozen is None:
            return None
        freeze, occurrence = frozen
        return {"name": freeze.name, "ends": occurrence.end.isoformat(), "reason": freeze.reason}

    async def _one_at_a_time(self, dlq: str) -> None:
        """OpsError while a replay of ``dlq`` runs: two at once could copy a message twice."""
        for row in await self.recent(200):
            if row.kind == OpKind.REPLAY.value and row.state in (OpState.RUNNING.value, OpState.CANCELLING.value) and row.request.get("dlq") == dlq:
                raise OpsError(f"replay #{row.id} of {dlq} is running: wait for it to end (or cancel it), then plan again")

    async def _create(self, kind: OpKind, state: str, team: str | None, actor: Actor, request: dict[str, Any], plan: dict[str, Any],
                      channel: str | None) -> Operation:
        async with self.db.session() as session:
            row = Operation(kind=kind.value, state=state, team=team, requested_by=actor.user, surface=actor.surface, request=request,
                            plan=plan, channel=channel or await self._channel_of(team), created_at=self.clock(), updated_at=self.clock())
            session.add(row)
            await session.flush()
            assert row.id is not None
            if kind is OpKind.REPLAY:
                row.plan = {**plan, "group": replay_group(row.id)}
            audit(session, actor.user, actor.surface, "dry-run" if state == DRY_RUN else "planned", kind.value, str(row.id), {"request": request})
            if row.channel:
                self.outbox.add(session, OPS_MESSAGE, key_of(row.id), {"operation": row.id})
            await session.commit()
            await session.refresh(row)
        self.outbox.wake()
        return row

    async def _channel_of(self, team: str | None) -> str | None:
        """Where a terminal's operation is shown: its team's channel."""
        teams = await self.lineage.teams()
        return teams[team].channel if team and team in teams else None

    async def copied(self, dlq: str) -> list[Copied]:
        """What earlier replays of ``dlq`` copied: all of a finished one's range; for the others, up to the DLQ offsets their
        last committed transaction recorded (Kafka's word, not our last heartbeat's)."""
        async with self.db.session() as session:
            rows = (await session.exec(select(Operation).where(col(Operation.kind) == OpKind.REPLAY.value,
                                                                col(Operation.state).in_([OpState.RUNNING.value, OpState.CANCELLING.value,
                                                                                          OpState.CANCELLED.value, OpState.DONE.value,
                                                                                          OpState.FAILED.value])))).all()
        earlier = []
        for row in rows:
            request = ReplayRequest.from_json(row.request)
            if request.dlq != dlq:
                continue
            assert row.id is not None
            spans = ReplayPlan.from_json(request, row.plan).spans
            if row.state != OpState.DONE.value:  # as far as it got: Kafka's committed offsets, or what it saved (they expire in Kafka)
                positions: dict[int, int] = await self._ask(_committed_of(group_of(row.id, row.plan), dlq, [s.partition for s in spans]))
                saved = {int(p): int(o) for p, o in (row.progress.get("positions") or {}).items()}
                spans = [Span(s.partition, s.start, min(s.end, max(s.start, positions.get(s.partition, s.start), saved.get(s.partition, s.start))))
                         for s in spans]
            earlier.append(Copied(row.id, tuple(spans), request.header))
        return earlier

    # --- reading --------------------------------------------------------------------------------

    async def get(self, operation: int) -> Operation:
        """One operation; OpsError when there is none."""
        async with self.db.session() as session:
            row = await session.get(Operation, operation)
        if row is None:
            raise OpsError(f"there is no operation #{operation}")
        return row

    async def recent(self, limit: int = 20) -> list[Operation]:
        """Running operations first, then the most recent."""
        async with self.db.session() as session:
            rows = list((await session.exec(select(Operation).order_by(col(Operation.id).desc()).limit(200))).all())
        active = [r for r in rows if not _final(r.state)]
        return (active + [r for r in rows if _final(r.state)])[:limit]

    async def find_unfinished(self, kind: OpKind, request: dict[str, Any]) -> Operation | None:
        """A running operation of the same request, whatever its rate (a terminal run resumes it)."""
        async with self.db.session() as session:
            rows = (await session.exec(select(Operation).where(col(Operation.kind) == kind.value, col(Operation.state).in_(
                [OpState.RUNNING.value, OpState.CANCELLING.value])).order_by(col(Operation.id)))).all()
        def same(other: dict[str, Any]) -> bool:  # a backfill: any of the same group (one at a time, whatever its target)
            if kind is OpKind.BACKFILL:
                return bool(other.get("group") == request.get("group"))
            return {k: v for k, v in other.items() if k != "rate"} == {k: v for k, v in request.items() if k != "rate"}
        return next((r for r in rows if same(r.request)), None)

    # --- changing -------------------------------------------------------------------------------

    async def _move(self, row: Operation, expect: tuple[str, ...], actor: Actor | None, action: str, detail: dict[str, Any] | None = None,
                    note: str | None = None, session_work: Callable[[AsyncSession, Operation], Any] | None = None, **values: Any) -> Operation:
        """Write ``values`` if the row is still in one of ``expect`` at its version; audited, its message edited, a thread note."""
        assert row.id is not None
        async with self.db.session() as session:
            moved = await session.exec(update(Operation).where(col(Operation.id) == row.id, col(Operation.version) == row.version,
                                                               col(Operation.state).in_(expect))
                                       .values(**values, version=row.version + 1, updated_at=self.clock()))
            if not getattr(moved, "rowcount", 0):
                current = await session.get(Operation, row.id)
                state = current.state if current else "gone"
                raise OpsError(f"#{row.id} is {state} now (someone else acted on it first); nothing changed")
            fresh = await session.get(Operation, row.id)
            assert fresh is not None
            if session_work is not None:
                await session_work(session, fresh)
            if actor is not None:
                audit(session, actor.user, actor.surface, action, row.kind, str(row.id), detail or {})
            if fresh.channel:
                self.outbox.add(session, OPS_MESSAGE, key_of(row.id), {"operation": row.id})
                if note:
                    self.outbox.add(session, OPS_NOTE, key_of(row.id), {"operation": row.id, "text": note})
            await session.commit()
            await session.refresh(fresh)
        self.outbox.wake()
        return fresh

    async def confirm(self, operation: int, actor: Actor) -> Operation:
        """Run a planned operation: a backfill moves the group (after re-checking the plan); a replay starts (see ``run``)."""
        row = await self.get(operation)
        if row.state != OpState.PLANNED.value:
            raise OpsError(f"#{operation} is {row.state}, not waiting for a confirmation; nothing changed")
        if actor.surface == "slack" and (why := await self.refusal(actor.user, row.team)):
            raise OpsError(why)
        if row.kind == OpKind.BACKFILL.value and row.plan.get("flink") and "starts" not in row.plan["flink"]:
            raise OpsError(f"#{operation} was planned by an earlier version of the bot, which did not work out where each source starts "
                           "again: plan it again; nothing changed")
        if row.plan.get("flink"):
            first = "starting" if row.kind == OpKind.RESUME.value else "stopping"
            how = "from its savepoint" if row.kind == OpKind.RESUME.value else "with a savepoint"
            return await self._move(row, (OpState.PLANNED.value,), actor, "confirmed", {},
                                    f":arrow_forward: Confirmed by {_who(actor)}: {first} {row.plan['flink']['job']} {how}.",
                                    self._book, state=OpState.RUNNING.value, lease_owner=self.owner, lease_until=self.clock() + self.lease,
                                    progress={"phase": "apply"})
        if row.kind == OpKind.BACKFILL.value:
            return await self._apply(row, actor)
        await self._one_at_a_time(str(row.request["dlq"]))
        return await self._move(row, (OpState.PLANNED.value,), actor, "confirmed", {}, f":arrow_forward: Started by {_who(actor)}.",
                                 self._book, state=OpState.RUNNING.value, lease_owner=self.owner, lease_until=self.clock() + self.lease)

    async def _apply(self, row: Operation, actor: Actor) -> Operation:
        request = BackfillRequest.from_json(row.request)
        planned = [PartitionMove.from_json(m) for m in row.plan["moves"]]
        moves, state = await self._ask(lambda cluster: cluster.plan_backfill(request))
        if request.to_end == "latest":  # the end as planned: the group skips exactly what the confirmation named
            ends = {(m.topic, m.partition): m.target for m in planned}
            moves = [replace(m, target=ends.get((m.topic, m.partition), m.target)) for m in moves]
        exact = request.to_time is None and request.to_end is None  # offsets and shifts: the targets themselves must hold
        try:  # a Flink reader, or commits that moved with no member since the plan (refuse_active passed): a reset would not hold
            refuse_flink(request.group, await self.flink_readers(request.group), "This plan was made as a reset of the group: plan it again, "
                         "and the backfill is planned the Flink way")
            refuse_hidden_reader(request.group, {(m.topic, m.partition): m.committed for m in moves},
                                 {(m.topic, m.partition): m.committed for m in planned if m.committed is not None}, f"#{row.id} was planned")
        except OpsError as err:
            await self._move(row, (OpState.PLANNED.value,), actor, "refused", {"error": str(err)}, f":no_entry: Not applied: {_plain(err)}",
                             state=OpState.FAILED.value, result=str(err))
            raise
        if [(m.topic, m.partition, m.committed) + ((m.target,) if exact else ()) for m in moves] != \
                [(m.topic, m.partition, m.committed) + ((m.target,) if exact else ()) for m in planned]:
            plan = {**row.plan, "moves": [m.as_json() for m in moves], "group_state": state}
            plan["skipped"] = skipped_json(plan["moves"])
            plan["booked"] = await self._booked_now(OpKind.BACKFILL, row.request, plan)
            await self._move(row, (OpState.PLANNED.value,), actor, "replanned", {}, ":warning: The group's offsets moved since the plan; "
                             "the plan above is redone with the cluster as it is now. Check it and confirm again.", plan=plan)
            raise OpsError(f"the offsets of {request.group} moved since #{row.id} was planned; the plan is redone: check it and confirm again")
        previous: dict[str, dict[str, int | None]] = {}
        for m in moves:
            previous.setdefault(m.topic, {})[str(m.partition)] = m.committed
        claimed = await self._move(row, (OpState.PLANNED.value,), None, "", state=OpState.APPLIED.value,
                                   progress={"previous": previous, "lag": sum(max(0, m.reread) for m in moves),
                                             "following": True, "applied_at": self.clock().isoformat()})
        targets = {(m.topic, m.partition): m.target for m in moves}
        try:
            await self._ask(lambda cluster: cluster.reset(request.group, targets))
        except OpsError as err:
            await self._move(claimed, (OpState.APPLIED.value,), actor, "failed", {"error": str(err)}, f":x: The reset failed: {_plain(err)}. Nothing moved.",
                             state=OpState.FAILED.value, result=str(err))
            raise
        return await self._move(claimed, (OpState.APPLIED.value,), actor, "applied", {"offsets": _nested(targets)},
                                f":white_check_mark: Applied by {_who(actor)}: {request.group} now starts at {moved_text(dict(targets))}. "
                                "Start the job; I follow its lag here until it has caught up.", self._book)

    async def undo(self, operation: int, actor: Actor) -> Operation:
        """Put an applied backfill's group back where it was (the group must be stopped again)."""
        row = await self.get(operation)
        if row.kind != OpKind.BACKFILL.value or row.state != OpState.APPLIED.value:
            raise OpsError(f"#{operation} is a {row.kind} that is {row.state}: only an applied backfill can be undone; nothing changed")
        if actor.surface == "slack" and (why := await self.refusal(actor.user, row.team)):
            raise OpsError(why)
        if row.plan.get("flink"):
            return await self._move(row, (OpState.APPLIED.value,), actor, "undoing", {},
                                    f":leftwards_arrow_with_hook: Undo asked by {_who(actor)}: restarting {row.plan['flink']['job']} from its "
                                    "original savepoint.", state=OpState.RUNNING.value, lease_owner=self.owner,
                                    lease_until=self.clock() + self.lease, progress={**row.progress, "phase": "undo", "following": False})
        request = BackfillRequest.from_json(row.request)
        previous = {(t, int(p)): o for t, offsets in row.progress.get("previous", {}).items() for p, o in offsets.items() if o is not None}
        if not previous:
            raise OpsError(f"{request.group} had no committed offsets before #{operation}, so there is nothing to put back")
        back = _nested(previous)
        await self._ask(lambda cluster: cluster.plan_backfill(BackfillRequest(request.group, tuple(sorted(back)), to_offsets=back)))
        claimed = await self._move(row, (OpState.APPLIED.value,), None, "", state=OpState.UNDONE.value,
                                   progress={**row.progress, "following": False})
        await self._ask(lambda cluster: cluster.reset(request.group, previous))
        return await self._move(claimed, (OpState.UNDONE.value,), actor, "undone", {"offsets": _nested(previous)},
                                f":leftwards_arrow_with_hook: Undone by {_who(actor)}: {request.group} is back at {moved_text(dict(previous))}.",
                                self._finish_entry)

    async def cancel(self, operation: int, actor: Actor) -> Operation:
        """Cancel a plan, or stop a running replay at its next transaction boundary."""
        row = await self.get(operation)
        if actor.surface == "slack" and (why := await self.refusal(actor.user, row.team)):
            raise OpsError(why)
        if row.state in (OpState.PLANNED.value, DRY_RUN):
            return await self._move(row, (row.state,), actor, "cancelled", {}, f":no_entry_sign: Cancelled by {_who(actor)}; nothing moved.",
                                    state=OpState.CANCELLED.value)
        if row.state == OpState.RUNNING.value and row.plan.get("flink"):
            raise OpsError(f"#{operation} is stopping or starting a Flink job: it cannot be cut off midway (a failed backfill rolls back); "
                           "let it end")
        if row.state == OpState.RUNNING.value:  # said first, then the run told: it ends as cancelled, never handed over
            asked = await self._move(row, (OpState.RUNNING.value,), actor, "cancel asked", {},
                                     f":octagonal_sign: {_who(actor)} asked to cancel: it stops after the transaction in flight.",
                                     state=OpState.CANCELLING.value)
            progress = self.running.get(operation)
            if progress is not None:
                progress.stop.set()
            return asked
        raise OpsError(f"#{operation} is {row.state}: there is nothing to cancel")

    async def _book(self, session: AsyncSession, row: Operation) -> None:
        """A calendar entry for a confirmed operation (its window: from now for about as long as it should take)."""
        assert row.id is not None
        if row.calendar_entry is not None:
            return
        now = self.clock()
        title, scope, length = footprint(OpKind(row.kind), row.request, row.plan)
        entry = self.calendar.book(session, kind=EntryKind(row.kind) if row.kind in set(EntryKind) else EntryKind.MAINTENANCE, title=f"{title} (#{row.id})", window=Window(now, now + length),
                                   owner=row.team or "oncall", booked_by=row.requested_by, scope=scope, status=Status.CONFIRMED)
        entry.operation_id = row.id
        await session.flush()
        await session.exec(update(Operation).where(col(Operation.id) == row.id).values(calendar_entry=entry.id))

    async def _booked_now(self, kind: OpKind, request: dict[str, Any], plan: dict[str, Any]) -> list[dict[str, Any]]:
        """The booked changes an operation run now would meet (its window and topics, through lineage), for its plan and
        its confirm dialog."""
        _, scope, length = footprint(kind, request, plan)
        now = self.clock()
        return [{"id": row.id, "kind": row.kind, "title": row.title, "start": aware(row.start).isoformat(), "end": aware(row.end).isoformat(),
                 "why": why} for row, why in (await self.calendar.touching(Window(now, now + length), scope))[:10]]

    async def _finish_entry(self, session: AsyncSession, row: Operation) -> None:
        """The operation's calendar entry ends now."""
        if row.calendar_entry is not None:
            now = self.clock()
            await session.exec(update(CalendarEntry).where(col(CalendarEntry.id) == row.calendar_entry, col(CalendarEntry.end) > now)
                               .values(end=now, sequence=CalendarEntry.sequence + 1, updated_at=now))

    # --- running a replay -----------------------------------------------------------------------

    async def claim(self, row: Operation) -> Operation | None:
        """Take the lease of a running operation (ours already, its owner's ran out, or its owner is a process of this machine
        that ended); None while another owner holds it."""
        now = self.clock()
        fresh = await self.get(int(row.id or 0))
        gone = [fresh.lease_owner] if fresh.lease_owner and leases.holder(fresh.lease_owner) is leases.Holder.DEAD else []
        async with self.db.session() as session:
            moved = await session.exec(update(Operation).where(
                col(Operation.id) == row.id, col(Operation.state).in_([OpState.RUNNING.value, OpState.CANCELLING.value]),
                or_(col(Operation.lease_owner) == self.owner, col(Operation.lease_until).is_(None), col(Operation.lease_until) < now,
                    col(Operation.lease_owner).in_(gone)))  # a holder known dead: at once, not when its lease runs out
                .values(lease_owner=self.owner, lease_until=now + self.lease))
            await session.commit()
        return await self.get(int(row.id or 0)) if getattr(moved, "rowcount", 0) else None

    async def run(self, operation: int, resumed: bool = False) -> Operation:
        """Copy a running replay to the end (or until cancelled), holding its lease; returns it as it ended. Its progress
        is saved and shown every ``PROGRESS_SECONDS``."""
        row = await self.get(operation)
        assert self.bootstrap
        request = ReplayRequest.from_json(row.request)
        plan = ReplayPlan.from_json(request, row.plan)
        earlier = [c for c in await self.copied(request.dlq) if c.replay != operation]
        progress = self.running[operation] = Progress()
        progress.positions = {int(p): int(o) for p, o in (row.progress.get("positions") or {}).items()}  # where it was last seen
        if row.state == OpState.CANCELLING.value:
            progress.stop.set()
        replayer = Replayer(self.bootstrap, operation, group_of(operation, row.plan), request, plan, earlier, progress)
        task = asyncio.ensure_future(asyncio.to_thread(replayer.run))
        announced = not resumed
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=PROGRESS_SECONDS)
                if not announced and (progress.positions or done):
                    announced = True
                    await self._note(operation, f":recycle: Resumed by this bot from the last committed transaction: {progress.resumed_from:,} "
                                                "already copied, nothing lost or copied twice.")
                if done:
                    break
                row = await self._heartbeat(row, progress)
        except BaseException:
            progress.stop.set()
            await asyncio.wait({task}, timeout=60)
            raise
        finally:
            self.running.pop(operation, None)
        try:
            finished = task.result()
        except Exception as err:
            row = await self.get(operation)
            if is_retriable(err):
                log.warning("replay #%s stopped on a Kafka failure; it resumes when the lease runs out: %s", operation, err)
                await self._move(row, (row.state,), None, "", None, f":warning: Kafka failed under the replay ({_plain(err)}); it resumes from the "
                                 "last committed transaction.", lease_until=self.clock())
                return await self.get(operation)
            return await self._move(row, (row.state,), Actor("changeops", "scheduler"), "failed", {"error": str(err)},
                                    f":x: The replay failed: {_plain(err)}. {progress.copied:,} were copied, each once.", self._finish_entry,
                                    state=OpState.FAILED.value, result=str(err), progress=self._progress_json(row, progress))
        for _ in range(5):  # a cancel (or a heartbeat) may land between reading the row and writing its end: read it again
            try:
                return await self._end(await self.get(operation), finished, progress, plan, request)
            except OpsError:
                continue
        return await self.get(operation)

    async def run_flink(self, operation: int, resumed: bool = False) -> Operation:
        """Carry a confirmed Flink backfill (or its Undo) through its steps, holding its lease, from the last step a
        stopped run recorded; returns it as it ended. A run that fails after the job was stopped starts it again from
        its savepoint, as it was."""
        assert self.flink is not None
        row = await self.get(operation)
        flink, phase = row.plan["flink"], row.progress.get("phase", "apply")
        if resumed:
            await self._note(operation, f":recycle: Resumed by this bot after its last recorded step ({step_text(row.progress.get('step'))}).")
        beat = asyncio.create_task(self._renew(operation))
        progress: dict[str, Any] = dict(row.progress)

        async def save(now: dict[str, Any]) -> None:
            nonlocal progress
            progress = now
            await self._move(await self.get(operation), (OpState.RUNNING.value,), None, "", None, None, progress=now,
                             lease_until=self.clock() + self.lease)

        scheduler = Actor("changeops", "scheduler")
        try:
            if row.kind == OpKind.PAUSE.value:
                done = await self.flink.pause(flink, progress, save)
                return await self._move(await self.get(operation), (OpState.RUNNING.value,), scheduler, "paused", {"savepoint": done["savepoint"]},
                                        f":double_vertical_bar: Paused: {flink['job']} is stopped with the savepoint {done['savepoint']}; nothing "
                                        f"reads for it meanwhile. `/flink resume {flink['job']}` starts it again from there.", self._finish_entry,
                                        state=OpState.APPLIED.value, lease_owner=None, lease_until=None, progress=done, result=done["savepoint"])
            if row.kind == OpKind.RESUME.value:
                done = await self.flink.resume(flink, progress, save)
                return await self._move(await self.get(operation), (OpState.RUNNING.value,), scheduler, "resumed", {"job": done["new_job"]},
                                        f":arrow_forward: Resumed: {flink['job']} runs again as job {done['new_job']}, restored from "
                                        f"{flink['savepoint']}; it reads on from where it stopped.", self._finish_entry,
                                        state=OpState.DONE.value, lease_owner=None, lease_until=None, progress=done, result=done["new_job"])
            if phase == "undo":
                job = await self.flink.restart_from(flink, progress.get("new_job"), progress["savepoint"])
                return await self._move(await self.get(operation), (OpState.RUNNING.value,), scheduler, "undone", {"job": job},
                                        f":leftwards_arrow_with_hook: Undone: {flink['job']} runs again from its original savepoint "
                                        f"{progress['savepoint']} (job {job}), as before the backfill; what downstream saw again stays.",
                                        self._finish_entry, state=OpState.UNDONE.value, lease_owner=None, lease_until=None,
                                        progress={**progress, "undone_job": job})
            done = await self.flink.run_backfill(operation, flink, row.plan["moves"], progress, save)
            reread = sum(max(0, m["reread"]) for m in row.plan["moves"])
            return await self._move(await self.get(operation), (OpState.RUNNING.value,), scheduler, "applied", {"job": done["new_job"]},
                                    f":white_check_mark: Applied: {flink['job']} runs again as job {done['new_job']}, restored from "
                                    f"{done['copy']} (its savepoint without the source's state), reading {reread:,} records again from "
                                    f"{moved_text({(m['topic'], m['partition']): m['target'] for m in row.plan['moves']})}. Undo restarts it "
                                    "from the original savepoint.", state=OpState.APPLIED.value, lease_owner=None, lease_until=None,
                                    progress={**done, "lag": reread, "following": True, "applied_at": self.clock().isoformat()})
        except (FlinkError, OpsError) as err:
            return await self._flink_failed(operation, phase, progress, err)
        finally:
            beat.cancel()

    async def _flink_failed(self, operation: int, phase: str, progress: dict[str, Any], err: Exception) -> Operation:
        """End a failed Flink run saying where the job is: untouched, started again as it was, or stopped with its savepoint."""
        assert self.flink is not None
        row = await self.get(operation)
        flink, text = row.plan["flink"], f"{err}"
        if row.kind == OpKind.PAUSE.value:
            text = f"Not paused: {err}. {flink['job']} runs on."
        elif row.kind == OpKind.RESUME.value:
            text = f"Not resumed: {err}. Its savepoint {flink['savepoint']} is kept; plan the resume again once the cause is fixed."
        elif phase == "apply" and "savepoint" not in progress:
            text = f"Not applied: {err}. Nothing changed: {flink['job']} runs on."
        elif phase == "apply":
            try:
                job = await self.flink.restart_from(flink, progress.get("new_job"), progress["savepoint"])
                text = f"Not applied: {err}. Rolled back: {flink['job']} runs again from its savepoint {progress['savepoint']} (job {job}), as before."
            except (FlinkError, OpsError) as again:
                text = (f"Not applied: {err}. {flink['job']} is stopped, and starting it again from its savepoint failed too ({again}): start it "
                        f"from {progress['savepoint']} by hand.")
        else:
            text = f"Undo failed: {err}. The savepoint of before the backfill is {progress['savepoint']}."
        return await self._move(row, (OpState.RUNNING.value,), Actor("changeops", "scheduler"), "failed", {"error": str(err)}, f":x: {_plain(text)}",
                                self._finish_entry, state=OpState.FAILED.value, result=text, lease_owner=None, lease_until=None)

    async def _renew(self, operation: int) -> None:
        """Keep a running operation's lease while its steps take their time."""
        while True:
            await asyncio.sleep(min(PROGRESS_SECONDS, self.lease.total_seconds() / 3))
            async with self.db.session() as session:
                await session.exec(update(Operation).where(col(Operation.id) == operation, col(Operation.lease_owner) == self.owner,
                                                           col(Operation.state) == OpState.RUNNING.value)
                                   .values(lease_until=self.clock() + self.lease))
                await session.commit()

    async def _end(self, row: Operation, finished: bool, progress: Progress, plan: ReplayPlan, request: ReplayRequest) -> Operation:
        """Write how a run ended: done, cancelled (where the DLQ was copied up to), or handed over (this process stops)."""
        if finished:
            seconds = time.monotonic() - progress.started
            text = outcome_text(progress, plan, request)
            return await self._move(row, (OpState.RUNNING.value, OpState.CANCELLING.value), Actor("changeops", "scheduler"), "done",
                                    {"copied": progress.copied}, f":white_check_mark: {text} ({seconds:,.0f} s)", self._finish_entry,
                                    state=OpState.DONE.value, result=text, lease_owner=None, lease_until=None,
                                    progress=self._progress_json(row, progress, final=True))
        if row.state == OpState.CANCELLING.value:
            where = ", ".join(f"partition {p} at offset {o}" for p, o in sorted(progress.positions.items()))
            text = f"Cancelled after {progress.copied:,} of {plan.count:,}: the DLQ was copied up to {where or 'its start'} (each once)."
            return await self._move(row, (OpState.CANCELLING.value,), Actor("changeops", "scheduler"), "cancelled", {"copied": progress.copied},
                                    f":octagonal_sign: {text}", self._finish_entry, state=OpState.CANCELLED.value, result=text,
                                    lease_owner=None, lease_until=None, progress=self._progress_json(row, progress))
        # stopped without a cancel: this process is stopping; another bot resumes it at once
        return await self._move(row, (row.state,), None, "", None, None, lease_until=self.clock(), progress=self._progress_json(row, progress))

    def _progress_json(self, row: Operation, progress: Progress, final: bool = False) -> dict[str, Any]:
        plan = ReplayPlan.from_json(ReplayRequest.from_json(row.request), row.plan)
        seconds = time.monotonic() - progress.started
        moved = progress.copied - progress.resumed_from
        return {"copied": progress.copied, "total": plan.count, "positions": {str(p): o for p, o in progress.positions.items()},
                "parked": progress.parked, "to": dict(progress.to), "rate": moved / seconds if seconds > 0 else 0.0,
                "text": progress_text(progress.copied, plan.count, seconds, moved) if not final else ""}

    async def _heartbeat(self, row: Operation, progress: Progress) -> Operation:
        """Renew the lease, save the progress (its message edits), notice a cancel from another replica."""
        fresh = await self.get(int(row.id or 0))
        if fresh.state == OpState.CANCELLING.value:
            progress.stop.set()
        if fresh.lease_owner != self.owner:
            progress.stop.set()  # another bot took over (this one was too slow to renew): let it
            return fresh
        try:
            return await self._move(fresh, (OpState.RUNNING.value, OpState.CANCELLING.value), None, "", None, None,
                                    lease_until=self.clock() + self.lease, progress=self._progress_json(fresh, progress))
        except OpsError:  # changed under us (a cancel): read it again next time
            return await self.get(int(row.id or 0))

    async def _note(self, operation: int, text: str) -> None:
        row = await self.get(operation)
        if not row.channel:
            return
        async with self.db.session() as session:
            self.outbox.add(session, OPS_NOTE, key_of(operation), {"operation": operation, "text": text})
            await session.commit()
        self.outbox.wake()

    def start(self, operation: int, resumed: bool = False, flink: bool = False) -> None:
        """Run a replay (``stop_runs`` ends it at a transaction boundary), or a Flink backfill's steps, in the background of
        this process."""
        work = self.run_flink(operation, resumed) if flink else self.run(operation, resumed)
        task = asyncio.create_task(work, name=f"operation-{operation}")
        self._tasks.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[Operation]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a replay's run failed", exc_info=task.exception())

    async def resume_orphans(self) -> int:
        """Take over running replays whose owner went quiet; how many this bot resumed."""
        resumed = 0
        for row in await self.orphans():
            if row.id not in self.running and await self.claim(row) is not None:
                self.start(int(row.id or 0), resumed=True, flink=bool(row.plan.get("flink")))
                resumed += 1
        return resumed

    async def stop_runs(self, timeout: float) -> None:
        """Stop this process's replays at their next transaction boundary and hand their leases back (another bot resumes them)."""
        for progress in self.running.values():
            progress.stop.set()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    async def save_message(self, operation: int, channel: str, ts: str, replacing: str | None = None) -> bool:
        """Remember where the operation's message was posted: the first time, or in place of ``replacing`` (deleted in
        Slack); False when another post got there first."""
        async with self.db.session() as session:
            moved = await session.exec(update(Operation).where(col(Operation.id) == operation, same(col(Operation.message_ts), replacing))
                                       .values(message_channel=channel, message_ts=ts))
            await session.commit()
        return bool(getattr(moved, "rowcount", 0))

    async def orphans(self) -> list[Operation]:
        """Running replays and Flink backfills whose owner went quiet (their lease ran out, or it is a process of this machine
        that ended), oldest first."""
        now = self.clock()
        async with self.db.session() as session:
            rows = (await session.exec(select(Operation).where(
                col(Operation.state).in_([OpState.RUNNING.value, OpState.CANCELLING.value])).order_by(col(Operation.id)))).all()
        return [r for r in rows if r.lease_owner != self.owner and (r.lease_until is None or aware(r.lease_until) < now
                                                                     or leases.holder(r.lease_owner) is leases.Holder.DEAD)]

    # --- following a backfill -------------------------------------------------------------------

    async def follow(self) -> int:
        """Measure the lag of every applied backfill being followed; say when each has caught up. How many were measured."""
        async with self.db.session() as session:
            rows = (await session.exec(select(Operation).where(col(Operation.kind) == OpKind.BACKFILL.value,
                                                                col(Operation.state) == OpState.APPLIED.value))).all()
        measured = 0
        for row in rows:
            if not row.progress.get("following"):
                continue
            request = BackfillRequest.from_json(row.request)
            partitions = [(m["topic"], m["partition"]) for m in row.plan["moves"]]
            try:
                lag, members = await self._ask(_lag_of(request, partitions))
            except OpsError as err:
                log.warning("cannot follow backfill #%s: %s", row.id, err)
                if not row.progress.get("unanswered_since"):  # the message says from when its lag is old, once
                    with contextlib.suppress(OpsError):  # undone meanwhile
                        await self._move(row, (OpState.APPLIED.value,), None, "", progress={
                            **row.progress, "unanswered_since": self.clock().isoformat(), "unanswered": str(err)[:200]})
                continue
            measured += 1
            applied = datetime.fromisoformat(row.progress["applied_at"])
            caught_up, expired = lag <= CAUGHT_UP, self.clock() - applied > FOLLOW_FOR
            # a reset holds for a client that reads from the group's offsets (a member); one that keeps its own, as a Flink
            # source does, writes its old position back without reading: with no member ever seen, a lag of 0 proves nothing
            seen = bool(row.progress.get("members_seen") or members or "flink" in row.plan)
            if (lag == row.progress.get("lag") and seen == bool(row.progress.get("members_seen")) and not (caught_up or expired)
                    and not row.progress.get("unanswered_since")):
                continue
            topics = _plain(", ".join(sorted({t for t, _ in partitions})))
            note = (f":checkered_flag: {request.group} has caught up on {topics} (lag {lag:,})." if caught_up and seen else
                    f":grey_question: {request.group}'s committed offsets on {topics} are at the end again (lag {lag:,}), but no client was in the "
                    f"group whenever I looked, so nothing shows that it read them again: {UNSEEN_READER}" if caught_up else
                    f":hourglass: Stopped following after {FOLLOW_FOR.total_seconds() / 3600:g} h; the lag is still {lag:,}." if expired else None)
            try:
                await self._move(row, (OpState.APPLIED.value,), None, "", None, note, self._finish_entry if caught_up else None,
                                 progress={**{k: v for k, v in row.progress.items() if k not in ("unanswered_since", "unanswered")},
                                           "lag": lag, "lag_at": self.clock().isoformat(), "following": not (caught_up or expired),
                                           "members_seen": seen, **({"caught_up_at": self.clock().isoformat()} if caught_up else {})})
            except OpsError:
                continue  # undone meanwhile
        return measured


def refuse_targets(plan: ReplayPlan, pipeline: Pipeline) -> None:
    """OpsError listing what stops a redrive to the original topics: letters that name none, topics the cluster does not
    have, topics the pipeline does not read (nothing is planned or copied)."""
    def name(count: int) -> str:
        return f"{count:,} name{'s' if count == 1 else ''}"

    problems = []
    if plan.unrouted:
        problems.append(f"{name(plan.unrouted)} no original topic (no {', '.join(ORIGINAL_TOPIC + ((pipeline.dlq_header,) if pipeline.dlq_header else ()))} "
                        "header)")
    for topic in plan.missing:
        problems.append(f"{name(plan.targets[topic])} {topic}, which the cluster does not have")
    owned = set(pipeline.topics)
    for topic in sorted(set(plan.targets) - owned - set(plan.missing)):
        problems.append(f"{name(plan.targets[topic])} {topic}, which pipeline {pipeline.name} does not read "
                        f"({'it reads ' + ', '.join(pipeline.topics) if pipeline.topics else 'its catalog entry names no source topics'})")
    if problems:
        raise OpsError("nothing is planned or copied: of the dead letters to send back, " + "; ".join(problems[:10])
                       + (f"; and {len(problems) - 10} more topics" if len(problems) > 10 else "")
                       + ". Narrow the replay (--since, --until, --filter) or send them to one topic with --to TOPIC")


def outcome_text(progress: Progress, plan: ReplayPlan, request: ReplayRequest) -> str:
    """How a finished replay ended: what went where, what was parked and why."""
    sent = progress.copied - progress.parked
    if request.target is not None:
        text = f"Copied {sent:,} of {plan.count:,} to {request.target}"
    else:
        places = ", ".join(f"{topic} {count:,}" for topic, count in sorted(progress.to.items(), key=lambda item: -item[1]) if count)
        text = f"Sent {sent:,} of {plan.count:,} back to their original topics ({places or 'none'})"
    text += ", each exactly once, keeping keys, headers and timestamps."
    if progress.parked:
        why = "; ".join(f"{error} ×{count:,}" for error, count in list(plan.parked_errors.items())[:3])
        text += (f" Parked {progress.parked:,} in {plan.route.parked}: they were dead-lettered more than {plan.route.max_replays} times"
                 + (f" (last error: {why})" if why else "") + ".")
    return text


def _committed_of(group: str, dlq: str, partitions: list[int]) -> Callable[[Cluster], dict[int, int]]:
    return lambda cluster: cluster.committed(group, dlq, partitions)


def _lag_of(request: BackfillRequest, partitions: list[tuple[str, int]]) -> Callable[[Cluster], tuple[int, int]]:
    """The group's lag on the partitions, and how many members it has now."""
    return lambda cluster: (cluster.lag(request.group, partitions), len(cluster.group(request.group)[1]))


def _nested(offsets: dict[tuple[str, int], int]) -> dict[str, dict[int, int]]:
    """{(topic, partition): offset} -> {topic: {partition: offset}}."""
    found: dict[str, dict[int, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        found.setdefault(topic, {})[partition] = offset
    return found


def _final(state: str) -> bool:
    return state == DRY_RUN or OpState(state).final


def _who(actor: Actor) -> str:
    return f"<@{actor.user}>" if actor.surface == "slack" else f"{_plain(actor.user)} (from a terminal)"


def _plain(text: object) -> str:
    """Text from outside (a user name, a broker's error) made inert for mrkdwn."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
