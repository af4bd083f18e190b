"""Nothing the tests start outlives the session: a pytest plugin (``-p tests.leaks``, set in pyproject.toml).

Every process a test starts inherits a marker in its environment (``CHANGEOPS_TEST_SESSION``, one value per
session), orphans and grandchildren included. When the session ends, any marked process still alive, and any
child of pytest, fails the session with its pid and command line, after a short grace for processes that are
on their way out. This process's own worker pool and resource tracker end with it and are not counted.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

MARK = "CHANGEOPS_TEST_SESSION"
GRACE = 10.0  # seconds a process may take to finish ending after its test
PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    """One live process as /proc shows it."""

    pid: int
    ppid: int
    pgrp: int
    session: int
    command: str


def processes() -> list[Proc]:
    """Every live process (zombies left out: they are dead, only not yet reaped)."""
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] in ("Z", "X"):
            continue
        found.append(Proc(int(entry.name), int(fields[1]), int(fields[2]), int(fields[3]), command))
    return found


def marked(token: str) -> set[int]:
    """The live processes whose environment carries ``MARK=token``."""
    needle = f"{MARK}={token}".encode()
    pids = set()
    for proc in processes():
        try:
            environ = (PROC / str(proc.pid) / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            pids.add(proc.pid)
    return pids


def in_group(pgrp: int) -> list[Proc]:
    """The live processes of a process group (a process started with ``start_new_session`` leads its own)."""
    return [p for p in processes() if p.pgrp == pgrp or p.session == pgrp]


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid``."""
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p.pid for p in processes() if p.ppid in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running."""
    live = {p.pid for p in processes()}
    return pids & live


def wait_gone(pids: set[int], seconds: float) -> set[int]:
    """Wait until none of ``pids`` runs (at most ``seconds``); those still running."""
    deadline = time.monotonic() + seconds
    left = alive(pids)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = alive(left)
    return left


def _own_helpers() -> set[int]:
    """This process's multiprocessing workers and resource tracker: they end when it does."""
    return {p.pid for p in processes() if p.ppid == os.getpid() and "from multiprocessing." in p.command}


def leaked(token: str, grace: float) -> list[Proc]:
    """What the session left running, after waiting ``grace`` seconds for it to end."""
    def suspects() -> set[int]:
        children = {p.pid for p in processes() if p.ppid == os.getpid()}
        return (marked(token) | children) - {os.getpid()} - _own_helpers()

    left = wait_gone(suspects(), grace)
    by_pid = {p.pid: p for p in processes()}
    return [by_pid[pid] for pid in sorted(left) if pid in by_pid]


_token = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    os.environ[MARK] = token
    config.stash[_token] = token


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.pluginmanager.hasplugin("dsession"):  # pytest-xdist's controller: each worker checks what it started
        return
    left = leaked(session.config.stash[_token], GRACE)
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"{len(left)} process(es) started by the tests are still running:"]
    lines += [f"  pid {p.pid} (parent {p.ppid}): {p.command[:300]}" for p in left]
    for line in lines:
        if reporter is not None:
            reporter.write_line(line, red=True)
        else:
            print(line)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
