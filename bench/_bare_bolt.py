"""A bare slack-bolt AsyncApp on aiohttp whose listeners only ack: the baseline of bench/ack_latency.py.

Run: python bench/_bare_bolt.py PORT SIGNING_SECRET BOT_TOKEN SLACK_API_URL
"""

from __future__ import annotations

import sys
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp

from bot.slack import ids
from bot.slack.client import web_client


def main(port: int, secret: str, token: str, api_url: str) -> None:
    bolt = AsyncApp(client=web_client(token, api_url), signing_secret=secret)

    async def ack_only(ack: Any) -> None:
        await ack()

    bolt.command("/schema")(ack_only)
    bolt.action(ids.APPROVE)(ack_only)

    async def events(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await bolt.async_dispatch(await to_bolt_request(request)))

    async def healthz(_request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/slack/events", events)
    app.router.add_get("/readyz", healthz)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4])
