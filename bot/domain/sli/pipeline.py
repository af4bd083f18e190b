"""A pipeline as the catalog declares it, and the thresholds of its SLIs after the catalog's overrides.

Defaults (seed 004, section 7): source lag warns above 60 s for 1 min and pages above 60 s for 5 min;
freshness warns at 70% of the SLA and pages at 100%; commit success warns below 0.99 and pages below
0.95; schema errors warn above 0.1% and page above 1%; the DLQ warns when it has grown for 5 minutes
and pages when it is above 1,000 and growing; checkpoints warn above the checkpoint interval and page
above five times it; sink commit latency (p99) warns above 60 s and pages above 300 s; the backlog of a
running backfill or replay is shown, never alerted on. Beyond the seed, the bot derives a ninth from its own polls:
retention headroom, the time until the topic's retention deletes records the group has not read (a forecast at
the current rate, 0 once it has), warning within 24 hours and paging within 3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import StrEnum
from typing import Any

from bot.domain.dead_letters import MAX_REPLAYS
from bot.domain.sli.retention import duration_text


class Sli(StrEnum):
    """The eight pipeline SLIs of the seed, the retention headroom the bot forecasts, and what Flink says of a job: restarts,
    checkpoint failures, backpressure, pending records."""

    SOURCE_LAG = "source_lag"
    FRESHNESS = "freshness"
    COMMIT_SUCCESS_RATE = "commit_success_rate"
    SCHEMA_ERROR_RATE = "schema_error_rate"
    DLQ_VOLUME = "dlq_volume"
    BACKLOG = "backlog"
    CHECKPOINT_DURATION = "checkpoint_duration"
    SINK_COMMIT_LATENCY = "sink_commit_latency"
    RETENTION_HEADROOM = "retention_headroom"
    RESTARTS = "restarts"  # a Flink job's failures (restarts) in the last ten minutes, read from Flink itself
    CHECKPOINT_FAILURES = "checkpoint_failures"  # a Flink job's failed checkpoints in the last ten minutes (not while it deploys)
    BACKPRESSURE = "backpressure"  # a Flink job's worst vertex: 0 ok, 0.5 low, 1 high
    PENDING_RECORDS = "pending_records"  # what a Flink job's sources have still to read (shown, never alerted on)


MANDATORY = (Sli.SOURCE_LAG, Sli.COMMIT_SUCCESS_RATE, Sli.SCHEMA_ERROR_RATE, Sli.DLQ_VOLUME)  # not production-ready without them
POLLED = {Sli.SOURCE_LAG: "source", Sli.DLQ_VOLUME: "dlq", Sli.RETENTION_HEADROOM: "source"}  # SLIs the bot measures itself when the pipeline names what to poll
TITLES = {
    Sli.SOURCE_LAG: "Source lag", Sli.FRESHNESS: "End-to-end freshness", Sli.COMMIT_SUCCESS_RATE: "Commit success rate",
    Sli.SCHEMA_ERROR_RATE: "Schema error rate", Sli.DLQ_VOLUME: "DLQ volume", Sli.BACKLOG: "Backfill/replay backlog",
    Sli.CHECKPOINT_DURATION: "Checkpoint duration", Sli.SINK_COMMIT_LATENCY: "Sink commit latency (p99)",
    Sli.RETENTION_HEADROOM: "Retention headroom", Sli.RESTARTS: "Job restarts (10 min)",
    Sli.BACKPRESSURE: "Backpressure", Sli.PENDING_RECORDS: "Pending records (sources)", Sli.CHECKPOINT_FAILURES: "Checkpoint failures (10 min)",
}
UNITS = {Sli.SOURCE_LAG: "s", Sli.FRESHNESS: "s", Sli.COMMIT_SUCCESS_RATE: "ratio", Sli.SCHEMA_ERROR_RATE: "ratio",
         Sli.DLQ_VOLUME: "messages", Sli.BACKLOG: "messages", Sli.CHECKPOINT_DURATION: "s", Sli.SINK_COMMIT_LATENCY: "s",
         Sli.RETENTION_HEADROOM: "s", Sli.RESTARTS: "restarts", Sli.BACKPRESSURE: "level", Sli.CHECKPOINT_FAILURES: "failures",
         Sli.PENDING_RECORDS: "messages"}


class PipelineError(ValueError):
    """A pipeline declaration or an override that cannot be used; the message says why."""


class Mode(StrEnum):
    """How a value breaches: above a threshold, below one, or by growing."""

    ABOVE = "above"
    BELOW = "below"
    GROWING = "growing"  # warn: grew over the last ``GROWTH_WINDOW``; page: grew and is above ``page``
    NEVER = "never"      # shown, never alerted on


GROWTH_WINDOW = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class Rule:
    """One SLI's thresholds for one pipeline: breached beyond ``warn``/``page`` for ``warn_for``/``page_for``;
    healthy again once beyond ``clear`` (the hysteresis band lies between) for ``clear_for``."""

    sli: Sli
    mode: Mode
    warn: float | None = None
    page: float | None = None
    warn_for: timedelta = timedelta(0)
    page_for: timedelta = timedelta(0)
    clear: float | None = None
    clear_for: timedelta = timedelta(minutes=1)
    repeat: timedelta = timedelta(hours=1)  # reminder interval while firing and unacknowledged
    enabled: bool = True
    alerting: bool = field(init=False)  # whether this rule can fire at all
    calm: float | None = field(init=False)  # values up to it (ABOVE) or from it (BELOW) breach nothing and are clear; None: growth

    def __post_init__(self) -> None:
        object.__setattr__(self, "alerting", self.enabled and self.mode is not Mode.NEVER and (self.warn is not None or self.page is not None))
        bounds = [x for x in (self.warn, self.page, self._clear()) if x is not None]
        object.__setattr__(self, "calm", min(bounds) if self.mode is Mode.ABOVE else max(bounds) if self.mode is Mode.BELOW else None)

    def judge(self, value: float, growth: float | None) -> tuple[bool, bool, bool]:
        """``(beyond warn, beyond page, clear)`` for one value (``growth`` for GROWING rules, None when unknown)."""
        if self.mode is Mode.ABOVE:
            return (self.warn is not None and value > self.warn, self.page is not None and value > self.page,
                    value <= self._clear())
        if self.mode is Mode.BELOW:
            return (self.warn is not None and value < self.warn, self.page is not None and value < self.page,
                    value >= self._clear())
        if self.mode is Mode.GROWING:
            if growth is None:
                return False, False, False
            growing = growth > (self.warn or 0.0)
            return growing, growing and self.page is not None and value > self.page, growth <= (self.clear or 0.0)
        return False, False, True

    def _clear(self) -> float:
        if self.clear is not None:
            return self.clear
        bound = self.warn if self.warn is not None else self.page
        return bound if bound is not None else math.inf

    def threshold_text(self) -> str:
        """``> 60 s (page > 60 s for 5m)``: the thresholds as people read them."""
        if not self.alerting:
            return "never alerts" if self.enabled else "disabled"
        unit = UNITS[self.sli]
        if self.mode is Mode.GROWING:
            page = f"; page above {_number(self.page, unit)} and growing" if self.page is not None else ""
            return f"growing for {_span(self.warn_for)}{page}"
        sign = ">" if self.mode is Mode.ABOVE else "<"
        parts = []
        if self.warn is not None:
            parts.append(f"warn {sign} {_number(self.warn, unit)}{' for ' + _span(self.warn_for) if self.warn_for else ''}")
        if self.page is not None:
            parts.append(f"page {sign} {_number(self.page, unit)}{' for ' + _span(self.page_for) if self.page_for else ''}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Pipeline:
    """A streaming pipeline: who owns it, where it posts, what it reads and writes, and its SLI overrides."""

    name: str
    owner: str
    channel: str | None = None
    topics: tuple[str, ...] = ()
    group: str | None = None
    dlq: str | None = None
    sink: str | None = None
    sla: timedelta | None = None
    checkpoint_interval: timedelta | None = None
    interval: timedelta = timedelta(minutes=1)  # how often samples are expected; three missed intervals are "no data"
    jobs: tuple[str, ...] = ()
    reports: tuple[Sli, ...] = ()  # SLIs the pipeline publishes itself (metrics topic or HTTP)
    overrides: dict[str, Any] = field(default_factory=dict)
    dlq_header: str | None = None  # the header its dead-letter writer puts the original topic in, when not Connect's or Spring's
    max_replays: int = MAX_REPLAYS  # a dead letter replayed this often already is parked, not replayed again
    auto_pause: bool = False  # its Flink job is paused by savepoint when the schema error rate or the DLQ pages (opt-in)

    def rules(self) -> dict[Sli, Rule]:
        """Every SLI's rule: defaults, then this pipeline's overrides."""
        rules = default_rules(self.sla, self.checkpoint_interval)
        for name, override in self.overrides.items():
            rules[Sli(name)] = apply_override(rules[Sli(name)], override)
        return rules

    def sources(self) -> dict[Sli, str]:
        """Where each SLI's samples come from: the bot's pollers or the pipeline's own reports."""
        found = {sli: "reported by the pipeline" for sli in self.reports}
        if self.topics and self.group:
            found.setdefault(Sli.SOURCE_LAG, f"polled: group {self.group} on {', '.join(self.topics)}")
            found.setdefault(Sli.RETENTION_HEADROOM, f"forecast: group {self.group} against the retention of {', '.join(self.topics)}")
        if self.dlq:
            found.setdefault(Sli.DLQ_VOLUME, f"polled: end offsets of {self.dlq}")
        return found

    def missing(self) -> list[Sli]:
        """Mandatory SLIs nothing measures: the pipeline is not production-ready while any are listed."""
        sources = self.sources()
        return [sli for sli in MANDATORY if sli not in sources]

    def as_json(self) -> dict[str, Any]:
        """For storage."""
        return {"name": self.name, "owner": self.owner, "channel": self.channel, "topics": list(self.topics), "group": self.group,
                "dlq": self.dlq, "sink": self.sink, "sla": _seconds(self.sla), "checkpoint_interval": _seconds(self.checkpoint_interval),
                "interval": self.interval.total_seconds(), "jobs": list(self.jobs), "reports": [s.value for s in self.reports],
                "overrides": self.overrides, "dlq_header": self.dlq_header, "max_replays": self.max_replays, "auto_pause": self.auto_pause}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Pipeline:
        """From storage."""
        return cls(data["name"], data["owner"], data.get("channel"), tuple(data.get("topics") or ()), data.get("group"), data.get("dlq"),
                   data.get("sink"), _delta(data.get("sla")), _delta(data.get("checkpoint_interval")),
                   _delta(data.get("interval")) or timedelta(minutes=1), tuple(data.get("jobs") or ()),
                   tuple(Sli(s) for s in data.get("reports") or ()), dict(data.get("overrides") or {}), data.get("dlq_header"),
                   int(data.get("max_replays", MAX_REPLAYS)), bool(data.get("auto_pause")))


