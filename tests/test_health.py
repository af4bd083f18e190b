"""The orchestrator's probes."""

from __future__ import annotations

import aiohttp

from bot.runtime import Bot
from tests.conftest import SlackHarness, bot_config


async def test_healthz_and_readyz_when_migrated(slack: SlackHarness) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{slack.bot.url}/healthz") as response:
            assert response.status == 200
        async with http.get(f"{slack.bot.url}/readyz") as response:
            assert response.status == 200
            assert (await response.json())["ok"] is True


async def test_readyz_is_503_on_an_unmigrated_database(slack: SlackHarness, database_url: str) -> None:
    bot = Bot(bot_config(slack.emulator, database_url.replace("changeops.db", "empty.db")
                         if database_url.startswith("sqlite") else database_url + "_missing"))
    await bot.start(0)
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{bot.url}/healthz") as response:
                assert response.status == 200
            async with http.get(f"{bot.url}/readyz") as response:
                assert response.status == 503
                assert "bot migrate" in (await response.json())["reason"] or "not migrated" in (await response.json())["reason"]
    finally:
        await bot.stop()


async def test_readyz_turns_503_as_soon_as_the_bot_is_stopping(slack: SlackHarness) -> None:
    slack.bot.draining = True  # what a stop sets first, before it stops accepting requests
    try:
        async with aiohttp.ClientSession() as http, http.get(f"{slack.bot.url}/readyz") as response:
            assert response.status == 503 and (await response.json())["reason"] == "shutting down"
    finally:
        slack.bot.draining = False
