"""Posting and updating messages; Slack's refusals are logged, never raised into a workflow."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.render import Reply

log = logging.getLogger(__name__)


class Poster:
    """The bot's voice in channels and threads."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client

    async def post(self, channel: str, reply: Reply, *, thread_ts: str | None = None) -> tuple[str, str] | None:
        """Post ``reply``; (channel id, message ts), or None when Slack refused it (logged with Slack's reasons)."""
        try:
            response = await self.client.chat_postMessage(channel=channel, text=reply.fallback, blocks=reply.blocks, thread_ts=thread_ts)
        except SlackApiError as err:
            _log_refusal("chat.postMessage", channel, err)
            return None
        return str(response["channel"]), str(response["ts"])

    async def permalink(self, channel: str, ts: str) -> str | None:
        """A link to a message, or None."""
        try:
            response = await self.client.chat_getPermalink(channel=channel, message_ts=ts)
        except SlackApiError as err:
            _log_refusal("chat.getPermalink", channel, err)
            return None
        return str(response["permalink"])

    async def update(self, channel: str, ts: str, reply: Reply) -> bool:
        """Replace a message in place; False when Slack refused (logged)."""
        try:
            await self.client.chat_update(channel=channel, ts=ts, text=reply.fallback, blocks=reply.blocks)
        except SlackApiError as err:
            _log_refusal("chat.update", channel, err)
            return False
        return True


def _log_refusal(method: str, channel: str, err: SlackApiError) -> None:
    details = err.response.get("response_metadata", {}).get("messages", [])
    log.error("Slack refused %s to %s: %s %s", method, channel, err.response.get("error"), "; ".join(details))
