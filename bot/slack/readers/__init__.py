"""The Slack edge of the reader census: ``/schema consumers``, the card's menu of undeclared readers and the attribution form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.slack import ids
from bot.slack.readers.actions import Readers


def register(app: AsyncApp, readers: Readers, track: Callable[[Any], Any]) -> None:
    """Attach the card's reader menu and the attribution form."""
    app.action(ids.READER_MENU)(track(readers.on_menu))
    app.view(ids.ATTRIBUTE_VIEW)(track(readers.on_attribute))
