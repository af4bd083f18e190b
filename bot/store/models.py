"""Tables. The database is the truth for every state the bot keeps."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Column, DateTime, Text, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    """Timezone-aware now, in UTC."""
    return datetime.now(UTC)


def aware(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; they were stored in UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


CHANNEL_MAX = 128  # characters of a channel as the catalog names it (Slack's names hold 80, and the #)


def _when(**kwargs: Any) -> Any:
    return Field(sa_column=Column(DateTime(timezone=True), **kwargs))


def _name(**kwargs: Any) -> Any:
    """A name something outside gives with no length of its own: an OpenLineage namespace or name (a dataset named by its
    storage path runs long), a Kafka consumer group's id."""
    return Field(sa_column=Column(Text, nullable=False, **kwargs))


class Subject(SQLModel, table=True):
    """A registry subject (usually a Kafka topic's value schema)."""

    __tablename__ = "subjects"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True, max_length=255)
    format: str = Field(default="AVRO", max_length=16)  # the registry's schemaType of its versions: AVRO, PROTOBUF or JSON
    compatibility: str = Field(default="FULL", max_length=32)
    owner_team: str | None = Field(default=None, max_length=255)
    channel: str | None = Field(default=None, max_length=CHANNEL_MAX)
    topic: str | None = Field(default=None, max_length=255)
    namespace: str | None = Field(default=None, max_length=255)
    policy: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    buf: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))  # Protobuf: Buf's categories or rules
    created_at: datetime = _when(nullable=False, default=utcnow)


class SchemaVersion(SQLModel, table=True):
    """One approved version of a subject's schema, numbered from 1."""

    __tablename__ = "schema_versions"
    __table_args__ = (UniqueConstraint("subject_id", "version", name="uq_schema_versions_subject_version"),)

    id: int | None = Field(default=None, primary_key=True)
    subject_id: int = Field(foreign_key="subjects.id", index=True)
    version: int
    schema_text: str = Field(sa_column=Column(Text, nullable=False))
    fingerprint: str = Field(max_length=64, index=True)
    registry_id: int | None = None
    proposal_id: int | None = Field(default=None, foreign_key="proposals.id")
    created_at: datetime = _when(nullable=False, default=utcnow)


class Proposal(SQLModel, table=True):
    """A proposed schema change and where it stands."""

    __tablename__ = "proposals"

    id: int | None = Field(default=None, primary_key=True)
    subject_id: int = Field(foreign_key="subjects.id", index=True)
    proposer: str = Field(max_length=64)
    schema_text: str = Field(sa_column=Column(Text, nullable=False))
    level: str = Field(max_length=16)
    state: str = Field(default="pending", max_length=24, index=True)
    notes: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    findings: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    impact: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    window_start: datetime | None = _when(nullable=True)
    window_end: datetime | None = _when(nullable=True)
    deadline: datetime | None = _when(nullable=True, index=True)
    revision_of: int | None = Field(default=None, foreign_key="proposals.id")
    card_channel: str | None = Field(default=None, max_length=64)
    card_ts: str | None = Field(default=None, max_length=32)
    created_at: datetime = _when(nullable=False, default=utcnow)
    decided_at: datetime | None = _when(nullable=True)
    subject_card_channel: str | None = Field(default=None, max_length=64)
    subject_card_ts: str | None = Field(default=None, max_length=32)
    mode: str = Field(default="FULL", max_length=32)
    backward: bool = True
    forward: bool = True
    teams: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))
    reminders_sent: int = 0
    extended: bool = False
    surface: str = Field(default="slack", max_length=16)
    version: int | None = None
    registry_id: int | None = None
    registry_version: int | None = None  # the version number the Schema Registry gave it under the subject
    registry_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # the last refusal or failure
    registry_state: str | None = Field(default=None, max_length=16)  # registering, retrying, registered, failed (None: no registry)
    registry_since: datetime | None = _when(nullable=True)  # when it entered that state
    registry_attempts: int = 0
    held: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # why an approved breaking change waits (a freeze)
    emergency: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON(none_as_null=True), nullable=True))  # shipping through a freeze: who asked,
    # why, who confirmed (``requested_by``, ``reason``, ``requested_at``, ``confirmed_by``, ``confirmed_at``, ``freeze``, ``until``)
    references: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))  # the schema
    # references it names, in order (``name``, ``subject``, ``version``): registered with it
    referenced: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))  # the referenced
    # schemas as resolved when proposed, dependencies first (``subject``, ``version``, ``schema``, and ``name``, the import path
    # or URI it is named by): what was classified
    schema_type: str = Field(default="AVRO", max_length=16)  # the registry's schemaType: AVRO, PROTOBUF or JSON
    buf: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))  # Buf's verdict: {"rules", "findings"|"error"}


