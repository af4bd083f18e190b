"""The oncall operations' arguments and plans, as pure functions: what is accepted, what is refused and why."""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime, timedelta

import pytest

from bot.domain.lineage.catalog import read_catalog
from bot.domain.ops import (
    BackfillRequest,
    Copied,
    OpsError,
    PartitionMove,
    ReplayRequest,
    Span,
    Tally,
    already_copied,
    backfill_request,
    deleted_text,
    moved_text,
    moves_table,
    offsets_csv,
    offsets_file,
    plan_backfill,
    progress_text,
    refuse_active,
    replay_request,
    skipped,
    topics_named,
)
from bot.domain.readers import Member

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)


def test_backfill_arguments_read_times_durations_offsets_and_partitions() -> None:
    by_time = backfill_request(shlex.split("g orders --to-time 2026-12-02T08:00:00+01:00"), NOW)
    assert by_time.to_time == datetime(2026, 12, 2, 7, 0, tzinfo=UTC)
    assert backfill_request(shlex.split("g orders --by-duration 1h30m"), NOW).to_time == NOW - timedelta(minutes=90)
    offsets = backfill_request(shlex.split("g orders --to-offsets=0:1200,1:980 --partitions 0,1"), NOW)
    assert offsets.to_offsets == {"orders": {0: 1200, 1: 980}} and offsets.partitions == (0, 1) and offsets.topics == ("orders",)
    assert BackfillRequest.from_json(offsets.as_json()) == offsets and BackfillRequest.from_json(by_time.as_json()) == by_time


@pytest.mark.parametrize(("text", "span"), [("PT1H30M", timedelta(minutes=90)), ("P1DT2H", timedelta(hours=26)), ("P2D", timedelta(days=2)),
                                            ("PT0.5S", timedelta(seconds=0.5)), ("pt15m", timedelta(minutes=15))])
def test_a_duration_is_also_read_in_iso_8601_as_kafka_consumer_groups_reads_it(text: str, span: timedelta) -> None:
    assert backfill_request(["g", "orders", "--by-duration", text], NOW).to_time == NOW - span


@pytest.mark.parametrize("text", ["PT", "P1DT", "P", "PT-1H", "P1H", "PT1D", "P1W"])
def test_a_malformed_iso_duration_is_refused(text: str) -> None:
    with pytest.raises(OpsError, match="is not a duration such as 2h, 90m, 1d or PT1H30M"):
        backfill_request(["g", "orders", "--by-duration", text], NOW)


def test_messages_retention_deleted_before_the_group_read_them_are_said_apart_not_counted_as_skipped() -> None:
    marks, committed = {0: (100, 100), 1: (100, 150), 2: (0, 80)}, {0: 50, 1: 70, 2: 30}
    for request in (BackfillRequest("g", ("t",), to_end="earliest"), BackfillRequest("g", ("t",), NOW)):
        moves = plan_backfill(request, "t", [0, 1, 2], marks, committed, {0: -1, 1: 100, 2: 0})
        assert [(m.target, m.reread, m.deleted_unread) for m in moves] == [(100, 0, 50), (100, 0, 30), (0, 30, 0)]
        stored = [m.as_json() for m in moves]
        assert skipped(stored) == 0 and [m["deleted_unread"] for m in stored] == [50, 30, 0]
        assert deleted_text(stored) == ("80 messages the group had not read were deleted by retention before it read them: partitions 0 (offsets "
                                        "50–99), 1 (offsets 70–99). No backfill brings them back; the table counts from each log's start.")
    latest = [m.as_json() for m in plan_backfill(BackfillRequest("g", ("t",), to_end="latest"), "t", [1], marks, committed, {})]
    assert skipped(latest) == 50 and latest[0]["deleted_unread"] == 30  # the 50 retained ones are the backfill's loss; the 30 were gone
    assert deleted_text([{"topic": "t", "partition": 0, "committed": None, "earliest": 5}]) is None  # a plan stored before it was counted


