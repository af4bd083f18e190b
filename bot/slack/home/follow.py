"""The Home tab follows what it lists: opening it owes a publication, and a tab opened in the last day is owed one again
whenever a proposal, the calendar or the lineage changes. Each user's publications run one at a time in their own outbox lane and render things as
they are when they run, so a tab never shows an answer already given, nor goes back to an older state."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import delete, event, inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from bot.services.outbox import PENDING, Outbox
from bot.store.database import Database
from bot.store.models import HomeViewer, OutboxMessage

HOME = "home.publish"  # outbox kind: publish a user's Home tab as things are when it runs
BACKGROUND = -1  # the outbox's priority of a tab published again for a change (opening it is answered first)
FOLLOWED = timedelta(hours=24)  # a tab opened this recently is kept current; an older one is published when opened again


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

    async def forget(self, user: str) -> None:
        """``user`` is no longer followed (Slack says they are not in the workspace)."""
        async with self.db.session() as session:
            await session.exec(delete(HomeViewer).where(col(HomeViewer.user) == user))
            await session.commit()

    async def refresh(self) -> None:
        """Owe a publication to each tab opened in the last day, in a transaction of its own."""
        async with self.db.session() as session:
            await self.owe(session)
            await session.commit()

    async def owe(self, session: AsyncSession) -> None:
        """Owe a publication to each tab opened in the last day, in the caller's transaction (what changed is committed with
        them), but to those owed one that has not begun (it will render what is there when it runs). They go once it commits,
        after what else is owed: a tab never holds up a card or a DM."""
        users = await self._unowed(session)
        for user in users:
            self.outbox.add(session, HOME, home_key(user), {"user": user}, priority=BACKGROUND)
        if users:
            event.listen(session.sync_session, "after_commit", lambda _: self.outbox.wake(), once=True)

    async def _unowed(self, session: AsyncSession) -> list[str]:
        viewers = (await session.exec(select(HomeViewer.user).where(col(HomeViewer.opened_at) >= self.clock() - FOLLOWED))).all()
        if not viewers:
            return []
        owed = set((await session.exec(select(OutboxMessage.key).where(
            col(OutboxMessage.kind) == HOME, col(OutboxMessage.state) == PENDING, col(OutboxMessage.lease_until).is_(None),
            col(OutboxMessage.key).in_([home_key(u) for u in viewers])))).all())
        return [user for user in sorted(viewers) if home_key(user) not in owed]
