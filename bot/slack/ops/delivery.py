"""The Slack side of operations, as outbox handlers: the operation's message (posted once, then edited in place)
and notes in its thread."""

from __future__ import annotations

from collections.abc import Mapping

from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.ops import OpsError
from bot.services.operations import OPS_MESSAGE, OPS_NOTE, Operations
from bot.services.outbox import GiveUp, Handler, Item, Retry
from bot.slack.delivery import call
from bot.slack.ops.messages import operation_message


class OpsDelivery:
    """Outbox handlers for operations."""

    def __init__(self, client: AsyncWebClient, ops: Operations) -> None:
        self.client, self.ops = client, ops

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {OPS_MESSAGE: self.message, OPS_NOTE: self.note}

    async def message(self, item: Item) -> None:
        """Post the operation's message, or edit it to show where it stands now."""
        try:
            row = await self.ops.get(int(item.payload["operation"]))
        except OpsError as err:
            raise GiveUp(str(err)) from None
        reply = operation_message(row)
        if row.message_ts and row.message_channel:
            await call(self.client, "chat.update", channel=row.message_channel, ts=row.message_ts, text=reply.fallback, blocks=reply.blocks)
            return
        if not row.channel:
            raise GiveUp(f"operation #{row.id} has no channel to post in")
        posted = await call(self.client, "chat.postMessage", channel=row.channel, text=reply.fallback, blocks=reply.blocks, unfurl_links=False)
        await self.ops.save_message(int(row.id or 0), str(posted["channel"]), str(posted["ts"]))

    async def note(self, item: Item) -> None:
        """A line in the thread of the operation's message."""
        row = await self.ops.get(int(item.payload["operation"]))
        if not (row.message_channel and row.message_ts):
            raise Retry(f"operation #{row.id}'s message is not posted yet")
        await call(self.client, "chat.postMessage", channel=row.message_channel, thread_ts=row.message_ts, text=item.payload["text"],
                   unfurl_links=False)