class CardCopy(SQLModel, table=True):
    """A copy of a proposal's card in someone's DM (for one team): edited with the card, buttons gone once it is final."""

    __tablename__ = "card_copies"

    id: int | None = Field(default=None, primary_key=True)
    proposal_id: int = Field(foreign_key="proposals.id", index=True)
    channel: str = Field(max_length=64)
    ts: str = Field(max_length=32)
    team: str = Field(max_length=255)
    intro: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))


class Acknowledgement(SQLModel, table=True):
    """One team's decision on a proposal; at most one per team."""

    __tablename__ = "acknowledgements"
    __table_args__ = (UniqueConstraint("proposal_id", "team", name="uq_acknowledgements_proposal_team"),)

    id: int | None = Field(default=None, primary_key=True)
    proposal_id: int = Field(foreign_key="proposals.id", index=True)
    team: str = Field(max_length=255)
    user: str = Field(max_length=64)
    decision: str = Field(max_length=24)
    reason: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    created_at: datetime = _when(nullable=False, default=utcnow)


class AuditEntry(SQLModel, table=True):
    """Who did what, when, from which surface (slack, api, cli, scheduler)."""

    __tablename__ = "audit_log"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = _when(nullable=False, default=utcnow, index=True)
    actor: str = Field(max_length=64)
    surface: str = Field(max_length=16)
    action: str = Field(max_length=64)
    target_kind: str = Field(max_length=32)
    target_id: str = Field(max_length=64, index=True)
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class SlackDelivery(SQLModel, table=True):
    """A Slack request already handled, keyed by event_id or trigger_id, so retries do nothing."""

    __tablename__ = "slack_deliveries"

    key: str = Field(primary_key=True, max_length=128)
    received_at: datetime = _when(nullable=False, default=utcnow, index=True)


class HomeViewer(SQLModel, table=True):
    """Who opened the App Home tab, and when last: a tab opened lately is published again when what it lists changes."""

    __tablename__ = "home_viewers"

    user: str = Field(primary_key=True, max_length=64)
    opened_at: datetime = _when(nullable=False, index=True)


class TeamRow(SQLModel, table=True):
    """An owning team from the catalog."""

    __tablename__ = "teams"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=255, unique=True, index=True)
    usergroup: str | None = Field(default=None, max_length=64)
    members: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    oncall: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    oncall_usergroup: str | None = Field(default=None, max_length=64)
    consumer_groups: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))
    channel: str | None = Field(default=None, max_length=CHANNEL_MAX)
    change_hours: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    self_approval: bool = False
    escalation: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))  # unacknowledged pages go on to
    escalate_after: float | None = None  # seconds before each step (None: the default)
    receivers: list[dict[str, str]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))  # pagers beyond Slack


