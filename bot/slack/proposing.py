"""Slack listeners of the approval workflow: the propose modal, the card's buttons, the reason modal."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import aiohttp
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.approvals import Decision
from bot.services.proposals import ProposalError, Proposals
from bot.slack import ids
from bot.slack.poster import Poster
from bot.slack.render import Reply

DECISIONS = {ids.REJECT: Decision.REJECT, ids.REQUEST_CHANGES: Decision.REQUEST_CHANGES}


def propose_modal(subjects: list[str], chosen: str | None = None, *, schema: str = "", notes: str = "",
                  revision_of: int | None = None) -> dict[str, Any]:
    """The form: subject, schema, planned window, notes for consumers (prefilled for a revision)."""
    options = [{"text": {"type": "plain_text", "text": name[:75]}, "value": name[:150]} for name in subjects[:100]]
    select: dict[str, Any] = {"type": "static_select", "action_id": ids.SUBJECT_ACTION, "options": options,
                              "placeholder": {"type": "plain_text", "text": "Choose a subject"}}
    if chosen in subjects:
        select["initial_option"] = next(o for o in options if o["value"] == chosen)
    schema_input: dict[str, Any] = {"type": "plain_text_input", "action_id": ids.SCHEMA_ACTION, "multiline": True, "max_length": 3000}
    notes_input: dict[str, Any] = {"type": "plain_text_input", "action_id": ids.NOTES_ACTION, "multiline": True, "max_length": 2000}
    if schema:
        schema_input["initial_value"] = schema[:3000]
    if notes:
        notes_input["initial_value"] = notes[:2000]
    return {
        "type": "modal", "callback_id": ids.PROPOSE_VIEW, "private_metadata": json.dumps({"revision_of": revision_of}),
        "title": {"type": "plain_text", "text": f"Revise #{revision_of}" if revision_of else "Propose a change"},
        "submit": {"type": "plain_text", "text": "Classify & propose"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "input", "block_id": ids.SUBJECT_BLOCK, "label": {"type": "plain_text", "text": "Subject"}, "element": select},
            {"type": "input", "block_id": ids.SCHEMA_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "New schema (Avro JSON)"},
             "hint": {"type": "plain_text", "text": "Paste it (up to 3,000 characters), or upload the .avsc file below."},
             "element": schema_input},
            {"type": "input", "block_id": ids.FILE_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "…or upload the .avsc file"},
             "element": {"type": "file_input", "action_id": ids.FILE_ACTION, "filetypes": ["avsc", "json"], "max_files": 1}},
            {"type": "input", "block_id": ids.WINDOW_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "Planned start"},
             "element": {"type": "datetimepicker", "action_id": ids.WINDOW_ACTION}},
            {"type": "input", "block_id": ids.DURATION_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "Planned duration (hours)"},
             "element": {"type": "number_input", "action_id": ids.DURATION_ACTION, "is_decimal_allowed": True, "min_value": "0.25", "max_value": "720"}},
            {"type": "input", "block_id": ids.NOTES_BLOCK, "optional": True, "label": {"type": "plain_text", "text": "Notes for consumers"},
             "hint": {"type": "plain_text", "text": "Migration plan, dual-version period, who to ask."},
             "element": notes_input},
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
            content = await response.content.read(limit + 1)
    except (aiohttp.ClientError, TimeoutError) as err:
        raise DownloadError(f"the file could not be downloaded ({type(err).__name__})") from None
    if len(content) > limit:
        raise DownloadError("the file is over 1 MB")
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise DownloadError("the file is not UTF-8 text") from None


def parse_value(value: str) -> tuple[int, str | None]:
    """A button's value: ``12`` or ``12:team``."""
    number, _, team = value.partition(":")
    return int(number), team or None


