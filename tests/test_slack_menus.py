"""Menus of subjects and teams past Slack's 100 options: the form asks the bot as one types (block_suggestion, over
real HTTP with real signatures), a subject past the hundredth can be chosen and proposed, and one named in the command
is shown chosen."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.domain.lineage.catalog import read_catalog
from bot.emulator.limits import validate_suggestions
from bot.emulator.server import SlackError
from bot.slack import ids
from bot.slack.choices import MENU_MAX, matching, menu, option
from tests.conftest import SlackHarness
from tests.test_proposals_slack import ALICE, V1, card_message, with_field

SUBJECTS = [f"topic-{i:03d}-value" for i in range(130)]


async def many_subjects(slack: SlackHarness) -> None:
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    catalog: dict[str, Any] = {
        "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE], "self_approval": True}},
        "subjects": {name: {"owner": "orders-team", "channel": "#orders-pipeline"} for name in SUBJECTS},
    }
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    from bot.domain.avro.parse import parse

    await slack.bot.registry.record("topic-120-value", parse(V1))


def test_a_menu_lists_up_to_a_hundred_and_asks_past_that() -> None:
    few = menu("subject", SUBJECTS[:MENU_MAX], chosen=["topic-099-value"])
    assert few["type"] == "static_select" and len(few["options"]) == 100 and few["initial_option"]["value"] == "topic-099-value"
    many = menu("subject", SUBJECTS, chosen=["topic-120-value"])
    assert many["type"] == "external_select" and "options" not in many and many["initial_option"]["value"] == "topic-120-value"
    assert menu("subjects", SUBJECTS, multi=True)["type"] == "multi_external_select"
    assert [o["value"] for o in matching(SUBJECTS + ["my-topic-1-value"], "TOPIC-1")][:2] == ["topic-100-value", "topic-101-value"]
    assert matching(SUBJECTS + ["my-topic-1-value"], "topic-1")[-1]["value"] == "my-topic-1-value"  # holds it: after those that start with it
    assert len(matching(SUBJECTS, "")) == MENU_MAX and matching(SUBJECTS, "nothing like it") == []
    assert validate_suggestions({"options": matching(SUBJECTS, "")}) == []
    assert validate_suggestions({"options": [{"text": {"type": "plain_text", "text": "x"}, "value": "x"}] * 101}) == [
        "[ERROR] no more than 100 items allowed [json-pointer:/options]"]


async def test_a_subject_past_the_hundredth_is_found_by_typing_and_proposed(slack: SlackHarness) -> None:
    await many_subjects(slack)
    await slack.driver.command("/schema propose topic-120-value", user=ALICE, channel="orders-pipeline")  # once: StopIteration
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.PROPOSE_VIEW), None))
    select = form.view["blocks"][0]["element"]
    assert select["type"] == "external_select" and select["initial_option"]["value"] == "topic-120-value"
    offered = await slack.driver.suggest(form, ids.SUBJECT_ACTION, "12", user=ALICE)
    assert [o["value"] for o in offered] == ["topic-012-value", "topic-112-value"] + [f"topic-{i}-value" for i in range(120, 130)]
    assert len(await slack.driver.suggest(form, ids.SUBJECT_ACTION, "", user=ALICE)) == 100  # before anything is typed
    values = {ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "external_select", "selected_option": offered[2]}},
              ids.SCHEMA_BLOCK: {ids.SCHEMA_ACTION: {"type": "plain_text_input", "value": json.dumps(
                  with_field(V1, {"name": "extra", "type": ["null", "string"], "default": None}))}}}
    answer = await slack.driver.submit(form.id, values, user=ALICE)
    assert answer.status == 200 and not (answer.json or {}).get("errors")
    await card_message(slack)
    assert (await slack.bot.proposals.view(1)).subject.name == "topic-120-value"


async def test_the_booking_form_asks_for_subjects_past_a_hundred(slack: SlackHarness) -> None:
    await many_subjects(slack)
    await slack.driver.command("/calendar add", user=ALICE, channel="orders-pipeline")
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.CALENDAR_ADD_VIEW), None))
    kinds = {b["element"]["action_id"]: b["element"]["type"] for b in form.view["blocks"] if b.get("type") == "input"}
    assert (kinds[ids.SUBJECTS_ACTION], kinds[ids.OWNER_ACTION]) == ("multi_external_select", "static_select")
    assert [o["value"] for o in await slack.driver.suggest(form, ids.SUBJECTS_ACTION, "topic-07", user=ALICE)] == [
        f"topic-07{i}-value" for i in range(10)]
    with pytest.raises(LookupError):  # a menu that lists its options asks the app nothing
        await slack.driver.suggest(form, ids.OWNER_ACTION, "orders", user=ALICE)


async def test_an_answer_past_slacks_limits_is_caught(slack: SlackHarness, monkeypatch: pytest.MonkeyPatch) -> None:
    """The emulator holds the bot to Slack's limit on what a menu is offered (Slack would show nothing)."""
    await many_subjects(slack)
    await slack.driver.command("/schema propose", user=ALICE, channel="orders-pipeline")
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.PROPOSE_VIEW), None))
    monkeypatch.setattr("bot.slack.choices.MENU_MAX", 150)
    with pytest.raises(SlackError) as refused:
        await slack.driver.suggest(form, ids.SUBJECT_ACTION, "", user=ALICE)
    assert refused.value.messages == ["[ERROR] no more than 100 items allowed [json-pointer:/options]"]


