"""Nothing outlives its parent: a bot killed outright takes its worker processes with it, and `make run` stops
whole (its playground, bot, emulator, Kafka broker and Schema Registry) whichever of its processes is told to stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.leaks import descendants, in_group, wait_gone
from tests.ports import free_port
from tests.test_cli import run_bot

ROOT = Path(__file__).parents[1]


def test_a_bot_killed_with_sigkill_takes_its_workers_with_it(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'bot.db'}"
    assert run_bot("migrate", env={"DATABASE_URL": db}).returncode == 0
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "KAFKA_"))}, "DATABASE_URL": db,
           "SLACK_BOT_TOKEN": "xoxb-1-lifetime", "SLACK_SIGNING_SECRET": "0123456789abcdef", "PORT": str(free_port()),
           "HOST": "127.0.0.1", "SLACK_API_URL": "http://127.0.0.1:9/api/"}
    bot = subprocess.Popen([sys.executable, "-m", "bot", "serve"], env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while time.monotonic() < deadline and len(workers) < 3:  # two workers and the pool's resource tracker
            time.sleep(0.1)
            assert bot.poll() is None, "the bot exited"
            workers = descendants(bot.pid)
        assert len(workers) >= 3, workers
        bot.send_signal(signal.SIGKILL)
        bot.wait(timeout=10)
        assert wait_gone(workers, 5) == set()
        assert in_group(bot.pid) == []
    finally:
        if bot.poll() is None:
            bot.kill()
            bot.wait()


def start_make_run(state: Path, registry: str | None = None) -> tuple[subprocess.Popen[str], list[str], threading.Thread]:
    """`make run` on ports of its own, its state in ``state``, read until the playground says it is open; with
    ``registry`` (a Schema Registry's URL) it uses that one instead of starting its own."""
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP_SERVERS", "DATABASE_URL", "SCHEMA_REGISTRY_URL", "MAKEFLAGS", "MFLAGS")}
    env["CHANGEOPS_VAR"] = os.path.relpath(state, ROOT)  # relative, as the default var/ is: each part must cope
    if registry is not None:
        env["SCHEMA_REGISTRY_URL"] = registry
    make = subprocess.Popen(["make", "--no-print-directory", "run", f"ARGS=--port {free_port()} --slack-port {free_port()} --no-prompt"],
                            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert make.stdout is not None
        for line in make.stdout:
            lines.append(line)
            if "ChangeOps playground: open" in line:
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if not ready.wait(240):
        for p in in_group(make.pid):
            os.kill(p.pid, signal.SIGKILL)
        make.wait(timeout=30)  # reaped here, not left for a later test's garbage collection to warn about
        pytest.fail("make run did not open the playground:\n" + "".join(lines[-40:]))
    return make, lines, reader


@pytest.mark.parametrize(("target", "signum"), [("make", signal.SIGTERM), ("bot playground", signal.SIGINT), ("kafka.Kafka", signal.SIGTERM),
                                                    ("apicurio-registry", signal.SIGTERM), ("the terminal's Ctrl-C", signal.SIGINT)])
def test_make_run_stops_whole_whichever_part_is_stopped(tmp_path: Path, target: str, signum: signal.Signals, registry_server: str) -> None:
    """Told to stop, each part stops the whole; a newcomer's terminal shows the summary and what people do, no noise:
    no traceback, no warning, no migration step by step (Ctrl-C signals every process of the group at once)."""
    own_registry = target in ("apicurio-registry", "the terminal's Ctrl-C")  # the others use the tests' registry: one JVM less to start
    make, lines, reader = start_make_run(tmp_path / "var", None if own_registry else registry_server)
    try:
        group = in_group(make.pid)
        assert any("kafka.Kafka" in p.command for p in group), [p.command for p in group]  # the local broker is part of it
        assert any("apicurio-registry" in p.command for p in group) == own_registry, [p.command for p in group]  # and its registry
        if own_registry:
            assert any(line.startswith("Schema Registry (Apicurio, in memory): http://127.0.0.1:") for line in lines), "".join(lines)
        time.sleep(6)  # the census's first round on the demo topics (it runs at the start)
        if target == "the terminal's Ctrl-C":
            os.killpg(make.pid, signum)
        else:
            [victim] = [make.pid] if target == "make" else [p.pid for p in group if target in p.command and "bash" not in p.command][:1]
            os.kill(victim, signum)
        make.wait(timeout=60)
        left = wait_gone({p.pid for p in in_group(make.pid)}, 30)
        assert not left, [p.command for p in in_group(make.pid)]
        words = ("Traceback", " ERROR ", "alembic", "|FAIL|", "No such file") + (() if target == "kafka.Kafka" else (" WARNING ",))
        noise = [line for line in lines if any(word in line for word in words)]  # (a broker killed under the bot may be warned of)
        assert not noise, "".join(lines)
        if target == "the terminal's Ctrl-C":
            assert lines[-1].endswith("INFO bot.runtime: ChangeOps stopped\n"), "".join(lines[-10:])
    finally:
        for p in in_group(make.pid):
            os.kill(p.pid, signal.SIGKILL)
        make.wait()
        reader.join(10)
        assert make.stdout is not None
        make.stdout.close()
