"""The transactional outbox: what the bot owes the outside world, written with the state change that causes
it, and a dispatcher that delivers it at least once, in order per key, whichever replica gets there first.

A service calls ``Outbox.add(session, ...)`` inside its own transaction; nothing is sent unless that
transaction commits. The dispatcher claims the head row of each key (the oldest pending row; later rows of
the key wait behind it) with a lease, a conditional update (``FOR UPDATE SKIP LOCKED`` on PostgreSQL), so
two replicas never work on the same row. A handler per ``kind`` delivers a row, or expands it into rows
that take its place in the order, or raises ``Retry`` (backed off, or after the server's ``Retry-After``)
or ``GiveUp`` (recorded in the audit log and logged once).
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, update
from sqlalchemy.orm import aliased
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.services.audit import record as audit
from bot.store.database import Database
from bot.store.models import OutboxMessage, aware, utcnow

log = logging.getLogger(__name__)
PENDING, SENT, FAILED = "pending", "sent", "failed"


class Retry(Exception):
    """Could not deliver now; try again (after ``after`` seconds when the other side said so)."""

    def __init__(self, reason: str, after: float | None = None) -> None:
        super().__init__(reason)
        self.after = after


class GiveUp(Exception):
    """Can never be delivered (the channel does not exist, the message is refused); the reason is kept."""


@dataclass(frozen=True)
class Item:
    """One row for a handler: its kind, key and payload."""

    id: int
    kind: str
    key: str
    payload: dict[str, Any]
    attempts: int
    batch: tuple[tuple[int, dict[str, Any]], ...] = ()  # a coalescing kind: this row and the rows of its kind queued behind it

    @property
    def payloads(self) -> list[dict[str, Any]]:
        """Every payload this item stands for, in order (just its own for kinds that do not coalesce)."""
        return [p for _, p in self.batch] if self.batch else [self.payload]


@dataclass(frozen=True)
class Expand:
    """What a handler returns to replace its row with rows to deliver in its place (same position)."""

    rows: Sequence[tuple[str, str, dict[str, Any]]] = field(default_factory=tuple)


Handler = Callable[[Item], Awaitable[Expand | None]]


class Outbox:
    """Writes rows in the caller's transaction, and wakes the dispatcher once they are committed."""

    def __init__(self) -> None:
        self._wake: asyncio.Event | None = None

    def add(self, session: AsyncSession, kind: str, key: str, payload: Mapping[str, Any], *, priority: int = 0) -> None:
        """Owe ``payload`` (delivered by the handler of ``kind``) after the rows already owed under ``key``; among keys
        ready to go, higher ``priority`` first."""
        session.add(OutboxMessage(kind=kind, key=key, payload=dict(payload), priority=priority))

    async def hurry(self, session: AsyncSession, key: str, waited_for: str) -> None:
        """Make the rows under ``key`` that were put off with exactly the reason ``waited_for`` due again now, in the
        caller's transaction: what they waited for has happened. Rows put off for another reason (Slack's Retry-After, an
        outage) keep their time; rows being delivered are left alone."""
        await session.exec(update(OutboxMessage).where(col(OutboxMessage.key) == key, col(OutboxMessage.state) == PENDING,
                                                       col(OutboxMessage.lease_until).is_(None), col(OutboxMessage.last_error) == waited_for)
                           .values(next_attempt_at=OutboxMessage.created_at))

    def wake(self) -> None:
        """Tell the dispatcher of this process that new rows were committed."""
        if self._wake is not None:
            self._wake.set()

    def wakeup_event(self) -> asyncio.Event:
        """The event the dispatcher waits on (created in the running loop)."""
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake


