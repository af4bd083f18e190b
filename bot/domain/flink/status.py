"""A Flink job as its REST API describes it: state, checkpoints against their interval, restarts, backpressure,
the newest savepoint. Built from the API's own JSON (``/jobs/overview``, ``/jobs/:jid``, ``/jobs/:jid/checkpoints``,
``/jobs/:jid/checkpoints/config``, metrics), rendered as text or JSON; no I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

BACKPRESSURE_ORDER = ("ok", "low", "high")


class FlinkError(ValueError):
    """A request about a Flink job that cannot be served (bad input); the message is for people."""


class FlinkUnavailable(FlinkError):
    """Flink did not answer, or answered with an error."""


class FlinkJobMissing(FlinkError):
    """Flink runs no job of that name."""


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint or savepoint: its id, when it was triggered, how long it took, where it lies."""

    id: int
    at: datetime
    duration: timedelta
    path: str | None = None

    def as_json(self, now: datetime) -> dict[str, Any]:
        """For ``--format json``."""
        return {"id": self.id, "at": self.at.isoformat(), "age_seconds": round((now - self.at).total_seconds(), 1),
                "duration_seconds": round(self.duration.total_seconds(), 3), "path": self.path}


@dataclass(frozen=True)
class JobStatus:
    """What oncall wants to know of one running (or last run) Flink job."""

    name: str
    job_id: str
    state: str
    started: datetime | None
    interval: timedelta | None  # the checkpoint interval (None: checkpointing off)
    completed: int = 0
    failed: int = 0  # failed checkpoints, the one failed trigger at every start left out
    restarts: int = 0
    last: Checkpoint | None = None  # the newest completed checkpoint
    last_failure: str | None = None
    savepoint: Checkpoint | None = None  # the newest savepoint the job took or was restored from
    restored_from: str | None = None
    backpressure: dict[str, str] = field(default_factory=dict)  # vertex name -> ok | low | high
    pending_records: int | None = None  # what the sources have still to read (Kafka: the lag), summed
    exception: str | None = None  # the newest root exception, its first line
    failures: tuple[datetime, ...] = ()  # when the job failed (each a restart), newest first, as far as Flink's history goes
    failed_checkpoints: tuple[datetime, ...] = ()  # when the checkpoints that failed were triggered (not while its tasks deployed)
    at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def worst_backpressure(self) -> str | None:
        """The highest level over the vertices."""
        levels = [v for v in self.backpressure.values() if v in BACKPRESSURE_ORDER]
        return max(levels, key=BACKPRESSURE_ORDER.index) if levels else None

    @property
    def slow_checkpoints(self) -> float | None:
        """The newest checkpoint's duration as a multiple of the interval."""
        if self.last is None or not self.interval:
            return None
        return self.last.duration / self.interval

    def as_json(self) -> dict[str, Any]:
        """``bot flink status --format json``."""
        return {"job": self.name, "job_id": self.job_id, "state": self.state, "taken_at": self.at.isoformat(),
                "started": self.started.isoformat() if self.started else None,
                "checkpoints": {"interval_seconds": self.interval.total_seconds() if self.interval else None,
                                "completed": self.completed, "failed": self.failed,
                                "last": self.last.as_json(self.at) if self.last else None,
                                "duration_over_interval": round(self.slow_checkpoints, 3) if self.slow_checkpoints is not None else None,
                                "last_failure": self.last_failure, "restored_from": self.restored_from},
                "restarts": self.restarts, "backpressure": self.worst_backpressure, "vertices": dict(self.backpressure),
                "pending_records": self.pending_records, "exception": self.exception,
                "savepoint": self.savepoint.as_json(self.at) if self.savepoint else None}

    def lines(self) -> list[str]:
        """Plain lines for the terminal and Slack (the caller escapes for mrkdwn)."""
        out = [f"{self.name}: {self.state} (job {self.job_id}" + (f", started {_ago(self.at - self.started)} ago)" if self.started else ")")]
        if self.interval is None:
            out.append("checkpoints: off (the job keeps no state it could restart from)")
        elif self.last is None:
            out.append(f"checkpoints: none completed yet (every {_span(self.interval)}; {self.failed} failed)")
        else:
            ratio = self.slow_checkpoints or 0.0
            mark = " — slower than the interval" if ratio > 1 else ""
            out.append(f"last checkpoint: #{self.last.id} {_ago(self.at - self.last.at)} ago, took {_span(self.last.duration)} "
                       f"(every {_span(self.interval)}{mark}); {self.completed} completed, {self.failed} failed")
        if self.last_failure:
            out.append(f"last checkpoint failure: {self.last_failure}")
        out.append(f"restarts: {self.restarts}" + (f" — latest exception: {self.exception}" if self.exception and self.restarts else ""))
        if self.backpressure:
            busy = [f"{name} ({level})" for name, level in self.backpressure.items() if level != "ok"]
            out.append(f"backpressure: {self.worst_backpressure}" + (f" at {', '.join(busy)}" if busy else ""))
        elif self.state == "RUNNING":
            out.append("backpressure: not measured yet (Flink samples it when first asked)")
        if self.pending_records is not None:
            out.append(f"sources' pending records: {self.pending_records:,}")
        if self.savepoint is not None:
            out.append(f"newest savepoint: {self.savepoint.path} ({_ago(self.at - self.savepoint.at)} ago)")
        elif self.restored_from:
            out.append(f"restored from: {self.restored_from}")
        else:
            out.append("newest savepoint: none")
        return out


