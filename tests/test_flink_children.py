"""A process the bot starts for a step of an operation (a Flink submission, a savepoint rewrite) dies with the bot,
so a run that resumes the step never finds it still going."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BOT = """
import asyncio, sys, threading
from bot.flink.children import die_with_parent

async def main():
    busy = threading.Event()
    threading.Thread(target=busy.wait, daemon=True).start()  # the bot has threads when it starts a step
    # as bot.flink.submit and bot.flink.savepoints start theirs: from the event loop, through asyncio's launcher
    step = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(120)", preexec_fn=die_with_parent)
    print(step.pid, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


def state(pid: int) -> str | None:
    """The process's state letter from /proc (Z: dead, not yet reaped), or None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_step_s_process_is_killed_when_the_bot_is_killed() -> None:
    with subprocess.Popen([sys.executable, "-c", BOT], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as bot:
        assert bot.stdout is not None
        step = int(bot.stdout.readline())
        assert state(step) in ("S", "R")
        bot.kill()
    deadline = time.monotonic() + 10
    while state(step) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert state(step) in (None, "Z"), "the step's process outlived the bot that started it"
