"""The Slack edge of oncall operations: ``/backfill``, ``/replay``, ``/ops``, the operation messages' buttons,
the forms, and their delivery."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.slack import ids
from bot.slack.ops.actions import OpsActions


def register(app: AsyncApp, actions: OpsActions, track: Callable[[Any], Any]) -> None:
    """Attach the buttons, the forms, and the alerts' backfill and replay buttons."""
    app.action(ids.OPS_CONFIRM)(track(actions.on_confirm))
    app.action(ids.OPS_CANCEL)(track(actions.on_cancel))
    app.action(ids.OPS_UNDO)(track(actions.on_undo))
    app.action(ids.SLI_BACKFILL)(track(actions.on_alert))
    app.action(ids.SLI_REPLAY)(track(actions.on_alert))
    app.view(ids.BACKFILL_VIEW)(track(actions.on_backfill_form))
    app.view(ids.REPLAY_VIEW)(track(actions.on_replay_form))
