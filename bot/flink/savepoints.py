"""Savepoints rewritten with Flink's State Processor API: a copy without some operators' state, by the small JVM
program ``scripts/flink.sh install`` compiles into the runtime (``RemoveOperators``), run as a process of its own."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.domain.flink.status import FlinkError, FlinkUnavailable
from bot.flink.children import die_with_parent

REWRITE_SECONDS = 600.0


async def without_operators(root: str, version: str, source: str, target: str, operators: list[str]) -> str:
    """Write a copy of the savepoint ``source`` at ``target`` without the state of ``operators`` (vertex ids); its location.
    The copy's metadata points at the source's files, so the source must be kept. FlinkError with Flink's words."""
    tools = Path(root) / f"flink-{version}" / "tools"
    if not (tools / "classes" / "RemoveOperators.class").exists():
        raise FlinkUnavailable(f"the State Processor API of Flink {version} is not installed under {root}: run scripts/flink.sh install {version}")
    classpath = ":".join([f"{(tools / 'flink-lib').read_text().strip()}/*", f"{tools}/*", str(tools / "classes")])
    options = (tools / "java-opts").read_text().split()
    process = await asyncio.create_subprocess_exec("java", *options, "-cp", classpath, "RemoveOperators", source, target, *operators,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, preexec_fn=die_with_parent)
    try:
        out, err = await asyncio.wait_for(process.communicate(), REWRITE_SECONDS)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise FlinkUnavailable(f"rewriting the savepoint {source} took over {REWRITE_SECONDS:.0f} s; it was stopped") from None
    if process.returncode != 0:
        lines = [line for line in err.decode(errors="replace").splitlines() if line.strip() and not line.startswith("\t")]
        causes = [line for line in lines if line.startswith("Caused by:")]
        raise FlinkError(f"Flink could not rewrite the savepoint {source}: {(causes or lines or ['no reason given'])[-1][:400]}")
    return out.decode().strip().splitlines()[-1]