class LineageDataset(SQLModel, table=True):
    """A dataset of the lineage graph (a topic, a table...), from the catalog or OpenLineage."""

    __tablename__ = "lineage_datasets"
    __table_args__ = (UniqueConstraint("namespace", "name", name="uq_lineage_datasets_identity"),)

    id: int | None = Field(default=None, primary_key=True)
    namespace: str = _name()
    name: str = _name(index=True)
    kind: str = Field(default="dataset", max_length=32)
    owners: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    fields: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    subject: str | None = Field(default=None, max_length=255)
    source: str = Field(max_length=16)
    symlinks: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, server_default="[]"))  # its other
    # names from OpenLineage's symlinks facet, [{namespace, name}], and those it was renamed from, [{namespace, name, renamed_from, at}]
    said_at: datetime | None = _when(nullable=True)  # the newest event that said its fields or owners (an older one arriving
    # late changes neither)
    dropped_at: datetime | None = _when(nullable=True)  # the newest event that said it was dropped (lifecycleStateChange DROP)
    named_at: datetime | None = _when(nullable=True)  # the newest event that named it otherwise: later than a drop, it is back


class LineageJob(SQLModel, table=True):
    """A job with its inputs, outputs and field mappings, as JSON; replaced whole by a newer event."""

    __tablename__ = "lineage_jobs"
    __table_args__ = (UniqueConstraint("namespace", "name", name="uq_lineage_jobs_identity"),)

    id: int | None = Field(default=None, primary_key=True)
    namespace: str = _name()
    name: str = _name(index=True)
    owners: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    channel: str | None = Field(default=None, max_length=CHANNEL_MAX)
    inputs: list[list[str]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    outputs: list[list[str]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    mappings: list[list[str]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    unmapped_outputs: list[list[str]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    consumer_groups: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))
    source: str = Field(max_length=16)
    event_time: datetime | None = _when(nullable=True)
    digest: str = Field(default="", max_length=64)
    flink: str | None = Field(default=None, max_length=32)
    flink_at: datetime | None = _when(nullable=True)  # the newest event that said what runs the job


class LineageRevision(SQLModel, table=True):
    """One row whose counter moves whenever lineage changes, so every replica knows to rebuild its graph."""

    __tablename__ = "lineage_revision"

    id: int = Field(default=1, primary_key=True)
    revision: int = 0


class OutboxMessage(SQLModel, table=True):
    """Something the bot owes the outside world (a Slack message, a card edit, a registration), written in the
    same transaction as the state change that causes it and sent by the dispatcher.

    Rows with one ``key`` (a thread, a DM) go out in order: a row waits while an earlier row of its key is
    still pending. A row's place is its id; the rows one row expands into take its place (``position``), in
    ``part`` order.
    """

    __tablename__ = "outbox"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=48)
    key: str = Field(max_length=128, index=True)
    position: int | None = Field(default=None, sa_type=BigInteger)
    part: int = 0
    priority: int = 0  # among the keys ready to go, higher first (pages before warnings)
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    state: str = Field(default="pending", max_length=16, index=True)
    attempts: int = 0
    next_attempt_at: datetime = _when(nullable=False, default=utcnow, index=True)
    lease_until: datetime | None = _when(nullable=True)
    lease_owner: str | None = Field(default=None, max_length=64)
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = _when(nullable=False, default=utcnow)
    sent_at: datetime | None = _when(nullable=True)


class LineageObservation(SQLModel, table=True):
    """What an OpenLineage event said about a job the catalog declares, where it disagrees: kept, never applied."""

    __tablename__ = "lineage_observations"

    id: int | None = Field(default=None, primary_key=True)
    namespace: str = _name()
    name: str = _name(index=True)
    event_time: datetime = _when(nullable=False)
    conflict: str = Field(sa_column=Column(Text, nullable=False))
    observed: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    received_at: datetime = _when(nullable=False, default=utcnow)


class CalendarEntry(SQLModel, table=True):
    """A booked window (a schema change, an upgrade, a backfill...); ``sequence`` grows on every change."""

    __tablename__ = "calendar_entries"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=32)
    title: str = Field(max_length=200)
    start: datetime = _when(nullable=False, index=True)
    end: datetime = _when(nullable=False, index=True)
    status: str = Field(default="tentative", max_length=16)
    owner: str = Field(max_length=255)
    booked_by: str = Field(max_length=64)
    scope: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    proposal_id: int | None = Field(default=None, foreign_key="proposals.id", index=True)
    operation_id: int | None = None
    sequence: int = 0
    created_at: datetime = _when(nullable=False, default=utcnow)
    updated_at: datetime = _when(nullable=False, default=utcnow)


