"""The approval workflow end to end, the way people use it: slash command, modal, card, buttons, DMs, clock."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, timedelta
from typing import Any

import pytest
from sqlmodel import select

from bot.domain.lineage.catalog import read_catalog
from bot.emulator.workspace import Message
from bot.runtime import Bot
from bot.services.proposals import ProposalError
from bot.slack import ids
from bot.store.models import OutboxMessage
from tests.conftest import SlackHarness, bot_config

ALICE, BOB, CAROL = "U0000ALICE", "U00000BOB", "U0000CAROL"
V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "string"}, {"name": "price", "type": "double"},
    {"name": "note", "type": ["null", "string"], "default": None}]}


def with_field(schema: dict[str, Any], field: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "fields": [*schema["fields"], field]}


def retyped(schema: dict[str, Any], name: str, new_type: Any) -> dict[str, Any]:
    return {**schema, "fields": [{**f, "type": new_type} if f["name"] == name else f for f in schema["fields"]]}


async def setup_catalog(slack: SlackHarness, *, second_team_job: bool = False, jobs: int = 1) -> None:
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    catalog: dict[str, Any] = {
        "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE], "self_approval": True},
                  "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB], "oncall": [BOB]}},
        "subjects": {"orders-value": {"owner": "orders-team", "channel": "#orders-pipeline"}},
        "datasets": [{"name": f"dwd_orders_{i}", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["order_id", "amount"]}
                     for i in range(jobs)],
        "jobs": [{"name": f"enrich-{i}", "owner": "analytics-team", "inputs": ["orders-value"], "outputs": [f"dwd_orders_{i}"],
                  "mappings": {f"dwd_orders_{i}.amount": ["orders-value.price"], f"dwd_orders_{i}.order_id": ["orders-value.id"]}}
                 for i in range(jobs)],
    }
    if second_team_job:
        catalog["datasets"].append({"name": "fraud_scores", "namespace": "redis://r", "owner": "orders-team", "fields": ["score"]})
        catalog["jobs"].append({"name": "fraud", "owner": "orders-team", "inputs": ["orders-value"], "outputs": ["fraud_scores"],
                                "mappings": {"fraud_scores.score": ["orders-value.price"]}})
    await load(slack, catalog, V1)


async def load(slack: SlackHarness, catalog: dict[str, Any], schema: dict[str, Any]) -> None:
    """Load ``catalog`` (it must be valid) and store ``schema`` as orders-value's first version."""
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    from bot.domain.avro.parse import parse

    await slack.bot.registry.record("orders-value", parse(schema))


async def propose(slack: SlackHarness, schema: dict[str, Any] | str, *, user: str = ALICE, notes: str = "") -> Any:
    """Type /schema propose, fill the modal, submit; returns the submission's delivery."""
    opened = len(slack.ws.calls_to("views.open"))
    await slack.driver.command("/schema propose orders-value", user=user, channel="orders-pipeline")
    await slack.ws.wait_for(lambda: len([c for c in slack.ws.calls_to("views.open") if c.ok]) > opened)
    view = [v for v in slack.ws.views.values() if v.user == user and v.open and v.view.get("callback_id") == ids.PROPOSE_VIEW][-1]
    values = {
        ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "static_select", "selected_option": {"value": "orders-value"}}},
        ids.SCHEMA_BLOCK: {ids.SCHEMA_ACTION: {"type": "plain_text_input", "value": schema if isinstance(schema, str) else json.dumps(schema)}},
        ids.WINDOW_BLOCK: {ids.WINDOW_ACTION: {"type": "datetimepicker", "selected_date_time": 1796378400}},
        ids.DURATION_BLOCK: {ids.DURATION_ACTION: {"type": "number_input", "value": "2"}},
        ids.NOTES_BLOCK: {ids.NOTES_ACTION: {"type": "plain_text_input", "value": notes}},
    }
    return await slack.driver.submit(view.id, values, user=user)


async def card_message(slack: SlackHarness, proposal: int = 1) -> Message:
    """The card in the changes channel, once the bot has noted where it is (as a person would see it)."""
    message = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("schema-changes")
                                                    if f"#{proposal} ·" in m.text or f"#{proposal} " in m.text), None))
    for _ in range(100):
        if (await slack.bot.proposals.view(proposal)).proposal.card_ts:
            break
        await asyncio.sleep(0.05)
    return message


async def state_of(slack: SlackHarness, proposal: int = 1) -> str:
    return (await slack.bot.proposals.view(proposal)).state.value


def thread(slack: SlackHarness, card: Message) -> list[str]:
    return [m.text for m in slack.ws.channel_messages("schema-changes", thread_ts=card.ts)]


