"""Alembic environment: the URL comes from `bot migrate` or DATABASE_URL."""

from __future__ import annotations

import os

from alembic import context
from sqlmodel import SQLModel

from bot.store import models  # noqa: F401  (registers the tables on SQLModel.metadata)
from bot.store.database import DEFAULT_URL_ENV, is_sqlite, sync_engine

config = context.config
url = config.attributes.get("database_url") or os.environ.get(DEFAULT_URL_ENV) or "sqlite:///changeops.db"


def run_migrations() -> None:
    """Apply migrations online, in one transaction per run."""
    engine = sync_engine(url)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=SQLModel.metadata,
            render_as_batch=is_sqlite(url),
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations()
