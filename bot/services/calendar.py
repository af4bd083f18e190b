"""The change calendar in the database: entries (booked by proposals or by people), freezes (from the catalog),
and the conflicts between them, recomputed from the current lineage on every read."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.domain.calendar import CalendarError, ChangeHours, Conflict, Entry, Freeze, Kind, Scope, Status, Window, booked, conflicts
from bot.domain.lineage.graph import LineageError, LineageGraph
from bot.domain.lineage.model import DatasetId
from bot.services.audit import record as audit
from bot.services.lineage import LineageService, freeze_row
from bot.services.watchers import Watchers
from bot.store.database import Database
from bot.store.models import CalendarEntry, CalendarFeed, FreezeRow, Subject, aware, utcnow

MAX_TITLE = 200


class CalendarService:
    """Entries, freezes and conflicts."""

    def __init__(self, db: Database, lineage: LineageService, clock: Callable[[], datetime] = utcnow) -> None:
        self.db, self.lineage, self.clock = db, lineage, clock
        self.watchers = Watchers()  # told of each booking, move, cancellation and freeze made here

    # --- writing --------------------------------------------------------------------------------

    def book(self, session: AsyncSession, *, kind: Kind, title: str, window: Window, owner: str, booked_by: str, scope: Scope,
             status: Status, proposal: int | None = None) -> CalendarEntry:
        """Add an entry in the caller's transaction (a proposal books its window with its own state change)."""
        entry = CalendarEntry(kind=kind.value, title=title[:MAX_TITLE], start=window.start, end=window.end, status=status.value,
                              owner=owner, booked_by=booked_by, scope=scope.as_json(), proposal_id=proposal,
                              created_at=self.clock(), updated_at=self.clock())
        session.add(entry)
        return entry

    async def follow_proposal(self, session: AsyncSession, proposal: int, status: Status) -> None:
        """Move a proposal's entry with the proposal (in its transaction); a cancelled entry stays cancelled."""
        await session.exec(update(CalendarEntry).where(col(CalendarEntry.proposal_id) == proposal,
                                                       col(CalendarEntry.status) != Status.CANCELLED.value, col(CalendarEntry.status) != status.value)
                           .values(status=status.value, sequence=CalendarEntry.sequence + 1, updated_at=self.clock()))

    async def change(self, entry_id: int, user: str, *, window: Window | None = None, surface: str = "slack") -> CalendarEntry:
        """Move an entry (``window``) or cancel it (no window), conditionally on it still being active; audited.
        Whether ``user`` may is the caller's to check (the owner team or an oncall member)."""
        if window is not None:
            booked(window)
        async with self.db.session() as session:
            entry = await session.get(CalendarEntry, entry_id)
            if entry is None:
                raise CalendarError(f"there is no calendar entry #{entry_id}")
            if entry.proposal_id is not None:
                raise CalendarError(f"#{entry_id} follows proposal #{entry.proposal_id}: withdraw or move the proposal instead")
            values: dict[str, Any] = {"start": window.start, "end": window.end} if window else {"status": Status.CANCELLED.value}
            moved = await session.exec(update(CalendarEntry).where(col(CalendarEntry.id) == entry_id, col(CalendarEntry.status) != Status.CANCELLED.value)
                                       .values(**values, sequence=CalendarEntry.sequence + 1, updated_at=self.clock()))
            if not getattr(moved, "rowcount", 0):
                raise CalendarError(f"#{entry_id} is already cancelled; nothing changed")
            audit(session, user, surface, "moved" if window else "cancelled", "calendar", str(entry_id),
                  {"start": window.start.isoformat(), "end": window.end.isoformat()} if window else {})
            await self.watchers.changed(session)
            await session.commit()
            await session.refresh(entry)
        return entry

    async def listed(self, entry_id: int) -> dict[str, Any]:
        """One entry as the listing shows it (with its conflicts); CalendarError when there is none."""
        row = await self.entry(entry_id)
        if row is None:
            raise CalendarError(f"there is no calendar entry #{entry_id}")
        start, end = aware(row.start), aware(row.end)
        return next(e for e in await self.listing(start, max(end, start + timedelta(microseconds=1))) if e["id"] == entry_id)

    async def proposal_conflicts(self, proposal: int) -> list[str]:
        """What a proposal's booked window clashes with (other entries, freezes), for its card."""
        async with self.db.session() as session:
            rows = list((await session.exec(select(CalendarEntry).where(CalendarEntry.proposal_id == proposal))).all())
        found = await self.conflicts_of([r for r in rows if r.status != Status.CANCELLED.value])
        return [c.reason for c in found]

    async def subjects(self) -> list[str]:
        """Every subject's name (what a booking may name in its scope)."""
        async with self.db.session() as session:
            return list((await session.exec(select(Subject.name))).all())

    async def entry(self, entry_id: int) -> CalendarEntry | None:
        """One entry."""
        async with self.db.session() as session:
            return await session.get(CalendarEntry, entry_id)

    async def add_freeze(self, freeze: Freeze, user: str) -> None:
        """Declare a freeze from Slack (kept until lifted; a catalog load leaves it alone); CalendarError if the name is taken."""
        async with self.db.session() as session:
            if (await session.exec(select(FreezeRow).where(FreezeRow.name == freeze.name))).first() is not None:
                raise CalendarError(f"a freeze called {freeze.name!r} exists already")
            session.add(freeze_row(freeze, "slack", user))
            audit(session, user, "slack", "froze", "freeze", freeze.name, {"reason": freeze.reason})
            await self.watchers.changed(session)
            await session.commit()

    async def lift_freeze(self, name: str, user: str) -> str:
        """Remove a freeze (catalog ones come back with the next catalog load: say so); its source."""
        async with self.db.session() as session:
            row = (await session.exec(select(FreezeRow).where(FreezeRow.name == name))).first()
            if row is None:
                raise CalendarError(f"there is no freeze called {name!r}")
            await session.delete(row)
            audit(session, user, "slack", "lifted", "freeze", name, {"source": row.source})
            await self.watchers.changed(session)
            await session.commit()
        return row.source

    async def move_proposal(self, session: AsyncSession, proposal: int, window: Window) -> None:
        """Move a proposal's entry to a new window (in its transaction)."""
        await session.exec(update(CalendarEntry).where(col(CalendarEntry.proposal_id) == proposal)
                           .values(start=window.start, end=window.end, sequence=CalendarEntry.sequence + 1, updated_at=self.clock()))

    async def add(self, *, kind: str, title: str, start: datetime, end: datetime, owner: str, booked_by: str, scope: Scope,
                  surface: str) -> int:
        """Book a window for anything but a proposal; CalendarError (nothing stored) for bad input."""
        try:
            wanted = Kind(kind)
        except ValueError:
            raise CalendarError(f"kind: {kind!r} is not one of {', '.join(k.value for k in Kind)}") from None
        if wanted is Kind.SCHEMA_CHANGE:
            raise CalendarError("kind: schema changes are booked by their proposals (/schema propose with a planned window)")
        if wanted is Kind.EMERGENCY:
            raise CalendarError("kind: emergency entries are booked when two oncall people ship a held change during a freeze")
        if wanted is Kind.TRANSITION:
            raise CalendarError("kind: a transition's deadline is booked by the transition (/schema propose SUBJECT --transition)")
        if not title.strip() or len(title) > MAX_TITLE:
            raise CalendarError(f"title: required, at most {MAX_TITLE} characters")
        window = booked(Window(start, end))
        teams = await self.lineage.teams()
        if owner not in teams:
            raise CalendarError(f"owner: unknown team {owner!r} (teams: {', '.join(sorted(teams)) or 'none'})")
        await self._check_scope(scope)
        async with self.db.session() as session:
            entry = self.book(session, kind=wanted, title=title.strip(), window=window, owner=owner, booked_by=booked_by, scope=scope,
                              status=Status.CONFIRMED)
            await session.flush()
            assert entry.id is not None
            audit(session, booked_by, surface, "booked", "calendar", str(entry.id),
                  {"kind": wanted.value, "start": window.start.isoformat(), "end": window.end.isoformat(), "scope": scope.as_json()})
            await self.watchers.changed(session)
            await session.commit()
        return entry.id

    async def override_for(self, subject: str, at: datetime) -> CalendarEntry | None:
        """The emergency entry that lets ``subject`` ship at ``at`` during a freeze (two oncall people confirmed it), if one stands."""
        async with self.db.session() as session:
            rows = (await session.exec(select(CalendarEntry).where(col(CalendarEntry.kind) == Kind.EMERGENCY.value,
                                                                   col(CalendarEntry.status) == Status.CONFIRMED.value,
                                                                   col(CalendarEntry.start) <= at, col(CalendarEntry.end) > at))).all()
        return next((r for r in rows if subject in Scope.from_json(r.scope).subjects), None)

    async def freeze_over(self, window: Window, owner: str, scope: Scope) -> tuple[Freeze, Window] | None:
        """The first freeze occurrence that covers an entry with this window, owner and scope (None when free)."""
        return _covering(await self.freezes(), window, owner, scope)

    async def next_free(self, window: Window, owner: str, scope: Scope, after: datetime) -> Window | None:
        """The first window as long as ``window``, starting at or after ``after``, that no freeze covers (within a year)."""
        freezes, length = await self.freezes(), window.end - window.start
        candidate = Window(max(after, window.start), max(after, window.start) + length)
        for _ in range(500):
            frozen = _covering(freezes, candidate, owner, scope)
            if frozen is None:
                return candidate
            candidate = Window(frozen[1].end, frozen[1].end + length)
            if candidate.start > after + timedelta(days=365):
                break
        return None

    async def mint_feed(self, user: str) -> str:
        """A new secret feed token for ``user`` (their earlier tokens stop working); only its hash is stored."""
        token = secrets.token_urlsafe(24)
        async with self.db.session() as session:
            for old in (await session.exec(select(CalendarFeed).where(CalendarFeed.user == user))).all():
                await session.delete(old)
            session.add(CalendarFeed(token_hash=_hash(token), user=user, created_at=self.clock()))
            audit(session, user, "slack", "minted a calendar feed", "calendar", "feed", {})
            await session.commit()
        return token

    async def feed_owner(self, token: str) -> str | None:
        """Whose feed token this is (None for an unknown or replaced one)."""
        async with self.db.session() as session:
            row = (await session.exec(select(CalendarFeed).where(CalendarFeed.token_hash == _hash(token)))).first()
        return row.user if row else None

    async def _check_scope(self, scope: Scope) -> None:
        graph = await self.lineage.graph()
        async with self.db.session() as session:
            subjects = set((await session.exec(select(Subject.name))).all())
        unknown = [f"subject {s}" for s in sorted(scope.subjects - subjects)]
        unknown += [f"dataset {d}" for d in sorted(scope.datasets) if not graph.named(d)]
        unknown += [f"job {j}" for j in sorted(scope.jobs) if not any(x.name == j for x in graph.jobs)]
        if unknown:
            raise CalendarError(f"scope: unknown {', '.join(unknown)}")

    # --- reading --------------------------------------------------------------------------------

    async def freezes(self) -> list[Freeze]:
        """Every freeze window."""
        async with self.db.session() as session:
            rows = (await session.exec(select(FreezeRow).order_by(col(FreezeRow.name)))).all()
        return [Freeze(r.name, r.reason, Scope.from_json(r.scope), r.cron, timedelta(minutes=r.minutes) if r.minutes else None, r.timezone,
                       aware(r.start) if r.start else None, aware(r.end) if r.end else None, Scope.from_json(r.excepted)) for r in rows]

    async def listing(self, start: datetime, end: datetime, *, sequences: bool = False) -> list[dict[str, Any]]:
        """The entries overlapping ``[start, end)``, oldest first, each with its conflicts (the CLI's and the API's JSON;
        with ``sequences``, also how many times each changed, for the iCalendar feed)."""
        async with self.db.session() as session:
            rows = list((await session.exec(select(CalendarEntry).where(col(CalendarEntry.end) >= start, col(CalendarEntry.start) <= end)
                                            .order_by(col(CalendarEntry.start), col(CalendarEntry.id)))).all())
        window = Window(start, end)
        rows = [r for r in rows if Window(aware(r.start), aware(r.end)).overlaps(window)]
        found = await self.conflicts_of(rows)
        listed = [{"id": r.id, "kind": r.kind, "title": r.title, "start": _iso(r.start), "end": _iso(r.end), "status": r.status,
                   "owner": r.owner, "scope": Scope.from_json(r.scope).as_json(),
                   "source": {"proposal": r.proposal_id} if r.proposal_id else {"operation": r.operation_id} if r.operation_id else None,
                   "conflicts": [c.as_json() for c in found if c.entry == r.id]} for r in rows]
        if sequences:
            for item, row in zip(listed, rows, strict=True):
                item["sequence"] = row.sequence
        return listed

    async def touching(self, window: Window, scope: Scope) -> list[tuple[CalendarEntry, str]]:
        """The booked entries (not cancelled) whose windows overlap ``window`` and whose scopes, or what they reach
        through lineage, touch ``scope``'s, each with why, oldest first: what an operation about to run would meet."""
        async with self.db.session() as session:
            rows = {r.id: r for r in (await session.exec(select(CalendarEntry).where(col(CalendarEntry.end) >= window.start,
                                                                                       col(CalendarEntry.start) <= window.end)
                                                        .order_by(col(CalendarEntry.start), col(CalendarEntry.id)))).all()}
        entries = [_entry(r) for r in rows.values() if Window(aware(r.start), aware(r.end)).overlaps(window)]
        if not entries:
            return []
        probe = Entry(0, Kind.MAINTENANCE, "", window, Status.CONFIRMED, "", scope)
        graph = await self.lineage.graph()
        reached = {0: reach(graph, scope), **{e.id: reach(graph, e.scope) for e in entries}}
        found = [c for c in conflicts([probe, *entries], [], reached) if c.entry == 0]
        return [(rows[int(c.with_)], c.reason.rsplit(" (#", 1)[0]) for c in found]

    async def conflicts_of(self, rows: list[CalendarEntry]) -> list[Conflict]:
        """The conflicts of these entries, with each other, with the entries they overlap, and with freezes."""
        if not rows:
            return []
        start, end = min(aware(r.start) for r in rows), max(aware(r.end) for r in rows)
        async with self.db.session() as session:
            neighbours = (await session.exec(select(CalendarEntry).where(col(CalendarEntry.end) >= start, col(CalendarEntry.start) <= end))).all()
        entries = {r.id: _entry(r) for r in [*rows, *neighbours]}
        graph = await self.lineage.graph()
        downstream = {number: reach(graph, entry.scope) for number, entry in entries.items() if number is not None}
        wanted = {r.id for r in rows}
        hours = {name: ChangeHours.from_json(team.change_hours) for name, team in (await self.lineage.teams()).items() if team.change_hours}
        return [c for c in conflicts(list(entries.values()), await self.freezes(), downstream, hours) if c.entry in wanted]