LONG_KEY, LONG_VALUE = "orders." + "x" * 230 + "-key", "orders." + "x" * 230 + "-value"  # Kafka allows 249 characters


def test_a_long_name_is_shown_by_its_start_and_end_and_told_by_a_digest() -> None:
    key, value = option(LONG_KEY), option(LONG_VALUE)
    assert key["text"]["text"] != value["text"]["text"] and value["text"]["text"].endswith("xxx-value")
    assert len(value["text"]["text"]) == 75 and value["text"]["text"].startswith("orders.xxx") and "…" in value["text"]["text"]
    assert len(value["value"]) <= 150 and key["value"] != value["value"]
    assert option("orders-value") == {"text": {"type": "plain_text", "text": "orders-value"}, "value": "orders-value"}
    assert validate_suggestions({"options": [key, value]}) == []


async def test_a_subject_longer_than_an_option_value_is_proposed_and_booked(slack: SlackHarness) -> None:
    from bot.domain.avro.parse import parse

    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    catalog: dict[str, Any] = {
        "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE], "self_approval": True}},
        "subjects": {name: {"owner": "orders-team", "channel": "#orders-pipeline"} for name in (LONG_KEY, LONG_VALUE, "orders-value")},
    }
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    await slack.bot.registry.record(LONG_VALUE, parse(V1))
    await slack.driver.command("/schema propose", user=ALICE, channel="orders-pipeline")
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.PROPOSE_VIEW), None))
    offered = {o["text"]["text"]: o for o in form.view["blocks"][0]["element"]["options"]}
    [long_value] = [o for text, o in offered.items() if text.endswith("-value") and text != "orders-value"]
    values = {ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "static_select", "selected_option": long_value}},
              ids.SCHEMA_BLOCK: {ids.SCHEMA_ACTION: {"type": "plain_text_input", "value": json.dumps(
                  with_field(V1, {"name": "extra", "type": ["null", "string"], "default": None}))}}}
    answer = await slack.driver.submit(form.id, values, user=ALICE)
    assert answer.status == 200 and not (answer.json or {}).get("errors")
    await card_message(slack)
    assert (await slack.bot.proposals.view(1)).subject.name == LONG_VALUE

    await slack.driver.command("/calendar add", user=ALICE, channel="orders-pipeline")
    booking = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.CALENDAR_ADD_VIEW), None))
    [menu_block] = [b for b in booking.view["blocks"] if b.get("block_id") == ids.SUBJECTS_BLOCK]
    picked = [o for o in menu_block["element"]["options"] if o["text"]["text"].endswith("-key")]
    start = 1_800_000_000
    booked = await slack.driver.submit(booking.id, {
        ids.KIND_BLOCK: {ids.KIND_ACTION: {"type": "static_select", "selected_option": {"value": "maintenance"}}},
        ids.TITLE_BLOCK: {ids.TITLE_ACTION: {"type": "plain_text_input", "value": "compaction"}},
        ids.START_BLOCK: {ids.START_ACTION: {"type": "datetimepicker", "selected_date_time": start}},
        ids.END_BLOCK: {ids.END_ACTION: {"type": "datetimepicker", "selected_date_time": start + 3600}},
        ids.OWNER_BLOCK: {ids.OWNER_ACTION: {"type": "static_select", "selected_option": {"value": "orders-team"}}},
        ids.SUBJECTS_BLOCK: {ids.SUBJECTS_ACTION: {"type": "multi_static_select", "selected_options": picked}}}, user=ALICE)
    assert booked.json["response_action"] == "update", booked.json
    entry = await slack.bot.calendar.entry(1)
    assert entry is not None and entry.scope["subjects"] == [LONG_KEY]
    await slack.bot.idle()
