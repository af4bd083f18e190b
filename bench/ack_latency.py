"""Time to acknowledge Slack requests: the real bot against a bare slack-bolt AsyncApp that only acks.

Each app runs in its own process (``bot serve``, and ``bench/_bare_bolt.py``), so the load generator
and the Slack emulator in this process do not share their event loop. Both get the same 500 signed
requests (slash commands that open the propose form or show a card, and Approve clicks on a pending
proposal's card), 50 in flight, in three rounds taken in turn (bot, bare, bot, bare, ...), so a
machine busy with something else weighs on both alike; each round waits until the app of the round before is
idle (the bot's work after its acks once fell on the bare app's round and slowed it); percentiles are over all
rounds' samples. The real bot runs on SQLite with the example catalog loaded.

Run: .venv/bin/python bench/ack_latency.py
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bot.emulator import Emulator, SlackDriver, Workspace
from bot.playground import PEOPLE, seed
from bot.slack import ids

ROOT = Path(__file__).resolve().parents[1]
REQUESTS, IN_FLIGHT, ROUNDS = 500, 50, 3
SECRET = secrets.token_hex(16)
API_TOKEN = "bench-api-token-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{int(runner.addresses[0][1])}"


async def ready(url: str) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(300):
            try:
                async with http.get(f"{url}/readyz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not become ready")


def run(*args: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "bot", *args], env=env, check=True, capture_output=True, cwd=ROOT)


async def load(driver: SlackDriver, ws: Workspace, card: Any) -> list[float]:
    """500 requests, 50 in flight: a third open the form, a third show a card, a third click Approve."""
    gate = asyncio.Semaphore(IN_FLIGHT)
    users = list(PEOPLE.values())

    async def one(number: int) -> float:
        async with gate:
            user = users[number % len(users)]
            if number % 3 == 0:
                delivery = await driver.command("/schema propose orders-value", user=user, channel="changes")
            elif number % 3 == 1:
                delivery = await driver.command("/schema status 1", user=user, channel="changes")
            else:
                delivery = await driver.click(card, ids.APPROVE, user=user)
            assert delivery.status == 200, delivery.status
            return delivery.ack_seconds

    return list(await asyncio.gather(*(one(i) for i in range(REQUESTS))))


def ticks(pid: int) -> int:
    """CPU time the process ``pid`` has used (user and system, in clock ticks: 10 ms); 0 where there is no /proc."""
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return 0
    fields = stat.read_text().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


async def settled(pid: int) -> None:
    """Wait until the process ``pid`` has used no CPU for 200 ms (at most 30 s): the work it still does after its
    round (listeners after their acks, the outbox) must not weigh on the other app's round."""
    if not Path(f"/proc/{pid}/stat").exists():  # not Linux: a fixed pause
        await asyncio.sleep(2)
        return
    last, quiet = ticks(pid), 0
    for _ in range(300):
        await asyncio.sleep(0.1)
        now = ticks(pid)
        quiet = quiet + 1 if now == last else 0
        if quiet >= 2:
            return
        last = now


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def main() -> None:
    token = f"xoxb-bench-{secrets.token_hex(4)}"
    ws = Workspace(token)
    seed(ws)
    emulator = Emulator(ws)
    slack_runner, emulator.base_url = await serve(emulator.application())
    with tempfile.TemporaryDirectory() as folder:
        bot_port, bare_port = free_port(), free_port()
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{folder}/bench.db", "SLACK_BOT_TOKEN": token, "SLACK_SIGNING_SECRET": SECRET,
               "SLACK_API_URL": f"{emulator.base_url}/api/", "HOST": "127.0.0.1", "PORT": str(bot_port),
               "CHANGEOPS_API_TOKEN": API_TOKEN, "LOG_LEVEL": "WARNING"}
        run("migrate", env=env)
        run("catalog", "load", str(ROOT / "examples" / "catalog.yaml"), env=env)
        run("subject", "import", "orders-value", str(ROOT / "examples" / "schemas" / "orders.avsc"), env=env)
        bot = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "serve", env=env, cwd=ROOT,
                                                   stderr=asyncio.subprocess.DEVNULL)
        bare = await asyncio.create_subprocess_exec(sys.executable, str(ROOT / "bench" / "_bare_bolt.py"), str(bare_port), SECRET, token,
                                                    f"{emulator.base_url}/api/", cwd=ROOT, stderr=asyncio.subprocess.DEVNULL)
        try:
            bot_url, bare_url = f"http://127.0.0.1:{bot_port}", f"http://127.0.0.1:{bare_port}"
            await ready(bot_url)
            await ready(bare_url)
            schema = json.loads((ROOT / "examples" / "schemas" / "orders.avsc").read_text())
            schema["fields"][1]["type"] = "long"
            async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {API_TOKEN}"}) as http:
                async with http.post(f"{bot_url}/api/v1/proposals", json={"subject": "orders-value", "schema": schema,
                                                                          "proposer": PEOPLE["you"]}) as response:
                    assert response.status == 201, await response.text()
            card_message = await ws.wait_for(lambda: next((m for m in ws.messages if m.blocks and m.blocks[-2].get("type") == "actions"), None))
            card = copy.deepcopy(card_message)
            drivers = [SlackDriver(emulator, f"{url}/slack/events", SECRET, ack_limit=1e9) for url in (bot_url, bare_url)]
            real: list[float] = []
            baseline: list[float] = []
            used = {bot.pid: 0, bare.pid: 0}  # CPU ticks each app used during its rounds
            try:
                for _ in range(ROUNDS):
                    for samples, app in ((real, bot), (baseline, bare)):
                        before = ticks(app.pid)
                        samples += await load(drivers[0 if app is bot else 1], ws, card)
                        used[app.pid] += ticks(app.pid) - before
                        await settled(app.pid)
            finally:
                for driver in drivers:
                    await driver.close()
        finally:
            for process in (bot, bare):
                process.terminate()
                await process.wait()
    await slack_runner.cleanup()
    for name, samples in (("ChangeOps", real), ("bare slack-bolt (ack only)", baseline)):
        print(f"{name}: p50 {statistics.median(samples) * 1000:.1f} ms, p99 {percentile(samples, 0.99) * 1000:.1f} ms "
              f"over {len(samples)} requests ({ROUNDS} rounds), {IN_FLIGHT} in flight")
    print(f"ratio ChangeOps / bare: p50 {statistics.median(real) / statistics.median(baseline):.2f}x, "
          f"p99 {percentile(real, 0.99) / percentile(baseline, 0.99):.2f}x (aim: 1.2x at p50, 1.0x at p99)")
    if used[bare.pid]:  # with 50 in flight and the app busy, the wait is about 50 requests' CPU: the ratio follows this one
        hertz = os.sysconf("SC_CLK_TCK")
        print(f"CPU during the rounds, per request: ChangeOps {used[bot.pid] / hertz / len(real) * 1000:.2f} ms, bare "
              f"{used[bare.pid] / hertz / len(baseline) * 1000:.2f} ms ({used[bot.pid] / used[bare.pid]:.2f}x; the work after the acks "
              "that falls in the round counts)")


if __name__ == "__main__":
    if "--smoke" in sys.argv[1:]:  # tiny sizes, to check that it runs
        REQUESTS, IN_FLIGHT, ROUNDS = 12, 4, 1
    asyncio.run(main())
