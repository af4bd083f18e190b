"""Flink jobs of the catalog, as the Flink cluster sees them: a catalog job with ``flink:`` is matched to the job
Flink runs under the same name (its ``pipeline.name``)."""

from __future__ import annotations

from bot.domain.flink.status import FlinkError, JobStatus
from bot.domain.lineage.model import Job
from bot.flink.rest import FlinkRest
from bot.services.lineage import LineageService


class FlinkService:
    """Status of the catalog's Flink jobs through Flink's REST API."""

    def __init__(self, lineage: LineageService, rest_url: str | None) -> None:
        self.lineage = lineage
        self.rest = FlinkRest(rest_url) if rest_url else None

    async def job(self, name: str) -> Job:
        """The catalog job ``name``, which must run on Flink; FlinkError naming the Flink jobs the catalog has otherwise."""
        jobs = [job for job in (await self.lineage.graph()).jobs.values() if job.flink]
        found = next((job for job in jobs if job.id.name == name), None)
        if found is None:
            known = sorted(job.id.name for job in jobs)
            raise FlinkError(f"no catalog job {name!r} runs on Flink (jobs with `flink:` in the catalog: "
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
