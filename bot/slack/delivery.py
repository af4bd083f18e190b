"""The Slack side of the outbox: a proposal notice becomes the card (posted once, then edited in place), thread
notes and DMs, each its own row; each row is one Web API call, retried on 429 (after ``Retry-After``), 5xx and
network errors, and given up (audited, logged) on Slack's permanent refusals such as ``channel_not_found``."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.approvals import UNOWNED, State
from bot.services.outbox import Expand, GiveUp, Handler, Item, Outbox, Retry
from bot.services.proposals import NOTICE, Event, Proposals, ProposalView, team_names, thread_key
from bot.slack.cards import card
from bot.slack.render import Reply, escape, mention

MESSAGE, CARD = "slack.message", "proposal.card"  # outbox kinds delivered here
RETRYABLE_ERRORS = {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}


def message_row(channel: str, reply: Reply, *, thread_of: int | None = None, key: str | None = None) -> tuple[str, str, dict[str, Any]]:
    """An outbox row that posts ``reply`` to a channel or a user's DM (``channel`` a user id), or into the
    thread of a proposal's card (``thread_of``)."""
    payload = {"channel": channel, "text": reply.fallback, "blocks": reply.blocks, "thread_of": thread_of}
    return MESSAGE, key or (thread_key(thread_of) if thread_of else f"dm:{channel}"), payload


def tell(outbox: Outbox, session: Any, user: str, text: str) -> None:
    """Owe ``user`` a DM (in the caller's transaction)."""
    kind, key, payload = message_row(user, Reply.text(text))
    outbox.add(session, kind, key, payload)


async def call(client: AsyncWebClient, method: str, **args: Any) -> Any:
    """One Web API call; Slack's answer mapped to delivered, ``Retry`` or ``GiveUp``."""
    try:  # slack_sdk's method for it: each Web API method is encoded the way Slack accepts it (JSON only for writes)
        return await getattr(client, method.replace(".", "_"))(**args)
    except SlackApiError as err:
        status = getattr(err.response, "status_code", 200)
        error = err.response.get("error") if isinstance(err.response.data, dict) else None
        if status == 429 or error == "ratelimited":
            retry_after = err.response.headers.get("Retry-After", err.response.headers.get("retry-after", "1"))
            raise Retry(f"{method}: rate limited", after=float(retry_after) if str(retry_after).isdigit() else 1.0) from None
        if status >= 500 or error in RETRYABLE_ERRORS:
            raise Retry(f"{method}: Slack answered HTTP {status} {error or ''}".strip()) from None
        details = "; ".join(err.response.get("response_metadata", {}).get("messages", [])) if isinstance(err.response.data, dict) else ""
        raise GiveUp(f"Slack refused {method}: {error}{' (' + details + ')' if details else ''}") from None
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as err:
        raise Retry(f"{method}: Slack could not be reached ({type(err).__name__})") from None


