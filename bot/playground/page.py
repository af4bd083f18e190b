"""The playground's web page: the emulated workspace in a browser, as one of the demo people sees it.

Plain HTML, CSS and JavaScript (``static/``) served by aiohttp next to the emulator; the page reads the
workspace as one person sees it (``/playground/state``), hears of every change by server-sent events
(``/playground/events``), and acts through the emulator's driver: signed slash commands, clicks and
form submissions sent to the real bot, exactly as Slack would send them.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from bot.emulator import Emulator, SlackDriver
from bot.emulator.server import SlackError
from bot.emulator.workspace import BOT_USER_ID, Message
from bot.playground.journeys import GUIDE, Journeys

STATIC = Path(__file__).with_name("static")
FILES = {"index.html": "text/html", "app.js": "text/javascript", "blocks.js": "text/javascript",
         "mrkdwn.js": "text/javascript", "style.css": "text/css"}
PING_SECONDS = 15.0
MAX_UPLOAD = 1_000_000
log = logging.getLogger("bot.playground")  # what people do in the page: the terminal's running story


class PlaygroundPage:
    """The routes of the page, for one workspace and the driver that plays Slack to the bot."""

    def __init__(self, emulator: Emulator, people: list[dict[str, str]], kafka_note: str) -> None:
        self.emulator, self.ws = emulator, emulator.ws
        self.driver: SlackDriver | None = None  # set once the bot listens
        self.journeys: Journeys | None = None  # the welcome's buttons, once the bot listens
        self.people = people
        self.kafka_note = kafka_note

    def add_routes(self, app: web.Application) -> None:
        """Serve the page on ``/`` of ``app`` (the emulator's)."""
        app.router.add_get("/", self.index)
        app.router.add_get("/playground/static/{name}", self.static)
        app.router.add_get("/playground/state", self.state)
        app.router.add_get("/playground/events", self.events)
        for path, handler in (("command", self.command), ("click", self.click), ("view-click", self.view_click),
                              ("suggest", self.suggest), ("submit", self.submit), ("close", self.close), ("home", self.home),
                              ("upload", self.upload)):
            app.router.add_post(f"/playground/{path}", handler)

    # --- reading --------------------------------------------------------------------------------

    async def index(self, _request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "index.html", headers={"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"})

    async def static(self, request: web.Request) -> web.FileResponse:
        name = request.match_info["name"]
        if name not in FILES:
            raise web.HTTPNotFound()
        return web.FileResponse(STATIC / name, headers={"Content-Type": f"{FILES[name]}; charset=utf-8", "Cache-Control": "no-store"})

    async def state(self, request: web.Request) -> web.Response:
        user = request.query.get("user") or self.people[0]["id"]
        if user not in self.ws.users:
            return _error(f"unknown person {user!r}", 404)
        return web.json_response(self.snapshot(user), dumps=_dumps)

    def snapshot(self, user: str) -> dict[str, Any]:
        """The workspace as ``user`` sees it: channels with their messages and threads, their ephemerals, their
        Home tab and the modal open in front of them."""
        ws = self.ws
        threads: dict[tuple[str, str], list[Message]] = {}  # every thread's replies, in one pass over the messages
        for reply in ws.messages:
            if reply.thread_ts is not None and reply.thread_ts != reply.ts:
                threads.setdefault((reply.channel, reply.thread_ts), []).append(reply)
        channels = []
        for channel in ws.channels.values():
            if user not in channel.members or (channel.is_im and BOT_USER_ID not in channel.members):
                continue
            top = [m for m in ws.messages if m.channel == channel.id and m.thread_ts in (None, m.ts)]
            shown = [self._message(m, threads.get((m.channel, m.ts), [])) for m in top]
            shown += [{"channel": e.channel, "ts": e.ts, "user": BOT_USER_ID, "text": e.text, "blocks": e.blocks, "bot": True,
                       "ephemeral": True, "time": _time(e.ts)} for e in ws.ephemerals if e.user == user and e.channel == channel.id]
            shown.sort(key=lambda m: _order(m["ts"]))
            channels.append({"id": channel.id, "name": channel.name, "is_im": channel.is_im, "messages": shown})
        channels.sort(key=lambda c: (c["is_im"], c["name"]))
        modals = [v for v in ws.views.values() if v.user == user and v.open and v.view.get("type") == "modal"]
        home = ws.home.get(user)
        return {
            "people": self.people,
            "names": {"users": {u: str(d.get("name", u)) for u, d in ws.users.items()},
                      "channels": {c.id: (c.name if not c.is_im else "direct message") for c in ws.channels.values()},
                      "groups": {g: str(d.get("handle", g)) for g, d in ws.usergroups.items()}},
            "channels": channels,
            "modal": {"id": modals[-1].id, "hash": modals[-1].hash, "view": modals[-1].view, "errors": modals[-1].errors} if modals else None,
            "home": {"id": home.id, "blocks": home.view.get("blocks", [])} if home is not None else None,
            "kafka": self.kafka_note,
        }

    def _message(self, message: Message, replies: list[Message]) -> dict[str, Any]:
        return {**message.as_json(), "channel": message.channel, "bot": message.user == BOT_USER_ID or bool(message.bot_id),
                "time": _time(message.ts), "replies": len(replies),
                "thread": [{**r.as_json(), "channel": r.channel, "bot": r.user == BOT_USER_ID, "time": _time(r.ts)} for r in replies],
                "files": [{"name": f.get("name", ""), "url": self._file_url(f)} for f in message.files]}

    def _file_url(self, file: dict[str, Any]) -> str:
        url = str(file.get("url_private", ""))
        return url.removeprefix(self.emulator.base_url)

    async def events(self, request: web.Request) -> web.StreamResponse:
        """``data: changed`` whenever the workspace changes (and a comment every 15 s to keep the stream open)."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        await response.prepare(request)
        try:
            await response.write(b"data: hello\n\n")
            while True:
                seen = self.ws.revision
                try:
                    await self.ws.wait_for(functools.partial(self._moved, seen), timeout=PING_SECONDS)
                except AssertionError:  # nothing changed for a while
                    await response.write(b": still here\n\n")
                    continue
                await response.write(b"data: changed\n\n")
        except ConnectionResetError:  # the page was closed
            return response

    def _moved(self, seen: int) -> bool:
        return self.ws.revision != seen

    # --- acting ---------------------------------------------------------------------------------

    async def command(self, request: web.Request) -> web.Response:
        body = await _body(request)
        user, text, channel = self._user(body), str(body.get("text", "")).strip(), str(body.get("channel", ""))
        if channel not in self.ws.channels or user not in self.ws.channels[channel].members:
            return _error("pick a channel you are in")
        if not text.startswith("/"):
            return _error("type a slash command, such as /schema help")
        self._told(user, f"ran `{text}` in {self._where(channel)}")
        delivery = await self._driver().command(text, user=user, channel=channel)
        return _answer(delivery.status)

    async def click(self, request: web.Request) -> web.Response:
        body = await _body(request)
        user, channel, ts = self._user(body), str(body.get("channel", "")), str(body.get("ts", ""))
        if body.get("ephemeral"):
            shown = next((e for e in self.ws.ephemerals if e.user == user and e.channel == channel and e.ts == ts), None)
            message = Message(channel, ts, BOT_USER_ID, shown.text, shown.blocks, bot_id="B") if shown is not None else None
        else:
            message = self.ws.find_message(channel, ts)
        if message is None:
            return _error("that message is gone", 404)
        action = str(body.get("action_id", ""))
        self._told(user, f"clicked {_label(message.blocks, action)} in {self._where(channel)}")
        if message.user == GUIDE:  # the playground's welcome: a journey starts, the bot is not clicked
            if self.journeys is None:
                return _error("the bot is still starting", 503)
            try:
                return web.json_response({"journey": await self.journeys.start(action)})
            except ValueError as err:
                return _error(str(err))
        try:
            delivery = await self._driver().click(message, action, user=user, option=_optional(body.get("option")))
        except LookupError as err:
            return _error(str(err))
        return _answer(delivery.status)

    async def view_click(self, request: web.Request) -> web.Response:
        body = await _body(request)
        user = self._user(body)
        view = self._view(str(body.get("view_id", "")), user)
        if view is None:
            return _error("that view is closed", 404)
        action = str(body.get("action_id", ""))
        self._told(user, f"clicked {_label(view.view.get('blocks') or [], action)} in {_title(view.view)}")
        try:
            delivery = await self._driver().click_in_view(view, action, user=user)
        except LookupError as err:
            return _error(str(err))
        return _answer(delivery.status)

    async def suggest(self, request: web.Request) -> web.Response:
        """What the app offers for the text typed into an external select of an open form."""
        body, user, view = await self._form(request)
        if view is None:
            return _error("that form is closed", 404)
        try:
            options = await self._driver().suggest(view, str(body.get("action_id", "")), str(body.get("value") or ""), user=user)
        except LookupError as err:
            return _error(str(err))
        except SlackError as err:
            return _error(f"Slack would show no options: {err.error} {' '.join(err.messages)}")
        return web.json_response({"ok": True, "options": options})

    async def submit(self, request: web.Request) -> web.Response:
        body, user, view = await self._form(request)
        if view is None:
            return _error("that form is closed", 404)
        values = body.get("values")
        if not isinstance(values, dict):
            return _error("values: expected {block_id: {action_id: value}}")
        self._told(user, f"submitted {_title(view.view)}")
        delivery = await self._driver().submit(view.id, values, user=user)
        await self.ws.changed()
        return _answer(delivery.status)

    async def close(self, request: web.Request) -> web.Response:
        body = await _body(request)
        view = self._view(str(body.get("view_id", "")), self._user(body))
        if view is not None:
            for other in self.ws.views.values():  # closing a pushed view closes the stack
                if other.user == view.user and (other.id == view.id or other.root_view_id == (view.root_view_id or view.id)):
                    other.open = False
            await self.ws.changed()
        return web.json_response({"ok": True})

    async def home(self, request: web.Request) -> web.Response:
        body = await _body(request)
        user = self._user(body)
        delivery = await self._driver().event({"type": "app_home_opened", "user": user, "channel": self.ws.open_dm(user), "tab": "home",
                                            "event_ts": f"{datetime.now(UTC).timestamp():.6f}"})
        return _answer(delivery.status)

    async def upload(self, request: web.Request) -> web.Response:
        body = await _body(request)
        name = str(body.get("name", "")).strip()[:200] or "file"
        try:
            content = base64.b64decode(str(body.get("content", "")), validate=True)
        except binascii.Error:
            return _error("content: expected base64")
        if len(content) > MAX_UPLOAD:
            return _error("files in the playground are at most 1 MB")
        return web.json_response({"file": self.ws.upload(self.emulator.base_url, self._user(body), name, content)})

    def _told(self, user: str, what: str) -> None:
        log.info("%s %s", self.ws.users[user]["name"], what.replace("\n", " ")[:300])

    def _where(self, channel: str) -> str:
        known = self.ws.channels.get(channel)
        if known is None or known.is_im:
            return "a DM"
        return f"#{known.name}"

    def _driver(self) -> SlackDriver:
        if self.driver is None:
            raise web.HTTPServiceUnavailable(text=json.dumps({"error": "the bot is still starting"}), content_type="application/json")
        return self.driver

    def _user(self, body: dict[str, Any]) -> str:
        user = str(body.get("user", ""))
        if user not in self.ws.users:
            raise web.HTTPBadRequest(text=json.dumps({"error": f"unknown person {user!r}"}), content_type="application/json")
        return user

    async def _form(self, request: web.Request) -> tuple[dict[str, Any], str, Any]:
        """The request's body, its person, and the form it names when that form is open in front of them (else None)."""
        body = await _body(request)
        user = self._user(body)
        view = self._view(str(body.get("view_id", "")), user)
        return body, user, view if view is not None and view.open else None

    def _view(self, view_id: str, user: str) -> Any:
        view = self.ws.views.get(view_id) or next((v for v in self.ws.home.values() if v.id == view_id), None)
        return view if view is not None and view.user == user else None


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise web.HTTPBadRequest(text=json.dumps({"error": "expected a JSON object"}), content_type="application/json") from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text=json.dumps({"error": "expected a JSON object"}), content_type="application/json")
    return body


def _answer(status: int) -> web.Response:
    if status != 200:
        return _error(f"the bot answered HTTP {status}", 502)
    return web.json_response({"ok": True})


def _error(message: str, status: int = 400) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _label(blocks: list[dict[str, Any]], action_id: str) -> str:
    """The text of the element ``action_id`` names (a button's label), else the id itself."""
    for block in blocks:
        for element in [*block.get("elements", []), *([block["accessory"]] if "accessory" in block else [])]:
            if element.get("action_id") == action_id:
                text = element.get("text") or element.get("placeholder") or {}
                return f"“{text.get('text', action_id)}”"
    return f"“{action_id}”"


def _title(view: dict[str, Any]) -> str:
    return f"the form “{(view.get('title') or {}).get('text', 'untitled')}”"


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


def _order(ts: str) -> tuple[int, int]:
    whole, _, seq = ts.partition(".")
    return (int(whole or 0), int(seq or 0)) if whole.isdigit() and (seq or "0").isdigit() else (0, 0)


def _time(ts: str) -> str:
    seconds = _order(ts)[0]
    return datetime.fromtimestamp(seconds, UTC).strftime("%H:%M UTC") if seconds else ""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)

