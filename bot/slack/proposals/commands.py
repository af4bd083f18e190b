"""The ``/schema`` subcommands of the approval workflow: propose, status, list, audit, withdraw, extend."""

from __future__ import annotations

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.approvals import State
from bot.services.proposals import ProposalError, Proposals, ProposalView
from bot.services.registry import Registry
from bot.slack.proposals.cards import STATE_TEXT, card
from bot.slack.proposals.listeners import propose_modal
from bot.slack.render import Reply, escape, mention
from bot.slack.request import CommandRequest
from bot.store.models import AuditEntry


class Services:
    """What the subcommands call."""

    def __init__(self, proposals: Proposals, registry: Registry, client: AsyncWebClient) -> None:
        self.proposals, self.registry, self.client = proposals, registry, client

    async def propose(self, request: CommandRequest) -> Reply | None:
        """Open the form (the subject preselected when given)."""
        subjects = await self.registry.names()
        if not subjects:
            return Reply.text("There are no subjects yet: load the catalog first (`bot catalog load catalog.yaml`).")
        chosen = request.args[0] if request.args else None
        if chosen is not None and chosen not in subjects:
            return Reply.text(f"Unknown subject `{escape(chosen)}`. Known subjects: {', '.join(f'`{escape(s)}`' for s in subjects[:30])}")
        try:
            await self.client.views_open(trigger_id=request.trigger_id, view=propose_modal(subjects, chosen))
        except SlackApiError as err:
            return Reply.text(f"Slack would not open the form ({err.response.get('error')}); try again.")
        return None

    async def status(self, request: CommandRequest) -> Reply:
        """A proposal's card."""
        try:
            view = await self.proposals.view(_number(request, "status ID"))
            return card(view, clashes=await self.proposals.calendar.proposal_conflicts(view.id))
        except ProposalError as err:
            return Reply.text(str(err))

    async def listing(self, request: CommandRequest) -> Reply:
        """``mine``, ``waiting`` (on me) or a subject's proposals; recent ones by default."""
        which = request.args[0] if request.args else "recent"
        if len(request.args) > 1:
            return Reply.text(f"`{escape(' '.join(request.args[1:]))}` is not understood here. Usage: `/schema list [mine|waiting|SUBJECT]`")
        more = LISTED + 1  # one past what is shown: whether there are more
        if which == "mine":
            views, title = await self.proposals.listing(proposer=request.user, limit=more), "Your proposals"
        elif which == "waiting":
            views, title = await self.proposals.listing(waiting_for=request.user, limit=more), "Waiting on you"
        elif which == "recent":
            views, title = await self.proposals.listing(limit=more), "Recent proposals"
        else:
            if which not in await self.registry.names():
                return Reply.text(f"`{escape(which)}` is neither `mine`, `waiting`, nor a known subject. Usage: `/schema list [mine|waiting|SUBJECT]`")
            views, title = await self.proposals.listing(subject=which, limit=more), f"Proposals for {escape(which)}"
        if not views:
            return Reply.text(f"{title}: none.")
        return Reply.sections(f"*{title}*", listed(views, LISTED, "older ones: `/schema status ID`"))

    async def audit(self, request: CommandRequest) -> Reply:
        """The audit trail of a proposal."""
        try:
            number = _number(request, "audit ID")
            entries = await self.proposals.audit_trail(number)
        except ProposalError as err:
            return Reply.text(str(err))
        lines = [f"{e.at:%Y-%m-%d %H:%M:%S} · {actor_text(e)} · {escape(e.action)} · via {escape(e.surface)}"
                 + (f" · {escape(e.detail.get('team'))}" if e.detail.get("team") else "")
                 + (f" — {escape(e.detail.get('reason'))}" if e.detail.get("reason") else "") for e in entries]
        return Reply.sections(f"*Audit trail of #{number}*", lines or ["(empty)"])

    async def withdraw(self, request: CommandRequest) -> Reply:
        """Take back a proposal."""
        try:
            number = _number(request, "withdraw ID")
            await self.proposals.withdraw(number, request.user)
        except ProposalError as err:
            return Reply.text(str(err))
        return Reply.text(f"You withdrew #{number}.")

    async def extend(self, request: CommandRequest) -> Reply:
        """Move a proposal's deadline once, with a reason."""
        try:
            number = _number(request, "extend ID REASON", alone=False)
            view = await self.proposals.extend(number, request.user, " ".join(request.args[1:]))
        except ProposalError as err:
            return Reply.text(str(err))
        return Reply.text(f"#{number} now ends {view.proposal.deadline:%Y-%m-%d %H:%M} UTC.")


    async def claim(self, request: CommandRequest) -> Reply:
        """Claim a job nobody owns for one of your teams: the next proposals that reach it ask that team."""
        if len(request.args) != 2:
            return Reply.text("Usage: `/schema claim JOB TEAM` (JOB is a job's name, or NAMESPACE/NAME when names repeat)")
        return Reply.text(await self.claim_job(request.user, *request.args))

    async def claim_job(self, user: str, wanted: str, team_name: str) -> str:
        """Claim ``wanted`` (NAME or NAMESPACE/NAME) for ``team_name`` as ``user``; what to tell them."""
        lineage = self.proposals.lineage
        teams = await lineage.teams()
        if team_name not in teams:
            return f"`{escape(team_name)}` is not a team of the catalog. Teams: {escape(', '.join(sorted(teams))) or 'none'}"
        if user not in await self.proposals.membership.members(teams[team_name]):
            return f"Only a member of {escape(team_name)} can claim a job for it; nothing changed."
        namespace, _, name = wanted.rpartition("/")
        graph = await lineage.graph()
        found = [j for j in graph.jobs.values() if j.id.name == name and namespace in ("", j.id.namespace)]
        if len(found) != 1:
            where = ", ".join(f"`{escape(j.id.namespace)}/{escape(j.id.name)}`" for j in found)
            return f"No job is called `{escape(wanted)}`." if not found else f"Several jobs are called `{escape(name)}`: {where}; name one."
        job = found[0]
        if job.learned.startswith("catalog"):  # "catalog, field lineage from Flink release #7" too
            return f"`{escape(job.id.name)}` is declared in the catalog: change its owner there; nothing changed."
        if set(job.owners) & set(teams):
            return f"`{escape(job.id.name)}` is already owned by {escape(', '.join(job.owners))}; nothing changed."
        await lineage.claim(job.id, team_name, user, self.proposals.clock())
        return (f"{escape(team_name)} now owns `{escape(job.id.name)}` ({escape(job.id.namespace)}): the next proposals that reach it "
                "ask your team. The catalog still wins: declare the job there to make it permanent.")


