"""Slash commands: ``/schema <subcommand> ...``, routed to one handler per subcommand."""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from bot.domain.compat.rules import CATALOGUE
from bot.slack import ids
from bot.slack.calendar.commands import CalendarCommands
from bot.slack.flink.commands import FlinkCommands
from bot.slack.governance.health import HealthSlack
from bot.slack.ops.commands import OpsCommands
from bot.slack.proposals.commands import Services
from bot.slack.readers.actions import Readers
from bot.slack.render import Reply, escape
from bot.slack.request import CommandRequest
from bot.slack.sli.commands import SliCommands
from bot.slack.transitions.commands import TransitionSlack

Handler = Callable[[CommandRequest], Awaitable[Reply | None]]
SMART_QUOTES = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'"})


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

    def __init__(self, command: str, default: str = "help") -> None:
        self.command = command
        self.default = default  # what the command alone does; with a default other than help, unknown words go to it too
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
        text = (command.get("text") or "").translate(SMART_QUOTES)  # Slack's clients may turn typed quotes into curly ones
        try:
            words = shlex.split(text)
        except ValueError as err:
            await ack(**Reply.text(f"I could not read that command: {err}. Try `{self.command} help`.").ack())
            return
        name = words[0].lower() if words else self.default
        sub = self.subcommands.get(name)
        args = words[1:]
        if sub is None and self.default != "help":
            sub, args = self.subcommands[self.default], words
        if sub is None:
            await ack(**Reply.text(f"I don't know `{self.command} {name}`. Here is what I can do:").extend(self.help()).ack())
            return
        request = CommandRequest(self.command, sub.name, args, command["user_id"], command["channel_id"], command.get("trigger_id", ""))
        if sub.in_ack:
            answer = await sub.handler(request)
            await ack(**(answer.ack() if answer else {}))
            return
        await ack()
        reply = await sub.handler(request)
        if reply is not None:
            await respond(**reply.respond())


def schema_router(services: Services, readers: Readers, health: HealthSlack, transitions: TransitionSlack) -> Router:
    """``/schema``: every subcommand the bot offers."""
    router = Router(ids.SCHEMA_COMMAND)
    for sub in (
        Subcommand("help", "help", "this list of commands", lambda _r: _answer(router.help()), in_ack=True),
        Subcommand("propose", "propose [subject] [--transition]", "propose a schema change (opens a form); --transition: ship a breaking "
                   "change in steps, both versions readable until every reader moved", _proposing(services, transitions)),
        Subcommand("transition", "transition ID|list [moved|extend|contract|rollback]", "a transition: its readers and where it stands; "
                   "say your readers moved, extend, contract, roll back", transitions.command),
        Subcommand("status", "status ID", "a proposal's card, as it stands", services.status),
        Subcommand("list", "list [mine|waiting|SUBJECT]", "recent proposals: yours, waiting on you, or of a subject", services.listing),
        Subcommand("audit", "audit ID", "who did what to a proposal, when, from where", services.audit),
        Subcommand("withdraw", "withdraw ID", "take back your proposal", services.withdraw),
        Subcommand("extend", "extend ID REASON", "move your proposal's deadline once", services.extend),
        Subcommand("claim", "claim JOB TEAM", "claim a job nobody owns for your team (proposals then ask it)", services.claim),
        Subcommand("consumers", "consumers SUBJECT", "every consumer group Kafka says reads its topic, declared or not", readers.consumers),
        Subcommand("health", "health [TEAM]", "the metadata health report of this month so far (overall and per team, or one team)",
                   health.command),
        Subcommand("rules", "rules", "the rules a schema change is classified by", lambda _r: _answer(rules_reply()), in_ack=True),
    ):
        router.add(sub)
    return router


def _proposing(services: Services, transitions: TransitionSlack) -> Handler:
    """``propose``: the proposal form, or with ``--transition`` the transition form."""

    async def handler(request: CommandRequest) -> Reply | None:
        named = [a for a in request.args if a != "--transition"]
        if len(named) > 1 or any(a.startswith("-") for a in named):  # a misspelt flag must not open the other form
            wrong = next((a for a in named if a.startswith("-")), named[-1])
            return Reply.text(f"`{escape(wrong)}` is not understood here; nothing was opened. "
                              "Usage: `/schema propose [SUBJECT]` (the form), `/schema propose [SUBJECT] --transition` (a transition's form)")
        if "--transition" in request.args:
            return await transitions.open_form(request, await services.registry.names())
        return await services.propose(request)

    return handler


async def _answer(reply: Reply) -> Reply:
    return reply


def rules_reply() -> Reply:
    """The classification rules."""
    lines = [f"`{rule.id}` ({rule.level}) — {rule.purpose}" for rule in CATALOGUE]
    return Reply.sections("*Classification rules* — the level of a change is the worst of its findings; "
                          "failing a direction the subject's mode requires is always breaking.", lines)


def calendar_router(calendar: CalendarCommands) -> Router:
    """``/calendar``: the agenda by default, the feed, help."""
    router = Router(ids.CALENDAR_COMMAND, default="agenda")
    for sub in (
        Subcommand("agenda", "[today|week|next week|YYYY-MM-DD]", "what changes when, in your time zone, with conflicts and freezes",
                   calendar.agenda),
        Subcommand("add", "add", "book a window: an upgrade, a backfill, maintenance… (opens a form)", calendar.add),
        Subcommand("feed", "feed", "your private iCalendar feed URL (a new one replaces the old)", calendar.feed),
        Subcommand("freeze", "freeze [add …|lift NAME]", "the freeze windows; oncall adds and lifts them", calendar.freeze),
        Subcommand("move", "move ID START END", "move an entry (its team or oncall)", calendar.move),
        Subcommand("cancel", "cancel ID", "cancel an entry (its team or oncall)", calendar.cancel),
        Subcommand("help", "help", "this list of commands", lambda _r: _answer(router.help()), in_ack=True),
    ):
        router.add(sub)
    return router


