"""``bot serve`` as Kubernetes runs it: SIGTERM finishes what is in flight and exits 0; a bot killed before it
could deliver leaves the messages to the next one, which sends each once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
from sqlmodel import select

from bot.domain.avro.parse import parse
from bot.domain.lineage.catalog import read_catalog
from bot.emulator import SlackDriver, Workspace
from bot.emulator.server import Emulator
from bot.services.lineage import LineageService
from bot.services.registry import Registry
from bot.store import migrate
from bot.store.database import Database
from bot.store.models import OutboxMessage
from tests.conftest import API_TOKEN, seed_workspace, start_emulator
from tests.ports import free_port
from tests.test_cli import wait_ready
from tests.test_proposals_slack import ALICE, BOB, V1, retyped

SIGNING_SECRET = "0123456789abcdef0123456789abcdef"


@dataclass
class Served:
    ws: Workspace
    emulator: Emulator
    env: dict[str, str]
    url: str


@pytest.fixture
async def served(migrated_url: str) -> AsyncIterator[Served]:
    """A migrated database with the catalog loaded, an emulated workspace, and the environment of `bot serve`."""
    db = Database(migrated_url)
    groups_ws = Workspace(f"xoxb-shutdown-{os.getpid()}")
    seed_workspace(groups_ws)
    groups = {g["handle"]: g["id"] for g in groups_ws.usergroups.values()}
    catalog, problems = read_catalog({
        "teams": {"orders-team": {"usergroup": groups["orders-team"], "members": [ALICE], "oncall": [ALICE]},
                  "analytics-team": {"usergroup": groups["analytics-team"], "members": [BOB], "oncall": [BOB]}},
        "subjects": {"orders-value": {"owner": "orders-team", "channel": "#orders-pipeline"}},
        "datasets": [{"name": "dwd", "namespace": "iceberg://lake", "owner": "analytics-team", "fields": ["amount"]}],
        "jobs": [{"name": "enrich", "owner": "analytics-team", "inputs": ["orders-value"], "outputs": ["dwd"],
                  "mappings": {"dwd.amount": ["orders-value.price"]}}]}, lambda _: None)  # type: ignore[arg-type, return-value]
    assert problems == []
    await LineageService(db).load_catalog(catalog)
    await Registry(db).record("orders-value", parse(V1))
    await db.close()
    emulator, runner = await start_emulator(groups_ws)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "CHANGEOPS_"))}, "DATABASE_URL": migrated_url,
           "SLACK_BOT_TOKEN": groups_ws.token, "SLACK_SIGNING_SECRET": SIGNING_SECRET, "PORT": str(port), "HOST": "127.0.0.1",
           "SLACK_API_URL": f"{emulator.base_url}/api/", "CHANGEOPS_API_TOKEN": API_TOKEN, "LOG_LEVEL": "INFO"}
    yield Served(groups_ws, emulator, env, f"http://127.0.0.1:{port}")
    await runner.cleanup()


async def start(served: Served, log: Path) -> asyncio.subprocess.Process:
    """``bot serve``, its log in ``log`` (a pipe nobody reads would stall it)."""
    with log.open("ab") as sink:
        process = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "serve", env=served.env, cwd=Path(__file__).parents[1],
                                                       stderr=sink)
    await wait_ready(served.url, process)
    return process


async def until_retry_recorded(url: str) -> None:
    db = Database(url)
    try:
        for _ in range(200):
            async with db.session() as session:
                rows = (await session.exec(select(OutboxMessage).where(OutboxMessage.attempts > 0))).all()
            if rows and all(r.lease_until is None for r in rows):
                return
            await asyncio.sleep(0.05)
    finally:
        await db.close()
    raise AssertionError("the bot never recorded a failed attempt")


async def propose_over_api(served: Served) -> dict[str, object]:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {API_TOKEN}"}) as http, \
            http.post(f"{served.url}/api/v1/proposals", json={"subject": "orders-value", "schema": retyped(V1, "price", "string"),
                                                              "proposer": ALICE}) as response:
        assert response.status == 201, await response.text()
        return dict(await response.json())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_stop_signal_finishes_work_in_flight_and_exits_0(served: Served, signum: int, tmp_path: Path) -> None:
    process = await start(served, tmp_path / "bot.log")
    ws = served.ws
    ws.hold("chat.postMessage")
    ws.hold("views.open")
    await propose_over_api(served)  # its card is on its way: the dispatcher waits inside chat.postMessage
    driver = SlackDriver(served.emulator, f"{served.url}/slack/events", SIGNING_SECRET)
    try:
        delivery = await driver.command("/schema propose orders-value", user=ALICE, channel="changes")
        assert delivery.status == 200  # acknowledged; the listener is still opening the form
        await ws.wait_for(lambda: "chat.postMessage" in ws.held and "views.open" in ws.held)
        process.send_signal(signum)
        await asyncio.sleep(0.5)
        assert process.returncode is None  # still finishing
        ws.release("chat.postMessage")
        ws.release("views.open")
        await asyncio.wait_for(process.wait(), timeout=30)
    finally:
        await driver.close()
        if process.returncode is None:
            process.kill()
    stderr = (tmp_path / "bot.log").read_text()
    assert process.returncode == 0, stderr[-2000:]
    assert [m for m in ws.channel_messages("schema-changes") if "Schema change #1" in m.text]
    assert [v for v in ws.views.values() if v.user == ALICE and v.view.get("title", {}).get("text") == "Propose a change"]
    assert "ChangeOps stopped" in stderr


async def test_a_bot_killed_before_sending_leaves_it_to_the_next_which_sends_once(served: Served, tmp_path: Path) -> None:
    ws = served.ws
    first = await start(served, tmp_path / "first.log")
    ws.failing["chat.postMessage"] = 500
    try:
        await propose_over_api(served)
        await ws.wait_for(lambda: len([c for c in ws.calls if c.method == "chat.postMessage" and c.status == 500]) >= 1)
        await until_retry_recorded(served.env["DATABASE_URL"])  # killed after the failure was noted, before any send succeeded
    finally:
        first.kill()
        await first.wait()
    assert ws.messages == []
    del ws.failing["chat.postMessage"]
    second = await start(served, tmp_path / "second.log")
    try:
        card = await ws.wait_for(lambda: [m for m in ws.channel_messages("schema-changes") if "Schema change #1" in m.text])
        await ws.wait_for(lambda: any("asked to acknowledge" in m.text for m in ws.channel_messages(ws.open_dm(BOB))))
        await asyncio.sleep(1.5)  # a poll or two more: nothing else may arrive
    finally:
        second.send_signal(signal.SIGTERM)
        await second.wait()
    assert second.returncode == 0 and len(card) == 1 and len(ws.channel_messages("schema-changes")) == 1
    assert len(ws.channel_messages("orders-pipeline")) == 1
    dms = [m.text for m in ws.channel_messages(ws.open_dm(BOB))]
    assert len(dms) == len(set(dms)) == 1, dms
    assert json.dumps(card[0].blocks).count("TYPE_CHANGED") == 1
    assert migrate.current(served.env["DATABASE_URL"]) == migrate.head()
