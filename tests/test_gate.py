"""The deploy gate: approved, pending, rejected, unknown, and approved-then-modified (one attribute differs), over
the HTTP API and through `bot gate` (exit 0 only when approved)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp

from bot.domain.approvals import Decision
from tests.conftest import API_TOKEN, SlackHarness
from tests.test_proposals_slack import ALICE, BOB, V1, retyped, setup_catalog, with_field


async def check(slack: SlackHarness, subject: str, body: Any, token: str = API_TOKEN) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as http, http.post(f"{slack.bot.url}/api/v1/subjects/{subject}/check", data=json.dumps(body),
                                                          headers={"Authorization": f"Bearer {token}"}) as response:
        return response.status, await response.json()


async def test_the_gate_answers_for_each_state_and_the_cli_exits_accordingly(slack: SlackHarness, tmp_path: Path) -> None:
    await setup_catalog(slack)
    v2 = with_field(V1, {"name": "currency", "type": "string", "default": "EUR"})
    pending = retyped(V1, "price", "string")
    rejected = retyped(V1, "price", "float")
    approved = await slack.bot.proposals.propose("orders-value", json.dumps(v2), ALICE, surface="api")  # safe: approved at once
    waiting = await slack.bot.proposals.propose("orders-value", json.dumps(pending), ALICE, surface="api")
    refused = await slack.bot.proposals.propose("orders-value", json.dumps(rejected), ALICE, surface="api")
    await slack.bot.proposals.decide(refused.id, BOB, Decision.REJECT, "we sum prices")
    assert (await slack.bot.proposals.view(approved.id)).state.value == "approved"

    status, answer = await check(slack, "orders-value", v2)
    assert status == 200 and answer["status"] == "approved" and answer["version"] == 2 and answer["proposal"] == approved.id
    assert answer["level"] == "safe" and answer["changes"] == []
    status, answer = await check(slack, "orders-value", {"schema": json.dumps(V1)})  # the registry's body form; an older version
    assert answer["status"] == "approved" and answer["version"] == 1 and answer["proposal"] is None
    _, answer = await check(slack, "orders-value", pending)
    assert answer["status"] == "pending" and answer["proposal"] == waiting.id and answer["level"] == "breaking"
    _, answer = await check(slack, "orders-value", rejected)
    assert answer["status"] == "rejected" and answer["proposal"] == refused.id and answer["proposal_state"] == "rejected"
    modified = {**v2, "doc": "orders, as the shop writes them"}  # the same Parsing Canonical Form, one attribute more
    _, answer = await check(slack, "orders-value", modified)
    assert answer["status"] == "unknown" and answer["proposal"] is None and answer["level"] == "safe"
    retyped_default = {**v2, "fields": [*v2["fields"][:-1], {"name": "currency", "type": "string", "default": "USD"}]}
    _, answer = await check(slack, "orders-value", retyped_default)
    assert answer["status"] == "unknown" and answer["changes"]
    assert (await check(slack, "nope-value", v2))[0] == 404
    status, answer = await check(slack, "orders-value", {"type": "record", "name": "X", "fields": "no"})
    assert status == 400 and "not a valid Avro schema" in answer["error"]
    assert (await check(slack, "orders-value", v2, token="wrong-token-0123456789"))[0] == 401

    env = {**os.environ, "CHANGEOPS_API_TOKEN": API_TOKEN, "CHANGEOPS_URL": slack.bot.url}

    def gate(schema: Any, *extra: str, subject: str = "orders-value") -> subprocess.CompletedProcess[str]:
        path = tmp_path / f"s{len(list(tmp_path.iterdir()))}.avsc"
        path.write_text(json.dumps(schema) if not isinstance(schema, str) else schema)
        return subprocess.run([sys.executable, "-m", "bot", "gate", subject, str(path), *extra], env=env, capture_output=True, text=True,
                              timeout=60)

    ok = await asyncio.to_thread(gate, v2)
    assert ok.returncode == 0 and "approved as version 2" in ok.stdout
    assert (await asyncio.to_thread(gate, pending)).returncode == 1
    shown = await asyncio.to_thread(gate, modified, "--format", "json")
    assert shown.returncode == 1 and json.loads(shown.stdout)["status"] == "unknown"
    assert (await asyncio.to_thread(gate, "{not json")).returncode == 2
    assert (await asyncio.to_thread(gate, v2, subject="nope-value")).returncode == 2
    unreachable = await asyncio.to_thread(gate, v2, "--url", "http://127.0.0.1:9")
    assert unreachable.returncode == 2 and "cannot reach the bot" in unreachable.stderr
