"""Unknown is not safe: a compatible or breaking change that reaches readers nobody owns, or a subject whose
readers nobody knows, waits for the subject's fallback approvers; a safe change still goes through at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.domain.avro.parse import parse
from bot.domain.lineage.catalog import read_catalog
from bot.domain.lineage.openlineage import parse_event
from bot.slack import ids
from tests.conftest import SlackHarness
from tests.test_proposals_slack import ALICE, BOB, CAROL, V1, card_message, retyped, state_of, thread, with_field

KAFKA = "kafka://kafka:9092"  # the catalog's default Kafka namespace
BREAKING, SAFE = retyped(V1, "price", "string"), with_field(V1, {"name": "channel", "type": "string", "default": "web"})


async def load(slack: SlackHarness, governance: bool = False, **approval: Any) -> None:
    """orders-team owns orders-value (oncall: alice); analytics-team (bob, carol) exists; no job is declared."""
    groups = {g["handle"]: g["id"] for g in slack.ws.usergroups.values()}
    subject: dict[str, Any] = {"owner": "orders-team", "channel": "#orders-pipeline"}
    if approval:
        subject["approval"] = approval
    teams: dict[str, Any] = {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE]},
                             "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB]}}
    if governance:
        teams["governance"] = {"members": [CAROL]}
    catalog, problems = read_catalog({"teams": teams, "subjects": {"orders-value": subject}}, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await slack.bot.lineage.load_catalog(catalog)
    await slack.bot.registry.record("orders-value", parse(V1))


def flink_event(owner: str | None = None) -> dict[str, Any]:
    """What Flink's OpenLineage integration sends for a SQL job from one Kafka topic to another: no column
    lineage, and usually no ownership facet."""
    schema = {"_producer": "x", "_schemaURL": "x", "fields": [{"name": "id", "type": "string"}, {"name": "price", "type": "double"}]}
    job: dict[str, Any] = {"namespace": "flink://prod", "name": "orders-enricher", "facets": {}}
    if owner:
        job["facets"]["ownership"] = {"_producer": "x", "_schemaURL": "x", "owners": [{"name": f"team:{owner}"}]}
    return {"eventType": "COMPLETE", "eventTime": "2026-12-01T08:00:00Z", "producer": "https://github.com/apache/flink",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
            "run": {"runId": "0192c2a0-0000-7000-8000-0000000000aa"}, "job": job,
            "inputs": [{"namespace": KAFKA, "name": "orders", "facets": {"schema": schema}}],
            "outputs": [{"namespace": KAFKA, "name": "orders_enriched", "facets": {"schema": schema}}]}


async def propose_api(slack: SlackHarness, schema: dict[str, Any]) -> Any:
    return await slack.bot.proposals.propose("orders-value", json.dumps(schema), CAROL, surface="api")


@pytest.mark.parametrize("owner", [None, "ghost-team"], ids=["no-ownership-facet", "unknown-owner"])
async def test_a_breaking_change_read_by_an_unowned_job_waits_for_the_fallback(slack: SlackHarness, owner: str | None) -> None:
    await load(slack)
    await slack.bot.lineage.ingest([parse_event(flink_event(owner))])
    view = await propose_api(slack, BREAKING)
    assert view.state.value == "pending" and view.proposal.teams == ["unowned readers"]
    assert [j["name"] for j in view.proposal.impact["unowned"]] == ["orders-enricher"]
    assert view.proposal.impact["fallback"] == ["orders-team oncall"]
    card = await card_message(slack)
    text = json.dumps(card.blocks)
    assert "Readers nobody owns" in text and "orders-enricher" in text and "flink://prod" in text
    assert "OpenLineage event of 2026-12-01 08:00 UTC" in text
    assert ("ghost-team" in text) == (owner is not None)
    assert "fallback approvers (orders-team oncall)" in text
    assert await slack.ws.wait_for(lambda: any("fallback approver" in m.text for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE))))

    await slack.driver.click(card, ids.APPROVE, user=BOB)  # not a fallback approver
    await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "only members" in e.text])
    await slack.driver.click(card, ids.APPROVE, user=ALICE)  # the owning team's oncall
    await slack.ws.wait_for(lambda: any("acknowledged for unowned readers" in t for t in thread(slack, card)))
    assert await state_of(slack) == "approved"
    trail = await slack.bot.proposals.audit_trail(1)
    assert any(e.action == "acknowledged for unowned readers" and e.actor == ALICE for e in trail)
    await slack.bot.idle()


async def test_a_subject_nobody_knows_the_readers_of_waits_for_the_fallback(slack: SlackHarness) -> None:
    await load(slack)
    view = await propose_api(slack, BREAKING)
    assert view.state.value == "pending" and view.proposal.teams == ["unowned readers"]
    card = await card_message(slack)
    assert "nobody can say who reads this topic" in json.dumps(card.blocks)
    await slack.bot.idle()


@pytest.mark.parametrize("lineage", ["unowned-job", "unknown-owner", "no-lineage"])
async def test_a_safe_change_is_still_approved_at_once(slack: SlackHarness, lineage: str) -> None:
    await load(slack)
    if lineage != "no-lineage":
        await slack.bot.lineage.ingest([parse_event(flink_event("ghost-team" if lineage == "unknown-owner" else None))])
    view = await propose_api(slack, SAFE)
    assert view.state.value == "approved" and view.proposal.teams == []
    await slack.bot.idle()


async def test_the_catalog_may_name_the_fallback_teams(slack: SlackHarness) -> None:
    await load(slack, fallback=["analytics-team"])
    await slack.bot.lineage.ingest([parse_event(flink_event())])
    view = await propose_api(slack, BREAKING)
    assert view.proposal.impact["fallback"] == ["analytics-team"]
    assert await slack.bot.proposals.approvers(view, "unowned readers") == {BOB, CAROL}  # the team's user group
    await slack.bot.idle()


async def test_a_governance_team_answers_beside_the_owners_oncall(slack: SlackHarness) -> None:
    await load(slack, governance=True)
    view = await propose_api(slack, BREAKING)
    assert view.proposal.impact["fallback"] == ["orders-team oncall", "governance"]
    assert await slack.bot.proposals.approvers(view, "unowned readers") == {ALICE, CAROL}
    await slack.bot.idle()


async def test_claiming_the_job_makes_the_next_proposal_ask_that_team(slack: SlackHarness) -> None:
    await load(slack)
    await slack.bot.lineage.ingest([parse_event(flink_event())])
    await slack.driver.command("/schema claim orders-enricher analytics-team", user=ALICE, channel="changes")
    refused = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(ALICE) if "claim" in e.text.lower()])
    assert "Only a member of analytics-team" in refused[0].text
    await slack.driver.event({"type": "app_home_opened", "user": ALICE, "channel": "D1", "tab": "home"})
    home = await slack.ws.wait_for(lambda: slack.ws.home.get(ALICE))
    claim = next(b for b in home.view["blocks"] if b.get("accessory", {}).get("action_id") == ids.CLAIM_JOB)
    assert "orders-enricher" in claim["text"]["text"] and "orders-value" in claim["text"]["text"]
    assert claim["accessory"]["text"]["text"] == "Claim for orders-team"
    slack.ws.failing["chat.postMessage"] = 500  # Slack away as the button is clicked: what it did is told once Slack is back
    await slack.driver.click_in_view(home, ids.CLAIM_JOB, user=ALICE)
    await slack.ws.wait_for(lambda: [c for c in slack.ws.calls if c.method == "chat.postMessage" and "now owns" in str(c.args.get("text"))])
    del slack.ws.failing["chat.postMessage"]
    told = await slack.ws.wait_for(lambda: [m for m in slack.ws.channel_messages(slack.ws.open_dm(ALICE)) if "orders-team now owns" in m.text])
    assert len(told) == 1
    view = await propose_api(slack, BREAKING)
    assert view.proposal.teams == ["orders-team"] and view.proposal.impact["unowned"] == []
    await slack.driver.command("/schema claim orders-enricher analytics-team", user=BOB, channel="changes")
    again = await slack.ws.wait_for(lambda: [e for e in slack.ws.ephemerals_for(BOB) if "already owned" in e.text])
    assert "orders-team" in again[0].text
    assert [c.conflict for c in await slack.bot.lineage.claims()] == [f"claimed for orders-team by {ALICE}"]  # kept beside the catalog
    await slack.bot.idle()


async def test_an_open_home_tab_follows_the_readers_nobody_owns(slack: SlackHarness) -> None:
    await load(slack)
    await slack.driver.event({"type": "app_home_opened", "user": ALICE, "channel": "D1", "tab": "home"})
    await slack.ws.wait_for(lambda: slack.ws.home.get(ALICE))
    claims = lambda: [b for b in slack.ws.home[ALICE].view["blocks"] if b.get("accessory", {}).get("action_id") == ids.CLAIM_JOB]  # noqa: E731
    assert claims() == []
    await slack.bot.lineage.ingest([parse_event(flink_event())])  # a job nobody owns starts reading Alice's subject
    shown = await slack.ws.wait_for(claims)
    assert "orders-enricher" in shown[0]["text"]["text"]
    await slack.driver.command("/schema claim orders-enricher analytics-team", user=BOB, channel="changes")  # claimed elsewhere
    await slack.ws.wait_for(lambda: not claims())
    await slack.bot.idle()


def test_impact_and_coverage_name_the_readers_nobody_owns(migrated_url: str, tmp_path: Path) -> None:
    catalog = {"teams": {"orders-team": {"members": [ALICE]}}, "subjects": {"orders-value": {"owner": "orders-team"}}}
    (tmp_path / "catalog.yaml").write_text(yaml.safe_dump(catalog))
    (tmp_path / "events.jsonl").write_text(json.dumps(flink_event()) + "\n")
    env = {**os.environ, "DATABASE_URL": migrated_url}

    def bot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot", *args], env=env, capture_output=True, text=True, timeout=60)

    validated = bot("catalog", "validate", str(tmp_path / "catalog.yaml"))
    assert validated.returncode == 0, validated.stderr
    assert "subjects.orders-value.approval.fallback: nobody can acknowledge" in validated.stderr
    assert bot("catalog", "load", str(tmp_path / "catalog.yaml")).returncode == 0
    assert bot("lineage", "import", str(tmp_path / "events.jsonl")).returncode == 0
    text = bot("impact", "orders-value").stdout
    assert "Teams to ask: none — 1 reader nobody owns" in text and "orders-enricher (flink://prod) — learned from OpenLineage event" in text
    answer = json.loads(bot("impact", "orders-value", "--format", "json").stdout)
    assert [j["name"] for j in answer["unowned"]] == ["orders-enricher"] and answer["owners"] == []
    coverage = bot("lineage", "coverage").stdout
    assert "jobs claimed from Slack" in coverage
    assert "jobs nobody owns" in coverage and "orders-enricher (flink://prod) — learned from OpenLineage event of 2026-12-01 08:00 UTC" in coverage