class SlackDelivery:
    """Outbox handlers for everything the bot says in Slack."""

    def __init__(self, client: AsyncWebClient, proposals: Proposals, changes_channel: str) -> None:
        self.client, self.proposals, self.changes_channel = client, proposals, changes_channel

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {NOTICE: self.notice, MESSAGE: self.message, CARD: self.card}

    # --- sending --------------------------------------------------------------------------------

    async def message(self, item: Item) -> None:
        """Post one message (into a card's thread, when it says so)."""
        payload = item.payload
        thread_ts, channel = None, payload["channel"]
        if payload.get("thread_of"):
            view = await self.proposals.view(int(payload["thread_of"]))
            if not (view.proposal.card_channel and view.proposal.card_ts):
                raise GiveUp(f"proposal #{view.id} has no card to thread under (its card could not be posted)")
            channel, thread_ts = view.proposal.card_channel, view.proposal.card_ts
        await call(self.client, "chat.postMessage", channel=channel, text=payload["text"], blocks=payload["blocks"],
                   thread_ts=thread_ts, unfurl_links=False)

    async def card(self, item: Item) -> None:
        """Post the proposal's card in the changes channel and in the subject's channel, or edit them in place.

        A card once posted is remembered before anything else happens, so a retry edits it, never reposts it."""
        view = await self.proposals.view(int(item.payload["proposal"]))
        p = view.proposal
        shown = card(view, clashes=await self.proposals.calendar.proposal_conflicts(view.id))
        if p.card_channel and p.card_ts:
            await call(self.client, "chat.update", channel=p.card_channel, ts=p.card_ts, **_body(shown))
        else:
            posted = await call(self.client, "chat.postMessage", channel=self.changes_channel, **_body(shown))
            p.card_channel, p.card_ts = str(posted["channel"]), str(posted["ts"])
            await self.proposals.save_card(view.id, p.card_channel, p.card_ts)
        if not view.subject.channel or view.subject.channel.lstrip("#") == self.changes_channel.lstrip("#"):
            return
        link = await call(self.client, "chat.getPermalink", channel=p.card_channel, message_ts=p.card_ts)
        mirrored = with_link(shown, str(link["permalink"]))
        if p.subject_card_channel and p.subject_card_ts:
            await call(self.client, "chat.update", channel=p.subject_card_channel, ts=p.subject_card_ts, **_body(mirrored))
        else:
            posted = await call(self.client, "chat.postMessage", channel=view.subject.channel, **_body(mirrored))
            await self.proposals.save_card(view.id, str(posted["channel"]), str(posted["ts"]), subject_channel=True)

    # --- expanding a notice ---------------------------------------------------------------------

    async def notice(self, item: Item) -> Expand:
        """What one proposal event means in Slack, as rows: the card, thread notes, DMs."""
        payload = item.payload
        view = await self.proposals.view(int(payload["proposal"]))
        event, actor, teams, detail = Event(payload["event"]), payload.get("actor"), list(payload.get("teams") or []), payload.get("detail") or ""
        rows = [(CARD, thread_key(view.id), {"proposal": view.id})]

        def note(text: str) -> None:
            rows.append(message_row("", Reply.text(text), thread_of=view.id))

        def dm(user: str, reply: Reply) -> None:
            rows.append(message_row(user, reply))

        if event is Event.CREATED:
            if view.state is State.APPROVED:
                owners = [escape(o) for o in view.proposal.impact.get("owners", [])]
                note(f"Approved at once and recorded as version {payload.get('version')}; announced to {team_names(owners) or 'nobody downstream'}.")
            await self._team_dms(view, view.proposal.teams, "Your team is asked to acknowledge this schema change.", dm)
        elif event is Event.DECIDED:
            decision = view.decision_of(teams[0]) if teams else None
            verb = {"approve": "approved", "reject": "rejected", "request_changes": "requested changes"}.get(decision.decision if decision else "", "decided")
            if verb == "approved" and teams == [UNOWNED]:
                verb = "acknowledged"
            reason = f": {escape(detail)}" if detail else ""
            note(f"{mention(actor)} {verb} for {team_names([escape(t) for t in teams])}{reason}")
            if view.state.final:
                dm(view.proposal.proposer, Reply.text(self._outcome(view, payload.get("version"))))
        elif event is Event.REMINDER:
            note(f":alarm_clock: Reminder: still waiting for {self._mentions(view, teams)}")
            await self._team_dms(view, teams, "Reminder: your team has not acknowledged this schema change yet.", dm)
        elif event is Event.EXPIRED:
            oncall = sorted({u for t in teams if t in view.teams for u in view.teams[t].oncall})
            who = ", ".join(mention(u) for u in oncall) or "no oncall listed in the catalog"
            note(f":rotating_light: Expired without an answer from {self._mentions(view, teams)}; escalated to oncall: {who}")
            for user in oncall:
                dm(user, Reply.text(f":rotating_light: Schema change #{view.id} on {escape(view.subject.name)} expired without an "
                                    f"acknowledgement from {team_names([escape(t) for t in teams])}, which you are oncall for."))
            dm(view.proposal.proposer, Reply.text(self._outcome(view, None)))
        elif event is Event.WITHDRAWN:
            note(f"{mention(actor)} withdrew the proposal")
        elif event is Event.EXTENDED:
            note(f"{mention(actor)} extended the deadline once: {escape(detail)}")
        elif event is Event.HELD:
            note(f":snowflake: Every team approved, but {escape(detail)} The proposer can move it with the card's button.")
            dm(view.proposal.proposer, Reply.text(f":snowflake: Your schema change #{view.id} on {escape(view.subject.name)} is approved but held: "
                                                  f"{escape(detail)} Use *Move to the next free window* on its card."))
        elif event is Event.RELEASED:
            note(f"No freeze covers the planned window any more: approved and recorded as version {payload.get('version')}.")
            dm(view.proposal.proposer, Reply.text(self._outcome(view, payload.get("version"))))
        elif event is Event.RESCHEDULED:
            note(f"{mention(actor)} moved the planned window to {escape(detail)}")
        elif event is Event.READER:
            note(f"{mention(actor)} {escape(detail)}")
            await self._team_dms(view, teams, "Kafka says a consumer group your team answers for reads this topic, so your team is asked "
                                              "to acknowledge this schema change.", dm)
        return Expand(rows)

    async def _team_dms(self, view: ProposalView, teams: list[str], intro: str, dm: Any) -> None:
        for name in teams:
            if name not in view.teams and name != UNOWNED:
                continue
            personal = card(view, team=name)
            why = f"{intro} You are a fallback approver: nobody owns some of its readers." if name == UNOWNED else intro
            for user in sorted(await self.proposals.approvers(view, name)):
                dm(user, Reply(f"{why} {personal.fallback}", [*Reply.text(f"{why} (for *{escape(name)}*)").blocks, *personal.blocks]))

    def _outcome(self, view: ProposalView, version: Any) -> str:
        outcome = {State.APPROVED: f"was approved and recorded as version {version or view.proposal.version}",
                   State.REJECTED: "was rejected", State.CHANGES_REQUESTED: "needs changes: revise it with `/schema propose`",
                   State.EXPIRED: "expired without every acknowledgement",
                   State.WITHDRAWN: "was withdrawn"}.get(view.state, view.state.value)
        return f"Your schema change #{view.id} on {escape(view.subject.name)} {outcome}."

    def _mentions(self, view: ProposalView, teams: list[str]) -> str:
        marks = [f"<!subteam^{view.teams[t].usergroup}>" if t in view.teams and view.teams[t].usergroup
                 else "the fallback approvers (for unowned readers)" if t == UNOWNED else escape(t) for t in teams]
        return ", ".join(marks) or "nobody"


def with_link(reply: Reply, link: str | None) -> Reply:
    """A mirrored card: the same, pointing at the card in the changes channel, where the history is."""
    if not link:
        return reply
    note = {"type": "context", "elements": [{"type": "mrkdwn", "text": f"History and discussion: <{link}|the card in the changes channel>"}]}
    return Reply(reply.fallback, [*reply.blocks, note])


def _body(reply: Reply) -> dict[str, Any]:
    return {"text": reply.fallback, "blocks": reply.blocks}
