"""Alembic migrations on SQLite and on the real PostgreSQL; the models and the migrations agree."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData, Table, insert, inspect, select
from sqlmodel import Session, SQLModel

from bot.domain.ops import BackfillRequest, PartitionMove
from bot.store import migrate, models  # noqa: F401
from bot.store.database import sync_engine

TABLES = {"subjects", "schema_versions", "proposals", "acknowledgements", "audit_log", "slack_deliveries",
          "teams", "lineage_datasets", "lineage_jobs", "lineage_revision", "outbox", "lineage_observations",
          "calendar_entries", "freezes", "calendar_feeds", "pipelines", "sli_series", "sli_episodes", "leases", "operations", "catalog_settings", "topic_readers", "census_runs", "group_attributions", "observed_schemas", "health_reports", "flink_releases", "transitions", "transition_moves"}


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


def test_stored_backfills_of_one_topic_are_rewritten_per_topic_and_back(database_url: str) -> None:
    migrate.upgrade(database_url, "0015")
    old = {"request": {"group": "g", "topic": "orders", "to_time": None, "to_offsets": {"0": 5}, "partitions": []},
           "plan": {"moves": [{"partition": 0, "committed": 9, "target": 5, "earliest": 0, "latest": 10, "reread": 4, "before_retention": False}],
                    "group_state": "EMPTY"},
           "progress": {"previous": {"0": 9}, "lag": 4, "following": True}}
    engine = sync_engine(database_url)
    operations = Table("operations", MetaData(), autoload_with=engine)
    try:
        with engine.begin() as conn:
            conn.execute(insert(operations).values(kind="backfill", state="applied", requested_by="alice", surface="cli", result="", version=1,
                                                   created_at=datetime.now(UTC), updated_at=datetime.now(UTC), **old))
            conn.execute(insert(operations).values(kind="replay", state="done", requested_by="alice", surface="cli", result="", version=1,
                                                   created_at=datetime.now(UTC), updated_at=datetime.now(UTC),
                                                   request={"dlq": "orders.dlq", "target": "t"}, plan={}, progress={}))
        migrate.upgrade(database_url)
        with engine.connect() as conn:
            backfill, replay = conn.execute(select(operations.c.request, operations.c.plan, operations.c.progress).order_by(operations.c.id)).all()
        assert backfill.request["topics"] == ["orders"] and "topic" not in backfill.request
        assert BackfillRequest.from_json(backfill.request).to_offsets == {"orders": {0: 5}}
        assert PartitionMove.from_json(backfill.plan["moves"][0]).topic == "orders" and backfill.progress["previous"] == {"orders": {"0": 9}}
        assert replay.request == {"dlq": "orders.dlq", "target": "t"}  # replays are left as they are
        migrate.downgrade(database_url, "0015")
        with engine.connect() as conn:
            again = conn.execute(select(operations.c.request, operations.c.plan, operations.c.progress).order_by(operations.c.id)).first()
        assert again is not None and (again.request, again.plan, again.progress) == (old["request"], old["plan"], old["progress"])
    finally:
        engine.dispose()


def test_a_database_in_use_is_migrated_down_and_up_with_its_rows(migrated_url: str) -> None:
    """Rows that other rows refer to (a subject, its versions and proposals): SQLite rebuilds a table it alters, which
    failed on such rows with foreign keys enforced, so an existing playground could not be upgraded."""
    engine = sync_engine(migrated_url)
    now = datetime.now(UTC)
    try:
        with Session(engine) as session:
            subject = models.Subject(name="orders-value", channel="#orders")
            session.add(subject)
            session.flush()
            proposal = models.Proposal(subject_id=subject.id, proposer="U0000ALICE", schema_text="{}", level="safe")
            session.add(proposal)
            session.flush()
            session.add(models.SchemaVersion(subject_id=subject.id, version=1, schema_text="{}", fingerprint="f", proposal_id=proposal.id))
            session.add(models.Acknowledgement(proposal_id=proposal.id, team="orders-team", user="U0000ALICE", decision="approve"))
            session.add(models.TopicReader(topic="orders", group_id="orders-reader", state="STABLE", first_seen=now, seen_at=now))
            session.add(models.LineageDataset(namespace="s3://bucket", name="lake/orders", source="openlineage"))
            session.commit()
    finally:
        engine.dispose()
    migrate.downgrade(migrated_url, "0022")
    migrate.upgrade(migrated_url)
    engine = sync_engine(migrated_url)
    try:
        with Session(engine) as session:
            assert [(s.name, s.channel) for s in session.scalars(select(models.Subject))] == [("orders-value", "#orders")]
            assert [a.decision for a in session.scalars(select(models.Acknowledgement))] == ["approve"]
            assert [r.group_id for r in session.scalars(select(models.TopicReader))] == ["orders-reader"]
            assert [d.symlinks for d in session.scalars(select(models.LineageDataset))] == [[]]
    finally:
        engine.dispose()


def test_a_migration_that_fails_on_sqlite_leaves_the_database_as_it_was(database_url: str) -> None:
    """Every change of a run is in its one transaction, the tables' too: a failure (here, a row referring to nothing, found
    by the check that follows the changes) leaves the previous revision whole, not half-copied tables."""
    if not database_url.startswith("sqlite"):
        return  # PostgreSQL changes tables inside transactions of its own accord
    migrate.upgrade(database_url, "0022")
    engine = sync_engine(database_url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            conn.exec_driver_sql("INSERT INTO acknowledgements (proposal_id, team, user, decision, reason, created_at) "
                                 "VALUES (999, 'orders-team', 'U0000ALICE', 'approve', '', '2026-12-01 00:00:00')")
        before = sorted(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    try:
        migrate.upgrade(database_url)
    except RuntimeError as err:
        assert "1 row(s) referring to rows that do not exist" in str(err)
    else:
        raise AssertionError("the upgrade went through")
    assert migrate.current(database_url) == "0022"
    engine = sync_engine(database_url)
    try:
        assert sorted(inspect(engine).get_table_names()) == before  # no _alembic_tmp_ table left
        assert "symlinks" not in {c["name"] for c in inspect(engine).get_columns("lineage_datasets")}
    finally:
        engine.dispose()