async def test_propose_card_dms_approval_and_registration(slack: SlackHarness) -> None:
    await setup_catalog(slack, second_team_job=True)
    submitted = await propose(slack, retyped(V1, "price", "string"), notes="dual-write price as text for a week")
    assert submitted.status == 200 and submitted.json is None
    card = await card_message(slack)
    text = json.dumps(card.blocks)
    assert "BREAKING" in card.text and "TYPE_CHANGED" in text and "Order.price" in text and "dual-write" in text
    assert "analytics-team" in text and "orders-team" in text and "every consumer of the topic" in text
    assert [e["action_id"] for e in card.blocks[-2]["elements"]] == [ids.APPROVE, ids.REJECT, ids.REQUEST_CHANGES, ids.WITHDRAW,
                                                                   ids.TRANSITION_OFFER]  # breaking: it may ship as a transition instead
    mirror = (await slack.ws.wait_for(lambda: slack.ws.channel_messages("orders-pipeline")))[0]
    assert "Schema change #1" in mirror.text and "archives" in json.dumps(mirror.blocks)
    for user in (ALICE, BOB, CAROL):
        assert await slack.ws.wait_for(lambda u=user: slack.ws.channel_messages(slack.ws.open_dm(u)))

    await slack.driver.click(card, ids.APPROVE, user=BOB)
    await slack.ws.wait_for(lambda: any("approved for analytics-team" in t for t in thread(slack, card)))
    assert await state_of(slack) == "pending"
    dm = [m for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)) if m.blocks and m.blocks[-2].get("type") == "actions"][0]
    await slack.driver.click(dm, ids.APPROVE, user=ALICE)
    await slack.ws.wait_for(lambda: "approved" in (slack.ws.find_message(card.channel, card.ts) or card).text)
    view = await slack.bot.proposals.view(1)
    assert view.state.value == "approved" and view.proposal.version == 2
    assert [v.number for v in await slack.bot.registry.history("orders-value")] == [1, 2]
    assert await slack.ws.wait_for(lambda: any("was approved and recorded as version 2" in m.text
                                               for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE))))
    updated = slack.ws.find_message(card.channel, card.ts)
    assert updated is not None and not any(b.get("type") == "actions" for b in updated.blocks)
    await slack.ws.wait_for(lambda: "approved" in (slack.ws.find_message(mirror.channel, mirror.ts) or mirror).text)  # its own row, after the card's
    mirrored = slack.ws.find_message(mirror.channel, mirror.ts)
    assert mirrored is not None and mirrored.edited


async def test_invalid_schema_is_shown_in_the_modal_and_nothing_is_stored(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    delivery = await propose(slack, '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "Nope"}]}')
    assert delivery.json["response_action"] == "errors"
    assert 'unknown type "Nope"' in delivery.json["errors"][ids.SCHEMA_BLOCK]
    assert (await propose(slack, V1)).json["errors"][ids.SCHEMA_BLOCK].startswith("no change")
    assert await slack.bot.proposals.listing() == []
    assert slack.ws.channel_messages("schema-changes") == []


async def test_reject_with_a_reason_blocks_the_proposal(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.driver.click(card, ids.REJECT, user=BOB)
    modal = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.REASON_VIEW), None))
    empty = await slack.driver.submit(modal.id, {ids.REASON_BLOCK: {ids.REASON_ACTION: {"type": "plain_text_input", "value": " "}}}, user=BOB)
    assert empty.json["response_action"] == "errors"
    await slack.driver.submit(modal.id, {ids.REASON_BLOCK: {ids.REASON_ACTION: {"type": "plain_text_input", "value": "our dashboards sum price"}}}, user=BOB)
    await slack.ws.wait_for(lambda: any("rejected for analytics-team: our dashboards sum price" in t for t in thread(slack, card)))
    assert await state_of(slack) == "rejected"
    await slack.ws.wait_for(lambda: "our dashboards sum price" in json.dumps(slack.ws.find_message(card.channel, card.ts).blocks)  # type: ignore[union-attr]
                            or None)  # the card's own lane: it may follow the note


