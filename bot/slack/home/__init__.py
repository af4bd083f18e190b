"""The App Home tab: what waits on you, the next days' changes, jobs nobody owns, the commands; kept current while open."""

from bot.slack.home.follow import HOME, HomeFollow
from bot.slack.home.tab import HomeTab, register

__all__ = ["HOME", "HomeFollow", "HomeTab", "register"]
