"""Approvals people can audit, through the emulator on both databases: four eyes (the proposer's own approval never
counts, for any team or as a fallback approver, unless the team allows it), DM copies that follow the card, the card
that never waits behind the Schema Registry and never goes backwards, an emergency change through a freeze by two
oncall people, and a deploy gate that knows freezes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.domain.approvals import Decision
from bot.domain.avro.parse import parse
from bot.domain.calendar import Freeze, Scope
from bot.domain.lineage.catalog import read_catalog
from bot.emulator.render import as_text
from bot.emulator.workspace import Message
from bot.runtime import Bot
from bot.services import proposals as proposals_module
from bot.slack import ids
from tests.conftest import API_TOKEN, SlackHarness, bot_config
from tests.registry import Outage, RealRegistry
from tests.test_proposals_slack import ALICE, BOB, CAROL, V1, card_message, retyped, with_field

BREAKING = retyped(V1, "price", "string")


async def load(slack: SlackHarness, *, self_approval: bool = False, readers: bool = True, freezes: list[dict[str, Any]] | None = None,
               global_oncall: list[str] | None = None) -> None:
    """orders-team (alice, carol; both oncall) owns orders-value and reads it through enrich; analytics-team (bob) is asked nothing."""
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    catalog: dict[str, Any] = {
        "teams": {"orders-team": {"members": [ALICE, CAROL], "oncall": [ALICE, CAROL], "self_approval": self_approval},
                  "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB], "oncall": [BOB]}},
        "subjects": {"orders-value": {"owner": "orders-team", "channel": "#orders-pipeline"}},
        "datasets": [{"name": "dwd_orders", "namespace": "iceberg://lake", "owner": "orders-team", "fields": ["amount"]}] if readers else [],
        "jobs": [{"name": "enrich", "owner": "orders-team", "inputs": ["orders-value"], "outputs": ["dwd_orders"],
                  "mappings": {"dwd_orders.amount": ["orders-value.price"]}}] if readers else [],
        "freezes": freezes or [],
        **({"oncall": {"members": global_oncall}} if global_oncall else {}),
    }
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == [], problems
    await slack.bot.lineage.load_catalog(parsed)
    if not await slack.bot.registry.history("orders-value"):
        await slack.bot.registry.record("orders-value", parse(V1))


def shown(message: Message | None) -> str:
    assert message is not None
    return as_text(message.text, message.blocks)


def buttons(message: Message | None) -> list[str]:
    assert message is not None
    return [e.get("action_id", "") for b in message.blocks if b.get("type") == "actions" for e in b.get("elements", [])]


async def click(slack: SlackHarness, message: Message, action: str, user: str, option: str | None = None) -> str:
    """Press a button as ``user``; what Slack showed only them (the bot's ephemeral answer)."""
    before = len(slack.ws.ephemerals_for(user))
    await slack.driver.click(message, action, user=user, option=option)
    answer = await slack.ws.wait_for(lambda: slack.ws.ephemerals_for(user)[before:] or None)
    await slack.bot.idle()
    return str(answer[0].text)


def dm_copies(slack: SlackHarness, user: str, number: int = 1) -> list[Message]:
    """The copies of a proposal's card in someone's DM (a card starts with its header)."""
    return [m for m in slack.ws.channel_messages(slack.ws.open_dm(user))
            if any(b.get("type") == "header" and f"Schema change #{number} " in b["text"]["text"] for b in m.blocks)]


async def test_the_proposers_own_approval_never_counts_and_another_members_does(slack: SlackHarness) -> None:
    await load(slack)
    view = await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api")
    assert view.proposal.teams == ["orders-team"]
    card = await card_message(slack)
    assert dm_copies(slack, CAROL) and not dm_copies(slack, ALICE)  # the proposer is not asked to approve their own change
    refused = await click(slack, card, ids.APPROVE, ALICE)
    assert "four eyes" in refused and "does not count for orders-team" in refused and "<@U0000CAROL>" in refused
    assert (await slack.bot.proposals.view(1)).acknowledgements == [] and (await slack.bot.proposals.view(1)).state.value == "pending"
    assert "You approved" in await click(slack, card, ids.APPROVE, CAROL)
    assert (await slack.bot.proposals.view(1)).state.value == "approved"
    final = slack.ws.find_message(card.channel, card.ts)
    assert "approved by <@U0000CAROL>" in shown(final) and ids.APPROVE not in buttons(final)
    [copy] = dm_copies(slack, CAROL)  # the DM copy follows: approved, without buttons
    await slack.ws.wait_for(lambda: ids.APPROVE not in buttons(slack.ws.find_message(copy.channel, copy.ts)) or None)
    assert "approved" in shown(slack.ws.find_message(copy.channel, copy.ts))


async def test_the_proposer_is_no_fallback_approver_of_their_own_change(slack: SlackHarness) -> None:
    await load(slack, readers=False)  # nobody known reads it: the fallback approvers (orders-team's oncall) answer for the topic
    view = await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api")
    assert view.proposal.teams == ["unowned readers"]
    card = await card_message(slack)
    refused = await click(slack, card, ids.APPROVE, ALICE)
    assert "four eyes" in refused and "unowned readers" in refused and "<@U0000CAROL>" in refused
    assert (await slack.bot.proposals.view(1)).state.value == "pending"
    await click(slack, card, ids.APPROVE, CAROL)
    assert (await slack.bot.proposals.view(1)).state.value == "approved"


async def test_a_team_that_allows_self_approval_gets_it_recorded_as_such(slack: SlackHarness) -> None:
    await load(slack, self_approval=True)
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api")
    card = await card_message(slack)
    assert "You approved #1 for orders-team" in await click(slack, card, ids.APPROVE, ALICE)
    assert (await slack.bot.proposals.view(1)).state.value == "approved"
    assert "self-approved (the team allows it) by <@U0000ALICE>" in shown(slack.ws.find_message(card.channel, card.ts))
    actions = [e.action for e in await slack.bot.proposals.audit_trail(1)]
    assert "self-approved" in actions
    notes = [m.text for m in slack.ws.channel_messages("schema-changes", thread_ts=card.ts)]
    assert any("self-approved" in n for n in notes)


async def test_dm_copies_follow_a_rejection_and_an_expiry(slack: SlackHarness) -> None:
    await load(slack)
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api")
    await slack.bot.proposals.propose("orders-value", json.dumps(retyped(V1, "price", "long")), ALICE, surface="api")
    first = await card_message(slack, 1)
    await card_message(slack, 2)
    await slack.ws.wait_for(lambda: dm_copies(slack, CAROL, 2) or None)
    await slack.bot.proposals.decide(1, CAROL, Decision.REJECT, "we sum prices")
    [rejected] = dm_copies(slack, CAROL, 1)
    await slack.ws.wait_for(lambda: "rejected" in shown(slack.ws.find_message(rejected.channel, rejected.ts)) or None)
    assert buttons(slack.ws.find_message(rejected.channel, rejected.ts)) == []
    assert ids.REVISE in buttons(slack.ws.find_message(first.channel, first.ts))
    slack.clock.advance(hours=25)
    await slack.bot.proposals.sweep()
    await slack.bot.idle()
    [expired] = dm_copies(slack, CAROL, 2)
    assert "expired" in shown(slack.ws.find_message(expired.channel, expired.ts)).lower()
    assert buttons(slack.ws.find_message(expired.channel, expired.ts)) == []


@pytest.fixture
async def registry_bot(slack: SlackHarness, migrated_url: str, schema_registry: RealRegistry) -> AsyncIterator[tuple[SlackHarness, Any]]:
    """The bot with the real Schema Registry, behind a proxy the test can take off the network and bring back on its port."""
    proxy = Outage(schema_registry.url)
    await proxy.restore()
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, SCHEMA_REGISTRY_URL=proxy.url), slack.clock)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    slack.registry = schema_registry  # type: ignore[attr-defined]
    try:
        yield slack, (proxy.cut, proxy.restore)
    finally:
        await proxy.cut()


