"""A huge schema never stalls the bot: it is classified once, in a worker process, while other requests are
answered; the form is acknowledged within Slack's three seconds and shows the outcome when it is known."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest

from bot.services import proposals as proposals_module
from bot.slack import ids
from tests.conftest import SlackHarness
from tests.gated import gated_analyse
from tests.test_proposals_slack import ALICE, V1, card_message, setup_catalog


def huge_schema() -> bytes:
    fields = [*V1["fields"], *({"name": f"field_{i:05d}", "type": "long", "default": 0} for i in range(17_000))]
    text = json.dumps({**V1, "fields": fields}).encode()
    assert 800_000 < len(text) < 1_000_000
    return text


async def open_gated_form(slack: SlackHarness, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The propose form open, with classification waiting for ``folder/go``."""
    await setup_catalog(slack)
    monkeypatch.setattr(proposals_module, "analyse", functools.partial(gated_analyse, str(folder)))
    await slack.driver.command("/schema propose orders-value", user=ALICE, channel="orders-pipeline")
    return await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.PROPOSE_VIEW), None))


async def test_slash_commands_are_answered_while_a_1_mb_schema_is_classified(slack: SlackHarness, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    form = await open_gated_form(slack, tmp_path, monkeypatch)
    upload = slack.ws.upload(slack.emulator.base_url, ALICE, "orders.avsc", huge_schema())
    values = {ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "static_select", "selected_option": {"value": "orders-value"}}},
              ids.FILE_BLOCK: {ids.FILE_ACTION: {"type": "file_input", "files": [upload]}}}

    submitted = await slack.driver.submit(form.id, values, user=ALICE)  # the driver fails it if the ack took over 3 s
    assert submitted.json["response_action"] == "update" and "Checking" in submitted.json["view"]["title"]["text"]
    assert (tmp_path / "calls").read_text().count("\n") == 1  # classifying now, in the worker
    helped = await slack.driver.command("/schema help", user=ALICE, channel="changes")
    assert helped.status == 200 and "`/schema help`" in helped.text
    assert await slack.bot.proposals.listing() == []  # the classification has not finished: help was not kept waiting

    (tmp_path / "go").touch()
    card = await card_message(slack)
    assert "SAFE" in card.text and len(card.blocks) <= 50
    outcome = await slack.ws.wait_for(lambda: slack.ws.views[form.id].view["title"]["text"].startswith("Proposed #1") or None)
    assert outcome
    await slack.bot.idle()
    calls = (tmp_path / "calls").read_text().split()
    assert len(calls) == 1 and int(calls[0]) != os.getpid()  # classified once, in another process


async def test_a_slowly_classified_invalid_schema_is_shown_in_the_form(slack: SlackHarness, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    form = await open_gated_form(slack, tmp_path, monkeypatch)
    bad = json.dumps({**V1, "fields": [*V1["fields"], {"name": "x", "type": "Nope"}]})
    values = {ids.SUBJECT_BLOCK: {ids.SUBJECT_ACTION: {"type": "static_select", "selected_option": {"value": "orders-value"}}},
              ids.SCHEMA_BLOCK: {ids.SCHEMA_ACTION: {"type": "plain_text_input", "value": bad}}}
    submitted = await slack.driver.submit(form.id, values, user=ALICE)
    assert submitted.json["response_action"] == "update"
    (tmp_path / "go").touch()
    shown = await slack.ws.wait_for(lambda: slack.ws.views[form.id].view["title"]["text"] == "Not proposed" or None)
    assert shown and 'unknown type \\"Nope\\"' in json.dumps(slack.ws.views[form.id].view)
    await slack.bot.idle()
    assert await slack.bot.proposals.listing() == []
