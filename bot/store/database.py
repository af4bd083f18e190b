"""Engines and sessions: one URL, a sync driver for migrations and an async one for the bot."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlmodel import create_engine
from sqlmodel.ext.asyncio.session import AsyncSession

DEFAULT_URL_ENV = "DATABASE_URL"


def driver_url(url: str, *, asynchronous: bool) -> str:
    """Pick the driver for a plain URL: aiosqlite or sqlite3, psycopg (3) for PostgreSQL."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    elif backend == "sqlite":
        parsed = parsed.set(drivername="sqlite+aiosqlite" if asynchronous else "sqlite")
    return parsed.render_as_string(hide_password=False)


def is_sqlite(url: str) -> bool:
    """True for an embedded SQLite database."""
    return make_url(url).get_backend_name() == "sqlite"


def _sqlite_pragmas(dbapi_connection: object, _record: object) -> None:
    """Foreign keys on; writers wait for each other. (Not WAL: there a transaction that reads, then writes, fails at
    once when another connection committed in between, instead of waiting its turn.)"""
    cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


def sync_engine(url: str) -> Engine:
    """A synchronous engine (migrations, CLI)."""
    engine = create_engine(driver_url(url, asynchronous=False))
    if is_sqlite(url):
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def async_engine(url: str, pool_size: int | None = None) -> AsyncEngine:
    """The bot's engine (``pool_size`` connections at most, when given)."""
    sizing = {"pool_size": pool_size, "max_overflow": 0} if pool_size else {}
    engine = create_async_engine(driver_url(url, asynchronous=True), pool_pre_ping=not is_sqlite(url), **sizing)
    if is_sqlite(url):
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
    return engine


class Database:
    """The bot's handle on its store: an async engine and a session factory."""

    def __init__(self, url: str, pool_size: int | None = None) -> None:
        self.url = url
        self.engine = async_engine(url, pool_size)
        self.session = async_sessionmaker(self.engine, class_=AsyncSession, expire_on_commit=False)

    async def close(self) -> None:
        """Release every pooled connection."""
        await self.engine.dispose()


def same(column: Any, value: object) -> Any:
    """The condition that ``column`` still holds ``value`` (None included): the guard of a conditional update."""
    return column.is_(None) if value is None else column == value
