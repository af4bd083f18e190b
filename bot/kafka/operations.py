"""Oncall operations on the real cluster: what a backfill needs to know (the group's state and members, its
committed offsets, the partitions' watermarks, offsets for a time) and its one write (the group's offsets);
a DLQ replay's scan (count per destination, parked letters, samples, what earlier replays copied) and its
exactly-once copy.

Every call blocks (run it in a worker thread) and has a timeout. Names the cluster does not know come back as
``OpsError`` with a message for people."""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType  # type: ignore[attr-defined]

from bot.domain.dead_letters import PARKED_REASON, REPLAY_COUNT, Route, error_of, original_partition, split
from bot.domain.ops import (
    REPLAY_HEADER_ID,
    REPLAY_HEADER_SOURCE,
    BackfillRequest,
    Copied,
    Headers,
    OpsError,
    PartitionMove,
    ReplayRequest,
    Span,
    Tally,
    already_copied,
    chosen_partitions,
    plan_backfill,
    refuse_active,
)
from bot.domain.readers import Member
from bot.kafka.avro import Registry
from bot.kafka.clients import BACKLOG_READER, settings
from bot.kafka.dead_letters import describe

TIMEOUT = 10.0
BATCH = 500  # messages a scan reads at once (held together: larger batches outlive the young GC generation and cost full collections)
TRANSACTION = 200_000  # messages per transaction at most
TRANSACTION_SECONDS = 2.0  # and at most this long (a cancel waits for it; each commit stops the copy for tens of milliseconds)
CONSUME = 500  # messages taken from the consumer at once
SAMPLES = 5


def replay_group(operation: int) -> str:
    """A new replay's consumer group (and transactional id): its number and a random part, since two ChangeOps databases
    number their operations alike and two replays under one transactional id would fence each other. Kept in the plan,
    so a resume continues it."""
    return f"changeops-replay-{operation}-{secrets.token_hex(4)}"


def group_of(operation: int, plan: dict[str, Any]) -> str:
    """The consumer group a replay runs as (``changeops-replay-N`` for those planned before groups were kept in the plan)."""
    return str(plan.get("group") or f"changeops-replay-{operation}")


