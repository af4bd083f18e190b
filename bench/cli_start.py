"""How long the CLI takes from process start to exit, against the interpreter doing nothing, in the same run.

A producer's CI calls `bot classify` once per subject, so its start matters. Each command runs ``--runs`` times;
the median is printed with the bare interpreter's (``python -c pass``) and the difference.

Run: .venv/bin/python bench/cli_start.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OLD = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]}'
NEW = '{"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "long"}]}'


def median_seconds(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(command, check=False, capture_output=True)
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main(runs: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    (folder / "old.avsc").write_text(OLD)
    (folder / "new.avsc").write_text(NEW)
    bare = median_seconds([sys.executable, "-c", "pass"], runs)
    print(f"python -c pass (baseline): {bare * 1000:6.0f} ms")
    for label, args in (("bot --version", ["--version"]), ("bot classify old.avsc new.avsc", ["classify", str(folder / "old.avsc"), str(folder / "new.avsc")])):
        seconds = median_seconds([sys.executable, "-m", "bot", *args], runs)
        print(f"{label:<32} {seconds * 1000:6.0f} ms  ({seconds / bare:.1f}x the bare interpreter; aim <= 400 ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    main(parser.parse_args().runs)
