"""Pagers beyond Slack, as outbox handlers: PagerDuty's Events API v2 and Alertmanager-style webhooks.

Each row is one trigger, acknowledge or resolve of one episode for one receiver of its team, sent over HTTP: a 2xx
answer delivers it; a 429 (after ``Retry-After``), a 5xx or a connection failure is retried (the outbox backs off, and
PagerDuty's ``dedup_key`` makes a repeated trigger the same incident); any other answer is a refusal, given up on and
audited.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp

from bot.config import Config
from bot.domain.sli.pipeline import TITLES, Sli
from bot.domain.sli.receivers import PAGERDUTY, alertmanager_webhook, pagerduty_event
from bot.schema_registry import without_credentials
from bot.services.outbox import GiveUp, Handler, Item, Retry
from bot.services.sli import SLI_RECEIVER, SliService
from bot.store.models import aware

TIMEOUT = aiohttp.ClientTimeout(total=10)


class ReceiverDelivery:
    """Sends what a team's receivers are owed."""

    def __init__(self, sli: SliService, config: Config) -> None:
        self.sli, self.config = sli, config
        self.session: aiohttp.ClientSession | None = None

    def handlers(self) -> Mapping[str, Handler]:
        """Kind -> handler, for the dispatcher."""
        return {SLI_RECEIVER: self.send}

    async def send(self, item: Item) -> None:
        """One trigger, acknowledge or resolve to one receiver."""
        payload = item.payload
        team = (await self.sli.lineage.teams()).get(payload["team"])
        receivers = team.receivers if team is not None else []
        if int(payload["receiver"]) >= len(receivers):
            raise GiveUp(f"team {payload['team']} no longer has receiver {payload['receiver']} (the catalog changed)")
        receiver, act = receivers[int(payload["receiver"])], str(payload["action"])
        episode = await self.sli.episode(payload["episode"])
        title = TITLES[Sli(episode.sli)]
        summary = f"{episode.pipeline} · {title}: {episode.level.upper()} since {aware(episode.started_at):%Y-%m-%d %H:%M} UTC"
        details = {k: v for k, v in {"pipeline": episode.pipeline, "sli": episode.sli, "level": episode.level, "peak": episode.peak,
                                     "channel": episode.channel, "acknowledged_by": episode.acked_by}.items() if v is not None}
        link = f"{self.config.public_url.rstrip('/')}/" if self.config.public_url else None
        if receiver["type"] == PAGERDUTY:
            key = self.config.routing_keys.get(receiver["routing_key_env"])
            if not key:
                raise GiveUp(f"{receiver['routing_key_env']} is not set: the bot has no routing key for {payload['team']}'s PagerDuty service")
            url, body = self.config.pagerduty_url, pagerduty_event(act, key, episode.fingerprint, summary, episode.pipeline, episode.sli,
                                                                   payload["team"], aware(episode.started_at), details, link)
        else:
            if act == "acknowledge":
                return  # Alertmanager's webhook knows firing and resolved only
            url = receiver["url"]
            body = alertmanager_webhook(act, f"changeops-{payload['team']}", episode.fingerprint, summary, episode.pipeline, episode.sli,
                                        payload["team"], aware(episode.started_at),
                                        aware(episode.resolved_at) if episode.resolved_at else None, details, link)
        await self._post(url, body, item.id)

    async def _post(self, url: str, body: dict[str, Any], row: int) -> None:
        if self.session is None:
            self.session = aiohttp.ClientSession(timeout=TIMEOUT)
        shown = without_credentials(url)
        try:
            async with self.session.post(url, json=body, headers={"X-ChangeOps-Delivery": str(row)}) as response:
                text = (await response.text())[:200]
                status = response.status
                after = response.headers.get("Retry-After", "")
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            raise Retry(f"{shown} could not be reached ({type(err).__name__})") from None
        if 200 <= status < 300:
            return
        if status == 429:
            raise Retry(f"{shown} asked to slow down (429)", after=float(after) if after.isdigit() else None)
        if status >= 500 or status == 408:
            raise Retry(f"{shown} answered {status}")
        raise GiveUp(f"{shown} refused it: HTTP {status} {text}")

    async def close(self) -> None:
        """Close the HTTP connections."""
        if self.session is not None:
            await self.session.close()
            self.session = None
