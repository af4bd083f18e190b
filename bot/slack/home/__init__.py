"""The App Home tab: what waits on you, the next days' changes, jobs nobody owns, the commands."""

from bot.slack.home.tab import register

__all__ = ["register"]
