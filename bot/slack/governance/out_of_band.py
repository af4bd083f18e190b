"""Unapproved changes in Slack: the alert (posted once in the subject's channel, edited when someone acts on it),
its buttons (open a retroactive proposal, acknowledge as known; the subject's owner team or oncall), and the
watcher's "cannot read the registry / can again" notes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.services.out_of_band import OOB_ALERT, OOB_STATUS, REGISTRY, TRANSITION, OutOfBand, OutOfBandError
from bot.services.outbox import GiveUp, Handler, Item
from bot.services.proposals import Membership
from bot.slack import ids
from bot.slack.delivery import call, place
from bot.slack.render import Reply, ephemeral, escape, mention, section
from bot.store.models import ObservedSchema

MAX_CHANGES = 15


def alert(row: ObservedSchema) -> Reply:
    """The alert: what was found where, its classification and impact, and what has been done about it."""
    where = (f"version {row.version} in the Schema Registry (schema id {row.schema_id})" if row.source == REGISTRY
             else f"producers write schema id {row.schema_id} on the topic")
    detail = row.detail
    if row.source == TRANSITION:  # an approved schema, but only one side of a running transition's mapping
        title = f":rotating_light: One side only on {escape(row.subject)} during {escape(detail.get('note') or 'a transition')}: {where}"
        lines = [f"*{title}*", "While a transition runs, producers write both sides of its mapping; this schema has only one."]
    else:
        title = f":rotating_light: Unapproved change on {escape(row.subject)}: {where}"
        lines = [f"*{title}*", "No approved proposal accounts for this schema: it was changed around ChangeOps."]
    if row.level:
        against = f" against approved version {detail['against']}" if detail.get("against") else ""
        lines.append(f"Classified *{row.level}*{against}:")
        lines += [f"• `{escape(c['rule'])}` `{escape(c['path'])}` — {escape(c['message'])}" for c in detail.get("changes", [])[:MAX_CHANGES]]
        owners = detail.get("owners") or []
        lines.append(f"Impact: {', '.join(escape(o) for o in owners)}" if owners else f"Impact: _{escape(detail.get('note') or 'nobody downstream is known')}_")
    elif detail.get("error"):
        lines.append(f"_Not classified: {escape(detail['error'])}_")
    blocks: list[dict[str, Any]] = [section("\n".join(lines))]
    done = []
    if row.proposal_id:
        done.append(f"Retroactive proposal #{row.proposal_id} opened (`/schema status {row.proposal_id}`).")
    if row.acknowledged_by:
        done.append(f"Acknowledged as known by {mention(row.acknowledged_by)}.")
    if done:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": " ".join(done)}]})
    buttons = []
    if row.proposal_id is None and row.level and row.source != TRANSITION:
        buttons.append({"type": "button", "action_id": ids.OOB_PROPOSE, "style": "primary", "value": str(row.id),
                        "text": {"type": "plain_text", "text": "Open a retroactive proposal"}})
    if row.acknowledged_by is None:
        buttons.append({"type": "button", "action_id": ids.OOB_ACK, "value": str(row.id), "text": {"type": "plain_text", "text": "Acknowledge as known"}})
    if buttons:
        blocks.append({"type": "actions", "block_id": f"oob_{row.id}", "elements": buttons})
    return Reply(title, blocks)


class OutOfBandSlack:
    """Delivery and buttons."""

    def __init__(self, client: AsyncWebClient, watcher: OutOfBand, membership: Membership) -> None:
        self.client, self.watcher, self.membership = client, watcher, membership

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {OOB_ALERT: self.deliver, OOB_STATUS: self.status}

    async def deliver(self, item: Item) -> None:
        """Post the alert, or edit it in place."""
        try:
            row = await self.watcher.observed(int(item.payload["observed"]))
        except OutOfBandError as err:
            raise GiveUp(str(err)) from None
        reply = alert(row)
        await place(self.client, (row.message_channel, row.message_ts), str(row.channel), {"text": reply.fallback, "blocks": reply.blocks},
                    lambda channel, ts: self.watcher.save_message(int(row.id or 0), channel, ts, replacing=row.message_ts))

    async def status(self, item: Item) -> None:
        """The watcher cannot read a source, or can again."""
        await call(self.client, "chat.postMessage", channel=item.payload["channel"], text=item.payload["text"], unfurl_links=False)

    async def _refusal(self, user: str, subject: str) -> str | None:
        teams = await self.watcher.lineage.teams()
        owner = (await self.watcher.registry.owners()).get(subject)
        if owner in teams and user in await self.membership.members(teams[owner]):
            return None
        if any(user in team.oncall for team in teams.values()):
            return None
        return f"Only members of {escape(owner or 'the owner team')} or oncall can act on an unapproved change of {escape(subject)}; nothing changed."

    async def on_button(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        """Open a retroactive proposal, or acknowledge the change as known."""
        await ack()
        action, user = body["actions"][0], body["user"]["id"]
        try:
            row = await self.watcher.observed(int(action.get("value") or 0))
            refusal = await self._refusal(user, row.subject)
            if refusal:
                await respond(**ephemeral(refusal))
                return
            if action["action_id"] == ids.OOB_PROPOSE:
                number = await self.watcher.retroactive(int(row.id or 0), user)
                told = f"Proposal #{number} is open for it: the downstream teams are asked as for any change."
            else:
                await self.watcher.acknowledge(int(row.id or 0), user)
                told = "Acknowledged as known."
        except (ValueError, OutOfBandError) as err:
            told = f"Nothing changed: {escape(err)}"
        await respond(**ephemeral(told))
