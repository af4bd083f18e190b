"""Slash commands: ``/schema <subcommand> ...``, routed to one handler per subcommand."""

from __future__ import annotations

import logging
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from bot.domain.compat.rules import CATALOGUE
from bot.slack import ids
from bot.slack.render import Reply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CommandRequest:
    """One slash command as the handlers see it."""

    command: str
    subcommand: str
    args: list[str]
    user: str
    channel: str
    trigger_id: str


Handler = Callable[[CommandRequest], Awaitable[Reply]]


@dataclass(frozen=True)
class Subcommand:
    """A subcommand: its usage line, a one-line summary, and its handler."""

    name: str
    usage: str
    summary: str
    handler: Handler
    in_ack: bool = False


class Router:
    """The subcommands of one slash command, in the order help lists them."""

    def __init__(self, command: str) -> None:
        self.command = command
        self.subcommands: dict[str, Subcommand] = {}

    def add(self, sub: Subcommand) -> None:
        """Register a subcommand."""
        self.subcommands[sub.name] = sub

    def help(self) -> Reply:
        """The list of commands."""
        lines = [f"`{self.command} {s.usage}` — {s.summary}" for s in self.subcommands.values()]
        return Reply.sections(f"*ChangeOps* — `{self.command}` commands", lines)

    async def __call__(self, ack: AsyncAck, respond: AsyncRespond, command: dict[str, Any]) -> None:
        """The Bolt listener: parse, ack (with the answer when it is instant), then do the work."""
        try:
            words = shlex.split(command.get("text") or "")
        except ValueError as err:
            await ack(**Reply.text(f"I could not read that command: {err}. Try `{self.command} help`.").ack())
            return
        name = words[0].lower() if words else "help"
        sub = self.subcommands.get(name)
        if sub is None:
            await ack(**Reply.text(f"I don't know `{self.command} {name}`. Here is what I can do:").extend(self.help()).ack())
            return
        request = CommandRequest(self.command, name, words[1:], command["user_id"], command["channel_id"], command.get("trigger_id", ""))
        if sub.in_ack:
            await ack(**(await sub.handler(request)).ack())
            return
        await ack()
        reply = await sub.handler(request)
        await respond(**reply.respond())


def schema_router() -> Router:
    """``/schema``: every subcommand the bot offers."""
    router = Router(ids.SCHEMA_COMMAND)

    async def help_handler(_request: CommandRequest) -> Reply:
        return router.help()

    async def rules_handler(_request: CommandRequest) -> Reply:
        lines = [f"`{rule.id}` ({rule.level}) — {rule.purpose}" for rule in CATALOGUE]
        return Reply.sections("*Classification rules* — the level of a change is the worst of its findings; "
                              "failing a direction the subject's mode requires is always breaking.", lines)

    router.add(Subcommand("help", "help", "this list of commands", help_handler, in_ack=True))
    router.add(Subcommand("rules", "rules", "the rules a schema change is classified by", rules_handler, in_ack=True))
    return router


def slash_commands() -> dict[str, Router]:
    """Every slash command the bot registers (the Slack app manifest must declare exactly these)."""
    return {ids.SCHEMA_COMMAND: schema_router()}


def register(app: AsyncApp) -> dict[str, Router]:
    """Attach every slash command to the app; returns the routers (App Home lists their help)."""
    routers = slash_commands()
    for name, router in routers.items():
        app.command(name)(router)
    return routers
