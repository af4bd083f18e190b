"""The `bot` command as a newcomer runs it: real processes, real HTTP."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from bot.emulator import SlackDriver, Workspace
from tests.conftest import seed_workspace, start_emulator
from tests.ports import free_port

SECRET_TOKEN = "xoxb-111-222-thisisverysecret"
SIGNING_SECRET = "0123456789abcdef0123456789abcdef"


def run_bot(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "DATABASE_URL"))}
    return subprocess.run([sys.executable, "-m", "bot", *args], env={**clean, **env}, capture_output=True, text=True, timeout=60)


async def wait_ready(url: str, process: asyncio.subprocess.Process, seconds: float = 30.0) -> None:
    """Until ``/readyz`` answers 200; fails when the bot exits or never gets ready."""
    deadline = asyncio.get_running_loop().time() + seconds
    async with aiohttp.ClientSession() as http:
        while asyncio.get_running_loop().time() < deadline:
            if process.returncode is not None:
                raise AssertionError(f"the bot exited with {process.returncode} before it was ready")
            try:
                async with http.get(f"{url}/readyz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError(f"{url} did not become ready within {seconds:.0f} s")


def test_serve_without_a_token_stops_with_one_line() -> None:
    result = run_bot("serve", env={})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "SLACK_BOT_TOKEN is not set" in result.stderr


async def test_migrate_then_serve_and_never_log_secrets(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    migrated = run_bot("migrate", env={"DATABASE_URL": db})
    assert migrated.returncode == 0, migrated.stderr
    assert "database at" in migrated.stdout
    ws = Workspace(SECRET_TOKEN)
    seed_workspace(ws)
    emulator, runner = await start_emulator(ws)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}, "DATABASE_URL": db,
           "SLACK_BOT_TOKEN": SECRET_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET, "PORT": str(port),
           "HOST": "127.0.0.1", "LOG_LEVEL": "DEBUG", "SLACK_API_URL": f"{emulator.base_url}/api/"}
    log = tmp_path / "serve.log"  # a file, not a pipe: a bot logging at DEBUG (a census at start on a busy broker) fills a pipe
    with log.open("wb") as sink:  # nobody reads until the end, and a full pipe blocks the bot on its logging
        process = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "serve", env=env, stderr=sink)
    driver = SlackDriver(emulator, f"http://127.0.0.1:{port}/slack/events", SIGNING_SECRET)
    try:
        await wait_ready(f"http://127.0.0.1:{port}", process)
        await driver.command("/schema help", user="U0000ALICE", channel="changes")
        await driver.event({"type": "app_home_opened", "user": "U0000ALICE", "channel": "D1", "tab": "home"})
        await ws.wait_for(lambda: ws.home.get("U0000ALICE"))
        assert "`/schema help`" in ws.ephemerals_for("U0000ALICE")[0].text
    finally:
        await driver.close()
        process.terminate()
        await process.wait()
        await runner.cleanup()
    stderr = log.read_text(errors="replace")
    assert "ChangeOps listening" in stderr
    assert "views.publish" in stderr or "views_publish" in stderr or "Sending a request" in stderr
    assert SECRET_TOKEN not in stderr
    assert SIGNING_SECRET not in stderr


@pytest.mark.parametrize("args", [["--version"], ["--help"]])
def test_python_dash_m_works(args: list[str]) -> None:
    result = run_bot(*args, env={})
    assert result.returncode == 0


def test_a_reader_that_goes_away_stops_the_command_quietly(tmp_path: Path) -> None:
    """`bot ... | head`: once the pipe's reader has closed it, the command ends as one killed by SIGPIPE, with no traceback."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"id": 1, "old": "long", "new": "int", "mode": "FULL"}\n' * 20_000)  # far more answers than a pipe holds
    with subprocess.Popen([sys.executable, "-m", "bot", "classify", "--pairs", str(pairs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as bot:
        assert bot.stdout is not None and bot.stderr is not None
        assert bot.stdout.readline().startswith('{"id":1,')
        bot.stdout.close()
        assert bot.wait(timeout=60) == 141 and bot.stderr.read() == ""
