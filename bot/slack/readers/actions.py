"""Undeclared consumer groups in Slack: the card's menu (attribute a group to a team, or mark it retired), the
attribution form, and ``/schema consumers SUBJECT``. Only the subject's owner team or oncall may attribute."""

from __future__ import annotations

import json
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.readers import Activity, Census
from bot.services.census import CensusError, CensusService
from bot.services.proposals import Membership, ProposalError, Proposals, topic_of
from bot.services.registry import Registry
from bot.slack import ids
from bot.slack.choices import menu
from bot.slack.render import Reply, ephemeral, escape, section
from bot.slack.request import CommandRequest

MAX_LINES = 60


class Readers:
    """Listeners and the command."""

    def __init__(self, census: CensusService, proposals: Proposals, registry: Registry, membership: Membership) -> None:
        self.census, self.proposals, self.registry, self.membership = census, proposals, registry, membership

    async def refusal(self, user: str, proposal_id: int) -> str | None:
        """None when ``user`` may say who runs a group on this proposal's topic: the subject's owner team, or any oncall."""
        view = await self.proposals.view(proposal_id)
        teams = await self.proposals.lineage.teams()
        owner = teams.get(view.subject.owner_team or "")
        if owner is not None and user in await self.membership.members(owner):
            return None
        if any(user in team.oncall for team in teams.values()):
            return None
        everyone = await self.proposals.lineage.global_oncall()
        if everyone is not None and user in await self.membership.members(everyone):
            return None
        return (f"Only members of {escape(view.subject.owner_team or 'the owner team')} or oncall can say who runs a consumer group of "
                f"{escape(view.subject.name)}; nothing changed.")

    async def on_menu(self, ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient) -> None:
        """The card's menu on an undeclared group: the attribution form, or retire it at once."""
        await ack()
        choice, _, rest = body["actions"][0]["selected_option"]["value"].partition("|")
        number, _, group = rest.partition("|")
        user = body["user"]["id"]
        try:
            refusal = await self.refusal(user, int(number))
            if refusal:
                await respond(**ephemeral(refusal))
                return
            if choice == "attribute":
                teams = sorted(await self.proposals.lineage.teams())
                await client.views_open(trigger_id=body["trigger_id"], view=attribute_form(int(number), group, teams))
                return
            await self.census.attribute(group, None, user, "slack")
            await self.proposals.reader_said(int(number), group, None, user)
            await respond(**ephemeral(f"`{escape(group)}` is marked as retired: it is no longer counted as a reader of this topic."))
        except (ValueError, ProposalError, CensusError) as err:
            await respond(**ephemeral(f"Nothing changed: {escape(err)}"))

    async def on_attribute(self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        """The attribution form: the team is recorded for the group, and asked on this proposal (and the next ones)."""
        meta = json.loads(view.get("private_metadata") or "{}")
        picked = ((view["state"]["values"].get(ids.TEAM_BLOCK, {}).get(ids.TEAM_ACTION) or {}).get("selected_option") or {}).get("value")
        user = body["user"]["id"]
        if not picked:
            await ack(response_action="errors", errors={ids.TEAM_BLOCK: "Which team runs it?"})
            return
        try:
            refusal = await self.refusal(user, int(meta["proposal"]))
            if refusal:
                await ack(response_action="errors", errors={ids.TEAM_BLOCK: refusal[:150]})
                return
            await self.census.attribute(str(meta["group"]), picked, user, "slack")
        except (KeyError, ValueError, ProposalError, CensusError) as err:
            await ack(response_action="errors", errors={ids.TEAM_BLOCK: str(err)[:150]})
            return
        await ack()
        try:
            await self.proposals.reader_said(int(meta["proposal"]), str(meta["group"]), picked, user)
        except ProposalError:
            return  # the attribution stands for the next proposals; this one changed meanwhile

    async def consumers(self, request: CommandRequest) -> Reply:
        """``/schema consumers SUBJECT``: every consumer group Kafka says reads the subject's topic."""
        if len(request.args) != 1:
            return Reply.text("Usage: `/schema consumers SUBJECT`")
        subject = await self.registry.subject(request.args[0])
        if subject is None:
            names = await self.registry.names()
            return Reply.text(f"Unknown subject `{escape(request.args[0])}`. Known subjects: {', '.join(f'`{escape(s)}`' for s in names[:30])}")
        return census_reply(await self.census.census(topic_of(subject)))


def readers_title(reading: int, topic: str, answered: bool) -> str:
    """"Kafka says 3 groups read `orders`", or, when no census ever answered, that nobody knows yet (not "0 groups")."""
    if not answered:
        return f"*Who reads `{escape(topic)}` is not known yet*"
    return f"*Kafka says {reading} group{'s' if reading != 1 else ''} read `{escape(topic)}`*"


def census_reply(census: Census) -> Reply:
    """The census of one topic, for people."""
    title = readers_title(len(census.reading), census.topic, census.taken_at is not None)
    age = f"census of {census.taken_at:%Y-%m-%d %H:%M} UTC" if census.taken_at else "no census has answered yet"
    lines = [f"_{age}_" + "".join(f" · :warning: {escape(note[:300])}" for note in census.notes())]
    for reader in census.shown()[:MAX_LINES]:
        r = reader.reading
        who = (f"job `{escape(reader.declared.job)}`" if reader.declared and reader.declared.job else "attributed" if reader.declared else
               "*not declared*")
        team = f" ({escape(reader.declared.team)})" if reader.declared and reader.declared.team else ""
        clients = ", ".join(escape(m.client_id) for m in r.members[:5]) + (f" and {len(r.members) - 5} more" if len(r.members) > 5 else "")
        mark = ":warning: " if reader.declared is None and reader.activity in (Activity.ACTIVE, Activity.IDLE) else ""
        lines.append(f"• {mark}`{escape(r.group)}` — {who}{team} · {reader.state_text()}" + (f" ({clients})" if clients else "")
                     + (f" · last commit {r.last_commit:%Y-%m-%d %H:%M} UTC" if r.last_commit else "")
                     + (f" · lag {r.lag:,}" if r.lag is not None else ""))
    if len(census.readers) > MAX_LINES:
        lines.append(f"… and {len(census.readers) - MAX_LINES} more (`bot consumers {escape(census.topic)}` lists them all)")
    return Reply.sections(title, lines)


def attribute_form(proposal_id: int, group: str, teams: list[str]) -> dict[str, Any]:
    """Which team runs this group?"""
    return {"type": "modal", "callback_id": ids.ATTRIBUTE_VIEW, "private_metadata": json.dumps({"proposal": proposal_id, "group": group}),
            "title": {"type": "plain_text", "text": "Who runs this group?"}, "submit": {"type": "plain_text", "text": "Attribute"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [section(f"Kafka says consumer group `{escape(group)}` reads this topic, but no job in the catalog declares it. "
                               "The team you pick is asked on this proposal and on every later one for the topic."),
                       {"type": "input", "block_id": ids.TEAM_BLOCK, "label": {"type": "plain_text", "text": "Team"},
                        "element": menu(ids.TEAM_ACTION, teams)}]}
