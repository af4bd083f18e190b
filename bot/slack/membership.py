"""Team membership from Slack user groups, cached with an expiry, the catalog's members as a fallback."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.domain.lineage.model import Team

log = logging.getLogger(__name__)


class SlackMembership:
    """Members of a team: its user group's users (cached ``ttl`` seconds), else the catalog's list."""

    def __init__(self, client: AsyncWebClient, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.client, self.ttl, self.clock = client, ttl, clock
        self._cache: dict[str, tuple[float, set[str]]] = {}

    async def members(self, team: Team) -> set[str]:
        """Who may act for ``team``."""
        if not team.usergroup:
            return set(team.members)
        cached = self._cache.get(team.usergroup)
        if cached is not None and self.clock() - cached[0] < self.ttl:
            return cached[1]
        try:
            response = await self.client.usergroups_users_list(usergroup=team.usergroup)
        except SlackApiError as err:
            log.warning("cannot read user group %s of %s (%s): using the catalog's members", team.usergroup, team.name,
                        err.response.get("error"))
            return set(team.members)
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            log.warning("cannot reach Slack for user group %s of %s (%s): using the catalog's members", team.usergroup, team.name,
                        type(err).__name__)
            return set(team.members)
        users = set(response.get("users") or [])
        self._cache[team.usergroup] = (self.clock(), users)
        return users