def sli_router(sli: SliCommands) -> Router:
    """``/sli``: the pipelines' SLIs, silences, history and coverage."""
    router = Router(ids.SLI_COMMAND, default="status")
    for sub in (
        Subcommand("status", "status [PIPELINE]", "every pipeline at a glance, or the SLIs of one", sli.status),
        Subcommand("silence", "silence PIPELINE SLI|all 4h|UNTIL [reason]", "hold a pipeline's alerts (its team or oncall)", sli.silence),
        Subcommand("unsilence", "unsilence PIPELINE SLI|all", "lift a silence early", sli.unsilence),
        Subcommand("history", "history PIPELINE", "its alerts of the last 7 days", sli.history),
        Subcommand("coverage", "coverage", "pipelines that are not production-ready (a mandatory SLI unmeasured or silent)", sli.coverage),
        Subcommand("help", "help", "this list of commands", lambda _r: _answer(router.help()), in_ack=True),
    ):
        router.add(sub)
    return router


def oncall_router(sli: SliCommands) -> Router:
    """``/oncall [TEAM]``: who is on call now, and where unacknowledged pages go next."""
    router = Router(ids.ONCALL_COMMAND, default="show")
    router.add(Subcommand("show", "[TEAM]", "who is on call now for every team (or one), and each team's escalation chain", sli.oncall))
    router.add(Subcommand("help", "help", "this list of commands", lambda _r: _answer(router.help()), in_ack=True))
    return router


def ops_routers(ops: OpsCommands) -> dict[str, Router]:
    """``/backfill`` and ``/replay`` (arguments straight after the command; alone: a form) and ``/ops``."""
    backfill = Router(ids.BACKFILL_COMMAND, default="plan")
    backfill.add(Subcommand("plan", "GROUP TOPIC[,TOPIC...] | --all-topics  --to-time T | --by-duration 2h | --to-offsets 0:1200,1:980 | --to-earliest | --to-latest | "
                                    "--shift-by -500 [--partitions 0,1]",
                            "oncall: plan a reset of a stopped consumer group (alone: a form); Confirm applies it", ops.backfill))
    backfill.add(Subcommand("help", "help", "this list of commands", lambda _r: _answer(backfill.help()), in_ack=True))
    replay = Router(ids.REPLAY_COMMAND, default="plan")
    replay.add(Subcommand("plan", "DLQ --to TOPIC | --to-original [--since T] [--until T] [--limit N] [--filter h=v] [--rate 500/s] [--again] [--dry-run]",
                          "oncall: plan an exactly-once copy of dead letters, to a topic or each back to its own (alone: a form); "
                          "Confirm runs it", ops.replay))
    replay.add(Subcommand("peek", "DLQ [N] [--error-header NAME]",
                          "oncall: look before you replay: the newest N dead letters decoded, grouped by error, with counts", ops.peek))
    replay.add(Subcommand("help", "help", "this list of commands", lambda _r: _answer(replay.help()), in_ack=True))
    status = Router(ids.OPS_COMMAND, default="status")
    status.add(Subcommand("status", "status", "running and recent backfills and replays, with their outcome", ops.status))
    status.add(Subcommand("help", "help", "this list of commands", lambda _r: _answer(status.help()), in_ack=True))
    return {ids.BACKFILL_COMMAND: backfill, ids.REPLAY_COMMAND: replay, ids.OPS_COMMAND: status}


def flink_router(flink: FlinkCommands) -> Router:
    """``/flink``: the catalog's Flink jobs as Flink sees them."""
    router = Router(ids.FLINK_COMMAND)
    router.add(Subcommand("status", "status JOB", "a Flink job: state, last checkpoint against its interval, failures, restarts, backpressure, "
                                                  "pending records, the newest savepoint", flink.status))
    router.add(Subcommand("pause", "pause JOB", "oncall: plan to stop the job with a savepoint (not drained); Confirm does it", flink.pause))
    router.add(Subcommand("resume", "resume JOB", "oncall: plan to start the job again from its last pause's savepoint with its SQL", flink.resume))
    router.add(Subcommand("help", "help", "this list of commands", lambda _r: _answer(router.help()), in_ack=True))
    return router


def register(app: AsyncApp, services: Services, calendar: CalendarCommands, sli: SliCommands, ops: OpsCommands, readers: Readers,
             health: HealthSlack, flink: FlinkCommands, transitions: TransitionSlack, track: Callable[[Any], Any]) -> dict[str, Router]:
    """Attach every slash command to the app; returns the routers (App Home lists their help)."""
    routers = {ids.SCHEMA_COMMAND: schema_router(services, readers, health, transitions), ids.CALENDAR_COMMAND: calendar_router(calendar), ids.SLI_COMMAND: sli_router(sli),
               **ops_routers(ops), ids.ONCALL_COMMAND: oncall_router(sli), ids.FLINK_COMMAND: flink_router(flink)}
    assert tuple(routers) == ids.SLASH_COMMANDS
    for name, router in routers.items():
        app.command(name)(track(_listener(router)))
    return routers


def _listener(router: Router) -> Callable[..., Awaitable[None]]:
    """A plain coroutine function for Bolt (it injects arguments by parameter name)."""

    async def listener(ack: AsyncAck, respond: AsyncRespond, command: dict[str, Any]) -> None:
        await router(ack, respond, command)

    return listener
