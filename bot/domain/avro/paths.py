"""Field paths of a schema as lineage addresses them: ``payload.detail.price``.

Unions, arrays and maps are transparent (``items.price`` is the ``price`` of every item); a record
field that is itself a record is listed along with its members. Classifier paths
(``Order.items[].price``) convert with ``lineage_path``.
"""

from __future__ import annotations

import re

from bot.domain.avro.model import Node, Schema
from bot.domain.compat.changes import ROOT_PATH
from bot.domain.lineage.field_paths import FieldWalk

ENTRY = re.compile(r"<[A-Za-z0-9_]*>")
POSITION = re.compile(r"\[[0-9]*\]")  # an array's items, or one place of a JSON tuple


def field_walk(schema: Schema) -> FieldWalk:
    """A record schema's field paths, parents before children, each once (see ``bot.domain.lineage.field_paths``)."""
    return FieldWalk(schema.root, _steps, _record)


def _steps(node: Node) -> list[tuple[str | None, Node | None]]:
    if node.type == "union":
        return [(None, branch) for branch in node.branches]
    if node.type in ("array", "map"):
        return [(None, node.items if node.type == "array" else node.values)]
    if node.type == "record":
        return [(field.name, field.type) for field in node.fields]
    return []


def _record(node: Node) -> int | None:
    """What no path passes twice: a record (an anonymous type is the same at each use, and leads only to records)."""
    return id(node) if node.type == "record" else None


def lineage_path(path: str, label: str) -> str:
    """``Order.items[].price`` (a classifier path under root ``Order``) as ``items.price``; a referenced type's
    entry is dropped too (``Order.shipping<Address>.zip`` is ``shipping.zip``), and a JSON tuple's position
    (``Order.point[1]`` is ``point``). The root of a schema without a name is the whole record, as a named root is."""
    if path == ROOT_PATH:
        return ""
    rest = path[len(label):] if path.startswith(label) else path
    if "<" in rest:
        rest = ENTRY.sub("", rest)
    if "[" in rest:
        rest = POSITION.sub("", rest)
    return rest.replace("{}", "").lstrip(".")
