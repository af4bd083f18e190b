"""Slash commands end to end: signed requests over HTTP to the running bot, replies seen in the emulator."""

from __future__ import annotations

import json
import time
from urllib.parse import urlencode

import pytest

from bot.emulator import sign
from tests.conftest import SlackHarness


async def test_schema_help_answers_with_the_list_of_commands(slack: SlackHarness) -> None:
    delivery = await slack.driver.command("/schema help", user="U0000ALICE", channel="changes")
    assert delivery.status == 200
    shown = slack.ws.ephemerals_for("U0000ALICE")
    assert len(shown) == 1
    assert "`/schema help`" in shown[0].text
    assert shown[0].channel == slack.ws.channel_id("changes")
    assert slack.ws.channel_messages("changes") == []


async def test_bare_command_shows_help(slack: SlackHarness) -> None:
    await slack.driver.command("/schema", user="U00000BOB", channel="changes")
    assert "`/schema help`" in slack.ws.ephemerals_for("U00000BOB")[0].text


async def test_unknown_subcommand_is_explained_and_changes_nothing(slack: SlackHarness) -> None:
    delivery = await slack.driver.command("/schema frobnicate now", user="U0000ALICE", channel="changes")
    assert delivery.status == 200
    text = slack.ws.ephemerals_for("U0000ALICE")[0].text
    assert "I don't know `/schema frobnicate`" in text
    assert "`/schema help`" in text
    assert not [c for c in slack.ws.calls if c.method.startswith("chat.")]


async def test_a_misspelt_or_extra_argument_to_propose_opens_no_form(slack: SlackHarness) -> None:
    """`--transitio` must not open the plain form: the person meant the other one."""
    for text, wrong in (("/schema propose orders-value --transitio", "--transitio"), ("/schema propose orders-value payments-value", "payments-value"),
                        ("/schema propose --transition orders-value -x", "-x")):
        before = len(slack.ws.ephemerals_for("U0000ALICE"))
        await slack.driver.command(text, user="U0000ALICE", channel="changes")
        said = await slack.ws.wait_for(lambda b=before: slack.ws.ephemerals_for("U0000ALICE")[b:] or None)
        assert f"`{wrong}` is not understood here; nothing was opened" in said[0].text and "--transition" in said[0].text
    assert not slack.ws.calls_to("views.open")


async def test_unbalanced_quotes_get_a_human_message(slack: SlackHarness) -> None:
    await slack.driver.command('/schema help "unclosed', user="U0000ALICE", channel="changes")
    assert "I could not read that command" in slack.ws.ephemerals_for("U0000ALICE")[0].text


async def test_unsigned_request_is_refused_and_changes_nothing(slack: SlackHarness) -> None:
    sent = await slack.driver.command("/schema help", user="U0000ALICE", channel="changes")
    before = len(slack.ws.ephemerals)
    fresh = sent.body.replace(b"trigger_id=", b"trigger_id=unsigned")
    delivery = await slack.driver.send(fresh, "application/x-www-form-urlencoded", signed=False)
    assert delivery.status == 401
    assert len(slack.ws.ephemerals) == before


async def test_wrong_signature_is_refused(slack: SlackHarness) -> None:
    sent = await slack.driver.command("/schema help", user="U0000ALICE", channel="changes")
    fresh = sent.body.replace(b"trigger_id=", b"trigger_id=forged")
    ts = str(int(time.time()))
    forged = sign("not-the-secret", ts, fresh)
    delivery = await slack.driver.send(fresh, "application/x-www-form-urlencoded", signature=forged)
    assert delivery.status == 401
    assert delivery.text == "" or "help" not in delivery.text


async def test_stale_timestamp_is_refused_even_with_a_valid_signature(slack: SlackHarness) -> None:
    sent = await slack.driver.command("/schema help", user="U0000ALICE", channel="changes")
    fresh = sent.body.replace(b"trigger_id=", b"trigger_id=stale")
    delivery = await slack.driver.send(fresh, "application/x-www-form-urlencoded", timestamp=int(time.time()) - 6 * 60)
    assert delivery.status == 401


