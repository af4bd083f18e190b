"""The fast reading of PipelineSample records agrees with fastavro: whatever it reads, fastavro reads the same way
(the same pipeline, SLI, value and time, every byte used); whatever it does not, it leaves to fastavro. And a healthy
series' samples applied at once leave the state one by one would."""

from __future__ import annotations

import io
import math
import struct
from datetime import UTC, datetime, timedelta
from typing import Any

from fastavro import parse_schema, schemaless_reader, schemaless_writer
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bot.domain.sli.evaluator import State, observe, quietly
from bot.domain.sli.pipeline import Sli, default_rules
from bot.domain.sli.samples import PIPELINE_SAMPLE_SCHEMA, micros
from bot.domain.sli.wire import Reader

SCHEMA = parse_schema(PIPELINE_SAMPLE_SCHEMA)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
RULES = default_rules(timedelta(minutes=10), timedelta(seconds=30))

names = st.text(max_size=80)
records = st.fixed_dictionaries({
    "pipeline": names, "sli": st.one_of(st.sampled_from([s.value for s in Sli]), names),
    "value": st.floats(allow_nan=True, allow_infinity=True),
    "time": st.one_of(st.integers(min_value=-62_135_596_800_000, max_value=253_402_300_799_999),
                      st.integers(min_value=-(2 ** 41), max_value=2 ** 41)),  # six varint bytes, as times of these years
    "labels": st.one_of(st.just({}), st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))})