async def test_request_changes_then_revise_in_slack_and_through_the_api(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.driver.click(card, ids.REQUEST_CHANGES, user=CAROL)
    modal = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.REASON_VIEW), None))
    await slack.driver.submit(modal.id, {ids.REASON_BLOCK: {ids.REASON_ACTION: {"type": "plain_text_input", "value": "keep price, add price_text"}}}, user=CAROL)
    await slack.ws.wait_for(lambda: any("requested changes" in t for t in thread(slack, card)))
    assert await state_of(slack) == "changes_requested"
    updated = await slack.ws.wait_for(lambda: next((m for m in [slack.ws.find_message(card.channel, card.ts)]
                                                    if m is not None and m.blocks[-2].get("elements", [{}])[0].get("action_id") == ids.REVISE), None))
    await slack.driver.click(updated, ids.REVISE, user=CAROL)
    await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(CAROL) if "can revise it" in e.text])
    await slack.driver.click(updated, ids.REVISE, user=ALICE)
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view["title"]["text"] == "Revise #1"), None))
    assert '"price", "type": "string"' in form.view["blocks"][1]["element"]["initial_value"]
    values = {ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "static_select", "selected_option": {"value": "orders-value"}}},
              ids.SCHEMA_BLOCK: {ids.SCHEMA_ACTION: {"type": "plain_text_input", "value": json.dumps(
                  with_field(V1, {"name": "price_text", "type": ["null", "string"], "default": None}))}}}
    await slack.driver.submit(form.id, values, user=ALICE)
    revised_card = await card_message(slack, 2)
    assert "Revises #1" in json.dumps(revised_card.blocks)
    revised = await slack.bot.proposals.view(2)
    assert revised.proposal.revision_of == 1 and revised.state.value == "approved" and revised.proposal.level == "safe"
    third = await slack.bot.proposals.propose("orders-value", json.dumps(with_field(V1, {"name": "x", "type": "int", "default": 0})),
                                              ALICE, revision_of=1, surface="api")
    assert third.proposal.revision_of == 1
    await slack.bot.idle()


async def test_a_revision_keeps_a_schema_and_notes_longer_than_the_form_holds(slack: SlackHarness) -> None:
    """Slack's text box holds 3,000 characters: a longer schema (uploaded, or sent through the API) is not cut to fit
    when its proposal is revised, and the revision keeps it whole unless another is given."""
    await setup_catalog(slack)
    wide = retyped(V1, "price", "string")
    for index in range(60):
        wide = with_field(wide, {"name": f"note_{index:02d}", "type": ["null", "string"], "default": None, "doc": "kept as it was"})
    schema, notes = json.dumps(wide), "Dual-write for a week. " * 100
    assert len(schema) > 3000 and len(notes) > 2000
    await slack.bot.proposals.propose("orders-value", schema, ALICE, notes=notes, surface="api")
    card = await card_message(slack)
    await slack.driver.click(card, ids.REQUEST_CHANGES, user=CAROL)
    modal = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.REASON_VIEW), None))
    await slack.driver.submit(modal.id, {ids.REASON_BLOCK: {ids.REASON_ACTION: {"type": "plain_text_input", "value": "plan a window"}}}, user=CAROL)
    updated = await slack.ws.wait_for(lambda: next((m for m in [slack.ws.find_message(card.channel, card.ts)]
                                                    if m is not None and m.blocks[-2].get("elements", [{}])[0].get("action_id") == ids.REVISE), None))
    await slack.driver.click(updated, ids.REVISE, user=ALICE)
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view["title"]["text"] == "Revise #1"), None))
    schema_block, notes_block = form.view["blocks"][1], form.view["blocks"][-1]
    assert "initial_value" not in schema_block["element"] and "initial_value" not in notes_block["element"]
    assert f"#1's schema ({len(schema):,} characters, more than this box holds) is kept" in schema_block["hint"]["text"]
    assert "#1's notes" in notes_block["hint"]["text"]
    values = {ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "static_select", "selected_option": {"value": "orders-value"}}},
              ids.DURATION_BLOCK: {ids.DURATION_ACTION: {"type": "number_input", "value": "2"}}}
    answer = await slack.driver.submit(form.id, values, user=ALICE)
    assert answer.json is None or answer.json.get("response_action") != "errors", answer.json
    await card_message(slack, 2)
    first, revised = await slack.bot.proposals.view(1), await slack.bot.proposals.view(2)
    assert (revised.proposal.revision_of, revised.proposal.schema_text, revised.proposal.notes) == (1, schema, notes)
    assert revised.proposal.level == first.proposal.level
    await slack.bot.idle()


async def test_only_members_may_act_and_a_refusal_changes_nothing(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.driver.click(card, ids.APPROVE, user=ALICE)
    refusal = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "only members" in e.text])
    assert "analytics-team" in refusal[0].text
    await slack.driver.click(card, ids.WITHDRAW, user=BOB)
    await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "can withdraw" in e.text])
    assert await state_of(slack) == "pending"
    assert (await slack.bot.proposals.view(1)).acknowledgements == []


async def test_double_clicks_retries_and_concurrent_members_record_one_decision(slack: SlackHarness) -> None:
    await setup_catalog(slack, second_team_job=True)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    first = await slack.driver.click(card, ids.APPROVE, user=BOB)
    await slack.driver.send(first.body, "application/x-www-form-urlencoded", retry_num=1)
    await asyncio.gather(slack.driver.click(card, ids.APPROVE, user=CAROL), slack.driver.click(card, ids.APPROVE, user=BOB))
    await slack.ws.wait_for(lambda: len([e for e in slack.ws.ephemerals if "already decided" in e.text]) >= 1)
    view = await slack.bot.proposals.view(1)
    assert [a.team for a in view.acknowledgements] == ["analytics-team"]
    assert view.state.value == "pending"


