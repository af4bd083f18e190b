"""The Slack edge of SLI alerts: the ``/sli`` command, the alert messages' buttons and forms, their delivery."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.slack import ids
from bot.slack.sli.actions import AlertActions


def register(app: AsyncApp, actions: AlertActions, track: Callable[[Any], Any]) -> None:
    """Attach the alert buttons and the silence form."""
    app.action(ids.SLI_ACK)(track(actions.on_acknowledge))
    app.action(ids.SLI_ACK_ALL)(track(actions.on_acknowledge_all))
    app.action(ids.SLI_SILENCE)(track(actions.on_silence))
    app.action(ids.SLI_UNSILENCE)(track(actions.on_unsilence))
    app.action(ids.SLI_RUNBOOK)(track(actions.on_runbook))
    app.action(ids.SLI_CHANGES)(track(actions.on_changes))
    app.action(ids.SLI_DEAD_LETTERS)(track(actions.on_dead_letters))
    app.view(ids.SLI_SILENCE_VIEW)(track(actions.on_silence_form))
