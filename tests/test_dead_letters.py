"""Looking before replaying, pure: which error a dead letter carries (Kafka Connect's headers, Spring Kafka's, or a
named one), how they group, and the arguments of a peek."""

from __future__ import annotations

import pytest

from bot.domain.dead_letters import (
    NO_ERROR,
    Letter,
    PeekRequest,
    Route,
    error_of,
    group_by_error,
    original_partition,
    original_topic,
    peek_request,
    replays,
    shown,
)
from bot.domain.lineage.catalog import read_catalog
from bot.domain.ops import OpsError
from bot.domain.text import inert

CONNECT = [("__connect.errors.topic", b"orders"), ("__connect.errors.exception.class.name", b"org.apache.kafka.connect.errors.DataException"),
           ("__connect.errors.exception.message", b"Converting byte[] to Kafka Connect data failed\n  due to serialization error")]
SPRING = [("kafka_dlt-original-topic", b"payments"), ("kafka_dlt-exception-fqcn", b"java.lang.IllegalStateException"),
          ("kafka_dlt-exception-message", "price is negative")]


def test_the_error_comes_from_connect_or_spring_headers_or_a_named_one() -> None:
    assert error_of(CONNECT) == ("org.apache.kafka.connect.errors.DataException: Converting byte[] to Kafka Connect data failed due to "
                                 "serialization error")  # one line
    assert error_of(SPRING) == "java.lang.IllegalStateException: price is negative"
    assert error_of([("kafka_dlt-exception-message", b"only a message")]) == "only a message"
    assert error_of([("reason", b"timeout")], "reason") == "timeout"
    assert error_of(CONNECT, "reason") == NO_ERROR  # the header named is the one read
    assert error_of([("x", None)]) == NO_ERROR and error_of([]) == NO_ERROR
    assert error_of([("kafka_dlt-exception-message", b"\xff" + b"x" * 1000)]).endswith("…")  # not UTF-8, long: cut, readable
    assert original_topic(CONNECT) == "orders" and original_topic(SPRING) == "payments" and original_topic([]) is None


def test_bytes_a_terminal_would_obey_or_that_are_not_text_are_shown_as_hex_and_name_no_topic() -> None:
    assert shown(b"orders\n") == "orders\n" and shown("prix négatif") == "prix négatif" and shown(None) == ""
    assert shown(b"\xff\xfe") == "0xfffe" and shown("\x1b[2Jgone") == "0x1b5b324a676f6e65" and shown(b"\x00" * 70) == "0x" + "00" * 64 + "…"
    assert error_of([("kafka_dlt-exception-message", b"bad \x1b]0;owned\x07")]) == "0x626164201b5d303b6f776e656407"
    for value in (b"\xff\xfe", "orders\x1b", b"orders\x00"):  # a space no topic name has: refused, never routed to a topic "0x…"
        assert original_topic([("__connect.errors.topic", value)]).endswith(" (not text)")  # type: ignore[union-attr]
    assert original_topic([("__connect.errors.topic", b"0xfffe")]) == "0xfffe"  # a real topic of that name is still one
    assert shown(b"a,b\r\n") == "a,b\r\n" and shown(b"safe\rEVIL") == "0x736166650d4556494c"  # a lone CR would overwrite the line
    assert inert("a,b\r\nc\rd\x1b[2J\x9b") == "a,b\r\nc\\u000dd\\u001b[2J\\u009b"  # what the CLI prints: CSV's line ends kept


def test_letters_group_by_error_the_most_frequent_first_with_their_topics_span_and_newest_examples() -> None:
    letters = [Letter(0, i, 1000 + i, CONNECT, f"connect {i}") for i in range(5)]
    letters += [Letter(1, i, 2000 + i, SPRING, f"spring {i}") for i in range(3)]
    letters += [Letter(2, 0, 0, [], "bare")]
    groups = group_by_error(letters)
    assert [(g.error.split(":")[0], g.count) for g in groups] == [
        ("org.apache.kafka.connect.errors.DataException", 5), ("java.lang.IllegalStateException", 3), (NO_ERROR, 1)]
    connect = groups[0]
    assert connect.topics == {"orders": 5} and (connect.first, connect.last) == (1000, 1004)
    assert [e.text for e in connect.examples] == ["connect 4", "connect 3"]  # the newest
    assert groups[1].topics == {"payments": 3} and groups[2].topics == {}
    assert connect.as_json()["examples"][0] == {"partition": 0, "offset": 4, "text": "connect 4"}
    assert group_by_error([]) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("orders-dlq", PeekRequest("orders-dlq")),
    ("orders-dlq 50", PeekRequest("orders-dlq", 50)),
    ("orders-dlq --peek 7", PeekRequest("orders-dlq", 7)),
    ("orders-dlq --peek", PeekRequest("orders-dlq")),
    ("orders-dlq --peek=3 --error-header reason", PeekRequest("orders-dlq", 3, "reason")),
    ("orders-dlq 500 --error-header=x-error", PeekRequest("orders-dlq", 500, "x-error")),
])
def test_peek_arguments(text: str, expected: PeekRequest) -> None:
    assert peek_request(text.split()) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("", "give the DLQ topic"),
    ("a b c", "give the DLQ topic"),
    ("orders-dlq 0", "not a number of dead letters from 1 to 500"),
    ("orders-dlq 501", "not a number of dead letters"),
    ("orders-dlq ten", "not a number of dead letters"),
    ("orders-dlq --peek -3", "not a number"),
    ("'bad topic!'", "is not a topic name"),
    ("orders-dlq --error-header", "needs the name of the header"),
    ("orders-dlq --to x", "--to is not an option of peek"),
])
def test_peek_refusals_say_why(text: str, message: str) -> None:
    with pytest.raises(OpsError, match=message):
        peek_request(text.split() if "'" not in text else ["bad topic!"])


