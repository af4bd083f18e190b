"""Parse and validate Avro schemas (specification 1.12), with errors that name the place and the reason.

Besides the checks every parser makes, this one refuses what lenient parsers let through: duplicate
field names, invalid names and symbols, unions inside unions, duplicate union branches, negative fixed
sizes, defaults of the wrong type, forward references, and nesting deeper than ``MAX_DEPTH``. Invalid
logical types are ignored (the underlying type is used), as the specification requires.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from bot.domain.avro.model import NAMED, NO_DEFAULT, PRIMITIVES, Field, Node, Schema

MAX_DEPTH = 64
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
RESERVED = {
    "record": {"type", "name", "namespace", "doc", "aliases", "fields"},
    "enum": {"type", "name", "namespace", "doc", "aliases", "symbols", "default"},
    "fixed": {"type", "name", "namespace", "doc", "aliases", "size"},
    "array": {"type", "items"},
    "map": {"type", "values"},
}
FIELD_KEYS = {"name", "type", "default", "aliases", "doc", "order"}
LOGICAL_ON = {
    "date": ("int",), "time-millis": ("int",), "time-micros": ("long",),
    "timestamp-millis": ("long",), "timestamp-micros": ("long",), "timestamp-nanos": ("long",),
    "local-timestamp-millis": ("long",), "local-timestamp-micros": ("long",), "local-timestamp-nanos": ("long",),
    "uuid": ("string", "fixed"), "decimal": ("bytes", "fixed"), "big-decimal": ("bytes",), "duration": ("fixed",),
}
PLAIN = {kind: Node(kind) for kind in PRIMITIVES}  # shared: a plain primitive has nothing of its own
INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
SPECIAL_FLOATS = {"NaN", "Infinity", "-Infinity"}


class SchemaError(ValueError):
    """An invalid schema: ``place`` says where (a path such as ``Order.items[].price``), ``reason`` what."""

    def __init__(self, place: str, reason: str) -> None:
        shown = place if len(place) <= 120 else place[:117] + "..."
        super().__init__(f"{shown}: {reason}" if place else reason)
        self.place = place
        self.reason = reason


def load_json(text: str | bytes) -> Any:
    """JSON text to a value, with line and column in the error."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            raise SchemaError("", f"not UTF-8 text (byte {err.start})") from None
    if not text.strip():
        raise SchemaError("", "empty schema")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise SchemaError(f"line {err.lineno} column {err.colno}", f"malformed JSON: {err.msg}") from None
    except RecursionError:
        raise SchemaError("", f"nesting deeper than {MAX_DEPTH} levels") from None


def parse(source: Any) -> Schema:
    """Parse schema JSON text, or an already-decoded JSON value, into a ``Schema``."""
    value = load_json(source) if isinstance(source, str | bytes) else source
    return _Parser().schema(value)


def parse_value(value: Any) -> Schema:
    """Parse a JSON value that is a schema, or a string holding schema text (or naming a type)."""
    if isinstance(value, str):
        if not value.strip():
            raise SchemaError("", "empty schema")
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            if value.lstrip()[:1] in ("{", "[", '"'):
                return parse(value)
        except RecursionError:
            raise SchemaError("", f"nesting deeper than {MAX_DEPTH} levels") from None
    return _Parser().schema(value)