class FreezeRow(SQLModel, table=True):
    """A freeze window: recurring (cron, minutes, zone) or one-off (start, end); from the catalog or from Slack."""

    __tablename__ = "freezes"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=100, unique=True)
    reason: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    scope: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    excepted: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))  # what it leaves out
    cron: str | None = Field(default=None, max_length=100)
    minutes: int | None = None
    timezone: str = Field(default="UTC", max_length=64)
    start: datetime | None = _when(nullable=True)
    end: datetime | None = _when(nullable=True)
    source: str = Field(default="catalog", max_length=16)
    created_by: str | None = Field(default=None, max_length=64)


class CalendarFeed(SQLModel, table=True):
    """A person's secret iCalendar feed token (only its SHA-256 is kept)."""

    __tablename__ = "calendar_feeds"

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True)
    user: str = Field(max_length=64, index=True)
    created_at: datetime = _when(nullable=False, default=utcnow)


class PipelineRow(SQLModel, table=True):
    """A pipeline the catalog declares (its whole declaration in ``spec``)."""

    __tablename__ = "pipelines"

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(max_length=255, unique=True)
    owner_team: str = Field(max_length=255)
    spec: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class SliSeries(SQLModel, table=True):
    """The alert state of one (pipeline, SLI); ``version`` grows on every write (writes are conditional on it)."""

    __tablename__ = "sli_series"
    __table_args__ = (UniqueConstraint("pipeline", "sli", name="uq_sli_series_pipeline_sli"),)

    id: int | None = Field(default=None, primary_key=True)
    pipeline: str = Field(max_length=255)
    sli: str = Field(max_length=32)
    state: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    version: int = 0
    updated_at: datetime = _when(nullable=False, default=utcnow)


class SliEpisode(SQLModel, table=True):
    """One breach episode (or a stretch without data) and the Slack message that shows it."""

    __tablename__ = "sli_episodes"

    id: int | None = Field(default=None, primary_key=True)
    fingerprint: str = Field(max_length=32, unique=True)
    pipeline: str = Field(max_length=255, index=True)
    sli: str = Field(max_length=32)
    no_data: bool = False
    level: str = Field(max_length=8)
    started_at: datetime = _when(nullable=False, index=True)
    resolved_at: datetime | None = _when(nullable=True)
    peak: float | None = None
    acked_by: str | None = Field(default=None, max_length=64)
    acked_at: datetime | None = _when(nullable=True)
    channel: str = Field(max_length=CHANNEL_MAX)
    message_channel: str | None = Field(default=None, max_length=64)
    message_ts: str | None = Field(default=None, max_length=32)
    digest: bool = False  # shown in its channel's digest message rather than a message of its own
    paged_out: bool = False  # its team's receivers (PagerDuty, webhooks) were told it fires: they hear of its acknowledgement and end
    timeline: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))


class Lease(SQLModel, table=True):
    """Periodic work that one replica at a time may do (a poller): who holds it, until when."""

    __tablename__ = "leases"

    name: str = Field(max_length=128, primary_key=True)
    owner: str = Field(max_length=64)
    until: datetime = _when(nullable=False)