class Dispatcher:
    """Claims due rows, runs their handlers, records the outcome; one per replica."""

    def __init__(self, db: Database, outbox: Outbox, handlers: Mapping[str, Handler], *, batch: int = 20,
                 lease: timedelta = timedelta(seconds=60), backoff: float = 1.0, max_backoff: float = 300.0,
                 give_up_after: timedelta = timedelta(hours=24), poll: float = 1.0,
                 clock: Callable[[], datetime] = utcnow, coalesce: frozenset[str] = frozenset()) -> None:
        self.db, self.outbox, self.handlers = db, outbox, dict(handlers)
        self.coalesce = coalesce  # kinds whose handler takes a row together with the rows of its kind queued right behind it
        # batch: how many rows one replica has in hand at once
        self.batch, self.lease, self.backoff, self.max_backoff = batch, lease, backoff, max_backoff
        self.give_up_after, self.poll, self.clock = give_up_after, poll, clock
        self.owner = secrets.token_hex(8)
        self.results: Counter[tuple[str, str]] = Counter()  # (kind, sent | retried | gave_up): deliveries by result
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._progress = asyncio.Condition()

    # --- running --------------------------------------------------------------------------------

    def start(self) -> None:
        """Deliver in the background until ``stop``."""
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name="outbox-dispatcher")

    async def stop(self, timeout: float) -> None:
        """Deliver what is due now, the rows in hand included (at most ``timeout`` seconds), then stop."""
        self._stopping = True
        self.outbox.wake()
        if self._task is None:
            return
        done, _ = await asyncio.wait({self._task}, timeout=timeout)
        if not done:
            log.warning("outbox: the rows in hand were not done within %.0f s; they go out after their lease", timeout)
            self._task.cancel()
        self._task = None

    async def _run(self) -> None:
        """Claim a batch and wait for it; past a poll, claim for the places its done rows left. So rows are claimed a batch at
        a time while Slack answers, and a slow call (one Slack sits on until the client's timeout) holds up only its own
        key's line, never the rows of other keys for longer than a poll."""
        wake = self.outbox.wakeup_event()
        running: set[asyncio.Task[None]] = set()
        try:
            while True:
                wake.clear()
                claimed = await self._fill(running)
                if self._stopping and not claimed and not running:
                    return
                if running:
                    await asyncio.wait(set(running), timeout=self.poll)
                    continue
                if claimed:
                    continue
                try:
                    await asyncio.wait_for(wake.wait(), timeout=self.poll)
                except TimeoutError:
                    pass
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    async def _fill(self, running: set[asyncio.Task[None]]) -> int:
        """Claim due rows for the free places in hand and start their handlers; how many were claimed."""
        room = self.batch - len(running)
        if room <= 0:
            return 0
        try:
            items = await self._claim(room)
        except Exception:  # the database is away: try again at the next poll
            log.exception("outbox: could not claim rows")
            return 0
        for item in items:
            task = asyncio.create_task(self._deliver(item), name=f"outbox-{item.kind}-{item.id}")
            running.add(task)
            task.add_done_callback(running.discard)
        return len(items)

    async def _deliver(self, item: Item) -> None:
        try:
            await self._handle(item)
        except Exception:  # the outcome could not be recorded (the database is away): the row goes again after its lease
            log.exception("outbox: could not record the outcome of %s row %d", item.kind, item.id)
        async with self._progress:
            self._progress.notify_all()

    async def idle(self) -> None:
        """Wait until no row is pending (for tests and orderly shutdowns)."""
        while await self.pending():
            self.outbox.wake()
            async with self._progress:
                try:
                    await asyncio.wait_for(self._progress.wait(), timeout=self.poll)
                except TimeoutError:
                    pass

    async def pending(self) -> int:
        """How many rows are still owed."""
        async with self.db.session() as session:
            return int((await session.exec(select(func.count()).select_from(OutboxMessage)
                                           .where(col(OutboxMessage.state) == PENDING))).one())

    # --- claiming -------------------------------------------------------------------------------

    async def _claim(self, room: int) -> list[Item]:
        """Lease at most ``room`` due rows, the head of each key's line (and, for a coalescing kind, the rows behind it)."""
        now = self.clock()
        earlier = aliased(OutboxMessage)
        mine, theirs = _place(OutboxMessage), _place(earlier)
        blocked = select(earlier.id).where(
            col(earlier.key) == col(OutboxMessage.key), col(earlier.state) == PENDING,
            or_(theirs < mine, and_(theirs == mine, col(earlier.part) < col(OutboxMessage.part)),
                and_(theirs == mine, col(earlier.part) == col(OutboxMessage.part), col(earlier.id) < col(OutboxMessage.id)))).exists()
        query = (select(OutboxMessage)
                 .where(col(OutboxMessage.state) == PENDING, col(OutboxMessage.next_attempt_at) <= now,
                        or_(col(OutboxMessage.lease_until).is_(None), col(OutboxMessage.lease_until) < now), ~blocked)
                 .order_by(col(OutboxMessage.priority).desc(), mine, col(OutboxMessage.part), col(OutboxMessage.id)).limit(room))
        if self.db.engine.dialect.name == "postgresql":
            query = query.with_for_update(of=OutboxMessage, skip_locked=True)
        items: list[Item] = []
        async with self.db.session() as session:
            for row in (await session.exec(query)).all():
                assert row.id is not None
                if row.key in {i.key for i in items}:
                    continue
                claimed = await session.exec(
                    update(OutboxMessage).where(col(OutboxMessage.id) == row.id, col(OutboxMessage.state) == PENDING,
                                                or_(col(OutboxMessage.lease_until).is_(None), col(OutboxMessage.lease_until) < now))
                    .values(lease_until=now + self.lease, lease_owner=self.owner, attempts=OutboxMessage.attempts + 1)
                    .execution_options(synchronize_session=False))  # not evaluated against the rows just read: SQLite gives
                # their lease back without its zone, which Python cannot compare with now's (an expired lease then stopped every claim)
                if getattr(claimed, "rowcount", 0):
                    batch = await self._followers(session, row, now) if row.kind in self.coalesce else ()
                    items.append(Item(row.id, row.kind, row.key, dict(row.payload), row.attempts + 1, batch))
            await session.commit()
        return items

    async def _followers(self, session: AsyncSession, head: OutboxMessage, now: datetime) -> tuple[tuple[int, dict[str, Any]], ...]:
        """The head row and the pending rows of its kind right behind it in its key's line, leased with it."""
        query = (select(OutboxMessage).where(col(OutboxMessage.key) == head.key, col(OutboxMessage.state) == PENDING,
                                             col(OutboxMessage.id) != head.id)
                 .order_by(_place(OutboxMessage), col(OutboxMessage.part), col(OutboxMessage.id)).limit(500))
        batch: list[tuple[int, dict[str, Any]]] = [(int(head.id or 0), dict(head.payload))]
        for row in (await session.exec(query)).all():
            if row.kind != head.kind or (row.lease_until is not None and aware(row.lease_until) >= now):
                break
            await session.exec(update(OutboxMessage).where(col(OutboxMessage.id) == row.id, col(OutboxMessage.state) == PENDING)
                               .values(lease_until=now + self.lease, lease_owner=self.owner))
            batch.append((int(row.id or 0), dict(row.payload)))
        return tuple(batch)

    # --- handling -------------------------------------------------------------------------------

    async def _handle(self, item: Item) -> None:
        handler = self.handlers.get(item.kind)
        try:
            if handler is None:
                raise GiveUp(f"no handler for {item.kind!r} in this version of the bot")
            expansion = await handler(item)
        except Retry as err:
            await self._retry(item, str(err), err.after)
        except GiveUp as err:
            await self._give_up(item, str(err))
        except Exception as err:  # a bug in a handler: keep the row, back off, say so once per attempt
            log.exception("outbox: handler for %s row %d failed", item.kind, item.id)
            await self._retry(item, f"{type(err).__name__}: {err}", None)
        else:
            await self._done(item, expansion)

    async def _mine(self, session: AsyncSession, item: Item, *, followers: bool = True, **values: Any) -> bool:
        ids = [i for i, _ in item.batch] if item.batch and followers else [item.id]
        moved = await session.exec(update(OutboxMessage).where(col(OutboxMessage.id).in_(ids), col(OutboxMessage.state) == PENDING,
                                                               col(OutboxMessage.lease_owner) == self.owner)
                                   .values(lease_until=None, **values))
        return bool(getattr(moved, "rowcount", 0))

    async def _release_followers(self, session: AsyncSession, item: Item) -> None:
        """The rows coalesced behind a head that was not delivered wait again (with the head, next time)."""
        others = [i for i, _ in item.batch if i != item.id]
        if others:
            await session.exec(update(OutboxMessage).where(col(OutboxMessage.id).in_(others), col(OutboxMessage.state) == PENDING,
                                                           col(OutboxMessage.lease_owner) == self.owner).values(lease_until=None))

    async def _done(self, item: Item, expansion: Expand | None) -> None:
        async with self.db.session() as session:
            row = await session.get(OutboxMessage, item.id)
            if row is None or not await self._mine(session, item, state=SENT, sent_at=self.clock()):
                await session.rollback()
                log.warning("outbox: row %d was taken over by another replica before it was marked sent", item.id)
                return
            for part, (kind, key, payload) in enumerate(expansion.rows if expansion else (), start=1):
                session.add(OutboxMessage(kind=kind, key=key, payload=dict(payload), position=row.position or row.id, part=part,
                                          priority=row.priority))
            await session.commit()
        self.results[(item.kind, "sent")] += 1
        if expansion and expansion.rows:
            self.outbox.wake()

    async def _retry(self, item: Item, reason: str, after: float | None) -> None:
        now = self.clock()
        async with self.db.session() as session:
            row = await session.get(OutboxMessage, item.id)
            if row is not None and now - aware(row.created_at) > self.give_up_after:
                await session.rollback()
                await self._give_up(item, f"still failing after {self.give_up_after}: {reason}")
                return
            delay = after if after is not None else min(self.max_backoff, self.backoff * 2 ** (item.attempts - 1)) * random.uniform(0.8, 1.2)
            await self._mine(session, item, followers=False, next_attempt_at=now + timedelta(seconds=delay), last_error=reason[:2000])
            await self._release_followers(session, item)
            await session.commit()
        self.results[(item.kind, "retried")] += 1
        log.info("outbox: %s row %d (%s) not delivered (%s); next try in %.1f s", item.kind, item.id, item.key, reason, delay)

    async def _give_up(self, item: Item, reason: str) -> None:
        async with self.db.session() as session:
            if await self._mine(session, item, state=FAILED, last_error=reason[:2000]):
                audit(session, "changeops", "outbox", "undeliverable", "outbox", str(item.id),
                      {"kind": item.kind, "key": item.key, "reason": reason[:500]})
            await session.commit()
        self.results[(item.kind, "gave_up")] += 1
        log.error("outbox: gave up on %s row %d (%s): %s", item.kind, item.id, item.key, reason)



async def failed_in(db: Database, key: str) -> str | None:
    """Why the newest row of ``key`` that was given up on could not be delivered (None when none was)."""
    async with db.session() as session:
        row = (await session.exec(select(OutboxMessage).where(col(OutboxMessage.key) == key, col(OutboxMessage.state) == FAILED)
                                  .order_by(col(OutboxMessage.id).desc()).limit(1))).first()
    return (row.last_error or "given up") if row is not None else None


def _place(table: Any) -> Any:
    """A row's place in its key's line: its parent's position for an expanded row, else its own id."""
    return func.coalesce(table.position, table.id)
