"""The App Home tab, published through the emulated Web API."""

from __future__ import annotations

from tests.conftest import SlackHarness


async def test_opening_home_publishes_the_commands(slack: SlackHarness) -> None:
    await slack.driver.event({"type": "app_home_opened", "user": "U0000ALICE", "channel": "D1", "tab": "home"})
    view = await slack.ws.wait_for(lambda: slack.ws.home.get("U0000ALICE"))
    text = str(view.view["blocks"])
    assert "`/schema help`" in text
    moment = slack.clock()  # a snapshot says when it was taken, in each reader's own zone
    assert view.view["blocks"][1]["elements"][0]["text"].endswith(
        f"As of <!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time}}|{moment:%Y-%m-%d %H:%M} UTC>: open the tab again to see "
        "what changed since.")


async def test_messages_tab_does_not_publish(slack: SlackHarness) -> None:
    await slack.driver.event({"type": "app_home_opened", "user": "U0000ALICE", "channel": "D1", "tab": "messages"})
    await slack.driver.event({"type": "app_home_opened", "user": "U00000BOB", "channel": "D2", "tab": "home"})
    await slack.ws.wait_for(lambda: slack.ws.home.get("U00000BOB"))
    assert "U0000ALICE" not in slack.ws.home


async def test_a_retried_event_acts_once(slack: SlackHarness) -> None:
    first = await slack.driver.event({"type": "app_home_opened", "user": "U0000CAROL", "channel": "D3", "tab": "home"})
    await slack.ws.wait_for(lambda: slack.ws.home.get("U0000CAROL"))
    retried = await slack.driver.event({}, retry=first)
    assert retried.status == 200
    await slack.driver.event({"type": "app_home_opened", "user": "U00000BOB", "channel": "D2", "tab": "home"})
    await slack.ws.wait_for(lambda: slack.ws.home.get("U00000BOB"))
    publishes = [c for c in slack.ws.calls_to("views.publish") if c.args.get("user_id") == "U0000CAROL"]
    assert len(publishes) == 1


async def test_rate_limited_publish_is_retried_after_retry_after(slack: SlackHarness) -> None:
    slack.ws.rate_limit("views.publish", times=1, retry_after=1)
    await slack.driver.event({"type": "app_home_opened", "user": "U0000ALICE", "channel": "D1", "tab": "home"})
    await slack.ws.wait_for(lambda: slack.ws.home.get("U0000ALICE"))
    calls = slack.ws.calls_to("views.publish")
    assert [c.status for c in calls] == [429, 200]
