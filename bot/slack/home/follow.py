"""The Home tab follows what it lists: opening it owes a publication, and a tab opened in the last day is owed one again
whenever a proposal changes. Each user's publications run one at a time in their own outbox lane and render things as
they are when they run, so a tab never shows an answer already given, nor goes back to an older state."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import event, inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.services.outbox import PENDING, Outbox
from bot.store.database import Database
from bot.store.models import HomeViewer, OutboxMessage

HOME = "home.publish"  # outbox kind: publish a user's Home tab as things are when it runs
FOLLOWED = timedelta(hours=24)  # a tab opened this recently is kept current; an older one is published when opened again
Row = tuple[str, str, dict[str, Any]]


def home_key(user: str) -> str:
    """The lane of one user's Home tab publications."""
    return f"home:{user}"


class HomeFollow:
    """Remembers who opened the Home tab and owes their tabs a publication when what they list changes."""

    def __init__(self, db: Database, outbox: Outbox, clock: Callable[[], datetime]) -> None:
        self.db, self.outbox, self.clock = db, outbox, clock
        table = inspect(HomeViewer).local_table
        dialect = postgresql if db.engine.dialect.name == "postgresql" else sqlite
        insert = dialect.insert(table)
        self._opened = insert.on_conflict_do_update(index_elements=["user"], set_={"opened_at": insert.excluded.opened_at},
                                                    where=table.c.opened_at < insert.excluded.opened_at)

    async def opened(self, user: str) -> None:
        """``user`` has the tab in front of them now: remembered (a later time only), and its publication owed, together."""
        async with self.db.session() as session:
            await session.exec(self._opened.values(user=user, opened_at=self.clock()))
            self.outbox.add(session, HOME, home_key(user), {"user": user})
            await session.commit()
        self.outbox.wake()

    async def refreshes(self) -> list[Row]:
        """Rows publishing again each tab opened in the last day, but for those owed a publication that has not begun
        (it will render what is there when it runs)."""
        async with self.db.session() as session:
            return await self._owed(session)

    async def owe(self, session: AsyncSession) -> None:
        """Owe those publications in the caller's transaction (what changed is committed with them); they go once it commits."""
        rows = await self._owed(session)
        for kind, key, payload in rows:
            self.outbox.add(session, kind, key, payload)
        if rows:
            event.listen(session.sync_session, "after_commit", lambda _: self.outbox.wake(), once=True)

    async def _owed(self, session: AsyncSession) -> list[Row]:
        viewers = (await session.exec(select(HomeViewer.user).where(col(HomeViewer.opened_at) >= self.clock() - FOLLOWED))).all()
        if not viewers:
            return []
        owed = set((await session.exec(select(OutboxMessage.key).where(
            col(OutboxMessage.kind) == HOME, col(OutboxMessage.state) == PENDING, col(OutboxMessage.lease_until).is_(None),
            col(OutboxMessage.key).in_([home_key(u) for u in viewers])))).all())
        return [(HOME, home_key(user), {"user": user}) for user in sorted(viewers) if home_key(user) not in owed]
