"""What the walkers report (``Change``) and what the classifier returns (``Finding``)."""

from __future__ import annotations

import enum
from collections.abc import Hashable
from dataclasses import dataclass

ROOT_PATH = "(root)"  # where a finding at the root of a schema without a name (an untitled JSON Schema) is shown


class Direction(enum.StrEnum):
    """Which readers a change breaks."""

    BACKWARD = "backward"  # a reader on the NEW schema reading data written with the OLD one
    FORWARD = "forward"  # a reader on the OLD schema reading data written with the NEW one


@dataclass(slots=True)  # not frozen: a frozen dataclass is four times slower to build, and a pair makes thousands
class Change:
    """One difference between two schemas, as a walker saw it; ``breaks`` says which reads fail."""

    rule: str
    path: str
    old: str = ""
    new: str = ""
    detail: str = ""
    breaks: frozenset[Direction] = frozenset()
    version: int | None = None
    schema_type: str = "AVRO"  # the format whose rule it is (a rule id may name one change in each format)


@dataclass(slots=True)
class Difference:
    """What the Protobuf and JSON Schema walks report, in one direction: its rule (the registry's name), the element it
    is about (the same key whichever way the walk goes), and where people read it."""

    rule: str
    key: tuple[Hashable, ...]
    path: str
    old: str = ""
    new: str = ""
    detail: str = ""