def default_rules(sla: timedelta | None, checkpoint: timedelta | None) -> dict[Sli, Rule]:
    """The defaults, for a pipeline with this freshness SLA and checkpoint interval (either may be unknown)."""
    sla_s = sla.total_seconds() if sla else None
    cp_s = checkpoint.total_seconds() if checkpoint else None
    return {
        Sli.SOURCE_LAG: Rule(Sli.SOURCE_LAG, Mode.ABOVE, 60, 60, timedelta(minutes=1), timedelta(minutes=5), 45),
        Sli.FRESHNESS: Rule(Sli.FRESHNESS, Mode.ABOVE, 0.7 * sla_s if sla_s else None, sla_s, clear=0.6 * sla_s if sla_s else None),
        Sli.COMMIT_SUCCESS_RATE: Rule(Sli.COMMIT_SUCCESS_RATE, Mode.BELOW, 0.99, 0.95, clear=0.995),
        Sli.SCHEMA_ERROR_RATE: Rule(Sli.SCHEMA_ERROR_RATE, Mode.ABOVE, 0.001, 0.01, clear=0.0005),
        Sli.DLQ_VOLUME: Rule(Sli.DLQ_VOLUME, Mode.GROWING, 0, 1000, timedelta(minutes=5), timedelta(minutes=5), 0, timedelta(minutes=5)),
        Sli.BACKLOG: Rule(Sli.BACKLOG, Mode.NEVER),
        Sli.CHECKPOINT_DURATION: Rule(Sli.CHECKPOINT_DURATION, Mode.ABOVE, cp_s, 5 * cp_s if cp_s else None, clear=0.8 * cp_s if cp_s else None),
        Sli.SINK_COMMIT_LATENCY: Rule(Sli.SINK_COMMIT_LATENCY, Mode.ABOVE, 60, 300, clear=45),
        Sli.RESTARTS: Rule(Sli.RESTARTS, Mode.ABOVE, 0, 2, clear=0),  # a restart warns; three in ten minutes are a loop: a page
        Sli.CHECKPOINT_FAILURES: Rule(Sli.CHECKPOINT_FAILURES, Mode.ABOVE, 0, 2, clear=0),  # one warns; three in ten minutes page
        Sli.BACKPRESSURE: Rule(Sli.BACKPRESSURE, Mode.ABOVE, 0.5, None, timedelta(minutes=5), clear=0.5),  # high for five minutes warns
        Sli.PENDING_RECORDS: Rule(Sli.PENDING_RECORDS, Mode.NEVER),
        Sli.RETENTION_HEADROOM: Rule(Sli.RETENTION_HEADROOM, Mode.BELOW, 86400, 10800, clear=108000, clear_for=timedelta(minutes=5)),
    }