@pytest.mark.parametrize(("text", "message"), [
    ("g", "give the consumer group and the topic"),
    ("g orders --all-topics --to-earliest", "the topics or --all-topics, not both"),
    ("g orders,payments,orders --to-earliest", "orders is named twice"),
    ("g orders,,payments --to-earliest", "is not a topic name"),
    ("g orders,payments --to-offsets 0:5", "gives the partitions of one topic"),
    ("g --all-topics --to-offsets 0:5", "gives the partitions of one topic"),
    ("g orders,payments --to-earliest --partitions 0", "picks partitions of one topic"),
    ("g --all-topics --to-earliest --partitions 0", "picks partitions of one topic"),
    ("g orders", "exactly one of"),
    ("g orders --to-time tomorrow", "not an ISO 8601 time"),
    ("g orders --to-time 2027-01-01T00:00Z", "in the future"),
    ("g orders --by-duration 0m", "longer than zero"),
    ("g orders --to-offsets 0:1,0:2", "partition 0 twice"),
    ("g orders --to-offsets 0:1 --partitions 1", "leaves out"),
    ("g orders --partitions a --by-duration 1h", "not a list of partition numbers"),
    ("g 'bad topic' --by-duration 1h", "is not a topic name"),
    ("g .. --to-earliest", re.escape("'..' is not a topic name (at most 249 letters, digits, . _ -; not . or ..)")),
    ("g orders --by-duration 1h --by-duration 2h", "given twice"),
    ("g orders --to-time", "needs a value"),
    ("g orders --to-earliest --to-latest", "exactly one of"),
    ("g orders --shift-by 0", "other than zero"),
    ("g orders --shift-by ten", "not a number of messages"),
    ("g orders --shift-by 1.5", "not a number of messages"),
    ("g orders --shift-by -5 --by-duration 1h", "exactly one of"),
])
def test_bad_backfill_arguments_are_named(text: str, message: str) -> None:
    with pytest.raises(OpsError, match=message):
        backfill_request(shlex.split(text), NOW)


def test_a_group_is_any_id_kafka_takes() -> None:
    """Kafka takes any string as a group's id: Kafka Connect names a sink's group after its connector, spaces and all."""
    for group in ("connect-orders sink", "payments:reconciler", "spark-kafka-source-3f1c/driver", "приказы"):
        assert backfill_request(shlex.split(f"'{group}' orders --to-earliest"), NOW).group == group
    for group, shown in (("a\tb", "'a\\tb'"), ("x" * 1001, repr("x" * 80))):
        with pytest.raises(OpsError, match=re.escape(f"{shown} is not a consumer group id (1 to 1,000 characters, none of them a control "
                                                      "character)")):
            backfill_request([group, "orders", "--to-earliest"], NOW)


def test_every_reset_of_kafka_consumer_groups_is_read_and_survives_storage() -> None:
    earliest = backfill_request(shlex.split("g orders --to-earliest --partitions 0"), NOW)
    latest = backfill_request(shlex.split("g orders --to-latest"), NOW)
    back, ahead = backfill_request(shlex.split("g orders --shift-by -500"), NOW), backfill_request(shlex.split("g orders --shift-by=+20"), NOW)
    assert (earliest.to_end, earliest.partitions, latest.to_end, back.shift, ahead.shift) == ("earliest", (0,), "latest", -500, 20)
    for request in (earliest, latest, back, ahead):
        assert BackfillRequest.from_json(request.as_json()) == request
    several, every = backfill_request(shlex.split("g orders,payments --shift-by -5"), NOW), backfill_request(shlex.split("g --all-topics --to-earliest"), NOW)
    assert (several.topics, several.topics_text(), every.topics, every.all_topics, every.topics_text()) == \
        (("orders", "payments"), "orders, payments", (), True, "all its topics")
    for request in (several, every):
        assert BackfillRequest.from_json(request.as_json()) == request
    assert (earliest.target_text(), back.target_text(), ahead.target_text()) == ("the earliest offset", "-500 messages from where it is",
                                                                                 "+20 messages from where it is")


def test_ends_and_shifts_are_planned_against_the_log_clamped_and_skips_counted() -> None:
    marks, committed = {0: (10, 100), 1: (0, 50)}, {0: 40, 1: 45}
    earliest = plan_backfill(BackfillRequest("g", ("t",), to_end="earliest"), "t", [0, 1], marks, committed, {})
    assert [(m.target, m.reread) for m in earliest] == [(10, 30), (0, 45)]
    latest = plan_backfill(BackfillRequest("g", ("t",), to_end="latest"), "t", [0, 1], marks, committed, {})
    assert [(m.target, m.reread) for m in latest] == [(100, -60), (50, -5)] and skipped([m.as_json() for m in latest]) == 65
    back = plan_backfill(BackfillRequest("g", ("t",), shift=-35), "t", [0, 1], marks, committed, {})
    assert [(m.target, m.asked, m.clamped, m.reread) for m in back] == [(10, 5, False, 30), (10, None, False, 35)]  # 40-35 < 10: clamped
    ahead = plan_backfill(BackfillRequest("g", ("t",), shift=8), "t", [0, 1], marks, committed, {})
    assert [(m.target, m.asked, m.reread) for m in ahead] == [(48, None, -8), (50, 53, -5)]  # past the end: stops there
    assert PartitionMove.from_json(ahead[1].as_json()) == ahead[1] and "asked" not in ahead[0].as_json()
    with pytest.raises(OpsError, match="partition 1: group g has no committed offset to shift from"):
        plan_backfill(BackfillRequest("g", ("t",), shift=-1), "t", [0, 1], marks, {0: 40}, {})
    with pytest.raises(OpsError, match="u partition 1: group g has no committed offset to shift from"):
        plan_backfill(BackfillRequest("g", ("t", "u"), shift=-1), "u", [0, 1], marks, {0: 40}, {})
    assert skipped([m.as_json() for m in back]) == 0