class Cluster:
    """Admin questions and the offset reset (blocking)."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.admin = AdminClient(settings(bootstrap, {"client.id": "changeops-ops"}))
        self.probe = Consumer(settings(bootstrap, {"group.id": "changeops-ops-probe", "enable.auto.commit": False,
                               "client.id": "changeops-ops", "allow.auto.create.topics": False}))

    def close(self) -> None:
        """Release the probe consumer and the admin client (librdkafka ends a client when the last reference goes)."""
        self.probe.close()
        del self.admin

    def topics(self) -> dict[str, int]:
        """Every topic of the cluster and its number of partitions."""
        return {name: len(t.partitions) for name, t in self.admin.list_topics(timeout=TIMEOUT).topics.items() if t.error is None and t.partitions}

    def partitions(self, topic: str) -> list[int]:
        """The topic's partitions; OpsError when the cluster does not know it."""
        return self.partitions_of([topic])[topic]

    def partitions_of(self, topics: list[str]) -> dict[str, list[int]]:
        """Each topic's partitions, in one metadata request; OpsError naming those the cluster does not know."""
        known = self.admin.list_topics(timeout=TIMEOUT).topics  # every topic: asking for one may create it
        found = {t: sorted(known[t].partitions) for t in topics if t in known and known[t].error is None and known[t].partitions}
        missing = [t for t in topics if t not in found]
        if missing:
            raise OpsError(f"the cluster has no topic {', '.join(missing[:10])} (check the name: `kafka-topics --list`)")
        return found

    def append_time(self, topics: list[str]) -> list[str]:
        """Those of ``topics`` whose broker stamps each message with the time it is appended (``message.timestamp.type`` is
        ``LogAppendTime``): a timestamp a producer gives is not kept there."""
        asked = [ConfigResource(ResourceType.TOPIC, t) for t in sorted(set(topics))]
        answers = self.admin.describe_configs(asked, request_timeout=TIMEOUT) if asked else {}
        return sorted(resource.name for resource, future in answers.items()
                      if getattr(future.result(timeout=TIMEOUT).get("message.timestamp.type"), "value", None) == "LogAppendTime")

    def watermarks(self, topic: str, partitions: list[int]) -> dict[int, tuple[int, int]]:
        """Earliest retained and next offset of each partition."""
        return {p: tuple(self.probe.get_watermark_offsets(TopicPartition(topic, p), timeout=TIMEOUT)) for p in partitions}  # type: ignore[misc]

    def offsets_for_time(self, topic: str, partitions: list[int], moment: datetime) -> dict[int, int]:
        """The first offset at or after ``moment`` on each partition (-1: every message is older)."""
        millis = int(moment.timestamp() * 1000)
        found = self.probe.offsets_for_times([TopicPartition(topic, p, millis) for p in partitions], timeout=TIMEOUT)
        return {tp.partition: tp.offset for tp in found}

    def group(self, group: str) -> tuple[str, list[Member]]:
        """The group's state and connected members."""
        described = self.admin.describe_consumer_groups([group], request_timeout=TIMEOUT)[group].result(timeout=TIMEOUT)
        state = getattr(described.state, "name", str(described.state))
        return state, [Member(m.client_id, m.host) for m in described.members or []]

    def committed(self, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
        """The group's committed offsets on the topic's partitions (those it committed)."""
        asked = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in partitions])
        answer = self.admin.list_consumer_group_offsets([asked], request_timeout=TIMEOUT)[group].result(timeout=TIMEOUT)
        return {tp.partition: tp.offset for tp in answer.topic_partitions or [] if tp.offset >= 0}

    def committed_everywhere(self, group: str) -> dict[tuple[str, int], int]:
        """Every offset the group has committed, by topic and partition."""
        answer = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT)[group].result(timeout=TIMEOUT)
        failed = [f"{tp.topic} partition {tp.partition}: {tp.error}" for tp in answer.topic_partitions or [] if tp.error is not None]
        if failed:  # a partition left out would look never committed
            raise OpsError(f"Kafka did not give the committed offsets of {group} ({'; '.join(failed[:5])}): try again")
        return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions or [] if tp.offset >= 0}

    def plan_backfill(self, request: BackfillRequest) -> tuple[list[PartitionMove], str]:
        """The moves of a backfill as the cluster stands now, and the group's state; OpsError when it cannot be run."""
        state, members = self.group(request.group)
        committed = self.committed_everywhere(request.group)
        read = sorted({topic for topic, _ in committed})
        if not members and not committed and state in ("DEAD", "UNKNOWN"):
            raise OpsError(f"consumer group {request.group} has never committed on {request.topics_text()} and has no members: "
                           "check the name (`kafka-consumer-groups --list`)")
        refuse_active(request.group, state, members)
        if request.all_topics and not read:
            raise OpsError(f"consumer group {request.group} has committed on no topic, so --all-topics names none: name the topics")
        topics = list(request.topics) or read
        partitions = self.partitions_of(topics)
        moves: list[PartitionMove] = []
        for topic in topics:
            mine = {p: o for (t, p), o in committed.items() if t == topic}
            if not mine and read:
                raise OpsError(f"consumer group {request.group} has no committed offset on {topic}: it does not read it (it has committed on "
                               f"{', '.join(read[:10])}{' and more' if len(read) > 10 else ''}); check the topic. Nothing moved")
            chosen = chosen_partitions(request, topic, partitions[topic])
            by_time = self.offsets_for_time(topic, chosen, request.to_time) if request.to_time else {}
            moves += plan_backfill(request, topic, partitions[topic], self.watermarks(topic, chosen), mine, by_time)
        return moves, state

    def reset(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        """Move the group's committed offsets, every topic at once (the broker refuses while the group has members)."""
        wanted = ConsumerGroupTopicPartitions(group, [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())])
        answer = self.admin.alter_consumer_group_offsets([wanted], request_timeout=TIMEOUT)[group].result(timeout=TIMEOUT)
        failed = [f"{tp.topic} partition {tp.partition}: {tp.error}" for tp in answer.topic_partitions or [] if tp.error is not None]
        if failed:
            raise OpsError(f"the broker refused the reset of {group}: {'; '.join(failed[:10])}")

    def lag(self, group: str, partitions: list[tuple[str, int]]) -> int:
        """Messages the group has still to read on these partitions."""
        committed = self.committed_everywhere(group)
        lag = 0
        for topic in sorted({t for t, _ in partitions}):
            mine = [p for t, p in partitions if t == topic]
            lag += sum(max(0, high - committed.get((topic, p), low)) for p, (low, high) in self.watermarks(topic, mine).items())
        return lag


# --- replay -----------------------------------------------------------------------------------------

