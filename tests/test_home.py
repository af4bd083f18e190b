"""The App Home tab, published through the emulated Web API."""

from __future__ import annotations

import json

from sqlmodel import select

from bot.slack import ids
from bot.store.models import OutboxMessage
from tests.conftest import SlackHarness
from tests.test_proposals_slack import BOB, CAROL, V1, card_message, propose, retyped, setup_catalog


async def test_opening_home_publishes_the_commands(slack: SlackHarness) -> None:
    await slack.driver.event({"type": "app_home_opened", "user": "U0000ALICE", "channel": "D1", "tab": "home"})
    view = await slack.ws.wait_for(lambda: slack.ws.home.get("U0000ALICE"))
    text = str(view.view["blocks"])
    assert "`/schema help`" in text
    moment = slack.clock()  # a snapshot says when it was taken, in each reader's own zone
    assert view.view["blocks"][1]["elements"][0]["text"].endswith(
        f"As of <!date^{int(moment.timestamp())}^{{date_short_pretty}} {{time}}|{moment:%Y-%m-%d %H:%M} UTC>; kept current as "
        "things change, for a day after you open the tab.")


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


def _published(slack: SlackHarness, user: str) -> list[str]:
    """Every view of ``user``'s tab Slack took, oldest first, as text."""
    return [json.dumps(c.args["view"]) for c in slack.ws.calls_to("views.publish") if c.ok and c.args.get("user_id") == user]


def _waiting(view: str) -> str:
    """The tab's *Waiting on you* list."""
    return view.split("Waiting on you", 1)[1].split("Your proposals", 1)[0]


