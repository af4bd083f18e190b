"""The bot's identity (auth.test) is learnt away from the acks, through the emulator: a Slack that fails when the bot starts
neither delays nor refuses a request, and the bot learns who it is once Slack answers; a token Slack refuses answers
requests with Slack's reinstall message and does nothing else."""

from __future__ import annotations

import secrets

from bot.emulator.workspace import BOT_USER_ID, Workspace
from tests.conftest import running_bot, seed_workspace, until

ALICE_ID = "U0000ALICE"


def workspace(outage: int | None = None) -> Workspace:
    ws = Workspace(f"xoxb-test-{secrets.token_hex(6)}")
    seed_workspace(ws)
    ws.outage = outage
    return ws


async def test_slack_failing_when_the_bot_starts_neither_delays_nor_refuses_a_request(migrated_url: str) -> None:
    async with running_bot(workspace(503), migrated_url) as harness:
        ws, driver, bot = harness.ws, harness.driver, harness.bot
        bot.identity.backoff = 0.1
        await ws.wait_for(lambda: [c for c in ws.calls_to("auth.test") if c.status == 503] or None)
        answered = await driver.command("/schema help", user=ALICE_ID, channel="changes")
        assert answered.status == 200 and "/schema propose" in answered.text and "reinstall" not in answered.text
        assert bot.identity.answer is None  # still not known: the request did not wait for it
        ws.outage = None
        await until(lambda: bot.identity.answer is not None)
        assert bot.identity.answer is not None and bot.identity.answer["user_id"] == BOT_USER_ID


async def test_a_token_slack_refuses_answers_requests_with_the_reinstall_message_and_does_nothing(migrated_url: str) -> None:
    async with running_bot(workspace(), migrated_url, SLACK_BOT_TOKEN="xoxb-revoked-0000") as harness:
        ws, driver, bot = harness.ws, harness.driver, harness.bot
        await until(lambda: bot.identity.refusal is not None)
        answered = await driver.command("/schema status 1", user=ALICE_ID, channel="changes")
        assert answered.status == 200 and "reinstall this app" in answered.text
        assert {c.method for c in ws.calls} == {"auth.test"}  # asked again at the request, nothing else called
        assert [e.text for e in ws.ephemerals_for(ALICE_ID)] == [answered.text]


async def test_a_bot_stopped_while_slack_never_answered_stops_and_asks_no_more(migrated_url: str) -> None:
    ws = workspace(503)
    async with running_bot(ws, migrated_url) as harness:
        harness.bot.identity.backoff = 0.05
        await ws.wait_for(lambda: len(ws.calls_to("auth.test")) >= 2 or None)
        asking = harness.bot.identity._asking
        assert asking is not None and not asking.done()  # still asking, backed off, as the bot stops
    assert asking.cancelled() and harness.bot.identity._asking is None and harness.bot.identity.answer is None
