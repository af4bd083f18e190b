"""The emulator refuses what Slack refuses, with Slack's error names, over real HTTP."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from sqlmodel import select

from bot.emulator import Emulator, Workspace
from bot.slack.client import web_client
from bot.slack.delivery import message_row
from bot.slack.render import Reply, section
from bot.store.models import AuditEntry
from tests.conftest import SlackHarness, seed_workspace, start_emulator

TOKEN = "xoxb-emulator-test"


@pytest.fixture
async def api() -> AsyncIterator[tuple[Emulator, AsyncWebClient]]:
    ws = Workspace(TOKEN)
    seed_workspace(ws)
    emulator, runner = await start_emulator(ws)
    client = web_client(TOKEN, f"{emulator.base_url}/api/")
    yield emulator, client
    await runner.cleanup()


def button(action_id: str, value: str = "v") -> dict[str, object]:
    return {"type": "button", "action_id": action_id, "text": {"type": "plain_text", "text": "Go"}, "value": value}


async def refused(call: object) -> dict[str, object]:
    with pytest.raises(SlackApiError) as caught:
        await call  # type: ignore[misc]
    return dict(caught.value.response.data)  # type: ignore[arg-type]


async def test_post_update_and_permalink(api: tuple[Emulator, AsyncWebClient]) -> None:
    emulator, client = api
    posted = await client.chat_postMessage(channel="#changes", text="hello", blocks=[section("hello")])
    reply = await client.chat_postMessage(channel=posted["channel"], text="in thread", thread_ts=posted["ts"])
    await client.chat_update(channel=posted["channel"], ts=posted["ts"], text="hello again", blocks=[section("hello again")])
    link = await client.chat_getPermalink(channel=posted["channel"], message_ts=posted["ts"])
    assert link["permalink"].endswith(posted["ts"].replace(".", ""))
    [top] = emulator.ws.channel_messages("changes")
    assert top.text == "hello again" and top.edited
    [in_thread] = emulator.ws.channel_messages("changes", thread_ts=posted["ts"])
    assert in_thread.ts == reply["ts"]


async def test_more_than_fifty_blocks_is_invalid_blocks(api: tuple[Emulator, AsyncWebClient]) -> None:
    _, client = api
    data = await refused(client.chat_postMessage(channel="changes", text="x", blocks=[section(str(i)) for i in range(51)]))
    assert data["error"] == "invalid_blocks"
    assert "no more than 50 items allowed [json-pointer:/blocks]" in str(data["response_metadata"])


async def test_section_text_over_3000_characters(api: tuple[Emulator, AsyncWebClient]) -> None:
    _, client = api
    block = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}
    data = await refused(client.chat_postMessage(channel="changes", text="x", blocks=[block]))
    assert data["error"] == "invalid_blocks"
    assert "/blocks/0/text/text" in str(data["response_metadata"])
    ok = await client.chat_postMessage(channel="changes", text="x", blocks=[{**block, "text": {"type": "mrkdwn", "text": "x" * 3000}}])
    assert ok["ok"]


async def test_duplicate_action_id_and_long_button_value(api: tuple[Emulator, AsyncWebClient]) -> None:
    _, client = api
    duplicate = [{"type": "actions", "elements": [button("approve"), button("approve")]}]
    data = await refused(client.chat_postMessage(channel="changes", text="x", blocks=duplicate))
    assert data["error"] == "invalid_blocks" and "duplicate action_id" in str(data["response_metadata"])
    too_long = [{"type": "actions", "elements": [button("approve", "v" * 2001)]}]
    data = await refused(client.chat_postMessage(channel="changes", text="x", blocks=too_long))
    assert "/blocks/0/elements/0/value" in str(data["response_metadata"])


async def test_text_over_40000_characters_is_msg_too_long(api: tuple[Emulator, AsyncWebClient]) -> None:
    _, client = api
    assert (await refused(client.chat_postMessage(channel="changes", text="x" * 40001)))["error"] == "msg_too_long"


async def test_unknown_channel_missing_text_and_bad_token(api: tuple[Emulator, AsyncWebClient]) -> None:
    emulator, client = api
    assert (await refused(client.chat_postMessage(channel="#nowhere", text="x")))["error"] == "channel_not_found"
    with pytest.warns(UserWarning, match="top-level `text`"):
        assert (await refused(client.chat_postMessage(channel="changes")))["error"] == "no_text"
    wrong = web_client("xoxb-wrong", f"{emulator.base_url}/api/")
    assert (await refused(wrong.auth_test()))["error"] == "invalid_auth"
    anonymous = AsyncWebClient(token=None, base_url=f"{emulator.base_url}/api/")
    assert (await refused(anonymous.auth_test()))["error"] == "not_authed"


async def test_trigger_ids_expire_after_three_seconds_and_work_once(api: tuple[Emulator, AsyncWebClient]) -> None:
    emulator, client = api
    now = [1000.0]
    emulator.ws.clock = lambda: now[0]
    modal = {"type": "modal", "title": {"type": "plain_text", "text": "Propose"}, "blocks": [section("hi")]}
    fresh = emulator.ws.issue_trigger("U0000ALICE")
    opened = await client.views_open(trigger_id=fresh, view=modal)
    assert opened["view"]["id"] in emulator.ws.views
    assert (await refused(client.views_open(trigger_id=fresh, view=modal)))["error"] == "exchanged_trigger_id"
    late = emulator.ws.issue_trigger("U0000ALICE")
    now[0] += 3.5
    assert (await refused(client.views_open(trigger_id=late, view=modal)))["error"] == "expired_trigger_id"
    assert (await refused(client.views_open(trigger_id="made-up", view=modal)))["error"] == "invalid_trigger_id"


async def test_views_update_checks_hash_and_modal_limits(api: tuple[Emulator, AsyncWebClient]) -> None:
    emulator, client = api
    modal = {"type": "modal", "title": {"type": "plain_text", "text": "Propose"}, "blocks": [section("hi")]}
    opened = await client.views_open(trigger_id=emulator.ws.issue_trigger("U0000ALICE"), view=modal)
    view_id, view_hash = opened["view"]["id"], opened["view"]["hash"]
    await client.views_update(view_id=view_id, hash=view_hash, view={**modal, "blocks": [section("updated")]})
    data = await refused(client.views_update(view_id=view_id, hash=view_hash, view=modal))
    assert data["error"] == "hash_conflict"
    long_title = {**modal, "title": {"type": "plain_text", "text": "x" * 25}}
    data = await refused(client.views_open(trigger_id=emulator.ws.issue_trigger("U0000ALICE"), view=long_title))
    assert data["error"] == "invalid_arguments"


async def test_dm_users_and_usergroups(api: tuple[Emulator, AsyncWebClient]) -> None:
    emulator, client = api
    dm = await client.conversations_open(users="U0000ALICE")
    await client.chat_postMessage(channel=dm["channel"]["id"], text="psst")
    assert emulator.ws.channels[dm["channel"]["id"]].is_im
    assert (await client.users_info(user="U00000BOB"))["user"]["name"] == "bob"
    assert (await refused(client.users_info(user="UNOBODY")))["error"] == "user_not_found"
    [group] = [g for g in emulator.ws.usergroups.values() if g["handle"] == "analytics-team"]
    members = await client.usergroups_users_list(usergroup=group["id"])
    assert members["users"] == ["U00000BOB", "U0000CAROL"]
    assert (await refused(client.usergroups_users_list(usergroup="SNOPE")))["error"] == "no_such_subteam"


async def test_ephemeral_needs_a_member(api: tuple[Emulator, AsyncWebClient]) -> None:
    _, client = api
    await client.chat_postEphemeral(channel="orders-pipeline", user="U0000ALICE", text="only you")
    assert (await refused(client.chat_postEphemeral(channel="orders-pipeline", user="U0000CAROL", text="x")))["error"] == "user_not_in_channel"


async def test_429_is_retried_after_retry_after(api: tuple[Emulator, AsyncWebClient]) -> None:
    emulator, client = api
    emulator.ws.rate_limit("chat.postMessage", times=2, retry_after=1)
    posted = await client.chat_postMessage(channel="changes", text="eventually")
    assert posted["ok"]
    assert [c.status for c in emulator.ws.calls_to("chat.postMessage")] == [429, 429, 200]


async def test_the_bot_gives_up_on_a_refused_message_audits_it_and_keeps_serving(slack: SlackHarness, caplog: pytest.LogCaptureFixture) -> None:
    oversized = Reply("too much", [section(f"line {i}") for i in range(60)])
    with caplog.at_level(logging.ERROR, logger="bot.services.outbox"):
        async with slack.bot.db.session() as session:
            kind, key, payload = message_row("changes", oversized)
            slack.bot.outbox.add(session, kind, key, payload)
            await session.commit()
        slack.bot.outbox.wake()
        await slack.bot.idle()
    assert "invalid_blocks" in caplog.text and "no more than 50 items allowed" in caplog.text
    assert slack.ws.channel_messages("changes") == []
    async with slack.bot.db.session() as session:
        entries = (await session.exec(select(AuditEntry).where(AuditEntry.action == "undeliverable"))).all()
    assert len(entries) == 1 and "invalid_blocks" in entries[0].detail["reason"]
    delivery = await slack.driver.command("/schema help", user="U0000ALICE", channel="changes")
    assert delivery.status == 200 and "`/schema help`" in slack.ws.ephemerals_for("U0000ALICE")[0].text