"""When Slack is answered: at the listener's ack, not when its work ends; a failure on either side of the ack."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from bot.services.proposals import Proposals
from bot.slack.commands import Router
from tests.conftest import SlackHarness


async def test_slack_is_answered_at_the_ack_while_the_work_after_it_goes_on(slack: SlackHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    release, reached = asyncio.Event(), asyncio.Event()
    view = Proposals.view

    async def held(self: Proposals, *args: Any, **kwargs: Any) -> Any:
        reached.set()
        await release.wait()
        return await view(self, *args, **kwargs)

    monkeypatch.setattr(Proposals, "view", held)
    delivery = await slack.driver.command("/schema status 1", user="U0000ALICE", channel="changes")
    assert delivery.status == 200 and delivery.text == ""  # answered while the card's lookup is still held
    await asyncio.wait_for(reached.wait(), 10)
    assert slack.ws.ephemerals_for("U0000ALICE") == []
    release.set()
    reply = await slack.ws.wait_for(lambda: next(iter(slack.ws.ephemerals_for("U0000ALICE")), None))
    assert "#1" in reply.text  # no proposal #1: said after the ack, through the response URL


async def test_a_listener_failing_after_its_ack_is_logged_and_the_bot_serves_on(slack: SlackHarness, monkeypatch: pytest.MonkeyPatch,
                                                                               caplog: pytest.LogCaptureFixture) -> None:
    async def broken(self: Proposals, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the card's lookup broke")

    monkeypatch.setattr(Proposals, "view", broken)
    with caplog.at_level(logging.ERROR, logger="bot.slack.inflight"):
        delivery = await slack.driver.command("/schema status 1", user="U0000ALICE", channel="changes")
        assert delivery.status == 200
        for _ in range(400):  # the log is no emulator state: looked at until it comes
            if "the card's lookup broke" in caplog.text:
                break
            await asyncio.sleep(0.05)
    assert "a Slack listener failed after its acknowledgement" in caplog.text
    assert slack.ws.ephemerals_for("U0000ALICE") == []
    again = await slack.driver.command("/schema help", user="U0000ALICE", channel="changes")
    assert again.status == 200 and "`/schema help`" in slack.ws.ephemerals_for("U0000ALICE")[0].text


async def test_a_listener_failing_before_its_ack_gets_an_error_status_so_slack_retries(slack: SlackHarness, monkeypatch: pytest.MonkeyPatch,
                                                                                        caplog: pytest.LogCaptureFixture) -> None:
    def broken(self: Router) -> Any:
        raise RuntimeError("the help text broke")

    monkeypatch.setattr(Router, "help", broken)
    with caplog.at_level(logging.ERROR, logger="bot.slack.app"):
        delivery = await slack.driver.command("/schema help", user="U0000ALICE", channel="changes")
    assert delivery.status == 500
    assert "a Slack listener failed" in caplog.text and "the help text broke" in caplog.text
    assert slack.ws.ephemerals_for("U0000ALICE") == []
