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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

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
        return decode_json(text)
    except json.JSONDecodeError as err:
        raise SchemaError(f"line {err.lineno} column {err.colno}", f"malformed JSON: {err.msg}") from None
    except RecursionError:
        raise SchemaError("", f"nesting deeper than {MAX_DEPTH} levels") from None


def decode_json(text: str | bytes) -> Any:
    """``json.loads``, three times faster: orjson decodes, and what it refuses (NaN, integers beyond 64
    bits, lone surrogates, deep nesting, malformed text) goes to ``json`` for the same value or error."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def parse(source: Any, *, like: Schema | None = None, keep_parts: bool = False, refs: Sequence[Schema] = ()) -> Schema:
    """Parse schema JSON text, or an already-decoded JSON value, into a ``Schema``.

    ``refs``: referenced schemas (Confluent's schema references, see ``parse_references``) whose named types this
    schema may use by name; it may not define them again.

    ``like``: a schema parsed with ``keep_parts`` (typically the other side of a comparison); each field
    whose JSON equals a self-contained field of it, in the same record at the same depth, is taken over
    instead of parsed again. The result is the same; the two schemas then share those fields, which
    the classifier passes over at once (a shared field cannot have changed).
    """
    value = load_json(source) if isinstance(source, str | bytes) else source
    return _Parser(like.parts if like is not None else None, keep_parts, refs).schema(value)


def parse_value(value: Any, *, like: Schema | None = None, keep_parts: bool = False, refs: Sequence[Schema] = ()) -> Schema:
    """Parse a JSON value that is a schema, or a string holding schema text (or naming a type). A bare string that
    names a primitive is that primitive written as a JSON string (``"null"`` is the null type, not JSON null)."""
    if isinstance(value, str):
        if not value.strip():
            raise SchemaError("", "empty schema")
        if value.strip() in PRIMITIVES:
            return _Parser(None, keep_parts, refs).schema(value.strip())
        try:
            value = decode_json(value)
        except json.JSONDecodeError:
            if value.lstrip()[:1] in ("{", "[", '"'):
                return parse(value, refs=refs)
        except RecursionError:
            raise SchemaError("", f"nesting deeper than {MAX_DEPTH} levels") from None
    return _Parser(like.parts if like is not None else None, keep_parts, refs).schema(value)


def parse_references(sources: Sequence[Any], before: Sequence[Schema] = ()) -> list[Schema]:
    """Referenced schemas (JSON text or values), in the order a registry gives them: each may use the named types of
    ``before`` and of those before it. The root type of each is marked ``referenced``, so findings inside it carry the
    referencing field's path (``Order.shipping<Address>.zip``). A SchemaError names the reference (``reference 2: ...``)."""
    found: list[Schema] = list(before)
    for number, source in enumerate(sources, start=1):
        try:
            schema = parse_value(source, refs=found)
        except SchemaError as err:
            raise SchemaError(f"reference {number}" + (f" {err.place}" if err.place else ""), err.reason) from None
        if schema.root.type in NAMED:
            schema.root.referenced = True
        found.append(schema)
    return found[len(before):]


# The named types a field defines, and the names it looks up with the types found (all its own): where it is
# taken over, none of these names may exist yet.
_Naming = tuple[tuple[Node, ...], tuple[tuple[str, Node], ...]]


@dataclass(slots=True)
class _Kept:
    """A parsed record's fields, as another parse may take them over."""

    raws: dict[str, Any]  # field name: its JSON
    fields: dict[str, Field]
    depth: int
    unsafe: set[str]  # fields not to take: JSON equality would not tell 1 from 1.0 or true, or they look up outer names
    naming: dict[str, _Naming]  # fields that define or look up named types of their own


_Parts = tuple[dict[str | None, _Kept], dict[tuple[Any, ...], Node]]  # records by full name, small types
_NOTHING_KEPT = _Kept({}, {}, -1, set(), {})


class _Parser:
    def __init__(self, like: _Parts | None, keep: bool, refs: Sequence[Schema] = ()) -> None:
        self.names: dict[str, Node] = {}
        for ref in refs:
            self.names.update(ref.names)
        self.like: dict[str | None, _Kept] | None = like[0] if like is not None else None
        self.keep: dict[str | None, _Kept] | None = {} if keep else None
        self.defined: list[Node] = []  # named types in the order of definition
        self.referenced: list[tuple[str, Node]] = []  # (name looked up, type found), when keeping parts
        self.exotic = False  # a number or boolean was met, where JSON equality does not tell 1 from 1.0 or true
        self.shapes: dict[tuple[Any, ...], Node] = dict(like[1]) if like is not None else {}  # small anonymous types

    def schema(self, value: Any) -> Schema:
        root = self.node(value, "", "", 0)
        return Schema(root, self.names, (self.keep, self.shapes) if self.keep is not None else None)

    # --- types ----------------------------------------------------------------------------------

    def node(self, value: Any, namespace: str, place: str, depth: int) -> Node:
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
            node = Node(kind)
        elif kind == "array":
            if "items" not in value:
                raise SchemaError(place, "an array needs \"items\"")
            node = Node("array", items=self.node(value["items"], namespace, f"{place}[]", depth + 1))
        elif kind == "map":
            if "values" not in value:
                raise SchemaError(place, "a map needs \"values\"")
            node = Node("map", values=self.node(value["values"], namespace, f"{place}{{}}", depth + 1))
        else:
            return self.reference(kind, namespace, place)
        self.annotate(node, value)
        if kind in PRIMITIVES and not node.props and not node.logical:
            return PLAIN[kind]
        return node

    def reference(self, name: str, namespace: str, place: str) -> Node:
        if name in PRIMITIVES:
            return PLAIN[name]
        if name in ("record", "enum", "fixed", "array", "map", "error"):
            raise SchemaError(place, f"\"{name}\" needs the object form, e.g. {{\"type\": \"{name}\", ...}}")
        full = name if "." in name or not namespace else f"{namespace}.{name}"
        node = self.names.get(full) or self.names.get(name)
        if node is None:
            raise SchemaError(place, f"unknown type \"{name}\" (named types must be defined before they are used, or come from a referenced schema)")
        if self.keep is not None:
            self.referenced += ((full, node), (name, node))
        return node

    def union(self, value: list[Any], namespace: str, place: str, depth: int) -> Node:
        branches: list[Node] = []
        seen: set[str] = set()
        for i, item in enumerate(value):
            if isinstance(item, list):
                raise SchemaError(place, f"union branch {i} is itself a union; unions may not contain unions")
            branch = self.node(item, namespace, place, depth + 1)
            key = branch.name if branch.type in NAMED else branch.type
            assert key is not None
            if key in seen:
                raise SchemaError(place, f"union has two branches of type {key}; only named types may repeat, with different names")
            seen.add(key)
            branches.append(branch)
        return Node("union", branches=branches)

    def record(self, value: dict[str, Any], namespace: str, place: str, depth: int) -> Node:
        node = self.named(value, "record", namespace, place)
        place = place or node.short_name
        fields = value.get("fields")
        if not isinstance(fields, list):
            raise SchemaError(place, "a record needs \"fields\", an array")
        by_name, by_alias, record_name, add = node.by_name, node.by_alias, node.name, node.fields.append
        kept = self.like.get(record_name) if self.like is not None else None
        if kept is None or kept.depth != depth:
            kept = _NOTHING_KEPT
        old_raw, old_field, old_unsafe, old_naming = kept.raws.get, kept.fields, kept.unsafe, kept.naming
        unsafe: set[str] | None = set() if self.keep is not None else None
        naming: dict[str, _Naming] = {}
        for i, raw in enumerate(fields):
            if not isinstance(raw, dict):
                raise SchemaError(f"{place}.fields[{i}]", "a field is an object with \"name\" and \"type\"")
            name = raw.get("name")
            if type(name) is not str:
                raise SchemaError(f"{place}.fields[{i}]", f"invalid field name {json.dumps(name)} (must match [A-Za-z_][A-Za-z0-9_]*)")
            if name in by_name:
                raise SchemaError(f"{place}.{name}", f"duplicate field name \"{name}\"")
            old = old_raw(name)
            if (old is not None and (old is raw or old == raw) and name not in old_unsafe
                    and (name not in old_naming or self.take(old_naming[name], naming, name))):
                field = old_field[name]  # equal JSON in the same place: the same field
            else:
                if not NAME.match(name):
                    raise SchemaError(f"{place}.fields[{i}]", f"invalid field name {json.dumps(name)} (must match [A-Za-z_][A-Za-z0-9_]*)")
                field = self.field(raw, name, node, place, depth, unsafe, naming)
            add(field)
            by_name[name] = field
            if field.aliases:
                for alias in field.aliases:
                    by_alias[alias] = field  # the last field naming it, as Avro's rewrite of the writer's schema has it
        if self.keep is not None and unsafe is not None:
            self.keep[record_name] = _Kept(dict(zip(by_name, fields, strict=True)), by_name, depth, unsafe, naming)
        self.annotate(node, value)
        return node

    def field(self, raw: dict[str, Any], name: str, record: Node, place: str, depth: int,
              unsafe: set[str] | None, naming: dict[str, _Naming]) -> Field:
        """One field, its name already checked; when keeping parts, noted in ``unsafe`` or ``naming`` if
        another parse may not simply take it over."""
        kind = raw.get("type")
        ftype = PLAIN.get(kind) if type(kind) is str else None
        if len(raw) == 2 and depth + 2 <= MAX_DEPTH:  # the common cases: name and a primitive or a small type seen before
            if ftype is not None:
                return Field(name, ftype)
            try:
                known = self.shapes.get(tuple(kind.items()) if type(kind) is dict else tuple(kind) if type(kind) is list else None)  # type: ignore[arg-type]
            except TypeError:  # holds a list or an object: not a small type
                known = None
            if known is not None:
                return Field(name, known)
        if unsafe is None:
            return self.full_field(raw, name, kind, ftype, record, place, depth)
        defined, referenced, exotic = len(self.defined), len(self.referenced), self.exotic
        self.exotic = False
        field = self.full_field(raw, name, kind, ftype, record, place, depth)
        if self.exotic:
            unsafe.add(name)
        elif len(self.defined) != defined or len(self.referenced) != referenced:
            inside = self.defined[defined:]
            own = {id(n) for n in inside}
            refs = self.referenced[referenced:]
            if all(id(node) in own for _, node in refs):
                naming[name] = (tuple(inside), tuple(refs))
            else:
                unsafe.add(name)
        self.exotic = self.exotic or exotic
        return field

    def full_field(self, raw: dict[str, Any], name: str, kind: Any, ftype: Node | None, record: Node, place: str,
                   depth: int) -> Field:
        if ftype is None:
            if "type" not in raw:
                raise SchemaError(f"{place}.{name}", "a field needs \"type\"")
            try:  # a small anonymous type seen before (only those are stored) is the same type
                shape = tuple(kind.items()) if type(kind) is dict else tuple(kind) if type(kind) is list else None
                ftype = self.shapes.get(shape) if shape is not None and depth + 2 <= MAX_DEPTH else None
            except TypeError:  # holds a list or an object: not a small type
                shape = ftype = None
            if ftype is None:
                ftype = self.node(kind, record.namespace, f"{place}.{name}", depth + 1)
                if shape is not None and _small(kind):
                    self.shapes[shape] = ftype
        if len(raw) == 2:  # name and type only
            return Field(name, ftype)
        aliases = raw.get("aliases")
        if aliases is not None:
            aliases = _string_list(aliases, f"{place}.{name}", "aliases")
        doc = raw.get("doc")
        if doc is not None and type(doc) is not str:
            raise SchemaError(f"{place}.{name}", "\"doc\" must be a string")
        order = raw.get("order", "ascending")
        if order not in ("ascending", "descending", "ignore"):
            raise SchemaError(f"{place}.{name}", f"\"order\" must be ascending, descending or ignore, not {json.dumps(order)}")
        default = raw.get("default", NO_DEFAULT)
        if default is not NO_DEFAULT:
            problem = default_problem(ftype, default)
            if problem:
                raise SchemaError(f"{place}.{name}", f"default {_short(default)} is not valid for {ftype.describe()}: {problem}")
            if not isinstance(default, str) and default is not None:
                self.exotic = True
        props = {k: v for k, v in raw.items() if k not in FIELD_KEYS} if raw.keys() - FIELD_KEYS else {}
        if props and not all(isinstance(v, str) for v in props.values()):
            self.exotic = True
        return Field(name, ftype, default, frozenset(aliases) if aliases else frozenset(), doc, order, props)

    def take(self, part: _Naming, naming: dict[str, _Naming], name: str) -> bool:
        """Take over a field that names types, when the names it defines or looks up are all still free here."""
        defined, refs = part
        if any(node.name in self.names for node in defined) or any(looked in self.names for looked, _ in refs):
            return False
        for node in defined:
            assert node.name is not None
            self.names[node.name] = node
            self.defined.append(node)
        if self.keep is not None:
            self.referenced += refs
        naming[name] = part
        return True

    def enum(self, value: dict[str, Any], namespace: str, place: str) -> Node:
        node = self.named(value, "enum", namespace, place)
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
        if "default" in value:
            if value["default"] not in symbols:
                raise SchemaError(place, f"enum default {json.dumps(value['default'])} is not one of its symbols")
            node.enum_default = value["default"]
        self.annotate(node, value)
        return node

    def fixed(self, value: dict[str, Any], namespace: str, place: str) -> Node:
        node = self.named(value, "fixed", namespace, place)
        size = value.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise SchemaError(place or node.short_name, f"fixed \"size\" must be a non-negative integer, not {json.dumps(size)}")
        node.size = size
        self.exotic = True
        self.annotate(node, value)
        return node

    def named(self, value: dict[str, Any], kind: str, namespace: str, place: str) -> Node:
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
        node = Node(kind, name=full, aliases=aliases, doc=_optional_string(value, "doc", place))
        self.names[full] = node
        self.defined.append(node)
        return node

    def annotate(self, node: Node, value: dict[str, Any]) -> None:
        """Logical type and extra properties."""
        if len(value) == 1:  # "type" alone
            return
        extras = {k: v for k, v in value.items() if k not in RESERVED.get(node.type, {"type"})}
        if not extras:
            return
        if not all(isinstance(v, str) for v in extras.values()):
            self.exotic = True
        self.logical(node, extras)
        logical_keys = ("logicalType", "precision", "scale") if node.logical else ()
        node.props = {k: v for k, v in extras.items() if k not in logical_keys}

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


def _small(value: Any) -> bool:
    """Whether a valid parsed type is small and anonymous, names nothing and holds only strings (a union
    of primitives, a primitive with properties, an array or map of a primitive): equal ones are one type."""
    if type(value) is list:
        return all(type(v) is str for v in value) and PRIMITIVES.issuperset(value)
    kind = value.get("type")
    if kind == "array" or kind == "map":
        inner = value.get("items" if kind == "array" else "values")
        if type(inner) is not str or inner not in PRIMITIVES:
            return False
    elif kind not in PRIMITIVES:
        return False
    return all(type(v) is str for v in value.values())


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
