"""``/sli``: status, silence, unsilence, history, coverage; and who may act on a pipeline's alerts."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from bot.domain.calendar import CalendarError
from bot.domain.lineage.catalog import moment
from bot.domain.lineage.model import Team
from bot.domain.sli.escalation import DEFAULT_AFTER, chain
from bot.domain.sli.evaluator import StateError
from bot.domain.sli.pipeline import TITLES, PipelineError, Sli, span
from bot.services.proposals import Membership
from bot.services.sli import SliError, SliService
from bot.slack.render import Reply, escape, mention, when
from bot.slack.request import CommandRequest
from bot.slack.sli.messages import history_lines, overview, status_table, step

SILENCE_USAGE = "`/sli silence PIPELINE SLI|all DURATION|UNTIL [reason…]` (for example `/sli silence orders-enrich source_lag 4h deploying`)"
MAX_SILENCE = timedelta(days=30)


class SliCommands:
    """What the ``/sli`` subcommands and the alert buttons call."""

    def __init__(self, sli: SliService, membership: Membership) -> None:
        self.sli, self.membership = sli, membership

    async def may_act(self, user: str, pipeline_name: str) -> str | None:
        """None when ``user`` may acknowledge and silence the pipeline's alerts (its team's members and oncall, and the global
        oncall, whom its pages escalate to), else why not."""
        pipeline = await self.sli.pipeline(pipeline_name)
        team = (await self.sli.lineage.teams()).get(pipeline.owner)
        if team is not None and (user in team.oncall or user in await self.membership.members(team)):
            return None
        everyone = await self.sli.lineage.global_oncall()
        if everyone is not None and user in await self.membership.members(everyone):
            return None
        also = " (or the global oncall)" if everyone is not None else ""
        return f"Only members or oncall of {escape(pipeline.owner)}{also} can act on the alerts of {escape(pipeline.name)}; nothing changed."

    async def oncall(self, request: CommandRequest) -> Reply:
        """``/oncall [TEAM]``: who is on call now (the team's oncall user group as Slack has it, else the catalog's list),
        then its escalation chain, step by step, and the global oncall."""
        teams = await self.sli.lineage.teams()
        if len(request.args) > 1:
            return Reply.text("Usage: `/oncall [TEAM]` (one team, or none for every team).")
        if request.args and request.args[0] not in teams:
            known = ", ".join(sorted(teams)[:20]) or "none: load a catalog with teams"
            return Reply.text(f"There is no team {escape(request.args[0])!s} (known: {escape(known)}).")
        chosen = [teams[request.args[0]]] if request.args else [teams[name] for name in sorted(teams)][:40]
        everyone = await self.sli.lineage.global_oncall()
        lines = []
        for team in chosen:
            now = await self.membership.members(Team(team.name, team.oncall_usergroup, list(team.oncall)))
            source = "its oncall user group" if team.oncall_usergroup else "the catalog"
            after = int((team.escalate_after or DEFAULT_AFTER.total_seconds()) // 60)
            steps = chain(team.escalation, everyone is not None)
            line = f"*{escape(team.name)}*: {', '.join(mention(u) for u in sorted(now)) or 'nobody'} ({source})"
            line += (f"\n    unacknowledged pages go on every {after} min to: " + " → ".join(step(s) for s in steps)) if steps else \
                "\n    no escalation chain: unacknowledged pages are reminded, never handed on"
            lines.append(line)
        if everyone is not None:
            members = await self.membership.members(everyone)
            lines.append(f"*Global oncall*: {', '.join(mention(u) for u in sorted(members)) or 'nobody'}")
        return Reply.sections("*Who is on call now*", lines or ["No teams in the catalog yet."])

    async def status(self, request: CommandRequest) -> Reply:
        """``status`` (every pipeline) or ``status PIPELINE`` (its SLIs)."""
        try:
            if len(request.args) > 1:
                return Reply.text(f"`{escape(' '.join(request.args[1:]))}` is not understood here. Usage: `/sli status [PIPELINE]`")
            if request.args:
                rows = await self.sli.status(request.args[0])
                return Reply.sections(f"*SLIs of {escape(request.args[0])}*", status_table(rows))
            rows = await self.sli.status()
        except SliError as err:
            return Reply.text(f"{escape(err)}.")
        if not rows:
            return Reply.text("No pipeline is declared yet: add `pipelines:` to the catalog and `bot catalog load` it.")
        refused = ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in sorted(self.sli.rejected.items()))
        lines = overview(rows) + ([f"_Samples refused by this replica since it started: {refused}._"] if refused else [])
        return Reply.sections("*Pipelines* (`/sli status PIPELINE` for the SLIs of one)", lines)

    async def silence(self, request: CommandRequest) -> Reply:
        """``silence PIPELINE SLI|all DURATION|UNTIL [reason]``."""
        args = request.args
        if len(args) < 3:
            return Reply.text(f"Usage: {SILENCE_USAGE}")
        pipeline, sli, length, reason = args[0], args[1].lower(), args[2], " ".join(args[3:])[:500]
        if sli != "all" and sli not in {s.value for s in Sli}:
            return Reply.text(f"There is no SLI `{escape(sli)}`: use one of {', '.join(Sli)} or `all`. Nothing changed.")
        now = self.sli.clock()
        try:
            until = until_of(length, now)
        except ValueError as err:
            return Reply.text(f"{escape(err)}. Nothing changed. Usage: {SILENCE_USAGE}")
        try:
            refusal = await self.may_act(request.user, pipeline)
            if refusal:
                return Reply.text(refusal)
            await self.sli.silence(pipeline, sli, until, request.user, reason)
        except (SliError, StateError) as err:
            return Reply.text(f"{escape(err)}; nothing changed.")
        what = "every SLI" if sli == "all" else TITLES[Sli(sli)]
        return Reply.text(f":mute: {what} of *{escape(pipeline)}* is silenced until {when(until)}: alerts are recorded, not posted, "
                          f"and reminders wait. `/sli unsilence {escape(pipeline)} {sli}` lifts it early.")

    async def unsilence(self, request: CommandRequest) -> Reply:
        """``unsilence PIPELINE SLI|all``."""
        if len(request.args) != 2:
            return Reply.text("Usage: `/sli unsilence PIPELINE SLI|all`")
        pipeline, sli = request.args[0], request.args[1].lower()
        try:
            refusal = await self.may_act(request.user, pipeline)
            if refusal:
                return Reply.text(refusal)
            await self.sli.unsilence(pipeline, sli, request.user)
        except (SliError, StateError) as err:
            return Reply.text(f"{escape(err)}; nothing changed.")
        return Reply.text(f":loud_sound: Alerts of *{escape(pipeline)}* ({escape(sli)}) are posted again.")

    async def history(self, request: CommandRequest) -> Reply:
        """``history PIPELINE``: its episodes of the last seven days."""
        if len(request.args) != 1:
            return Reply.text("Usage: `/sli history PIPELINE`")
        try:
            episodes = await self.sli.history(request.args[0])
        except SliError as err:
            return Reply.text(f"{escape(err)}.")
        return Reply.sections(f"*Alerts of {escape(request.args[0])}, last 7 days*", history_lines(episodes) or ["_None: all quiet._"])

    async def coverage(self, request: CommandRequest) -> Reply:
        """``coverage``: pipelines that are not production-ready (a mandatory SLI unmeasured or silent)."""
        rows = await self.sli.coverage()
        if not rows:
            return Reply.text("No pipeline is declared yet: add `pipelines:` to the catalog and `bot catalog load` it.")
        lines = []
        for row in rows:
            if row["missing"]:
                lines.append(f":x: *{escape(row['pipeline'])}* ({escape(row['owner'])}): nothing measures {', '.join(row['missing'])}")
            elif row["silent"]:
                lines.append(f":grey_question: *{escape(row['pipeline'])}* ({escape(row['owner'])}): no recent samples of {', '.join(row['silent'])}")
        ready = len(rows) - len(lines)
        late = [f"{escape(row['pipeline'])}: " + ", ".join(f"{count:,} late {escape(sli)}" for sli, count in sorted(row["late"].items()))
                for row in rows if row["late"]]
        if late:
            lines.append("Samples dropped for arriving after newer ones of their series (they never change an alert): " + "; ".join(late))
        feed = self.sli.feed
        if feed is not None and feed.unreachable is not None:
            lines.append(f":electric_plug: This bot cannot reach the cluster to read `{escape(feed.topic)}` ({escape(feed.unreachable[:200])}; "
                         f"since {feed.since:%H:%M} UTC). That is the bot's reachability, not the pipelines': no data waits until it can.")
        elif feed is not None and feed.behind:
            lines.append(f":hourglass: This bot reads `{escape(feed.topic)}` late: {feed.messages:,} sample records behind, reading ones written "
                         f"{int(feed.age.total_seconds())} s ago (since {feed.since:%H:%M} UTC). That is the bot's lag, not the pipelines': "
                         "no data waits until it catches up.")
        title = (f"*SLI coverage*: {ready} of {len(rows)} pipelines production-ready (the four mandatory SLIs — source lag, commit "
                 "success rate, schema error rate, DLQ volume — measured and reporting)")
        return Reply.sections(title, lines or ["Every pipeline is covered."])


def until_of(text: str, now: datetime) -> datetime:
    """``4h``, ``90m``, ``1d`` from now, or an ISO 8601 time with an offset; ValueError saying what is wrong."""
    if re.fullmatch(r"[0-9][0-9dhms.]*", text.lower()):
        try:
            length = span(text, "duration")
        except PipelineError as err:
            raise ValueError(str(err)) from None
        if not timedelta(0) < length <= MAX_SILENCE:
            raise ValueError(f"a silence lasts between a minute and {MAX_SILENCE.days} days")
        return now + length
    try:
        until = moment(text)
    except CalendarError as err:
        raise ValueError(f"{text!r} is neither a duration (4h, 90m, 1d) nor a time: {err}") from None
    if until <= now:
        raise ValueError("that time is in the past")
    if until - now > MAX_SILENCE:
        raise ValueError(f"a silence lasts at most {MAX_SILENCE.days} days")
    return until
