"""Block Kit as plain text, for the terminal playground."""

from __future__ import annotations

from typing import Any


def as_text(fallback: str, blocks: list[dict[str, Any]]) -> str:
    """What a person would read in the message."""
    if not blocks:
        return fallback
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind in ("section", "header"):
            if "text" in block:
                lines.append(block["text"]["text"])
            lines.extend(f["text"] for f in block.get("fields", []))
            if "accessory" in block and block["accessory"].get("type") == "button":
                lines.append(f"[{block['accessory']['text']['text']}]")
        elif kind == "context":
            lines.append("  ".join(e.get("text", "") for e in block.get("elements", [])))
        elif kind == "divider":
            lines.append("―" * 20)
        elif kind == "actions":
            lines.append(" ".join(f"[{e['text']['text']}]" for e in block.get("elements", []) if "text" in e))
        elif kind == "markdown":
            lines.append(block.get("text", ""))
    return "\n".join(lines)