@dataclass
class ReplayPlan:
    """What a replay will do: the DLQ offsets it covers, how many messages it sends (to each destination, the parked
    ones among them), samples, what is skipped, and what stops it (letters that name no original topic, destinations
    the cluster does not have)."""

    spans: list[Span]
    count: int  # messages sent, parked ones included
    skipped: int  # copied by an earlier replay (left out unless --again)
    filtered: int  # left out by the header filter
    samples: list[str]
    target_partitions: int
    same_partition: bool  # each message goes to its own partition number in the target
    route: Route
    targets: dict[str, int] = field(default_factory=dict)  # destination -> messages (the parked topic apart)
    partitions: dict[str, int] = field(default_factory=dict)  # destination (and the parked topic, when it exists) -> partitions
    parked: int = 0
    parked_errors: dict[str, int] = field(default_factory=dict)  # the parked letters' last errors, the most frequent first
    unrouted: int = 0  # letters that name no original topic
    missing: list[str] = field(default_factory=list)  # destinations the cluster does not have
    append_time: list[str] = field(default_factory=list)  # the DLQ or destinations whose broker stamps messages as they are appended

    def as_json(self) -> dict[str, Any]:
        """For storage and ``--format json``."""
        return {"spans": [[s.partition, s.start, s.end] for s in self.spans], "count": self.count, "skipped": self.skipped,
                "filtered": self.filtered, "samples": self.samples, "target_partitions": self.target_partitions,
                "same_partition": self.same_partition, "route": self.route.as_json(), "targets": self.targets, "partitions": self.partitions,
                "parked": self.parked, "parked_topic": self.route.parked, "parked_errors": self.parked_errors, "unrouted": self.unrouted,
                "missing": self.missing, "append_time": self.append_time}

    @classmethod
    def from_json(cls, request: ReplayRequest, data: dict[str, Any]) -> ReplayPlan:
        """From storage (a plan stored before routes existed sends everything to its one target and parks nothing)."""
        if "route" in data:
            route, targets = Route.from_json(request.dlq, data["route"]), dict(data.get("targets") or {})
        else:
            route, targets = Route(request.dlq, request.target, max_replays=1 << 30), {str(request.target): int(data["count"])}
        return cls([Span(*s) for s in data["spans"]], data["count"], data["skipped"], data.get("filtered", 0), list(data["samples"]),
                   data["target_partitions"], bool(data["same_partition"]), route, targets, dict(data.get("partitions") or {}),
                   int(data.get("parked", 0)), dict(data.get("parked_errors") or {}), int(data.get("unrouted", 0)), list(data.get("missing") or []),
                   list(data.get("append_time") or []))

    @property
    def destinations(self) -> list[str]:
        """Where messages go, in a fixed order (a run's per-destination counts are kept in it)."""
        return sorted({*self.targets, *([self.route.target] if self.route.target is not None else [])})


def _headers(message: Message) -> Headers:
    """The message's headers as (name, bytes) pairs, as the client hands them to a consumer."""
    return message.headers() or []  # type: ignore[return-value]


def _ranges(cluster: Cluster, request: ReplayRequest, partitions: list[int]) -> dict[int, tuple[int, int]]:
    """The DLQ offsets ``[start, end)`` of each partition that the request's times cover."""
    marks = cluster.watermarks(request.dlq, partitions)
    starts = cluster.offsets_for_time(request.dlq, partitions, request.since) if request.since else {}
    ends = cluster.offsets_for_time(request.dlq, partitions, request.until) if request.until else {}
    ranges: dict[int, tuple[int, int]] = {}
    for p, (low, high) in marks.items():
        start = starts.get(p, low) if request.since else low
        start = high if start < 0 else max(start, low)
        end = ends.get(p, high) if request.until else high
        end = high if end < 0 else min(end, high)
        if end > start:
            ranges[p] = (start, end)
    return ranges