async def test_tampered_body_is_refused(slack: SlackHarness) -> None:
    ts = str(int(time.time()))
    body = b"command=%2Fschema&text=help&user_id=U0000ALICE&channel_id=C1&trigger_id=t1"
    good = sign(slack.config.slack_signing_secret, ts, body)
    delivery = await slack.driver.send(body + b"x", "application/x-www-form-urlencoded", timestamp=int(ts), signature=good)
    assert delivery.status == 401


async def test_a_retried_command_replies_once(slack: SlackHarness) -> None:
    first = await slack.driver.command("/schema help", user="U0000ALICE", channel="changes")
    retried = await slack.driver.command("/schema help", user="U0000ALICE", channel="changes", retry=first)
    assert first.status == retried.status == 200
    assert retried.text == ""
    assert len(slack.ws.ephemerals_for("U0000ALICE")) == 1


async def test_every_ack_is_within_slacks_three_seconds(slack: SlackHarness) -> None:
    for text in ("/schema help", "/schema", "/schema nonsense"):
        delivery = await slack.driver.command(text, user="U0000CAROL", channel="changes")
        assert delivery.ack_seconds < slack.driver.ack_limit


async def test_url_verification_challenge_is_answered(slack: SlackHarness) -> None:
    body = json.dumps({"token": "x", "challenge": "c-123", "type": "url_verification"}).encode()
    delivery = await slack.driver.send(body, "application/json")
    assert delivery.status == 200
    assert delivery.json == {"challenge": "c-123"}


async def test_schema_rules_lists_the_catalogue_within_slack_limits(slack: SlackHarness) -> None:
    from bot.domain.compat.rules import CATALOGUE

    delivery = await slack.driver.command("/schema rules", user="U0000ALICE", channel="changes")
    assert delivery.status == 200
    [shown] = slack.ws.ephemerals_for("U0000ALICE")
    text = " ".join(b["text"]["text"] for b in shown.blocks)
    assert all(f"`{rule.id}`" in text for rule in CATALOGUE)


async def test_a_replayed_signed_request_acts_in_no_replica(slack: SlackHarness, migrated_url: str) -> None:
    """Refused (401) where its signature was seen; elsewhere acknowledged (the claim is confirmed after the
    ack, to keep the database off the path to it) but stopped before it acts."""
    from bot.emulator import SlackDriver
    from bot.runtime import Bot
    from tests.conftest import bot_config

    ts = int(time.time())
    channel = slack.ws.channel_id("changes")
    body = urlencode({"command": "/schema", "text": "list", "user_id": "U0000ALICE", "channel_id": channel,
                      "trigger_id": slack.ws.issue_trigger("U0000ALICE"),
                      "response_url": slack.ws.issue_response_url(slack.emulator.base_url, channel, "U0000ALICE")}).encode()
    first = await slack.driver.send(body, "application/x-www-form-urlencoded", timestamp=ts)
    again = await slack.driver.send(body, "application/x-www-form-urlencoded", timestamp=ts)
    assert first.status == 200
    assert again.status == 401 and "already received" in again.text
    await slack.bot.idle()
    assert len(slack.ws.ephemerals_for("U0000ALICE")) == 1
    other = Bot(bot_config(slack.emulator, migrated_url), slack.clock)
    await other.start(0)
    driver = SlackDriver(slack.emulator, f"{other.url}/slack/events", slack.config.slack_signing_secret)
    try:
        elsewhere = await driver.send(body, "application/x-www-form-urlencoded", timestamp=ts)
        assert elsewhere.status == 200 and elsewhere.text == ""
        await other.idle()
        assert len(slack.ws.ephemerals_for("U0000ALICE")) == 1  # the replica that had not seen it did nothing
        fresh = await driver.command("/schema list", user="U0000ALICE", channel="changes")
        assert fresh.status == 200
        await other.idle()
        assert len(slack.ws.ephemerals_for("U0000ALICE")) == 2  # while a request of its own still acts
    finally:
        await driver.close()
        await other.stop()


