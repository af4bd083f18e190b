"""The Web API client: slack_sdk's async client, retrying 429s as Slack asks, over kept-alive connections."""

from __future__ import annotations

from collections import Counter

import aiohttp
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

RATE_LIMIT_RETRIES = 3


def web_client(token: str, base_url: str, *, retries: bool = True) -> AsyncWebClient:
    """A client that waits out ``Retry-After`` on 429 (slack_sdk's async default does not); without ``retries``
    every failure comes straight back (the outbox dispatcher schedules its own retries)."""
    return AsyncWebClient(
        token=token,
        base_url=base_url,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(),
            AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        ] if retries else [],
    )


class SlackConnections:
    """One pool of kept-alive connections for every Web API client of a bot. Without it slack_sdk opens and
    closes an HTTP session per call: a new TCP (and TLS) handshake for every message, form and card edit."""

    def __init__(self, token: str, base_url: str) -> None:
        self.token, self.base_url = token, base_url
        self.clients: list[AsyncWebClient] = []
        self.session: aiohttp.ClientSession | None = None
        self.rate_limited: Counter[str] = Counter()  # Web API method: answers 429 (Slack's rate limit)

    def client(self, *, retries: bool = True) -> AsyncWebClient:
        """A client (see ``web_client``) that will share the pool once it is open."""
        client = web_client(self.token, self.base_url, retries=retries)
        client.session = self.session
        self.clients.append(client)
        return client

    async def open(self) -> None:
        """Open the pool (inside the running loop) and give it to every client."""
        tracing = aiohttp.TraceConfig()

        async def answered(_session: aiohttp.ClientSession, _context: object, params: aiohttp.TraceRequestEndParams) -> None:
            if params.response.status == 429 and str(params.url).startswith(self.base_url):  # a Web API method, not a response_url
                self.rate_limited[params.url.path.rpartition("/")[2]] += 1

        tracing.on_request_end.append(answered)
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30), trace_configs=[tracing])
        for client in self.clients:
            client.session = self.session

    async def close(self) -> None:
        """Close the pool: the clients go back to a session per call."""
        if self.session is not None:
            for client in self.clients:
                client.session = None
            await self.session.close()
            self.session = None
