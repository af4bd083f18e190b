"""The bot's side of job submission: ``submit_worker.py`` run under a Flink runtime's own Python, once per job
(a JVM of its own: a submission is rare and must not share a planner's classpath), never on the event loop."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from bot.domain.flink.statements import Statement
from bot.domain.flink.status import FlinkError, FlinkUnavailable
from bot.flink.children import die_with_parent

WORKER = Path(__file__).with_name("submit_worker.py")
SUBMIT_SECONDS = 300.0


async def submit(root: str, version: str, rest_url: str, name: str, statements: list[Statement], config: dict[str, str],
                 starts: dict[str, dict[str, str]] | None = None, overrides: dict[str, str] | None = None) -> str:
    """Submit ``statements`` as the job ``name`` (restored from ``config["execution.state-recovery.path"]`` when given); its
    job id. ``starts`` gives the Kafka sources of some topics new start options (a source without state starts there);
    each must be found (else nothing is started). ``overrides`` are set after the job's own ``SET`` statements. FlinkError with Flink's own words when Flink refuses the job; FlinkUnavailable when no runtime
    can submit."""
    home = Path(root) / f"flink-{version}"
    python = home / "venv" / "bin" / "python"
    if not (home / ".complete").exists() or not python.exists():
        raise FlinkUnavailable(f"the Flink {version} runtime is not installed under {root}: run scripts/flink.sh install {version}")
    jars = sorted(str(p) for p in (home / "jars").glob("*.jar"))
    request: dict[str, Any] = {"rest_url": rest_url, "name": name, "config": config, "jars": jars,
                               "statements": [{"sql": s.sql, "kind": s.kind} for s in statements], "starts": starts or {},
                               "overrides": overrides or {}}
    process = await asyncio.create_subprocess_exec(str(python), str(WORKER), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE, preexec_fn=die_with_parent)
    try:
        out, err = await asyncio.wait_for(process.communicate(json.dumps(request).encode()), SUBMIT_SECONDS)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise FlinkUnavailable(f"submitting {name} to Flink took over {SUBMIT_SECONDS:.0f} s; it was stopped") from None
    lines = [line for line in out.decode(errors="replace").splitlines() if line.startswith("{")]
    if not lines:
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise FlinkUnavailable(f"the Flink submitter ended without an answer ({' / '.join(tail)[:400]})")
    answer = json.loads(lines[-1])
    if "job_id" in answer:
        return str(answer["job_id"])
    chain = [(kind, (message or "").strip().splitlines()[0] if (message or "").strip() else "") for kind, message in
             answer.get("failure") or [["?", "no reason given"]]]
    first = chain[0][1] or chain[0][0]
    deepest = next((message for _, message in reversed(chain) if message and message != "None"), first)
    raise FlinkError(f"Flink refused {name}: {first[:400]}" + (f" (caused by: {deepest[:400]})" if deepest != first else ""))
