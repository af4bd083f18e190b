"""The Slack edge of governance: out-of-band schema alerts (changes made past ChangeOps) and the monthly metadata health report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.slack import ids
from bot.slack.governance.out_of_band import OutOfBandSlack


def register(app: AsyncApp, slack: OutOfBandSlack, track: Callable[[Any], Any]) -> None:
    """Attach the alert's buttons."""
    app.action(ids.OOB_PROPOSE)(track(slack.on_button))
    app.action(ids.OOB_ACK)(track(slack.on_button))