async def test_safe_change_is_approved_at_once_and_announced(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await propose(slack, with_field(V1, {"name": "channel", "type": "string", "default": "web"}))
    card = await card_message(slack)
    assert "SAFE" in card.text and not any(b.get("type") == "actions" for b in card.blocks)
    await slack.ws.wait_for(lambda: any("Approved at once" in t for t in thread(slack, card)))
    assert [v.number for v in await slack.bot.registry.history("orders-value")] == [1, 2]


async def test_a_change_inside_a_struct_mapped_whole_says_it_is_answered_for_that_struct(slack: SlackHarness) -> None:
    nested = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "string"},
        {"name": "detail", "type": {"type": "record", "name": "Detail", "fields": [{"name": "price", "type": "double"}]}}]}
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    catalog: dict[str, Any] = {
        "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE]},
                  "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB], "oncall": [BOB]}},
        "subjects": {"orders-value": {"owner": "orders-team", "channel": "#orders-pipeline"}},
        "datasets": [{"name": "dwd", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["detail_json"]}],
        "jobs": [{"name": "flatten", "owner": "analytics-team", "inputs": ["orders-value"], "outputs": ["dwd"],
                  "mappings": {"dwd.detail_json": ["orders-value.detail"]}}]}
    await load(slack, catalog, nested)
    added = [{"name": f"colour{i}", "type": "string", "default": ""} for i in range(7)]
    await propose(slack, {**nested, "fields": [nested["fields"][0], {"name": "detail", "type": {
        "type": "record", "name": "Detail", "fields": [{"name": "price", "type": "double"}, *added]}}]})
    impact = next(b["text"]["text"] for b in (await card_message(slack)).blocks if b.get("text", {}).get("text", "").startswith("*Impact*"))
    lines = impact.splitlines()
    assert lines[1] == "1 field(s) in 1 dataset(s) through 1 job(s)"
    assert lines[2:8] == [f"_`detail.colour{i}` is not listed for `orders`: answered for `detail`, which holds it_" for i in range(5)] + [
        "_… and 2 more, each answered for the struct that holds it_"]
    assert lines[8].startswith("• `dwd.detail_json` ← orders.detail")


async def test_reminders_then_expiry_with_escalation_to_oncall(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.bot.idle()
    assert await slack.bot.proposals.sweep() == 0
    slack.clock.advance(hours=12, minutes=1)
    assert await slack.bot.proposals.sweep() == 1
    assert await slack.bot.proposals.sweep() == 0
    slack.clock.advance(hours=9, minutes=36)
    assert await slack.bot.proposals.sweep() == 1
    await slack.ws.wait_for(lambda: len([t for t in thread(slack, card) if "Reminder" in t]) == 2)
    await slack.bot.idle()  # the reminder's delivery done: a sweep skips a proposal row another transaction holds (another replica's)
    slack.clock.advance(hours=3)
    assert await slack.bot.proposals.sweep() == 1
    assert await state_of(slack) == "expired"
    await slack.ws.wait_for(lambda: any("escalated to oncall: <@U00000BOB>" in t for t in thread(slack, card)))
    await slack.ws.wait_for(lambda: any("which you are oncall for" in m.text  # its own lane: it may come just after the note
                                        for m in slack.ws.channel_messages(slack.ws.open_dm(BOB))))
    assert await slack.bot.proposals.sweep() == 0


async def test_a_restart_between_proposal_and_deadline_loses_nothing(slack: SlackHarness, migrated_url: str) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.bot.idle()
    await slack.bot.stop()
    restarted = Bot(bot_config(slack.emulator, migrated_url), slack.clock)
    await restarted.start(0)
    try:
        slack.clock.advance(hours=25)
        assert await restarted.proposals.sweep() == 1
        assert (await restarted.proposals.view(1)).state.value == "expired"
        await slack.ws.wait_for(lambda: any("Expired" in t for t in thread(slack, card)))
        await restarted.idle()
    finally:
        await restarted.stop()


async def test_two_bots_on_one_database_send_each_reminder_once(slack: SlackHarness, migrated_url: str) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.bot.idle()
    other = Bot(bot_config(slack.emulator, migrated_url), slack.clock)
    await other.start(0)
    try:
        slack.clock.advance(hours=13)
        sent = await asyncio.gather(*(bot.proposals.sweep() for bot in (slack.bot, other, slack.bot, other)))
        assert sum(sent) == 1
        await slack.ws.wait_for(lambda: any("Reminder" in t for t in thread(slack, card)))
        await asyncio.gather(slack.bot.idle(), other.idle())
        assert len([t for t in thread(slack, card) if "Reminder" in t]) == 1
    finally:
        await other.stop()


async def test_status_list_audit_and_home(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.driver.command("/schema withdraw 1 2", user=ALICE, channel="changes")  # one at a time: nothing is withdrawn
    refused = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "Usage: `/schema withdraw ID`" in e.text])
    assert "one at a time); nothing changed" in refused[0].text and await state_of(slack) == "pending"
    await slack.driver.click(card, ids.APPROVE, user=BOB)
    await slack.ws.wait_for(lambda: any("approved for" in t for t in thread(slack, card)))
    await slack.driver.command("/schema status 1", user=CAROL, channel="changes")
    await slack.driver.command("/schema list mine", user=ALICE, channel="changes")
    await slack.driver.command("/schema list mine please", user=ALICE, channel="changes")
    await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "`please` is not understood here" in e.text])
    await slack.driver.command("/schema audit 1", user=CAROL, channel="changes")
    await slack.driver.command("/schema status 99", user=CAROL, channel="changes")
    await slack.driver.command("/schema audit x", user=CAROL, channel="changes")
    carol = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(CAROL) if len(slack.ws.ephemerals_for(CAROL)) >= 4 else None)
    texts = [json.dumps(e.blocks) + e.text for e in carol]
    assert any("Schema change #1" in t for t in texts)
    assert any("Audit trail of #1" in t and "proposed" in t and "approve" in t and "via slack" in t for t in texts)
    assert any("there is no proposal #99" in t for t in texts) and any("Usage: `/schema audit ID`" in t for t in texts)
    mine = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "Your proposals" in e.text])
    assert "#1 orders-value" in mine[0].text
    await slack.driver.event({"type": "app_home_opened", "user": ALICE, "channel": "D1", "tab": "home"})
    home = await slack.ws.wait_for(lambda: slack.ws.home.get(ALICE))
    assert "Your proposals" in json.dumps(home.view) and "#1 orders-value" in json.dumps(home.view)