class CatalogSetting(SQLModel, table=True):
    """A catalog-wide setting (the global oncall group), by name."""

    __tablename__ = "catalog_settings"

    name: str = Field(max_length=64, primary_key=True)
    value: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class Operation(SQLModel, table=True):
    """A backfill or a DLQ replay: its request, its plan, where it stands, who owns its run (a lease), its message."""

    __tablename__ = "operations"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=16)
    state: str = Field(max_length=16, index=True)
    team: str | None = Field(default=None, max_length=255)  # whose oncall may run it (None: the global oncall only)
    requested_by: str = Field(max_length=64)
    surface: str = Field(max_length=16)
    request: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    plan: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    progress: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    result: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    version: int = 0  # grows on every write; writes are conditional on it
    lease_owner: str | None = Field(default=None, max_length=64)
    lease_until: datetime | None = _when(nullable=True)
    channel: str | None = Field(default=None, max_length=CHANNEL_MAX)  # where it was asked for (its message goes there)
    message_channel: str | None = Field(default=None, max_length=64)
    message_ts: str | None = Field(default=None, max_length=32)
    calendar_entry: int | None = None
    created_at: datetime = _when(nullable=False, default=utcnow, index=True)
    updated_at: datetime = _when(nullable=False, default=utcnow)


class TopicReader(SQLModel, table=True):
    """A consumer group that reads a topic, as the last census saw it (kept across restarts)."""

    __tablename__ = "topic_readers"
    __table_args__ = (UniqueConstraint("topic", "group_id", name="uq_topic_readers_topic_group"),)

    id: int | None = Field(default=None, primary_key=True)
    topic: str = Field(max_length=255, index=True)
    group_id: str = _name(index=True)  # Kafka sets no length on a group's id
    state: str = Field(max_length=32)
    members: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    committed: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    lag: int | None = Field(default=None, sa_type=BigInteger)
    retention_ms: int | None = Field(default=None, sa_type=BigInteger)  # how long the topic keeps data (None: forever)
    first_seen: datetime = _when(nullable=False)
    last_moved: datetime | None = _when(nullable=True)  # when its committed offsets last moved, as the census saw it
    seen_at: datetime = _when(nullable=False)


class CensusRun(SQLModel, table=True):
    """One census of the cluster's consumer groups: when, whether it answered, how many groups read watched topics."""

    __tablename__ = "census_runs"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = _when(nullable=False, index=True)
    ok: bool = True
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # why it failed, or why it is partial
    groups: int = 0
    partial: int = 0  # groups Kafka did not answer for (kept as last seen)


class GroupAttribution(SQLModel, table=True):
    """What people said of a consumer group nobody declared: the team that answers for it, or that it is retired."""

    __tablename__ = "group_attributions"

    group_id: str = Field(sa_column=Column(Text, primary_key=True))
    team: str | None = Field(default=None, max_length=255)
    retired: bool = False
    by_user: str = Field(max_length=64)
    at: datetime = _when(nullable=False)


class ObservedSchema(SQLModel, table=True):
    """A schema seen outside the bot — a registry version, or a schema id producers use on a topic — and whether an
    approved proposal accounts for it; an unaccounted one is alerted once, and may be acknowledged as known."""

    __tablename__ = "observed_schemas"
    __table_args__ = (UniqueConstraint("subject", "source", "schema_id", "version", name="uq_observed_schemas_identity"),)

    id: int | None = Field(default=None, primary_key=True)
    subject: str = Field(max_length=255, index=True)
    source: str = Field(max_length=16)  # "registry" or "kafka"
    schema_id: int = -1  # the registry's id (-1: unknown)
    version: int = -1  # the registry's version (-1: seen on the topic, not as a version)
    fingerprint: str | None = Field(default=None, max_length=64)
    accounted: bool = False
    level: str | None = Field(default=None, max_length=16)
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    seen_at: datetime = _when(nullable=False)
    acknowledged_by: str | None = Field(default=None, max_length=64)
    proposal_id: int | None = None  # the retroactive proposal opened for it
    channel: str | None = Field(default=None, max_length=CHANNEL_MAX)
    message_channel: str | None = Field(default=None, max_length=64)
    message_ts: str | None = Field(default=None, max_length=32)


class HealthReport(SQLModel, table=True):
    """The metadata health report of one month (``YYYY-MM``): its figures, kept for next month's trends; the row is
    the claim that it was posted."""

    __tablename__ = "health_reports"

    month: str = Field(max_length=7, primary_key=True)
    figures: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = _when(nullable=False)


