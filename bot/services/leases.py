"""Leases: periodic work that one replica at a time does (a poller), taken over when its holder goes quiet."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from bot.store.database import Database
from bot.store.models import Lease


async def hold(db: Database, name: str, owner: str, ttl: timedelta, now: datetime) -> bool:
    """Take or renew the lease ``name`` for ``ttl``; False while another owner's lease runs."""
    async with db.session() as session:
        moved = await session.exec(update(Lease).where(col(Lease.name) == name, or_(col(Lease.owner) == owner, col(Lease.until) < now))
                                   .values(owner=owner, until=now + ttl))
        if getattr(moved, "rowcount", 0):
            await session.commit()
            return True
        session.add(Lease(name=name, owner=owner, until=now + ttl))
        try:
            await session.commit()
        except IntegrityError:
            return False
        return True
