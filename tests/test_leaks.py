"""The end-of-session check (tests/leaks.py) fails a session that leaves a process running, and names it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.leaks import alive

ROOT = Path(__file__).parents[1]
LEAKY = '''
import subprocess
from pathlib import Path

def test_starts_a_child_and_an_orphan_and_leaves_them():
    child = subprocess.Popen(["sleep", "61"])
    orphan = subprocess.run(["sh", "-c", "sleep 62 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True).stdout.strip()
    Path("pids").write_text(f"{child.pid} {orphan}")
'''
TIDY = '''
import subprocess

def test_starts_a_child_and_waits_for_it():
    subprocess.run(["sleep", "0.1"], check=True)
'''


def inner_session(folder: Path, test: str) -> subprocess.CompletedProcess[str]:
    (folder / "test_inner.py").write_text(test)
    (folder / "conftest.py").write_text("import tests.leaks\ntests.leaks.GRACE = 0.5\n")
    (folder / "pytest.ini").write_text("[pytest]\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.leaks", "-p", "no:cacheprovider", "-q", "test_inner.py"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


def test_a_session_that_leaves_a_child_and_an_orphan_running_fails_and_names_them(tmp_path: Path) -> None:
    done = inner_session(tmp_path, LEAKY)
    pids = {int(p) for p in (tmp_path / "pids").read_text().split()}
    try:
        assert done.returncode == 1, done.stdout + done.stderr
        assert "1 passed" in done.stdout  # the test itself passed: the session fails for what it left behind
        assert "2 process(es) started by the tests are still running" in done.stdout
        for pid in pids:
            assert f"pid {pid} " in done.stdout
        assert "sleep 61" in done.stdout and "sleep 62" in done.stdout
    finally:
        for pid in alive(pids):
            os.kill(pid, signal.SIGKILL)


def test_a_session_that_leaves_nothing_passes(tmp_path: Path) -> None:
    done = inner_session(tmp_path, TIDY)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "still running" not in done.stdout