def test_replay_arguments() -> None:
    request, dry = replay_request(shlex.split('orders.dlq --to orders.replay --since 2026-12-01T00:00Z --limit 100 --filter "error=price out of range" '
                                        "--rate 500/s --again --dry-run"), NOW)
    assert dry and request.again and request.limit == 100 and request.rate == 500.0 and request.header == ("error", "price out of range")
    assert ReplayRequest.from_json(request.as_json()) == request
    back, _ = replay_request(shlex.split("orders.dlq --to-original --limit 10"), NOW)
    assert back.to_original and back.target is None and back.target_text() == "their original topics"
    assert ReplayRequest.from_json(back.as_json()) == back
    for text, message in (("orders.dlq", "say where to"), ("orders.dlq --to orders.dlq", "into itself"),
                          ("orders.dlq --to t --to-original", "not both"),
                          ("orders.dlq --to t --since 2026-12-02T00:00Z --until 2026-12-01T00:00Z", "not after"),
                          ("orders.dlq --to t --limit 0", "not a number"), ("orders.dlq --to t --rate -5", "not a rate"),
                          ("orders.dlq --to t --filter =x", "not header=value"), ("orders.dlq --to t --wat", "unknown option")):
        with pytest.raises(OpsError, match=message):
            replay_request(shlex.split(text), NOW)


def test_a_backfill_plan_clamps_to_retention_and_refuses_past_the_end() -> None:
    moves = plan_backfill(BackfillRequest("g", ("t",), to_offsets={"t": {0: 5, 1: 40}}), "t", [0, 1], {0: (10, 100), 1: (0, 50)}, {0: 100, 1: 50}, {})
    assert [(m.partition, m.target, m.reread, m.clamped) for m in moves] == [(0, 10, 90, True), (1, 40, 10, False)]
    by_time = plan_backfill(BackfillRequest("g", ("t",), NOW), "t", [0, 1], {0: (0, 100), 1: (0, 50)}, {0: 100}, {0: 60, 1: -1})
    assert [(m.target, m.committed, m.reread) for m in by_time] == [(60, 100, 40), (50, None, 0)]  # -1: every message is older
    with pytest.raises(OpsError, match="past the end"):
        plan_backfill(BackfillRequest("g", ("t",), to_offsets={"t": {0: 101}}), "t", [0], {0: (0, 100)}, {}, {})
    with pytest.raises(OpsError, match="has no partition 3"):
        plan_backfill(BackfillRequest("g", ("t",), NOW, partitions=(3,)), "t", [0], {0: (0, 100)}, {}, {})


def test_an_active_group_is_refused_naming_its_clients() -> None:
    refuse_active("g", "EMPTY", [])
    with pytest.raises(OpsError, match="2 connected clients .*tm-1 on /10.0.0.1"):
        refuse_active("g", "STABLE", [Member("tm-1", "/10.0.0.1"), Member("tm-2", "/10.0.0.2")])


def test_what_an_earlier_replay_copied_respects_its_span_and_filter() -> None:
    earlier = [Copied(7, (Span(0, 10, 20),), ("error", "timeout"))]
    assert already_copied(0, 15, [("error", b"timeout")], earlier) == 7
    assert already_copied(0, 15, [("error", b"schema")], earlier) is None
    assert already_copied(0, 20, [("error", b"timeout")], earlier) is None and already_copied(1, 15, [("error", b"timeout")], earlier) is None


def test_progress_reads_like_a_person_would_say_it() -> None:
    assert progress_text(1200, 10_000, 2.0) == "1,200 of 10,000 (12%) · 600/s · about 14 s left"
    assert progress_text(6000, 10_000, 2.0, moved=1000) == "6,000 of 10,000 (60%) · 500/s · about 8 s left"


