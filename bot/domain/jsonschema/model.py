"""A JSON Schema as the classifier walks it: the document checked against its draft's meta-schema (``$schema``,
draft-07 when absent; drafts 4 to 2020-12), ``$ref`` resolved within the document and across the references it
names (other subjects' schemas by URI), each subschema seen as one kind the way the registry sees it: ``object``,
``array``, ``string``, ``number`` (``integer`` is a number that must be whole), ``boolean``, ``null``, ``enum``,
``const``, ``combined`` (``allOf``/``anyOf``/``oneOf``, and a list of types), ``not``, ``empty`` (accepts all)
and ``false`` (accepts nothing)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from jsonschema import exceptions, validators
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT7, specification_with

from bot.domain.jsonschema.errors import JsonSchemaError
from bot.domain.lineage.field_paths import FieldWalk

TYPES = ("object", "array", "string", "number", "integer", "boolean", "null")
OBJECT_WORDS = ("properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties", "dependencies",
                "dependentRequired", "dependentSchemas", "unevaluatedProperties", "propertyNames")
ARRAY_WORDS = ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains", "unevaluatedItems")
STRING_WORDS = ("minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType")
NUMBER_WORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
ANNOTATIONS = frozenset({"$ref", "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
                         "$schema", "$id", "$anchor", "$dynamicAnchor", "definitions", "$defs"})  # words beside a $ref that constrain nothing
PARTS = ("allOf", "anyOf", "oneOf", "enum", "const", "not")  # keywords that each make a schema of their own beside the rest
MODERN = ("https://json-schema.org/draft/2019-09/schema", "https://json-schema.org/draft/2020-12/schema")  # where a $ref's siblings apply


@dataclass
class JsonSchema:
    """A parsed document: its root, and the resolver its ``$ref`` go through."""

    root: Any
    registry: Registry[Any]
    base: str
    title: str
    canonical: str = ""  # the document and its references with sorted keys: equal for the same schema however written
    modern: dict[str, bool] = field(default_factory=dict)  # a document's base URI -> whether it is draft 2019-09 or later
    joined: dict[int, Any] = field(default_factory=dict)  # a $ref beside constraints (2019-09 on), or a node of several parts, as the allOf it means: one per node
    made: set[int] = field(default_factory=set)  # the ids of those allOf nodes (no one wrote them)
    types: dict[int, list[tuple[Any, str]]] = field(default_factory=dict)  # a list of types, as one schema a type: one per node

    @property
    def label(self) -> str:
        """Where paths start: the root's ``title`` (as Avro's record name), else nothing."""
        return self.title


def parse_json_schema(text: str, refs: dict[str, str] | None = None) -> JsonSchema:
    """Parse and check ``text`` (and each referenced schema, by the URI it is named with)."""
    root = _load(text, "the schema")
    _check(root, "the schema")
    documents = {}
    for uri, body in (refs or {}).items():
        documents[uri] = _load(body, f"reference {uri!r}")
        _check(documents[uri], f"reference {uri!r}")
    resources = [(uri, Resource.from_contents(document, default_specification=DRAFT7)) for uri, document in documents.items()]
    base = root.get("$id", "urn:changeops:schema") if isinstance(root, dict) else "urn:changeops:schema"
    specification = specification_with(root.get("$schema", ""), default=DRAFT7) if isinstance(root, dict) else DRAFT7
    registry: Registry[Any] = Registry().with_resources([*resources, (base, specification.create_resource(root))])
    canonical = json.dumps([root, sorted(documents.items())], sort_keys=True)
    modern = {**{uri: _modern(document) for uri, document in documents.items()}, base: _modern(root)}
    schema = JsonSchema(root, registry, base, str(root.get("title") or "") if isinstance(root, dict) else "", canonical, modern)
    _resolve_all(schema)
    return schema


def kind(node: Any) -> str:
    """The kind of a subschema (after its ``$ref`` is followed)."""
    if node is True or node == {}:
        return "empty"
    if node is False:
        return "false"
    if not isinstance(node, dict):
        return "empty"
    if any(word in node for word in ("allOf", "anyOf", "oneOf")):
        return "combined"
    if "enum" in node:
        return "enum"
    if "const" in node:
        return "const"
    if "not" in node and len([k for k in node if k not in ("not", "title", "description", "$id", "$schema")]) == 0:
        return "not"
    declared = node.get("type")
    if isinstance(declared, list):
        return "combined" if len(declared) != 1 else ("number" if declared[0] == "integer" else declared[0])
    if isinstance(declared, str):
        return "number" if declared == "integer" else declared
    for words, found in ((OBJECT_WORDS, "object"), (ARRAY_WORDS, "array"), (STRING_WORDS, "string"), (NUMBER_WORDS, "number")):
        if any(word in node for word in words):
            return found
    if "if" in node and ("then" in node or "else" in node):
        return "conditional"  # it binds values of every type
    return "empty"


def resolve(schema: JsonSchema, node: Any, base: str | None = None) -> tuple[Any, str]:
    """``node`` with its ``$ref`` followed (and the base URI it is read under); JsonSchemaError when it resolves nowhere.
    Up to draft 7 a ``$ref``'s siblings are ignored; from 2019-09 they apply beside it, so a ``$ref`` beside constraints
    reads as ``allOf`` of the two (annotations beside it constrain nothing: it is followed)."""
    base = base or schema.base
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 50:
        if node.keys() - ANNOTATIONS and schema.modern.get(base, schema.modern.get(schema.base, False)):
            if id(node) not in schema.joined:
                schema.joined[id(node)] = {"allOf": [{"$ref": node["$ref"]}, {k: v for k, v in node.items() if k != "$ref"}]}
                schema.made.add(id(schema.joined[id(node)]))
            return schema.joined[id(node)], base
        try:
            resolved = schema.registry.resolver(base).lookup(node["$ref"])
        except Unresolvable:
            ref = node["$ref"]
            if ref.startswith("#"):  # a place in this same document
                raise JsonSchemaError(f"$ref {ref!r} resolves nowhere: there is no {ref[1:] or '/'} in this schema") from None
            raise JsonSchemaError(f"$ref {ref!r} resolves nowhere: name the schema it points to as a reference "
                                  f"({ref.split('#', 1)[0]})") from None
        node, base = resolved.contents, resolved.resolver._base_uri or base
        seen += 1
    return node, base


def parts(schema: JsonSchema, node: Any) -> Any:
    """``node`` as the ``allOf`` of its parts when it holds several (a type beside an ``enum``, properties beside an
    ``anyOf``, ``allOf`` beside ``oneOf``, a ``not`` beside a length...), as the registry reads such a schema: each
    part binds on its own, so dropping the ``enum`` accepts more, and changing a property beside an ``anyOf`` is seen.
    Annotations stay with the typed part (or the whole when there is none); one joined node per node, so recursion
    guards hold."""
    if not isinstance(node, dict) or not node.keys() & PARTS:
        return node
    if id(node) in schema.joined:
        return schema.joined[id(node)]
    rest = {k: v for k, v in node.items() if k not in PARTS and k not in ANNOTATIONS}
    split = [{word: node[word]} for word in PARTS if word in node]
    if kind(rest) != "empty":
        split.insert(0, {k: v for k, v in node.items() if k not in PARTS})
        joined = {"allOf": split}
    else:
        joined = {**{k: v for k, v in node.items() if k not in PARTS}, "allOf": split}
    if len(split) < 2:
        return node
    schema.joined[id(node)] = joined
    schema.made.add(id(joined))
    return joined


def _modern(document: Any) -> bool:
    return isinstance(document, dict) and str(document.get("$schema", "")).rstrip("#") in MODERN


def _load(text: str, what: str) -> Any:
    try:
        document = json.loads(text)
    except ValueError as err:
        raise JsonSchemaError(f"{what} is not JSON: {err}") from None
    if not isinstance(document, (dict, bool)):
        raise JsonSchemaError(f"{what} is not a JSON Schema: a schema is an object (or true or false), not {type(document).__name__}")
    return document


def _check(document: Any, what: str) -> None:
    """Against the meta-schema of its draft (``$schema``; draft-07 when absent)."""
    validator = validators.validator_for(document, default=validators.Draft7Validator)
    try:
        validator.check_schema(document)
    except exceptions.SchemaError as err:
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        raise JsonSchemaError(f"{what} is not a valid {validator.__name__.removesuffix('Validator')} JSON Schema at {where}: {err.message}") from None
    for where, pattern in _patterns(document, "(root)"):  # draft 4's meta-schema does not ask them to be regular expressions
        try:
            re.compile(pattern)
        except re.error as err:
            raise JsonSchemaError(f"{what} is not a valid {validator.__name__.removesuffix('Validator')} JSON Schema at {where}: "
                                  f"{pattern!r} is not a regular expression ({err})") from None


def _patterns(node: Any, where: str) -> list[tuple[str, str]]:
    """Every ``patternProperties`` name in the document, with where it stands (what the classifier matches names against)."""
    found: list[tuple[str, str]] = []
    if isinstance(node, dict):
        if isinstance(node.get("patternProperties"), dict):
            found += [(f"{where}/patternProperties", pattern) for pattern in node["patternProperties"]]
        for key, value in node.items():
            if key not in ("enum", "const", "default", "examples"):
                found += _patterns(value, key if where == "(root)" else f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _patterns(value, f"{where}/{index}")
    return found


def _resolve_all(schema: JsonSchema) -> None:
    """Every ``$ref`` of the document resolves (a bad one is bad input now, not a surprise mid-walk)."""
    stack: list[tuple[Any, str]] = [(schema.root, schema.base)]
    seen: set[int] = set()
    while stack:
        node, base = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                target, target_base = resolve(schema, {"$ref": node["$ref"]}, base)
                stack.append((target, target_base))
            stack.extend((value, base) for key, value in node.items() if key not in ("enum", "const", "default", "examples") and isinstance(value, (dict, list)))
        elif isinstance(node, list):
            stack.extend((value, base) for value in node if isinstance(value, (dict, list)))


def json_field_walk(schema: JsonSchema) -> FieldWalk:
    """The document's property paths, parents before children, each once (``items``, ``items.price``): through
    ``$ref``, array items (tuples too) and the branches of ``allOf``/``anyOf``/``oneOf``, as lineage names an Avro record's
    fields (see ``bot.domain.lineage.field_paths``)."""

    def steps(at: tuple[Any, str]) -> list[tuple[str | None, tuple[Any, str]]]:
        node, base = at
        if not isinstance(node, dict):
            return []
        items = node.get("items")
        found: list[tuple[str | None, tuple[Any, str]]] = [(name, resolve(schema, inner, base)) for name, inner in (node.get("properties") or {}).items()]
        found += [(None, resolve(schema, inner, base)) for inner in [
            *(items if isinstance(items, list) else [items] if items is not None else []), *(node.get("prefixItems") or [])]]
        found += [(None, resolve(schema, inner, base)) for word in ("allOf", "anyOf", "oneOf") for inner in node.get(word) or []]
        return found

    return FieldWalk(resolve(schema, schema.root, schema.base), steps, lambda at: id(at[0]))


def pointer_path(pointer: str) -> str:
    """A JSON Schema pointer (``#/properties/page/properties/url``, ``#/properties/items/items/properties/price``) as the
    field path lineage uses (``page.url``, ``items.price``)."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.removeprefix("#").strip("/").split("/") if p]
    names: list[str] = []
    index = 0
    while index < len(parts):
        if parts[index] in ("properties", "patternProperties") and index + 1 < len(parts):
            names.append(parts[index + 1])
            index += 2
            continue
        index += 1  # items, prefixItems/0, allOf/1, $defs/X...: no name of their own in a document
    return ".".join(names)


def json_value(value: Any) -> Any:
    """A JSON value as JSON Schema compares them: numbers by their value (1 is 1.0), never equal to a boolean (Python's
    ``1 == True``), objects whatever their key order; hashable."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", Decimal(str(value)).normalize() if value == value and abs(value) != float("inf") else str(value))
    if isinstance(value, list):
        return ("array", tuple(json_value(v) for v in value))
    return ("object", tuple(sorted((k, json_value(v)) for k, v in value.items())))