async def test_the_card_never_waits_behind_the_registry_and_never_goes_backwards(registry_bot: tuple[SlackHarness, Any]) -> None:
    slack, (stop, start) = registry_bot
    await load(slack)
    await slack.registry.register("orders-value", V1)  # type: ignore[attr-defined]  # the current version, registered by hand
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api")
    card = await card_message(slack)
    await stop()  # the registry is away when the last approval lands
    await slack.driver.click(card, ids.APPROVE, user=CAROL)
    approved = await slack.ws.wait_for(lambda: "Registering version 2" in shown(slack.ws.find_message(card.channel, card.ts)) or None, timeout=10)
    assert approved
    retrying = await slack.ws.wait_for(lambda: "retrying since" in shown(slack.ws.find_message(card.channel, card.ts)) or None, timeout=10)
    assert retrying and "could not be reached" in shown(slack.ws.find_message(card.channel, card.ts))
    await start()
    await slack.ws.wait_for(lambda: "Registered in the Schema Registry as version 2 (id" in shown(slack.ws.find_message(card.channel, card.ts))
                            or None, timeout=30)
    # An acknowledged break: registered with the registry's FULL check lifted for it, and FULL set again
    assert "FULL check lifted for this acknowledged break" in shown(slack.ws.find_message(card.channel, card.ts))
    assert await slack.registry.compatibility("orders-value") == "FULL"  # type: ignore[attr-defined]
    [_, registered] = await slack.registry.versions("orders-value")  # type: ignore[attr-defined]
    assert json.loads(registered["schema"])["fields"] == BREAKING["fields"]
    edits = [json.dumps(c.args.get("blocks")) for c in slack.ws.calls_to("chat.update") if c.ok and c.args.get("ts") == card.ts]
    stages = [next((i for i, word in enumerate(("waiting", "Registering version", "retrying since", "Registered in")) if word in e and
                    (i != 0 or "approved" not in e)), -1) for e in edits]
    assert stages == sorted(stages), stages  # never back to an older state


