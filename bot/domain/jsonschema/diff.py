"""The differences between two JSON Schemas, named as Confluent's Schema Registry names them, in one direction:
``differences(original, update)`` is what the schema ``update`` meets in documents valid under ``original``. The
registry's BACKWARD check is ``differences(old, new)``, FORWARD the reverse; a difference outside the compatible set
(``STRICT``, or ``LENIENT`` where a subject chose it) fails. Beyond the registry: ``format`` changes (a date-time
that becomes a date), each reported with a plain message; an open object's added property is told how to close it."""

from __future__ import annotations

import json
from typing import Any

from bot.domain.compat.changes import Difference
from bot.domain.jsonschema.model import JsonSchema, kind, resolve

STRICT = frozenset({
    "ID_CHANGED", "DESCRIPTION_CHANGED", "TITLE_CHANGED", "DEFAULT_CHANGED", "SCHEMA_REMOVED", "TYPE_EXTENDED", "MAX_LENGTH_INCREASED",
    "MAX_LENGTH_REMOVED", "MIN_LENGTH_DECREASED", "MIN_LENGTH_REMOVED", "PATTERN_REMOVED", "MAXIMUM_INCREASED", "MAXIMUM_REMOVED",
    "MINIMUM_DECREASED", "MINIMUM_REMOVED", "EXCLUSIVE_MAXIMUM_INCREASED", "EXCLUSIVE_MAXIMUM_REMOVED", "EXCLUSIVE_MINIMUM_DECREASED",
    "EXCLUSIVE_MINIMUM_REMOVED", "MULTIPLE_OF_REDUCED", "MULTIPLE_OF_REMOVED", "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
    "REQUIRED_ATTRIBUTE_REMOVED", "MAX_PROPERTIES_INCREASED", "MAX_PROPERTIES_REMOVED", "MIN_PROPERTIES_DECREASED",
    "MIN_PROPERTIES_REMOVED", "ADDITIONAL_PROPERTIES_ADDED", "ADDITIONAL_PROPERTIES_EXTENDED", "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL", "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", "MAX_ITEMS_INCREASED",
    "MAX_ITEMS_REMOVED", "MIN_ITEMS_DECREASED", "MIN_ITEMS_REMOVED", "UNIQUE_ITEMS_REMOVED", "ADDITIONAL_ITEMS_ADDED",
    "ADDITIONAL_ITEMS_EXTENDED", "ENUM_ARRAY_EXTENDED", "COMBINED_TYPE_EXTENDED", "PRODUCT_TYPE_NARROWED", "SUM_TYPE_EXTENDED",
    "NOT_TYPE_NARROWED",
    "FORMAT_ADDED", "FORMAT_REMOVED", "FORMAT_CHANGED",  # ours: the registry does not judge `format`; each is a finding of its own level
})
LENIENT = STRICT | {
    "ADDITIONAL_PROPERTIES_NARROWED", "ADDITIONAL_PROPERTIES_REMOVED", "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
}
LIMITS = (  # keyword, (added, removed, grew, shrank): growing a maximum accepts more (compatible), shrinking it fewer
    ("maxLength", ("MAX_LENGTH_ADDED", "MAX_LENGTH_REMOVED", "MAX_LENGTH_INCREASED", "MAX_LENGTH_DECREASED")),
    ("minLength", ("MIN_LENGTH_ADDED", "MIN_LENGTH_REMOVED", "MIN_LENGTH_INCREASED", "MIN_LENGTH_DECREASED")),
    ("maximum", ("MAXIMUM_ADDED", "MAXIMUM_REMOVED", "MAXIMUM_INCREASED", "MAXIMUM_DECREASED")),
    ("minimum", ("MINIMUM_ADDED", "MINIMUM_REMOVED", "MINIMUM_INCREASED", "MINIMUM_DECREASED")),
    ("exclusiveMaximum", ("EXCLUSIVE_MAXIMUM_ADDED", "EXCLUSIVE_MAXIMUM_REMOVED", "EXCLUSIVE_MAXIMUM_INCREASED", "EXCLUSIVE_MAXIMUM_DECREASED")),
    ("exclusiveMinimum", ("EXCLUSIVE_MINIMUM_ADDED", "EXCLUSIVE_MINIMUM_REMOVED", "EXCLUSIVE_MINIMUM_INCREASED", "EXCLUSIVE_MINIMUM_DECREASED")),
    ("maxItems", ("MAX_ITEMS_ADDED", "MAX_ITEMS_REMOVED", "MAX_ITEMS_INCREASED", "MAX_ITEMS_DECREASED")),
    ("minItems", ("MIN_ITEMS_ADDED", "MIN_ITEMS_REMOVED", "MIN_ITEMS_INCREASED", "MIN_ITEMS_DECREASED")),
    ("maxProperties", ("MAX_PROPERTIES_ADDED", "MAX_PROPERTIES_REMOVED", "MAX_PROPERTIES_INCREASED", "MAX_PROPERTIES_DECREASED")),
    ("minProperties", ("MIN_PROPERTIES_ADDED", "MIN_PROPERTIES_REMOVED", "MIN_PROPERTIES_INCREASED", "MIN_PROPERTIES_DECREASED")),
)