OVERRIDE_KEYS = ("warn", "page", "clear", "for", "warn_for", "page_for", "clear_for", "repeat")


def apply_override(rule: Rule, override: Any) -> Rule:
    """``disabled``, or a mapping of warn, page, clear (numbers), for (both durations), warn_for, page_for,
    clear_for, repeat (durations such as 90s, 5m, 1h); PipelineError for anything else."""
    if override == "disabled" or override is False:
        if rule.sli in MANDATORY:
            raise PipelineError(f"{rule.sli} is mandatory and cannot be disabled (a pipeline without it is not production-ready)")
        return replace(rule, enabled=False)
    if not isinstance(override, dict):
        raise PipelineError(f"expected `disabled` or a mapping of {', '.join(OVERRIDE_KEYS)}")
    unknown = sorted(set(override) - set(OVERRIDE_KEYS))
    if unknown:
        raise PipelineError(f"unknown setting {unknown[0]!r} (expected {', '.join(OVERRIDE_KEYS)})")
    if rule.mode is Mode.NEVER:
        raise PipelineError(f"{rule.sli} shows progress and never alerts; it has no thresholds")
    changes: dict[str, Any] = {}
    for key in ("warn", "page", "clear"):
        if key in override:
            value = override[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise PipelineError(f"{key}: expected a number, not {value!r}")
            changes[key] = float(value)
    for key in ("warn_for", "page_for", "clear_for", "repeat"):
        if key in override or (key in ("warn_for", "page_for") and "for" in override):
            changes[key] = span(override.get(key, override.get("for")), key)
    if changes.get("repeat") == timedelta(0):
        raise PipelineError("repeat: must be longer than 0")
    updated = replace(rule, **changes)
    if updated.warn is None and updated.page is None:
        raise PipelineError(f"{rule.sli} needs a warn or a page threshold (its default depends on an SLA or interval the pipeline does not give)")
    return updated


def span(value: Any, what: str = "duration") -> timedelta:
    """``90s``, ``5m``, ``1h``, ``1h30m``, ``2d`` or a number of seconds; PipelineError otherwise."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 and math.isfinite(value):
        return timedelta(seconds=value)
    text = str(value).strip().lower()
    total, number = 0.0, ""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    for char in text:
        if char.isdigit() or char == ".":
            number += char
        elif char in units and number:
            try:
                total += float(number) * units[char]
            except ValueError:
                raise PipelineError(f"{what}: {value!r} is not a duration such as 90s, 5m or 1h30m") from None
            number = ""
        else:
            raise PipelineError(f"{what}: {value!r} is not a duration such as 90s, 5m or 1h30m")
    if number or not text:
        raise PipelineError(f"{what}: {value!r} is not a duration such as 90s, 5m or 1h30m")
    return timedelta(seconds=total)


def _seconds(value: timedelta | None) -> float | None:
    return value.total_seconds() if value is not None else None


def _delta(value: Any) -> timedelta | None:
    return timedelta(seconds=float(value)) if value is not None else None


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "?"
    if unit == "s" and value >= 3600:
        return duration_text(value)
    if unit == "ratio":
        return f"{value * 100:g}%"
    return f"{value:g} {unit}"


def _span(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds % 3600 == 0 and seconds:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0 and seconds:
        return f"{seconds // 60}m"
    return f"{seconds}s"