@pytest.mark.parametrize("jobs", [300])
async def test_huge_schema_and_impact_still_make_valid_messages(slack: SlackHarness, jobs: int) -> None:
    await setup_catalog(slack, jobs=jobs)
    wide = {**V1, "fields": [*V1["fields"], *({"name": f"f{i}", "type": "long"} for i in range(2000))]}
    view = await slack.bot.proposals.propose("orders-value", json.dumps(wide), ALICE, surface="api")
    assert view.proposal.level == "breaking" and len(view.proposal.findings) == 2000
    card = await card_message(slack)
    assert len(card.blocks) <= 50
    assert "and 1960 more" in json.dumps(card.blocks)
    assert not [c for c in slack.ws.calls if c.method == "chat.postMessage" and not c.ok]


async def test_proposals_over_the_http_api_and_the_cli(slack: SlackHarness) -> None:
    import os
    import subprocess
    import sys

    import aiohttp

    from tests.conftest import API_TOKEN

    await setup_catalog(slack)
    url = f"{slack.bot.url}/api/v1/proposals"
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {API_TOKEN}"}) as http:
        async with http.post(url, json={"subject": "orders-value", "schema": "{oops"}) as response:
            assert response.status == 400 and (await response.json())["field"] == "schema"
        async with http.post(url, json={"subject": "nobody", "schema": V1}) as response:
            assert response.status == 400 and "unknown subject 'nobody'" in (await response.json())["error"]
        async with aiohttp.ClientSession() as anonymous, anonymous.post(url, json={"subject": "orders-value", "schema": V1}) as response:
            assert response.status == 401
        assert await slack.bot.proposals.listing() == []
        async with http.post(url, json={"subject": "orders-value", "schema": retyped(V1, "price", "string"), "proposer": ALICE,
                                        "window_start": "2026-12-03T02:00:00Z", "window_hours": 2}) as response:
            created = await response.json()
            assert response.status == 201 and created["level"] == "breaking" and created["waiting"] == ["analytics-team"]
        async with http.get(f"{url}/{created['id']}") as response:
            shown = await response.json()
            assert (shown["state"], shown["waiting"], shown["acknowledgements"], shown["registration"]) == ("pending", ["analytics-team"], [], None)
        await slack.bot.proposals.withdraw(created["id"], ALICE)
        async with http.get(f"{url}/{created['id']}") as response:
            shown = await response.json()  # over: it waits for nobody, and says who never answered
            assert (shown["state"], shown["waiting"], shown["unanswered"]) == ("withdrawn", [], ["analytics-team"])
    await card_message(slack)
    schema_file = json.dumps(with_field(V1, {"name": "coupon", "type": ["null", "string"], "default": None}))
    env = {**os.environ, "CHANGEOPS_API_TOKEN": API_TOKEN, "CHANGEOPS_URL": slack.bot.url}
    result = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "propose", "orders-value", "-", "--proposer", ALICE],
                                     input=schema_file, capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("proposal #2 on orders-value: safe, approved")
    await slack.bot.idle()


