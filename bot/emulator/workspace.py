"""The emulated workspace: users, user groups, channels, messages, ephemerals, views, triggers."""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TEAM_ID = "T0CHANGEOPS"
BOT_USER_ID = "UCHANGEOPS"
BOT_ID = "BCHANGEOPS"
APP_ID = "ACHANGEOPS"
TRIGGER_TTL = 3.0
RESPONSE_URL_USES = 5
RESPONSE_URL_TTL = 30 * 60


@dataclass
class Message:
    """A message in a channel (or a thread reply when ``thread_ts`` is set)."""

    channel: str
    ts: str
    user: str
    text: str = ""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    thread_ts: str | None = None
    bot_id: str | None = None
    edited: bool = False
    files: list[dict[str, Any]] = field(default_factory=list)  # files shared with it (files.completeUploadExternal)

    def as_json(self) -> dict[str, Any]:
        """The message as the Web API shows it."""
        data: dict[str, Any] = {"type": "message", "ts": self.ts, "user": self.user, "text": self.text, "blocks": self.blocks}
        if self.files:
            data["files"] = self.files
        if self.bot_id:
            data["bot_id"] = self.bot_id
        if self.thread_ts:
            data["thread_ts"] = self.thread_ts
        if self.edited:
            data["edited"] = {"user": self.user, "ts": self.ts}
        return data


@dataclass
class Ephemeral:
    """An ephemeral message only ``user`` sees."""

    channel: str
    user: str
    ts: str
    text: str = ""
    blocks: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Channel:
    """A public or private channel, or a direct-message channel with one user."""

    id: str
    name: str
    members: set[str] = field(default_factory=set)
    is_im: bool = False
    is_private: bool = False  # the bot sees it only as a member (chat:write.public does not reach it)
    is_archived: bool = False


@dataclass
class View:
    """An open modal, or a user's published Home tab."""

    id: str
    user: str
    view: dict[str, Any]
    hash: str
    root_view_id: str | None = None
    open: bool = True
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class Call:
    """One Web API call the emulator received."""

    method: str
    args: dict[str, Any]
    ok: bool
    error: str | None = None
    status: int = 200