async def test_web_api_calls_reuse_kept_alive_connections(slack: SlackHarness) -> None:
    """One pool for every client of the bot: no new TCP (and, with Slack, TLS) handshake per call."""
    slack.emulator.api_connections.clear()
    for client in slack.bot.connections.clients * 2:
        assert (await client.api_test())["ok"]
    assert len(slack.bot.connections.clients) >= 6
    assert len(slack.emulator.api_connections) == 1


async def test_answers_through_response_urls_reuse_the_pool_too(slack: SlackHarness) -> None:
    """Bolt's own ``respond`` opens a connection per answer; the bot's goes through the pool its Web API calls use."""
    from tests.test_approval_integrity import BREAKING, load  # its catalog and proposal

    await load(slack)
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), "U0000ALICE", surface="api")
    await slack.bot.idle()
    slack.emulator.response_connections.clear()
    users = ["U0000ALICE", "U00000BOB", "U0000CAROL"] * 2
    for number, user in enumerate(users, start=1):
        await slack.driver.command("/schema status 1", user=user, channel="changes")
        await slack.ws.wait_for(lambda u=user: slack.ws.ephemerals_for(u) or None)  # type: ignore[misc]
        await slack.bot.idle()
        assert sum(len(slack.ws.ephemerals_for(u)) for u in ("U0000ALICE", "U00000BOB", "U0000CAROL")) == number
    assert "#1" in slack.ws.ephemerals_for("U00000BOB")[0].text
    # a connection per answer without the pool (Bolt's respond: six); with it one, or two when a Web API call of the bot held
    # the pool's connection at that moment (seen on a loaded machine)
    assert len(slack.emulator.response_connections) <= 2


async def test_a_claim_the_database_cannot_answer_still_lets_the_request_act(slack: SlackHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shared claim is confirmed after the ack: a failing claim must not turn into a lost ack."""

    async def away(_keys: list[str]) -> set[str]:
        raise OSError("the database is away")

    monkeypatch.setattr(slack.bot.deliveries, "_insert", away)
    delivery = await slack.driver.command("/schema list", user="U0000ALICE", channel="changes")
    assert delivery.status == 200
    await slack.ws.wait_for(lambda: slack.ws.ephemerals_for("U0000ALICE"))


async def test_a_command_whose_text_says_payload_is_answered(slack: SlackHarness) -> None:
    """Bolt's own form reading takes a body holding the word "payload" for an interaction and drops it; this one is
    answered like any other."""
    delivery = await slack.driver.command("/schema frobnicate payload", user="U0000ALICE", channel="changes")
    assert delivery.status == 200
    assert "I don't know `/schema frobnicate`" in slack.ws.ephemerals_for("U0000ALICE")[0].text


async def test_a_signed_interaction_whose_payload_is_not_json_is_refused_and_changes_nothing(slack: SlackHarness) -> None:
    before = len(slack.ws.calls)
    delivery = await slack.driver.send(b"payload=%5Bnot%20an%20object", "application/x-www-form-urlencoded")
    assert delivery.status == 400
    assert len(slack.ws.calls) == before


async def test_an_answer_slack_does_not_take_through_a_used_up_response_url_is_logged_not_lost_silently(
        slack: SlackHarness, caplog: pytest.LogCaptureFixture) -> None:
    """A response_url takes five answers (Slack's limit); a sixth gets 404 used_url: the bot says so in its log."""
    from bot.emulator.workspace import RESPONSE_URL_USES
    from bot.slack.respond import PooledRespond

    url = slack.ws.issue_response_url(slack.emulator.base_url, slack.ws.channel_id("changes") or "changes", "U0000ALICE")
    answer = PooledRespond(url, slack.bot.connections)
    for number in range(RESPONSE_URL_USES):
        assert (await answer(text=f"answer {number}", response_type="ephemeral")).status_code == 200
    with caplog.at_level("WARNING", logger="bot.slack.respond"):
        refused = await answer(text="one too many", response_type="ephemeral")
    assert refused.status_code == 404 and "used_url" in str(refused.body)
    assert "did not see it" in caplog.text and "HTTP 404" in caplog.text
    assert [e.text for e in slack.ws.ephemerals_for("U0000ALICE")] == [f"answer {n}" for n in range(RESPONSE_URL_USES)]
