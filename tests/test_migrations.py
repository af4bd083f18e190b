"""Alembic migrations on SQLite and on the real PostgreSQL; the models and the migrations agree."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect
from sqlmodel import SQLModel

from bot.store import migrate, models  # noqa: F401
from bot.store.database import sync_engine

TABLES = {"subjects", "schema_versions", "proposals", "acknowledgements", "audit_log", "slack_deliveries",
          "teams", "lineage_datasets", "lineage_jobs", "lineage_revision", "outbox", "lineage_observations",
          "calendar_entries", "freezes", "calendar_feeds", "pipelines", "sli_series", "sli_episodes", "leases", "operations", "catalog_settings", "topic_readers", "census_runs", "group_attributions", "observed_schemas", "health_reports", "flink_releases"}


def test_upgrade_creates_every_table(database_url: str) -> None:
    assert migrate.current(database_url) is None
    migrate.upgrade(database_url)
    assert migrate.current(database_url) == migrate.head()
    engine = sync_engine(database_url)
    try:
        assert TABLES <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_models_match_the_migrations(migrated_url: str) -> None:
    engine = sync_engine(migrated_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), SQLModel.metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_downgrade_to_base_and_back(migrated_url: str) -> None:
    migrate.downgrade(migrated_url, "base")
    assert migrate.current(migrated_url) is None
    migrate.upgrade(migrated_url)
    assert migrate.current(migrated_url) == migrate.head()


def test_upgrade_twice_is_harmless(migrated_url: str) -> None:
    migrate.upgrade(migrated_url)
    assert migrate.current(migrated_url) == migrate.head()
