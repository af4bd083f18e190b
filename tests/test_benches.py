"""Every benchmark still runs: each script with tiny sizes, against the real broker where it needs one. They print
figures and ratios; nothing here looks at a time."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SMOKE = {
    "classify.py": ["--smoke"], "impact.py": ["--smoke"], "ack_latency.py": ["--smoke"], "cli_start.py": ["--runs", "2"],
    "sli_ingest.py": ["--samples", "300", "--alerts", "2"], "replay.py": ["--messages", "600", "--rounds", "1"],
    "census.py": ["--groups", "30"], "flink_gate.py": ["--checks", "2"], "formats.py": ["--smoke"],
}


def test_every_bench_script_has_a_smoke_run() -> None:
    assert {p.name for p in BENCH.glob("[!_]*.py")} == set(SMOKE)


@pytest.mark.parametrize("script", sorted(SMOKE))
async def test_the_bench_runs_with_tiny_sizes(script: str, kafka_bootstrap: str) -> None:
    done = await asyncio.to_thread(subprocess.run, [sys.executable, str(BENCH / script), *SMOKE[script]], cwd=BENCH.parent,
                                   env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap}, capture_output=True, text=True,
                                   timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ratio" in done.stdout or "x the bare interpreter" in done.stdout, done.stdout
