"""``/schema transition``, the transition form (from ``/schema propose SUBJECT --transition`` or a breaking card's
"Ship it as a transition…"), and the transition card's buttons."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.transitions.model import TransitionError, listed, parse_mapping_text
from bot.services.proposals import ProposalError
from bot.services.transitions import DEFAULT_DAYS, Transitions
from bot.slack import ids
from bot.slack.choices import menu, name_of
from bot.slack.proposals.listeners import CHECK_WITHIN_ACK, notice_modal
from bot.slack.render import Reply, ephemeral, escape
from bot.slack.request import CommandRequest
from bot.slack.transitions.cards import transition_card
from bot.store.models import aware

USAGE = ("Usage: `/schema transition ID` (its card), `/schema transition list`, `/schema transition ID moved [READER]`, "
         "`/schema transition ID extend DAYS`, `/schema transition ID contract`, `/schema transition ID rollback`; "
         "start one with `/schema propose SUBJECT --transition`")
EXTEND_DAYS = 7
BUTTONS = {ids.TRANSITION_MOVED: "moved", ids.TRANSITION_EXTEND: "extend", ids.TRANSITION_CONTRACT: "contract", ids.TRANSITION_ROLLBACK: "rollback"}
MAX_EXTEND_DAYS = 90
TAKES = {"status": 1, "moved": 2, "extend": 2, "contract": 1, "rollback": 1}  # words each action takes, itself included


class TransitionSlack:
    """What ``/schema transition`` and the buttons call."""

    def __init__(self, transitions: Transitions, client: AsyncWebClient) -> None:
        self.transitions, self.client = transitions, client

    async def command(self, request: CommandRequest) -> Reply | None:
        """``/schema transition ...``."""
        args = request.args
        if not args:
            return Reply.text(USAGE)
        if args[0] == "list":
            rows = await self.transitions.listing()
            if not rows:
                return Reply.text("No transition is open.")
            return Reply.sections("*Open transitions*", [f"#{r.id} · {r.phase} · " + listed([f"`{escape(m['old'])}` → `{escape(m['new'])}`"
                                                                                                     for m in r.mapping])
                                                         + f" · deadline {r.deadline:%Y-%m-%d %H:%M} UTC" for r in rows])
        number = args[0].lstrip("#")
        if not number.isdecimal() or len(number) > 9:
            return Reply.text(f"`{escape(args[0])}` is not a transition number. {USAGE}")
        try:
            return await self.act(int(number), request.user, args[1:])
        except ProposalError as err:
            return Reply.text(escape(err))

    async def act(self, number: int, user: str, rest: list[str]) -> Reply:
        """``status`` (the card), ``moved [READER]``, ``extend [DAYS]``, ``contract`` or ``rollback`` on transition ``number`` as
        ``user``; ProposalError says why not."""
        verb = rest[0].lower() if rest else "status"
        if len(rest) > TAKES.get(verb, len(rest)):
            return Reply.text(f"`{escape(' '.join(rest[TAKES[verb]:]))}` is more than `{verb}` takes; nothing changed. {USAGE}")
        if verb == "status":
            return transition_card(await self.transitions.view(number))
        if verb == "moved":
            marked = await self.transitions.moved(number, user, rest[1] if len(rest) > 1 else None)
            return Reply.text(f"Recorded: {escape(', '.join(marked)) or 'nothing new (said already)'} moved, on transition #{number}.")
        if verb == "extend":
            days = rest[1] if len(rest) > 1 else str(EXTEND_DAYS)
            if not days.isdecimal() or not 0 < int(days) <= MAX_EXTEND_DAYS:
                return Reply.text(f"`/schema transition {number} extend DAYS`: DAYS from 1 to {MAX_EXTEND_DAYS}")
            view = await self.transitions.view(number)
            moved = await self.transitions.extend(number, user, aware(view.row.deadline) + timedelta(days=int(days)))
            return Reply.text(f"Transition #{number} now ends {moved.row.deadline:%Y-%m-%d %H:%M} UTC.")
        if verb == "contract":
            view = await self.transitions.contract_now(number, user)
            return Reply.text(f"The contract of transition #{number} is proposal #{view.row.contract_proposal_id}.")
        if verb == "rollback":
            view = await self.transitions.rollback(number, user)
            back = f"; the return to the original is proposal #{view.row.return_proposal_id}" if view.row.return_proposal_id else ""
            return Reply.text(f"Transition #{number} is rolled back{back}.")
        return Reply.text(f"I don't know `{escape(verb)}`. {USAGE}")

    async def open_form(self, request: CommandRequest, subjects: list[str]) -> Reply | None:
        """``/schema propose SUBJECT --transition``: the transition form."""
        chosen = next((a for a in request.args if not a.startswith("--")), None)
        if chosen is not None and chosen not in subjects:
            return Reply.text(f"Unknown subject `{escape(chosen)}`.")
        try:
            await self.client.views_open(trigger_id=request.trigger_id, view=transition_modal(subjects, chosen, None))
        except SlackApiError as err:
            return Reply.text(f"Slack would not open the form ({err.response.get('error')}); try again.")
        return None


def transition_modal(subjects: list[str], chosen: str | None, proposal: int | None) -> dict[str, Any]:
    """The form: the target (unless it ships a proposal's schema), the mapping when the schema cannot say it, the deadline."""
    blocks: list[dict[str, Any]] = []
    if proposal is None:
        select = menu(ids.SUBJECT_ACTION, subjects, chosen=[chosen] if chosen else None)
        blocks += [{"type": "input", "block_id": ids.SUBJECT_BLOCK, "label": {"type": "plain_text", "text": "Subject"}, "element": select},
                   {"type": "input", "block_id": ids.SCHEMA_BLOCK, "label": {"type": "plain_text", "text": "Target schema (after the contract)"},
                    "hint": {"type": "plain_text", "text": "Avro: write a rename as the new name with the old one as an alias."},
                    "element": {"type": "plain_text_input", "action_id": ids.SCHEMA_ACTION, "multiline": True, "max_length": 3000}}]
    blocks += [{"type": "input", "block_id": ids.REFERENCES_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "Mapping"},
                "hint": {"type": "plain_text", "text": "OLD=NEW field paths, comma-separated (userid=userId). Empty: Avro aliases say it."},
                "element": {"type": "plain_text_input", "action_id": ids.REFERENCES_ACTION, "max_length": 2000}},
               {"type": "input", "block_id": ids.DEADLINE_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "Deadline"},
                "hint": {"type": "plain_text", "text": f"By when every reader has moved (default: in {DEFAULT_DAYS} days)."},
                "element": {"type": "datepicker", "action_id": ids.DEADLINE_ACTION}}]
    return {"type": "modal", "callback_id": ids.TRANSITION_VIEW, "private_metadata": json.dumps({"proposal": proposal}),
            "title": {"type": "plain_text", "text": "Ship as a transition"}, "submit": {"type": "plain_text", "text": "Start"},
            "close": {"type": "plain_text", "text": "Cancel"}, "blocks": blocks}


