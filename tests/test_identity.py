"""The bot's identity (auth.test) is learnt away from the acks, through the emulator: a Slack that fails when the bot starts
neither delays nor refuses a request, and the bot learns who it is once Slack answers; a token Slack refuses answers
requests with Slack's reinstall message and does nothing else."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from bot.emulator.driver import SlackDriver
from bot.emulator.workspace import BOT_USER_ID, Workspace
from bot.runtime import Bot

ALICE_ID = "U0000ALICE"
from tests.conftest import Clock, bot_config, seed_workspace, start_emulator


async def until(predicate: Callable[[], bool]) -> None:
    """Wait for the bot's state (not the emulator's) to hold, a while at most."""
    for _ in range(400):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the bot did not get there in 20 s")


@asynccontextmanager
async def running(migrated_url: str, prepare: Callable[[Workspace], None], **overrides: str) -> AsyncIterator[tuple[Workspace, SlackDriver, Bot]]:
    ws = Workspace(f"xoxb-test-{secrets.token_hex(6)}")
    seed_workspace(ws)
    prepare(ws)
    emulator, runner = await start_emulator(ws)
    config = bot_config(emulator, migrated_url, **overrides)
    bot = Bot(config, Clock())
    await bot.start(0)
    driver = SlackDriver(emulator, f"{bot.url}/slack/events", config.slack_signing_secret)
    try:
        yield ws, driver, bot
    finally:
        await driver.close()
        await bot.stop()
        await runner.cleanup()


async def test_slack_failing_when_the_bot_starts_neither_delays_nor_refuses_a_request(migrated_url: str) -> None:
    def failing(ws: Workspace) -> None:
        ws.outage = 503

    async with running(migrated_url, failing) as (ws, driver, bot):
        bot.identity.backoff = 0.1
        await ws.wait_for(lambda: [c for c in ws.calls_to("auth.test") if c.status == 503] or None)
        answered = await driver.command("/schema help", user=ALICE_ID, channel="changes")
        assert answered.status == 200 and "/schema propose" in answered.text and "reinstall" not in answered.text
        assert bot.identity.answer is None  # still not known: the request did not wait for it
        ws.outage = None
        await until(lambda: bot.identity.answer is not None)
        assert bot.identity.answer is not None and bot.identity.answer["user_id"] == BOT_USER_ID


async def test_a_token_slack_refuses_answers_requests_with_the_reinstall_message_and_does_nothing(migrated_url: str) -> None:
    async with running(migrated_url, lambda ws: None, SLACK_BOT_TOKEN="xoxb-revoked-0000") as (ws, driver, bot):
        await until(lambda: bot.identity.refusal is not None)
        answered = await driver.command("/schema status 1", user=ALICE_ID, channel="changes")
        assert answered.status == 200 and "reinstall this app" in answered.text
        assert {c.method for c in ws.calls} == {"auth.test"}  # asked again at the request, nothing else called
        assert [e.text for e in ws.ephemerals_for(ALICE_ID)] == [answered.text]