class FlinkRelease(SQLModel, table=True):
    """One release of a Flink job put through the gate: its verdict, the checks that blocked it, and (for a passed
    one) the state schemas the next release must still read."""

    __tablename__ = "flink_releases"

    id: int | None = Field(default=None, primary_key=True)
    job: str = Field(index=True, max_length=255)
    passed: bool = False
    failed_checks: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))
    states: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))
    flink: str = Field(default="", max_length=32)
    sql_digest: str = Field(default="", max_length=64)
    sql: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))  # a passed release's SQL (the bot restarts the job with it)
    author: str | None = Field(default=None, max_length=32)
    checked_by: str = Field(default="", max_length=255)
    team: str | None = Field(default=None, max_length=255)  # the job's owner when it was checked
    report: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, default=dict))  # the gate's answer
    lineage: list[list[str]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False, default=list))  # field mappings of the plan
    created_at: datetime = _when(nullable=False, default=utcnow, index=True)


class FlinkDrill(SQLModel, table=True):
    """One restore drill of a Flink job: its newest state restored into a throwaway job (never scheduled), and whether it could be."""

    __tablename__ = "flink_drills"

    id: int | None = Field(default=None, primary_key=True)
    job: str = Field(index=True, max_length=255)
    ok: bool = False
    savepoint: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    reason: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))  # Flink's words when it could not
    drilled_by: str = Field(default="", max_length=255)
    created_at: datetime = _when(nullable=False, default=utcnow, index=True)


class Transition(SQLModel, table=True):
    """A breaking change shipped in steps (expand, migrate, contract): its versions, its readers and where it stands.

    ``open_subject`` is the subject's id while the transition is open and NULL once it ends: unique, so a subject has
    at most one open transition whatever races."""

    __tablename__ = "transitions"

    id: int | None = Field(default=None, primary_key=True)
    subject_id: int = Field(foreign_key="subjects.id", index=True)
    open_subject: int | None = Field(default=None, unique=True)
    phase: str = Field(default="expand", max_length=16, index=True)
    mapping: list[dict[str, str]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    original_text: str = Field(sa_column=Column(Text, nullable=False))  # the current version when it began (what a rollback returns to)
    expand_text: str = Field(sa_column=Column(Text, nullable=False))
    contract_text: str = Field(sa_column=Column(Text, nullable=False))
    expand_proposal_id: int | None = Field(default=None, foreign_key="proposals.id")
    contract_proposal_id: int | None = Field(default=None, foreign_key="proposals.id")
    return_proposal_id: int | None = Field(default=None, foreign_key="proposals.id")  # a rollback's return to the original
    readers: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))  # every reader of the old fields found
    progress: str = Field(default="", max_length=64)  # which readers had moved when people were last told (a digest): told once per change
    proposer: str = Field(max_length=64)
    surface: str = Field(default="slack", max_length=16)
    deadline: datetime = _when(nullable=False, index=True)
    reminders_sent: int = 0
    deadline_asked: bool = False  # the owners were asked what to do at the deadline
    calendar_entry_id: int | None = Field(default=None, foreign_key="calendar_entries.id")
    ended: str | None = Field(default=None, sa_column=Column(Text, nullable=True))  # why it ended (done, rolled back, its expand refused)
    card_channel: str | None = Field(default=None, max_length=64)
    card_ts: str | None = Field(default=None, max_length=32)
    created_at: datetime = _when(nullable=False, default=utcnow)
    closed_at: datetime | None = _when(nullable=True)


class TransitionMove(SQLModel, table=True):
    """A team's word that one of a transition's readers moved to the new fields; at most one per reader."""

    __tablename__ = "transition_moves"
    __table_args__ = (UniqueConstraint("transition_id", "reader", name="uq_transition_moves_reader"),)

    id: int | None = Field(default=None, primary_key=True)
    transition_id: int = Field(foreign_key="transitions.id", index=True)
    reader: str = Field(max_length=600)
    team: str = Field(max_length=255)
    user: str = Field(max_length=64)
    created_at: datetime = _when(nullable=False, default=utcnow)