async def test_the_registration_stops_after_its_attempts_and_oncall_can_retry_it(registry_bot: tuple[SlackHarness, Any],
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    slack, (stop, start) = registry_bot
    monkeypatch.setattr(proposals_module, "REGISTRY_ATTEMPTS", 2)
    await load(slack)
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api")
    card = await card_message(slack)
    await stop()
    await slack.bot.proposals.decide(1, CAROL, Decision.APPROVE)
    await slack.ws.wait_for(lambda: "Not registered in the Schema Registry after 2 attempts" in shown(slack.ws.find_message(card.channel, card.ts))
                            or None, timeout=30)
    asked = await slack.ws.wait_for(lambda: next((m for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)) if ids.REGISTRY_RETRY in buttons(m)),
                                                 None))
    await start()
    assert "only the oncall of orders-team" in await click(slack, asked, ids.REGISTRY_RETRY, BOB)
    assert "again" in await click(slack, asked, ids.REGISTRY_RETRY, ALICE)
    await slack.ws.wait_for(lambda: "Registered in the Schema Registry as version 1" in shown(slack.ws.find_message(card.channel, card.ts)) or None,
                            timeout=30)
    assert "already registered" in await click(slack, asked, ids.REGISTRY_RETRY, CAROL)  # a late click on the same DM: nothing twice
    assert len([a for a in await slack.bot.proposals.audit_trail(1) if a.action == "registration retried"]) == 1
    figures = await slack.bot.health.compute(slack.clock.now.date().replace(day=1))
    assert figures["overall"]["registrations_failed"] == 0  # registered in the end


FREEZE = {"name": "quarter-end", "start": "2026-12-03T00:00:00Z", "end": "2026-12-04T12:00:00Z", "reason": "finance closes the books"}


