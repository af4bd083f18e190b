"""``/backfill``, ``/replay`` and ``/ops``: plans from a command line (or a form when typed alone), and the status."""

from __future__ import annotations

import asyncio

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.dead_letters import PEEK_USAGE, peek_request
from bot.domain.ops import BACKFILL_USAGE, REPLAY_USAGE, OpsError, backfill_request, replay_request
from bot.services.operations import Actor, Operations
from bot.slack.ops.forms import backfill_form, replay_form
from bot.slack.ops.messages import peek_reply, status_lines
from bot.slack.render import Reply, escape
from bot.slack.request import CommandRequest
from bot.store.models import Operation


class OpsCommands:
    """What the slash commands call."""

    def __init__(self, ops: Operations, client: AsyncWebClient) -> None:
        self.ops, self.client = ops, client

    async def backfill(self, request: CommandRequest) -> Reply | None:
        """``/backfill GROUP TOPIC[,TOPIC...] | --all-topics  --to-time T | --by-duration D | --to-offsets P:O,... | --to-earliest | --to-latest | --shift-by N
        [--partitions 0,1]``; alone: the form."""
        if not request.args:
            await self.client.views_open(trigger_id=request.trigger_id, view=backfill_form(request.channel))
            return None
        try:
            plan = backfill_request(request.args, self.ops.clock())
            row = await self.ops.plan_backfill(plan, Actor(request.user, "slack"), request.channel)
        except OpsError as err:
            return Reply.text(f"{escape(err)}. Nothing was planned or changed. Usage: {BACKFILL_USAGE}")
        return Reply.text(f"Backfill plan #{row.id} is posted in this channel: check it, then Confirm (nothing moves before).")

    async def replay(self, request: CommandRequest) -> Reply | None:
        """``/replay DLQ --to TOPIC [...]``; alone: the form."""
        if not request.args:
            await self.client.views_open(trigger_id=request.trigger_id, view=replay_form(request.channel))
            return None
        if any(word == "--peek" or word.startswith("--peek=") for word in request.args):  # as `bot replay DLQ --peek N` writes it
            return await self.peek(request)
        try:
            plan, dry_run = replay_request(request.args, self.ops.clock())
            row = await self.ops.plan_replay(plan, dry_run, Actor(request.user, "slack"), request.channel)
        except OpsError as err:
            return Reply.text(f"{escape(err)}. Nothing was planned or copied. Usage: {REPLAY_USAGE}")
        what = "Dry run" if dry_run else "Replay plan"
        return Reply.text(f"{what} #{row.id} is posted in this channel" + ("." if dry_run else ": check it, then Confirm (nothing is copied before)."))

    async def peek(self, request: CommandRequest) -> Reply:
        """``/replay peek DLQ [N] [--error-header NAME]``: the newest dead letters, decoded and grouped by error."""
        try:
            return peek_reply(await self.ops.peek(peek_request(request.args), Actor(request.user, "slack")))
        except OpsError as err:
            return Reply.text(f"{escape(err)}. Nothing was read. Usage: {PEEK_USAGE}")

    async def status(self, request: CommandRequest) -> Reply:
        """``/ops status``: running operations first, then the most recent."""
        if request.args:
            return Reply.text(f"`{escape(' '.join(request.args))}` is not understood here: `/ops` shows the running and recent "
                              "backfills and replays, and takes nothing more. Usage: `/ops` or `/ops status`")
        rows = await self.ops.recent(20)
        if not rows:
            return Reply.text("No operation yet: `/backfill` or `/replay` plans one.")
        links = await asyncio.gather(*(self._permalink(row) for row in rows))
        return Reply.sections("*Oncall operations* (running first, then the most recent)", status_lines(rows, list(links)))

    async def _permalink(self, row: Operation) -> str | None:
        """A link to the operation's message, when it was posted and Slack gives one."""
        if not (row.message_channel and row.message_ts):
            return None
        try:
            answer = await self.client.chat_getPermalink(channel=row.message_channel, message_ts=row.message_ts)
        except (SlackApiError, aiohttp.ClientError, OSError, asyncio.TimeoutError):
            return None
        link = answer.get("permalink")
        return link if isinstance(link, str) else None
