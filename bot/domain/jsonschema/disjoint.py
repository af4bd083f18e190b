"""Whether two JSON schemas provably accept no document in common: what a ``oneOf`` needs of its branches for a
document that matches one to match no other. Every keyword of a schema must hold, so one keyword of each side that
contradicts the other's is proof: types that do not meet, constants or enums with no value in common, or, for
objects, a property both require whose schemas are disjoint (a discriminator) or that one requires and the other
does not allow; numbers or strings whose ranges (``minimum``/``maximum``, ``minLength``/``maxLength``) do not meet.
Anything else may overlap: the answer is never "disjoint" without proof."""

from __future__ import annotations

import re
from typing import Any

from bot.domain.jsonschema.model import JsonSchema, json_value, resolve

DEPTH = 4  # discriminators nest rarely deeper; beyond, "may overlap"


def disjoint(a_schema: JsonSchema, a: Any, a_base: str, b_schema: JsonSchema, b: Any, b_base: str, depth: int = 0) -> bool:
    """Whether no document is valid under both ``a`` (a part of ``a_schema``) and ``b`` (of ``b_schema``), each read
    with its ``$ref`` followed."""
    a, a_base = resolve(a_schema, a, a_base)
    b, b_base = resolve(b_schema, b, b_base)
    if a is False or b is False:
        return True
    if not isinstance(a, dict) or not isinstance(b, dict) or depth > DEPTH:
        return False
    a_types, b_types = _types(a), _types(b)
    if a_types is not None and b_types is not None and not any(_meet(x, y) for x in a_types for y in b_types):
        return True
    a_values, b_values = _values(a), _values(b)
    if a_values is not None and b_values is not None and not a_values & b_values:
        return True
    if a_types == {"object"} and b_types == {"object"}:
        return _objects_disjoint(a_schema, a, a_base, b_schema, b, b_base, depth)
    if a_types and b_types and a_types | b_types <= {"integer", "number"}:
        return _apart(_bounds(a, "minimum", "maximum"), _bounds(b, "minimum", "maximum"))
    if a_types == {"string"} and b_types == {"string"}:
        return _apart(_bounds(a, "minLength", "maxLength"), _bounds(b, "minLength", "maxLength"))
    return False


Bound = tuple[float | None, bool, float | None, bool]  # low, low excluded, high, high excluded


def _bounds(node: dict[str, Any], low_word: str, high_word: str) -> Bound:
    """The range a schema allows by two limits; for numbers, draft 4's boolean ``exclusive*`` flags or later drafts'
    numeric exclusive bounds (the tighter of a bound and its exclusive one holds)."""
    low, high = node.get(low_word), node.get(high_word)
    if low_word != "minimum":
        return low, False, high, False
    low_out, high_out = node.get("exclusiveMinimum") is True, node.get("exclusiveMaximum") is True
    above, below = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    if _number(above) and (low is None or above >= low):
        low, low_out = above, True
    if _number(below) and (high is None or below <= high):
        high, high_out = below, True
    return low, low_out, high, high_out


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _apart(a: Bound, b: Bound) -> bool:
    """Whether two ranges share no value."""
    def below(first: Bound, second: Bound) -> bool:  # first's range ends before second's begins
        high, high_out, low, low_out = first[2], first[3], second[0], second[1]
        return high is not None and low is not None and (high < low or (high == low and (high_out or low_out)))
    return below(a, b) or below(b, a)


def _objects_disjoint(a_schema: JsonSchema, a: dict[str, Any], a_base: str, b_schema: JsonSchema, b: dict[str, Any], b_base: str,
                      depth: int) -> bool:
    a_required, b_required = set(a.get("required") or ()), set(b.get("required") or ())
    for name in a_required & b_required:
        a_property, b_property = (a.get("properties") or {}).get(name), (b.get("properties") or {}).get(name)
        if a_property is not None and b_property is not None and disjoint(a_schema, a_property, a_base, b_schema, b_property, b_base, depth + 1):
            return True
    return any(_refuses(a, name) for name in b_required) or any(_refuses(b, name) for name in a_required)


def _refuses(node: dict[str, Any], name: str) -> bool:
    """Whether an object refuses any property ``name`` (closed to it: not in ``properties``, found by no pattern, other
    properties false)."""
    if name in (node.get("properties") or {}) or node.get("additionalProperties", True) is not False:
        return False
    return not any(re.search(pattern, name) for pattern in node.get("patternProperties") or {})


def _types(node: dict[str, Any]) -> set[str] | None:
    """The JSON types a schema allows (its ``type``, or its constant's or enum's values'); None when it does not say."""
    values = node["enum"] if isinstance(node.get("enum"), list) else [node["const"]] if "const" in node else None
    if values is not None:
        return {_type(v) for v in values}
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {str(t) for t in declared}
    return None


def _type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    return {str: "string", float: "number", list: "array", dict: "object"}.get(type(value), "null")


def _meet(x: str, y: str) -> bool:
    """Whether two JSON types share values (every integer is a number)."""
    return x == y or {x, y} == {"integer", "number"}


def _values(node: dict[str, Any]) -> set[Any] | None:
    """The values a schema's ``const`` or ``enum`` allows, as JSON compares them; None when it allows others."""
    if "const" in node:
        return {json_value(node["const"])}
    if isinstance(node.get("enum"), list):
        return {json_value(v) for v in node["enum"]}
    return None