class _Parser:
    def __init__(self) -> None:
        self.names: dict[str, Node] = {}

    def schema(self, value: Any) -> Schema:
        root, normal = self.node(value, "", "", 0)
        return Schema(root, self.names, normal)

    # --- types ----------------------------------------------------------------------------------

    def node(self, value: Any, namespace: str, place: str, depth: int) -> tuple[Node, Any]:
        if depth > MAX_DEPTH:
            raise SchemaError(place, f"nesting deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            return self.reference(value, namespace, place)
        if isinstance(value, list):
            return self.union(value, namespace, place, depth)
        if not isinstance(value, dict):
            raise SchemaError(place, f"a schema is a type name, an object or an array, not {_json_kind(value)}")
        kind = value.get("type")
        if kind is None:
            raise SchemaError(place, "missing \"type\"")
        if not isinstance(kind, str):
            raise SchemaError(place, "\"type\" must be a string (a type name); nest schemas in \"items\", \"values\" or \"fields\"")
        if kind in ("record", "error"):
            return self.record(value, namespace, place, depth)
        if kind == "enum":
            return self.enum(value, namespace, place)
        if kind == "fixed":
            return self.fixed(value, namespace, place)
        if kind in PRIMITIVES:
            node, normal = Node(kind), {"type": kind}
        elif kind == "array":
            if "items" not in value:
                raise SchemaError(place, "an array needs \"items\"")
            items, items_normal = self.node(value["items"], namespace, f"{place}[]", depth + 1)
            node, normal = Node("array", items=items), {"type": "array", "items": items_normal}
        elif kind == "map":
            if "values" not in value:
                raise SchemaError(place, "a map needs \"values\"")
            values, values_normal = self.node(value["values"], namespace, f"{place}{{}}", depth + 1)
            node, normal = Node("map", values=values), {"type": "map", "values": values_normal}
        else:
            ref, _ = self.reference(kind, namespace, place)
            return ref, _normal_ref(ref)
        self.annotate(node, value, normal)
        if kind in PRIMITIVES and len(normal) == 1:
            return PLAIN[kind], kind
        return node, normal

    def reference(self, name: str, namespace: str, place: str) -> tuple[Node, Any]:
        if name in PRIMITIVES:
            return PLAIN[name], name
        if name in ("record", "enum", "fixed", "array", "map", "error"):
            raise SchemaError(place, f"\"{name}\" needs the object form, e.g. {{\"type\": \"{name}\", ...}}")
        full = name if "." in name or not namespace else f"{namespace}.{name}"
        node = self.names.get(full) or self.names.get(name)
        if node is None:
            raise SchemaError(place, f"unknown type \"{name}\" (named types must be defined before they are used)")
        return node, _normal_ref(node)

    def union(self, value: list[Any], namespace: str, place: str, depth: int) -> tuple[Node, Any]:
        branches: list[Node] = []
        normals: list[Any] = []
        seen: set[str] = set()
        for i, item in enumerate(value):
            if isinstance(item, list):
                raise SchemaError(place, f"union branch {i} is itself a union; unions may not contain unions")
            branch, normal = self.node(item, namespace, place, depth + 1)
            key = branch.name if branch.type in NAMED else branch.type
            assert key is not None
            if key in seen:
                raise SchemaError(place, f"union has two branches of type {key}; only named types may repeat, with different names")
            seen.add(key)
            branches.append(branch)
            normals.append(normal)
        return Node("union", branches=branches), normals

    def record(self, value: dict[str, Any], namespace: str, place: str, depth: int) -> tuple[Node, Any]:
        node, normal = self.named(value, "record", namespace, place)
        place = place or node.short_name
        fields = value.get("fields")
        if not isinstance(fields, list):
            raise SchemaError(place, "a record needs \"fields\", an array")
        normal_fields: list[Any] = []
        for i, raw in enumerate(fields):
            if not isinstance(raw, dict):
                raise SchemaError(f"{place}.fields[{i}]", "a field is an object with \"name\" and \"type\"")
            name = raw.get("name")
            if not isinstance(name, str) or not NAME.match(name):
                raise SchemaError(f"{place}.fields[{i}]", f"invalid field name {json.dumps(name)} (must match [A-Za-z_][A-Za-z0-9_]*)")
            at = f"{place}.{name}"
            if name in node.by_name:
                raise SchemaError(at, f"duplicate field name \"{name}\"")
            if "type" not in raw:
                raise SchemaError(at, "a field needs \"type\"")
            ftype, ftype_normal = self.node(raw["type"], node.namespace, at, depth + 1)
            aliases = _string_list(raw.get("aliases", []), at, "aliases")
            doc = _optional_string(raw, "doc", at)
            order = raw.get("order", "ascending")
            if order not in ("ascending", "descending", "ignore"):
                raise SchemaError(at, f"\"order\" must be ascending, descending or ignore, not {json.dumps(order)}")
            default = raw.get("default", NO_DEFAULT)
            if default is not NO_DEFAULT:
                problem = default_problem(ftype, default)
                if problem:
                    raise SchemaError(at, f"default {_short(default)} is not valid for {ftype.describe()}: {problem}")
            props = {k: v for k, v in raw.items() if k not in FIELD_KEYS}
            field = Field(name, ftype, default, frozenset(aliases), doc, order, props)
            node.fields.append(field)
            node.by_name[name] = field
            for alias in aliases:
                node.by_alias.setdefault(alias, field)
            entry: dict[str, Any] = {"name": name, "type": ftype_normal, **props}
            if default is not NO_DEFAULT:
                entry["default"] = default
            if aliases:
                entry["aliases"] = sorted(aliases)
            if doc is not None:
                entry["doc"] = doc
            if order != "ascending":
                entry["order"] = order
            normal_fields.append(entry)
        normal["fields"] = normal_fields
        self.annotate(node, value, normal)
        return node, normal

    def enum(self, value: dict[str, Any], namespace: str, place: str) -> tuple[Node, Any]:
        node, normal = self.named(value, "enum", namespace, place)
        place = place or node.short_name
        symbols = value.get("symbols")
        if not isinstance(symbols, list):
            raise SchemaError(place, "an enum needs \"symbols\", an array of names")
        for symbol in symbols:
            if not isinstance(symbol, str) or not NAME.match(symbol):
                raise SchemaError(place, f"invalid enum symbol {json.dumps(symbol)} (must match [A-Za-z_][A-Za-z0-9_]*)")
        if len(set(symbols)) != len(symbols):
            duplicate = next(s for s in symbols if symbols.count(s) > 1)
            raise SchemaError(place, f"duplicate enum symbol \"{duplicate}\"")
        node.symbols = list(symbols)
        normal["symbols"] = list(symbols)
        if "default" in value:
            if value["default"] not in symbols:
                raise SchemaError(place, f"enum default {json.dumps(value['default'])} is not one of its symbols")
            node.enum_default = value["default"]
            normal["default"] = node.enum_default
        self.annotate(node, value, normal)
        return node, normal

    def fixed(self, value: dict[str, Any], namespace: str, place: str) -> tuple[Node, Any]:
        node, normal = self.named(value, "fixed", namespace, place)
        size = value.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise SchemaError(place or node.short_name, f"fixed \"size\" must be a non-negative integer, not {json.dumps(size)}")
        node.size = size
        normal["size"] = size
        self.annotate(node, value, normal)
        return node, normal

    def named(self, value: dict[str, Any], kind: str, namespace: str, place: str) -> tuple[Node, dict[str, Any]]:
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise SchemaError(place, f"a {kind} needs a \"name\"")
        if "." in name:
            full = name
        else:
            space = value.get("namespace", namespace)
            if space is None:
                space = ""
            if not isinstance(space, str):
                raise SchemaError(place, "\"namespace\" must be a string")
            full = f"{space}.{name}" if space else name
        for part in full.split("."):
            if not NAME.match(part):
                raise SchemaError(place, f"invalid name \"{full}\" (each part must match [A-Za-z_][A-Za-z0-9_]*)")
        short = full.rpartition(".")[2]
        if short in PRIMITIVES:
            raise SchemaError(place, f"\"{short}\" is a primitive type name and cannot be redefined")
        if full in self.names:
            raise SchemaError(place, f"\"{full}\" is defined twice")
        own_space = full.rpartition(".")[0]
        aliases = frozenset(a if "." in a or not own_space else f"{own_space}.{a}"
                            for a in _string_list(value.get("aliases", []), place, "aliases"))
        doc = _optional_string(value, "doc", place)
        node = Node(kind, name=full, aliases=aliases, doc=doc)
        self.names[full] = node
        normal: dict[str, Any] = {"type": kind, "name": full}
        if aliases:
            normal["aliases"] = sorted(aliases)
        if doc is not None:
            normal["doc"] = doc
        return node, normal

    def annotate(self, node: Node, value: dict[str, Any], normal: dict[str, Any]) -> None:
        """Logical type and extra properties, on the node and in its normal form."""
        extras = {k: v for k, v in value.items() if k not in RESERVED.get(node.type, {"type"})}
        self.logical(node, extras)
        logical_keys = ("logicalType", "precision", "scale") if node.logical else ()
        node.props = {k: v for k, v in extras.items() if k not in logical_keys}
        normal.update(node.props)
        if node.logical:
            normal["logicalType"] = node.logical
            if node.logical == "decimal":
                normal["precision"], normal["scale"] = node.precision, node.scale

    def logical(self, node: Node, extras: dict[str, Any]) -> None:
        """Attach a valid logical type; invalid or unknown ones stay plain properties (spec: ignore them)."""
        name = extras.get("logicalType")
        if not isinstance(name, str) or node.type not in LOGICAL_ON.get(name, ()):
            return
        if name == "uuid" and node.type == "fixed" and node.size != 16:
            return
        if name == "duration" and node.size != 12:
            return
        if name == "decimal":
            precision, scale = extras.get("precision"), extras.get("scale", 0)
            if not _positive_int(precision) or not (_positive_int(scale) or scale == 0):
                return
            assert isinstance(precision, int) and isinstance(scale, int)
            if scale > precision:
                return
            if node.type == "fixed":
                assert node.size is not None
                if node.size == 0 or precision > math.floor(math.log10(2 ** (8 * node.size - 1) - 1)):
                    return
            node.precision, node.scale = precision, scale
        node.logical = name


def default_problem(node: Node, value: Any, depth: int = 0) -> str | None:
    """Why ``value`` is not a valid JSON default for ``node`` (None when it is)."""
    if depth > MAX_DEPTH:
        return "nested too deeply"
    kind = node.type
    if kind == "null":
        return None if value is None else "expected null"
    if kind == "boolean":
        return None if isinstance(value, bool) else "expected true or false"
    if kind in INT_RANGE:
        low, high = INT_RANGE[kind]
        if isinstance(value, bool) or not isinstance(value, int):
            return f"expected an integer ({kind})"
        return None if low <= value <= high else f"out of range for {kind}"
    if kind in ("float", "double"):
        if isinstance(value, str) and value in SPECIAL_FLOATS:
            return None
        return None if isinstance(value, int | float) and not isinstance(value, bool) else "expected a number"
    if kind in ("bytes", "fixed"):
        if not isinstance(value, str):
            return "expected a string of code points 0-255"
        if any(ord(c) > 255 for c in value):
            return "bytes defaults use code points 0-255 only"
        if kind == "fixed" and len(value) != node.size:
            return f"expected exactly {node.size} bytes"
        return None
    if kind == "string":
        return None if isinstance(value, str) else "expected a string"
    if kind == "enum":
        return None if value in node.symbols else f"expected one of {', '.join(node.symbols[:8])}"
    if kind == "array":
        if not isinstance(value, list):
            return "expected an array"
        assert node.items is not None
        return next((f"item {i}: {p}" for i, v in enumerate(value) if (p := default_problem(node.items, v, depth + 1))), None)
    if kind == "map":
        if not isinstance(value, dict):
            return "expected an object"
        assert node.values is not None
        return next((f"key {k!r}: {p}" for k, v in value.items() if (p := default_problem(node.values, v, depth + 1))), None)
    if kind == "record":
        if not isinstance(value, dict):
            return "expected an object"
        for field in node.fields:
            if field.name in value:
                problem = default_problem(field.type, value[field.name], depth + 1)
                if problem:
                    return f"field {field.name}: {problem}"
            elif not field.has_default:
                return f"field {field.name} is missing and has no default"
        return None
    if kind == "union":
        if any(default_problem(b, value, depth + 1) is None for b in node.branches):
            return None
        return "matches no branch of the union"
    return f"unsupported type {kind}"


def _normal_ref(node: Node) -> Any:
    return node.name if node.type in NAMED else node.type


def _string_list(value: Any, place: str, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SchemaError(place, f"\"{what}\" must be an array of strings")
    return list(value)


def _optional_string(value: dict[str, Any], key: str, place: str) -> str | None:
    item = value.get(key)
    if item is not None and not isinstance(item, str):
        raise SchemaError(place, f"\"{key}\" must be a string")
    return item


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _json_kind(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
