"""The Slack edge of Flink jobs: ``/flink status|pause|resume JOB`` (routed with the other slash commands) and the
alerts' Pause and Resume buttons."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.slack import ids
from bot.slack.flink.actions import FlinkActions


def register(app: AsyncApp, actions: FlinkActions, track: Callable[[Any], Any]) -> None:
    """Attach the alerts' Pause and Resume buttons."""
    app.action(ids.SLI_FLINK_PAUSE)(track(actions.on_alert))
    app.action(ids.SLI_FLINK_RESUME)(track(actions.on_alert))