async def test_approved_schemas_are_registered_in_the_schema_registry(slack: SlackHarness, schema_registry: Any,
                                                                      migrated_url: str) -> None:
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, SCHEMA_REGISTRY_URL=schema_registry.url), slack.clock)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    await setup_catalog(slack)
    await propose(slack, with_field(V1, {"name": "channel", "type": "string", "default": "web"}))
    card = await card_message(slack)
    await slack.bot.idle()  # the registration runs in its own lane; the card follows it
    view = await slack.bot.proposals.view(1)
    [registered] = await schema_registry.versions("orders-value")
    assert view.proposal.registry_id == registered["id"] and view.proposal.registry_version == registered["version"] == 1
    assert await schema_registry.compatibility("orders-value") == "FULL"  # the subject's mode, whatever the registry's default
    assert (f"Registered in the Schema Registry as version 1 (id {registered['id']})"
            in json.dumps(slack.ws.find_message(card.channel, card.ts).blocks))  # type: ignore[union-attr]
    assert [v.number for v in await slack.bot.registry.history("orders-value")] == [1, 2]
    # Around the bot, a version its history never saw: the next approved version is incompatible with it under FULL
    await schema_registry.set_compatibility("orders-value", "NONE")
    await schema_registry.register("orders-value", with_field(V1, {"name": "legacy", "type": "string"}))
    await propose(slack, with_field(V1, {"name": "coupon", "type": "string", "default": ""}))
    refused = await card_message(slack, 2)
    await slack.bot.idle()
    shown = json.dumps(slack.ws.find_message(refused.channel, refused.ts).blocks)  # type: ignore[union-attr]
    assert "Not registered in the Schema Registry after 1 attempt" in shown and "incompatible with an earlier version under FULL" in shown
    assert "HTTP 409" in shown and len(await schema_registry.versions("orders-value")) == 2
    assert (await slack.bot.proposals.view(2)).state.value == "approved"
    import aiohttp

    from tests.conftest import API_TOKEN

    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {API_TOKEN}"}) as http:
        for number, state in ((1, "registered"), (2, "failed")):  # the API says what the card says
            async with http.get(f"{slack.bot.url}/api/v1/proposals/{number}") as response:
                registration = (await response.json())["registration"]
            assert registration["state"] == state and (registration["id"] == registered["id"] if number == 1 else "HTTP 409" in registration["error"])


async def test_the_schema_can_be_uploaded_as_an_avsc_file(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await slack.driver.command("/schema propose orders-value", user=ALICE, channel="orders-pipeline")
    view = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.PROPOSE_VIEW), None))
    subject = {ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "static_select", "selected_option": {"value": "orders-value"}}}}

    def uploaded(name: str, content: bytes) -> dict[str, Any]:
        return {ids.FILE_BLOCK: {ids.FILE_ACTION: {"type": "file_input", "files": [slack.ws.upload(slack.emulator.base_url, ALICE, name, content)]}}}

    nothing = await slack.driver.submit(view.id, subject, user=ALICE)
    assert "Paste the new schema" in nothing.json["errors"][ids.SCHEMA_BLOCK]
    binary = await slack.driver.submit(view.id, {**subject, **uploaded("orders.avsc", b"\xff\xfe\x00")}, user=ALICE)
    assert "not UTF-8" in binary.json["errors"][ids.FILE_BLOCK]
    both = {**subject, **uploaded("orders.avsc", b"{}"), ids.SCHEMA_BLOCK: {ids.SCHEMA_ACTION: {"type": "plain_text_input", "value": "{}"}}}
    assert "not both" in (await slack.driver.submit(view.id, both, user=ALICE)).json["errors"][ids.FILE_BLOCK]
    schema = json.dumps(with_field(V1, {"name": "channel", "type": "string", "default": "web"}), indent=2).encode()
    done = await slack.driver.submit(view.id, {**subject, **uploaded("orders.avsc", schema)}, user=ALICE)
    assert done.status == 200 and done.json is None
    card = await card_message(slack)
    assert "SAFE" in card.text
    await slack.bot.idle()


async def test_a_list_cut_short_says_so(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    for index in range(21):  # 21 breaking changes wait on analytics-team (BOB)
        await slack.bot.proposals.propose("orders-value", json.dumps(retyped(with_field(V1, {"name": f"f{index}", "type": "int", "default": 0}),
                                                                            "price", "string")), ALICE, surface="api")
    await slack.driver.command("/schema list waiting", user=BOB, channel="changes")
    shown = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "Waiting on you" in e.text] or None)
    text = json.dumps(shown[0].blocks)
    assert "#21 " in text and "#2 " in text and "#1 " not in text and "and more than 20: the 20 newest are shown" in text
    await slack.driver.command("/schema list mine", user=CAROL, channel="changes")
    none = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(CAROL) if "Your proposals" in e.text] or None)
    assert "and more" not in json.dumps(none[0].blocks) + none[0].text
    await slack.bot.idle()


