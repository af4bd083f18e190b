"""The Slack edge of schema proposals: ``/schema`` (propose, status, list, audit, withdraw, extend, claim), the proposal form,
the card and its buttons, and the release gate's reports."""

from bot.slack.proposals.listeners import register

__all__ = ["register"]
