"""A sample of one SLI of one pipeline at one time, and the reasons one is refused."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.domain.sli.pipeline import Sli

PIPELINE_SAMPLE_SCHEMA: dict[str, Any] = {
    "type": "record", "name": "PipelineSample", "namespace": "changeops.metrics",
    "fields": [
        {"name": "pipeline", "type": "string"},
        {"name": "sli", "type": "string"},
        {"name": "value", "type": "double"},
        {"name": "time", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "labels", "type": {"type": "map", "values": "string"}, "default": {}},
    ],
}
MAX_FUTURE = timedelta(minutes=5)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# the times a timestamp-millis can be read as (years 1 to 9999, a datetime's range): Avro's decoders refuse the others
EARLIEST_MS, LATEST_MS = ((moment.replace(tzinfo=UTC) - EPOCH) // timedelta(milliseconds=1) for moment in (datetime.min, datetime.max))
EARLIEST_US = EARLIEST_MS * 1000


class SampleError(ValueError):
    """Why a sample was refused; ``kind`` counts refusals by kind (``unknown_pipeline``, ``bad_value``...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Sample:
    """One measurement."""

    pipeline: str
    sli: Sli
    value: float
    time: datetime
    labels: dict[str, str] = field(default_factory=dict)


def checked(pipeline: Any, sli: Any, value: Any, time: Any, labels: Any, known: frozenset[str] | None, latest: datetime) -> Sample:
    """A sample from loose parts (decoded Avro or JSON), or SampleError saying what is wrong with it (``known``: the
    pipelines of the catalog, or None to leave that check to the evaluator; ``latest``: the newest time believed,
    ``MAX_FUTURE`` after now)."""
    if not isinstance(pipeline, str) or not pipeline or (known is not None and pipeline not in known):
        raise SampleError("unknown_pipeline", f"unknown pipeline {str(pipeline)[:100]!r} (not in the catalog)")
    kind = _SLIS.get(sli) if isinstance(sli, str) else None
    if kind is None:
        raise SampleError("unknown_sli", f"unknown SLI {str(sli)[:50]!r} (one of {', '.join(Sli)})")
    if value.__class__ is not float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SampleError("bad_value", f"the value must be a finite number, not {str(value)[:30]}")
        value = float(value)
    if not math.isfinite(value):
        raise SampleError("bad_value", f"the value must be a finite number, not {value}")
    low, high = RANGES[kind]
    if not low <= value <= high:
        raise SampleError("bad_value", f"{kind} {'is a ratio from 0 to 1' if high == 1 else 'is never negative'}, not {value:g}")
    if isinstance(time, str):
        try:
            time = datetime.fromisoformat(time.replace("Z", "+00:00"))
        except ValueError:
            raise SampleError("bad_time", f"{time[:40]!r} is not an ISO 8601 time") from None
    if not isinstance(time, datetime) or time.tzinfo is None:
        raise SampleError("bad_time", "the time needs a zone offset (2026-12-02T10:00:00Z)")
    if time > latest:
        raise SampleError("bad_time", f"{time.isoformat()} is in the future")
    if time.tzinfo is not UTC:
        time = time.astimezone(UTC)
    if labels:
        if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            raise SampleError("bad_labels", "labels must map strings to strings")
    elif labels is not None and not isinstance(labels, dict):
        raise SampleError("bad_labels", "labels must map strings to strings")
    return Sample(pipeline, kind, value, time, labels or {})


@dataclass(slots=True)
class Series:
    """The samples of one series (pipeline, SLI) in a batch, as columns: times in microseconds since the epoch, values, and
    each sample's labels (None while none had any)."""

    times: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    labels: list[dict[str, str]] | None = None

    def add(self, time: int, value: float, labels: dict[str, str] | None = None) -> None:
        """One more sample."""
        if labels and self.labels is None:
            self.labels = [{} for _ in self.times]
        self.times.append(time)
        self.values.append(value)
        if self.labels is not None:
            self.labels.append(labels or {})

    def ordered(self) -> Series:
        """Its samples by time (itself when they already are)."""
        times = self.times
        if len(times) < 2 or times == sorted(times):
            return self
        order = sorted(range(len(times)), key=times.__getitem__)
        return Series([times[i] for i in order], [self.values[i] for i in order],
                      [self.labels[i] for i in order] if self.labels is not None else None)


def by_series(samples: Iterable[Sample]) -> dict[tuple[str, str], Series]:
    """Samples as a batch of series."""
    found: dict[tuple[str, str], Series] = {}
    for sample in samples:
        series = found.get((sample.pipeline, sample.sli))
        if series is None:
            series = found[(sample.pipeline, sample.sli)] = Series()
        series.add(micros(sample.time), sample.value, sample.labels)
    return found


def micros(moment: datetime) -> int:
    """Microseconds since the epoch, exactly."""
    return (moment - EPOCH) // timedelta(microseconds=1)


def moment(time: int) -> datetime:
    """The datetime of microseconds since the epoch."""
    return EPOCH + timedelta(microseconds=time)


def latest_believed(now: datetime) -> datetime:
    """The newest sample time accepted at ``now`` (a clock further ahead is wrong, and would hold a series hostage)."""
    return now + MAX_FUTURE


_SLIS = {s.value: s for s in Sli}
RANGES = {sli: (0.0, 1.0) if sli in (Sli.COMMIT_SUCCESS_RATE, Sli.SCHEMA_ERROR_RATE, Sli.BACKPRESSURE)
          else (-sys.float_info.max, sys.float_info.max) if sli in (Sli.SOURCE_LAG, Sli.FRESHNESS, Sli.RETENTION_HEADROOM)
          else (0.0, sys.float_info.max) for sli in Sli}
# The values each SLI can have: ratios from 0 to 1, counts and durations on one clock never negative; a time between two
# clocks may be a little below zero (skew), and headroom below zero is data already gone. A finite bound keeps out infinities.
