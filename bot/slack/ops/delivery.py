"""The Slack side of operations, as outbox handlers: the operation's message (posted once, then edited in place)
and notes in its thread."""

from __future__ import annotations

from collections.abc import Mapping

from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.ops import OpsError
from bot.services.operations import OPS_MESSAGE, OPS_NOTE, Operations
from bot.services.outbox import GiveUp, Handler, Item, Retry
from bot.slack.delivery import Gone, call, place
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
        if not (row.message_ts or row.channel):
            raise GiveUp(f"operation #{row.id} has no channel to post in")
        await place(self.client, (row.message_channel, row.message_ts), str(row.channel), {"text": reply.fallback, "blocks": reply.blocks},
                    lambda channel, ts: self.ops.save_message(int(row.id or 0), channel, ts, replacing=row.message_ts))

    async def note(self, item: Item) -> None:
        """A line in the thread of the operation's message (posted again first if someone deleted it in Slack)."""
        for attempt in range(2):
            row = await self.ops.get(int(item.payload["operation"]))
            if not (row.message_channel and row.message_ts):
                raise Retry(f"operation #{row.id}'s message is not posted yet")
            try:
                await call(self.client, "chat.postMessage", channel=row.message_channel, thread_ts=row.message_ts, text=item.payload["text"],
                           unfurl_links=False)
                return
            except Gone:
                if attempt:
                    raise
                await self.message(item)
