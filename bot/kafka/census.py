"""A census of the cluster's consumer groups: which topics each reads (committed offsets, or live members
assigned to it), its state and members, its lag; and how long each topic keeps data.

Cheap on a cluster with thousands of groups: committed offsets are read from Kafka's log of them
(``__consumer_offsets``, followed by bot.kafka.offsets_log) when the caller keeps one and it can be read, else asked
one group a request (as the protocol's client API allows) with a bounded number in flight; groups are described in
batches, only those with members (the listing says which); every call has a timeout. Blocking: run it in a worker
thread.
The bot's own groups (``changeops-``) are left out.

Complete or says it is not: what Kafka refuses for a moment (a coordinator that moved or is still loading its part
of the offsets topic, as on a fresh broker) is asked again; a group it still does not answer for is named in the
snapshot's ``unanswered``, never left out as if it read nothing."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec, ResourceType  # type: ignore[attr-defined]

from bot.domain.sli.retention import Retention
from bot.kafka.offsets_log import OffsetsLog, OffsetsUnreadable

log = logging.getLogger(__name__)

TIMEOUT = 10.0  # seconds per call
IN_FLIGHT = 64  # committed-offset requests at once
DESCRIBE_BATCH = 250  # groups per describe request
OWN_PREFIX = "changeops-"
RETRY_PAUSES = (0.5, 1.0, 2.0)  # seconds before asking again what Kafka did not answer
UNREACHABLE = (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)  # the cluster did not answer at all
MOST_UNANSWERED = 10  # more unanswered groups than this (or a tenth of them) is a cluster that does not answer


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
    """What one census saw, and what Kafka did not answer for (never dropped silently: the caller keeps what it
    knew of those groups)."""

    groups: list[GroupSeen]
    ends: dict[tuple[str, int], int]  # next offset of each partition read
    retention_ms: dict[str, int | None]  # per topic; None: kept forever (or unknown)
    listed: set[str] = field(default_factory=set)  # every group the listing named (answered or not)
    unanswered: dict[str, str] = field(default_factory=dict)  # group -> why its offsets or its description did not come
    listing: str | None = None  # why the listing itself may be incomplete (a coordinator still loading, say)
    topics: frozenset[str] = frozenset()  # every topic on the cluster
    offsets_from: str = "api"  # "log": committed offsets read from __consumer_offsets; "api": asked group by group

    @property
    def partial(self) -> bool:
        """Whether Kafka left some groups unanswered (or the listing incomplete)."""
        return bool(self.unanswered) or self.listing is not None


def _result(future: Future[object], what: str) -> object:
    try:
        return future.result(timeout=TIMEOUT + 5)  # the request times out first, with its own error
    except KafkaException as err:
        raise CensusFailed(f"{what}: {err.args[0] if err.args else err}") from None
    except TimeoutError:
        raise CensusFailed(f"{what}: no answer in {TIMEOUT:g} s") from None


def _listing(admin: AdminClient) -> tuple[list[Any], str | None]:
    """Every group the cluster lists, and why the list may be incomplete. A coordinator that is still loading its
    part of the offsets topic (a fresh or restarted broker) answers with an error for a moment: asked again."""
    for pause in (*RETRY_PAUSES, None):
        listed = _result(admin.list_consumer_groups(request_timeout=TIMEOUT), "listing consumer groups")
        errors = listed.errors  # type: ignore[attr-defined]
        if errors and not listed.valid and all(e.code() in UNREACHABLE for e in errors):  # type: ignore[attr-defined]
            raise CensusFailed(f"listing consumer groups: {errors[0]}")  # nobody answered: asking again would only wait as long
        if not errors or pause is None:
            break
        time.sleep(pause)
    return list(listed.valid), f"listing consumer groups: {errors[0]}" if errors else None  # type: ignore[attr-defined]


def _offsets(admin: AdminClient, group: str) -> Future[object]:
    return admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT)[group]


def _committed(answer: Any, group: str) -> dict[tuple[str, int], int]:
    """A group's committed offsets; CensusFailed when a partition came back with an error (a coordinator still
    loading, say): a group silently left out would look like no reader."""
    partitions = answer.topic_partitions or []
    failed = next((tp.error for tp in partitions if tp.error is not None), None)
    if failed is not None:
        raise CensusFailed(f"committed offsets of {group}: {failed}")
    return {(tp.topic, tp.partition): tp.offset for tp in partitions if tp.offset >= 0}


def take(admin: AdminClient, topics: Iterable[str] | None = None, offsets_log: OffsetsLog | None = None) -> Snapshot:
    """Census every consumer group (``topics``: keep only readers of these; None: of any topic), their committed
    offsets from ``offsets_log`` when given and readable. A group whose offsets or description Kafka does not give
    (after one more try) is named in ``unanswered``; CensusFailed when the cluster does not answer at all, or not
    for most groups."""
    wanted = set(topics) if topics is not None else None
    listings, listing_error = _listing(admin)
    listings = [g for g in listings if not g.group_id.startswith(OWN_PREFIX)]
    groups = {g.group_id: GroupSeen(g.group_id, getattr(g.state, "name", str(g.state))) for g in listings}
    ids = sorted(groups)
    unanswered: dict[str, str] = {}
    # only groups with members are described (an empty group has none to tell); the describes run while offsets are asked
    busy = [group for group in ids if groups[group].state not in ("EMPTY", "DEAD")]
    described = [admin.describe_consumer_groups(busy[start:start + DESCRIBE_BATCH], request_timeout=TIMEOUT)
                 for start in range(0, len(busy), DESCRIBE_BATCH)]
    logged = _logged(offsets_log, admin, ids)
    if logged is not None:
        for group in ids:
            groups[group].committed = logged.get(group, {})
    else:
        _ask_offsets(admin, groups, unanswered)
    for batch in described:
        for group, future in batch.items():
            try:
                description = _result(future, f"describing {group}")
            except CensusFailed as err:
                unanswered.setdefault(group, str(err))
                continue
            seen = groups[group]
            seen.state = getattr(description.state, "name", str(description.state))  # type: ignore[attr-defined]
            seen.members = [(m.client_id, m.host, [(tp.topic, tp.partition) for tp in (m.assignment.topic_partitions if m.assignment else [])])
                            for m in description.members or []]  # type: ignore[attr-defined]
    readers = [g for g in groups.values() if g.group not in unanswered and g.topics() and (wanted is None or g.topics() & wanted)]
    partitions = {tp for g in readers for tp in (*g.committed, *(p for _, _, parts in g.members for p in parts))
                  if wanted is None or tp[0] in wanted}
    return Snapshot(readers, _ends(admin, partitions), {t: r.ms for t, r in retentions(admin, {t for t, _ in partitions}).items()}, set(ids), unanswered,
                    listing_error, cluster_topics(admin), "api" if logged is None else "log")


def _ask_offsets(admin: AdminClient, groups: dict[str, GroupSeen], unanswered: dict[str, str]) -> None:
    """Each group's committed offsets from the API, ``IN_FLIGHT`` requests at once; the groups Kafka did not answer for
    (after one more try) go into ``unanswered``; CensusFailed when they are most of them."""
    pending: list[tuple[str, Future[object]]] = []

    def drain(limit: int) -> None:
        while len(pending) > limit:
            group, future = pending.pop(0)
            try:
                groups[group].committed = _committed(_result(future, f"committed offsets of {group}"), group)
            except CensusFailed as err:
                unanswered[group] = str(err)
                if len(unanswered) > max(MOST_UNANSWERED, len(groups) // 10):
                    raise CensusFailed(f"Kafka did not answer for {len(unanswered)} groups, the latest {err}") from None
    for group in sorted(groups):
        pending.append((group, _offsets(admin, group)))
        drain(IN_FLIGHT)
    drain(0)
    if unanswered:  # once more, one at a time, after a pause: most refusals are a coordinator moving or loading
        time.sleep(RETRY_PAUSES[0])
        for group in sorted(unanswered):
            try:
                groups[group].committed = _committed(_result(_offsets(admin, group), f"committed offsets of {group}"), group)
                del unanswered[group]
            except CensusFailed as err:
                unanswered[group] = str(err)


def _logged(offsets_log: OffsetsLog | None, admin: AdminClient, groups: list[str]) -> dict[str, dict[tuple[str, int], int]] | None:
    """The ``groups``' committed offsets from the log; None (and why, in the log) when there is none or it cannot be read."""
    if offsets_log is None:
        return None
    try:
        return offsets_log.committed(admin, groups)
    except OffsetsUnreadable as err:
        log.info("committed offsets asked one group at a time: %s", err)
        return None