def encode(record: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    schemaless_writer(buffer, SCHEMA, {**record, "time": EPOCH + timedelta(milliseconds=record["time"])})
    return buffer.getvalue()


def fastavro(data: bytes) -> Any:
    buffer = io.BytesIO(data)
    try:
        record = schemaless_reader(buffer, SCHEMA, None)
    except Exception:
        return None
    return record if buffer.tell() == len(data) else None


def same(read: tuple[tuple[str, str], float, int], record: dict[str, Any]) -> bool:
    (pipeline, sli), value, ms = read
    bits = struct.pack("<d", value) == struct.pack("<d", record["value"]) or (math.isnan(value) and math.isnan(record["value"]))
    return pipeline == record["pipeline"] and sli == record["sli"] and bits and record["labels"] == {} and \
        EPOCH + timedelta(milliseconds=ms) == record["time"]


@settings(max_examples=400, deadline=None)
@given(record=records)
def test_what_it_reads_of_a_written_record_is_what_fastavro_reads(record: dict[str, Any]) -> None:
    data = encode(record)
    read = Reader().read(data)
    if read is None:
        assert record["labels"] or len(record["pipeline"].encode()) >= 64 or len(record["sli"].encode()) >= 64
        return
    decoded = fastavro(data)
    assert decoded is not None and same(read, decoded)
    again = reader_knowing(data).read(data)  # read again, once the names are known
    assert again is not None and same(again, decoded)


def reader_knowing(data: bytes) -> Reader:
    """A reader that has read ``data`` once (and so knows its names, when it could read them)."""
    reader = Reader()
    reader.read(data)
    return reader


def tail_of(double: bytes, varint_bytes: int, low: list[int], rest: list[int]) -> bytes:
    """Fifteen bytes after the names: a double, a varint of ``varint_bytes`` bytes, then ``rest``."""
    varint = [bits | (0x80 if i < varint_bytes - 1 else 0) for i, bits in enumerate(low[:varint_bytes])]
    return (double + bytes(varint) + bytes(rest))[:15]


tails = st.builds(tail_of, st.binary(min_size=8, max_size=8), st.integers(1, 7), st.lists(st.sampled_from([0, 1, 0x7F]), min_size=7, max_size=7),
                  st.lists(st.sampled_from([0, 1, 0x80]), min_size=7, max_size=7))


@settings(max_examples=600, deadline=None)
@given(record=records, tail=st.one_of(tails, st.binary(min_size=15, max_size=15)))
@example(record={"pipeline": "", "sli": "source_lag", "value": 0.0, "time": 2 ** 41, "labels": {}},  # the tail makes a time of seven
         tail=b"\x00" * 7 + b"\x80" * 6 + b"\x7f\x00")  # varint bytes: the year 10818, past what a timestamp-millis is read as
def test_known_names_followed_by_any_bytes_are_read_only_as_fastavro_reads_them(record: dict[str, Any], tail: bytes) -> None:
    good = encode({**record, "labels": {}})
    reader = reader_knowing(good)
    data = good[:max(0, len(good) - 15)] + tail
    read = reader.read(data)
    if read is not None:
        decoded = fastavro(data)
        assert decoded is not None and same(read, decoded)


@settings(max_examples=600, deadline=None)
@given(data=st.one_of(st.binary(max_size=40), records.map(encode).flatmap(
    lambda good: st.tuples(st.integers(0, len(good)), st.binary(max_size=3)).map(lambda cut: good[:cut[0]] + cut[1]))))
def test_on_any_bytes_it_reads_only_what_fastavro_reads_the_same(data: bytes) -> None:
    reader = Reader()
    read = reader.read(data)
    if read is not None:
        decoded = fastavro(data)
        assert decoded is not None and same(read, decoded)
    again = reader.read(data)  # its memory of names changes nothing (a NaN compared by its bits: NaN != NaN)
    assert again == read or (again is not None and read is not None and again[0::2] == read[0::2]
                             and struct.pack("<d", again[1]) == struct.pack("<d", read[1]))


def test_the_common_record_is_read_and_names_are_remembered() -> None:
    reader = Reader()
    record = {"pipeline": "enrich-orders", "sli": "source_lag", "value": 3.5, "time": 1_796_000_000_123, "labels": {}}
    assert reader.read(encode(record)) == (("enrich-orders", "source_lag"), 3.5, 1_796_000_000_123)
    assert reader.read(encode({**record, "value": 4.0})) == (("enrich-orders", "source_lag"), 4.0, 1_796_000_000_123)
    assert reader.read(encode({**record, "labels": {"host": "tm-1"}})) is None  # labels: the general decoder's


@settings(max_examples=200, deadline=None)
@given(sli=st.sampled_from([Sli.SOURCE_LAG, Sli.COMMIT_SUCCESS_RATE, Sli.FRESHNESS, Sli.RETENTION_HEADROOM]),
       values=st.lists(st.floats(min_value=0, max_value=200_000), min_size=1, max_size=12),
       gaps=st.lists(st.integers(0, 90_000_000), min_size=12, max_size=12), before=st.integers(0, 3))
def test_a_batch_applied_at_once_leaves_the_state_one_by_one_would(sli: Sli, values: list[float], gaps: list[int], before: int) -> None:
    rule = RULES[sli]
    start = datetime(2026, 12, 3, tzinfo=UTC)
    one, many = State(), State()
    for index in range(before):  # some history first (maybe a breach), the same for both
        for state in (one, many):
            observe(state, rule, start + timedelta(seconds=index), values[0] * 3, pipeline="p", sli=sli)
    times, at = [], start + timedelta(seconds=10)
    for gap in gaps[:len(values)]:
        at += timedelta(microseconds=gap)
        times.append(at)
    arrived = at + timedelta(seconds=1)
    events = [e for t, v in zip(times, values, strict=True) for e in observe(one, rule, t, v, now=arrived, pipeline="p", sli=sli)]
    untouched = many.as_json()
    if quietly(many, rule, [micros(t) for t in times], values, arrived):
        assert events == []
        assert many.as_json() == one.as_json()
    else:
        assert many.as_json() == untouched  # the caller applies them one by one


def test_healthy_samples_go_at_once_and_a_breach_or_a_late_one_does_not() -> None:
    rule, start = RULES[Sli.SOURCE_LAG], datetime(2026, 12, 3, tzinfo=UTC)
    state = State()
    times = [micros(start + timedelta(seconds=s)) for s in range(5)]
    assert quietly(state, rule, times, [1.0, 2.0, 3.0, 2.0, 1.0], start)
    assert state.last_value == 1.0 and state.trend == [1.0, 2.0, 3.0, 2.0, 1.0] and state.clear_since == start
    assert not quietly(state, rule, [micros(start + timedelta(seconds=9))], [61.0], start)  # beyond the warn threshold
    assert not quietly(state, rule, [micros(start + timedelta(seconds=2))], [1.0], start)  # older than the newest seen