LISTED = 20  # proposals one /schema list shows


def listed(views: list[ProposalView], shown: int, rest: str) -> list[str]:
    """A line per proposal, the first ``shown`` of them, and a last line when there were more (``views`` holds one past
    ``shown`` when so): a list cut short says so."""
    lines = [summary_line(v) for v in views[:shown]]
    return lines + ([f"_…and more than {shown}: the {shown} newest are shown; {rest}_"] if len(views) > shown else [])


def summary_line(view: ProposalView) -> str:
    """``#12 orders-value · breaking · waiting for acknowledgements (analytics-team)``."""
    waiting = f" ({escape(', '.join(view.waiting()))})" if view.state is State.PENDING and view.waiting() else ""
    return f"#{view.id} {escape(view.subject.name)} · {view.proposal.level} · {STATE_TEXT[view.state]}{waiting} · by {mention(view.proposal.proposer)}"


def _number(request: CommandRequest, usage: str, *, alone: bool = True) -> int:
    """The proposal number the command names first; ``alone``: nothing may follow it (one ID at a time: `withdraw 1 2`
    withdraws nothing rather than only #1)."""
    args = request.args
    if not args or not args[0].lstrip("#").isdecimal() or len(args[0].lstrip("#")) > 9 or (alone and len(args) > 1):
        raise ProposalError(f"Usage: `/schema {usage}` (ID is the proposal number, e.g. 12; one at a time); nothing changed")
    return int(args[0].lstrip("#"))


def actor_text(entry: AuditEntry) -> str:
    """Who acted: the bot, a person, or an API token on behalf of a person."""
    if entry.actor == "changeops":
        return "changeops"
    token = entry.detail.get("api_token")
    person = mention(entry.actor)
    return f"api token {escape(token)} on behalf of {person}" if token else person
