"""Slack listeners of the approval workflow: the propose modal, the card's buttons, the reason modal."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.approvals import Decision
from bot.domain.compat.formats import SchemaType
from bot.domain.references import Reference, parse_pin, read_references
from bot.services.outbox import Outbox
from bot.services.proposals import ProposalError, Proposals, ProposalView, self_approves
from bot.slack import delivery, ids
from bot.slack.choices import menu, name_of
from bot.slack.proposals.cards import STATE_TEXT
from bot.slack.render import ephemeral, escape, mention, section

DECISIONS = {ids.REJECT: Decision.REJECT, ids.REQUEST_CHANGES: Decision.REQUEST_CHANGES}
CHECK_WITHIN_ACK = 2.0  # seconds a form submission waits for its classification before acking with "Checking…"


SCHEMA_BOX, NOTES_BOX = 3000, 2000  # the characters each text box holds (Slack's plain_text_input max_length)


def propose_modal(subjects: list[str], chosen: str | None = None, *, schema: str = "", notes: str = "",
                  revision_of: int | None = None, references: Sequence[Reference] = ()) -> dict[str, Any]:
    """The form: subject, schema, planned window, notes for consumers (prefilled for a revision). A revision's schema or
    notes longer than their box are not cut to fit: the box is left empty, and left empty it keeps them (``kept``)."""
    select = menu(ids.SUBJECT_ACTION, subjects, chosen=[chosen] if chosen else None, placeholder="Choose a subject")
    schema_input: dict[str, Any] = {"type": "plain_text_input", "action_id": ids.SCHEMA_ACTION, "multiline": True, "max_length": SCHEMA_BOX}
    notes_input: dict[str, Any] = {"type": "plain_text_input", "action_id": ids.NOTES_ACTION, "multiline": True, "max_length": NOTES_BOX}
    kept = [name for name, text, box in (("schema", schema, SCHEMA_BOX), ("notes", notes, NOTES_BOX)) if len(text) > box]
    if schema and "schema" not in kept:
        schema_input["initial_value"] = schema
    if notes and "notes" not in kept:
        notes_input["initial_value"] = notes
    schema_hint = ("In the subject's format (Avro, Protobuf or JSON Schema, as the catalog says). Paste it (up to 3,000 characters), "
                   "or upload the file below.")
    if "schema" in kept:
        schema_hint = (f"#{revision_of}'s schema ({len(schema):,} characters, more than this box holds) is kept unless you paste "
                       "or upload another.")
    notes_hint = "Migration plan, dual-version period, who to ask."
    if "notes" in kept:
        notes_hint = f"#{revision_of}'s notes ({len(notes):,} characters, more than this box holds) are kept unless you write others."
    references_input: dict[str, Any] = {"type": "plain_text_input", "action_id": ids.REFERENCES_ACTION, "multiline": True, "max_length": 2000,
                                        "placeholder": {"type": "plain_text", "text": "com.acme.Address=address:1"}}
    if references:
        references_input["initial_value"] = "\n".join(f"{r.name}={r.subject}:{r.version}" for r in references)[:2000]
    return {
        "type": "modal", "callback_id": ids.PROPOSE_VIEW, "private_metadata": json.dumps({"revision_of": revision_of, "kept": kept}),
        "title": {"type": "plain_text", "text": f"Revise #{revision_of}" if revision_of else "Propose a change"},
        "submit": {"type": "plain_text", "text": "Classify & propose"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "input", "block_id": ids.SUBJECT_BLOCK, "label": {"type": "plain_text", "text": "Subject"}, "element": select},
            {"type": "input", "block_id": ids.SCHEMA_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "New schema"},
             "hint": {"type": "plain_text", "text": schema_hint}, "element": schema_input},
            {"type": "input", "block_id": ids.FILE_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "…or upload the file"},
             "element": {"type": "file_input", "action_id": ids.FILE_ACTION, "filetypes": ["avsc", "json", "proto"], "max_files": 1}},
            {"type": "input", "block_id": ids.REFERENCES_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "Schema references"},
             "hint": {"type": "plain_text", "text": "Named types from other subjects, one per line as NAME=SUBJECT:VERSION, dependencies "
                                                    "first (NAME: an Avro type's full name, a Protobuf import path, a JSON Schema URI). "
                                                    "Empty: the subject's current references are kept."},
             "element": references_input},
            {"type": "input", "block_id": ids.WINDOW_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "Planned start"},
             "element": {"type": "datetimepicker", "action_id": ids.WINDOW_ACTION}},
            {"type": "input", "block_id": ids.DURATION_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "Planned duration (hours)"},
             "element": {"type": "number_input", "action_id": ids.DURATION_ACTION, "is_decimal_allowed": True, "min_value": "0.25", "max_value": "720"}},
            {"type": "input", "block_id": ids.NOTES_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "Notes for consumers"},
             "hint": {"type": "plain_text", "text": notes_hint}, "element": notes_input},
        ],
    }


def reason_modal(action: str, value: str, channel: str) -> dict[str, Any]:
    """Asks why (to reject, or to request changes)."""
    title = "Reject" if action == ids.REJECT else "Request changes"
    return {
        "type": "modal", "callback_id": ids.REASON_VIEW, "private_metadata": json.dumps({"action": action, "value": value, "channel": channel}),
        "title": {"type": "plain_text", "text": title}, "submit": {"type": "plain_text", "text": title},
        "blocks": [{"type": "input", "block_id": ids.REASON_BLOCK, "label": {"type": "plain_text", "text": "Reason (shown on the card)"},
                    "element": {"type": "plain_text_input", "action_id": ids.REASON_ACTION, "multiline": True, "max_length": 1000}}],
    }


def emergency_modal(value: str) -> dict[str, Any]:
    """Asks the first oncall why a held change must ship during its freeze."""
    return {
        "type": "modal", "callback_id": ids.EMERGENCY_VIEW, "private_metadata": json.dumps({"value": value}),
        "title": {"type": "plain_text", "text": "Ship during the freeze"}, "submit": {"type": "plain_text", "text": "Ask a second oncall"},
        "blocks": [section("An emergency change ships a held change now, during its freeze. You ask; a second person from oncall "
                           "confirms on the card. Both names, the reason and the calendar entry are kept for the audit."),
                   {"type": "input", "block_id": ids.REASON_BLOCK, "label": {"type": "plain_text", "text": "Why can it not wait?"},
                    "element": {"type": "plain_text_input", "action_id": ids.REASON_ACTION, "multiline": True, "max_length": 1000}}],
    }


class DownloadError(Exception):
    """An uploaded file the bot could not read."""


async def download(client: AsyncWebClient, file: dict[str, Any], limit: int = 1_000_000) -> str:
    """The text of an uploaded file (Slack serves it to the bot's token)."""
    url = file.get("url_private_download") or file.get("url_private")
    if not url or (file.get("size") or 0) > limit:
        raise DownloadError("that file cannot be read (missing, or over 1 MB)")
    try:
        async with aiohttp.ClientSession() as http, http.get(url, headers={"Authorization": f"Bearer {client.token}"},
                                                             timeout=aiohttp.ClientTimeout(total=2)) as response:
            if response.status != 200:
                raise DownloadError(f"Slack would not hand over the file (HTTP {response.status})")
            content = b""
            async for chunk in response.content.iter_chunked(64 * 1024):  # read() returns what has arrived, not all
                content += chunk
                if len(content) > limit:
                    break
    except (aiohttp.ClientError, TimeoutError) as err:
        raise DownloadError(f"the file could not be downloaded ({type(err).__name__})") from None
    if len(content) > limit:
        raise DownloadError("the file is over 1 MB")
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise DownloadError("the file is not UTF-8 text") from None


def parse_value(value: str) -> tuple[int, str | None]:
    """A button's value: ``12`` or ``12:team``; ValueError for anything else."""
    number, _, team = value.partition(":")
    return int(number), team or None


def notice_modal(title: str, text: str) -> dict[str, Any]:
    """A modal that only says something (the form's state while it is checked, or its outcome)."""
    return {"type": "modal", "callback_id": ids.PROPOSE_RESULT_VIEW, "title": {"type": "plain_text", "text": title[:24]},
            "close": {"type": "plain_text", "text": "Close"}, "blocks": [section(text)]}


def register(app: AsyncApp, proposals: Proposals, outbox: Outbox, track: Callable[[Any], Any]) -> None:
    """Attach the workflow's listeners."""

    async def tell(user: str, text: str) -> None:
        await delivery.dm(outbox, proposals.db, user, text)

    async def on_approve(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        try:
            proposal_id, team = parse_value(body["actions"][0]["value"])
            user = body["user"]["id"]
            view, teams = await proposals.decide(proposal_id, user, Decision.APPROVE, team=team)
            own = [t for t in view.waiting() if user == view.proposal.proposer and not self_approves(view, t)
                   and user in await proposals.approvers(view, t)]
            await respond(**ephemeral(f"You approved #{proposal_id} for {escape(', '.join(teams))}."
                                      + (f" Your own approval does not count for {escape(', '.join(own))} (four eyes): someone else "
                                         "there must approve." if own else "")))
        except ValueError:
            await respond(**ephemeral("That button does not name a proposal; nothing changed."))
        except ProposalError as err:
            await respond(**ephemeral(str(err)))

    async def on_reason_button(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        action = body["actions"][0]
        channel = (body.get("channel") or {}).get("id", "")
        await client.views_open(trigger_id=body["trigger_id"], view=reason_modal(action["action_id"], action["value"], channel))

    async def on_reason(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        reason = (view["state"]["values"][ids.REASON_BLOCK][ids.REASON_ACTION].get("value") or "").strip()
        if not reason:
            await ack(response_action="errors", errors={ids.REASON_BLOCK: "Say why, so the proposer knows what to change"})
            return
        await ack()
        meta = json.loads(view.get("private_metadata") or "{}")
        user = body["user"]["id"]
        try:
            proposal_id, team = parse_value(str(meta.get("value", "")))
            await proposals.decide(proposal_id, user, DECISIONS[meta["action"]], reason, team=team)
        except (ValueError, KeyError):
            await tell(user, "That form does not name a proposal; nothing changed.")
        except ProposalError as err:
            await tell(user, str(err))

    async def on_withdraw(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        try:
            proposal_id, _ = parse_value(body["actions"][0]["value"])
            await proposals.withdraw(proposal_id, body["user"]["id"])
            await respond(**ephemeral(f"You withdrew #{proposal_id}."))
        except ValueError:
            await respond(**ephemeral("That button does not name a proposal; nothing changed."))
        except ProposalError as err:
            await respond(**ephemeral(str(err)))

    async def on_propose(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient) -> None:
        values = view["state"]["values"]
        subject = ((values.get(ids.SUBJECT_BLOCK, {}).get(ids.SUBJECT_ACTION) or {}).get("selected_option") or {}).get("value", "")
        subject = await name_of(subject, proposals.registry.names)
        schema = (values.get(ids.SCHEMA_BLOCK, {}).get(ids.SCHEMA_ACTION) or {}).get("value") or ""
        files = (values.get(ids.FILE_BLOCK, {}).get(ids.FILE_ACTION) or {}).get("files") or []
        if files and schema.strip():
            await ack(response_action="errors", errors={ids.FILE_BLOCK: "Paste the schema or upload a file, not both"})
            return
        schema_type = None  # pasted: the subject's type; a file says its own by its extension
        if files:
            try:
                schema = await download(client, files[0])
            except DownloadError as err:
                await ack(response_action="errors", errors={ids.FILE_BLOCK: str(err)})
                return
            schema_type = SchemaType.of_file(str(files[0].get("name") or ""), schema).value
        notes = (values.get(ids.NOTES_BLOCK, {}).get(ids.NOTES_ACTION) or {}).get("value") or ""
        metadata = json.loads(view.get("private_metadata") or "{}")
        revision_of, kept = metadata.get("revision_of"), metadata.get("kept") or []
        if revision_of is not None and ((not schema.strip() and "schema" in kept) or (not notes.strip() and "notes" in kept)):
            try:  # what the form could not show is kept from the proposal it revises
                revised = (await proposals.view(int(revision_of))).proposal
            except ProposalError as err:
                await ack(response_action="errors", errors={ids.SCHEMA_BLOCK: str(err)[:2000]})
                return
            schema = schema if schema.strip() or "schema" not in kept else revised.schema_text
            notes = notes if notes.strip() or "notes" not in kept else revised.notes
        if not schema.strip():
            await ack(response_action="errors", errors={ids.SCHEMA_BLOCK: "Paste the new schema, or upload its file (.avsc, .proto or .json)"})
            return
        stamp = (values.get(ids.WINDOW_BLOCK, {}).get(ids.WINDOW_ACTION) or {}).get("selected_date_time")
        hours_text = (values.get(ids.DURATION_BLOCK, {}).get(ids.DURATION_ACTION) or {}).get("value")
        try:
            hours = float(hours_text) if hours_text else None
        except ValueError:
            await ack(response_action="errors", errors={ids.DURATION_BLOCK: "A number of hours, such as 2 or 0.5"})
            return
        lines = [line.strip() for line in ((values.get(ids.REFERENCES_BLOCK, {}).get(ids.REFERENCES_ACTION) or {}).get("value") or "").splitlines()]
        try:
            references = [parse_pin(line) for line in lines if line] or None
        except ValueError as err:
            await ack(response_action="errors", errors={ids.REFERENCES_BLOCK: str(err)[:2000]})
            return
        try:
            await proposals.precheck(subject, schema, hours)
        except ProposalError as err:
            await ack(response_action="errors", errors={_block(err): str(err)[:2000]})
            return
        checking = asyncio.create_task(proposals.check(subject, schema, hours, references, schema_type))
        done, _ = await asyncio.wait({checking}, timeout=CHECK_WITHIN_ACK)
        slow = not done
        if slow:  # a huge schema: answer Slack now, and show the outcome in the same window when it is known
            await ack(response_action="update", view=notice_modal("Checking…", f"Classifying the schema for *{escape(subject)}*; "
                                                                               "this window shows the outcome in a moment."))
        try:
            checked = await checking
        except ProposalError as err:
            if slow:
                await client.views_update(view_id=view["id"], view=notice_modal("Not proposed", f":x: {escape(err)}"))
            else:
                await ack(response_action="errors", errors={_block(err): str(err)[:2000]})
            return
        if not slow:
            await ack()
        user = body["user"]["id"]
        start = datetime.fromtimestamp(int(stamp), UTC) if stamp else None
        try:
            created = await proposals.propose(subject, schema, user, notes=notes, window_start=start, window_hours=hours,
                                              revision_of=revision_of, checked=checked)
        except ProposalError as err:
            await tell(user, f"Your proposal was not created: {err}")
            return
        if slow:
            await client.views_update(view_id=view["id"], view=notice_modal(f"Proposed #{created.id}", f"Schema change #{created.id} is "
                                      f"*{created.proposal.level}* and {STATE_TEXT[created.state]}; its card is in the changes channel."))

    async def on_reschedule(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        try:
            proposal_id, _ = parse_value(body["actions"][0]["value"])
            moved = await proposals.reschedule(proposal_id, body["user"]["id"])
            await respond(**ephemeral(f"#{proposal_id} now plans {moved.proposal.window_start:%Y-%m-%d %H:%M}–"
                                       f"{moved.proposal.window_end:%Y-%m-%d %H:%M} UTC; it is {STATE_TEXT[moved.state]}."))
        except ValueError:
            await respond(**ephemeral("That button does not name a proposal; nothing changed."))
        except ProposalError as err:
            await respond(**ephemeral(str(err)))

    async def clicked_proposal(body: dict[str, Any], respond: AsyncRespond) -> ProposalView | None:
        """The proposal a button names; None (the clicker told why) when it names none."""
        try:
            return await proposals.view(parse_value(body["actions"][0]["value"])[0])
        except ValueError:
            await respond(**ephemeral("That button does not name a proposal; nothing changed."))
        except ProposalError as err:
            await respond(**ephemeral(str(err)))
        return None

    async def on_revise(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient) -> None:
        await ack()
        view = await clicked_proposal(body, respond)
        if view is None:
            return
        proposal_id = view.id
        if view.proposal.proposer != body["user"]["id"]:
            await respond(**ephemeral(f"Only {mention(view.proposal.proposer)}, who proposed #{proposal_id}, can revise it."))
            return
        modal = propose_modal([view.subject.name], view.subject.name, schema=view.proposal.schema_text, notes=view.proposal.notes,
                              references=read_references(view.proposal.references),
                              revision_of=proposal_id)
        await client.views_open(trigger_id=body["trigger_id"], view=modal)

    async def on_registry_retry(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        try:
            proposal_id = int(body["actions"][0]["value"])
            view = await proposals.retry_registration(proposal_id, body["user"]["id"])
            await respond(**ephemeral(f"Registering version {view.proposal.version} of {escape(view.subject.name)} again; the card follows it."))
        except ValueError:
            await respond(**ephemeral("That button does not name a proposal; nothing changed."))
        except ProposalError as err:
            await respond(**ephemeral(str(err)))

    async def on_emergency(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient) -> None:
        await ack()
        view = await clicked_proposal(body, respond)
        if view is None:
            return
        if not await proposals.is_oncall(view, body["user"]["id"]):
            await respond(**ephemeral(f"Only the oncall of {escape(view.subject.owner_team or 'the owner team')} (or the global oncall) can "
                                      "ship a change during a freeze; nothing changed."))
            return
        await client.views_open(trigger_id=body["trigger_id"], view=emergency_modal(str(view.id)))

    async def on_emergency_reason(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        reason = (view["state"]["values"][ids.REASON_BLOCK][ids.REASON_ACTION].get("value") or "").strip()
        if not reason:
            await ack(response_action="errors", errors={ids.REASON_BLOCK: "Say why it cannot wait: it is kept for the audit"})
            return
        try:
            proposal_id, _ = parse_value(str(json.loads(view.get("private_metadata") or "{}").get("value", "")))
            await proposals.request_emergency(proposal_id, body["user"]["id"], reason)
        except (ValueError, KeyError):
            await ack(response_action="errors", errors={ids.REASON_BLOCK: "That form does not name a proposal; nothing changed."})
            return
        except ProposalError as err:
            await ack(response_action="errors", errors={ids.REASON_BLOCK: str(err)[:150]})
            return
        await ack()

    async def on_emergency_confirm(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        try:
            proposal_id, _ = parse_value(body["actions"][0]["value"])
            view = await proposals.confirm_emergency(proposal_id, body["user"]["id"])
            await respond(**ephemeral(f"Confirmed: #{proposal_id} ships during the freeze, recorded as version {view.proposal.version}."))
        except ValueError:
            await respond(**ephemeral("That button does not name a proposal; nothing changed."))
        except ProposalError as err:
            await respond(**ephemeral(str(err)))

    app.action(ids.APPROVE)(track(on_approve))
    app.action(ids.REGISTRY_RETRY)(track(on_registry_retry))
    app.action(ids.EMERGENCY)(track(on_emergency))
    app.action(ids.EMERGENCY_CONFIRM)(track(on_emergency_confirm))
    app.view(ids.EMERGENCY_VIEW)(track(on_emergency_reason))
    app.action(ids.REVISE)(track(on_revise))
    app.action(ids.REJECT)(track(on_reason_button))
    app.action(ids.REQUEST_CHANGES)(track(on_reason_button))
    app.action(ids.WITHDRAW)(track(on_withdraw))
    app.action(ids.RESCHEDULE)(track(on_reschedule))
    app.view(ids.REASON_VIEW)(track(on_reason))
    app.view(ids.PROPOSE_VIEW)(track(on_propose))


def _block(err: ProposalError) -> str:
    """The form block a refusal belongs to."""
    return {"subject": ids.SUBJECT_BLOCK, "duration": ids.DURATION_BLOCK, "references": ids.REFERENCES_BLOCK,
            "schema_type": ids.FILE_BLOCK}.get(err.field or "", ids.SCHEMA_BLOCK)
