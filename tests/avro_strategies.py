"""Hypothesis strategies: valid Avro schemas, and related pairs made by realistic edits."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from hypothesis import strategies as st

FIELD_NAMES = ["id", "price", "qty", "note", "status", "items", "at", "tags", "code"]
SYMBOLS = ["NEW", "PAID", "SHIPPED", "VOID", "LOST"]
PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
LOGICAL = [("int", "date"), ("long", "timestamp-millis"), ("long", "timestamp-micros"), ("int", "time-millis")]
_counter = itertools.count()


def default_for(schema: Any) -> Any:
    """A valid default value for a schema (the first branch of a union)."""
    if isinstance(schema, list):
        return default_for(schema[0])
    kind = schema if isinstance(schema, str) else schema["type"]
    if isinstance(schema, dict) and schema.get("logicalType") == "decimal":
        return "\u0000"
    plain = {"null": None, "boolean": False, "int": 0, "long": 0, "float": 0.0, "double": 0.0, "bytes": "", "string": ""}
    return plain[kind] if kind in plain else _complex_default(schema)


def _complex_default(schema: Any) -> Any:
    kind = schema["type"]
    if kind == "enum":
        return schema["symbols"][0]
    if kind == "fixed":
        return "\u0000" * schema["size"]
    if kind == "array":
        return []
    if kind == "map":
        return {}
    if kind == "record":
        return {f["name"]: default_for(f["type"]) for f in schema["fields"]}
    raise ValueError(kind)


def _name(prefix: str) -> str:
    return f"{prefix}{next(_counter)}"


@st.composite
def leaf(draw: st.DrawFn) -> Any:
    choice = draw(st.integers(0, 9))
    if choice < 6:
        return draw(st.sampled_from(PRIMITIVES[1:]))
    if choice == 6:
        base, logical = draw(st.sampled_from(LOGICAL))
        return {"type": base, "logicalType": logical}
    if choice == 7:
        symbols = draw(st.lists(st.sampled_from(SYMBOLS), min_size=1, max_size=4, unique=True))
        enum: dict[str, Any] = {"type": "enum", "name": _name("E"), "symbols": symbols}
        if draw(st.booleans()):
            enum["default"] = symbols[0]
        return enum
    if choice == 8:
        return {"type": "fixed", "name": _name("F"), "size": draw(st.integers(1, 4))}
    return {"type": "bytes", "logicalType": "decimal", "precision": draw(st.integers(4, 12)), "scale": draw(st.integers(0, 3))}


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        children.map(lambda c: {"type": "array", "items": c}),
        children.map(lambda c: {"type": "map", "values": c}),
        children.filter(lambda c: not isinstance(c, list) and c != "null").map(lambda c: ["null", c]),
        record(children),
    )


def record(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    @st.composite
    def build(draw: st.DrawFn) -> Any:
        names = draw(st.lists(st.sampled_from(FIELD_NAMES), min_size=1, max_size=4, unique=True))
        fields = []
        for name in names:
            ftype = draw(children)
            field: dict[str, Any] = {"name": name, "type": ftype}
            if draw(st.booleans()):
                field["default"] = default_for(ftype)
            fields.append(field)
        return {"type": "record", "name": _name("R"), "fields": fields}

    return build()


def schemas() -> st.SearchStrategy[Any]:
    """Records of nested records, arrays, maps, optional values, enums, fixed and logical types."""
    return record(st.recursive(leaf(), _extend, max_leaves=6))


# --- edits ----------------------------------------------------------------------------------------

def _records(schema: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for branch in node:
                walk(branch)
        elif isinstance(node, dict):
            if node["type"] == "record":
                found.append(node)
                for field in node["fields"]:
                    walk(field["type"])
            elif node["type"] == "array":
                walk(node["items"])
            elif node["type"] == "map":
                walk(node["values"])

    walk(schema)
    return found


EDITS = ["add_default", "add_plain", "remove", "retype", "promote", "narrow", "optional", "required", "rename_alias",
         "rename", "change_default", "drop_default", "logical", "enum_add", "enum_remove", "decimal", "fixed_size",
         "namespace", "type_rename", "alias_other", "noop"]


@st.composite
def edited(draw: st.DrawFn, schema: Any) -> Any:
    """The schema after one to three realistic edits."""
    new = copy.deepcopy(schema)
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(_records(new)))
        edit = draw(st.sampled_from(EDITS))
        fields = target["fields"]
        index = draw(st.integers(0, len(fields) - 1))
        field = fields[index]
        taken = {f["name"] for f in fields} | {a for f in fields for a in f.get("aliases", [])}
        fresh = next((n for n in FIELD_NAMES + ["extra", "more"] if n not in taken), None)
        kind = field["type"] if isinstance(field["type"], str) else None
        if edit == "add_default" and fresh:
            ftype = draw(leaf())
            fields.append({"name": fresh, "type": ftype, "default": default_for(ftype)})
        elif edit == "add_plain" and fresh:
            fields.append({"name": fresh, "type": draw(leaf())})
        elif edit == "remove" and len(fields) > 1:
            fields.pop(index)
        elif edit == "retype":
            field["type"] = draw(leaf())
            field.pop("default", None)
        elif edit == "promote" and kind in ("int", "long", "float", "string", "bytes"):
            field["type"] = {"int": "long", "long": "double", "float": "double", "string": "bytes", "bytes": "string"}[kind]
            field.pop("default", None)
        elif edit == "narrow" and kind in ("long", "double"):
            field["type"] = {"long": "int", "double": "float"}[kind]
            field.pop("default", None)
        elif edit == "optional" and not isinstance(field["type"], list) and field["type"] != "null":
            field["type"] = ["null", field["type"]]
            field["default"] = None
        elif edit == "required" and isinstance(field["type"], list):
            field["type"] = field["type"][1]
            field.pop("default", None)
        elif edit == "rename_alias" and fresh:
            field["aliases"] = [field["name"]]
            field["name"] = fresh
        elif edit == "alias_other" and len(fields) > 1:  # an alias naming another field of the record (where rewrites collide)
            other = fields[draw(st.integers(0, len(fields) - 1))]["name"]
            if other != field["name"]:
                field["aliases"] = sorted({*field.get("aliases", []), other})
        elif edit == "rename" and fresh:
            field["name"] = fresh
        elif edit == "change_default":
            field["default"] = default_for(field["type"])
        elif edit == "drop_default":
            field.pop("default", None)
        elif edit == "logical" and kind in ("int", "long"):
            field["type"] = {"type": kind, "logicalType": "date" if kind == "int" else "timestamp-micros"}
        elif edit == "decimal" and isinstance(field["type"], dict) and field["type"].get("logicalType") == "decimal":
            field["type"]["precision"] += draw(st.integers(0, 2))
            field["type"]["scale"] = min(field["type"]["scale"] + draw(st.integers(0, 1)), field["type"]["precision"])
        elif edit == "fixed_size" and isinstance(field["type"], dict) and field["type"]["type"] == "fixed":
            field["type"]["size"] += 1
            field.pop("default", None)
        elif edit == "namespace" and isinstance(field["type"], dict) and field["type"]["type"] in ("record", "enum", "fixed"):
            field["type"]["namespace"] = "moved"
        elif edit == "type_rename" and isinstance(field["type"], dict) and field["type"]["type"] in ("record", "enum", "fixed"):
            old_name = field["type"]["name"]
            field["type"]["name"] = old_name + "X"
            if draw(st.booleans()):
                field["type"]["aliases"] = [old_name]
        elif edit in ("enum_add", "enum_remove") and isinstance(field["type"], dict) and field["type"]["type"] == "enum":
            symbols = field["type"]["symbols"]
            extra = [s for s in SYMBOLS if s not in symbols]
            if edit == "enum_add" and extra:
                symbols.append(extra[0])
            elif edit == "enum_remove" and len(symbols) > 1 and field["type"].get("default") != symbols[-1]:
                symbols.pop()
                if field.get("default") not in symbols:
                    field.pop("default", None)
    return new


@st.composite
def related_pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    """(old, new): a schema and an edited copy of it."""
    old = draw(schemas())
    return old, draw(edited(old))


@st.composite
def unrelated_pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    """Two independent schemas whose roots share a name, so that resolution has to look inside."""
    old, new = draw(schemas()), draw(schemas())
    new["name"] = old["name"]
    return old, new
