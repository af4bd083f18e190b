"""Who the bot is in its workspace (Slack's ``auth.test``), learnt away from the acknowledgements.

Bolt's own single-workspace authorization calls ``auth.test`` on the first request it serves: a Slack that answers
that call 429 or 5xx holds the request's ack through the client's retries (past Slack's three seconds) and then
answers the user "please reinstall this app", and so on for every request until one call succeeds. Here the bot asks
when it starts and keeps asking, backed off, until Slack answers; meanwhile a request (its signature already checked:
it is Slack's) is served with what it says itself, its team and user. A definite refusal (a revoked or invalid token)
refuses requests as Bolt does, and is asked again at the next request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import aiohttp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

log = logging.getLogger(__name__)


class Identity(AsyncAuthorize):
    """Bolt's ``authorize``: the bot's identity from ``auth.test``, asked in the background until Slack answers."""

    def __init__(self, client: AsyncWebClient, *, backoff: float = 1.0, max_backoff: float = 60.0) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.client, self.backoff, self.max_backoff = client, backoff, max_backoff
        self.answer: AsyncSlackResponse | None = None
        self.refusal: SlackApiError | None = None  # Slack's definite no (invalid_auth, token_revoked, ...)
        self._asking: asyncio.Task[None] | None = None

    def learn(self) -> None:
        """Start asking ``auth.test`` (inside the running loop), unless the answer is known or being asked for."""
        if self.answer is None and (self._asking is None or self._asking.done()):
            self._asking = asyncio.create_task(self._ask(), name="slack-identity")

    async def close(self) -> None:
        """Stop asking."""
        if self._asking is not None:
            self._asking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._asking
            self._asking = None

    async def _ask(self) -> None:
        wait = self.backoff
        while True:
            try:
                self.answer = await self.client.auth_test()
                self.refusal = None
                return
            except SlackApiError as err:
                status = err.response.status_code
                if status != 429 and status < 500:
                    log.error("Slack refused the bot token (auth.test: %s): requests are answered with Slack's reinstall message",
                              err.response.get("error"))
                    self.refusal = err
                    return
                reason = f"HTTP {status}"
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as err:
                reason = f"{type(err).__name__}: {err}"
            log.warning("Slack did not answer auth.test (%s): asking again in %.0f s; requests are served meanwhile", reason, wait)
            await asyncio.sleep(wait)
            wait = min(wait * 2, self.max_backoff)

    async def __call__(self, *, context: Any, enterprise_id: str | None, team_id: str | None, user_id: str | None,
                       **_actor: Any) -> AuthorizeResult:
        """The authorization of one request: never waits on Slack."""
        token = self.client.token
        if self.answer is not None:
            known = self.answer
            return AuthorizeResult(enterprise_id=known.get("enterprise_id"), team_id=known.get("team_id"), bot_id=known.get("bot_id"),
                                   bot_user_id=known.get("user_id"), bot_token=token, user_id=user_id)
        refusal = self.refusal
        self.learn()
        if refusal is not None:
            raise refusal  # Bolt answers with its reinstall message
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=token, user_id=user_id)