async def test_the_proposer_extends_the_deadline_once_by_one_window(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    before = (await slack.bot.proposals.view(1)).proposal.deadline
    assert before is not None
    await slack.driver.command("/schema extend 1 the analytics team is offsite", user=ALICE, channel="orders-pipeline")
    later = before.replace(tzinfo=UTC) + timedelta(hours=24)  # the subject's window (the default, 24 h)
    told = await slack.ws.wait_for(lambda: [e.text for e in slack.ws.ephemerals_for(ALICE) if "now ends" in e.text] or None)
    assert told == [f"#1 now ends {later:%Y-%m-%d %H:%M} UTC."]
    view = await slack.bot.proposals.view(1)
    assert view.proposal.deadline is not None and view.proposal.deadline.replace(tzinfo=UTC) == later and view.state.value == "pending"
    await slack.driver.command("/schema extend 1 once more", user=ALICE, channel="orders-pipeline")
    await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "was extended once already" in e.text] or None)
    assert (await slack.bot.proposals.view(1)).proposal.deadline == view.proposal.deadline
    await slack.ws.wait_for(lambda: any("extended the deadline once: the analytics team is offsite" in t for t in thread(slack, card)))
    await slack.bot.idle()


async def test_an_extension_after_every_reminder_reminds_again_before_its_new_deadline(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.bot.idle()
    slack.clock.advance(hours=22)  # past 50% and 90% of the first 24 hours: both reminders went
    assert await slack.bot.proposals.sweep() == 1 and await slack.bot.proposals.sweep() == 1
    await slack.bot.idle()
    await slack.bot.proposals.extend(1, ALICE, "the analytics team is offsite", surface="test")
    assert await slack.bot.proposals.sweep() == 0  # nothing due yet in the 48 hours
    slack.clock.advance(hours=2, minutes=1)  # 50% of the 48 hours
    assert await slack.bot.proposals.sweep() == 1
    await slack.bot.idle()
    slack.clock.advance(hours=19, minutes=12)  # 90% of them
    assert await slack.bot.proposals.sweep() == 1
    await slack.ws.wait_for(lambda: len([t for t in thread(slack, card) if "Reminder" in t]) == 4)
    await slack.bot.idle()
    slack.clock.advance(hours=5)
    assert await slack.bot.proposals.sweep() == 1 and await state_of(slack) == "expired"
    await slack.bot.idle()


async def test_an_extension_that_meets_a_reminder_going_out_changes_nothing_and_says_so(slack: SlackHarness,
                                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    await card_message(slack)
    await slack.bot.idle()
    proposals = slack.bot.proposals
    read = proposals.view

    async def read_then_remind(number: int) -> Any:  # the sweep sends a reminder between the extension's read and its write
        view = await read(number)
        monkeypatch.setattr(proposals, "view", read)
        slack.clock.advance(hours=12, minutes=1)
        assert await proposals.sweep() == 1
        return view

    monkeypatch.setattr(proposals, "view", read_then_remind)
    with pytest.raises(ProposalError, match="a reminder of #1 went out as you asked; nothing changed: extend it again"):
        await proposals.extend(1, ALICE, "offsite", surface="test")
    view = await proposals.view(1)
    assert not view.proposal.extended and view.proposal.reminders_sent == 1
    await proposals.extend(1, ALICE, "offsite", surface="test")  # asked again, it goes
    assert (await proposals.view(1)).proposal.extended
    await slack.bot.idle()


async def test_a_card_slack_will_not_post_is_told_to_the_proposer_and_posted_once_the_bot_is_invited(slack: SlackHarness) -> None:
    """The changes channel is private and the bot was never invited (Slack: channel_not_found): the proposer is told
    once, the teams still answer from their DMs, and the card appears on the next change once the bot is in."""
    from bot.emulator.workspace import BOT_USER_ID

    await setup_catalog(slack)
    changes = slack.ws.channels[str(slack.ws.channel_id("schema-changes"))]
    changes.is_private = True
    changes.members.discard(BOT_USER_ID)
    await propose(slack, retyped(V1, "price", "string"))
    told = await slack.ws.wait_for(lambda: [m.text for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE))
                                            if "could not be posted in #schema-changes" in m.text] or None)
    assert "channel_not_found" in told[0] and "sent it in their DMs" in told[0] and "Invite the bot" in told[0]
    dm = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages(slack.ws.open_dm(BOB))
                                               if m.blocks and m.blocks[-2].get("type") == "actions"), None))
    await slack.driver.command("/schema extend 1 12h", user=ALICE, channel="orders-pipeline")  # a change while the card cannot be posted
    for _ in range(200):  # its card row is given up too
        async with slack.bot.db.session() as session:
            if len((await session.exec(select(OutboxMessage).where(OutboxMessage.state == "failed", OutboxMessage.kind == "proposal.card"))).all()) >= 2:
                break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the second card row was not tried")
    changes.members.add(BOT_USER_ID)  # someone invites the bot
    await slack.driver.click(dm, ids.APPROVE, user=BOB)
    posted = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("schema-changes") if "Schema change #1" in m.text), None))
    assert await slack.ws.wait_for(lambda: "analytics-team" in json.dumps((slack.ws.find_message(posted.channel, posted.ts) or posted).blocks))
    await slack.bot.idle()
    assert len([m for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)) if "could not be posted" in m.text]) == 1  # told once


