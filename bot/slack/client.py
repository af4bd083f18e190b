"""The Web API client: slack_sdk's async client, retrying 429s as Slack asks."""

from __future__ import annotations

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
