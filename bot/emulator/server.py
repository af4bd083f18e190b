"""The Slack Web API, emulated over real HTTP, and Slack's Socket Mode over a real WebSocket.

Serves ``/api/<method>`` with Slack's argument handling (JSON bodies, form bodies with JSON-encoded
fields, query strings), bearer-token checks, Slack's error names, and 429 with ``Retry-After`` on
demand. ``/_responses/<key>`` serves the response_urls that the driver hands out. Socket Mode:
``apps.connections.open`` (app-level token only) hands out a one-time ``ws://.../_socket?ticket=...``
URL; the socket says ``hello``, carries envelopes (``slash_commands``, ``interactive``, ``events_api``)
that the app must acknowledge by ``envelope_id``, and ``disconnect`` messages after which the app
opens a new connection.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from bot.emulator.limits import MESSAGE_TEXT_MAX, validate_blocks, validate_view
from bot.emulator.workspace import (
    APP_ID,
    BOT_ID,
    BOT_USER_ID,
    RESPONSE_URL_TTL,
    RESPONSE_URL_USES,
    TEAM_ID,
    Call,
    Ephemeral,
    Message,
    View,
    Workspace,
)

Args = dict[str, Any]
JSON_FIELDS = ("blocks", "attachments", "view", "metadata")


class SlackError(Exception):
    """A Web API error: ``ok: false`` with Slack's error name."""

    def __init__(self, error: str, messages: list[str] | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.messages = messages or []


class Emulator:
    """An aiohttp application that answers like slack.com/api."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self.base_url = ""
        self.pending_uploads: dict[str, tuple[str, int]] = {}  # files.getUploadURLExternal handed out, bytes not yet posted
        self.api_connections: set[Any] = set()  # the client ends (host, port) that Web API calls came over
        self.response_connections: set[Any] = set()  # and those that response_url posts came over
        self.sockets: list[web.WebSocketResponse] = []
        self._tickets: set[str] = set()
        self._acks: dict[str, asyncio.Future[Any]] = {}
        self.methods: dict[str, Callable[[Args], Awaitable[Args]]] = {
            "api.test": self.api_test,
            "apps.connections.open": self.apps_connections_open,
            "auth.test": self.auth_test,
            "chat.postMessage": self.chat_post_message,
            "chat.update": self.chat_update,
            "chat.delete": self.chat_delete,
            "chat.postEphemeral": self.chat_post_ephemeral,
            "chat.getPermalink": self.chat_get_permalink,
            "files.getUploadURLExternal": self.files_get_upload_url_external,
            "files.completeUploadExternal": self.files_complete_upload_external,
            "conversations.open": self.conversations_open,
            "conversations.info": self.conversations_info,
            "users.info": self.users_info,
            "usergroups.list": self.usergroups_list,
            "usergroups.users.list": self.usergroups_users_list,
            "views.open": self.views_open,
            "views.push": self.views_push,
            "views.update": self.views_update,
            "views.publish": self.views_publish,
        }

    def application(self) -> web.Application:
        """The aiohttp application to serve."""
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/_responses/{key}", self._response_url)
        app.router.add_get("/_files/{id}/{rest:.*}", self._file)
        app.router.add_post("/_uploads/{id}", self._upload)
        app.router.add_get("/_socket", self._socket)
        return app

    # --- Socket Mode ----------------------------------------------------------------------------

    async def apps_connections_open(self, args: Args) -> Args:
        ticket = secrets.token_hex(12)
        self._tickets.add(ticket)
        return {"url": f"{self.base_url.replace('http://', 'ws://')}/_socket?ticket={ticket}&app_id={APP_ID}"}

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            return web.Response(status=401, text="invalid or used ticket")
        self._tickets.discard(ticket)
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self.sockets.append(socket)
        self.ws.socket_sessions += 1
        await socket.send_json({"type": "hello", "num_connections": len(self.sockets), "debug_info": {"host": "changeops-emulator"},
                                "connection_info": {"app_id": APP_ID}})
        await self.ws.changed()
        try:
            async for message in socket:
                if message.type != web.WSMsgType.TEXT:
                    continue
                data = json.loads(message.data)
                waiter = self._acks.pop(str(data.get("envelope_id")), None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(data.get("payload"))
        finally:
            if socket in self.sockets:
                self.sockets.remove(socket)
            await self.ws.changed()
        return socket

    async def socket_deliver(self, kind: str, payload: dict[str, Any], timeout: float) -> Any:
        """Send one envelope over the newest open connection; the payload of the app's acknowledgement."""
        open_sockets = [s for s in self.sockets if not s.closed]
        if not open_sockets:
            raise SlackError("no_socket_mode_connection")
        envelope_id = secrets.token_hex(8)
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._acks[envelope_id] = waiter
        await open_sockets[-1].send_json({"envelope_id": envelope_id, "type": kind, "payload": payload, "retry_attempt": 0,
                                          "retry_reason": "", "accepts_response_payload": kind != "events_api"})
        try:
            return await asyncio.wait_for(waiter, timeout)
        finally:
            self._acks.pop(envelope_id, None)

    async def socket_disconnect(self, reason: str = "refresh_requested") -> None:
        """Ask every connected app to reconnect, as Slack does every few hours."""
        for socket in list(self.sockets):
            await socket.send_json({"type": "disconnect", "reason": reason, "debug_info": {"host": "changeops-emulator"}})

    async def _file(self, request: web.Request) -> web.Response:
        """A file's bytes, for a client that shows the bot token (as files.slack.com wants)."""
        if request.headers.get("Authorization", "") != f"Bearer {self.ws.token}":
            return web.Response(status=403, text="invalid_auth")
        stored = self.ws.files.get(request.match_info["id"])
        if stored is None:
            return web.Response(status=404, text="file_not_found")
        return web.Response(body=stored[1], content_type="application/octet-stream")

    async def _upload(self, request: web.Request) -> web.Response:
        """Step 2 of files.uploadV2: the bytes, posted to the URL step 1 handed out (no token: the URL is the secret)."""
        file_id = request.match_info["id"]
        if file_id not in self.pending_uploads:
            return web.Response(status=404, text="upload_not_found")
        name, length = self.pending_uploads[file_id]
        body = await request.read()
        if len(body) != length:
            return web.Response(status=400, text=f"expected {length} bytes, got {len(body)}")
        self.ws.files[file_id] = (name, body)
        return web.Response(text=f"OK - {len(body)}")

    # --- plumbing -------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.transport is not None:
            self.api_connections.add(request.transport.get_extra_info("peername"))
        args = await _arguments(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip() or args.pop("token", "")
        args.pop("token", None)
        gate = self.ws.holds.get(method)
        if gate is not None:
            self.ws.held.append(method)
            await self.ws.changed()
            await gate.wait()
            self.ws.held.remove(method)
        if self.ws.outage or method in self.ws.failing:
            status = self.ws.outage or self.ws.failing[method]
            error = "ratelimited" if status == 429 else "internal_error"
            self.ws.calls.append(Call(method, args, False, error, status))
            headers = {"Retry-After": "1"} if status == 429 else None
            await self.ws.changed()
            return web.json_response({"ok": False, "error": error}, status=status, headers=headers)
        pending = self.ws.rate_limits.get(method)
        if pending:
            retry_after = pending.pop(0)
            self.ws.calls.append(Call(method, args, False, "ratelimited", 429))
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": str(retry_after)})
        if method == "chat.postMessage" and self.ws.post_limit is not None:
            channel = str(args.get("channel", ""))
            wait = self.ws.take_post(self.ws.channel_id(channel) or channel)
            if wait is not None:
                self.ws.calls.append(Call(method, args, False, "ratelimited", 429))
                await self.ws.changed()
                return web.json_response({"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": str(max(1, round(wait)))})
        handler = self.methods.get(method)
        try:
            if not token:
                raise SlackError("not_authed")
            if method == "apps.connections.open":
                if token != self.ws.app_token:
                    raise SlackError("not_allowed_token_type" if token == self.ws.token else "invalid_auth")
            elif token != self.ws.token:
                raise SlackError("not_allowed_token_type" if token == self.ws.app_token else "invalid_auth")
            if handler is None:
                raise SlackError("unknown_method")
            if args.pop("_invalid_json", False):
                raise SlackError("invalid_json")
            body = {"ok": True, **await handler(args)}
            self.ws.calls.append(Call(method, args, True))
        except SlackError as err:
            body = {"ok": False, "error": err.error}
            if err.messages:
                body["response_metadata"] = {"messages": err.messages}
            self.ws.calls.append(Call(method, args, False, err.error))
        await self.ws.changed()
        return web.json_response(body)

    async def _response_url(self, request: web.Request) -> web.Response:
        if request.transport is not None:
            self.response_connections.add(request.transport.get_extra_info("peername"))
        hook = self.ws.response_urls.get(request.match_info["key"])
        if hook is None or self.ws.clock() - hook["issued"] > RESPONSE_URL_TTL:
            return web.json_response({"ok": False, "error": "expired_url"}, status=404)
        if hook["uses"] >= RESPONSE_URL_USES:
            return web.json_response({"ok": False, "error": "used_url"}, status=404)
        try:
            payload = await request.json()
        except json.JSONDecodeError:
            return web.json_response({"ok": False, "error": "invalid_payload"}, status=400)
        hook["uses"] += 1
        try:
            self.respond(hook, payload)
        except SlackError as err:
            return web.json_response({"ok": False, "error": err.error, "response_metadata": {"messages": err.messages}}, status=400)
        finally:
            await self.ws.changed()
        return web.json_response({"ok": True})

    def respond(self, hook: dict[str, Any], payload: dict[str, Any]) -> None:
        """Apply a response_url or acknowledgement payload (ephemeral, in_channel, replace, delete)."""
        channel, user = hook["channel"], hook["user"]
        if payload.get("delete_original"):
            self.ws.messages = [m for m in self.ws.messages if not (m.channel == channel and m.ts == hook.get("source_ts"))]
            return
        text, blocks = _content(payload)
        source = hook.get("source_ts")
        if payload.get("replace_original") and source:
            original = self.ws.find_message(channel, source)
            if original is not None:
                original.text, original.blocks, original.edited = text, blocks, True
                return
        if payload.get("response_type") == "in_channel":
            self.ws.messages.append(Message(channel, self.ws.next_ts(), BOT_USER_ID, text, blocks,
                                            payload.get("thread_ts"), BOT_ID))
        else:
            self.ws.ephemerals.append(Ephemeral(channel, user, self.ws.next_ts(), text, blocks))

    # --- methods --------------------------------------------------------------------------------

    async def api_test(self, args: Args) -> Args:
        return {"args": args}

    async def auth_test(self, args: Args) -> Args:
        return {"url": "https://changeops-emulator.slack.com/", "team": "ChangeOps Emulator", "user": "changeops",
                "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID, "app_id": APP_ID,
                "is_enterprise_install": False}

    async def chat_post_message(self, args: Args) -> Args:
        channel = self._channel(args)
        if self.ws.channels[channel].is_archived:
            raise SlackError("is_archived")
        text, blocks = _content(args)
        thread_ts = args.get("thread_ts") or None
        if thread_ts and self.ws.find_message(channel, thread_ts) is None:
            raise SlackError("thread_not_found")
        message = Message(channel, self.ws.next_ts(), BOT_USER_ID, text, blocks, thread_ts, BOT_ID)
        self.ws.messages.append(message)
        return {"channel": channel, "ts": message.ts, "message": message.as_json()}

    async def chat_update(self, args: Args) -> Args:
        channel = self._channel(args)
        message = self.ws.find_message(channel, str(args.get("ts", "")))
        if message is None:
            raise SlackError("message_not_found")
        if message.user != BOT_USER_ID:
            raise SlackError("cant_update_message")
        text, blocks = _content(args, require=False)
        if "text" in args:
            message.text = text
        if "blocks" in args:
            message.blocks = blocks
        message.edited = True
        return {"channel": channel, "ts": message.ts, "text": message.text, "message": message.as_json()}

    async def chat_delete(self, args: Args) -> Args:
        channel = self._channel(args)
        message = self.ws.find_message(channel, str(args.get("ts", "")))
        if message is None:
            raise SlackError("message_not_found")
        self.ws.messages.remove(message)
        return {"channel": channel, "ts": message.ts}

    async def chat_post_ephemeral(self, args: Args) -> Args:
        channel = self._channel(args)
        user = str(args.get("user", ""))
        if user not in self.ws.users:
            raise SlackError("user_not_found")
        if user not in self.ws.channels[channel].members:
            raise SlackError("user_not_in_channel")
        text, blocks = _content(args)
        ephemeral = Ephemeral(channel, user, self.ws.next_ts(), text, blocks)
        self.ws.ephemerals.append(ephemeral)
        return {"message_ts": ephemeral.ts}

    async def chat_get_permalink(self, args: Args) -> Args:
        channel = self._channel(args)
        ts = str(args.get("message_ts", ""))
        if self.ws.find_message(channel, ts) is None:
            raise SlackError("message_not_found")
        return {"channel": channel, "permalink": f"https://changeops-emulator.slack.com/archives/{channel}/p{ts.replace('.', '')}"}

    async def files_get_upload_url_external(self, args: Args) -> Args:
        """Step 1 of files.uploadV2: a URL to post the bytes to, and the file's id."""
        filename, length = str(args.get("filename") or ""), str(args.get("length") or "")
        if not filename or not length.isdigit() or int(length) <= 0:
            raise SlackError("invalid_arguments")
        file_id = self.ws.new_id("F")
        self.pending_uploads[file_id] = (filename, int(length))
        return {"upload_url": f"{self.base_url}/_uploads/{file_id}", "file_id": file_id}

    async def files_complete_upload_external(self, args: Args) -> Args:
        """Step 3 of files.uploadV2: share the uploaded files in a channel (or a thread), with a comment."""
        try:
            listed = json.loads(args["files"]) if isinstance(args.get("files"), str) else args.get("files")
        except json.JSONDecodeError:
            raise SlackError("invalid_arguments") from None
        if not isinstance(listed, list) or not listed:
            raise SlackError("invalid_arguments")
        shared = []
        for item in listed:
            file_id = item.get("id") if isinstance(item, dict) else None
            if file_id not in self.ws.files:
                raise SlackError("file_not_found")
            name, content = self.ws.files[file_id]
            shared.append({"id": file_id, "name": name, "title": item.get("title") or name, "size": len(content),
                           "filetype": name.rpartition(".")[2], "url_private": f"{self.base_url}/_files/{file_id}/{name}"})
        if args.get("channel_id"):
            channel = self._channel({"channel": args["channel_id"]})
            thread_ts = args.get("thread_ts") or None
            if thread_ts and self.ws.find_message(channel, thread_ts) is None:
                raise SlackError("thread_not_found")
            self.ws.messages.append(Message(channel, self.ws.next_ts(), BOT_USER_ID, str(args.get("initial_comment") or ""), [], thread_ts,
                                            BOT_ID, files=shared))
        return {"files": shared}

    async def conversations_open(self, args: Args) -> Args:
        users = [u for u in str(args.get("users", "")).split(",") if u]
        if not users:
            raise SlackError("users_list_not_supplied")
        if len(users) > 1:
            raise SlackError("not_implemented")
        if users[0] not in self.ws.users:
            raise SlackError("user_not_found")
        return {"channel": {"id": self.ws.open_dm(users[0])}}

    async def conversations_info(self, args: Args) -> Args:
        channel = self.ws.channels[self._channel(args)]
        return {"channel": {"id": channel.id, "name": channel.name, "is_im": channel.is_im, "is_member": True}}

    async def users_info(self, args: Args) -> Args:
        user = self.ws.users.get(str(args.get("user", "")))
        if user is None:
            raise SlackError("user_not_found")
        return {"user": user}

    async def usergroups_list(self, args: Args) -> Args:
        include_users = str(args.get("include_users", "")).lower() in ("1", "true")
        groups = [{k: v for k, v in g.items() if include_users or k != "users"} for g in self.ws.usergroups.values()]
        return {"usergroups": groups}

    async def usergroups_users_list(self, args: Args) -> Args:
        group = self.ws.usergroups.get(str(args.get("usergroup", "")))
        if group is None:
            raise SlackError("no_such_subteam")
        return {"users": list(group["users"])}

    async def views_open(self, args: Args) -> Args:
        user, error = self.ws.use_trigger(str(args.get("trigger_id", "")))
        if error:
            raise SlackError(error)
        assert user is not None
        view = self.new_view(user, args.get("view"), "modal")
        view.root_view_id = view.id
        return {"view": self.view_json(view)}

    async def views_push(self, args: Args) -> Args:
        user, error = self.ws.use_trigger(str(args.get("trigger_id", "")))
        if error:
            raise SlackError(error)
        assert user is not None
        stack = [v for v in self.ws.views.values() if v.user == user and v.open]
        if not stack:
            raise SlackError("not_found")
        if len(stack) >= 3:
            raise SlackError("push_limit_reached")
        view = self.new_view(user, args.get("view"), "modal")
        view.root_view_id = stack[0].root_view_id
        return {"view": self.view_json(view)}

    async def views_update(self, args: Args) -> Args:
        view_id = args.get("view_id")
        external_id = args.get("external_id")
        target = self.ws.views.get(str(view_id)) if view_id else next(
            (v for v in self.ws.views.values() if external_id and v.view.get("external_id") == external_id), None)
        if target is None:
            raise SlackError("not_found")
        if args.get("hash") and args["hash"] != target.hash:
            raise SlackError("hash_conflict")
        _check_view(args.get("view"), "modal")
        target.view, target.hash, target.errors = dict(args["view"]), self.ws.new_id("h"), {}
        return {"view": self.view_json(target)}

    async def views_publish(self, args: Args) -> Args:
        user = str(args.get("user_id", ""))
        if user not in self.ws.users:
            raise SlackError("user_not_found")
        _check_view(args.get("view"), "home")
        existing = self.ws.home.get(user)
        if existing is not None and args.get("hash") and args["hash"] != existing.hash:
            raise SlackError("hash_conflict")
        view = View(existing.id if existing else self.ws.new_id("V"), user, dict(args["view"]), self.ws.new_id("h"))
        self.ws.home[user] = view
        return {"view": self.view_json(view)}

    # --- helpers --------------------------------------------------------------------------------

    def _channel(self, args: Args) -> str:
        channel = self.ws.channel_id(str(args.get("channel", "")))
        if channel is None or (self.ws.channels[channel].is_private and BOT_USER_ID not in self.ws.channels[channel].members):
            raise SlackError("channel_not_found")  # a private channel the bot is not in is one it cannot see
        return channel

    def new_view(self, user: str, raw: Any, kind: str) -> View:
        """Validate and open a view for ``user``."""
        _check_view(raw, kind)
        view = View(self.ws.new_id("V"), user, dict(raw), self.ws.new_id("h"))
        self.ws.views[view.id] = view
        return view

    def view_json(self, view: View) -> Args:
        """A view as the Web API returns it."""
        return {**view.view, "id": view.id, "team_id": TEAM_ID, "hash": view.hash, "app_id": APP_ID,
                "bot_id": BOT_ID, "root_view_id": view.root_view_id, "state": {"values": {}}}


def _check_view(raw: Any, kind: str) -> None:
    if not isinstance(raw, dict):
        raise SlackError("invalid_arguments", ["[ERROR] missing required field: view"])
    if raw.get("type") != kind:
        raise SlackError("invalid_arguments", [f"[ERROR] view type must be {kind} [json-pointer:/view/type]"])
    problems = validate_view(raw)
    if problems:
        raise SlackError("invalid_arguments", problems)


def _content(args: Args, *, require: bool = True) -> tuple[str, list[dict[str, Any]]]:
    text = args.get("text") or ""
    blocks = args.get("blocks") or []
    if not isinstance(text, str):
        raise SlackError("invalid_arguments", ["[ERROR] text must be a string [json-pointer:/text]"])
    if require and not text and not blocks and not args.get("attachments"):
        raise SlackError("no_text")
    if len(text) > MESSAGE_TEXT_MAX:
        raise SlackError("msg_too_long")
    if blocks:
        problems = validate_blocks(blocks)
        if problems:
            raise SlackError("invalid_blocks", problems)
    return text, blocks


async def _arguments(request: web.Request) -> Args:
    """Merge query, form and JSON arguments; decode JSON-encoded fields of form posts."""
    args: Args = dict(request.query)
    if request.can_read_body:
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except json.JSONDecodeError:
                return {**args, "_invalid_json": True}
            if isinstance(body, dict):
                args.update(body)
        else:
            args.update(dict(await request.post()))
    for name in JSON_FIELDS:
        if isinstance(args.get(name), str):
            try:
                args[name] = json.loads(args[name])
            except json.JSONDecodeError:
                args[name] = None
    return args
