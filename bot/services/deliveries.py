"""Slack deliveries already handled, so that a retried request never acts twice."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from bot.store.database import Database
from bot.store.models import SlackDelivery, utcnow


class Deliveries:
    """Claims a delivery key once, across restarts and replicas (the database decides)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def claim(self, key: str) -> bool:
        """True the first time ``key`` is seen, False for every repeat."""
        async with self.db.session() as session:
            session.add(SlackDelivery(key=key))
            try:
                await session.commit()
            except IntegrityError:
                await session.rollback()
                return False
        return True

    async def prune(self, older_than: timedelta = timedelta(days=1), now: datetime | None = None) -> int:
        """Forget keys older than ``older_than`` (Slack retries within minutes); returns how many."""
        cutoff = (now or utcnow()) - older_than
        async with self.db.session() as session:
            result = await session.execute(delete(SlackDelivery).where(col(SlackDelivery.received_at) < cutoff))
            await session.commit()
        return int(getattr(result, "rowcount", 0) or 0)