async def test_an_open_tab_follows_the_proposals_it_lists_without_being_opened_again(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await slack.driver.event({"type": "app_home_opened", "user": BOB, "channel": "D2", "tab": "home"})
    await slack.ws.wait_for(lambda: _published(slack, BOB))
    assert "#1 orders-value" not in _waiting(_published(slack, BOB)[-1])
    await propose(slack, retyped(V1, "price", "string"))
    await slack.ws.wait_for(lambda: "#1 orders-value" in _waiting(_published(slack, BOB)[-1]))  # asked of Bob's team: it waits on him
    card = await card_message(slack)
    await slack.driver.click(card, ids.APPROVE, user=BOB)
    await slack.ws.wait_for(lambda: "#1 orders-value" not in _waiting(_published(slack, BOB)[-1]))  # answered: it waits no more
    await slack.bot.idle()
    assert "#1 orders-value" not in _waiting(json.dumps(slack.ws.home[BOB].view))
    assert CAROL not in slack.ws.home and not _published(slack, CAROL)  # never opened it: nothing published


async def test_a_tab_opened_over_a_day_ago_waits_to_be_opened_again(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await slack.driver.event({"type": "app_home_opened", "user": BOB, "channel": "D2", "tab": "home"})
    await slack.ws.wait_for(lambda: _published(slack, BOB))
    slack.clock.advance(hours=25)
    await propose(slack, retyped(V1, "price", "string"))
    await card_message(slack)
    await slack.bot.idle()
    assert len(_published(slack, BOB)) == 1
    await slack.driver.event({"type": "app_home_opened", "user": BOB, "channel": "D2", "tab": "home"})
    await slack.ws.wait_for(lambda: len(_published(slack, BOB)) == 2)
    assert "#1 orders-value" in _waiting(_published(slack, BOB)[-1])


async def test_while_slack_refuses_a_tab_it_catches_up_once_and_never_shows_an_older_state(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await slack.driver.event({"type": "app_home_opened", "user": BOB, "channel": "D2", "tab": "home"})
    await slack.ws.wait_for(lambda: _published(slack, BOB))
    slack.ws.failing["views.publish"] = 500
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.driver.click(card, ids.APPROVE, user=BOB)
    await slack.ws.wait_for(lambda: [c for c in slack.ws.calls_to("views.publish") if c.status == 500] or None)
    await slack.ws.wait_for(lambda: (slack.ws.find_message(card.channel, card.ts) or card).edited or None)
    del slack.ws.failing["views.publish"]
    await slack.bot.idle()
    shown = _published(slack, BOB)
    assert len(shown) == 2 and "#1 orders-value" not in _waiting(shown[-1])  # one publication caught up, with Bob's answer in it
    async with slack.bot.db.session() as session:
        assert not (await session.exec(select(OutboxMessage).where(OutboxMessage.state == "failed"))).all()


async def test_many_changes_while_a_tab_waits_are_one_publication_per_turn(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await slack.driver.event({"type": "app_home_opened", "user": BOB, "channel": "D2", "tab": "home"})
    await slack.driver.event({"type": "app_home_opened", "user": BOB, "channel": "D2", "tab": "home"})  # two opens, one lane
    await slack.ws.wait_for(lambda: _published(slack, BOB))
    await slack.bot.idle()
    before = len(_published(slack, BOB))
    slack.ws.failing["views.publish"] = 500
    for _ in range(3):
        await propose(slack, retyped(V1, "price", "string"))
    await slack.ws.wait_for(lambda: len(slack.ws.channel_messages("schema-changes")) >= 3 or None)
    async with slack.bot.db.session() as session:  # a change owes a row only while the one owed is being tried
        owed = (await session.exec(select(OutboxMessage).where(OutboxMessage.kind == "home.publish", OutboxMessage.state == "pending"))).all()
    refused = [c for c in slack.ws.calls_to("views.publish") if c.status == 500]
    assert len(owed) <= 1 + len(refused) and len(owed) <= 3
    del slack.ws.failing["views.publish"]
    await slack.bot.idle()
    assert len(_published(slack, BOB)) == before + 1  # what was owed went as one publication, rendered when it ran
    assert "#3 orders-value" in _waiting(_published(slack, BOB)[-1])


async def test_a_viewer_slack_no_longer_knows_is_owed_nothing_more(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    dave = "U00000DAVE"
    slack.ws.add_user(dave, "dave")
    await slack.driver.event({"type": "app_home_opened", "user": dave, "channel": "D4", "tab": "home"})
    await slack.ws.wait_for(lambda: _published(slack, dave))
    del slack.ws.users[dave]  # dave leaves the workspace
    await propose(slack, retyped(V1, "price", "string"))
    await card_message(slack)
    await slack.bot.idle()
    tried = [c for c in slack.ws.calls_to("views.publish") if c.args.get("user_id") == dave]
    assert [(c.ok, c.error) for c in tried] == [(True, None), (False, "user_not_found")]
    await propose(slack, retyped(V1, "price", "bytes"))  # the next change owes dave nothing
    await card_message(slack, 2)
    await slack.bot.idle()
    assert len([c for c in slack.ws.calls_to("views.publish") if c.args.get("user_id") == dave]) == 2


async def test_a_publication_slack_holds_up_never_holds_the_card_back(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await slack.driver.event({"type": "app_home_opened", "user": BOB, "channel": "D2", "tab": "home"})
    await slack.ws.wait_for(lambda: _published(slack, BOB))
    slack.ws.hold("views.publish")  # Slack sits on the tab's publication (until the client's timeout)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.ws.wait_for(lambda: "views.publish" in slack.ws.held or None)
    await slack.driver.click(card, ids.APPROVE, user=BOB)
    # the card follows the answer while the tab's call still hangs: each key's line waits only on its own calls
    await slack.ws.wait_for(lambda: (slack.ws.find_message(card.channel, card.ts) or card).edited or None, timeout=10)
    assert "views.publish" in slack.ws.held
    slack.ws.release("views.publish")
    await slack.bot.idle()
    assert "#1 orders-value" not in _waiting(_published(slack, BOB)[-1])
