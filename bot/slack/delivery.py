"""The Slack side of the outbox: a proposal notice becomes the card (posted once, then edited in place), thread
notes and DMs, each its own row; each row is one Web API call, retried on 429 (after ``Retry-After``), 5xx and
network errors, and given up (audited, logged) on Slack's permanent refusals such as ``channel_not_found``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.approvals import UNOWNED, State
from bot.services.outbox import Expand, GiveUp, Handler, Item, Outbox, Retry, failed_in
from bot.services.proposals import NOTICE, Event, Proposals, ProposalView, self_approves, team_names
from bot.slack import ids
from bot.slack.proposals.cards import card
from bot.slack.render import Reply, escape, mention
from bot.store.database import Database

if TYPE_CHECKING:  # the Home tab's module uses this one's calls
    from bot.slack.home.follow import HomeFollow

MESSAGE, CARD, DM_CARD = "slack.message", "proposal.card", "proposal.dm_card"  # outbox kinds delivered here
log = logging.getLogger(__name__)
RETRYABLE_ERRORS = {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
GONE_ERRORS = {"message_not_found", "thread_not_found"}  # someone deleted the message in Slack
CREDENTIAL_ERRORS = {  # Slack refuses the bot's token or its scopes, whatever the message: the install's problem, kept until fixed
    "not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired", "missing_scope", "not_allowed_token_type",
    "ekm_access_denied", "team_access_not_granted", "org_login_required"}


class Gone(GiveUp):
    """The message to edit, or the one whose thread to post in, is no longer in Slack: someone deleted it."""


class NoSuchUser(GiveUp):
    """The user the call names is not in the workspace (any more)."""


def message_row(channel: str, reply: Reply, *, thread_of: int | None = None, key: str | None = None) -> tuple[str, str, dict[str, Any]]:
    """An outbox row that posts ``reply`` to a channel or a user's DM (``channel`` a user id), or into the
    thread of a proposal's card (``thread_of``). Each message has its own lane: a DM by user, thread notes by card."""
    payload = {"channel": channel, "text": reply.fallback, "blocks": reply.blocks, "thread_of": thread_of}
    return MESSAGE, key or (thread_key(thread_of) if thread_of else f"dm:{channel}"), payload


def card_key(proposal_id: int) -> str:
    """The lane of a proposal's card and its copies: edits in order, never behind a note, a DM or the registry."""
    return f"card:{proposal_id}"


def thread_key(proposal_id: int) -> str:
    """The lane of the notes in a proposal's thread (they wait for the card's first post)."""
    return f"thread:{proposal_id}"


def waiting_for_card(proposal_id: int) -> str:
    """Why a thread note is put off: the card it threads under is not posted yet (the card's first post hurries it)."""
    return f"proposal #{proposal_id} has no card to thread under yet"


def tell(outbox: Outbox, session: Any, user: str, text: str) -> None:
    """Owe ``user`` a DM (in the caller's transaction)."""
    kind, key, payload = message_row(user, Reply.text(text))
    outbox.add(session, kind, key, payload)


async def dm(outbox: Outbox, db: Database, user: str, text: str) -> None:
    """Owe ``user`` a DM, in a transaction of its own, and have the outbox send it now."""
    async with db.session() as session:
        tell(outbox, session, user, text)
        await session.commit()
    outbox.wake()


async def call(client: AsyncWebClient, method: str, **args: Any) -> Any:
    """One Web API call; Slack's answer mapped to delivered, ``Retry`` or ``GiveUp``."""
    try:  # slack_sdk's method for it: each Web API method is encoded the way Slack accepts it (JSON only for writes)
        answer = await getattr(client, method.replace(".", "_"))(**args)
        _said.clear()
        return answer
    except SlackApiError as err:
        status = getattr(err.response, "status_code", 200)
        error = err.response.get("error") if isinstance(err.response.data, dict) else None
        if status == 429 or error == "ratelimited":
            retry_after = err.response.headers.get("Retry-After", err.response.headers.get("retry-after", "1"))
            raise Retry(f"{method}: rate limited", after=float(retry_after) if str(retry_after).isdigit() else 1.0) from None
        if status >= 500 or error in RETRYABLE_ERRORS:
            raise Retry(f"{method}: Slack answered HTTP {status} {error or ''}".strip()) from None
        details = "; ".join(err.response.get("response_metadata", {}).get("messages", [])) if isinstance(err.response.data, dict) else ""
        if error in CREDENTIAL_ERRORS:  # a revoked, rotated or under-scoped token: every message waits for the fix, none is lost
            _refused(method, str(error), str(err.response.get("needed", "")) if isinstance(err.response.data, dict) else "")
            raise Retry(f"{method}: Slack refused the bot's token ({error}); kept until the token or its scopes are fixed") from None
        if error in GONE_ERRORS:
            raise Gone(f"Slack refused {method}: {error}") from None
        if error == "user_not_found":
            raise NoSuchUser(f"Slack refused {method}: {error}") from None
        raise GiveUp(f"Slack refused {method}: {error}{' (' + details + ')' if details else ''}") from None
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as err:
        raise Retry(f"{method}: Slack could not be reached ({type(err).__name__})") from None


