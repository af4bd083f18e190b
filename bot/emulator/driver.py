"""Plays Slack's side of the Events API and interactivity: signed requests to the bot.

Every request carries a real ``X-Slack-Signature``; slash commands and interactions carry a
working ``response_url`` and a fresh ``trigger_id``; the time to acknowledge is measured and a
request that takes longer than Slack's three seconds fails, as it would for a user.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp

from bot.emulator.limits import validate_suggestions
from bot.emulator.server import Emulator, SlackError
from bot.emulator.workspace import (
    APP_ID,
    BOT_USER_ID,
    TEAM_ID,
    Ephemeral,
    Message,
    View,
)

ACK_LIMIT = 3.0


class AckTimeout(AssertionError):
    """The bot did not acknowledge within Slack's three seconds."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """Slack's v0 request signature."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


@dataclass
class Delivery:
    """What the bot answered to one request."""

    status: int
    text: str
    ack_seconds: float
    body: bytes
    headers: dict[str, str]
    payload: dict[str, Any] = field(default_factory=dict)

    @property
    def json(self) -> Any:
        """The acknowledgement body as JSON (None when empty or not JSON)."""
        try:
            return json.loads(self.text) if self.text else None
        except json.JSONDecodeError:
            return None


class SlackDriver:
    """Sends what Slack would send, to one bot's request URL."""

    def __init__(self, emulator: Emulator, request_url: str, signing_secret: str, *, ack_limit: float = ACK_LIMIT,
                 socket_mode: bool = False) -> None:
        self.socket_mode = socket_mode  # deliver over the app's Socket Mode connection instead of its request URL
        self.emulator = emulator
        self.ws = emulator.ws
        self.request_url = request_url
        self.signing_secret = signing_secret
        self.ack_limit = ack_limit
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- what users do --------------------------------------------------------------------------

    async def command(self, text: str, *, user: str, channel: str, retry: Delivery | None = None) -> Delivery:
        """Type a slash command (``/schema help``); ``retry`` re-sends an earlier delivery as Slack's retry."""
        if retry is not None:
            return await self.send(retry.body, "application/x-www-form-urlencoded", retry_num=1, payload=retry.payload)
        channel_id = self.ws.channel_id(channel) or channel
        command, _, rest = text.strip().partition(" ")
        fields = {
            "token": "verification-token-unused", "team_id": TEAM_ID, "team_domain": "changeops-emulator",
            "channel_id": channel_id, "channel_name": self._channel_name(channel_id), "user_id": user,
            "user_name": self._user_name(user), "command": command, "text": rest.strip(), "api_app_id": APP_ID,
            "is_enterprise_install": "false",
            "response_url": self.ws.issue_response_url(self.emulator.base_url, channel_id, user),
            "trigger_id": self.ws.issue_trigger(user),
        }
        if self.socket_mode:
            delivery = await self._over_socket("slash_commands", fields)
        else:
            delivery = await self.send(urlencode(fields).encode(), "application/x-www-form-urlencoded", payload=fields)
        await self._apply_ack(fields["response_url"], delivery)
        return delivery

    async def click(self, message: Message, action_id: str, *, user: str, value: str | None = None, option: str | None = None) -> Delivery:
        """Press the button ``action_id`` of a message the bot posted (or, with ``option``, pick the option of a select
        menu whose value ends with it)."""
        block_id, element = _find_element(message.blocks, action_id)
        picked = None
        if option is not None:
            picked = next((o for o in element.get("options", []) if str(o.get("value", "")).endswith(option)), None)
            if picked is None:
                raise LookupError(f"no option {option!r} in {action_id!r}")
        response_url = self.ws.issue_response_url(self.emulator.base_url, message.channel, user)
        self.ws.response_urls[response_url.rsplit("/", 1)[1]]["source_ts"] = message.ts
        payload = {
            "type": "block_actions", "team": {"id": TEAM_ID, "domain": "changeops-emulator"},
            "user": {"id": user, "username": self._user_name(user), "name": self._user_name(user), "team_id": TEAM_ID},
            "api_app_id": APP_ID, "token": "verification-token-unused", "trigger_id": self.ws.issue_trigger(user),
            "container": {"type": "message", "message_ts": message.ts, "channel_id": message.channel, "is_ephemeral": False},
            "channel": {"id": message.channel, "name": self._channel_name(message.channel)},
            "message": message.as_json(), "state": {"values": {}}, "response_url": response_url,
            "is_enterprise_install": False, "enterprise": None,
            "actions": [{
                "action_id": action_id, "block_id": block_id, "type": element.get("type", "button"),
                "text": element.get("text"), "value": value if value is not None else element.get("value"),
                "action_ts": f"{time.time():.6f}",
            }],
        }
        if picked is not None:
            action = payload["actions"][0]  # type: ignore[index]
            del action["value"], action["text"]
            action["selected_option"] = picked
        return await self._interact(payload)

    async def click_in_view(self, view: View, action_id: str, *, user: str) -> Delivery:
        """Press the button ``action_id`` in a Home tab or an open modal, as Slack sends it (a view container)."""
        block_id, element = _find_element(view.view.get("blocks", []), action_id)
        payload = {
            "type": "block_actions", "team": {"id": TEAM_ID, "domain": "changeops-emulator"},
            "user": {"id": user, "username": self._user_name(user), "name": self._user_name(user), "team_id": TEAM_ID},
            "api_app_id": APP_ID, "token": "verification-token-unused", "trigger_id": self.ws.issue_trigger(user),
            "container": {"type": "view", "view_id": view.id}, "view": self.emulator.view_json(view),
            "is_enterprise_install": False, "enterprise": None,
            "actions": [{"action_id": action_id, "block_id": block_id, "type": element.get("type", "button"),
                         "text": element.get("text"), "value": element.get("value"), "action_ts": f"{time.time():.6f}"}],
        }
        return await self._interact(payload)

    async def suggest(self, view: View, action_id: str, typed: str, *, user: str) -> list[dict[str, Any]]:
        """Type ``typed`` into the external select ``action_id`` of an open modal: the options the app answers Slack's
        ``block_suggestion`` with (SlackError when the answer breaks Slack's limits, as Slack then shows none)."""
        block_id, element = _find_element(view.view.get("blocks", []), action_id)
        if not element.get("type", "").endswith("external_select"):
            raise LookupError(f"{action_id!r} is a {element.get('type')}, which asks the app for nothing")
        if len(typed) < element.get("min_query_length", 3):
            return []  # Slack waits for more before it asks
        payload = {
            "type": "block_suggestion", "team": {"id": TEAM_ID, "domain": "changeops-emulator"},
            "user": {"id": user, "username": self._user_name(user), "name": self._user_name(user), "team_id": TEAM_ID},
            "api_app_id": APP_ID, "token": "verification-token-unused", "container": {"type": "view", "view_id": view.id},
            "action_id": action_id, "block_id": block_id, "value": typed, "view": self.emulator.view_json(view),
            "is_enterprise_install": False, "enterprise": None,
        }
        delivery = await self._interact(payload)
        answer = delivery.json if delivery.status == 200 else None
        problems = validate_suggestions(answer)
        if problems:
            raise SlackError("invalid_options", problems)
        return list(answer["options"])  # type: ignore[index]

    async def submit(self, view_id: str, values: dict[str, dict[str, Any]], *, user: str) -> Delivery:
        """Submit an open modal with ``values`` as ``{block_id: {action_id: {type, value...}}}``."""
        view = self.ws.views[view_id]
        payload = {
            "type": "view_submission", "team": {"id": TEAM_ID, "domain": "changeops-emulator"},
            "user": {"id": user, "username": self._user_name(user), "name": self._user_name(user), "team_id": TEAM_ID},
            "api_app_id": APP_ID, "token": "verification-token-unused", "trigger_id": self.ws.issue_trigger(user),
            "view": {**self.emulator.view_json(view), "state": {"values": values}},
            "response_urls": [], "is_enterprise_install": False, "enterprise": None,
        }
        delivery = await self._interact(payload)
        self._apply_view_response(view, delivery)
        return delivery

    async def event(self, event: dict[str, Any], *, event_id: str | None = None, retry: Delivery | None = None) -> Delivery:
        """Deliver an Events API event (``app_home_opened``...) in its envelope."""
        if retry is not None:
            return await self.send(retry.body, "application/json", retry_num=1, payload=retry.payload)
        envelope = {
            "token": "verification-token-unused", "team_id": TEAM_ID, "api_app_id": APP_ID, "event": event,
            "type": "event_callback", "event_id": event_id or self.ws.new_id("Ev"), "event_time": int(self.ws.clock()),
            "authorizations": [{"enterprise_id": None, "team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True,
                                "is_enterprise_install": False}],
            "is_ext_shared_channel": False,
        }
        if self.socket_mode:
            return await self._over_socket("events_api", envelope)
        return await self.send(json.dumps(envelope).encode(), "application/json", payload=envelope)

    # --- the wire -------------------------------------------------------------------------------

    async def send(self, body: bytes, content_type: str, *, retry_num: int = 0, timestamp: int | None = None,
                   signature: str | None = None, signed: bool = True, payload: dict[str, Any] | None = None) -> Delivery:
        """POST ``body`` to the bot as Slack does; override the timestamp or signature to test rejection."""
        ts = str(timestamp if timestamp is not None else int(time.time()))
        headers = {"Content-Type": content_type}
        if signed:
            headers["X-Slack-Request-Timestamp"] = ts
            headers["X-Slack-Signature"] = signature or sign(self.signing_secret, ts, body)
        if retry_num:
            headers["X-Slack-Retry-Num"] = str(retry_num)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        if self._session is None:
            self._session = aiohttp.ClientSession()
        started = time.perf_counter()
        async with self._session.post(self.request_url, data=body, headers=headers) as response:
            text = await response.text()
            elapsed = time.perf_counter() - started
            delivery = Delivery(response.status, text, elapsed, body, dict(response.headers), payload or {})
        if elapsed > self.ack_limit:
            raise AckTimeout(f"the bot took {elapsed:.2f} s to acknowledge; Slack gives up after {self.ack_limit:.0f} s")
        return delivery

    async def _over_socket(self, kind: str, payload: dict[str, Any]) -> Delivery:
        """Deliver as Slack does in Socket Mode: an envelope on the app's WebSocket, acknowledged by envelope_id."""
        started = time.perf_counter()
        try:
            answer = await self.emulator.socket_deliver(kind, payload, timeout=self.ack_limit + 1)
        except TimeoutError:
            answer, elapsed = None, self.ack_limit + 1
        else:
            elapsed = time.perf_counter() - started
        if elapsed > self.ack_limit:
            raise AckTimeout(f"the bot took {elapsed:.2f} s to acknowledge envelope {kind}; Slack gives up after {self.ack_limit:.0f} s")
        return Delivery(200, json.dumps(answer) if answer else "", elapsed, b"", {}, payload)

    async def _interact(self, payload: dict[str, Any]) -> Delivery:
        if self.socket_mode:
            return await self._over_socket("interactive", payload)
        body = urlencode({"payload": json.dumps(payload)}).encode()
        return await self.send(body, "application/x-www-form-urlencoded", payload=payload)

    async def _apply_ack(self, response_url: str, delivery: Delivery) -> None:
        """A slash command's acknowledgement body is shown to the user like a response_url post."""
        if delivery.status != 200 or not delivery.text:
            return
        content = delivery.json if isinstance(delivery.json, dict) else {"text": delivery.text}
        hook = self.ws.response_urls[response_url.rsplit("/", 1)[1]]
        try:
            self.emulator.respond(hook, content)
        except SlackError as err:
            self.ws.ephemerals.append(_failure_notice(hook, err))
        await self.ws.changed()

    def _apply_view_response(self, view: View, delivery: Delivery) -> None:
        answer: dict[str, Any] = delivery.json if delivery.status == 200 and isinstance(delivery.json, dict) else {}
        action = answer.get("response_action")
        if action == "errors":
            view.errors = dict(answer.get("errors", {}))
        elif action == "update":
            view.view, view.errors = dict(answer["view"]), {}
        elif action == "clear":
            for other in self.ws.views.values():
                if other.user == view.user:
                    other.open = False
        elif action == "push":
            pushed = self.emulator.new_view(view.user, answer["view"], "modal")
            pushed.root_view_id = view.root_view_id
        elif delivery.status == 200:
            view.open = False

    def _user_name(self, user: str) -> str:
        return str(self.ws.users.get(user, {}).get("name", user))

    def _channel_name(self, channel: str) -> str:
        found = self.ws.channels.get(channel)
        return "directmessage" if found is None or found.is_im else found.name


def _find_element(blocks: list[dict[str, Any]], action_id: str) -> tuple[str | None, dict[str, Any]]:
    for block in blocks:
        for element in block.get("elements", []) + [block[k] for k in ("accessory", "element") if k in block]:
            if isinstance(element, dict) and element.get("action_id") == action_id:
                return block.get("block_id"), element
    raise LookupError(f"no element with action_id {action_id!r} in the message")


def _failure_notice(hook: dict[str, Any], err: SlackError) -> Ephemeral:
    return Ephemeral(hook["channel"], hook["user"], "0", f"(Slack could not show the reply: {err.error})", [])
