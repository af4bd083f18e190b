"""Schema references as users write them: Confluent's ``{"name", "subject", "version"}`` and ``NAME=SUBJECT:VERSION``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reference:
    """A named type a schema takes from another subject's version (Confluent's ``references`` entry)."""

    name: str
    subject: str
    version: int


def read_references(value: Any) -> list[Reference]:
    """Confluent's ``references`` array as given by a user (``[{"name", "subject", "version"}]``); ValueError says
    what is wrong with it."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError('"references" must be an array of {"name", "subject", "version"}')
    found = []
    for number, item in enumerate(value, start=1):
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) and item[k].strip() for k in ("name", "subject")):
            raise ValueError(f"reference {number} needs a \"name\" (the type's full name) and a \"subject\"")
        version = item.get("version")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError(f"reference {number} ({item['name']}) needs a \"version\", a number from 1")
        found.append(Reference(item["name"].strip(), item["subject"].strip(), version))
    return found


def parse_pin(text: str) -> Reference:
    """``NAME=SUBJECT:VERSION`` (the command line's and the Slack form's way of writing a reference)."""
    name, _, rest = text.partition("=")
    subject, _, version = rest.rpartition(":")
    if not name.strip() or not subject.strip() or not version.strip().isdigit() or int(version) < 1:
        raise ValueError(f"{text!r} is not a reference: write NAME=SUBJECT:VERSION, e.g. com.acme.Address=address:1")
    return Reference(name.strip(), subject.strip(), int(version))


def as_json(references: Sequence[Reference]) -> list[dict[str, Any]]:
    """The references as stored and registered."""
    return [{"name": r.name, "subject": r.subject, "version": r.version} for r in references]
