"""The App Home tab."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.commands import Router

log = logging.getLogger(__name__)


def home_view(routers: dict[str, Router]) -> dict[str, Any]:
    """What the Home tab shows: the commands, by slash command."""
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": "ChangeOps"}},
                                    {"type": "context", "elements": [{"type": "mrkdwn", "text": "Schema changes without surprises; safe hands on Kafka."}]}]
    for router in routers.values():
        blocks.extend(router.help().blocks)
    return {"type": "home", "blocks": blocks}


def register(app: AsyncApp, routers: dict[str, Router]) -> None:
    """Publish the Home tab whenever a user opens it."""

    async def on_home_opened(event: dict[str, Any], client: AsyncWebClient) -> None:
        if event.get("tab", "home") != "home":
            return
        try:
            await client.views_publish(user_id=event["user"], view=home_view(routers))
        except SlackApiError as err:
            log.error("could not publish the Home tab for %s: %s", event["user"], err.response.get("error"))

    app.event("app_home_opened")(on_home_opened)