async def test_an_emergency_change_ships_through_a_freeze_with_two_oncall_people(slack: SlackHarness) -> None:
    await load(slack, freezes=[FREEZE])
    start = slack.clock.now + timedelta(days=2, hours=2)  # 2026-12-03 11:00: inside the freeze
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api", window_start=start, window_hours=1)
    card = await card_message(slack)
    await slack.bot.proposals.decide(1, CAROL, Decision.APPROVE)
    await slack.bot.idle()
    held = slack.ws.find_message(card.channel, card.ts)
    assert "held" in shown(held) and ids.EMERGENCY in buttons(held)

    assert "Only the oncall" in await click(slack, held, ids.EMERGENCY, BOB)  # not orders-team's oncall, not the global one
    await slack.driver.click(held, ids.EMERGENCY, user=ALICE)
    form = await slack.ws.wait_for(lambda: next((v for v in slack.ws.views.values() if v.view.get("callback_id") == ids.EMERGENCY_VIEW), None))
    empty = await slack.driver.submit(form.id, {ids.REASON_BLOCK: {ids.REASON_ACTION: {"type": "plain_text_input", "value": "  "}}}, user=ALICE)
    assert empty.json["response_action"] == "errors" and (await slack.bot.proposals.view(1)).proposal.emergency is None
    reason = "the payment provider changes its price format at noon"
    sent = await slack.driver.submit(form.id, {ids.REASON_BLOCK: {ids.REASON_ACTION: {"type": "plain_text_input", "value": reason}}}, user=ALICE)
    assert sent.status == 200 and sent.json is None, sent.json
    await slack.bot.idle()
    asked = slack.ws.find_message(card.channel, card.ts)
    assert "Emergency asked" in shown(asked) and ids.EMERGENCY_CONFIRM in buttons(asked)
    assert "four eyes" in await click(slack, asked, ids.EMERGENCY_CONFIRM, ALICE)  # the same person cannot confirm
    assert (await slack.bot.proposals.view(1)).state.value == "pending"
    assert "Confirmed" in await click(slack, asked, ids.EMERGENCY_CONFIRM, CAROL)
    view = await slack.bot.proposals.view(1)
    assert view.state.value == "approved" and view.proposal.version == 2 and view.proposal.emergency["confirmed_by"] == CAROL
    final = shown(slack.ws.find_message(card.channel, card.ts))
    assert "Shipped during the freeze quarter-end as an emergency" in final and reason in final
    notes = "\n".join(m.text for m in slack.ws.channel_messages("schema-changes", thread_ts=card.ts))
    assert "asks to ship this change during the freeze" in notes and "confirmed the emergency" in notes
    entries = await slack.bot.calendar.listing(slack.clock.now - timedelta(days=1), slack.clock.now + timedelta(days=5))
    emergency = [e for e in entries if e["kind"] == "emergency"]
    assert len(emergency) == 1 and emergency[0]["scope"]["subjects"] == ["orders-value"] and emergency[0]["source"] == {"proposal": 1}
    assert any(c["with"] == "freeze:quarter-end" for c in emergency[0]["conflicts"])  # inside the freeze, for everyone to see
    actions = [e.action for e in await slack.bot.proposals.audit_trail(1)]
    assert "emergency requested" in actions and "emergency change confirmed" in actions
    figures = await slack.bot.health.compute(slack.clock.now.date().replace(day=1))
    assert figures["overall"]["through_freezes"] == 1


async def test_the_gate_answers_frozen_inside_a_freeze_and_lets_an_override_or_an_exception_through(slack: SlackHarness, tmp_path: Path) -> None:
    await load(slack)
    v2 = with_field(V1, {"name": "currency", "type": "string", "default": "EUR"})
    await slack.bot.proposals.propose("orders-value", json.dumps(v2), ALICE, surface="api")  # safe: approved at once
    (tmp_path / "v2.avsc").write_text(json.dumps(v2))
    env = {**os.environ, "CHANGEOPS_API_TOKEN": API_TOKEN, "CHANGEOPS_URL": slack.bot.url}

    async def gate(*extra: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "gate", "orders-value", str(tmp_path / "v2.avsc"), *extra],
                                       env=env, capture_output=True, text=True, timeout=60)

    now = slack.clock.now
    await slack.bot.calendar.add_freeze(Freeze("code-freeze", "the year-end close", Scope(subjects=frozenset({"orders-value"})),
                                               start=now - timedelta(hours=1), end=now + timedelta(hours=3)), BOB)
    frozen = await gate("--format", "json")
    answer = json.loads(frozen.stdout)
    assert frozen.returncode == 1 and answer["status"] == "frozen" and answer["freeze"]["name"] == "code-freeze"
    assert answer["freeze"]["ends"] == (now + timedelta(hours=3)).isoformat() and answer["version"] == 2
    text = await gate()
    assert text.returncode == 1 and "frozen: code-freeze covers it until" in text.stdout

    slack.clock.advance(hours=4)  # after the freeze
    assert (await gate()).returncode == 0

    now = slack.clock.now
    await slack.bot.calendar.add_freeze(Freeze("whole-company", "", start=now - timedelta(hours=1), end=now + timedelta(hours=3),
                                               excepted=Scope(subjects=frozenset({"orders-value"}))), BOB)
    assert (await gate()).returncode == 0  # the freeze leaves orders-value out
    await slack.bot.calendar.add_freeze(Freeze("teams-out", "", start=now - timedelta(hours=1), end=now + timedelta(hours=3),
                                               excepted=Scope(teams=frozenset({"analytics-team"}))), BOB)
    frozen = await gate("--format", "json")
    assert frozen.returncode == 1 and json.loads(frozen.stdout)["freeze"]["name"] == "teams-out"  # orders-team is not left out


