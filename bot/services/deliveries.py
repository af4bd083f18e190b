"""Slack deliveries already handled (and request signatures already used), so that a retried or replayed
request never acts twice.

Claims that arrive together share one transaction (one ``INSERT ... ON CONFLICT DO NOTHING RETURNING`` for
the whole batch): under load, requests do not queue one commit each for the database's write lock, which
keeps the claim cheap enough to sit on the path to Slack's acknowledgement."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from sqlalchemy import delete, inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col

from bot.store.database import Database
from bot.store.models import SlackDelivery, utcnow


class Deliveries:
    """Claims a key once, across restarts and replicas (the database decides)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._waiting: dict[str, list[asyncio.Future[bool]]] = {}
        self._writer: asyncio.Task[None] | None = None
        table = inspect(SlackDelivery).local_table
        dialect = postgresql if db.engine.dialect.name == "postgresql" else sqlite
        self._claiming = dialect.insert(table).on_conflict_do_nothing(index_elements=["key"]).returning(table.c.key)

    async def claim(self, key: str) -> bool:
        """True the first time ``key`` is seen, False for every repeat."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, []).append(future)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write())
        return await future

    async def _write(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, {}
            try:
                fresh = await self._insert(list(batch))
            except Exception as err:  # the database is away: every claim of the batch fails with it
                for futures in batch.values():
                    for future in futures:
                        if not future.done():
                            future.set_exception(err)
                continue
            for key, futures in batch.items():
                for number, future in enumerate(futures):
                    if not future.done():
                        future.set_result(key in fresh and number == 0)

    async def _insert(self, keys: list[str]) -> set[str]:
        """The keys inserted now (the others were there): one statement of fixed shape, compiled once and run for every
        key of the batch (SQLAlchemy sends them as one multi-row INSERT); rows written into the statement made it
        compile again for every batch."""
        now = utcnow()
        async with self.db.engine.begin() as connection:
            result = await connection.execute(self._claiming, [{"key": key, "received_at": now} for key in keys])
            return set(result.scalars().all())

    async def prune(self, older_than: timedelta = timedelta(days=1), now: datetime | None = None) -> int:
        """Forget keys older than ``older_than`` (Slack retries within minutes); returns how many."""
        cutoff = (now or utcnow()) - older_than
        async with self.db.session() as session:
            result = await session.execute(delete(SlackDelivery).where(col(SlackDelivery.received_at) < cutoff))
            await session.commit()
        return int(getattr(result, "rowcount", 0) or 0)
