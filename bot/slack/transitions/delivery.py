"""The Slack side of a transition's notices: the card (posted once in the changes channel, then edited in place),
notes in its thread, and DMs to the teams whose readers still read the old fields and to the subject's owners."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.transitions.model import listed
from bot.services.outbox import Expand, GiveUp, Handler, Item, Retry, failed_in
from bot.services.transitions import NOTICE, Event, Transitions, TransitionView
from bot.slack import ids
from bot.slack.delivery import Gone, call, message_row, place, unposted
from bot.slack.render import Reply, escape, mention
from bot.slack.transitions.cards import buttons, transition_card

CARD, NOTE = "transition.card", "transition.note"  # outbox kinds delivered here


def card_key(number: int) -> str:
    """The lane of a transition's card: edits in order."""
    return f"tcard:{number}"


def note_key(number: int) -> str:
    """The lane of the notes in a transition card's thread (they wait for the card's first post)."""
    return f"tthread:{number}"


class TransitionDelivery:
    """Outbox handlers for transitions."""

    def __init__(self, client: AsyncWebClient, transitions: Transitions, changes_channel: str) -> None:
        self.client, self.transitions, self.changes_channel = client, transitions, changes_channel

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {NOTICE: self.notice, CARD: self.card, NOTE: self.note}

    async def card(self, item: Item) -> None:
        """Post the card, or edit it to show the transition as it is now (a card row renders the state when it runs, so an
        edit never shows an older state than the one before)."""
        view = await self.transitions.view(int(item.payload["transition"]))
        shown = transition_card(view)
        row = view.row
        try:
            posted = await place(self.client, (row.card_channel, row.card_ts), self.changes_channel, {"text": shown.fallback, "blocks": shown.blocks},
                                 lambda channel, ts: self.transitions.save_card(view.id, channel, ts, replacing=row.card_ts))
        except GiveUp as err:
            if not row.card_ts:
                await unposted(self.transitions.outbox, self.transitions.db, card_key(view.id), row.proposer,
                               f"your transition #{view.id} on {escape(view.subject.name)}", self.changes_channel, str(err))
            raise
        if not posted:
            return
        async with self.transitions.db.session() as session:
            await self.transitions.outbox.hurry(session, note_key(view.id), _waiting(view.id))
            await session.commit()
        self.transitions.outbox.wake()

    async def note(self, item: Item) -> None:
        """A note in the card's thread (put off until the card is posted; the card posted again first if someone deleted it)."""
        view = await self.transitions.view(int(item.payload["transition"]))
        if not (view.row.card_channel and view.row.card_ts):
            if why := await failed_in(self.transitions.db, card_key(view.id)):
                raise GiveUp(f"transition #{view.id} has no card to thread under (its card could not be posted: {why})")
            raise Retry(_waiting(view.id))
        try:
            await call(self.client, "chat.postMessage", channel=view.row.card_channel, thread_ts=view.row.card_ts, text=item.payload["text"],
                       unfurl_links=False)
        except Gone:
            async with self.transitions.db.session() as session:  # someone deleted the card: its lane posts it again, then hurries this
                self.transitions.outbox.add(session, CARD, card_key(view.id), {"transition": view.id})
                await session.commit()
            self.transitions.outbox.wake()
            raise Retry(_waiting(view.id)) from None

    async def notice(self, item: Item) -> Expand:
        """What one transition event means in Slack, as rows."""
        payload = item.payload
        view = await self.transitions.view(int(payload["transition"]))
        event, actor, detail = Event(payload["event"]), payload.get("actor"), escape(payload.get("detail") or "")
        rows: list[tuple[str, str, dict[str, Any]]] = [(CARD, card_key(view.id), {"transition": view.id})]
        name, words = escape(view.subject.name), listed([f"`{escape(m.old)}` → `{escape(m.new)}`" for m in view.mapping])
        deadline = f"{view.row.deadline:%Y-%m-%d %H:%M} UTC"

        def note(text: str) -> None:
            rows.append((NOTE, note_key(view.id), {"transition": view.id, "text": text}))

        if event is Event.CREATED:
            note(f"{mention(actor)} started this transition ({words}); the expand version is proposal #{view.row.expand_proposal_id}.")
        elif event is Event.MIGRATING:
            note(f"The expand version is recorded{f' as version {detail}' if detail else ''}: both sides are readable. Readers move now.")
            await self._to_laggards(view, rows, f":twisted_rightwards_arrows: Transition #{view.id} on {name} ({words}): both sides are readable "
                                                f"now. Move your readers to the new fields by {deadline}, then press *We moved* on its card "
                                                f"(or `/schema transition {view.id} moved`).")
        elif event is Event.PROGRESS and detail:
            note(detail)
        elif event is Event.REMINDER:
            note(f":alarm_clock: Reminder: still on the old fields: {detail}")
            await self._to_laggards(view, rows, f":alarm_clock: Transition #{view.id} on {name} ({words}) still waits for your readers: "
                                                f"{detail}. Deadline {deadline}.")
        elif event is Event.DEADLINE:
            note(f":warning: The deadline passed with readers left on the old fields: {detail}. The owners decide: extend, or contract and "
                 "break them knowingly.")
            await self._to_owners(view, rows, f":warning: Transition #{view.id} on {name} reached its deadline with readers left: {detail}. "
                                              "Extend it, or contract now (their teams acknowledge the break):")
        elif event is Event.EXTENDED:
            note(f"{mention(actor)} moved the deadline to {detail}.")
        elif event is Event.CONTRACT:
            note(f"The contract version (the old fields removed) is proposal #{detail}" + (f", proposed by {mention(actor)}" if actor else "")
                 + ".")
        elif event is Event.CONTRACT_REFUSED:
            note(f":leftwards_arrow_with_hook: No contract: {detail}. Back to migrating.")
        elif event is Event.DONE:
            note(f":white_check_mark: Done: version {detail} has only the new fields.")
            rows.append(message_row(view.row.proposer, Reply.text(f":white_check_mark: Your transition #{view.id} on {name} ({words}) is done.")))
        elif event is Event.ENDED:
            note(f":leftwards_arrow_with_hook: Ended: {detail}")
            rows.append(message_row(view.row.proposer, Reply.text(f"Your transition #{view.id} on {name} ended: {detail}")))
        return Expand(rows)

    async def _to_laggards(self, view: TransitionView, rows: list[tuple[str, str, dict[str, Any]]], text: str) -> None:
        teams = await self.transitions.lineage.teams()
        for team in sorted({r.team for r in view.laggards if r.team and r.team in teams}):
            for user in sorted(await self.transitions.proposals.membership.members(teams[team])):
                rows.append(message_row(user, Reply.text(f"{text} (for *{escape(team)}*)")))

    async def _to_owners(self, view: TransitionView, rows: list[tuple[str, str, dict[str, Any]]], text: str) -> None:
        teams = await self.transitions.lineage.teams()
        owner = teams.get(view.subject.owner_team or "")
        if owner is None:
            return
        actions = {"type": "actions", "elements": [b for b in buttons(view) if b["action_id"] != ids.TRANSITION_MOVED]}
        for user in sorted(await self.transitions.proposals.membership.members(owner)):
            rows.append(message_row(user, Reply(text, [*Reply.text(text).blocks, actions])))


def _waiting(number: int) -> str:
    return f"transition #{number} has no card to thread under yet"