async def test_an_override_lets_the_gate_through_until_the_freeze_ends(slack: SlackHarness, tmp_path: Path) -> None:
    await load(slack, freezes=[FREEZE])
    slack.clock.now = slack.clock.now + timedelta(days=2, hours=2)  # inside the freeze now
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api", window_start=slack.clock.now + timedelta(minutes=30),
                                      window_hours=1)
    await slack.bot.proposals.decide(1, CAROL, Decision.APPROVE)
    await slack.bot.proposals.request_emergency(1, CAROL, "a broken producer must be rolled forward")
    await slack.bot.proposals.confirm_emergency(1, ALICE)
    (tmp_path / "v2.avsc").write_text(json.dumps(BREAKING))
    env = {**os.environ, "CHANGEOPS_API_TOKEN": API_TOKEN, "CHANGEOPS_URL": slack.bot.url}
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "gate", "orders-value", str(tmp_path / "v2.avsc"), "--format", "json"],
                                   env=env, capture_output=True, text=True, timeout=60)
    answer = json.loads(done.stdout)
    assert done.returncode == 0 and answer["status"] == "approved" and answer["freeze"]["name"] == "quarter-end"
    assert answer["override"]["proposal"] == 1


async def test_a_token_bound_to_a_person_proposes_as_that_person_and_four_eyes_holds(slack: SlackHarness, migrated_url: str) -> None:
    token = "alice-ci-token-0123456789"
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, CHANGEOPS_API_TOKENS=f"alice-ci@{ALICE}:proposals:write={token}"), slack.clock)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    await load(slack)

    async def post(body: dict[str, Any]) -> tuple[int, Any]:
        async with aiohttp.ClientSession() as http, http.post(f"{slack.bot.url}/api/v1/proposals", json=body,
                                                              headers={"Authorization": f"Bearer {token}"}) as response:
            return response.status, await response.json()

    status, answer = await post({"subject": "orders-value", "schema": BREAKING, "proposer": CAROL})
    assert status == 400 and "this token proposes as U0000ALICE" in answer["error"] and await slack.bot.proposals.listing() == []
    status, answer = await post({"subject": "orders-value", "schema": BREAKING})
    assert status == 201, answer
    view = await slack.bot.proposals.view(answer["id"])
    assert view.proposal.proposer == ALICE
    with pytest.raises(proposals_module.ProposalError, match="four eyes"):
        await slack.bot.proposals.decide(view.id, ALICE, Decision.APPROVE)


async def test_a_proposer_in_two_teams_is_told_which_approval_counted(slack: SlackHarness) -> None:
    catalog = {"teams": {"orders-team": {"members": [ALICE, CAROL]}, "analytics-team": {"members": [BOB, ALICE], "self_approval": True}},
               "subjects": {"orders-value": {"owner": "orders-team"}},
               "datasets": [{"name": "dwd_orders", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["amount"]}],
               "jobs": [{"name": "enrich", "owner": "orders-team", "inputs": ["orders-value"], "outputs": ["dwd_orders"],
                         "mappings": {"dwd_orders.amount": ["orders-value.price"]}}]}
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    await slack.bot.registry.record("orders-value", parse(V1))
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api")
    card = await card_message(slack)
    told = await click(slack, card, ids.APPROVE, ALICE)
    assert "You approved #1 for analytics-team." in told and "does not count for orders-team (four eyes)" in told
    view = await slack.bot.proposals.view(1)
    assert [a.team for a in view.acknowledgements] == ["analytics-team"] and view.waiting() == ["orders-team"]


async def test_two_oncall_people_confirming_at_once_ship_it_once(slack: SlackHarness) -> None:
    await load(slack, freezes=[FREEZE], global_oncall=[BOB])
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api",
                                      window_start=slack.clock.now + timedelta(days=2, hours=2), window_hours=1)
    await slack.bot.proposals.decide(1, CAROL, Decision.APPROVE)
    await slack.bot.proposals.request_emergency(1, ALICE, "the provider changes its format at noon")
    with pytest.raises(proposals_module.ProposalError, match="already asked"):
        await slack.bot.proposals.request_emergency(1, CAROL, "me too")
    outcomes = await asyncio.gather(slack.bot.proposals.confirm_emergency(1, CAROL), slack.bot.proposals.confirm_emergency(1, BOB),
                                    return_exceptions=True)
    assert sum(isinstance(o, proposals_module.ProposalError) for o in outcomes) == 1, outcomes
    await slack.bot.idle()
    assert [v.number for v in await slack.bot.registry.history("orders-value")] == [1, 2]
    entries = await slack.bot.calendar.listing(slack.clock.now - timedelta(days=1), slack.clock.now + timedelta(days=5))
    assert len([e for e in entries if e["kind"] == "emergency"]) == 1
    assert len([a for a in await slack.bot.proposals.audit_trail(1) if a.action == "emergency change confirmed"]) == 1