_said: set[str] = set()  # the token refusals logged since Slack last took a call


def _refused(method: str, error: str, needed: str) -> None:
    """Log a refusal of the bot's token once (not once per message owed), as an error: someone has to fix the install."""
    if error not in _said:
        _said.add(error)
        scope = f" (it needs the {needed} scope)" if needed else ""
        log.error("Slack refused the bot's token on %s: %s%s. Messages owed wait in the outbox and go once the token or its scopes "
                  "are fixed (SLACK_BOT_TOKEN, or the app reinstalled with its scopes)", method, error, scope)


async def unposted(outbox: Outbox, db: Database, key: str, user: str, what: str, channel: str, why: str, asked: str = "") -> None:
    """Tell ``user``, once per card (``key``), that Slack would not post the card of ``what`` (mrkdwn) in ``channel``: the bot
    is not in a private channel, or it was archived or renamed. The card's next change tries again."""
    if await failed_in(db, key):
        return  # told when its first card row failed
    text = (f":warning: The card of {what} could not be posted in {escape(channel)} ({escape(why)}).{asked} Invite the bot to that "
            "channel (a private channel it is not in is one it cannot see), or point `CHANGES_CHANNEL` elsewhere: the card is posted "
            "on the next change.")
    await dm(outbox, db, user, text)


async def place(client: AsyncWebClient, where: tuple[str | None, str | None], channel: str, body: Mapping[str, Any],
                save: Callable[[str, str], Awaitable[bool]]) -> bool:
    """Show ``body`` as the message at ``where`` (channel, ts): edited in place, else posted (in ``channel`` the first time,
    in its own channel again when someone deleted it in Slack: what it shows must stay in sight) and remembered with
    ``save``, a conditional update on the place read; of two lanes that post it again, the one that loses deletes its
    post. True when it was posted and kept."""
    old_channel, old_ts = where
    if old_channel and old_ts:
        try:
            await call(client, "chat.update", channel=old_channel, ts=old_ts, **body)
            return False
        except Gone:
            log.info("the message %s/%s was deleted in Slack: posting it again", old_channel, old_ts)
            channel = old_channel
    posted = await call(client, "chat.postMessage", channel=channel, unfurl_links=False, **body)
    return await kept(client, posted, await save(str(posted["channel"]), str(posted["ts"])))


async def kept(client: AsyncWebClient, posted: Any, saved: bool) -> bool:
    """``saved``: the post was remembered; else another lane's post of the same message got there first, and this one is
    deleted (if Slack will not, it stays a duplicate)."""
    if not saved:
        with contextlib.suppress(GiveUp, Retry):
            await call(client, "chat.delete", channel=str(posted["channel"]), ts=str(posted["ts"]))
    return saved


