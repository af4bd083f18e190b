"""The bot's side of Flink's planner: one warm worker process per Flink version (``planner_worker.py`` under
that runtime's own Python), started on first use, asked one check at a time, restarted when it dies or after
many checks (the JVM grows with each), and stopped with the bot. Nothing here blocks the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
WORKER = Path(__file__).with_name("planner_worker.py")
START_SECONDS = 180.0  # a cold JVM on a busy two-core machine
CHECK_SECONDS = 120.0
RECYCLE_AFTER = 400  # checks per worker before a fresh JVM


class PlannerUnavailable(Exception):
    """No planner can answer: the runtime is not installed, or the worker cannot start."""


class _Worker:
    def __init__(self, process: asyncio.subprocess.Process, flink: str, errors: deque[str], drain: asyncio.Task[None], jars: list[str]) -> None:
        self.process, self.flink, self.errors, self.drain, self.checks, self.jars = process, flink, errors, drain, 0, jars


class Planner:
    """Checks Flink SQL with Flink's own planner, per version, in warm workers."""

    def __init__(self, root: str) -> None:
        self.root = Path(root)
        self._workers: dict[str, _Worker] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.started = 0  # workers started so far (a restart counts)

    def versions(self) -> list[str]:
        """The Flink versions installed under the root."""
        if not self.root.is_dir():
            return []
        return sorted(p.name.removeprefix("flink-") for p in self.root.glob("flink-*") if (p / ".complete").exists())

    async def check(self, version: str, statements: list[dict[str, Any]]) -> dict[str, Any]:
        """The worker's answer for one job; a worker that died is restarted and asked again, once."""
        async with self._locks.setdefault(version, asyncio.Lock()):
            for attempt in range(2):
                worker = await self._worker(version)
                try:
                    answer = await self._ask(worker, {"statements": statements})
                except (ConnectionError, asyncio.IncompleteReadError, TimeoutError, ValueError) as err:
                    await self._end(version)
                    if attempt:
                        raise PlannerUnavailable(f"the Flink {version} planner stopped answering ({err or type(err).__name__})") from None
                    log.warning("the Flink %s planner worker ended mid-check; starting a new one", version)
                    continue
                worker.checks += 1
                if worker.checks >= RECYCLE_AFTER:
                    await self._end(version)
                if "failure" in answer:
                    raise PlannerUnavailable(f"the Flink {version} planner could not run the check: {answer['failure']}")
                return {**answer, "flink": worker.flink}
        raise AssertionError("unreachable")

    async def _worker(self, version: str) -> _Worker:
        home = self.root / f"flink-{version}"
        # the Kafka connector and Avro formats, the gate's type-only stand-in, the connectors added with --connector
        jars = sorted(str(j) for pattern in ("jars/*.jar", "gate/*.jar", "connectors/*/*.jar") for j in home.glob(pattern))
        worker = self._workers.get(version)
        if worker is not None and worker.process.returncode is None:
            if worker.jars == jars:
                return worker
            await self._end(version)  # a connector installed since it started: a worker that loads it
        python = home / "venv" / "bin" / "python"
        if not (home / ".complete").exists() or not python.exists():
            installed = ", ".join(self.versions()) or "none"
            raise PlannerUnavailable(f"the Flink {version} planner is not installed here (installed: {installed}); "
                                     f"install it with `scripts/flink.sh install {version}` or point CHANGEOPS_FLINK_ROOT at a folder that has it")
        process = await asyncio.create_subprocess_exec(str(python), "-I", str(WORKER), *jars, stdin=asyncio.subprocess.PIPE,
                                                       stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=2**26)
        self.started += 1
        errors: deque[str] = deque(maxlen=30)
        assert process.stderr is not None
        worker = _Worker(process, version, errors, asyncio.create_task(_drain(process.stderr, errors)), jars)
        try:
            assert process.stdout is not None
            ready = json.loads(await asyncio.wait_for(process.stdout.readline(), START_SECONDS) or b"{}")
        except (TimeoutError, ValueError):
            ready = {}
        if not ready.get("ready"):
            await self._stop(worker)
            tail = " / ".join(line for line in errors if line.strip())[-600:]
            raise PlannerUnavailable(f"the Flink {version} planner did not start{': ' + tail if tail else ''}")
        worker.flink = str(ready.get("flink") or version)
        log.info("Flink %s planner ready (worker pid %d)", worker.flink, process.pid)
        self._workers[version] = worker
        return worker

    async def _ask(self, worker: _Worker, request: dict[str, Any]) -> dict[str, Any]:
        assert worker.process.stdin is not None and worker.process.stdout is not None
        worker.process.stdin.write(json.dumps(request).encode() + b"\n")
        await worker.process.stdin.drain()
        line = await asyncio.wait_for(worker.process.stdout.readline(), CHECK_SECONDS)
        if not line:
            raise ConnectionError("the worker ended")
        answer: dict[str, Any] = json.loads(line)
        return answer

    async def _end(self, version: str) -> None:
        worker = self._workers.pop(version, None)
        if worker is not None:
            await self._stop(worker)

    async def _stop(self, worker: _Worker) -> None:
        process = worker.process
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()  # the worker ends at the end of its input, and its JVM with it
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        worker.drain.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker.drain

    async def close(self) -> None:
        """Stop every worker."""
        for version in list(self._workers):
            await self._end(version)


async def _drain(stream: asyncio.StreamReader, errors: deque[str]) -> None:
    """Keep the worker's log lines (the last few, for a failed start); the pipe never fills."""
    while line := await stream.readline():
        errors.append(line.decode(errors="replace").rstrip())