def register(app: AsyncApp, proposals: Proposals, poster: Poster, track: Callable[[Any], Any]) -> None:
    """Attach the workflow's listeners."""

    async def on_approve(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        proposal_id, team = parse_value(body["actions"][0]["value"])
        try:
            _, teams = await proposals.decide(proposal_id, body["user"]["id"], Decision.APPROVE, team=team)
            await respond(**_ephemeral(f"You approved #{proposal_id} for {', '.join(teams)}."))
        except ProposalError as err:
            await respond(**_ephemeral(str(err)))

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
        proposal_id, team = parse_value(meta["value"])
        user = body["user"]["id"]
        try:
            await proposals.decide(proposal_id, user, DECISIONS[meta["action"]], reason, team=team)
        except ProposalError as err:
            await poster.post(user, Reply.text(str(err)))

    async def on_withdraw(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        proposal_id, _ = parse_value(body["actions"][0]["value"])
        try:
            await proposals.withdraw(proposal_id, body["user"]["id"])
            await respond(**_ephemeral(f"You withdrew #{proposal_id}."))
        except ProposalError as err:
            await respond(**_ephemeral(str(err)))

    async def on_propose(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient) -> None:
        values = view["state"]["values"]
        subject = ((values.get(ids.SUBJECT_BLOCK, {}).get(ids.SUBJECT_ACTION) or {}).get("selected_option") or {}).get("value", "")
        schema = (values.get(ids.SCHEMA_BLOCK, {}).get(ids.SCHEMA_ACTION) or {}).get("value") or ""
        files = (values.get(ids.FILE_BLOCK, {}).get(ids.FILE_ACTION) or {}).get("files") or []
        if files and schema.strip():
            await ack(response_action="errors", errors={ids.FILE_BLOCK: "Paste the schema or upload a file, not both"})
            return
        if files:
            try:
                schema = await download(client, files[0])
            except DownloadError as err:
                await ack(response_action="errors", errors={ids.FILE_BLOCK: str(err)})
                return
        if not schema.strip():
            await ack(response_action="errors", errors={ids.SCHEMA_BLOCK: "Paste the new schema, or upload its .avsc file"})
            return
        stamp = (values.get(ids.WINDOW_BLOCK, {}).get(ids.WINDOW_ACTION) or {}).get("selected_date_time")
        hours_text = (values.get(ids.DURATION_BLOCK, {}).get(ids.DURATION_ACTION) or {}).get("value")
        notes = (values.get(ids.NOTES_BLOCK, {}).get(ids.NOTES_ACTION) or {}).get("value") or ""
        try:
            hours = float(hours_text) if hours_text else None
        except ValueError:
            await ack(response_action="errors", errors={ids.DURATION_BLOCK: "A number of hours, such as 2 or 0.5"})
            return
        try:
            await proposals.check(subject, schema, hours)
        except ProposalError as err:
            block = {"subject": ids.SUBJECT_BLOCK, "duration": ids.DURATION_BLOCK}.get(err.field or "", ids.SCHEMA_BLOCK)
            await ack(response_action="errors", errors={block: str(err)[:2000]})
            return
        await ack()
        user = body["user"]["id"]
        start = datetime.fromtimestamp(int(stamp), UTC) if stamp else None
        revision_of = json.loads(view.get("private_metadata") or "{}").get("revision_of")
        try:
            await proposals.propose(subject, schema, user, notes=notes, window_start=start, window_hours=hours, revision_of=revision_of)
        except ProposalError as err:
            await poster.post(user, Reply.text(f"Your proposal was not created: {err}"))

    async def on_revise(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient) -> None:
        await ack()
        proposal_id, _ = parse_value(body["actions"][0]["value"])
        view = await proposals.view(proposal_id)
        if view.proposal.proposer != body["user"]["id"]:
            await respond(**_ephemeral(f"Only <@{view.proposal.proposer}>, who proposed #{proposal_id}, can revise it."))
            return
        modal = propose_modal([view.subject.name], view.subject.name, schema=view.proposal.schema_text, notes=view.proposal.notes,
                              revision_of=proposal_id)
        await client.views_open(trigger_id=body["trigger_id"], view=modal)

    app.action(ids.APPROVE)(track(on_approve))
    app.action(ids.REVISE)(track(on_revise))
    app.action(ids.REJECT)(track(on_reason_button))
    app.action(ids.REQUEST_CHANGES)(track(on_reason_button))
    app.action(ids.WITHDRAW)(track(on_withdraw))
    app.view(ids.REASON_VIEW)(track(on_reason))
    app.view(ids.PROPOSE_VIEW)(track(on_propose))


def _ephemeral(text: str) -> dict[str, Any]:
    return {"text": text, "response_type": "ephemeral", "replace_original": False}