async def test_slack_failing_while_a_proposal_is_decided_leaves_every_copy_final_and_nothing_doubled(slack: SlackHarness) -> None:
    await load(slack)
    slack.bot.dispatcher.backoff, slack.bot.dispatcher.max_backoff = 0.1, 0.5
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api")
    card = await card_message(slack)
    await slack.bot.idle()
    slack.ws.outage = 500  # Slack fails every call while the decision lands, then rate-limits
    await slack.bot.proposals.decide(1, CAROL, Decision.APPROVE)
    await slack.ws.wait_for(lambda: len([c for c in slack.ws.calls if c.status == 500]) >= 3)
    slack.ws.outage = 429
    await slack.ws.wait_for(lambda: len([c for c in slack.ws.calls if c.status == 429]) >= 2)
    slack.ws.outage = None
    await slack.bot.idle()
    final = slack.ws.find_message(card.channel, card.ts)
    assert "approved by <@U0000CAROL>" in shown(final) and buttons(final) == []
    [copy] = dm_copies(slack, CAROL)  # one copy, edited in place, not posted again
    assert "approved" in shown(slack.ws.find_message(copy.channel, copy.ts)) and buttons(slack.ws.find_message(copy.channel, copy.ts)) == []
    assert len(slack.ws.channel_messages("schema-changes")) == 1
    notes = [m.text for m in slack.ws.channel_messages("schema-changes", thread_ts=card.ts)]
    assert len([n for n in notes if "approved for orders-team" in n]) == 1


async def test_a_burst_of_clicks_while_slack_rate_limits_then_fails_is_acknowledged_and_its_work_lands_once(slack: SlackHarness) -> None:
    """The work after each ack waits behind the burst's acks (acks first); Slack answering 429, then 500, to that work
    delays it and doubles nothing: one approval counts, one thread note, one DM copy edited to final, one answer per click."""
    await load(slack)
    slack.bot.dispatcher.backoff, slack.bot.dispatcher.max_backoff = 0.1, 0.5
    await slack.bot.proposals.propose("orders-value", json.dumps(BREAKING), ALICE, surface="api")
    card = await card_message(slack)
    await slack.bot.idle()
    [copy] = dm_copies(slack, CAROL)
    slack.ws.outage = 429
    presses = [(CAROL, ids.APPROVE), (ALICE, ids.APPROVE), (CAROL, ids.APPROVE), (BOB, ids.APPROVE), (CAROL, ids.APPROVE)]
    deliveries = await asyncio.gather(*(slack.driver.click(card, action, user=user) for user, action in presses),
                                      *(slack.driver.command("/schema status 1", user=user, channel="changes") for user in (ALICE, BOB)))
    assert [d.status for d in deliveries] == [200] * len(deliveries)  # every request acknowledged, none waited on Slack's Web API
    await slack.ws.wait_for(lambda: len([c for c in slack.ws.calls if c.status == 429]) >= 2)
    slack.ws.outage = 500
    await slack.ws.wait_for(lambda: len([c for c in slack.ws.calls if c.status == 500]) >= 2)
    slack.ws.outage = None
    await slack.bot.idle()
    for user, count in ((CAROL, 3), (ALICE, 2), (BOB, 2)):  # one answer per click and per command, each to whom it concerns
        await slack.ws.wait_for(lambda u=user, n=count: len(slack.ws.ephemerals_for(u)) >= n or None)  # type: ignore[misc]
        assert len(slack.ws.ephemerals_for(user)) == count, [e.text for e in slack.ws.ephemerals_for(user)]
    carol = [e.text for e in slack.ws.ephemerals_for(CAROL)]
    assert len([t for t in carol if "You approved" in t]) == 1, carol  # the repeated clicks count nothing more
    view = await slack.bot.proposals.view(1)
    assert view.state.value == "approved" and [a.team for a in view.acknowledgements] == ["orders-team"]
    final = slack.ws.find_message(card.channel, card.ts)
    assert "approved by <@U0000CAROL>" in shown(final) and buttons(final) == []
    assert [m.ts for m in dm_copies(slack, CAROL)] == [copy.ts]  # edited in place, never posted again
    await slack.ws.wait_for(lambda: buttons(slack.ws.find_message(copy.channel, copy.ts)) == [] or None)
    assert len(slack.ws.channel_messages("schema-changes")) == 1
    notes = [m.text for m in slack.ws.channel_messages("schema-changes", thread_ts=card.ts)]
    assert len([n for n in notes if "approved for orders-team" in n]) == 1, notes
