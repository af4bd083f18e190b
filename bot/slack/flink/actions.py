"""The Flink buttons of an SLI alert: Pause and Resume the pipeline's Flink job, each planned in the alert's channel
for oncall to confirm (who may is checked by the operation, as for ``/flink pause``)."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond

from bot.domain.ops import OpsError
from bot.services.operations import Actor, Operations
from bot.services.sli import SliError, SliService
from bot.slack import ids
from bot.slack.render import ephemeral, escape


class FlinkActions:
    """Listeners of the alerts' Pause and Resume buttons."""

    def __init__(self, ops: Operations, sli: SliService) -> None:
        self.ops, self.sli = ops, sli

    async def on_alert(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """Plan a pause or a resume of the alert's pipeline's Flink job in the alert's channel."""
        await ack()
        action = body["actions"][0]
        channel = (body.get("channel") or {}).get("id")
        actor = Actor(body["user"]["id"], "slack")
        try:
            episode = await self.sli.episode((action.get("value") or "").split("|", 1)[0])
            job = await self.sli.flink_job(episode.pipeline)
            if job is None:
                raise OpsError(f"{episode.pipeline} names no Flink job in the catalog")
            if action["action_id"] == ids.SLI_FLINK_PAUSE:
                row = await self.ops.plan_pause(job, actor, channel)
            else:
                row = await self.ops.plan_resume(job, actor, channel)
        except (OpsError, SliError) as err:
            await respond(**ephemeral(f"{escape(err)}; nothing was planned."))
            return
        await respond(**ephemeral(f"{row.kind.capitalize()} plan #{row.id} for {escape(job)} is posted in this channel: check it, then Confirm."))
