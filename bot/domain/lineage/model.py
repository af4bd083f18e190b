"""Lineage records: teams, datasets with their fields, jobs with their field mappings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

WHOLE = "*"  # the pseudo-field that stands for "the whole dataset" when its fields are unknown


class DatasetId(NamedTuple):
    """OpenLineage dataset identity: namespace (``kafka://host:port``, ``iceberg://lake``) and name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return self.name


GROUP = re.compile(r"[^\x00-\x1f\x7f]{1,1000}")  # a Kafka consumer group's id: Kafka takes any string (Kafka Connect names a
# sink's group after its connector, spaces and all); a control character, or past 1,000 characters, is taken for a mistake
GROUP_RULE = "1 to 1,000 characters, none of them a control character"
SUBJECT_MAX = 255  # characters of a subject's name (a Kafka topic's 249 and "-value")
FLINK_VERSION = re.compile(r"\d+\.\d+(\.\d+)?")  # the Flink version a job runs on, such as 2.3.0


class JobId(NamedTuple):
    """OpenLineage job identity."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return self.name


class FieldRef(NamedTuple):
    """A field of a dataset, addressed by its dotted path (``payload.detail.price``)."""

    dataset: DatasetId
    path: str

    def __str__(self) -> str:
        return f"{self.dataset.name}.{self.path}"


@dataclass(slots=True)
class Team:
    """An owning team: a Slack user group and/or members, oncall members, a channel."""

    name: str
    usergroup: str | None = None
    members: list[str] = field(default_factory=list)
    oncall: list[str] = field(default_factory=list)
    channel: str | None = None
    change_hours: dict[str, Any] | None = None  # {days, start, end, timezone}: when the team makes changes
    oncall_usergroup: str | None = None  # the Slack user group of whoever is oncall now (``oncall`` is its fallback)
    consumer_groups: list[str] = field(default_factory=list)  # Kafka consumer groups the team answers for (no job named)
    self_approval: bool = False  # a proposer's own approval counts for this team (a team of one); recorded as self-approved
    escalation: list[str] = field(default_factory=list)  # who an unacknowledged page goes to next, in order: user groups (S...) or people (U...)
    escalate_after: float | None = None  # seconds a page waits for an acknowledgement before each step (None: the default, 15 minutes)
    receivers: list[dict[str, str]] = field(default_factory=list)  # pagers pages also go to: {"type": "pagerduty", "routing_key_env": NAME}
    # (PagerDuty Events API v2) or {"type": "webhook", "url": URL} (Alertmanager's webhook JSON, version 4)


@dataclass(slots=True)
class Dataset:
    """A topic, table or other store; ``fields`` empty means its fields are unknown."""

    id: DatasetId
    kind: str = "dataset"
    owners: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    subject: str | None = None
    symlinks: list[DatasetId] = field(default_factory=list)  # its other names (OpenLineage's ``symlinks`` facet: a table's
    # name in a catalog beside its storage path, say)
    cleared: tuple[str, ...] = ()  # facets an event deleted (``_deleted``): "schema", "ownership", "symlinks"
    previous: dict[DatasetId, datetime] = field(default_factory=dict)  # the names it was renamed from (OpenLineage's
    # ``lifecycleStateChange`` facet, RENAME with its ``previousIdentifier``), each with the time of the newest event that
    # said so: the name the newest rename gave is the one kept
    dropped_at: datetime | None = None  # when it was dropped (the facet's DROP), unless an event named it since: its readers are
    # still listed (a table dropped is often made again by its next run), and said to read a dropped table


@dataclass(slots=True)
class Job:
    """A job reading and writing datasets; without mappings it is a black box."""

    id: JobId
    owners: list[str] = field(default_factory=list)
    channel: str | None = None
    inputs: list[DatasetId] = field(default_factory=list)
    outputs: list[DatasetId] = field(default_factory=list)
    mappings: list[tuple[FieldRef, FieldRef]] = field(default_factory=list)  # (input field, output field)
    unmapped_outputs: list[DatasetId] = field(default_factory=list)
    learned: str = "catalog"  # how the bot knows of it: "catalog", or "OpenLineage event of <time>"
    consumer_groups: list[str] = field(default_factory=list)  # the Kafka consumer groups it reads with
    flink: str | None = None  # a Flink job's Flink version (its release gate checks with that planner; '' not known: the bot's)
    cleared: tuple[str, ...] = ()  # facets an event deleted (``_deleted``): "ownership"

    @property
    def black_box(self) -> bool:
        """True when at least one output has no field mappings (every input field may reach it)."""
        return bool(self.unmapped_outputs)
