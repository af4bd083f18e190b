"""The operation message's buttons (Confirm, Cancel, Undo), the forms' submissions, and the SLI alerts' "Plan a
backfill" and "Plan a replay" buttons (the form, prefilled from the pipeline)."""

from __future__ import annotations

import json
import shlex
from datetime import UTC, datetime, timedelta
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.ops import OpKind, OpsError, OpState, backfill_request, replay_request
from bot.services.operations import Actor, Operations
from bot.services.sli import SliError, SliService
from bot.slack import ids
from bot.slack.delivery import dm
from bot.slack.ops.forms import backfill_form, replay_form
from bot.slack.render import ephemeral, escape


class OpsActions:
    """Listeners of the operation buttons and forms."""

    def __init__(self, ops: Operations, sli: SliService) -> None:
        self.ops, self.sli = ops, sli

    async def _click(self, body: dict[str, Any], respond: AsyncRespond, verb: str) -> None:
        actor = Actor(body["user"]["id"], "slack")
        try:
            operation = int(body["actions"][0].get("value") or 0)
            if verb == "confirm":
                row = await self.ops.confirm(operation, actor)
                if row.state == OpState.RUNNING.value:
                    self.ops.start(operation, flink=bool(row.plan.get("flink")))
                told = f"#{operation} is {row.state}; the message shows how it goes."
            elif verb == "cancel":
                row = await self.ops.cancel(operation, actor)
                told = f"#{operation} is {row.state}."
            else:
                row = await self.ops.undo(operation, actor)
                if row.state == OpState.RUNNING.value:  # a Flink backfill: its job goes back to the original savepoint
                    self.ops.start(operation, flink=True)
                    told = f"#{operation} is being undone: the job restarts from its original savepoint; the message shows how it goes."
                else:
                    told = f"#{operation} is undone: the group is back where it was."
        except (OpsError, ValueError) as err:
            told = f"Not done: {escape(err)}"
        await respond(**ephemeral(told))

    async def on_confirm(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """Confirm: a backfill moves the group (after checking the offsets again); a replay starts."""
        await ack()
        await self._click(body, respond, "confirm")

    async def on_cancel(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """Cancel a plan, or stop a running replay at its next transaction."""
        await ack()
        await self._click(body, respond, "cancel")

    async def on_undo(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """Undo an applied backfill."""
        await ack()
        await self._click(body, respond, "undo")

    async def on_alert(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient) -> None:
        """An SLI alert's "Plan a backfill" / "Plan a replay": the form, prefilled from the alert's pipeline."""
        await ack()
        action = body["actions"][0]
        channel = (body.get("channel") or {}).get("id", "")
        try:
            episode = await self.sli.episode((action.get("value") or "").split("|", 1)[0])
            pipeline = await self.sli.pipeline(episode.pipeline)
        except SliError as err:
            await respond(**ephemeral(f"{escape(err)}; nothing was planned."))
            return
        if action["action_id"] == ids.SLI_BACKFILL:
            since = self.ops.clock() - timedelta(hours=1)
            view = backfill_form(channel, pipeline.group, ",".join(pipeline.topics) or None, since)
        else:
            target = f"{pipeline.topics[0]}.replay" if pipeline.topics else None
            view = replay_form(channel, pipeline.dlq, target)
        await client.views_open(trigger_id=body["trigger_id"], view=view)

    async def on_backfill_form(self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        """The backfill form: arguments checked at once (errors at their field); then planned, the plan posted."""
        values = view["state"]["values"]
        picked = _value(values, ids.SINCE_BLOCK, ids.SINCE_ACTION, "selected_date_time")
        args = [_value(values, ids.GROUP_BLOCK, ids.GROUP_ACTION) or "", _value(values, ids.TOPIC_BLOCK, ids.TOPIC_ACTION) or ""]
        if picked:
            args += ["--to-time", datetime.fromtimestamp(int(picked), UTC).isoformat()]
        partitions = _value(values, ids.OPTIONS_BLOCK, ids.OPTIONS_ACTION)
        if partitions:
            args += ["--partitions", partitions.strip()]
        try:
            reset = shlex.split(_value(values, ids.RESET_BLOCK, ids.RESET_ACTION) or "")
        except ValueError as err:
            await ack(response_action="errors", errors={ids.RESET_BLOCK: f"{err}"[:150]})
            return
        try:
            request = backfill_request(args + reset, self.ops.clock())
        except OpsError as err:
            block = (ids.RESET_BLOCK if reset and not picked else ids.SINCE_BLOCK if "exactly one of" in str(err)
                     else _block_of(str(err), ids.SINCE_BLOCK))
            await ack(response_action="errors", errors={block: str(err)[:150]})
            return
        user = body["user"]["id"]
        refusal = await self.ops.refusal(user, await self.ops.team_of(OpKind.BACKFILL, request))
        if refusal:
            await ack(response_action="errors", errors={ids.GROUP_BLOCK: refusal[:150]})
            return
        await ack()
        channel = json.loads(view.get("private_metadata") or "{}").get("channel") or user
        try:
            await self.ops.plan_backfill(request, Actor(user, "slack"), channel)
        except OpsError as err:
            await self._tell(user, f"Your backfill of {escape(request.group)} on {escape(request.topics_text())} was not planned: {escape(err)}")

    async def on_replay_form(self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        """The replay form: arguments checked at once (errors at their field); then scanned, the plan posted."""
        values = view["state"]["values"]
        target = (_value(values, ids.TARGET_BLOCK, ids.TARGET_ACTION) or "").strip()
        args = [_value(values, ids.TOPIC_BLOCK, ids.TOPIC_ACTION) or "", *(["--to", target] if target else ["--to-original"])]
        picked = _value(values, ids.SINCE_BLOCK, ids.SINCE_ACTION, "selected_date_time")
        if picked:
            args += ["--since", datetime.fromtimestamp(int(picked), UTC).isoformat()]
        try:
            args += shlex.split(_value(values, ids.OPTIONS_BLOCK, ids.OPTIONS_ACTION) or "")
            request, dry_run = replay_request(args, self.ops.clock())
        except (OpsError, ValueError) as err:
            await ack(response_action="errors", errors={_block_of(str(err), ids.OPTIONS_BLOCK): str(err)[:150]})
            return
        user = body["user"]["id"]
        refusal = await self.ops.refusal(user, await self.ops.team_of(OpKind.REPLAY, request))
        if refusal:
            await ack(response_action="errors", errors={ids.TOPIC_BLOCK: refusal[:150]})
            return
        await ack()
        channel = json.loads(view.get("private_metadata") or "{}").get("channel") or user
        try:
            await self.ops.plan_replay(request, dry_run, Actor(user, "slack"), channel)
        except OpsError as err:
            await self._tell(user, f"Your replay of {escape(request.dlq)} was not planned: {escape(err)}")

    async def _tell(self, user: str, text: str) -> None:
        await dm(self.ops.outbox, self.ops.db, user, text)


def _value(values: dict[str, Any], block: str, action: str, key: str = "value") -> Any:
    return (values.get(block, {}).get(action) or {}).get(key)


def _block_of(error: str, default: str) -> str:
    """The form field an argument error is about."""
    if "group" in error:
        return ids.GROUP_BLOCK
    if "target" in error or "--to " in error or "say where to" in error:
        return ids.TARGET_BLOCK
    if "topic" in error or "DLQ" in error:
        return ids.TOPIC_BLOCK
    if "--partitions" in error or "partition" in error:
        return ids.OPTIONS_BLOCK
    if "--to-time" in error or "--since" in error:
        return ids.SINCE_BLOCK
    return default
