"""``respond`` over the bot's kept-alive connections.

Bolt's ``respond`` opens an HTTP session for every call: a new TCP and TLS connection to Slack for each ephemeral
answer and card replaced through a ``response_url`` (most clicks and ``/schema status`` make one). Here it posts
through the pool the Web API clients share (``SlackConnections``)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.context.respond.internals import _build_message
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.webhook import WebhookResponse
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.slack.client import SlackConnections

log = logging.getLogger(__name__)


class PooledRespond(AsyncRespond):
    """Bolt's ``respond`` (the same arguments, the same message), through ``connections``' pool once it is open."""

    def __init__(self, response_url: str, connections: SlackConnections) -> None:
        super().__init__(response_url=response_url)
        self.connections = connections

    async def __call__(self, text: str | dict[str, Any] = "", **fields: Any) -> WebhookResponse:  # type: ignore[override]
        assert self.response_url is not None
        client = AsyncWebhookClient(url=self.response_url, session=self.connections.session)
        message = _build_message(**text) if isinstance(text, dict) else _build_message(text=text, **fields)
        answer = await client.send_dict(message)
        if answer.status_code != 200:  # an expired or used-up response_url (404), or Slack failing: the person saw nothing
            log.warning("Slack did not take an answer through a response_url (HTTP %s: %s); the person it was for did not see it",
                        answer.status_code, str(answer.body)[:200])
        return answer


class PooledResponses(AsyncMiddleware):
    """Gives each request that has a ``response_url`` a ``PooledRespond``."""

    def __init__(self, connections: SlackConnections) -> None:
        self.connections = connections

    async def async_process(self, *, req: AsyncBoltRequest, resp: BoltResponse,
                            next: Callable[[], Awaitable[BoltResponse]]) -> BoltResponse | None:
        url = req.context.response_url
        if url is not None:
            req.context["respond"] = PooledRespond(url, self.connections)
        return await next()
