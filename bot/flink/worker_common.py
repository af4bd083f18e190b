"""What the two workers that run under a Flink runtime's own Python share (the standard library only): the SQL
client's ``SET``/``RESET`` statements, and a Java exception chain as data."""

from __future__ import annotations

import re
from typing import Any

SET = re.compile(r"(?is)SET\s+'([^']+)'\s*=\s*'([^']*)'")
RESET = re.compile(r"(?is)RESET\s+'([^']+)'")


def chain(err: Exception) -> list[list[str]]:
    """The Java exception and its causes, outermost first, as ``[class, message]``."""
    cause: Any = getattr(err, "java_exception", None)
    if cause is None:
        return [[type(err).__name__, str(err)]]
    found: list[list[str]] = []
    while cause is not None and len(found) < 20:
        found.append([str(cause.getClass().getName()), str(cause.getMessage())])
        cause = cause.getCause()
    return found
