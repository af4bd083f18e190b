"""A transition's versions in Avro, written on the schema's JSON: the old field goes back right before its new one,
and the new field names the old one as an alias, so a reader on the new name reads data written before the change
(Avro 1.12, "Aliases"); the contract drops that alias again (data written with both names would show the new one
twice to a reader that aliases one to the other)."""

from __future__ import annotations

import copy
import json
from collections.abc import Container, Sequence
from typing import Any

from bot.domain.transitions.model import Rename, TransitionError

NAMED = ("record", "error", "enum", "fixed")


class AvroEditor:
    """Avro's transition versions."""

    def renames(self, current: str, target: str, current_paths: Container[str], target_paths: Container[str]) -> list[Rename]:
        """Each field of the target with an alias naming a field the current version has and the target does not, at its
        record's shallowest place (the plan names the other places of a record used at several)."""
        found = []
        for prefix, field in _fields(json.loads(target)):
            for alias in field.get("aliases") or []:
                old = f"{prefix}{alias}"
                if old in current_paths and old not in target_paths:
                    found.append(Rename(old, f"{prefix}{field['name']}"))
        return found

    def expand(self, current: str, target: str, mapping: Sequence[Rename]) -> str:
        """The target with each old field (as the current version defines it) right before its new one."""
        old_doc, doc = json.loads(current), json.loads(target)
        for rename in mapping:
            fields = _record_fields(doc, rename.parent)
            names = [f.get("name") for f in fields]
            if rename.old.rpartition(".")[2] in names:
                continue  # a record type used in two places: its fields are edited once
            at = names.index(rename.new.rpartition(".")[2])
            fields.insert(at, copy.deepcopy(_field(old_doc, rename.old)))
            _alias(fields[at + 1], rename)
        return json.dumps(_defined_once(doc), indent=2)

    def contract(self, current: str, target: str, mapping: Sequence[Rename]) -> str:
        """The target without the aliases that name the old fields: aliases work by rewriting the writer's schema (Avro
        1.12, "Aliases"), so a reader aliasing ``userid`` to ``userId`` sees ``userId`` twice in every record the expand
        version wrote (Java's Avro, and Apicurio with it, refuse such a reader). Records written before the expand step
        are read with the new field's default, if it has one."""
        doc = json.loads(target)
        for rename in mapping:
            field = _field(doc, rename.new)
            kept = [a for a in field.get("aliases") or [] if a != rename.old.rpartition(".")[2]]
            if kept:
                field["aliases"] = kept
            else:
                field.pop("aliases", None)
        return json.dumps(doc, indent=2)


def _alias(field: dict[str, Any], rename: Rename) -> None:
    old = rename.old.rpartition(".")[2]
    aliases = list(field.get("aliases") or [])
    if old not in aliases and "default" not in field:
        field["aliases"] = [*aliases, old]


def _fields(doc: Any) -> list[tuple[str, dict[str, Any]]]:
    """Every record field of the schema with the path prefix lineage gives it (``address.`` for ``address.zip``), each
    record at its shallowest place (met once, however many places use it), in the schema's order."""
    named = _definitions(doc)
    found: list[tuple[tuple[int, ...], str, dict[str, Any]]] = []
    met: set[int] = set()
    level: list[tuple[Any, str, tuple[int, ...]]] = [(doc, "", ())]
    while level:
        below = []
        for node, prefix, order in level:
            for r, record in enumerate(_records_in(node, named)):
                if id(record) in met:
                    continue
                met.add(id(record))
                for f, field in enumerate(record.get("fields") or []):
                    if isinstance(field, dict) and isinstance(field.get("name"), str):
                        at = (*order, r, f)
                        found.append((at, prefix, field))
                        below.append((field.get("type"), f"{prefix}{field['name']}.", at))
        level = below
    return [(prefix, field) for _, prefix, field in sorted(found, key=lambda entry: entry[0])]


def _records_in(node: Any, named: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The records a type is or holds (unions, arrays and maps are transparent; a name is looked up in ``named``, the
    document's definitions)."""
    if isinstance(node, list):
        return [r for branch in node for r in _records_in(branch, named)]
    if isinstance(node, str):
        found = named.get(node) or next((d for full, d in named.items() if full.rpartition(".")[2] == node), None)
        return [found] if found is not None and found.get("type") in ("record", "error") else []
    if not isinstance(node, dict):
        return []
    kind = node.get("type")
    if kind in ("record", "error"):
        return [node]
    if kind == "array":
        return _records_in(node.get("items"), named)
    if kind == "map":
        return _records_in(node.get("values"), named)
    return _records_in(kind, named) if isinstance(kind, dict | list) else []


def _record_fields(doc: Any, parent: str) -> list[dict[str, Any]]:
    """The field list of the record at ``parent`` (the top record for ``""``)."""
    named = _definitions(doc)
    records = _records_in(doc, named)
    for name in [p for p in parent.split(".") if p]:
        field = next((f for r in records for f in r.get("fields") or [] if isinstance(f, dict) and f.get("name") == name), None)
        if field is None:
            raise TransitionError(f"no record at {parent}")
        records = _records_in(field.get("type"), named)
    if not records:
        raise TransitionError(f"{parent or 'the schema'} is not a record")
    fields: list[dict[str, Any]] = records[0]["fields"]
    return fields


def _field(doc: Any, path: str) -> dict[str, Any]:
    parent, _, name = path.rpartition(".")
    found = next((f for f in _record_fields(doc, parent) if f.get("name") == name), None)
    if found is None:
        raise TransitionError(f"no field {path}")
    return found


def _definitions(doc: Any) -> dict[str, dict[str, Any]]:
    """Named types by full name, where the document defines them."""
    found: dict[str, dict[str, Any]] = {}

    def walk(node: Any, space: str) -> None:
        if isinstance(node, list):
            for branch in node:
                walk(branch, space)
        elif isinstance(node, dict):
            kind = node.get("type")
            if kind in NAMED and isinstance(node.get("name"), str):
                full = _full(node, space)
                if full in found:
                    return
                found[full] = node
                space = full.rpartition(".")[0]
                for field in node.get("fields") or []:
                    walk(field.get("type") if isinstance(field, dict) else None, space)
            else:
                for key in ("type", "items", "values"):
                    walk(node.get(key), space)

    walk(doc, "")
    return found


def _full(node: dict[str, Any], space: str) -> str:
    name = str(node["name"])
    if "." in name:
        return name
    own = node.get("namespace", space)
    return f"{own}.{name}" if own else name


def _defined_once(doc: Any) -> Any:
    """The document with each named type defined where it first appears and named after that (the old field's type and
    the new field's may be one); two different definitions of one name are refused."""
    seen: dict[str, str] = {}

    def walk(node: Any, space: str) -> Any:
        if isinstance(node, list):
            return [walk(branch, space) for branch in node]
        if not isinstance(node, dict):
            return node
        kind = node.get("type")
        if kind in NAMED and isinstance(node.get("name"), str):
            full = _full(node, space)
            text = json.dumps(node, sort_keys=True)
            if full in seen:
                if seen[full] != text:
                    raise TransitionError(f"the type {full} would be defined twice, differently (by the old field and by the new one): "
                                          "give the new field's type a new name")
                return full
            seen[full] = text
            inner = full.rpartition(".")[0]
            return {**node, "fields": [{**f, "type": walk(f.get("type"), inner)} if isinstance(f, dict) else f for f in node.get("fields") or []]} \
                if kind in ("record", "error") else node
        return {**node, **{key: walk(node[key], space) for key in ("type", "items", "values") if key in node}}

    return walk(doc, "")
