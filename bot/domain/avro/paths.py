"""Field paths of a schema as lineage addresses them: ``payload.detail.price``.

Unions, arrays and maps are transparent (``items.price`` is the ``price`` of every item); a record
field that is itself a record is listed along with its members. Classifier paths
(``Order.items[].price``) convert with ``lineage_path``.
"""

from __future__ import annotations

import re

from bot.domain.avro.model import Node, Schema
from bot.domain.compat.changes import ROOT_PATH

ENTRY = re.compile(r"<[A-Za-z0-9_]*>")
POSITION = re.compile(r"\[[0-9]*\]")  # an array's items, or one place of a JSON tuple


def field_paths(schema: Schema) -> list[str]:
    """Every field path of a record schema, parents before children, each once."""
    found: dict[str, None] = {}

    def walk(node: Node, prefix: str, seen: frozenset[int]) -> None:
        if node.type == "union":
            for branch in node.branches:
                walk(branch, prefix, seen)
        elif node.type == "array" and node.items is not None:
            walk(node.items, prefix, seen)
        elif node.type == "map" and node.values is not None:
            walk(node.values, prefix, seen)
        elif node.type == "record" and id(node) not in seen:
            for field in node.fields:
                path = f"{prefix}.{field.name}" if prefix else field.name
                found[path] = None
                walk(field.type, path, seen | {id(node)})

    walk(schema.root, "", frozenset())
    return list(found)


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
