"""The App Home tab."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.services.proposals import Proposals
from bot.slack.commands import Router
from bot.slack.render import Reply
from bot.slack.schema_commands import summary_line

log = logging.getLogger(__name__)


async def home_view(user: str, routers: dict[str, Router], proposals: Proposals) -> dict[str, Any]:
    """What the Home tab shows: what waits on the user, their proposals, recent decisions, the commands."""
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": "ChangeOps"}},
                                    {"type": "context", "elements": [{"type": "mrkdwn", "text": "Schema changes without surprises; safe hands on Kafka."}]}]
    waiting = await proposals.listing(waiting_for=user, limit=10)
    mine = await proposals.listing(proposer=user, limit=10)
    recent = [v for v in await proposals.listing(limit=30) if v.state.final][:10]
    for title, views in (("Waiting on you", waiting), ("Your proposals", mine), ("Recent decisions", recent)):
        blocks.extend(Reply.sections(f"*{title}*", [summary_line(v) for v in views] or ["_none_"]).blocks)
    blocks.append({"type": "divider"})
    for router in routers.values():
        blocks.extend(router.help().blocks)
    return {"type": "home", "blocks": blocks[:100]}


def register(app: AsyncApp, routers: dict[str, Router], proposals: Proposals, track: Callable[[Any], Any]) -> None:
    """Publish the Home tab whenever a user opens it."""

    async def on_home_opened(event: dict[str, Any], client: AsyncWebClient) -> None:
        if event.get("tab", "home") != "home":
            return
        try:
            await client.views_publish(user_id=event["user"], view=await home_view(event["user"], routers, proposals))
        except SlackApiError as err:
            log.error("could not publish the Home tab for %s: %s", event["user"], err.response.get("error"))

    app.event("app_home_opened")(track(on_home_opened))
