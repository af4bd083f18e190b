"""Automatic degradation (the second source document's automatic responses, opt-in per pipeline with
``auto_pause: true``): when a pipeline's schema error rate pages (above 1%: do not go on writing with a wrong schema)
or its DLQ pages (over its threshold and growing), its Flink job is paused by savepoint — an operation like any
other, planned and confirmed by the bot itself, audited, in the calendar, its message in the alert's channel with
the reason. The page itself goes out as usual; Resume is on the alert."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import timedelta

from sqlmodel import col, select

from bot.domain.ops import OpKind, OpsError, OpState
from bot.domain.sli.pipeline import Sli
from bot.services.operations import Actor, Operations
from bot.services.outbox import Handler, Item
from bot.services.sli import AUTO_PAUSE, SliError, SliService
from bot.store.models import Operation, aware

log = logging.getLogger(__name__)
AUTOMATIC = Actor("changeops", "automatic")
WHY = {Sli.SCHEMA_ERROR_RATE.value: "its schema error rate paged (do not write on with a wrong schema)",
       Sli.DLQ_VOLUME.value: "its dead-letter queue paged (over its threshold and growing)"}


class AutoPause:
    """Pauses the Flink job of a pipeline that opted in when one of its pages calls for it, once per episode."""

    def __init__(self, ops: Operations, sli: SliService) -> None:
        self.ops, self.sli = ops, sli

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {AUTO_PAUSE: self.pause}

    async def pause(self, item: Item) -> None:
        """Plan, confirm and start the pause (nothing when a pause of the job was already asked since the episode began)."""
        try:
            episode = await self.sli.episode(str(item.payload["episode"]))
        except SliError:
            return
        job = await self.sli.flink_job(episode.pipeline)
        if job is None or episode.resolved_at is not None:
            return
        async with self.ops.db.session() as session:
            asked = (await session.exec(select(Operation).where(Operation.kind == OpKind.PAUSE.value,
                                                                col(Operation.created_at) >= aware(episode.started_at) - timedelta(seconds=1))
                                        )).all()
        if any(row.request.get("job") == job and row.state not in (OpState.CANCELLED.value, OpState.FAILED.value) for row in asked):
            return
        reason = f"{episode.pipeline}: {WHY.get(episode.sli, episode.sli)}, and the pipeline opted in (auto_pause)"
        try:
            row = await self.ops.plan_pause(job, AUTOMATIC, episode.channel, reason=reason)
            row = await self.ops.confirm(int(row.id or 0), AUTOMATIC)
        except OpsError as err:
            log.warning("automatic pause of %s (%s) not done: %s", job, episode.pipeline, err)
            return
        self.ops.start(int(row.id or 0), flink=True)