def cluster_topics(admin: AdminClient) -> frozenset[str]:
    """Every topic on the cluster (internal ones left out); CensusFailed when it does not answer."""
    try:
        metadata = admin.list_topics(timeout=TIMEOUT)
    except KafkaException as err:
        raise CensusFailed(f"listing topics: {err.args[0] if err.args else err}") from None
    return frozenset(t for t in metadata.topics if not t.startswith("__"))


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


def retentions(admin: AdminClient, topics: set[str]) -> dict[str, Retention]:
    """Each topic's ``retention.ms`` and ``retention.bytes`` in one request (unlimited, or a topic that does not answer: None)."""
    if not topics:
        return {}
    found: dict[str, Retention] = {}
    for resource, future in admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in sorted(topics)],
                                                   request_timeout=TIMEOUT).items():
        try:
            config = _result(future, f"configuration of {resource.name}")
        except CensusFailed:
            found[resource.name] = Retention(None, None)
            continue
        found[resource.name] = Retention(_limit(config.get("retention.ms")), _limit(config.get("retention.bytes")))  # type: ignore[attr-defined]
    return found


def _limit(entry: object) -> int | None:
    """A retention setting's value; None for unlimited (-1) or absent."""
    value = getattr(entry, "value", None)
    if value in (None, ""):
        return None
    number = int(str(value))
    return number if number >= 0 else None


def one_by_one(admin: AdminClient) -> dict[str, dict[tuple[str, int], int]]:
    """The naive way (the benchmark's baseline): every group's committed offsets, one request after the other."""
    listed = _result(admin.list_consumer_groups(request_timeout=TIMEOUT), "listing consumer groups")
    found = {}
    for listing in listed.valid:  # type: ignore[attr-defined]
        group = listing.group_id
        answer = _result(admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT)[group], group)
        found[group] = {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions or []}  # type: ignore[attr-defined]
    return found
