"""The playground's welcome: a message in the first channel whose buttons start each journey, as the person who
makes it. Each button answers the page with whom to act as, where to look and what to type (the page switches and
fills in; the person still presses the bot's buttons themselves); the bot is asked only what a person would ask it."""

from __future__ import annotations

import json
from typing import Any

from bot.emulator import SlackDriver, Workspace
from bot.emulator.workspace import Message
from bot.runtime import Bot
from bot.slack import ids

GUIDE, GUIDE_BOT = "U0PLAYGRND", "BPLAYGRND"  # the playground itself: its welcome is not the bot's
CARDS, ALERTS, SUBJECT, PIPELINE = "schema-changes", "orders-pipeline", "orders-value", "enrich-orders"
PROPOSE, APPROVE, ONCALL = "journey_propose", "journey_approve", "journey_oncall"
JOURNEYS = (
    (PROPOSE, "Start as you", "*1 · Propose a breaking change* — as *you*, upstream (orders-team owns `orders-value`): the form "
                              "opens with a new version whose `quantity` is a string instead of an int. Press *Classify & propose*: the "
                              "card lands here, with who it breaks and the teams that must acknowledge within 24 hours."),
    (APPROVE, "Start as carol", "*2 · Approve it* — as *carol*, downstream owner (analytics-team and growth-team read "
                                "`quantity`): the card of journey 1 is shown; *Approve* answers for both her teams and the card follows."),
    (ONCALL, "Start as bob", "*3 · Take a lag page* — as *bob*, the global oncall: `enrich-orders` is two hours behind on "
                             "`orders` (the demo group, 600 messages back), and its page comes to #orders-pipeline about a minute after "
                             "the start. *Acknowledge* it, then *Plan a backfill*: the plan says what moves before anything does."),
)


def welcome() -> tuple[str, list[dict[str, Any]]]:
    """The welcome's text and blocks."""
    text = "Welcome to the ChangeOps playground: pick a journey below."
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": (
            "*Welcome to the ChangeOps playground.* This page is a Slack workspace; the bot behind it is the real one, on "
            "your machine. Proposal cards land here in #schema-changes (a copy in the subject's channel); alerts and "
            "oncall operations in #orders-pipeline. Switch who you are at the top left, or start a journey:")}},
    ]
    for action, label, about in JOURNEYS:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": about},
                       "accessory": {"type": "button", "action_id": action, "text": {"type": "plain_text", "text": label}, "value": action}})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": "Or type a command below: `/schema help`, `/sli help`, "
                                                                             "`/backfill help`, `/calendar`."}]})
    return text, blocks


def post_welcome(ws: Workspace) -> Message:
    """Post the welcome, from the playground, as the first message of the cards' channel."""
    text, blocks = welcome()
    channel = ws.channel_id(CARDS)
    assert channel is not None
    message = Message(channel, ws.next_ts(), GUIDE, text, blocks, bot_id=GUIDE_BOT)
    ws.messages.append(message)
    return message


class Journeys:
    """What each of the welcome's buttons does."""

    def __init__(self, ws: Workspace, driver: SlackDriver, bot: Bot, people: dict[str, str]) -> None:
        self.ws, self.driver, self.bot, self.people = ws, driver, bot, people

    async def start(self, action: str) -> dict[str, Any]:
        """``{"act_as", "place", "focus"?, "prefill"?, "note"?}`` for the page; a ValueError for an unknown button."""
        if action == PROPOSE:
            return await self._propose()
        if action == APPROVE:
            return self._approve()
        if action == ONCALL:
            return self._oncall()
        raise ValueError(f"no journey {action!r}")

    async def _propose(self) -> dict[str, Any]:
        you, channel = self.people["you"], self._channel(CARDS)
        history = await self.bot.registry.history(SUBJECT)
        if not history:
            return {"act_as": you, "place": channel, "note": f"`{SUBJECT}` has no version yet: `make run` loads it; run `bot subject import`."}
        schema = json.loads(history[-1].schema_text)
        for field in schema.get("fields", []):
            if field.get("name") == "quantity":
                field["type"] = "string"
        await self.driver.command(f"/schema propose {SUBJECT}", user=you, channel=channel)
        return {"act_as": you, "place": channel, "prefill": {ids.SCHEMA_ACTION: json.dumps(schema, indent=2),
                                                             ids.NOTES_ACTION: "quantity becomes a string: '7' or 'seven'."}}

    def _approve(self) -> dict[str, Any]:
        carol, channel = self.people["carol"], self._channel(CARDS)
        card = self._newest(channel, ids.APPROVE)
        if card is None:
            return {"act_as": carol, "place": channel, "note": "No change waits for carol yet: start with journey 1 (Start as you)."}
        return {"act_as": carol, "place": channel, "focus": card.ts}

    def _oncall(self) -> dict[str, Any]:
        bob, channel = self.people["bob"], self._channel(ALERTS)
        if not self.bot.config.kafka_bootstrap_servers:
            return {"act_as": bob, "place": channel, "note": "Kafka is not running here, so nothing measures the lag: with Java "
                                                             "installed, `make run` starts a broker with the demo's lagging group."}
        alert = self._newest(channel, ids.SLI_BACKFILL, must="Source lag")
        if alert is None:
            return {"act_as": bob, "place": channel, "note": "The lag alert of enrich-orders comes here within a minute of the start, "
                                                             "and pages once the lag has lasted a minute: it appears on its own."}
        return {"act_as": bob, "place": channel, "focus": alert.ts}

    def _channel(self, name: str) -> str:
        found = self.ws.channel_id(name)
        assert found is not None
        return found

    def _newest(self, channel: str, action: str, must: str = "") -> Message | None:
        """The newest top-level message of the bot in ``channel`` with a button ``action`` (and ``must`` in its text)."""
        for message in reversed(self.ws.messages):
            if message.channel == channel and message.thread_ts in (None, message.ts) and message.bot_id and message.user != GUIDE \
                    and must in message.text and any(e.get("action_id") == action for b in message.blocks for e in b.get("elements", [])):
                return message
        return None
