"""A Flink job's status from the REST API's answers: the start trigger's failure left out, the newest root cause
named, the worst backpressure, a live job picked over finished ones of the same name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.domain.flink.status import job_status, names, pick, samples

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
MS = int(NOW.timestamp() * 1000)


def test_failures_leave_out_the_trigger_at_start_and_the_ratio_is_against_the_interval() -> None:
    job = {"jid": "j1", "name": "count-orders", "state": "RUNNING", "start-time": MS - 600_000}
    checkpoints = {"counts": {"completed": 40, "failed": 3},
                   "history": [{"id": 1, "status": "FAILED", "trigger_timestamp": MS - 599_000}],
                   "latest": {"completed": {"id": 43, "trigger_timestamp": MS - 5_000, "end_to_end_duration": 12_000,
                                            "external_path": "file:/cp/chk-43"},
                              "failed": {"id": 42, "failure_message": "Checkpoint expired before completing."}}}
    exceptions = {"exceptionHistory": {"entries": [
        {"timestamp": MS - 9_000, "stacktrace": "org.x.JobException: Recovery is suppressed\nCaused by: java.io.IOException: disk full"},
        {"timestamp": MS - 60_000, "stacktrace": "java.lang.RuntimeException: old"}]}}
    status = job_status(job, checkpoints, {"interval": 10_000}, {"numRestarts": "2"}, {"Source": "ok", "Sink": "high"}, 1200, exceptions, NOW)
    assert status.failed == 2 and status.completed == 40 and status.restarts == 2
    assert status.slow_checkpoints == 1.2 and status.worst_backpressure == "high"
    assert status.exception == "Caused by: java.io.IOException: disk full"
    text = "\n".join(status.lines())
    assert "took 12 s (every 10 s — slower than the interval); 40 completed, 2 failed" in text
    assert "last checkpoint failure: Checkpoint expired before completing." in text and "backpressure: high at Sink (high)" in text
    assert "pending records: 1,200" in text and "newest savepoint: none" in text
    shown = status.as_json()
    assert shown["checkpoints"]["last"]["age_seconds"] == 5.0 and shown["checkpoints"]["duration_over_interval"] == 1.2


def test_a_first_checkpoint_that_completed_leaves_every_failure_counted_and_no_interval_means_off() -> None:
    job = {"jid": "j2", "name": "n", "state": "RUNNING", "start-time": MS - 1000}
    status = job_status(job, {"counts": {"failed": 1}, "history": [{"id": 1, "status": "COMPLETED"}], "latest": {}}, None, {}, {}, None, None, NOW)
    assert status.failed == 1 and status.interval is None
    assert "checkpoints: off" in "\n".join(status.lines())
    assert status.started == NOW - timedelta(seconds=1)


def test_a_running_job_is_picked_over_finished_ones_of_the_same_name() -> None:
    overview = {"jobs": [{"jid": "old", "name": "a", "state": "FINISHED", "start-time": 3},
                         {"jid": "live", "name": "a", "state": "RUNNING", "start-time": 2},
                         {"jid": "b", "name": "b", "state": "CANCELED", "start-time": 9}]}
    assert (pick(overview, "a") or {})["jid"] == "live" and (pick(overview, "b") or {})["jid"] == "b" and pick(overview, "c") is None
    assert names(overview) == ["a"]


def test_samples_leave_out_checkpoints_that_fail_while_the_tasks_deploy_and_count_restarts_of_the_last_ten_minutes() -> None:
    job = {"jid": "j3", "name": "n", "state": "RUNNING", "start-time": MS - 900_000, "timestamps": {"RUNNING": MS - 300_000}}
    history = [{"id": 7, "status": "FAILED", "trigger_timestamp": MS - 298_000},  # while the tasks deployed after the restart
               {"id": 9, "status": "FAILED", "trigger_timestamp": MS - 60_000},
               {"id": 10, "status": "COMPLETED", "trigger_timestamp": MS - 5_000}]
    checkpoints = {"counts": {"completed": 8, "failed": 2}, "history": history,
                   "latest": {"completed": {"id": 10, "trigger_timestamp": MS - 5_000, "end_to_end_duration": 40},
                              "failed": {"id": 9, "failure_message": "Checkpoint expired before completing."}}}
    exceptions = {"exceptionHistory": {"entries": [{"timestamp": MS - 310_000, "stacktrace": "java.io.IOException: broker down"},
                                                   {"timestamp": MS - 700_000, "stacktrace": "java.io.IOException: older"}]}}
    status = job_status(job, checkpoints, {"interval": 1000}, {"numRestarts": "2"}, {"Source": "high"}, 42, exceptions, NOW)
    found = {sli: (value, labels) for sli, value, _, labels in samples("p", status, checkpoint_seen=None)}
    assert found["checkpoint_failures"] == (1.0, {"job": "n", "reason": "Checkpoint expired before completing."})
    assert found["restarts"] == (1.0, {"job": "n", "exception": "java.io.IOException: broker down"})
    assert found["checkpoint_duration"][0] == 0.04 and found["backpressure"][0] == 1.0 and found["pending_records"][0] == 42
    assert "checkpoint_duration" not in {sli for sli, *_ in samples("p", status, checkpoint_seen=10)}  # once per checkpoint
