"""Running one async piece of work against the database at DATABASE_URL, from a CLI command."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from bot.config import Config

if TYPE_CHECKING:
    from bot.store.database import Database

T = TypeVar("T")


class NotMigrated(Exception):
    """The database is missing tables: `bot migrate` has not been run."""


def with_database(work: Callable[[Database], Awaitable[T]]) -> T:
    """Open the database, run ``work``, close it; NotMigrated when it is not at the newest migration."""
    from bot.store import migrate  # Alembic and SQLAlchemy: only for the commands that use the database
    from bot.store.database import Database

    config = Config.from_env(os.environ, require_slack=False)
    if migrate.current(config.database_url) != migrate.head():
        raise NotMigrated("the database at DATABASE_URL is not migrated: run `bot migrate` first")

    async def run() -> T:
        db = Database(config.database_url)
        try:
            return await work(db)
        finally:
            await db.close()

    return asyncio.run(run())
