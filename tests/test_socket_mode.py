"""Socket Mode, for workspaces that cannot expose a request URL: the approval journey over the app's WebSocket,
through Slack's disconnects and reconnects."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator

import aiohttp
import pytest

from bot.emulator import SlackDriver, Workspace
from bot.runtime import Bot
from bot.slack import ids
from tests.conftest import Clock, SlackHarness, bot_config, seed_workspace, start_emulator
from tests.test_proposals_slack import ALICE, BOB, V1, card_message, propose, retyped, setup_catalog, thread


@pytest.fixture
async def socket_slack(migrated_url: str) -> AsyncIterator[SlackHarness]:
    """The bot with SLACK_APP_TOKEN and no signing secret: Slack reaches it only over Socket Mode."""
    ws = Workspace(f"xoxb-socket-{secrets.token_hex(6)}")
    seed_workspace(ws)
    emulator, runner = await start_emulator(ws)
    config = bot_config(emulator, migrated_url, SLACK_APP_TOKEN=ws.app_token, SLACK_SIGNING_SECRET="")
    clock = Clock()
    bot = Bot(config, clock)
    await bot.start(0)
    await ws.wait_for(lambda: emulator.sockets)
    driver = SlackDriver(emulator, "", "", socket_mode=True)
    harness = SlackHarness(ws, emulator, driver, bot, config, clock, runner)
    try:
        yield harness
    finally:
        await driver.close()
        await harness.bot.stop()
        await harness.runner.cleanup()


async def test_the_approval_journey_over_socket_mode_survives_a_reconnect(socket_slack: SlackHarness) -> None:
    slack = socket_slack
    await setup_catalog(slack, second_team_job=True)
    submitted = await propose(slack, retyped(V1, "price", "string"))
    assert submitted.status == 200 and submitted.json is None
    card = await card_message(slack)
    assert "BREAKING" in card.text

    await slack.emulator.socket_disconnect()  # Slack refreshes connections every few hours
    await slack.ws.wait_for(lambda: slack.ws.socket_sessions >= 2 and slack.emulator.sockets)

    await slack.driver.click(card, ids.APPROVE, user=BOB)
    await slack.ws.wait_for(lambda: any("approved for analytics-team" in t for t in thread(slack, card)))
    dm = [m for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)) if m.blocks and m.blocks[-2].get("type") == "actions"][0]
    await slack.driver.click(dm, ids.APPROVE, user=ALICE)
    await slack.ws.wait_for(lambda: "approved" in (slack.ws.find_message(card.channel, card.ts) or card).text)
    assert [v.number for v in await slack.bot.registry.history("orders-value")] == [1, 2]

    status = await slack.driver.command("/schema status 1", user=BOB, channel="changes")
    assert status.status == 200
    await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "Schema change #1" in e.text])
    helped = await slack.driver.command("/schema help", user=BOB, channel="changes")
    assert "`/schema help`" in json.dumps(helped.json)
    await slack.driver.event({"type": "app_home_opened", "user": ALICE, "channel": "D1", "tab": "home"})
    assert "#1 orders-value" in json.dumps((await slack.ws.wait_for(lambda: slack.ws.home.get(ALICE))).view)
    await slack.bot.idle()


async def test_socket_mode_serves_no_request_url_and_slack_refuses_the_wrong_token(socket_slack: SlackHarness) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{socket_slack.bot.url}/slack/events", data=b"x") as response:
            assert response.status == 404  # nothing to forge: without a signing secret there is no request URL
        async with http.get(f"{socket_slack.bot.url}/readyz") as response:
            assert response.status == 200
        headers = {"Authorization": f"Bearer {socket_slack.ws.token}"}
        async with http.post(f"{socket_slack.emulator.base_url}/api/apps.connections.open", headers=headers) as response:
            assert (await response.json())["error"] == "not_allowed_token_type"