def pick(overview: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The job named ``name`` in ``/jobs/overview``: a live one first, else the one that started last."""
    jobs = [j for j in overview.get("jobs", []) if j.get("name") == name]
    live = [j for j in jobs if j.get("state") not in ("FINISHED", "CANCELED", "FAILED")]
    pool = live or jobs
    return max(pool, key=lambda j: int(j.get("start-time") or 0)) if pool else None


def names(overview: dict[str, Any]) -> list[str]:
    """The names of the jobs Flink runs now."""
    return sorted({str(j.get("name")) for j in overview.get("jobs", []) if j.get("state") not in ("FINISHED", "CANCELED", "FAILED")})


def job_status(job: dict[str, Any], checkpoints: dict[str, Any], config: dict[str, Any] | None, metrics: dict[str, str],
               backpressure: dict[str, str], pending: int | None, exceptions: dict[str, Any] | None, now: datetime) -> JobStatus:
    """A status from the REST answers (``config`` None when checkpointing is off)."""
    counts = checkpoints.get("counts") or {}
    latest = checkpoints.get("latest") or {}
    interval = config.get("interval") if config else None
    history = checkpoints.get("history") or []
    failed = int(counts.get("failed") or 0)
    if failed and _start_trigger_failed(history):
        failed -= 1  # every start records one failed trigger while the tasks deploy: not a failure of the job
    failure = latest.get("failed")
    running = _when((job.get("timestamps") or {}).get("RUNNING"))  # triggers while its tasks deploy fail at every (re)start
    return JobStatus(
        name=str(job.get("name")), job_id=str(job.get("jid")), state=str(job.get("state")), started=_when(job.get("start-time")),
        interval=timedelta(milliseconds=interval) if isinstance(interval, int) and 0 < interval < 2**62 else None,
        completed=int(counts.get("completed") or 0), failed=failed, restarts=_int(metrics.get("numRestarts")) or 0,
        last=_checkpoint(latest.get("completed")),
        last_failure=str(failure.get("failure_message") or "failed")[:300] if isinstance(failure, dict) and failure.get("failure_message") else None,
        savepoint=_checkpoint(latest.get("savepoint")),
        restored_from=str((latest.get("restored") or {}).get("external_path")) if latest.get("restored") else None,
        backpressure=backpressure, pending_records=pending, exception=root_cause(exceptions), at=now,
        failed_checkpoints=tuple(sorted((t for c in history if c.get("status") == "FAILED" and (t := _when(c.get("trigger_timestamp"))) is not None
                                         and (running is None or t > running + DEPLOYING)), reverse=True)),
        failures=tuple(sorted((t for e in ((exceptions or {}).get("exceptionHistory") or {}).get("entries") or []
                               if (t := _when(e.get("timestamp"))) is not None), reverse=True)))


def _start_trigger_failed(history: list[dict[str, Any]]) -> bool:
    """Whether the job's first checkpoint failed (its trigger while the tasks deploy); when the short history no longer
    holds it, it is taken to have, as it nearly always does."""
    first = next((c for c in history if int(c.get("id") or 0) == 1), None)
    return first is None or first.get("status") == "FAILED"


def _checkpoint(raw: Any) -> Checkpoint | None:
    if not isinstance(raw, dict) or raw.get("id") is None:
        return None
    at = _when(raw.get("trigger_timestamp"))
    if at is None:
        return None
    return Checkpoint(int(raw["id"]), at, timedelta(milliseconds=int(raw.get("end_to_end_duration") or 0)),
                      str(raw["external_path"]) if raw.get("external_path") else None)


def root_cause(exceptions: dict[str, Any] | None) -> str | None:
    """The newest exception's deepest cause (``/jobs/:jid/exceptions``), one line."""
    entries = ((exceptions or {}).get("exceptionHistory") or {}).get("entries") or []
    if not entries:
        return None
    newest = max(entries, key=lambda e: int(e.get("timestamp") or 0))
    text = str(newest.get("stacktrace") or newest.get("exceptionName") or "")
    causes = [line.strip() for line in text.splitlines() if line.startswith("Caused by:")]
    return (causes[-1] if causes else text.splitlines()[0] if text else str(newest.get("exceptionName")))[:600]


def _when(millis: Any) -> datetime | None:
    return datetime.fromtimestamp(int(millis) / 1000, UTC) if isinstance(millis, int) and millis > 0 else None


def _int(text: str | None) -> int | None:
    try:
        return int(float(text)) if text is not None else None
    except ValueError:
        return None


def _span(delta: timedelta) -> str:
    seconds = delta.total_seconds()
    if seconds < 10:
        return f"{seconds:.1f} s" if seconds % 1 else f"{seconds:.0f} s"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _ago(delta: timedelta) -> str:
    seconds = max(0.0, delta.total_seconds())
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


RESTART_WINDOW = timedelta(minutes=10)
DEPLOYING = timedelta(seconds=10)  # after a job (re)starts running, how long its checkpoint triggers may fail while tasks deploy


def samples(pipeline: str, status: JobStatus, checkpoint_seen: int | None) -> list[tuple[str, float, datetime, dict[str, str]]]:
    """The SLI samples a Flink job gives its pipeline, as ``(sli, value, time, labels)``: its newest checkpoint's duration (once
    per checkpoint, at the time it was taken: ``checkpoint_seen`` is the last one sent), its worst backpressure and its
    sources' pending records while it runs, its failed checkpoints in the last ten minutes (from the recent history Flink
    keeps; those triggered while its tasks deployed left out) with the latest reason, and its failures in the last ten minutes with the
    newest exception."""
    found: list[tuple[str, float, datetime, dict[str, str]]] = []
    if status.last is not None and status.last.id != checkpoint_seen:
        labels = {"job": status.name, **({"interval": f"{status.interval.total_seconds():g}"} if status.interval else {})}
        found.append(("checkpoint_duration", status.last.duration.total_seconds(), status.last.at, labels))
    if status.state == "RUNNING" and status.worst_backpressure is not None:
        found.append(("backpressure", {"ok": 0.0, "low": 0.5, "high": 1.0}[status.worst_backpressure], status.at, {"job": status.name}))
    if status.state == "RUNNING" and status.pending_records is not None:
        found.append(("pending_records", float(status.pending_records), status.at, {"job": status.name}))
    failed = sum(1 for t in status.failed_checkpoints if status.at - t <= RESTART_WINDOW)
    found.append(("checkpoint_failures", float(failed), status.at,
                  {"job": status.name, **({"reason": status.last_failure} if failed and status.last_failure else {})}))
    recent = sum(1 for t in status.failures if status.at - t <= RESTART_WINDOW)
    found.append(("restarts", float(recent), status.at, {"job": status.name, **({"exception": status.exception} if recent and status.exception else {})}))
    return found