def scan(cluster: Cluster, request: ReplayRequest, earlier: list[Copied], registry: Registry | None, route: Route) -> ReplayPlan:
    """Read the DLQ range once: count what will be sent where (and parked), keep five samples, find what earlier replays
    copied."""
    partitions = cluster.partitions(request.dlq)
    topics = cluster.topics()
    target_partitions = len(cluster.partitions(request.target)) if request.target is not None else 0
    ranges = _ranges(cluster, request, partitions)
    tally = Tally(route.parked, request.limit)
    samples: list[Message] = []
    skipped = filtered = 0
    filtering, looking = request.header is not None, bool(earlier) and not request.again  # per message: asked once
    if ranges:
        consumer = Consumer(settings(cluster.bootstrap, {"group.id": "changeops-ops-scan", "enable.auto.commit": False,
                             "client.id": "changeops-ops-scan", "isolation.level": "read_committed", "enable.partition.eof": True,
                             **BACKLOG_READER}))
        try:
            consumer.assign([TopicPartition(request.dlq, p, start) for p, (start, _) in ranges.items()])
            open_ = set(ranges)
            heard = time.monotonic()
            while open_:
                batch = consumer.consume(BATCH, 0.1)  # short: the end of a range is not waited for
                if not batch:
                    if time.monotonic() - heard > TIMEOUT:
                        raise OpsError(f"reading {request.dlq} stalled (nothing in {TIMEOUT:g} s); try again")
                    continue
                heard = time.monotonic()
                for message in batch:
                    p = int(message.partition() or 0)
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            open_.discard(p)
                        continue
                    offset = int(message.offset() or 0)
                    if p not in open_ or offset >= ranges[p][1]:
                        open_.discard(p)
                        continue
                    headers = _headers(message)
                    if filtering and not request.matches(headers):
                        filtered += 1
                    elif looking and already_copied(p, offset, headers, earlier) is not None:
                        skipped += 1
                    else:
                        destination, _ = route.of(headers)
                        tally.add(message.timestamp()[1], p, offset, destination, error_of(headers) if destination == route.parked else "")
                        if len(samples) < SAMPLES:
                            samples.append(message)
                    if offset + 1 >= ranges[p][1]:
                        open_.discard(p)
        finally:
            consumer.close()
    tally.close()
    if tally.cut:  # the range ends at the last letter kept in each partition
        ranges = {p: (ranges[p][0], last + 1) for p, last in tally.last.items()}
    spans = [Span(p, start, end) for p, (start, end) in sorted(ranges.items())]
    lines = [describe(m.value(), m.key(), list(_headers(m)), m.timestamp()[1], int(m.partition() or 0), int(m.offset() or 0), registry)
             for m in samples]
    targets = tally.targets
    known = {t: topics[t] for t in (*targets, route.parked) if t in topics}
    stamped = cluster.append_time([request.dlq, *(t for t in (*targets, *([request.target] if request.target else [])) if t in topics)])
    return ReplayPlan(spans, tally.total, skipped, filtered, lines, target_partitions, target_partitions >= len(partitions), route, targets,
                      known, tally.parked, dict(sorted(tally.reasons.items(), key=lambda item: -item[1])[:5]), tally.unrouted,
                      sorted(t for t in targets if t not in topics), stamped)


@dataclass
class Progress:
    """Where a running replay is, shared between its worker thread and the event loop."""

    copied: int = 0  # messages sent, parked ones included
    parked: int = 0
    to: dict[str, int] = field(default_factory=dict)  # destination -> messages sent there
    positions: dict[int, int] = field(default_factory=dict)  # DLQ partition -> next offset, as last committed
    resumed_from: int = 0  # messages already copied before this run (a resume)
    started: float = field(default_factory=time.monotonic)
    stop: threading.Event = field(default_factory=threading.Event)