async def test_slack_failing_for_a_while_is_no_refusal_the_card_is_posted_once_and_nobody_told_it_failed(slack: SlackHarness) -> None:
    """Slack answering 500 or 429 is a pause, not a refusal: the card waits and is posted once Slack answers, and the
    proposer is not told it could not be posted (only a permanent refusal is told)."""
    await setup_catalog(slack)
    slack.ws.failing["chat.postMessage"] = 500
    await propose(slack, retyped(V1, "price", "string"))
    await slack.ws.wait_for(lambda: [c for c in slack.ws.calls_to("chat.postMessage") if c.status == 500] or None)
    slack.ws.failing["chat.postMessage"] = 429
    await slack.ws.wait_for(lambda: [c for c in slack.ws.calls_to("chat.postMessage") if c.status == 429] or None)
    del slack.ws.failing["chat.postMessage"]
    card = await card_message(slack)
    await slack.bot.idle()
    assert [m.ts for m in slack.ws.channel_messages("schema-changes") if "Schema change #1" in m.text] == [card.ts]  # once
    assert not [m for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)) if "could not be posted" in m.text]
    async with slack.bot.db.session() as session:
        failed = (await session.exec(select(OutboxMessage).where(OutboxMessage.state == "failed"))).all()
    assert not failed, [r.last_error for r in failed]


async def test_a_token_slack_refuses_for_a_while_loses_no_message(slack: SlackHarness, caplog: pytest.LogCaptureFixture) -> None:
    """A revoked or rotated token (invalid_auth) is the install's problem, not the message's: what the bot owes waits, is
    said once in the log as an error, and goes once the token works again; nothing is given up on."""
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.bot.idle()
    token, slack.ws.token = slack.ws.token, "xoxb-rotated-elsewhere"  # Slack no longer takes the bot's token
    await slack.driver.click(card, ids.APPROVE, user=BOB)
    await slack.ws.wait_for(lambda: len([c for c in slack.ws.calls if c.error == "invalid_auth"]) >= 2 or None)
    assert not (slack.ws.find_message(card.channel, card.ts) or card).edited
    slack.ws.token = token  # the token is fixed
    await slack.bot.idle()
    assert await state_of(slack) == "approved" and "approved" in (slack.ws.find_message(card.channel, card.ts) or card).text
    assert any("approved for analytics-team" in t for t in thread(slack, card))
    async with slack.bot.db.session() as session:
        failed = (await session.exec(select(OutboxMessage).where(OutboxMessage.state == "failed"))).all()
    assert not failed, [r.last_error for r in failed]
    refusals = [r for r in caplog.records if "Slack refused the bot's token" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].levelname == "ERROR"


async def test_a_card_someone_deleted_in_slack_is_posted_again_on_its_next_change_with_its_thread_notes(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    mirror = (await slack.ws.wait_for(lambda: slack.ws.channel_messages("orders-pipeline")))[0]
    await slack.delete(card.channel, card.ts)  # a channel admin tidies up; so does the subject channel's
    await slack.delete(mirror.channel, mirror.ts)

    dm = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages(slack.ws.open_dm(BOB))
                                               if m.blocks and m.blocks[-2].get("type") == "actions"), None))
    await slack.driver.click(dm, ids.APPROVE, user=BOB)  # the decision still counts, and the card shows it again
    again = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("schema-changes")
                                                  if "Schema change #1" in m.text and m.ts != card.ts), None))
    assert await slack.ws.wait_for(lambda: any("approved for analytics-team" in t for t in thread(slack, again)))
    assert "analytics-team" in json.dumps((slack.ws.find_message(again.channel, again.ts) or again).blocks)
    assert (await slack.bot.proposals.view(1)).proposal.card_ts == again.ts
    mirrored = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages("orders-pipeline") if "Schema change #1" in m.text), None))
    assert again.ts.replace(".", "") in json.dumps(mirrored.blocks)  # the subject channel's copy, posted again, links to the new card
    assert len([m for m in slack.ws.channel_messages("schema-changes") if "Schema change #1" in m.text]) == 1  # once, not once per edit
    async with slack.bot.db.session() as session:
        failed = (await session.exec(select(OutboxMessage).where(OutboxMessage.state == "failed"))).all()
    assert not failed, [r.last_error for r in failed]  # nothing given up
