"""Races the workflow must lose gracefully: a decision in flight while the proposal is withdrawn or expires,
and one person deciding for two teams while one of them decides meanwhile."""

from __future__ import annotations

import json
from typing import Any

from bot.domain.approvals import Decision
from bot.domain.avro.parse import parse
from bot.domain.lineage.catalog import read_catalog
from bot.slack import ids
from tests.conftest import SlackHarness
from tests.test_proposals_slack import ALICE, BOB, CAROL, V1, card_message, propose, retyped, setup_catalog, state_of

MEMBERS_LOOKUP = "usergroups.users.list"


def forget_memberships(slack: SlackHarness) -> None:
    """As when the five-minute cache of user groups has expired."""
    slack.bot.proposals.membership._cache.clear()  # type: ignore[attr-defined]


async def approval_parked_in_lookup(slack: SlackHarness) -> Any:
    """Bob (the last team asked) clicks Approve; the bot is left waiting for Slack to list his user group."""
    await setup_catalog(slack)
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.bot.idle()
    forget_memberships(slack)
    slack.ws.hold(MEMBERS_LOOKUP)
    await slack.driver.click(card, ids.APPROVE, user=BOB)
    await slack.ws.wait_for(lambda: MEMBERS_LOOKUP in slack.ws.held)
    return card


async def test_a_withdrawal_during_the_last_approval_wins_and_the_approver_is_told(slack: SlackHarness) -> None:
    await approval_parked_in_lookup(slack)
    await slack.driver.command("/schema withdraw 1", user=ALICE, channel="changes")
    await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "You withdrew #1" in e.text])
    slack.ws.release(MEMBERS_LOOKUP)
    told = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "#1" in e.text])
    assert "#1 was withdrawn before your approval was recorded; nothing changed" in told[0].text
    await slack.bot.idle()
    view = await slack.bot.proposals.view(1)
    assert view.state.value == "withdrawn" and view.acknowledgements == [] and view.proposal.version is None
    assert [v.number for v in await slack.bot.registry.history("orders-value")] == [1]


async def test_an_expiry_during_the_last_approval_wins(slack: SlackHarness) -> None:
    await approval_parked_in_lookup(slack)
    slack.clock.advance(hours=25)
    assert await slack.bot.proposals.sweep() == 1
    slack.ws.release(MEMBERS_LOOKUP)
    told = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "#1" in e.text])
    assert "#1 was expired before your approval was recorded" in told[0].text
    await slack.bot.idle()
    assert await state_of(slack) == "expired" and [v.number for v in await slack.bot.registry.history("orders-value")] == [1]


async def test_every_transition_is_conditional_on_the_state_it_expects(slack: SlackHarness) -> None:
    await setup_catalog(slack)
    await slack.bot.proposals.propose("orders-value", json.dumps(retyped(V1, "price", "string")), ALICE, surface="api")
    await slack.bot.proposals.withdraw(1, ALICE)
    for attempt in (slack.bot.proposals.withdraw(1, ALICE), slack.bot.proposals.extend(1, ALICE, "late"),
                    slack.bot.proposals.decide(1, BOB, Decision.APPROVE)):
        try:
            await attempt
        except Exception as err:  # noqa: BLE001 (the message is the point)
            assert "nothing changed" in str(err) or "cannot be extended" in str(err), err
        else:
            raise AssertionError("a transition from a final state went through")
    await slack.bot.idle()
    assert await state_of(slack) == "withdrawn"


async def test_a_member_of_two_teams_is_told_exactly_what_was_stored(slack: SlackHarness) -> None:
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    slack.ws.usergroups[groups["orders-team"]]["users"].append(CAROL)
    catalog: dict[str, Any] = {
        "teams": {"analytics-team": {"members": [BOB, CAROL]},  # no user group: the catalog answers, no Slack call
                  "orders-team": {"usergroup": groups["orders-team"], "members": [ALICE]}},
        "subjects": {"orders-value": {"owner": "orders-team"}},
        "datasets": [{"name": "a", "namespace": "x://a", "owner": "analytics-team", "fields": ["p"]},
                     {"name": "o", "namespace": "x://o", "owner": "orders-team", "fields": ["p"]}],
        "jobs": [{"name": "ja", "owner": "analytics-team", "inputs": ["orders-value"], "outputs": ["a"], "mappings": {"a.p": ["orders-value.price"]}},
                 {"name": "jo", "owner": "orders-team", "inputs": ["orders-value"], "outputs": ["o"], "mappings": {"o.p": ["orders-value.price"]}}],
    }
    parsed, problems = read_catalog(catalog, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(parsed)
    await slack.bot.registry.record("orders-value", parse(V1))
    await propose(slack, retyped(V1, "price", "string"))
    card = await card_message(slack)
    await slack.bot.idle()
    assert (await slack.bot.proposals.view(1)).proposal.teams == ["analytics-team", "orders-team"]
    forget_memberships(slack)
    slack.ws.hold(MEMBERS_LOOKUP)
    await slack.driver.click(card, ids.APPROVE, user=CAROL)  # for both her teams; parked reading orders-team's group
    await slack.ws.wait_for(lambda: MEMBERS_LOOKUP in slack.ws.held)
    _, recorded = await slack.bot.proposals.decide(1, BOB, Decision.APPROVE, team="analytics-team")  # as from his DM
    assert recorded == ["analytics-team"]
    slack.ws.release(MEMBERS_LOOKUP)
    told = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(CAROL) if "#1" in e.text])
    assert told[0].text == "You approved #1 for orders-team."
    await slack.bot.idle()
    view = await slack.bot.proposals.view(1)
    assert {(a.team, a.user) for a in view.acknowledgements} == {("analytics-team", BOB), ("orders-team", CAROL)}
    assert view.state.value == "approved" and view.proposal.version == 2
