"""Alembic, driven from code: `bot migrate` and the readiness probe."""

from __future__ import annotations

from importlib import util
from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from bot.store.database import sync_engine


def _migrations() -> Path:
    """The Alembic folder: inside an installed package (``bot.migrations``, built from the top-level migrations/
    folder), else the source checkout's migrations/ folder (an editable install maps no subpackage)."""
    installed = util.find_spec("bot.migrations")
    if installed is not None and installed.submodule_search_locations:
        return Path(list(installed.submodule_search_locations)[0])
    return Path(__file__).resolve().parents[2] / "migrations"


MIGRATIONS = _migrations()


def _alembic(url: str) -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["database_url"] = url
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` up to ``revision``."""
    command.upgrade(_alembic(url), revision)


def downgrade(url: str, revision: str) -> None:
    """Take the database at ``url`` down to ``revision``."""
    command.downgrade(_alembic(url), revision)


def head() -> str:
    """The newest revision in the migrations folder."""
    revision = ScriptDirectory.from_config(_alembic("sqlite://")).get_current_head()
    assert revision is not None
    return revision


def current(url: str) -> str | None:
    """The revision the database at ``url`` is at (None when never migrated)."""
    engine = sync_engine(url)
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    finally:
        engine.dispose()
