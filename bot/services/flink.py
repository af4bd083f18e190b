"""Flink jobs of the catalog, as the Flink cluster sees them, and what oncall does to them: a catalog job with
``flink:`` is matched to the job Flink runs under the same name (its ``pipeline.name``). A backfill of a Flink job's
group is done the Flink way (``bot.domain.flink.backfill``): each step is recorded as it completes, so a run that
stops midway (a bot killed) resumes after its last step instead of doing one twice."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlmodel import col, select

from bot.domain.flink.backfill import kafka_tables, restarts, source_vertices
from bot.domain.flink.statements import StatementError, split
from bot.domain.flink.status import FlinkError, FlinkJobMissing, FlinkUnavailable, JobStatus, pick
from bot.domain.flink.status import samples as flink_samples
from bot.domain.lineage.model import Job
from bot.domain.ops import BackfillRequest
from bot.domain.sli.pipeline import Sli
from bot.domain.sli.samples import Sample
from bot.flink.planner import Planner, PlannerUnavailable
from bot.flink.rest import FlinkRest, savepoint_on_disk
from bot.flink.savepoints import without_operators
from bot.flink.submit import submit
from bot.services.lineage import LineageService
from bot.store.database import Database
from bot.store.models import FlinkDrill, FlinkRelease, aware, utcnow
from bot.workers import off_loop

log = logging.getLogger(__name__)
Save = Callable[[dict[str, Any]], Awaitable[None]]
RESTORE_SECONDS = 120.0


class FlinkService:
    """Status of the catalog's Flink jobs, and the steps of operations on them, through Flink's REST API."""

    def __init__(self, db: Database, lineage: LineageService, rest_url: str | None, savepoint_dir: str | None = None,
                 root: str = "", planner: Planner | None = None, *, version: str) -> None:
        self.db, self.lineage, self.savepoint_dir, self.root, self.planner = db, lineage, savepoint_dir, root, planner
        self.version = version  # the Flink a job runs on when nothing says which (OpenLineage that names no version)
        self.rest = FlinkRest(rest_url) if rest_url else None
        self._checkpoints: dict[str, int] = {}  # pipeline -> the newest checkpoint whose duration was sampled
        self._failing = False

    async def job(self, name: str) -> Job:
        """The job ``name``, which must run on Flink (``flink:`` in the catalog, or OpenLineage says so); FlinkError naming
        the Flink jobs the lineage has otherwise."""
        jobs = [job for job in (await self.lineage.graph()).jobs.values() if job.flink is not None]
        found = next((job for job in jobs if job.id.name == name), None)
        if found is None:
            if any(job_name == name for _, job_name in await self.lineage.seen_on_flink()):
                raise FlinkError(f"OpenLineage says {name} runs on Flink, but the catalog declares it without `flink:`: declare the Flink "
                                 "version it runs on there (`flink: 2.3.0`) for the bot to treat it as a Flink job")
            known = sorted(job.id.name for job in jobs)
            raise FlinkError(f"no catalog job {name!r} runs on Flink (jobs with `flink:` in the catalog, or that OpenLineage says run on Flink: "
                             f"{', '.join(known[:20]) if known else 'none'})")
        return found

    def _rest(self) -> FlinkRest:
        if self.rest is None:
            raise FlinkError("Flink is not configured for this bot: set FLINK_REST_URL to the JobManager's REST address")
        return self.rest

    async def status(self, name: str) -> JobStatus:
        """The job's status now, from Flink itself."""
        await self.job(name)
        return await self._rest().status(name)

    def unready(self) -> str | None:
        """Why this bot cannot run operations on Flink jobs (None: it can)."""
        if self.rest is None:
            return "FLINK_REST_URL is not set, so the bot cannot reach the job"
        if not self.savepoint_dir:
            return "FLINK_SAVEPOINT_DIR is not set, so the bot has nowhere to put the savepoint"
        if self.planner is None or not self.planner.versions():
            return "no Flink runtime is installed for the bot (scripts/flink.sh install)"
        return None

    async def _sql(self, job: str, given: str | None) -> tuple[str, str]:
        """The SQL to start ``job`` with, and where it comes from: ``given``, else its last passed release's."""
        if given is not None:
            return given, "given with --sql"
        recorded = await self.release_sql(job)
        if recorded is None:
            raise FlinkError(f"no passed release of {job} recorded its SQL (the release gate records it), so the bot cannot start it: "
                             "give the SQL with --sql FILE (from a terminal)")
        return recorded

    async def release_sql(self, job: str) -> tuple[str, str] | None:
        """The SQL of the job's newest passed release that recorded it, and where it came from."""
        async with self.db.session() as session:
            row = (await session.exec(select(FlinkRelease).where(FlinkRelease.job == job, col(FlinkRelease.passed), FlinkRelease.sql != "")
                                      .order_by(col(FlinkRelease.id).desc()).limit(1))).first()
        return (row.sql, f"its last passed release, #{row.id} of {aware(row.created_at):%Y-%m-%d %H:%M} UTC") if row else None

    # --- a backfill the Flink way ---------------------------------------------------------------

    async def plan_backfill(self, job: Job, request: BackfillRequest, moves: list[dict[str, Any]], partitions: dict[str, list[int]],
                            sql: str | None) -> dict[str, Any]:
        """What a Flink backfill (``moves``, on topics of ``partitions``) will do to ``job`` (running now): its SQL, the Kafka
        tables reading the topics, their source operators in the running job and where each starts again. FlinkError when it
        cannot be done, nothing changed."""
        topics = sorted({m["topic"] for m in moves})
        if (why := self.unready()) is not None:
            raise FlinkError(why)
        assert self.planner is not None and self.savepoint_dir
        version = job.flink or self.version
        if version not in self.planner.versions():
            raise FlinkError(f"{job.id.name} runs on Flink {version}, and no Flink {version} runtime is installed for the bot "
                             f"(scripts/flink.sh install {version})")
        running = await self._rest().find(job.id.name)
        if running.get("state") != "RUNNING":
            raise FlinkError(f"{job.id.name} is {running.get('state')} on Flink (job {running.get('jid')}), not running: start it first, "
                             "or resume it from its savepoint")
        sql, origin = await self._sql(job.id.name, sql)
        try:
            statements = await off_loop(split, sql)
        except StatementError as err:
            raise FlinkError(f"the job's SQL cannot be read: {err}") from None
        try:
            described = await self.planner.check(version, [{"kind": s.kind, "sql": s.sql, "key": s.key} for s in statements])
        except PlannerUnavailable as err:
            raise FlinkUnavailable(str(err)) from None
        refused = [r for r in described.get("results", []) if not r.get("ok")]
        if refused:
            raise FlinkError(f"the job's SQL ({origin}) does not pass Flink's planner: {refused[0]['error'][-1][1][:300]}")
        tables = kafka_tables(described.get("tables") or {}, topics)
        unread = sorted(set(topics) - {t for read in tables.values() for t in read})
        if unread:
            raise FlinkError(f"no table of the 'kafka' connector in the SQL of {job.id.name} ({origin}) reads {', '.join(unread)}")
        vertices = source_vertices((await self._rest().get(f"/jobs/{running['jid']}")).get("vertices") or [], list(tables))
        lost = sorted(set(tables) - set(vertices))
        if lost:
            raise FlinkError(f"the running job {running['jid']} has no single source operator for {', '.join(lost)}: is it the job of this SQL?")
        return {"job": job.id.name, "job_id": running["jid"], "version": version, "sql": sql, "sql_from": origin, "tables": tables,
                "vertices": vertices, "savepoint_dir": self.savepoint_dir,
                "starts": restarts(tables, moves, partitions, request.to_time, request.to_end)}

    async def samples(self, jobs: dict[str, str]) -> list[Sample]:
        """SLI samples from Flink itself for each pipeline's job (pipeline -> job): checkpoint duration (once per checkpoint) and
        restarts in the last ten minutes. A job Flink does not run now gives none (its pipeline's own SLIs say so); a Flink
        that does not answer is logged once until it does."""
        found: list[Sample] = []
        for pipeline, name in sorted(jobs.items()):
            try:
                status = await self._rest().status(name)
            except FlinkJobMissing:
                continue
            except FlinkError as err:
                if not self._failing:
                    log.warning("Flink SLIs: %s", err)
                self._failing = True
                return found
            self._failing = False
            for sli, value, at, labels in flink_samples(pipeline, status, self._checkpoints.get(pipeline)):
                found.append(Sample(pipeline, Sli(sli), value, at, labels))
            if status.last is not None:
                self._checkpoints[pipeline] = status.last.id
        return found

    # --- recoverability -------------------------------------------------------------------------

    async def restore_check(self, job: Job, sql: str) -> tuple[str | None, str]:
        """Restore ``sql`` (a new release of ``job``) from a fresh savepoint of the running job, as a throwaway job that is never
        scheduled: it asks for one slot more than the cluster has, so Flink maps the state when it creates the job (where
        "Cannot map checkpoint/savepoint state" fails) and no task ever reads or writes; then it is cancelled. The running
        job is not touched (NO_CLAIM). Refused on a cluster whose adaptive scheduler would run it with fewer slots. ``(Flink's reason it cannot be restored, or None; the savepoint used)``."""
        rest = self._rest()
        if not self.savepoint_dir:
            raise FlinkError("FLINK_SAVEPOINT_DIR is not set, so the bot has nowhere to put the savepoint it restores from")
        running = await rest.find(job.id.name)
        if running.get("state") != "RUNNING":
            raise FlinkError(f"{job.id.name} is {running.get('state')} on Flink, not running: there is no state to restore from")
        config = {str(e.get("key")): str(e.get("value")) for e in await rest.get("/jobmanager/config") if isinstance(e, dict)}
        if config.get("jobmanager.scheduler", "default").lower() == "adaptive" or config.get("scheduler-mode", "").lower() == "reactive":
            raise FlinkError("the cluster's adaptive scheduler would run the check job with the slots it has, reading and writing: no dry "
                             "run on it (restore the release on a cluster of its own)")
        savepoint = await rest.savepoint(str(running["jid"]), self.savepoint_dir)
        slots = int((await rest.get("/overview")).get("slots-total") or 0)
        statements = await off_loop(split, sql)
        name = f"{job.id.name} (changeops restore check {savepoint.rstrip('/').rsplit('/', 1)[-1]})"
        try:
            check = await submit(self.root, job.flink or self.version, rest.url, name, statements,
                                 {"execution.state-recovery.path": savepoint, "execution.state-recovery.claim-mode": "NO_CLAIM"},
                                 overrides={"parallelism.default": str(slots + 1)})
        except FlinkError as err:  # a job Flink could not even create says why in its exceptions ("Cannot map ... state ...")
            failed = pick(await rest.get("/jobs/overview"), name)
            return (await rest.failure(str(failed["jid"])) if failed and failed.get("state") == "FAILED" else str(err)), savepoint
        try:
            for _ in range(240):
                state = await rest.state(check)
                if state == "FAILED":  # the state could not be mapped, unless it failed waiting for the slots it never gets
                    reason = await rest.failure(check)
                    return (None if "NoResourceAvailable" in reason else reason), savepoint
                if state != "INITIALIZING":  # created, so the state was mapped; it waits for slots (or retries for them)
                    return None, savepoint
                await asyncio.sleep(0.5)
            raise FlinkError(f"the restore check job {check} is still initializing after 120 s")
        finally:
            if await rest.state(check) not in ("FAILED", "CANCELED", "FINISHED"):
                await rest.cancel(check)

    async def drill(self, name: str, sql: str | None, by: str) -> FlinkDrill:
        """A restore drill (seed 000 §8): the job's state, from a fresh savepoint, restored into a throwaway job with its last
        passed release's SQL (or ``sql``); recorded, so the monthly report can name the jobs without one in 90 days."""
        job = await self.job(name)
        sql, _ = await self._sql(name, sql)
        reason, savepoint = await self.restore_check(job, sql)
        async with self.db.session() as session:
            row = FlinkDrill(job=name, ok=reason is None, savepoint=savepoint, reason=reason or "", drilled_by=by, created_at=utcnow())
            session.add(row)
            await session.commit()
            await session.refresh(row)
        return row

    # --- pause and resume ------------------------------------------------------------------------

    async def plan_pause(self, job: Job) -> dict[str, Any]:
        """What pausing ``job`` will do: stop its running instance with a savepoint. FlinkError when it cannot."""
        if self.rest is None or not self.savepoint_dir:
            raise FlinkError(self.unready() or "Flink is not configured")
        running = await self.rest.find(job.id.name)
        if running.get("state") != "RUNNING":
            raise FlinkError(f"{job.id.name} is {running.get('state')} on Flink (job {running.get('jid')}), not running: there is nothing to pause")
        return {"job": job.id.name, "job_id": running["jid"], "version": job.flink or self.version, "savepoint_dir": self.savepoint_dir}

    async def plan_resume(self, job: Job, sql: str | None, savepoint: str | None, paused: str | None) -> dict[str, Any]:
        """What resuming ``job`` will do: start it from ``savepoint`` (default: ``paused``, the savepoint of its last pause when
        nothing resumed it since, else the one its newest run stopped with) with its SQL. FlinkError when it cannot."""
        if (why := self.unready()) is not None:
            raise FlinkError(why)
        assert self.planner is not None
        version = job.flink or self.version
        if version not in self.planner.versions():
            raise FlinkError(f"{job.id.name} runs on Flink {version}, and no Flink {version} runtime is installed for the bot")
        live = [j for j in (await self._rest().get("/jobs/overview")).get("jobs", [])
                if j.get("name") == job.id.name and j.get("state") not in ("FINISHED", "CANCELED", "FAILED")]
        if live:
            raise FlinkError(f"{job.id.name} already runs on Flink (job {live[0]['jid']}, {live[0]['state']}): pause it first")
        origin = "given with --savepoint" if savepoint else "its last pause"
        if savepoint is None and paused is None:
            savepoint, origin = await self._kept_savepoint(job.id.name), "the newest stopped run Flink remembers"
        savepoint = savepoint or paused
        if not savepoint:
            raise FlinkError(f"no savepoint of {job.id.name} is known that holds its newest state (no pause by the bot since it last "
                             "ran; its newest run did not stop with one): give it with --savepoint PATH (from a terminal)")
        if savepoint_on_disk(savepoint) is False:
            raise FlinkError(f"the savepoint {savepoint} ({origin}) is not there (no _metadata)")
        sql, sql_from = await self._sql(job.id.name, sql)
        try:
            await off_loop(split, sql)
        except StatementError as err:
            raise FlinkError(f"the job's SQL cannot be read: {err}") from None
        return {"job": job.id.name, "version": version, "sql": sql, "sql_from": sql_from, "savepoint": savepoint, "savepoint_from": origin}

    async def _kept_savepoint(self, name: str) -> str | None:
        """The savepoint the newest run of ``name`` that Flink remembers stopped with; None when that run ended otherwise
        (cancelled, failed): an older savepoint would be older state than the job had."""
        runs = [j for j in (await self._rest().get("/jobs/overview")).get("jobs", []) if j.get("name") == name]
        newest = max(runs, key=lambda j: int(j.get("start-time") or 0), default=None)
        if newest is None or newest.get("state") != "FINISHED":
            return None
        taken = ((await self._rest().get(f"/jobs/{newest['jid']}/checkpoints", missing_ok=True) or {}).get("latest") or {}).get("savepoint")
        return str(taken["external_path"]) if taken and taken.get("external_path") else None

    async def pause(self, flink: dict[str, Any], progress: dict[str, Any], save: Save) -> dict[str, Any]:
        """Stop the job with a savepoint (a run that stopped it already gives the savepoint it took)."""
        if "savepoint" not in progress:
            progress = {**progress, "step": "savepoint", "savepoint": await self._stop(flink["job_id"], flink["savepoint_dir"])}
            await save(progress)
        return progress

    async def resume(self, flink: dict[str, Any], progress: dict[str, Any], save: Save) -> dict[str, Any]:
        """Start the job from its savepoint and check it restored from it."""
        if "new_job" not in progress:
            progress = {**progress, "step": "submit", "new_job": await self._start(flink, flink["savepoint"], {})}
            await save(progress)
        await self._restored(self._rest(), progress["new_job"], flink["savepoint"])
        return {**progress, "step": "verify"}

    # --- a backfill the Flink way (the steps) ---------------------------------------------------

    async def run_backfill(self, operation: int, flink: dict[str, Any], moves: list[dict[str, Any]], progress: dict[str, Any],
                           save: Save) -> dict[str, Any]:
        """The steps from wherever ``progress`` says the run got to; each saved once done."""
        rest = self._rest()
        if "savepoint" not in progress:
            progress = {**progress, "step": "savepoint", "savepoint": await self._stop(flink["job_id"], flink["savepoint_dir"])}
            await save(progress)
        if progress["step"] == "savepoint":
            target = f"{progress['savepoint'].rstrip('/')}-backfill-{operation}"
            _discard(target)  # a copy a stopped run left half-written
            copy = await without_operators(self.root, flink["version"], progress["savepoint"], target, sorted(flink["vertices"].values()))
            progress = {**progress, "step": "rewrite", "copy": copy}
            await save(progress)
        if progress["step"] == "rewrite":
            progress = {**progress, "step": "submit", "new_job": await self._start(flink, progress["copy"], flink["starts"])}
            await save(progress)
        if progress["step"] == "submit":
            await self._restored(rest, progress["new_job"], progress["copy"])
            progress = {**progress, "step": "verify"}
            await save(progress)
        return progress

    async def restart_from(self, flink: dict[str, Any], current: str | None, savepoint: str) -> str:
        """Cancel ``current`` (when it runs) and start the job from ``savepoint`` as it was (Undo, and a failed run's way back);
        the new job's id once it runs restored from it."""
        rest = self._rest()
        if current and await rest.state(current) in ("RUNNING", "RESTARTING", "CREATED", "INITIALIZING"):
            await rest.cancel(current)
        job = await self._start(flink, savepoint, {})
        await self._restored(rest, job, savepoint)
        return job

    async def _stop(self, job_id: str, directory: str) -> str:
        """Stop the job with a savepoint; a job this run already stopped gives the savepoint it took."""
        rest = self._rest()
        state = await rest.state(job_id)
        if state == "RUNNING":
            try:
                return await rest.stop_with_savepoint(job_id, directory)
            except FlinkError:
                with contextlib.suppress(FlinkError):  # a stopped run's own stop, still under way, may finish the job first
                    state = await rest.wait_for(job_id, ("FINISHED",), 15)
                if state != "FINISHED":
                    raise
        if state == "FINISHED":
            taken = ((await rest.get(f"/jobs/{job_id}/checkpoints")).get("latest") or {}).get("savepoint") or {}
            if taken.get("external_path"):
                return str(taken["external_path"])
        raise FlinkError(f"job {job_id} is {state}, not running: nothing was changed")

    async def _start(self, flink: dict[str, Any], savepoint: str, moved: dict[str, dict[str, str]]) -> str:
        """The job from ``savepoint`` (one already started from it by a run that stopped is taken as it is)."""
        rest = self._rest()
        for job in (await rest.get("/jobs/overview")).get("jobs", []):
            if job.get("name") == flink["job"] and job.get("state") not in ("FINISHED", "CANCELED", "FAILED"):
                try:  # a submission a stopped run made: once it runs, Flink says what it restored from
                    await self._restored(rest, str(job["jid"]), savepoint)
                    return str(job["jid"])
                except FlinkError:
                    raise FlinkError(f"another {flink['job']} runs on Flink (job {job['jid']}, not restored from {savepoint}): the bot "
                                     "starts no second one") from None
        statements = await off_loop(split, flink["sql"])
        return await submit(self.root, flink["version"], self._rest().url, flink["job"], statements,
                            {"execution.state-recovery.path": savepoint}, moved)

    async def _restored(self, rest: FlinkRest, job: str, savepoint: str) -> None:
        """Wait until ``job`` runs restored from ``savepoint``; FlinkError with what Flink says otherwise."""
        await rest.wait_for(job, ("RUNNING",), RESTORE_SECONDS)
        for _ in range(int(RESTORE_SECONDS * 2)):
            restored = ((await rest.get(f"/jobs/{job}/checkpoints")).get("latest") or {}).get("restored") or {}
            if restored:
                if not _same(restored.get("external_path"), savepoint):
                    raise FlinkError(f"job {job} restored from {restored.get('external_path')}, not from {savepoint}")
                return
            state = await rest.state(job)
            if state not in ("RUNNING", "INITIALIZING", "CREATED"):
                raise FlinkError(f"job {job} is {state} instead of restoring from {savepoint}: {await rest.failure(job)}")
            await asyncio.sleep(0.5)
        raise FlinkError(f"job {job} runs, but Flink does not say it restored from {savepoint}")


def _same(a: object, b: str) -> bool:
    return isinstance(a, str) and urlsplit(a).path.rstrip("/") == urlsplit(b).path.rstrip("/")


def _discard(location: str) -> None:
    """Remove a half-written local copy (an object store's is overwritten by the writer)."""
    if savepoint_on_disk(location) is not None:
        shutil.rmtree(Path(urlsplit(location).path), ignore_errors=True)