def register(app: AsyncApp, slack: TransitionSlack, track: Callable[[Any], Any]) -> None:
    """Attach the buttons and the form."""
    transitions = slack.transitions

    async def on_button(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """*We moved*, *Extend a week*, *Contract now*, *Roll back*: what ``/schema transition ID VERB`` does, for the clicker."""
        await ack()
        action = body["actions"][0]
        value = str(action.get("value") or "")
        if not value.isdecimal() or len(value) > 9:
            await respond(**ephemeral("That button does not name a transition; nothing changed."))
            return
        try:
            reply = await slack.act(int(value), body["user"]["id"], [BUTTONS[action["action_id"]]])
        except ProposalError as err:
            reply = Reply.text(escape(err))
        await respond(**ephemeral(reply.fallback))

    async def on_offer(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient) -> None:
        await ack()
        value = str(body["actions"][0].get("value") or "").split(":")[0]
        try:
            view = await transitions.proposals.view(int(value))
        except (ValueError, ProposalError):
            await respond(**ephemeral("That button does not name a proposal; nothing changed."))
            return
        if view.proposal.proposer != body["user"]["id"]:
            await respond(**ephemeral(f"Only the proposer of #{view.id} can ship it as a transition."))
            return
        await client.views_open(trigger_id=body["trigger_id"], view=transition_modal([view.subject.name], view.subject.name, view.id))

    async def on_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        values = view["state"]["values"]
        user = body["user"]["id"]
        proposal = json.loads(view.get("private_metadata") or "{}").get("proposal")
        mapping_text = ((values.get(ids.REFERENCES_BLOCK, {}).get(ids.REFERENCES_ACTION) or {}).get("value") or "").strip()
        day = (values.get(ids.DEADLINE_BLOCK, {}).get(ids.DEADLINE_ACTION) or {}).get("selected_date")
        try:
            mapping = parse_mapping_text(mapping_text) if mapping_text else None
        except TransitionError as err:
            await ack(response_action="errors", errors={ids.REFERENCES_BLOCK: str(err)})
            return
        deadline = datetime.fromisoformat(day).replace(hour=23, minute=59, tzinfo=UTC) if day else None
        if proposal is not None:
            try:
                original = await transitions.proposals.view(int(proposal))
            except (ValueError, ProposalError) as err:
                await ack(response_action="errors", errors={ids.DEADLINE_BLOCK: escape(err)[:150]})
                return
            subject, target, replaces = original.subject.name, original.proposal.schema_text, original.id
        else:
            subject = ((values.get(ids.SUBJECT_BLOCK, {}).get(ids.SUBJECT_ACTION) or {}).get("selected_option") or {}).get("value", "")
            subject = await name_of(subject, transitions.proposals.registry.names)
            target, replaces = (values.get(ids.SCHEMA_BLOCK, {}).get(ids.SCHEMA_ACTION) or {}).get("value") or "", None
        starting = asyncio.create_task(transitions.start(subject, target, user, deadline=deadline, mapping=mapping, replaces=replaces))
        done, _ = await asyncio.wait({starting}, timeout=CHECK_WITHIN_ACK)
        if not done:  # a large schema: answer Slack now, and show the outcome in the same window when it is known
            await ack(response_action="update", view=notice_modal("Starting…", f"Planning the transition on *{escape(subject)}*; this window "
                                                                               "shows the outcome in a moment."))
        try:
            started = await starting
        except ProposalError as err:
            if not done:
                await slack.client.views_update(view_id=view["id"], view=notice_modal("Not started", f":x: {escape(err)}"))
                return
            block = {"deadline": ids.DEADLINE_BLOCK, "mapping": ids.REFERENCES_BLOCK, "subject": ids.SUBJECT_BLOCK}.get(err.field or "")
            block = block or (ids.SCHEMA_BLOCK if proposal is None else ids.REFERENCES_BLOCK)
            await ack(response_action="errors", errors={block: str(err)[:2000]})
            return
        if done:
            await ack()
        else:
            await slack.client.views_update(view_id=view["id"], view=notice_modal(f"Transition #{started.id}", f"Transition #{started.id} "
                                            f"started; its expand version is proposal #{started.row.expand_proposal_id}."))

    for action in BUTTONS:
        app.action(action)(track(on_button))
    app.action(ids.TRANSITION_OFFER)(track(on_offer))
    app.view(ids.TRANSITION_VIEW)(track(on_submit))