def test_the_catalog_names_a_global_oncall_group_and_oncall_user_groups() -> None:
    catalog, problems = read_catalog({"oncall": {"usergroup": "S0ONCALL", "members": ["U0000ALICE"]},
                                      "teams": {"t": {"members": ["U0000ALICE"], "oncall_usergroup": "S0TONCALL"}}}, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == [] and catalog.oncall is not None and catalog.oncall.usergroup == "S0ONCALL"
    assert catalog.teams["t"].oncall_usergroup == "S0TONCALL"
    _, problems = read_catalog({"oncall": {"usergroup": "nope"}, "teams": {"t": {"members": ["U0000ALICE"], "oncall_usergroup": 5}}},
                               lambda _: None)  # type: ignore[arg-type, return-value]
    assert {p.place for p in problems} == {"oncall.usergroup", "teams.t.oncall_usergroup"}


def test_an_offsets_file_is_read_as_kafka_consumer_groups_writes_it() -> None:
    text = "orders,1,980\n\norders,0,1200\n"
    assert offsets_file(text, ("orders",)) == {"orders": {0: 1200, 1: 980}}
    both = {"orders": {1: 980, 0: 1200}, "payments": {0: 7}}
    assert offsets_file(offsets_csv(both)) == both == offsets_file(offsets_csv(both), ("payments", "orders"))  # what --export writes, read back
    assert offsets_csv(both) == "orders,0,1200\norders,1,980\npayments,0,7\n"
    read = backfill_request(["g", "--all-topics", "--from-file", "offsets.csv"], NOW, offsets_csv(both))
    assert (read.topics, read.to_offsets, read.target_text()) == (("orders", "payments"), both, "offsets orders 0:1200, 1:980; payments 0:7")
    with pytest.raises(OpsError, match="the file names no offset of payments"):
        backfill_request(["g", "orders,payments", "--from-file", "offsets.csv"], NOW, "orders,0,5\n")
    for bad, message in (("orders,0\n", "line 1 of the file is not topic,partition,offset"), ("orders,x,1\n", "line 1"),
                         ("orders,0,1\norders,0,2\n", "partition 0 of orders a second time"), ("orders,0,-1\n", "no offset"),
                         ("orders,0,1\npayments,0,1\n", "the file also names payments"), ("", "names no offset of orders"),
                         ("or ders,0,1\n", "line 1")):
        with pytest.raises(OpsError, match=message):
            offsets_file(bad, ("orders",))
    with pytest.raises(OpsError, match="read from a terminal"):
        backfill_request(["g", "orders", "--from-file", "offsets.csv"], NOW)


def test_a_plan_over_several_topics_names_each_topic_in_its_table_and_its_offsets() -> None:
    marks = {0: (0, 100), 1: (0, 50)}
    moves = [m.as_json() for topic in ("orders", "payments")
             for m in plan_backfill(BackfillRequest("g", ("orders", "payments"), to_end="earliest"), topic, [0, 1], marks, {0: 90, 1: 40}, {})]
    table = moves_table(moves, "  !")
    assert table[0].split() == ["topic", "partition", "committed", "target", "re-read"] and table[3].split() == ["payments", "0", "90", "0", "90"]
    assert moves_table(moves[:2], "  !")[0].split()[0] == "partition"  # one topic: no topic column
    assert moves_table(moves, "  !", limit=3)[-1] == "… and 1 more partitions"
    assert moved_text({("payments", 0): 5, ("orders", 1): 7, ("orders", 0): None}) == "orders 0→none, 1→7; payments 0→5"
    assert moved_text({("t", p): p for p in range(30)}, limit=2) == "t 0→0, 1→1 and 28 more partitions"
    every = BackfillRequest("g", (), to_end="earliest")
    assert topics_named(every, moves) == "all its topics (orders, payments)" and topics_named(every, []) == "all its topics"


def test_a_scan_tally_counts_each_destination_and_keeps_only_the_oldest_letters_a_limit_allows() -> None:
    every = Tally("orders.dlq.parked")
    for offset, (destination, error) in enumerate([("orders", ""), ("payments", ""), ("orders.dlq.parked", "boom"), (None, ""), ("orders", "")]):
        every.add(1000 + offset, 0, offset, destination, error)
    every.close()
    assert (every.total, every.targets, every.parked, every.reasons, every.unrouted, every.cut) == \
        (5, {"orders": 2, "payments": 1}, 1, {"boom": 1}, 1, False)
    oldest = Tally("orders.dlq.parked", limit=3)
    letters = [(50, 0, 0, "orders"), (10, 1, 0, "payments"), (30, 0, 1, "orders"), (20, 1, 1, "orders.dlq.parked"), (40, 1, 2, "orders")]
    for timestamp, partition, offset, destination in letters:
        oldest.add(timestamp, partition, offset, destination, "boom" if destination.endswith("parked") else "")
    oldest.close()
    assert (oldest.total, oldest.targets, oldest.parked, oldest.cut, oldest.last) == (3, {"payments": 1, "orders": 1}, 1, True, {0: 1, 1: 1})
    exact = Tally("p", limit=2)
    exact.add(1, 0, 0, "t", "")
    exact.close()
    assert (exact.total, exact.cut) == (1, False)


def test_each_replay_has_a_group_of_its_own_even_when_two_databases_number_it_alike() -> None:
    from bot.kafka.operations import group_of, replay_group

    first, second = replay_group(1), replay_group(1)
    assert first != second and first.startswith("changeops-replay-1-")  # two databases' replay #1 would fence each other
    assert group_of(1, {"group": first}) == first and group_of(7, {}) == "changeops-replay-7"  # planned before groups were kept