class Replayer:
    """Sends a replay's spans to their destinations exactly once: each batch is one transaction that also commits the
    replay group's DLQ offsets (with the counts sent so far in the commit's metadata), so a resume after a crash starts
    at the last committed batch and a ``read_committed`` reader sees every message once, wherever it went."""

    def __init__(self, bootstrap: str, operation: int, group: str, request: ReplayRequest, plan: ReplayPlan, earlier: list[Copied],
                 progress: Progress, sleep: Callable[[float], None] = time.sleep) -> None:
        self.bootstrap, self.operation, self.group, self.request, self.plan, self.earlier = bootstrap, operation, group, request, plan, earlier
        self.progress, self.sleep = progress, sleep
        self.slots = {topic: 2 + index for index, topic in enumerate(plan.destinations)}  # where a destination's count is kept

    def run(self) -> bool:
        """Copy until every span is done (True) or ``progress.stop`` is set (False, at a transaction boundary)."""
        group = self.group
        if self.plan.parked:
            self._parked_topic()
        consumer = Consumer(settings(self.bootstrap, {"group.id": group, "enable.auto.commit": False,
                             "isolation.level": "read_committed", "client.id": group, "enable.partition.eof": True,
                             "auto.offset.reset": "earliest", **BACKLOG_READER}))
        # batches of up to 50 ms: fewer requests for the broker (a commit sends what waits); keyed messages without a partition
        # land where a Java producer (murmur2) puts them
        producer = Producer(settings(self.bootstrap, {"transactional.id": group, "client.id": group, "linger.ms": 50,
                             "batch.num.messages": 10_000, "transaction.timeout.ms": 60_000, "partitioner": "murmur2_random"}))
        try:
            # fetching starts from where the replay was last seen while the producer fences a previous owner (which also
            # settles what it left open); the offsets committed after that are the truth, and a partition elsewhere is moved
            guess = {s.partition: max(s.start, self.progress.positions.get(s.partition, s.start)) for s in self.plan.spans}
            consumer.assign([TopicPartition(self.request.dlq, p, o) for p, o in sorted(guess.items())])
            for _ in range(2):  # connected to a broker by its id first (the bootstrap connection goes): else asked again 500 ms later
                producer.list_topics(self.request.dlq, timeout=TIMEOUT)
            producer.init_transactions(TIMEOUT * 3)
            return self._copy(consumer, producer, guess)
        finally:
            consumer.close()
            producer.flush(TIMEOUT)

    def _parked_topic(self) -> None:
        """Create ``<dlq>.parked`` (as many partitions as the DLQ, the broker's replication) unless it exists."""
        name = self.plan.route.parked
        if name in self.plan.partitions:
            return
        admin = AdminClient(settings(self.bootstrap, {"client.id": "changeops-ops"}))
        dlq = admin.list_topics(timeout=TIMEOUT).topics.get(self.request.dlq)
        count = len(dlq.partitions) if dlq is not None and dlq.partitions else 1
        try:
            admin.create_topics([NewTopic(name, num_partitions=count, replication_factor=-1)], request_timeout=TIMEOUT)[name].result(TIMEOUT)
        except KafkaException as err:
            if err.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
        found = admin.list_topics(timeout=TIMEOUT).topics.get(name)
        self.plan.partitions[name] = len(found.partitions) if found is not None and found.partitions else count

    def _copy(self, consumer: Consumer, producer: Producer, guess: dict[int, int]) -> bool:
        dlq, ends = self.request.dlq, {s.partition: s.end for s in self.plan.spans}
        starts = {s.partition: s.start for s in self.plan.spans}
        tally = {p: [0] * (2 + len(self.slots)) for p in ends}  # per DLQ partition: sent, parked, then per destination
        for tp in consumer.committed([TopicPartition(dlq, p) for p in ends], timeout=TIMEOUT):
            if tp.offset >= 0:
                starts[tp.partition] = max(starts[tp.partition], tp.offset)
                saved = json.loads(tp.metadata or "{}")
                to = list(saved.get("to") or [])
                tally[tp.partition] = [int(saved.get("copied", 0)), int(saved.get("parked", 0)), *(to + [0] * len(self.slots))[:len(self.slots)]]
        progress = self.progress
        self._count(tally)
        progress.resumed_from = progress.copied
        progress.positions = dict(starts)
        open_ = {p for p in ends if starts[p] < ends[p]}
        if not open_:
            return True
        consumer.pause([TopicPartition(dlq, p) for p in ends if p not in open_])
        for p in sorted(open_):
            if starts[p] != guess[p]:
                consumer.seek(TopicPartition(dlq, p, starts[p]))
        rate = self.request.rate
        limit = max(1, min(TRANSACTION, int(rate))) if rate else TRANSACTION  # messages per transaction
        began, copied_now = time.monotonic(), 0
        while open_:
            if progress.stop.is_set():
                return False
            producer.begin_transaction()
            positions, copied = self._fill(consumer, producer, open_, starts, ends, tally, limit)
            if positions:
                offsets = [TopicPartition(dlq, p, o, metadata=json.dumps({"copied": tally[p][0], "parked": tally[p][1], "to": tally[p][2:]}))
                           for p, o in sorted(positions.items())]
                producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), TIMEOUT * 3)
                producer.commit_transaction(TIMEOUT * 6)
                progress.positions.update(positions)
                starts.update(positions)
                self._count(tally)
            else:
                producer.abort_transaction(TIMEOUT * 3)
            copied_now += copied
            if rate:
                ahead = copied_now / rate - (time.monotonic() - began)
                if ahead > 0:
                    self.sleep(ahead)
        return True

    def _count(self, tally: dict[int, list[int]]) -> None:
        """The progress from the committed tallies."""
        self.progress.copied = sum(t[0] for t in tally.values())
        self.progress.parked = sum(t[1] for t in tally.values())
        self.progress.to = {topic: sum(t[slot] for t in tally.values()) for topic, slot in self.slots.items()}

    def _fill(self, consumer: Consumer, producer: Producer, open_: set[int], starts: dict[int, int], ends: dict[int, int],
              tally: dict[int, list[int]], limit: int) -> tuple[dict[int, int], int]:
        """Copy into the open transaction until about ``limit`` messages were read, ``TRANSACTION_SECONDS`` passed, or every span
        is done; the DLQ positions reached and how many were sent (``tally`` counts them). The loop runs per message: what
        does not change is made once, before it."""
        request, earlier, route, plan, slots = self.request, self.earlier, self.plan.route, self.plan, self.slots
        produce, fixed, most = producer.produce, request.target, route.max_replays
        parked, parked_partitions = route.parked, plan.partitions.get(route.parked, 0)
        identity = (REPLAY_HEADER_ID, str(self.operation).encode())
        counted = [(REPLAY_COUNT, b"%d" % (n + 1)) for n in range(most)]  # what a copy carries, by the count its letter had
        reason = (PARKED_REASON, f"replayed {most} times already (max_replays {most})".encode())
        prefix = {p: f"{request.dlq}/{p}/".encode() for p in ends}  # + the offset: the changeops-source header
        same = {p: p if plan.same_partition else -1 for p in ends}  # a fixed target's partition, by the DLQ's
        check = request.header is not None or (earlier and not request.again)
        positions: dict[int, int] = {}
        copied = read = 0
        deadline = time.monotonic() + TRANSACTION_SECONDS
        while open_ and read < limit and time.monotonic() < deadline and not self.progress.stop.is_set():
            # at most what is left of the open spans (an end-of-partition event each, too): consume returns when it has as
            # many as it was asked for, so asking for more than can come would wait out its timeout at every span's end
            left = sum(ends[q] - positions.get(q, starts[q]) for q in open_) + len(open_)
            batch = consumer.consume(min(CONSUME, limit - read, left), 0.1)  # short: the end of a span is not waited for
            read += len(batch)
            producer.poll(0)  # delivery reports served as they come
            for message in batch:
                p, error = message.partition() or 0, message.error()
                if error is not None:
                    read -= 1  # an event, not a message: a transaction's size counts messages
                    if error.code() == KafkaError._PARTITION_EOF and p in open_:  # everything below its offset was seen
                        positions[p] = max(positions.get(p, starts[p]), min(message.offset() or 0, ends[p]))
                        if positions[p] >= ends[p]:
                            open_.discard(p)
                    continue
                offset, end = message.offset() or 0, ends[p]
                if offset >= end or p not in open_:
                    open_.discard(p)
                    continue
                positions[p] = offset + 1
                if offset + 1 >= end:
                    open_.discard(p)
                headers: Headers = message.headers() or []  # type: ignore[assignment]  # a consumer's are (name, bytes) pairs
                if check and not (request.matches(headers) and (request.again or already_copied(p, offset, headers, earlier) is None)):
                    continue
                kept, count = split(headers)
                counts = tally[p]
                source = (REPLAY_HEADER_SOURCE, prefix[p] + b"%d" % offset)
                if count >= most:
                    kept += (identity, source, (REPLAY_COUNT, b"%d" % count), reason)
                    destination, partition = parked, p if p < parked_partitions else -1
                    counts[1] += 1
                else:
                    kept += (identity, source, counted[count])
                    if fixed is not None:
                        destination, partition = fixed, same[p]
                    else:
                        found = route.destination(headers, count)
                        if found is None:
                            raise OpsError(f"dead letter {request.dlq}/{p}@{offset} names no original topic, and the plan did not see "
                                           "it; nothing of its transaction was sent")
                        origin = original_partition(headers)
                        destination, partition = found, origin if origin is not None and origin < plan.partitions.get(found, 0) else -1
                    counts[slots[destination]] += 1
                kind, stamp = message.timestamp()
                while True:
                    try:
                        produce(destination, message.value(), message.key(), partition=partition, headers=kept, timestamp=stamp if kind else 0)
                        break
                    except BufferError:  # the producer's queue is full: wait for deliveries to make room
                        producer.poll(0.05)
                counts[0] += 1
                copied += 1
        return positions, copied


def is_retriable(err: BaseException) -> bool:
    """A Kafka failure worth resuming from (the broker away, a timeout), as opposed to a refusal."""
    if isinstance(err, KafkaException) and err.args and isinstance(err.args[0], KafkaError):
        error: KafkaError = err.args[0]
        return bool(error.retriable() or error.code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN))
    return isinstance(err, TimeoutError)
