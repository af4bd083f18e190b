"""The HTTP API's tokens: named, scoped, compared in constant time; a token never acts as anyone it likes; and
OpenLineage events never rewrite what the catalog declares."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from bot.config import Config, ConfigError
from bot.runtime import Bot
from tests.conftest import API_TOKEN, SlackHarness, bot_config
from tests.test_openlineage import event
from tests.test_proposals_slack import ALICE, V1, retyped, setup_catalog

CI, LINEAGE = "ci-token-0123456789abcdef", "lineage-token-0123456789ab"


@pytest.fixture
async def scoped(slack: SlackHarness, migrated_url: str) -> AsyncIterator[SlackHarness]:
    """The bot with the single all-scopes token and two named, scoped ones."""
    await slack.bot.stop()
    slack.bot = Bot(bot_config(slack.emulator, migrated_url, CHANGEOPS_API_TOKENS=f"ci:proposals:write+proposals:read={CI} lineage:lineage:write={LINEAGE}"),
                    slack.clock)
    await slack.bot.start(0)
    slack.driver.request_url = f"{slack.bot.url}/slack/events"
    await setup_catalog(slack)
    yield slack


async def call(slack: SlackHarness, token: str | None, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession(headers=headers) as http:
        method = http.post(f"{slack.bot.url}{path}", data=json.dumps(body)) if body is not None else http.get(f"{slack.bot.url}{path}")
        async with method as response:
            return response.status, await response.json()


def proposal(proposer: Any = ALICE) -> dict[str, Any]:
    return {"subject": "orders-value", "schema": retyped(V1, "price", "string"), "proposer": proposer}


async def test_each_token_does_only_what_its_scopes_allow(scoped: SlackHarness) -> None:
    assert (await call(scoped, LINEAGE, "/api/v1/proposals", proposal()))[0] == 403
    status, answer = await call(scoped, CI, "/api/v1/lineage", event())
    assert status == 403 and "lineage:write" in answer["error"]
    assert (await call(scoped, "wrong-token-0123456789", "/api/v1/proposals", proposal()))[0] == 401
    assert (await call(scoped, None, "/api/v1/proposals", proposal()))[0] == 401
    assert (await call(scoped, LINEAGE, "/api/v1/lineage", event()))[0] == 200
    status, created = await call(scoped, CI, "/api/v1/proposals", proposal())
    assert status == 201
    assert (await call(scoped, API_TOKEN, f"/api/v1/proposals/{created['id']}"))[0] == 200  # CHANGEOPS_API_TOKEN: every scope
    assert (await call(scoped, LINEAGE, f"/api/v1/proposals/{created['id']}"))[0] == 403


async def test_the_audit_names_the_token_and_the_person_it_acts_for(scoped: SlackHarness) -> None:
    status, created = await call(scoped, CI, "/api/v1/proposals", proposal())
    assert status == 201
    await scoped.driver.command(f"/schema audit {created['id']}", user=ALICE, channel="changes")
    audit = await scoped.ws.wait_for(lambda: [e for e in scoped.ws.ephemerals_for(ALICE) if "Audit trail" in e.text])
    assert f"api token ci on behalf of <@{ALICE}> · proposed · via api" in audit[0].text
    await scoped.bot.idle()


@pytest.mark.parametrize("proposer, reason", [
    (None, "proposer: required"), ("U" + "A" * 64, "proposer: required"), ("#general", "proposer: required"),
    ("U0NOBODY00", "no Slack user"), ("UCHANGEOPS", "is a bot"), ("U0DELETED0", "is deactivated"),
])
async def test_the_proposer_must_be_a_real_active_person(scoped: SlackHarness, proposer: Any, reason: str) -> None:
    scoped.ws.add_user("U0DELETED0", "gone")
    scoped.ws.users["U0DELETED0"]["deleted"] = True
    status, answer = await call(scoped, CI, "/api/v1/proposals", proposal(proposer))
    assert status == 400 and answer["field"] == "proposer" and reason in answer["error"]
    assert await scoped.bot.proposals.listing() == []


@pytest.mark.parametrize("value, problem", [
    ("ci:proposals:write=short", "too short"), ("ci=abcdefabcdefabcdefabc", "malformed"),
    ("ci:admin=abcdefabcdefabcdefabc", "unknown scope"), (f"a:*={CI} b:*={CI}", "used twice"),
])
def test_malformed_token_lists_stop_start_up_with_one_line(value: str, problem: str) -> None:
    with pytest.raises(ConfigError) as refused:
        Config.from_env({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "0123456789abcdef", "CHANGEOPS_API_TOKENS": value})
    assert problem in str(refused.value) and "\n" not in str(refused.value) and CI not in str(refused.value)


async def test_openlineage_never_overrides_the_catalog_and_coverage_reports_the_conflict(scoped: SlackHarness, migrated_url: str) -> None:
    declared = event(mappings={"amount": ["quantity"]})  # the catalog's enrich-0 says otherwise, and names another owner
    declared["job"]["namespace"], declared["job"]["name"] = "changeops", "enrich-0"
    graph = await scoped.bot.lineage.graph()
    job_before = next(j for j in graph.jobs.values() if j.id.name == "enrich-0")
    assert (await call(scoped, LINEAGE, "/api/v1/lineage", declared))[0] == 200
    graph = await scoped.bot.lineage.graph()
    job_after = next(j for j in graph.jobs.values() if j.id.name == "enrich-0")
    assert (job_after.owners, job_after.mappings, job_after.inputs) == (job_before.owners, job_before.mappings, job_before.inputs)
    assert await call(scoped, LINEAGE, "/api/v1/lineage", declared) == (200, {"ok": True, "events": 1, "changed": 0})
    observations = await scoped.bot.lineage.observations()
    assert len(observations) == 1 and "owners orders-team (the catalog says analytics-team)" in observations[0].conflict
    env = {**os.environ, "DATABASE_URL": migrated_url}
    shown = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "bot", "lineage", "coverage"], env=env, capture_output=True,
                                    text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "disagree with the catalog (kept, not applied): 1" in shown.stdout and "enrich-0 (changeops)" in shown.stdout