def _covering(freezes: list[Freeze], window: Window, owner: str, scope: Scope) -> tuple[Freeze, Window] | None:
    probe = Entry(0, Kind.SCHEMA_CHANGE, "", window, Status.TENTATIVE, owner, scope)
    end = max(window.end, window.start + timedelta(microseconds=1))
    for freeze in freezes:
        if freeze.applies_to(probe):
            found = freeze.occurrences(window.start, end, limit=1)
            if found:
                return freeze, found[0]
    return None


def _entry(row: CalendarEntry) -> Entry:
    assert row.id is not None
    return Entry(row.id, Kind(row.kind), row.title, Window(aware(row.start), aware(row.end)), Status(row.status), row.owner,
                 Scope.from_json(row.scope))


def reach(graph: LineageGraph, scope: Scope) -> frozenset[str]:
    """The datasets and jobs an entry's scope reaches through lineage: its own jobs and datasets (a job's outputs, a
    scoped dataset, a subject's own dataset) and everything downstream of them."""
    starts: list[DatasetId] = []
    for subject in scope.subjects:
        try:
            starts.append(graph.find_dataset(subject))
        except LineageError:
            continue
    starts += [d for name in sorted(scope.datasets) for d in graph.named(name)]
    reached: set[str] = set()
    for job in graph.jobs.values():
        if job.id.name in scope.jobs:
            reached.add(f"job {job.id.name}")
            starts += job.outputs
    for dataset in starts:
        impact = graph.impact(dataset, None)
        reached |= {f"dataset {dataset.name}"} | {f"dataset {d.name}" for d in impact.datasets} | {f"job {j.id.name}" for j in impact.jobs}
    return frozenset(reached)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _iso(moment: datetime) -> str:
    return aware(moment).isoformat().replace("+00:00", "Z")
