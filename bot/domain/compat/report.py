"""Verdicts rendered for people (text) and for programs (JSON)."""

from __future__ import annotations

from typing import Any

from bot.domain.compat.classify import Verdict
from bot.domain.compat.rules import CATALOGUE, Level

NAMES = {"AVRO": "Avro", "PROTOBUF": "Protobuf", "JSON": "JSON Schema"}


def as_json(verdict: Verdict) -> dict[str, Any]:
    """``{"level","backward","forward","changes":[{"path","rule","level","message"}]}``."""
    return {
        "level": str(verdict.level),
        "backward": verdict.backward,
        "forward": verdict.forward,
        "changes": [finding.as_json() for finding in verdict.findings],
    }


def summary(verdict: Verdict) -> str:
    """One line: the level, and what it means."""
    head = verdict.level.name
    if verdict.first_version:
        return f"{head}: first version of the subject, nothing to compare with"
    if verdict.identical:
        return f"{head}: no change (identical to the current version)"
    directions = f"backward {'ok' if verdict.backward else 'FAILS'}, forward {'ok' if verdict.forward else 'FAILS'}"
    count = len(verdict.findings)
    return f"{head} under {verdict.mode.value} ({directions}; {count} change{'s' if count != 1 else ''})"


def as_text(verdict: Verdict) -> str:
    """The level first, then the findings grouped by level, worst first."""
    lines = [summary(verdict)]
    for level in sorted(Level, reverse=True):
        group = [f for f in verdict.findings if f.level is level]
        if not group:
            continue
        lines += ["", f"{level.name.lower()} ({len(group)}):"]
        for finding in group:
            lines.append(f"  {finding.rule}  {finding.path}")
            lines.append(f"    {finding.message}")
    return "\n".join(lines)


def rules_text() -> str:
    """The catalogue as an aligned table."""
    width = max(len(rule.id) for rule in CATALOGUE)
    lines = [f"{'RULE'.ljust(width)}  {'LEVEL':<10}  {'FORMAT':<11}  PURPOSE"]
    lines += [f"{rule.id.ljust(width)}  {str(rule.level):<10}  {', '.join(NAMES[f] for f in rule.formats):<11}  {rule.purpose}" for rule in CATALOGUE]
    lines += ["", "A change that makes schema resolution fail in a direction the mode requires is breaking, whatever its rule's level;",
              "one that fails only a direction the mode does not require is at least compatible."]
    return "\n".join(lines)


def rules_markdown() -> str:
    """The catalogue as a Markdown table (the documentation's rules page is this)."""
    lines = ["| rule | level on its own | what it reports | format |", "|---|---|---|---|"]
    lines += [f"| `{rule.id}` | {rule.level} | {rule.purpose} | {', '.join(NAMES[f] for f in rule.formats)} |" for rule in CATALOGUE]
    return "\n".join(lines) + "\n"


def rules_json() -> list[dict[str, Any]]:
    """The catalogue as JSON."""
    return [{"id": rule.id, "level": str(rule.level), "purpose": rule.purpose, "formats": list(rule.formats)} for rule in CATALOGUE]
