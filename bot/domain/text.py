"""Text from outside (Kafka's group and client names, message bytes, what people type) made safe to show on a terminal."""

from __future__ import annotations

import re

CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")  # what a terminal obeys rather than shows (tab, line ends kept)


def inert(text: str) -> str:
    """``text`` with each control character written as ``\\u00NN``, so it cannot move the cursor, clear or retitle a terminal
    (the same escape JSON uses: a JSON answer stays JSON)."""
    return CONTROL.sub(lambda found: f"\\u{ord(found.group()):04x}", text) if CONTROL.search(text) else text


def ago(seconds: float) -> str:
    """How old something is, for people: ``45 s``, ``12 min``, ``3 h``."""
    whole = max(0, int(seconds))
    return f"{whole} s" if whole < 120 else f"{whole // 60} min" if whole < 7200 else f"{whole // 3600} h"
