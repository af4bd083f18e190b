"""The Slack edge of the change calendar: ``/calendar`` (agenda, freezes, feed, moves) and the booking form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.slack import ids
from bot.slack.calendar.commands import CalendarCommands


def register(app: AsyncApp, calendar: CalendarCommands, track: Callable[[Any], Any]) -> None:
    """The booking form's listener."""
    app.view(ids.CALENDAR_ADD_VIEW)(track(calendar.on_booking))
