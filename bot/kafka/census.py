"""A census of the cluster's consumer groups: which topics each reads (committed offsets, or live members
assigned to it), its state and members, its lag; and how long each topic keeps data.

Cheap on a cluster with thousands of groups: groups are described in batches, committed offsets (one group
per request, as the protocol's client API allows) are asked with a bounded number in flight, every call has a
timeout; only groups with members are described (the listing says which). Blocking: run it in a worker thread.
The bot's own groups (``changeops-``) are left out."""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec, ResourceType  # type: ignore[attr-defined]

TIMEOUT = 10.0  # seconds per call
IN_FLIGHT = 64  # committed-offset requests at once
DESCRIBE_BATCH = 250  # groups per describe request
OWN_PREFIX = "changeops-"


class CensusFailed(Exception):
    """The cluster did not answer (the message says what failed)."""


@dataclass
class GroupSeen:
    """One group: its state, its members (client id, host, the partitions assigned), its committed offsets."""

    group: str
    state: str
    members: list[tuple[str, str, list[tuple[str, int]]]] = field(default_factory=list)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)

    def topics(self) -> set[str]:
        """Every topic it reads: committed on, or assigned."""
        return {t for t, _ in self.committed} | {t for _, _, parts in self.members for t, _ in parts}


@dataclass
class Snapshot:
    """What one census saw."""

    groups: list[GroupSeen]
    ends: dict[tuple[str, int], int]  # next offset of each partition read
    retention_ms: dict[str, int | None]  # per topic; None: kept forever (or unknown)


def _result(future: Future[object], what: str) -> object:
    try:
        return future.result(timeout=TIMEOUT + 5)  # the request times out first, with its own error
    except KafkaException as err:
        raise CensusFailed(f"{what}: {err.args[0] if err.args else err}") from None
    except TimeoutError:
        raise CensusFailed(f"{what}: no answer in {TIMEOUT:g} s") from None


def take(admin: AdminClient, topics: Iterable[str] | None = None) -> Snapshot:
    """Census every consumer group (``topics``: keep only readers of these; None: of any topic)."""
    wanted = set(topics) if topics is not None else None
    listed = _result(admin.list_consumer_groups(request_timeout=TIMEOUT), "listing consumer groups")
    if listed.errors:  # type: ignore[attr-defined]  # a broker that did not answer: a partial list would drop its groups
        raise CensusFailed(f"listing consumer groups: {listed.errors[0]}")  # type: ignore[attr-defined]
    listings = [g for g in listed.valid if not g.group_id.startswith(OWN_PREFIX)]  # type: ignore[attr-defined]
    groups = {g.group_id: GroupSeen(g.group_id, getattr(g.state, "name", str(g.state))) for g in listings}
    ids = sorted(groups)
    # only groups with members are described (an empty group has none to tell); the describes run while offsets are asked
    busy = [group for group in ids if groups[group].state not in ("EMPTY", "DEAD")]
    described = [admin.describe_consumer_groups(busy[start:start + DESCRIBE_BATCH], request_timeout=TIMEOUT)
                 for start in range(0, len(busy), DESCRIBE_BATCH)]
    pending: list[tuple[str, Future[object]]] = []

    def drain(limit: int) -> None:
        while len(pending) > limit:
            group, future = pending.pop(0)
            answer = _result(future, f"committed offsets of {group}")
            partitions = answer.topic_partitions or []  # type: ignore[attr-defined]
            failed = next((tp.error for tp in partitions if tp.error is not None), None)
            if failed is not None:  # a coordinator still loading, say: a group silently left out would look like no reader
                raise CensusFailed(f"committed offsets of {group}: {failed}")
            groups[group].committed = {(tp.topic, tp.partition): tp.offset for tp in partitions if tp.offset >= 0}
    for group in ids:
        pending.append((group, admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT)[group]))
        drain(IN_FLIGHT)
    drain(0)
    for batch in described:
        for group, future in batch.items():
            description = _result(future, f"describing {group}")
            seen = groups[group]
            seen.state = getattr(description.state, "name", str(description.state))  # type: ignore[attr-defined]
            seen.members = [(m.client_id, m.host, [(tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else [])])
                            for m in description.members or []]  # type: ignore[attr-defined]
    readers = [g for g in groups.values() if g.topics() and (wanted is None or g.topics() & wanted)]
    partitions = {tp for g in readers for tp in (*g.committed, *(p for _, _, parts in g.members for p in parts))
                  if wanted is None or tp[0] in wanted}
    return Snapshot(readers, _ends(admin, partitions), _retention(admin, {t for t, _ in partitions}))


def _ends(admin: AdminClient, partitions: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
    if not partitions:
        return {}
    asked = {TopicPartition(t, p): OffsetSpec.latest() for t, p in sorted(partitions)}  # type: ignore[no-untyped-call]
    ends = {}
    for tp, future in admin.list_offsets(asked, request_timeout=TIMEOUT).items():
        try:
            ends[(tp.topic, tp.partition)] = int(_result(future, f"end offset of {tp.topic}/{tp.partition}").offset)  # type: ignore[attr-defined]
        except CensusFailed:
            continue  # a deleted topic: no lag for it
    return ends


def _retention(admin: AdminClient, topics: set[str]) -> dict[str, int | None]:
    if not topics:
        return {}
    found: dict[str, int | None] = {}
    for resource, future in admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in sorted(topics)],
                                                   request_timeout=TIMEOUT).items():
        try:
            config = _result(future, f"configuration of {resource.name}")
        except CensusFailed:
            found[resource.name] = None
            continue
        entry = config.get("retention.ms")  # type: ignore[attr-defined]
        value = int(entry.value) if entry is not None and entry.value not in (None, "") else -1
        found[resource.name] = value if value >= 0 else None
    return found


def one_by_one(admin: AdminClient) -> dict[str, dict[tuple[str, int], int]]:
    """The naive way (the benchmark's baseline): every group's committed offsets, one request after the other."""
    listed = _result(admin.list_consumer_groups(request_timeout=TIMEOUT), "listing consumer groups")
    found = {}
    for listing in listed.valid:  # type: ignore[attr-defined]
        group = listing.group_id
        answer = _result(admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT)[group], group)
        found[group] = {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions or []}  # type: ignore[attr-defined]
    return found
