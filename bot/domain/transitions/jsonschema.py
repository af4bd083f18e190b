"""A transition's versions in JSON Schema: the old property goes back right before its new one (and stays required
where it was; the new one is optional until the contract, as documents written before it lack it), so documents
written either way validate while readers move; JSON Schema has no aliases, so the
contract is the target as written."""

from __future__ import annotations

import copy
import json
from collections.abc import Container, Sequence
from typing import Any

from bot.domain.transitions.model import Rename, TransitionError


class JsonEditor:
    """JSON Schema's transition versions."""

    def renames(self, current: str, target: str, current_paths: Container[str], target_paths: Container[str]) -> list[Rename]:
        """Nothing: a JSON Schema cannot say that a property replaces another (the mapping must)."""
        return []

    def expand(self, current: str, target: str, mapping: Sequence[Rename]) -> str:
        """The target with each old property (as the current version defines it) right before its new one."""
        old_doc, doc = json.loads(current), json.loads(target)
        for rename in mapping:
            old_parent, parent = _object(old_doc, rename.parent), _object(doc, rename.parent)
            old_name, new_name = rename.old.rpartition(".")[2], rename.new.rpartition(".")[2]
            properties = parent["properties"]
            rebuilt: dict[str, Any] = {}
            for name, value in properties.items():
                if name == new_name:
                    rebuilt[old_name] = copy.deepcopy(old_parent["properties"][old_name])
                rebuilt[name] = value
            parent["properties"] = rebuilt
            required = [n for n in parent.get("required") or [] if n != new_name or new_name in (old_parent.get("required") or [])]
            if old_name in (old_parent.get("required") or []) and old_name not in required:
                required.append(old_name)
            if required or "required" in parent:
                parent["required"] = required
        return json.dumps(doc, indent=2)

    def contract(self, current: str, target: str, mapping: Sequence[Rename]) -> str:
        """The target as written."""
        return target


def _object(doc: Any, parent: str) -> dict[str, Any]:
    """The schema object whose ``properties`` hold the fields at ``parent`` (through local ``$ref``s, array items and
    ``allOf``/``anyOf``/``oneOf`` branches)."""
    node = _holder(doc, doc)
    for name in [p for p in parent.split(".") if p]:
        if node is None or name not in node.get("properties", {}):
            raise TransitionError(f"no object at {parent}")
        node = _holder(doc, node["properties"][name])
    if node is None:
        raise TransitionError(f"{parent or 'the schema'} has no properties")
    return node


def _holder(doc: Any, node: Any, depth: int = 0) -> dict[str, Any] | None:
    """The object schema with ``properties`` that ``node`` is or leads to."""
    if not isinstance(node, dict) or depth > 32:
        return None
    if "$ref" in node:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise TransitionError(f"cannot edit through {ref!r}: a transition edits properties of this document only")
        target: Any = doc
        for part in [p.replace("~1", "/").replace("~0", "~") for p in ref[1:].strip("/").split("/") if p]:
            target = target.get(part) if isinstance(target, dict) else None
        return _holder(doc, target, depth + 1)
    if isinstance(node.get("properties"), dict):
        return node
    items = node.get("items")
    for inner in [items, *(node.get("allOf") or []), *(node.get("anyOf") or []), *(node.get("oneOf") or [])]:
        found = _holder(doc, inner, depth + 1)
        if found is not None:
            return found
    return None
