"""The Bolt app: listeners, middleware and the error handler, wired to the services."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.config import Config
from bot.services.deliveries import Deliveries
from bot.slack import commands, home
from bot.slack.client import web_client
from bot.slack.middleware import once_per_delivery

log = logging.getLogger(__name__)


def build_app(config: Config, deliveries: Deliveries) -> AsyncApp:
    """An AsyncApp that verifies signatures, ignores repeated deliveries and serves every listener."""
    app = AsyncApp(
        client=web_client(config.slack_bot_token, config.slack_api_url),
        signing_secret=config.slack_signing_secret,
        logger=logging.getLogger("bot.slack.bolt"),
    )
    app.middleware(once_per_delivery(deliveries))
    routers = commands.register(app)
    home.register(app, routers)

    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        log.exception("a Slack listener failed (%s)", body.get("type") or body.get("command"), exc_info=error)

    app.error(on_error)
    return app
