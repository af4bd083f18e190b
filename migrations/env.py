"""Alembic environment: the URL comes from `bot migrate` or DATABASE_URL."""

from __future__ import annotations

import os
from typing import Any

from alembic import context
from sqlalchemy import event
from sqlmodel import SQLModel

from bot.store import models  # noqa: F401  (registers the tables on SQLModel.metadata)
from bot.store.database import DEFAULT_URL_ENV, is_sqlite, sync_engine

config = context.config
url = config.attributes.get("database_url") or os.environ.get(DEFAULT_URL_ENV) or "sqlite:///changeops.db"


def _sqlite_migrating(dbapi_connection: Any, _record: Any) -> None:
    """SQLite while migrating: the transaction is begun by us (``BEGIN``, below), so the tables' changes are in it and a
    failure undoes them all (the driver begins one only before rows change); foreign keys are off (see ``run_migrations``)."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=OFF")
    cursor.close()


def run_migrations() -> None:
    """Apply migrations online, in one transaction per run.

    SQLite alters a table by copying it into a new one and dropping the old (Alembic's batch mode): with foreign keys
    enforced, dropping a table other rows refer to fails, so a database in use could not be migrated. As SQLite's own
    procedure for it says, foreign keys are off while the tables change and every reference is checked after."""
    engine = sync_engine(url)
    if is_sqlite(url):
        event.listen(engine, "connect", _sqlite_migrating)
        event.listen(engine, "begin", lambda connection: connection.exec_driver_sql("BEGIN"))
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=SQLModel.metadata,
            render_as_batch=is_sqlite(url),
            transactional_ddl=True,  # one transaction for the run, SQLite's too (its driver's own handling would commit each step)
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
            if is_sqlite(url):
                broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise RuntimeError(f"the migration left {len(broken)} row(s) referring to rows that do not exist: {broken[:5]}")
    engine.dispose()


run_migrations()