class Workspace:
    """State of the emulated Slack workspace; every change wakes those who wait on it."""

    def __init__(self, token: str, clock: Callable[[], float] = time.time) -> None:
        self.token = token
        self.app_token = f"xapp-1-{APP_ID}-{secrets.token_hex(8)}"  # the app-level token Socket Mode connects with
        self.socket_sessions = 0  # Socket Mode connections opened so far
        self.clock = clock
        self.users: dict[str, dict[str, Any]] = {}
        self.usergroups: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, Channel] = {}
        self.messages: list[Message] = []
        self.ephemerals: list[Ephemeral] = []
        self.views: dict[str, View] = {}
        self.home: dict[str, View] = {}
        self.calls: list[Call] = []
        self.triggers: dict[str, tuple[float, str, bool]] = {}
        self.response_urls: dict[str, dict[str, Any]] = {}
        self.rate_limits: dict[str, list[int]] = {}
        self.post_limit: tuple[float, int] | None = None  # (messages per second, burst) per channel for chat.postMessage, when set
        self.post_buckets: dict[str, tuple[float, float]] = {}  # channel -> (tokens, at)
        self.outage: int | None = None  # every Web API call answers this HTTP status (500, 503, 429) while set
        self.failing: dict[str, int] = {}  # calls to these methods answer this HTTP status while set
        self.holds: dict[str, asyncio.Event] = {}
        self.held: list[str] = []  # calls waiting at a hold, by method
        self.files: dict[str, tuple[str, bytes]] = {}
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._changed = asyncio.Condition()
        self.revision = 0  # counts changes: a watcher compares it with the one it saw last
        self.add_user(BOT_USER_ID, "changeops", is_bot=True)

    # --- set-up ---------------------------------------------------------------------------------

    def add_user(self, user_id: str, name: str, *, is_admin: bool = False, is_bot: bool = False, tz: str = "UTC") -> None:
        """Create or replace a user."""
        self.users[user_id] = {
            "id": user_id, "team_id": TEAM_ID, "name": name, "real_name": name.title(), "is_admin": is_admin,
            "is_bot": is_bot, "deleted": False, "tz": tz, "profile": {"display_name": name, "real_name": name.title()},
        }

    def add_channel(self, name: str, members: list[str] | None = None, *, private: bool = False, bot: bool = True) -> str:
        """Create a channel (public unless ``private``; the bot a member unless not ``bot``); returns its id."""
        channel_id = f"C{next(self._ids):08d}"
        self.channels[channel_id] = Channel(channel_id, name, set(members or []) | ({BOT_USER_ID} if bot else set()), is_private=private)
        return channel_id

    def add_usergroup(self, handle: str, users: list[str], group_id: str | None = None) -> str:
        """Create a user group (subteam); returns its id."""
        group_id = group_id or f"S{next(self._ids):08d}"
        self.usergroups[group_id] = {"id": group_id, "team_id": TEAM_ID, "handle": handle, "name": handle, "users": list(users)}
        return group_id

    def rate_limit(self, method: str, *, times: int = 1, retry_after: int = 1) -> None:
        """Answer the next ``times`` calls to ``method`` with HTTP 429 and ``Retry-After``."""
        self.rate_limits.setdefault(method, []).extend([retry_after] * times)

    def limit_posting(self, per_second: float = 1.0, burst: int = 3) -> None:
        """Enforce Slack's posting limit: about ``per_second`` messages per channel (short bursts allowed); 429 beyond."""
        self.post_limit = (per_second, burst)

    def take_post(self, channel: str) -> float | None:
        """Spend one post of ``channel``'s allowance; None when allowed, else seconds until the next is."""
        if self.post_limit is None:
            return None
        rate, burst = self.post_limit
        now = self.clock()
        tokens, at = self.post_buckets.get(channel, (float(burst), now))
        tokens = min(float(burst), tokens + (now - at) * rate)
        if tokens < 1.0:
            self.post_buckets[channel] = (tokens, now)
            return (1.0 - tokens) / rate
        self.post_buckets[channel] = (tokens - 1.0, now)
        return None

    def hold(self, method: str) -> None:
        """Make calls to ``method`` wait (as a slow Slack would) until ``release``."""
        self.holds[method] = asyncio.Event()

    def release(self, method: str) -> None:
        """Let the calls waiting at ``method``'s hold through."""
        self.holds.pop(method).set()

    # --- lookups --------------------------------------------------------------------------------

    def channel_id(self, ref: str) -> str | None:
        """Resolve a channel id, ``#name``/``name``, or a user id (the bot's DM with that user)."""
        if ref in self.channels:
            return ref
        name = ref.lstrip("#")
        for channel in self.channels.values():
            if channel.name == name and not channel.is_im:
                return channel.id
        if ref in self.users:
            return self.open_dm(ref)
        return None

    def open_dm(self, user: str) -> str:
        """The id of the bot's direct-message channel with ``user``."""
        for channel in self.channels.values():
            if channel.is_im and user in channel.members:
                return channel.id
        channel_id = f"D{next(self._ids):08d}"
        self.channels[channel_id] = Channel(channel_id, user, {user, BOT_USER_ID}, is_im=True)
        return channel_id

    def find_message(self, channel: str, ts: str) -> Message | None:
        """The message at ``ts`` in ``channel``."""
        return next((m for m in self.messages if m.channel == channel and m.ts == ts), None)

    def channel_messages(self, channel: str, *, thread_ts: str | None = None) -> list[Message]:
        """Top-level messages of a channel, or the replies of one thread."""
        channel_id = self.channel_id(channel) or channel
        if thread_ts is None:
            return [m for m in self.messages if m.channel == channel_id and m.thread_ts in (None, m.ts)]
        return [m for m in self.messages if m.channel == channel_id and m.thread_ts == thread_ts and m.ts != thread_ts]

    def ephemerals_for(self, user: str, channel: str | None = None) -> list[Ephemeral]:
        """Ephemeral messages shown to ``user`` (in ``channel`` if given)."""
        return [e for e in self.ephemerals if e.user == user and (channel is None or e.channel == channel)]

    def calls_to(self, method: str) -> list[Call]:
        """Every call to one Web API method, in order."""
        return [c for c in self.calls if c.method == method]

    # --- changes --------------------------------------------------------------------------------

    def next_ts(self) -> str:
        """A fresh, increasing message timestamp."""
        return f"{int(self.clock())}.{next(self._ts):06d}"

    def new_id(self, prefix: str) -> str:
        """A fresh identifier with a Slack-like prefix."""
        return f"{prefix}{next(self._ids):08d}"

    def issue_trigger(self, user: str) -> str:
        """A trigger_id valid for three seconds, usable once."""
        trigger = f"{next(self._ids)}.{secrets.token_hex(8)}"
        self.triggers[trigger] = (self.clock(), user, False)
        return trigger

    def use_trigger(self, trigger: str) -> tuple[str | None, str | None]:
        """Exchange a trigger for its user; returns (user, error)."""
        entry = self.triggers.get(trigger)
        if entry is None:
            return None, "invalid_trigger_id"
        issued, user, used = entry
        if used:
            return None, "exchanged_trigger_id"
        if self.clock() - issued > TRIGGER_TTL:
            return None, "expired_trigger_id"
        self.triggers[trigger] = (issued, user, True)
        return user, None

    def upload(self, base: str, user: str, name: str, content: bytes) -> dict[str, Any]:
        """Store a file a user uploaded; the file object Slack puts in a file_input's value."""
        file_id = self.new_id("F")
        self.files[file_id] = (name, content)
        return {"id": file_id, "name": name, "title": name, "user": user, "size": len(content), "filetype": name.rpartition(".")[2],
                "url_private": f"{base}/_files/{file_id}/{name}", "url_private_download": f"{base}/_files/{file_id}/download/{name}"}

    def issue_response_url(self, base: str, channel: str, user: str) -> str:
        """A response_url for one interaction: five uses within thirty minutes."""
        key = secrets.token_hex(12)
        self.response_urls[key] = {"channel": channel, "user": user, "uses": 0, "issued": self.clock(), "source_ts": None}
        return f"{base}/_responses/{key}"

    async def changed(self) -> None:
        """Wake every waiter; call after any change of state."""
        self.revision += 1
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 20.0) -> Any:
        """Wait until ``predicate()`` is truthy and return it; AssertionError on timeout."""
        async def _wait() -> Any:
            async with self._changed:
                while not (result := predicate()):
                    await self._changed.wait()
                return result

        try:
            return await asyncio.wait_for(_wait(), timeout)
        except TimeoutError:
            raise AssertionError(f"the emulator did not see the expected state within {timeout} s") from None