class SlackDelivery:
    """Outbox handlers for everything the bot says in Slack."""

    def __init__(self, client: AsyncWebClient, proposals: Proposals, changes_channel: str, home: HomeFollow) -> None:
        self.client, self.proposals, self.changes_channel, self.home = client, proposals, changes_channel, home

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {NOTICE: self.notice, MESSAGE: self.message, CARD: self.card, DM_CARD: self.dm_card}

    # --- sending --------------------------------------------------------------------------------

    async def message(self, item: Item) -> None:
        """Post one message (into a card's thread, when it says so)."""
        payload = item.payload
        thread_ts, channel = None, payload["channel"]
        if payload.get("thread_of"):
            view = await self.proposals.view(int(payload["thread_of"]))
            if not (view.proposal.card_channel and view.proposal.card_ts):  # its lane runs beside the card's: wait for it, unless it failed
                if why := await failed_in(self.proposals.db, card_key(view.id)):
                    raise GiveUp(f"proposal #{view.id} has no card to thread under (its card could not be posted: {why})")
                raise Retry(waiting_for_card(view.id))
            channel, thread_ts = view.proposal.card_channel, view.proposal.card_ts
        try:
            await call(self.client, "chat.postMessage", channel=channel, text=payload["text"], blocks=payload["blocks"],
                       thread_ts=thread_ts, unfurl_links=False)
        except Gone:
            if not payload.get("thread_of"):
                raise
            async with self.proposals.db.session() as session:  # someone deleted the card: its lane posts it again, then hurries this
                self.proposals.outbox.add(session, CARD, card_key(view.id), {"proposal": view.id})
                await session.commit()
            self.proposals.outbox.wake()
            raise Retry(waiting_for_card(view.id)) from None

    async def card(self, item: Item) -> None:
        """Post the proposal's card in the changes channel and in the subject's channel, or edit them in place, and
        edit every DM copy to match (their buttons go once the proposal is final).

        A card once posted is remembered before anything else happens, so a retry edits it, never reposts it. Card rows
        run one at a time in the card's lane and render the state as it is when they run, so an edit never shows an
        older state than the one before it."""
        view = await self.proposals.view(int(item.payload["proposal"]))
        p = view.proposal
        shown = card(view, clashes=await self.proposals.calendar.proposal_conflicts(view.id))
        try:
            posted = await place(self.client, (p.card_channel, p.card_ts), self.changes_channel, _body(shown),
                                 lambda channel, ts: self.proposals.save_card(view.id, channel, ts, replacing=p.card_ts))
        except GiveUp as err:
            if not p.card_ts:
                asked = "" if view.state.final else " The teams asked were sent it in their DMs and can answer there."
                await unposted(self.proposals.outbox, self.proposals.db, card_key(view.id), view.proposal.proposer,
                               f"your schema change #{view.id} on {escape(view.subject.name)}", self.changes_channel, str(err), asked)
            raise
        if posted:
            async with self.proposals.db.session() as session:  # the notes that waited for it go now
                await self.proposals.outbox.hurry(session, thread_key(view.id), waiting_for_card(view.id))
                await session.commit()
            self.proposals.outbox.wake()
        await self._copies(view)
        if not view.subject.channel or view.subject.channel.lstrip("#") == self.changes_channel.lstrip("#"):
            return
        p = (await self.proposals.view(view.id)).proposal  # where the card is now, if it was posted again
        link = await call(self.client, "chat.getPermalink", channel=p.card_channel, message_ts=p.card_ts)
        mirrored = with_link(shown, str(link["permalink"]))
        await place(self.client, (p.subject_card_channel, p.subject_card_ts), str(view.subject.channel), _body(mirrored),
                    lambda channel, ts: self.proposals.save_card(view.id, channel, ts, subject_channel=True, replacing=p.subject_card_ts))

    async def _copies(self, view: ProposalView) -> None:
        for copy in await self.proposals.copies(view.id):
            try:
                await call(self.client, "chat.update", channel=copy.channel, ts=copy.ts, **_body(personal(view, copy.team, copy.intro)))
            except GiveUp as err:  # that copy is gone (deleted, the DM closed): the others still follow
                log.info("proposal #%d: the DM copy %s/%s could not be edited: %s", view.id, copy.channel, copy.ts, err)

    async def dm_card(self, item: Item) -> None:
        """Post a team member's copy of the card in their DM, remembered so it follows the card; if the proposal moved
        while it was posted, edited at once."""
        payload = item.payload
        view = await self.proposals.view(int(payload["proposal"]))
        shown = personal(view, payload["team"], payload["intro"])
        posted = await call(self.client, "chat.postMessage", channel=payload["user"], **_body(shown))
        await self.proposals.save_copy(view.id, str(posted["channel"]), str(posted["ts"]), payload["team"], payload["intro"])
        now = await self.proposals.view(view.id)
        if (now.state, len(now.acknowledgements), now.proposal.registry_state) != (view.state, len(view.acknowledgements), view.proposal.registry_state):
            await call(self.client, "chat.update", channel=str(posted["channel"]), ts=str(posted["ts"]), **_body(personal(now, payload["team"], payload["intro"])))

    # --- expanding a notice ---------------------------------------------------------------------

    async def notice(self, item: Item) -> Expand:
        """What one proposal event means in Slack, as rows: the card, thread notes, DMs, and the open Home tabs again."""
        payload = item.payload
        view = await self.proposals.view(int(payload["proposal"]))
        event, actor, teams, detail = Event(payload["event"]), payload.get("actor"), list(payload.get("teams") or []), payload.get("detail") or ""
        rows = [(CARD, card_key(view.id), {"proposal": view.id})]

        def note(text: str) -> None:
            rows.append(message_row("", Reply.text(text), thread_of=view.id))

        def dm(user: str, reply: Reply) -> None:
            rows.append(message_row(user, reply))

        if event is Event.CREATED:
            if view.state is State.APPROVED:
                owners = [escape(o) for o in view.proposal.impact.get("owners", [])]
                note(f"Approved at once and recorded as version {payload.get('version')}; announced to {team_names(owners) or 'nobody downstream'}.")
            await self._team_dms(view, view.proposal.teams, "Your team is asked to acknowledge this schema change.", rows)
        elif event is Event.DECIDED:
            decision = view.decision_of(teams[0]) if teams else None
            verb = {"approve": "approved", "reject": "rejected", "request_changes": "requested changes"}.get(decision.decision if decision else "", "decided")
            if verb == "approved" and teams == [UNOWNED]:
                verb = "acknowledged"
            if verb in ("approved", "acknowledged") and actor == view.proposal.proposer:
                verb = "self-approved (the team allows it: `self_approval`)"
            reason = f": {escape(detail)}" if detail else ""
            note(f"{mention(actor)} {verb} for {team_names([escape(t) for t in teams])}{reason}")
            if view.state.final:
                dm(view.proposal.proposer, Reply.text(self._outcome(view, payload.get("version"))))
        elif event is Event.REMINDER:
            note(f":alarm_clock: Reminder: still waiting for {self._mentions(view, teams)}")
            await self._team_dms(view, teams, "Reminder: your team has not acknowledged this schema change yet.", rows)
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
        elif event is Event.EMERGENCY_REQUESTED:
            note(f":rotating_light: {mention(actor)} asks to ship this change during the freeze: {escape(detail)}. A second person from "
                 "oncall must confirm it on the card.")
            for user in await self._oncall(view):
                if user != actor:
                    dm(user, Reply.text(f":rotating_light: {mention(actor)} asks to ship schema change #{view.id} on {escape(view.subject.name)} "
                                        f"during its freeze: {escape(detail)}. As oncall you may confirm it on the card (you would be the "
                                        "second pair of eyes), or leave it."))
        elif event is Event.EMERGENCY_SHIPPED:
            asked = view.proposal.emergency or {}
            note(f":rotating_light: {mention(actor)} confirmed the emergency asked by {mention(asked.get('requested_by'))}: shipped during the "
                 f"freeze {escape(detail)}, recorded as version {payload.get('version')}, booked in the calendar as an emergency.")
            dm(view.proposal.proposer, Reply.text(self._outcome(view, payload.get("version")) + " It shipped during a freeze as an emergency."))
        elif event is Event.REGISTERING and actor:
            note(f"{mention(actor)} retried the registration in the Schema Registry")
        elif event is Event.NOT_REGISTERED:
            note(f":warning: Version {view.proposal.version} was not registered in the Schema Registry: {escape(detail)}")
            retry = {"type": "actions", "elements": [{"type": "button", "action_id": ids.REGISTRY_RETRY, "value": str(view.id), "style": "primary",
                                                      "text": {"type": "plain_text", "text": "Retry the registration"}}]}
            text = (f":warning: Schema change #{view.id} on {escape(view.subject.name)} is approved and recorded as version "
                    f"{view.proposal.version}, but the Schema Registry did not take it: {escape(detail)}. Producers that register "
                    "or look it up will not find it. Retry once the registry answers:")
            for user in await self._oncall(view):
                dm(user, Reply(text, [*Reply.text(text).blocks, retry]))
        elif event is Event.READER:
            note(f"{mention(actor)} {escape(detail)}")
            await self._team_dms(view, teams, "Kafka says a consumer group your team answers for reads this topic, so your team is asked "
                                              "to acknowledge this schema change.", rows)
        await self.home.refresh()
        return Expand(rows)

    async def _team_dms(self, view: ProposalView, teams: list[str], intro: str, rows: list[tuple[str, str, dict[str, Any]]]) -> None:
        for name in teams:
            if name not in view.teams and name != UNOWNED:
                continue
            why = f"{intro} You are a fallback approver: nobody owns some of its readers." if name == UNOWNED else intro
            for user in sorted(await self.proposals.approvers(view, name)):
                if user == view.proposal.proposer and not self_approves(view, name):
                    continue  # four eyes: not asked to approve their own change
                rows.append((DM_CARD, f"dm:{user}", {"proposal": view.id, "user": user, "team": name, "intro": why}))

    async def _oncall(self, view: ProposalView) -> list[str]:
        """Who answers for the subject now: its owner team's oncall, else the global oncall."""
        team, everyone = await self.proposals.oncall(view)
        return sorted(team or everyone)

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


def personal(view: ProposalView, team: str, intro: str) -> Reply:
    """A team member's DM copy of the card: why they got it, then the card with that team's buttons (while it waits)."""
    shown = card(view, team=team)
    return Reply(f"{intro} {shown.fallback}", [*Reply.text(f"{intro} (for *{escape(team)}*)").blocks, *shown.blocks])


def with_link(reply: Reply, link: str | None) -> Reply:
    """A mirrored card: the same, pointing at the card in the changes channel, where the history is."""
    if not link:
        return reply
    note = {"type": "context", "elements": [{"type": "mrkdwn", "text": f"History and discussion: <{link}|the card in the changes channel>"}]}
    return Reply(reply.fallback, [*reply.blocks, note])


def _body(reply: Reply) -> dict[str, Any]:
    return {"text": reply.fallback, "blocks": reply.blocks}
