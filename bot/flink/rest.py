"""Flink's REST API (the JobManager's ``rest.port``): the calls the bot makes, each with a timeout; a Flink that
does not answer, or answers with an error, is a ``FlinkUnavailable`` whose message says what Flink said."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from bot.domain.flink.status import FlinkError, FlinkJobMissing, FlinkUnavailable, JobStatus, job_status, names, pick, root_cause

TIMEOUT = aiohttp.ClientTimeout(total=15)


class FlinkRest:
    """One Flink cluster's REST API."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    async def get(self, path: str, missing_ok: bool = False) -> Any:
        """GET a path; None for a 404 when ``missing_ok``."""
        return await self._call("GET", path, None, missing_ok)

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        """POST a JSON body."""
        return await self._call("POST", path, body, False)

    async def _call(self, method: str, path: str, body: dict[str, Any] | None, missing_ok: bool) -> Any:
        try:
            async with aiohttp.ClientSession(timeout=TIMEOUT) as session, session.request(method, self.url + path, json=body) as answer:
                if answer.status == 404 and missing_ok:
                    return None
                data = await answer.json(content_type=None)
                if answer.status >= 400:
                    errors = data.get("errors") if isinstance(data, dict) else None
                    said = "; ".join(str(e).splitlines()[0] for e in errors or [])[:400] or f"HTTP {answer.status}"
                    raise FlinkUnavailable(f"Flink at {self.url} refused {method} {path}: {said}")
                return data
        except FlinkUnavailable:
            raise
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError) as err:
            raise FlinkUnavailable(f"Flink did not answer at {self.url} ({type(err).__name__}{': ' + str(err)[:200] if str(err) else ''}); "
                             "nothing was changed") from None

    async def find(self, name: str) -> dict[str, Any]:
        """The job named ``name`` (Flink's ``pipeline.name``): the running one, else the newest; FlinkJobMissing naming the jobs
        Flink runs when there is none."""
        overview = await self.get("/jobs/overview")
        job = pick(overview, name)
        if job is None:
            running = names(overview)
            raise FlinkJobMissing(f"Flink at {self.url} has no job named {name} (it runs {', '.join(running[:10]) if running else 'no job'}); "
                             "a job is matched by its pipeline.name")
        return dict(job)

    async def status(self, name: str) -> JobStatus:
        """The job's status from its overview, checkpoints, metrics, exceptions and each vertex's backpressure."""
        found = await self.find(name)
        jid = found["jid"]
        job, checkpoints, config, metrics, exceptions = await asyncio.gather(
            self.get(f"/jobs/{jid}"), self.get(f"/jobs/{jid}/checkpoints", missing_ok=True),
            self.get(f"/jobs/{jid}/checkpoints/config", missing_ok=True), self.get(f"/jobs/{jid}/metrics?get=numRestarts", missing_ok=True),
            self.get(f"/jobs/{jid}/exceptions?maxExceptions=20", missing_ok=True))
        vertices = job.get("vertices") or []
        live = job.get("state") == "RUNNING"
        pressure = await asyncio.gather(*(self.get(f"/jobs/{jid}/vertices/{v['id']}/backpressure", missing_ok=True) for v in vertices)) \
            if live else []
        levels = {str(v.get("name")): str(p.get("backpressureLevel") or p.get("backpressure-level")) for v, p in zip(vertices, pressure, strict=False)
                  if isinstance(p, dict) and p.get("status") == "ok"}
        pending = await self._pending(jid, [v for v in vertices if str(v.get("name", "")).startswith("Source")]) if live else None
        values = {m["id"]: m["value"] for m in metrics or [] if isinstance(m, dict)}
        return job_status({**found, **job, "name": found["name"]}, checkpoints or {}, config, values, levels, pending, exceptions,
                          datetime.now(UTC))

    async def _pending(self, jid: str, sources: list[dict[str, Any]]) -> int | None:
        """The sources' ``pendingRecords`` summed over subtasks (None when no source reports it yet)."""
        total, seen = 0, False
        for vertex in sources:
            listed = await self.get(f"/jobs/{jid}/vertices/{vertex['id']}/metrics", missing_ok=True) or []
            wanted = [m["id"] for m in listed if str(m.get("id", "")).endswith(".pendingRecords")]
            if not wanted:
                continue
            values = await self.get(f"/jobs/{jid}/vertices/{vertex['id']}/metrics?get={','.join(wanted)}", missing_ok=True) or []
            for metric in values:
                try:
                    total += int(float(metric["value"]))
                    seen = True
                except (KeyError, ValueError):
                    continue
        return total if seen else None

    async def state(self, jid: str) -> str:
        """The job's state now (RUNNING, FINISHED, ...)."""
        return str((await self.get(f"/jobs/{jid}"))["state"])

    async def wait_for(self, jid: str, states: tuple[str, ...], timeout: float = 120.0) -> str:
        """Wait until the job is in one of ``states``; FlinkError naming the state it stayed in."""
        deadline = asyncio.get_running_loop().time() + timeout
        while (state := await self.state(jid)) not in states:
            if asyncio.get_running_loop().time() > deadline:
                raise FlinkError(f"job {jid} is still {state} after {timeout:.0f} s (waited for {' or '.join(states)})")
            await asyncio.sleep(0.5)
        return state

    async def stop_with_savepoint(self, jid: str, directory: str, timeout: float = 300.0) -> str:
        """Stop the job with a savepoint in ``directory`` (never draining: that fires every window) and wait until it has
        finished; the savepoint's location. FlinkError with Flink's reason when the savepoint failed (the job then runs on)."""
        trigger = await self.post(f"/jobs/{jid}/stop", {"targetDirectory": directory, "drain": False})
        location = await self._savepoint_of(jid, str(trigger["request-id"]), timeout, "so it was not stopped")
        await self.wait_for(jid, ("FINISHED",), timeout)
        return location

    async def savepoint(self, jid: str, directory: str, timeout: float = 300.0) -> str:
        """Take a savepoint of the running job without stopping it; its location. FlinkError with Flink's reason."""
        trigger = await self.post(f"/jobs/{jid}/savepoints", {"target-directory": directory, "cancel-job": False})
        return await self._savepoint_of(jid, str(trigger["request-id"]), timeout, "and the job runs on")

    async def _savepoint_of(self, jid: str, trigger: str, timeout: float, then: str) -> str:
        """Wait for a savepoint trigger to complete; its location, or FlinkError with Flink's reason (a failed savepoint also
        says COMPLETED, with a failure cause)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while (answer := await self.get(f"/jobs/{jid}/savepoints/{trigger}")).get("status", {}).get("id") != "COMPLETED":
            if asyncio.get_running_loop().time() > deadline:
                raise FlinkError(f"the savepoint of job {jid} did not complete in {timeout:.0f} s")
            await asyncio.sleep(0.5)
        operation = answer.get("operation") or {}
        if operation.get("failure-cause") or not operation.get("location"):
            cause = operation.get("failure-cause") or {}
            said = str(cause.get("stack-trace") or cause.get("class") or "no location given").splitlines()[0][:400]
            raise FlinkError(f"Flink could not take the savepoint of job {jid}, {then}: {said}")
        return str(operation["location"])

    async def failure(self, jid: str) -> str:
        """The job's newest exception, its deepest cause."""
        return root_cause(await self.get(f"/jobs/{jid}/exceptions?maxExceptions=1", missing_ok=True)) or "Flink recorded no exception"

    async def cancel(self, jid: str) -> None:
        """Cancel the job (no savepoint) and wait until it is cancelled."""
        await self._call("PATCH", f"/jobs/{jid}?mode=cancel", None, False)
        await self.wait_for(jid, ("CANCELED", "FINISHED", "FAILED"))


def savepoint_on_disk(location: str) -> bool | None:
    """Whether a savepoint's ``_metadata`` is there; None when the location is not on this machine's file system (an
    object store: Flink's word is all there is)."""
    parts = urlsplit(location)
    if parts.scheme not in ("", "file"):
        return None
    return (Path(parts.path) / "_metadata").is_file()