def differences(original: JsonSchema, update: JsonSchema) -> list[Difference]:
    """Every difference the schema ``update`` meets in documents valid under ``original``."""
    walk = _Diff(original, update)
    walk.compare(original.root, original.base, update.root, update.base, update.label)
    return walk.found


class _Diff:
    def __init__(self, original: JsonSchema, update: JsonSchema) -> None:
        self.o, self.u = original, update
        self.found: list[Difference] = []
        self.active: set[tuple[int, int]] = set()  # pairs being compared: a recursive schema meets itself as compatible

    def add(self, rule: str, path: str, old: Any = "", new: Any = "", detail: str = "", aspect: str = "") -> None:
        self.found.append(Difference(rule, (aspect or rule.split("_")[0], path), path or "(root)", _text(old), _text(new), detail))

    def compare(self, o_node: Any, o_base: str, u_node: Any, u_base: str, path: str) -> None:
        o_node, o_base = resolve(self.o, o_node, o_base)
        u_node, u_base = resolve(self.u, u_node, u_base)
        pair = (id(o_node), id(u_node))
        if pair in self.active:
            return
        self.active.add(pair)
        try:
            self._compare(o_node, o_base, u_node, u_base, path)
        finally:
            self.active.discard(pair)

    def _compare(self, o: Any, o_base: str, u: Any, u_base: str, path: str) -> None:
        o_kind, u_kind = kind(o), kind(u)
        if o_kind != u_kind:
            if o_kind == "false" or u_kind == "empty":
                return  # the update accepts everything, or nothing was valid before
            if u_kind == "combined" and o_kind != "combined":
                for branch, branch_base in self._branches(u, u_base):
                    sub = _Diff(self.o, self.u)
                    sub.active = set(self.active)
                    sub.compare(o, o_base, branch, branch_base, path)
                    if all(d.rule in STRICT for d in sub.found):
                        self.found += sub.found
                        self.add("SUM_TYPE_EXTENDED", path, o_kind, "anyOf/oneOf", aspect="type")
                        return
            self.add("TYPE_CHANGED", path, _type_of(o), _type_of(u), aspect="type")
            return
        if not isinstance(o, dict) or not isinstance(u, dict):
            return
        for word, rule in (("$id", "ID_CHANGED"), ("title", "TITLE_CHANGED"), ("description", "DESCRIPTION_CHANGED"), ("default", "DEFAULT_CHANGED")):
            if o.get(word) != u.get(word):
                self.add(rule, path, o.get(word, ""), u.get(word, ""), aspect=word)
        if o_kind == "number" and (o.get("type") == "integer") != (u.get("type") == "integer"):
            self.add("TYPE_NARROWED" if u.get("type") == "integer" else "TYPE_EXTENDED", path, o.get("type"), u.get("type"), aspect="type")
        if o.get("format") != u.get("format"):
            rule = "FORMAT_ADDED" if "format" not in o else "FORMAT_REMOVED" if "format" not in u else "FORMAT_CHANGED"
            self.add(rule, path, o.get("format", ""), u.get("format", ""), aspect="format")
        for word, (added, removed, grew, shrank) in LIMITS:
            before, after = o.get(word), u.get(word)
            if before == after or isinstance(before, bool) or isinstance(after, bool):
                continue
            rule = added if before is None else removed if after is None else grew if after > before else shrank
            self.add(rule, path, before if before is not None else "", after if after is not None else "", word, aspect=word)
        if o.get("pattern") != u.get("pattern"):
            rule = "PATTERN_ADDED" if "pattern" not in o else "PATTERN_REMOVED" if "pattern" not in u else "PATTERN_CHANGED"
            self.add(rule, path, o.get("pattern", ""), u.get("pattern", ""), aspect="pattern")
        if o.get("multipleOf") != u.get("multipleOf"):
            before, after = o.get("multipleOf"), u.get("multipleOf")
            rule = ("MULTIPLE_OF_ADDED" if before is None else "MULTIPLE_OF_REMOVED" if after is None
                    else "MULTIPLE_OF_REDUCED" if before % after == 0 else "MULTIPLE_OF_EXPANDED" if after % before == 0 else "MULTIPLE_OF_CHANGED")
            self.add(rule, path, before or "", after or "", aspect="multipleOf")
        if o_kind == "enum":
            before, after = _values(o["enum"]), _values(u["enum"])
            if before != after:
                rule = "ENUM_ARRAY_EXTENDED" if before < after else "ENUM_ARRAY_NARROWED" if after < before else "ENUM_ARRAY_CHANGED"
                self.add(rule, path, sorted(before), sorted(after), ", ".join(sorted(after ^ before)), aspect="enum")
        elif o_kind == "const" and o["const"] != u["const"]:
            self.add("CONST_CHANGED", path, o["const"], u["const"], aspect="const")
        elif o_kind == "combined":
            self._combined(o, o_base, u, u_base, path)
        elif o_kind == "not":
            sub = _Diff(self.u, self.o)  # the negated schemas compare the other way round
            sub.compare(u["not"], u_base, o["not"], o_base, path)
            if not all(d.rule in STRICT for d in sub.found):
                self.add("NOT_TYPE_EXTENDED", path, aspect="not")
            elif sub.found:
                self.add("NOT_TYPE_NARROWED", path, aspect="not")
        elif o_kind == "object":
            self._object(o, o_base, u, u_base, path)
        elif o_kind == "array":
            self._array(o, o_base, u, u_base, path)

    def _branches(self, node: dict[str, Any], base: str) -> list[tuple[Any, str]]:
        for word in ("anyOf", "oneOf", "allOf"):
            if word in node:
                return [(branch, base) for branch in node[word]]
        if isinstance(node.get("type"), list):
            rest = {k: v for k, v in node.items() if k != "type"}
            return [({**rest, "type": t}, base) for t in node["type"]]
        return []

    def _combined(self, o: dict[str, Any], o_base: str, u: dict[str, Any], u_base: str, path: str) -> None:
        criterion = next((w for w in ("allOf", "anyOf", "oneOf") if w in o), "anyOf")
        if criterion != next((w for w in ("allOf", "anyOf", "oneOf") if w in u), "anyOf"):
            self.add("COMBINED_TYPE_CHANGED", path, criterion, next((w for w in ("allOf", "anyOf", "oneOf") if w in u), "anyOf"), aspect="combined")
            return
        o_branches, u_branches = self._branches(o, o_base), self._branches(u, u_base)
        matched: set[int] = set()
        for o_branch, o_branch_base in o_branches:
            for index, (u_branch, u_branch_base) in enumerate(u_branches):
                if index in matched:
                    continue
                sub = _Diff(self.o, self.u)
                sub.active = set(self.active)
                sub.compare(o_branch, o_branch_base, u_branch, u_branch_base, path)
                if all(d.rule in STRICT for d in sub.found):
                    matched.add(index)
                    self.found += sub.found
                    break
        if len(u_branches) > len(o_branches):
            self.add("PRODUCT_TYPE_EXTENDED" if criterion == "allOf" else "SUM_TYPE_EXTENDED", path, len(o_branches), len(u_branches), aspect="combined")
        elif len(u_branches) < len(o_branches):
            self.add("PRODUCT_TYPE_NARROWED" if criterion == "allOf" else "SUM_TYPE_NARROWED", path, len(o_branches), len(u_branches), aspect="combined")
        elif len(matched) < len(o_branches):
            self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", path, aspect="combined")

    def _object(self, o: dict[str, Any], o_base: str, u: dict[str, Any], u_base: str, path: str) -> None:
        o_props, u_props = o.get("properties") or {}, u.get("properties") or {}
        o_required, u_required = set(o.get("required") or []), set(u.get("required") or [])
        for name in o_props:
            if name in u_props and (name in o_required) != (name in u_required):
                at = _join(path, name)
                if name in o_required:
                    self.add("REQUIRED_ATTRIBUTE_REMOVED", at, detail=name, aspect="required")
                else:
                    self.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if _has_default(u_props[name]) else "REQUIRED_ATTRIBUTE_ADDED", at, detail=name,
                             aspect="required")
        for name in sorted(set(o_props) | set(u_props)):
            at = _join(path, name)
            if name not in u_props:
                if _open(u):
                    self.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", at, detail=name, aspect="property")
                elif o_props[name] is False:
                    self.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", at, detail=name, aspect="property")
                else:
                    self.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", at, detail=name, aspect="property")
            elif name not in o_props:
                if _open(o):
                    if kind(u_props[name]) == "empty":
                        rule = "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                    elif name in u_required:
                        rule = "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL" if _has_default(u_props[name]) else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
                    else:
                        rule = "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
                elif name in u_required:
                    rule = ("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL" if _has_default(u_props[name])
                            else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
                else:
                    rule = "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
                self.add(rule, at, new=_type_of(resolve(self.u, u_props[name], u_base)[0]), detail=name, aspect="property")
            else:
                self.compare(o_props[name], o_base, u_props[name], u_base, at)
        o_extra, u_extra = o.get("additionalProperties", True), u.get("additionalProperties", True)
        at = f"{path}{{}}" if path else "{}"
        if (o_extra is not False) != (u_extra is not False):
            self.add("ADDITIONAL_PROPERTIES_ADDED" if u_extra is not False else "ADDITIONAL_PROPERTIES_REMOVED", at, aspect="additionalProperties")
        elif o_extra is not False:
            if kind(o_extra) == "empty" and kind(u_extra) != "empty":
                self.add("ADDITIONAL_PROPERTIES_NARROWED", at, aspect="additionalProperties")
            elif kind(o_extra) != "empty" and kind(u_extra) == "empty":
                self.add("ADDITIONAL_PROPERTIES_EXTENDED", at, aspect="additionalProperties")
            elif kind(o_extra) != "empty":
                self.compare(o_extra, o_base, u_extra, u_base, at)

    def _array(self, o: dict[str, Any], o_base: str, u: dict[str, Any], u_base: str, path: str) -> None:
        o_items, u_items = o.get("items", True), u.get("items", True)
        at = f"{path}[]" if path else "[]"
        if isinstance(o_items, dict | bool) and isinstance(u_items, dict | bool):
            self.compare(o_items, o_base, u_items, u_base, at)
        if bool(o.get("uniqueItems")) != bool(u.get("uniqueItems")):
            self.add("UNIQUE_ITEMS_ADDED" if u.get("uniqueItems") else "UNIQUE_ITEMS_REMOVED", path, aspect="uniqueItems")


def _open(node: dict[str, Any]) -> bool:
    """An open content model: any other property is allowed, of any type."""
    extra = node.get("additionalProperties", True)
    return extra is True or extra == {} and not node.get("patternProperties")


def _has_default(node: Any) -> bool:
    return isinstance(node, dict) and "default" in node


def _values(items: list[Any]) -> set[str]:
    return {json.dumps(v, sort_keys=True) for v in items}


def _type_of(node: Any) -> str:
    if isinstance(node, dict):
        declared = node.get("type")
        if isinstance(declared, list):
            return "|".join(str(t) for t in declared)
        if declared:
            return str(declared)
    return kind(node)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)
