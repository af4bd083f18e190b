"""JSON Schema verdicts against the draft's own validator: when the classifier calls a direction compatible, every document
the writer's schema accepts is accepted by the reader's. Pairs are generated (objects with required, partially open and
dependent properties, tuples with further items, limits, anyOf/allOf/oneOf (alone or beside properties), type lists, not,
const, a type beside an enum or a `not`, a `type` dropped, `propertyNames`, `contains`, `if`/`then`/`else`), each with
documents drawn from both schemas and checked with `jsonschema`. Left out, as the registry's rules leave them out: defaults that fill a required property (none are generated),
and a `patternProperties` entry that changes, which a finding of its own names while the registry's verdict stands."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jsonschema import validators

from bot.domain.compat.classify import Mode
from bot.domain.compat.formats import SchemaType, classify_schemas, parse_schema

NAMES = ("a", "b", "x-1", "x-2")
PATTERNS = {"^x-": {"type": "string"}}
UNCHECKED = {"PATTERN_PROPERTIES_CHANGED"}  # found beyond the registry, which the registry's verdict does not count
DRAFTS = ("http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema")

plain = st.one_of(
    st.just({}), st.just({"type": "boolean"}), st.just({"type": "number"}),
    st.builds(lambda most: {"type": "string", **({"maxLength": most} if most is not None else {})}, st.none() | st.integers(0, 3)),
    st.builds(lambda least: {"type": "integer", **({"minimum": least} if least is not None else {})}, st.none() | st.integers(-1, 1)),
    st.builds(lambda values: {"enum": sorted(values)}, st.sets(st.sampled_from(["p", "q", "r"]), min_size=1)),
    st.builds(lambda kind, values: {"type": kind, "enum": values}, st.sampled_from(["string", "integer"]),  # a type beside an enum: both bind
              st.lists(st.sampled_from(["p", "q", 1]), unique=True, min_size=1)),
    st.builds(lambda most: {"type": "string", "maxLength": most, "not": {"const": "p"}}, st.integers(0, 3)),
)
leaves = (  # and their combinations
    plain | st.builds(lambda word, branches: {word: branches}, st.sampled_from(["anyOf", "allOf", "oneOf"]), st.lists(plain, min_size=1, max_size=3))
    | st.builds(lambda t: {"type": t}, st.lists(st.sampled_from(["string", "integer", "boolean", "null"]), unique=True, min_size=2, max_size=3))
    | st.builds(lambda inner: {"not": inner}, plain) | st.builds(lambda c: {"const": c}, st.sampled_from(["p", 1, True]))
)


names_schema = st.builds(lambda most, pattern: {**({"maxLength": most} if most else {}), **({"pattern": pattern} if pattern else {})},
                         st.none() | st.integers(1, 3), st.none() | st.sampled_from(["^[a-z]+$", "^x-"]))
condition = st.builds(  # when a is "p", b is required (or else, a is required)
    lambda then, otherwise: {"if": {"properties": {"a": {"const": "p"}}, "required": ["a"]}, **({"then": then} if then else {}),
                             **({"else": otherwise} if otherwise else {})},
    st.none() | st.sampled_from([{"required": ["b"]}, {"properties": {"b": {"type": "integer"}}}]),
    st.none() | st.sampled_from([{"required": ["a"]}, {"maxProperties": 2}]))


def tuples(modern: bool) -> st.SearchStrategy[dict[str, Any]]:
    """An array: a tuple of places and what it holds further items to, or one schema for all items."""
    tuple_word, more_word = ("prefixItems", "items") if modern else ("items", "additionalItems")

    def build(places: list[Any], more: Any, limit: int | None) -> dict[str, Any]:
        array: dict[str, Any] = {"type": "array", tuple_word: places}
        if more is not None:
            array[more_word] = more
        return {**array, **({"maxItems": limit} if limit is not None else {})}

    contained = st.builds(lambda items, inside: {"type": "array", "items": items, "contains": inside}, leaves, leaves)
    tupled = st.builds(build, st.lists(leaves, min_size=1, max_size=3), st.none() | st.just(False) | st.just(True) | leaves, st.none() | st.integers(1, 3))
    return tupled | contained | st.builds(lambda items: {"type": "array", "items": items}, leaves)


def objects(modern: bool, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """An object whose properties are leaves, tuples or (once) objects, with required ones, other properties closed, open or held
    to a schema (and to `patternProperties` for x- names), a property that requires another or brings a schema, and (2020-12)
    `unevaluatedProperties`."""
    inner = leaves | tuples(modern) if depth else leaves | tuples(modern) | objects(modern, depth + 1)

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=3))
        node: dict[str, Any] = {"type": "object", "properties": {name: draw(inner) for name in names}}
        required = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
        if required:
            node["required"] = sorted(required)
        extra = draw(st.sampled_from(["absent", "false", "true", "schema"]))
        if extra != "absent":
            node["additionalProperties"] = {"false": False, "true": True}.get(extra) if extra != "schema" else draw(leaves)
        if draw(st.booleans()):
            node["patternProperties"] = PATTERNS
        if draw(st.booleans()):
            node["dependentRequired" if modern else "dependencies"] = {"a": draw(st.lists(st.sampled_from(["b", "x-1"]), unique=True, min_size=1))}
        if modern and draw(st.booleans()):
            node["dependentSchemas"] = {"b": {"required": draw(st.lists(st.sampled_from(["a", "x-2"]), unique=True, min_size=1))}}
        if modern and extra == "absent" and draw(st.booleans()):
            node["unevaluatedProperties"] = draw(st.just(False) | leaves)
        if not draw(st.integers(0, 3)):
            node["propertyNames"] = draw(names_schema)
        if not draw(st.integers(0, 3)):
            node.update(draw(condition))
        if not draw(st.integers(0, 3)):  # a combination beside the properties binds with them
            node["anyOf"] = [{"required": ["a"]}, {"required": ["b"]}]
        return node

    return build()


def mutated(draw: st.DrawFn, node: Any, modern: bool) -> Any:
    """``node`` with one part drawn again (or all of it): the pairs a team proposes are mostly alike."""
    if not isinstance(node, dict) or draw(st.integers(0, 4)) == 0:
        return draw(objects(modern, 1) | tuples(modern) | leaves)
    parts = [k for k in node if k != "patternProperties"]  # `type` too: without it, a kind's keywords bind only that kind
    if not parts:
        return node
    key = draw(st.sampled_from(parts))
    value = node[key]
    changed = dict(node)
    if key == "properties" and value:
        name = draw(st.sampled_from(sorted(value)))
        properties = dict(value)
        if draw(st.booleans()):
            properties[name] = mutated(draw, value[name], modern)
        else:
            del properties[name]
            if name in changed.get("required", []):
                changed["required"] = [r for r in changed["required"] if r != name] or None
        changed["properties"] = properties
    elif key in ("items", "prefixItems", "additionalItems") and isinstance(value, list):
        changed[key] = draw(st.lists(leaves, min_size=1, max_size=4))
    elif key in ("items", "additionalItems", "additionalProperties", "unevaluatedProperties"):
        changed[key] = draw(st.just(False) | st.just(True) | leaves)
    elif key in ("propertyNames", "contains") and draw(st.booleans()):
        changed[key] = draw(names_schema if key == "propertyNames" else leaves)
    elif key in ("if", "then", "else") and draw(st.booleans()):
        changed.update({k: v for k, v in draw(condition).items() if k == key or key == "if"})
    elif key in ("anyOf", "allOf", "oneOf"):  # a branch added or one taken away
        changed[key] = [*value, draw(plain)] if len(value) == 1 or draw(st.booleans()) else value[1:]
    elif key == "required":
        changed[key] = draw(st.lists(st.sampled_from(sorted({*node.get("properties", {}), "a", "b"})), unique=True, min_size=1))  # declared or not
    elif key == "dependentSchemas":
        changed[key] = {"b": {"required": draw(st.lists(st.sampled_from(["a", "x-1", "x-2"]), unique=True, min_size=1))}}
    elif key in ("dependencies", "dependentRequired"):
        changed[key] = {"a": draw(st.lists(st.sampled_from(["b", "x-1"]), unique=True, min_size=1))} if draw(st.booleans()) else {}
    else:
        changed.pop(key)
    if changed.get("type") == "object" and not draw(st.integers(0, 3)):  # now and then a property added too
        name = draw(st.sampled_from(NAMES))
        changed["properties"] = {**changed.get("properties", {}), name: draw(leaves | tuples(modern))}
    return {k: v for k, v in changed.items() if v is not None}


@st.composite
def pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    modern = draw(st.booleans())
    draft = DRAFTS[modern]
    old = draw(objects(modern))
    new = mutated(draw, old, modern)
    for _ in range(draw(st.integers(0, 2))):
        new = mutated(draw, new, modern)
    return {"$schema": draft, **old}, {"$schema": draft, **new}


def instance(schema: Any, rng: random.Random, depth: int = 0) -> Any:
    """A document shaped by ``schema``, now and then off it (a value of another type, a property or item too many)."""
    if rng.random() < 0.1 or not isinstance(schema, dict) or depth > 3:
        return rng.choice(["", "x", "long text", -1, 0, 2, 1.5, True, None, [], {}, ["x"], {"a": 1}])
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    for word in ("anyOf", "allOf", "oneOf"):
        if word in schema and "properties" not in schema:  # beside properties, the object is drawn
            return instance(rng.choice(schema[word]), rng, depth + 1)
    declared = schema.get("type")
    kind = str(rng.choice(declared) if isinstance(declared, list) else declared)
    if kind == "object" or "properties" in schema:
        document = {name: instance(inner, rng, depth + 1) for name, inner in schema.get("properties", {}).items()
                    if name in schema.get("required", []) or rng.random() < 0.7}
        for name in rng.sample([*NAMES, "zz"], rng.randint(0, 2)):
            document.setdefault(name, instance({}, rng, depth + 1))
        return document
    if kind == "array":
        places = schema.get("prefixItems") or (schema["items"] if isinstance(schema.get("items"), list) else [])
        if places:
            found = [instance(p, rng, depth + 1) for p in places[: rng.randint(0, len(places))]]
        else:
            found = [instance(schema.get("items", {}), rng, depth + 1) for _ in range(rng.randint(0, 3))]
        return found + [instance({}, rng, depth + 1) for _ in range(rng.randint(0, 1))]
    made: dict[str, Callable[[], Any]] = {"string": lambda: rng.choice(["", "ab", "abcdef"]), "integer": lambda: rng.randint(-2, 2),
                                          "number": lambda: rng.choice([0, 1.5, -3]), "boolean": lambda: rng.random() < 0.5,
                                          "null": lambda: None}
    return made.get(kind, lambda: instance(None, rng, depth))()


def accepted(schema: dict[str, Any], documents: list[Any]) -> list[Any]:
    check = validators.validator_for(schema)(schema)
    return [d for d in documents if check.is_valid(d)]


def assert_sound(old: dict[str, Any], new: dict[str, Any], seed: int) -> None:
    """Whenever a direction is called compatible, the reader's schema accepts every drawn document the writer's accepts."""
    verdict = classify_schemas(SchemaType.JSON, [parse_schema(SchemaType.JSON, json.dumps(old))], parse_schema(SchemaType.JSON, json.dumps(new)),
                               Mode.FULL)
    rng = random.Random(seed)
    documents = [instance(old, rng) for _ in range(60)] + [instance(new, rng) for _ in range(60)]
    said = "; ".join(f"{f.rule} {f.path}" for f in verdict.findings) or "nothing"
    if any(f.rule in UNCHECKED for f in verdict.findings):
        return  # the registry's verdict stands, and a finding says what it does not check
    by_old, by_new = accepted(old, documents), accepted(new, documents)
    if verdict.backward:
        refused = [d for d in by_old if d not in by_new]
        assert not refused, f"BACKWARD called compatible ({said}), but the new schema refuses {refused[0]!r}, which the old one wrote"
    if verdict.forward:
        refused = [d for d in by_new if d not in by_old]
        assert not refused, f"FORWARD called compatible ({said}), but the old schema refuses {refused[0]!r}, which the new one wrote"


OPEN_PATTERNS = {"type": "object", "additionalProperties": True, "patternProperties": PATTERNS}
ANY_OF_NAMES = {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}  # found by this test in a CI run


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pairs(), st.integers(0, 2**32))
@example(({"$schema": DRAFTS[1], **OPEN_PATTERNS}, {"$schema": DRAFTS[1], **ANY_OF_NAMES}), 0)
def test_a_direction_called_compatible_refuses_no_document_the_writer_accepts(pair: tuple[dict[str, Any], dict[str, Any]], seed: int) -> None:
    assert_sound(*pair, seed)


def test_what_only_the_reverse_walk_meets_and_the_registry_does_not_check_is_still_said() -> None:
    """The update's anyOf makes the root a combination, so the forward walk says TYPE_CHANGED there; only the reverse
    walk goes into the object and meets the `patternProperties` entry gone (x-1: 5 is now written, which the old
    schema refuses). The registry does not check it, so its verdict stands, and a finding says so."""
    verdict = classify_schemas(SchemaType.JSON, [parse_schema(SchemaType.JSON, json.dumps(OPEN_PATTERNS))],
                               parse_schema(SchemaType.JSON, json.dumps(ANY_OF_NAMES)), Mode.FULL)
    assert [(f.rule, f.path, sorted(d.value for d in f.breaks)) for f in verdict.findings] == [
        ("TYPE_CHANGED", "(root)", ["backward"]), ("PATTERN_PROPERTIES_CHANGED", "{}", [])]


ranges = st.builds(  # numbers and strings told apart, or not, by their bounds
    lambda kind, low, high, exclusive: {"type": kind, **({("exclusiveMinimum" if exclusive else "minimum"): low} if low is not None else {}),
                                        **({"maximum": high} if high is not None else {})},
    st.sampled_from(["integer", "number"]), st.none() | st.integers(-1, 2), st.none() | st.integers(-1, 2), st.booleans(),
) | st.builds(lambda low, high: {"type": "string", **({"minLength": low} if low is not None else {}), **({"maxLength": high} if high is not None else {})},
              st.none() | st.integers(0, 3), st.none() | st.integers(0, 3))
branch = plain | ranges | st.builds(  # objects told apart, or not, by a required constant; closed to other properties, or not
    lambda tag, names, closed: {"type": "object", "properties": {"kind": {"const": tag} if tag else {"type": "string"}, "a": {"type": "string"},
                                                                 "b": {"type": "integer"}},
                                "required": sorted({*names, *(["kind"] if tag else [])}), **({"additionalProperties": False} if closed else {})},
    st.sampled_from(["p", "q", "r", None]), st.lists(st.sampled_from(["a", "b"]), unique=True), st.booleans())


@st.composite
def combined_pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A property that is a combination, and the same with a branch added, taken away or drawn again."""
    word = draw(st.sampled_from(["oneOf", "anyOf", "allOf"]))
    before = draw(st.lists(branch, min_size=1, max_size=3))
    after = list(before)
    for _ in range(draw(st.integers(1, 2))):
        change = draw(st.sampled_from(["add", "remove", "redraw"]))
        if change == "add" or not after:
            after.insert(draw(st.integers(0, len(after))), draw(branch))
        elif change == "remove" and len(after) > 1:
            after.pop(draw(st.integers(0, len(after) - 1)))
        else:
            after[draw(st.integers(0, len(after) - 1))] = draw(branch)
    draft = draw(st.sampled_from(DRAFTS))
    return tuple({"$schema": draft, "type": "object", "properties": {"v": {word: branches}}} for branches in (before, after))  # type: ignore[return-value]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(combined_pairs(), st.integers(0, 2**32))
def test_a_combination_called_compatible_refuses_no_document_the_writer_accepts(pair: tuple[dict[str, Any], dict[str, Any]], seed: int) -> None:
    assert_sound(*pair, seed)