def test_a_letter_goes_to_its_target_or_its_original_topic_and_is_parked_once_replayed_too_often() -> None:
    counted = [*SPRING, ("changeops-replay-count", b"2")]
    assert replays(SPRING) == 0 and replays(counted) == 2
    assert replays([("changeops-replay-count", b"1"), ("changeops-replay-count", b"3")]) == 3  # the last one written counts
    assert replays([("changeops-replay-count", b"-4")]) == 0 and replays([("changeops-replay-count", b"x")]) == 0
    assert replays([("changeops-replay-count", b"99999999999")]) == 0 and replays([("changeops-replay-count", None)]) == 0
    back = Route("orders.dlq", None)
    assert back.parked == "orders.dlq.parked" and back.max_replays == 3
    assert back.of(CONNECT) == ("orders", 0) and back.of(counted) == ("payments", 2) and back.of([("error", b"x")]) == (None, 0)
    assert back.of([*CONNECT, ("changeops-replay-count", b"3")]) == ("orders.dlq.parked", 3)  # dead-lettered a fourth time
    assert Route("orders.dlq", "orders.replay", 5).of([*CONNECT, ("changeops-replay-count", b"4")]) == ("orders.replay", 4)
    assert Route("orders.dlq", "orders.replay", 1).of([("changeops-replay-count", b"1")]) == ("orders.dlq.parked", 1)
    named = Route("orders.dlq", None, header="x-source-topic")
    assert named.of([*SPRING, ("x-source-topic", b" refunds ")])[0] == "refunds"  # the catalog's header first, trimmed
    assert named.of([*SPRING, ("x-source-topic", b"")])[0] == "payments"  # empty: the standard ones
    assert Route.from_json("orders.dlq", named.as_json()) == named


def test_the_original_partition_is_read_as_each_writer_encodes_it() -> None:
    assert original_partition([("__connect.errors.partition", b"4")]) == 4
    assert original_partition([("kafka_dlt-original-partition", (7).to_bytes(4, "big"))]) == 7
    assert original_partition([("kafka_dlt-original-partition", b"7")]) is None  # not four bytes
    assert original_partition([("kafka_dlt-original-partition", (-1).to_bytes(4, "big", signed=True))]) is None
    assert original_partition([("__connect.errors.partition", b"x")]) is None and original_partition(CONNECT) is None


def test_a_pipeline_names_its_dlq_with_the_original_topic_header_and_max_replays() -> None:
    def pipeline(dlq: object) -> tuple[object, list[str]]:
        data = {"teams": {"t": {"members": ["U0000ALICE"]}}, "pipelines": [{"name": "p", "owner": "t", "dlq": dlq}]}
        parsed, problems = read_catalog(data, lambda _: None)  # type: ignore[arg-type, return-value]
        return (parsed.pipelines[0] if parsed.pipelines else None), [str(p) for p in problems]

    plain, problems = pipeline("orders.dlq")
    assert problems == [] and (plain.dlq, plain.dlq_header, plain.max_replays) == ("orders.dlq", None, 3)  # type: ignore[union-attr]
    full, problems = pipeline({"topic": "orders.dlq", "original_topic_header": "x-source-topic", "max_replays": 5})
    assert problems == [] and (full.dlq, full.dlq_header, full.max_replays) == ("orders.dlq", "x-source-topic", 5)  # type: ignore[union-attr]
    assert type(full).from_json(full.as_json()) == full  # type: ignore[union-attr]
    for dlq, message in (({"topic": "orders.dlq", "max_replays": 0}, "max_replays"), ({"topic": "orders.dlq", "max_replays": True}, "max_replays"),
                         ({"topic": "a b"}, "topic name"), ({"topic": "orders.dlq", "replays": 3}, "unknown setting"),
                         ({"topic": "orders.dlq", "original_topic_header": ""}, "original_topic_header"), (["orders.dlq"], "expected the DLQ")):
        _, problems = pipeline(dlq)
        assert any(message in p for p in problems), (dlq, problems)
