"""A Slack emulator over real HTTP: the Web API the bot calls, and a driver that plays Slack's side."""

from bot.emulator.driver import AckTimeout, Delivery, SlackDriver, sign
from bot.emulator.server import Emulator, SlackError
from bot.emulator.workspace import BOT_USER_ID, TEAM_ID, Workspace

__all__ = ["BOT_USER_ID", "TEAM_ID", "AckTimeout", "Delivery", "Emulator", "SlackDriver", "SlackError", "Workspace", "sign"]
