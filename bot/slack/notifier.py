"""Telling people about proposals: the card in the changes channel (updated in place, history in its
thread), a link in the subject's channel, DMs to the teams asked, reminders, escalation to oncall."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bot.domain.approvals import State
from bot.services.proposals import Event, Membership, Notice, ProposalView, team_names
from bot.slack.cards import card
from bot.slack.poster import Poster
from bot.slack.render import Reply

log = logging.getLogger(__name__)
SaveCard = Callable[..., Awaitable[None]]


def with_link(reply: Reply, link: str | None) -> Reply:
    """A mirrored card: the same, pointing at the card in the changes channel, where the history is."""
    if not link:
        return reply
    note = {"type": "context", "elements": [{"type": "mrkdwn", "text": f"History and discussion: <{link}|the card in the changes channel>"}]}
    return Reply(reply.fallback, [*reply.blocks, note])


class SlackNotifier:
    """The Slack side of the approval workflow; Slack's refusals are logged, never raised into it."""

    def __init__(self, poster: Poster, membership: Membership, changes_channel: str, save_card: SaveCard) -> None:
        self.poster, self.membership, self.changes_channel, self.save_card = poster, membership, changes_channel, save_card

    async def notify(self, notice: Notice) -> None:
        """Post, update and DM what ``notice`` calls for."""
        try:
            await self._notify(notice)
        except Exception:  # a notification must never undo or block a recorded decision
            log.exception("could not tell Slack about proposal #%d (%s)", notice.view.id, notice.event)

    async def _notify(self, notice: Notice) -> None:
        view, event = notice.view, notice.event
        if event is Event.CREATED:
            await self._created(view)
            return
        await self._update_card(view)
        if event is Event.DECIDED:
            verb = {"approve": "approved", "reject": "rejected", "request_changes": "requested changes"}[view.decision_of(notice.teams[0]).decision]  # type: ignore[union-attr]
            reason = f": {notice.detail}" if notice.detail else ""
            await self._thread(view, f"<@{notice.actor}> {verb} for {team_names(notice.teams)}{reason}")
            if view.state.final:
                await self._tell_proposer(view)
        elif event is Event.REMINDER:
            await self._thread(view, f":alarm_clock: Reminder: still waiting for {self._mentions(view, notice.teams)}")
            await self._dm_teams(view, notice.teams, "Reminder: your team has not acknowledged this schema change yet.")
        elif event is Event.EXPIRED:
            oncall = sorted({u for t in notice.teams if t in view.teams for u in view.teams[t].oncall})
            who = ", ".join(f"<@{u}>" for u in oncall) or "no oncall listed in the catalog"
            await self._thread(view, f":rotating_light: Expired without an answer from {self._mentions(view, notice.teams)}; escalated to oncall: {who}")
            for user in oncall:
                await self.poster.post(user, Reply.text(f":rotating_light: Schema change #{view.id} on {view.subject.name} expired "
                                                        f"without an acknowledgement from {team_names(notice.teams)}, which you are oncall for."))
            await self._tell_proposer(view)
        elif event is Event.WITHDRAWN:
            await self._thread(view, f"<@{notice.actor}> withdrew the proposal")
        elif event is Event.EXTENDED:
            await self._thread(view, f"<@{notice.actor}> extended the deadline once: {notice.detail}")

    async def _created(self, view: ProposalView) -> None:
        posted = await self.poster.post(self.changes_channel, card(view))
        if posted is None:
            return
        channel, ts = posted
        view.proposal.card_channel, view.proposal.card_ts = channel, ts
        await self.save_card(view.id, channel, ts)
        if view.subject.channel and view.subject.channel.lstrip("#") != self.changes_channel.lstrip("#"):
            link = await self.poster.permalink(channel, ts)
            mirrored = await self.poster.post(view.subject.channel, with_link(card(view), link))
            if mirrored is not None:
                view.proposal.subject_card_channel, view.proposal.subject_card_ts = mirrored
                await self.save_card(view.id, *mirrored, subject_channel=True)
        if view.state is State.APPROVED:
            await self._thread(view, f"Approved at once and recorded as version {view.proposal.version}; announced to "
                                     f"{team_names(list(view.proposal.impact.get('owners', []))) or 'nobody downstream'}.")
        await self._dm_teams(view, view.proposal.teams, "Your team is asked to acknowledge this schema change.")

    async def _update_card(self, view: ProposalView) -> None:
        if view.proposal.card_channel and view.proposal.card_ts:
            await self.poster.update(view.proposal.card_channel, view.proposal.card_ts, card(view))
        if view.proposal.subject_card_channel and view.proposal.subject_card_ts:
            channel, ts = view.proposal.card_channel, view.proposal.card_ts
            link = await self.poster.permalink(channel, ts) if channel and ts else None
            await self.poster.update(view.proposal.subject_card_channel, view.proposal.subject_card_ts, with_link(card(view), link))

    async def _thread(self, view: ProposalView, text: str) -> None:
        if view.proposal.card_channel and view.proposal.card_ts:
            await self.poster.post(view.proposal.card_channel, Reply.text(text), thread_ts=view.proposal.card_ts)

    async def _dm_teams(self, view: ProposalView, teams: list[str], intro: str) -> None:
        for name in teams:
            team = view.teams.get(name)
            if team is None:
                continue
            dm = card(view, team=name)
            for user in sorted(await self.membership.members(team)):
                await self.poster.post(user, Reply(f"{intro} {dm.fallback}", [*Reply.text(f"{intro} (for *{name}*)").blocks, *dm.blocks]))

    async def _tell_proposer(self, view: ProposalView) -> None:
        outcome = {State.APPROVED: f"was approved and recorded as version {view.proposal.version}",
                   State.REJECTED: "was rejected", State.CHANGES_REQUESTED: "needs changes: revise it with `/schema propose`",
                   State.EXPIRED: "expired without every acknowledgement"}.get(view.state, view.state.value)
        await self.poster.post(view.proposal.proposer, Reply.text(f"Your schema change #{view.id} on {view.subject.name} {outcome}."))

    def _mentions(self, view: ProposalView, teams: list[str]) -> str:
        marks = [f"<!subteam^{view.teams[t].usergroup}>" if t in view.teams and view.teams[t].usergroup else t for t in teams]
        return ", ".join(marks) or "nobody"
