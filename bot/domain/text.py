"""Text from outside (Kafka's group and client names, message bytes, what people type) made safe to show on a terminal or in Slack."""

from __future__ import annotations

import re

BIDI = "\u202a-\u202e\u2066-\u2069"  # embeddings, overrides and isolates: they reorder what is shown after them ("Trojan Source")
CONTROL = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f{BIDI}]|\r(?!\n)")  # what a terminal obeys rather than shows (tab, line ends kept)
REORDERING = re.compile(f"[{BIDI}]")


def inert(text: str) -> str:
    """``text`` with each control character written as ``\\u00NN``, so it cannot move the cursor, clear or retitle a terminal
    (the same escape JSON uses: a JSON answer stays JSON)."""
    return CONTROL.sub(lambda found: f"\\u{ord(found.group()):04x}", text) if CONTROL.search(text) else text


def unreordered(text: str) -> str:
    """``text`` with each character that would reorder what follows it written as ``[U+202E]``, so a name cannot show as
    another (``\u202eeulav`` as ``value``)."""
    return REORDERING.sub(lambda found: f"[U+{ord(found.group()):04X}]", text) if REORDERING.search(text) else text


def ago(seconds: float) -> str:
    """How old something is, for people: ``45 s``, ``12 min``, ``3 h``."""
    whole = max(0, int(seconds))
    return f"{whole} s" if whole < 120 else f"{whole // 60} min" if whole < 7200 else f"{whole // 3600} h"
