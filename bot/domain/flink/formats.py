"""How Flink's Protobuf and JSON formats read a subject's approved schema into a table's columns (check 1 beyond Avro).

``protobuf`` is generated code: each column must have exactly the type Flink maps the field to (int32/uint32/sint32/
fixed32/sfixed32 INT, the 64-bit ones BIGINT, float FLOAT, double DOUBLE, bool BOOLEAN, string and enums STRING,
bytes BYTES, a message ROW, repeated ARRAY, map MAP), or the job fails when it starts. ``json`` converts what it
finds: a column may read a JSON value of another kind where Flink's converter does (a string as a timestamp, an
integer as a decimal), but not where it truncates or fails (a number with fractions into an INT, an unbounded
integer into an INT, a string into a number)."""

from __future__ import annotations

from typing import Any

from bot.domain.flink.types import INTEGER_DIGITS, SqlType
from bot.domain.jsonschema.model import JsonSchema, resolve
from bot.domain.protobuf.model import ProtoSchema

PROTO_SQL = {"int32": "INT", "uint32": "INT", "sint32": "INT", "fixed32": "INT", "sfixed32": "INT", "int64": "BIGINT", "uint64": "BIGINT",
             "sint64": "BIGINT", "fixed64": "BIGINT", "sfixed64": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "bool": "BOOLEAN",
             "string": "VARCHAR", "bytes": "VARBINARY"}
TEMPORAL = ("DATE", "TIME", "TIMESTAMP", "TIMESTAMP_LTZ")
INT_RANGE = {"TINYINT": 2**7, "SMALLINT": 2**15, "INT": 2**31, "BIGINT": 2**63}


def proto_message(schema: ProtoSchema, class_name: str | None) -> str | None:
    """The message a table's ``protobuf.message-class-name`` names (``com.acme.OrderProto$Order`` or ``com.acme.Order``, by
    its simple name), else the first message of the file."""
    wanted = (class_name or "").replace("$", ".").rsplit(".", 1)[-1]
    own = [n for n in schema.own if n in schema.messages]
    return next((n for n in own if schema.messages[n].name.rsplit(".", 1)[-1] == wanted), None) if wanted else (own[0] if own else None)


def from_proto(schema: ProtoSchema, message: str, seen: frozenset[str] = frozenset()) -> SqlType:
    """The ROW type Flink's protobuf format reads ``message`` as."""
    fields = []
    for item in schema.messages[message].fields.values():
        fields.append((item.name, _proto_field(schema, item.type, item.kind, item.label, seen | {message})))
    return SqlType("ROW", (), True, tuple(fields))


def _proto_field(schema: ProtoSchema, type_name: str, kind: str, label: str, seen: frozenset[str]) -> SqlType:
    if kind == "map":
        entry = schema.messages[type_name].fields
        key, value = entry[1], entry[2]
        return SqlType("MAP", (), True, parts=(_proto_field(schema, key.type, key.kind, "optional", seen),
                                               _proto_field(schema, value.type, value.kind, "optional", seen)))
    if label == "repeated":
        return SqlType("ARRAY", (), True, parts=(_proto_field(schema, type_name, kind, "optional", seen),))
    if kind == "message":
        if type_name in seen or type_name not in schema.messages:
            return SqlType("RAW", (), True)  # a recursive message: Flink's format cannot read it
        return from_proto(schema, type_name, seen)
    if kind == "enum":
        return SqlType("VARCHAR", (2147483647,), False)
    name = PROTO_SQL.get(type_name, "RAW")
    return SqlType(name, (2147483647,) if name in ("VARCHAR", "VARBINARY") else (), False)


def proto_problems(column: SqlType, written: SqlType, path: str) -> list[tuple[str, str]]:
    """Where a column's type is not the one Flink's protobuf format maps the field to: ``(path, reason)`` pairs."""
    if column.name == "ROW" and written.name == "ROW":
        found = []
        for name, sub in column.fields:
            other = written.field(name)
            found += [(f"{path}.{name}", "the approved schema has no such field")] if other is None else proto_problems(sub, other, f"{path}.{name}")
        return found
    if column.name == written.name and column.name in ("ARRAY", "MAP"):
        ends = ["[]"] if column.name == "ARRAY" else ["{key}", "{}"]
        return [p for mine, theirs, end in zip(column.parts, written.parts, ends, strict=False) for p in proto_problems(mine, theirs, f"{path}{end}")]
    if column.name == written.name and (column.name not in ("VARCHAR", "VARBINARY") or column.params == written.params):
        return []
    return [(path, f"Flink's protobuf format reads this field as {_plain(written)}, the column is {_plain(column)}: the job fails when it starts")]


def json_problems(schema: JsonSchema, column: SqlType, node: Any, base: str, path: str, *, required: bool = True) -> list[tuple[str, str]]:
    """Why a column cannot read the values a JSON Schema allows at ``node`` the way Flink's json format converts them."""
    node, base = resolve(schema, node, base)
    if node is True or node == {} or not isinstance(node, dict):
        return [(path, "the approved schema does not constrain it (any JSON value): the job fails on the first value the column cannot read")]
    kinds = _json_kinds(schema, node, base)
    nullable = "null" in kinds or not required
    if nullable and not column.nullable:
        return [(path, f"the approved schema allows it to be {'null' if 'null' in kinds else 'absent'}, but the column is {column}: "
                       "a null fails the job")]
    kinds.discard("null")
    if column.name in ("VARCHAR", "CHAR"):
        return []  # Flink's json format reads any value as text (objects and arrays as their JSON)
    found: list[tuple[str, str]] = []
    for kind in sorted(kinds):
        reason = _json_reason(schema, column, kind, node, base, path)
        if isinstance(reason, list):
            found += reason
        elif reason:
            found.append((path, reason))
    return found


def _json_reason(schema: JsonSchema, column: SqlType, kind: str, node: dict[str, Any], base: str, path: str) -> str | list[tuple[str, str]] | None:
    if kind == "object":
        if column.name == "ROW":
            properties, needed = node.get("properties") or {}, set(node.get("required") or [])
            found: list[tuple[str, str]] = []
            for name, sub in column.fields:
                if name not in properties:
                    closed = node.get("additionalProperties") is False
                    found.append((f"{path}.{name}", "the approved schema has no such property" if closed else
                                  "the approved schema does not declare it (its object is open): the column reads what documents happen to carry"))
                else:
                    found += json_problems(schema, sub, properties[name], base, f"{path}.{name}", required=name in needed)
            return found
        if column.name == "MAP" and isinstance(node.get("additionalProperties"), dict):
            return json_problems(schema, column.parts[1], node["additionalProperties"], base, f"{path}{{}}")
        return f"the approved schema has an object, the column reads {_plain(column)}"
    if kind == "array":
        if column.name in ("ARRAY", "MULTISET") and isinstance(node.get("items"), (dict, bool)):
            return json_problems(schema, column.parts[0], node["items"], base, f"{path}[]")
        return f"the approved schema has an array, the column reads {_plain(column)}"
    if kind == "string":
        if column.name in TEMPORAL:
            wanted = {"DATE": "date", "TIME": "time"}.get(column.name, "date-time")
            return None if node.get("format") == wanted else (
                f"the approved schema has a string{_format(node)}, the column reads {_plain(column)}: strings that are not a {wanted} fail the job")
        if column.name == "VARBINARY":
            return None if node.get("contentEncoding") == "base64" else "the approved schema has a string not declared base64, the column reads BYTES"
        return f"the approved schema has a string, the column reads {_plain(column)}"
    if kind == "boolean":
        return None if column.name == "BOOLEAN" else f"the approved schema has a boolean, the column reads {_plain(column)}"
    if kind == "integer":
        if column.name in INT_RANGE:
            low, high = node.get("minimum"), node.get("maximum")
            span = INT_RANGE[column.name]
            if isinstance(low, (int, float)) and isinstance(high, (int, float)) and -span <= low and high < span:
                return None
            if column.name == "BIGINT":
                return None
            bounds = f"from {low} to {high}" if low is not None and high is not None else "without both a minimum and a maximum"
            return f"the approved schema allows integers {bounds}, beyond {column.name}: larger values overflow"
        return None if column.name in ("DECIMAL", "FLOAT", "DOUBLE") else f"the approved schema has an integer, the column reads {_plain(column)}"
    if kind == "number":
        if column.name in INTEGER_DIGITS:
            return f"the approved schema has numbers with fractions, the column reads {column.name}: Flink's json format truncates them"
        return None if column.name in ("DECIMAL", "FLOAT", "DOUBLE") else f"the approved schema has a number, the column reads {_plain(column)}"
    return f"the approved schema has {kind} values here, the column reads {_plain(column)}"


def _json_kinds(schema: JsonSchema, node: dict[str, Any], base: str) -> set[str]:
    """The JSON kinds of values a subschema allows (``integer`` apart from ``number``)."""
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {str(t) for t in declared}
    for word in ("anyOf", "oneOf"):
        if isinstance(node.get(word), list):
            kinds: set[str] = set()
            for branch in node[word]:
                inner, inner_base = resolve(schema, branch, base)
                kinds |= _json_kinds(schema, inner, inner_base) if isinstance(inner, dict) else {"any"}
            return kinds
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        return {_kind_of(v) for v in values}
    if "properties" in node:
        return {"object"}
    if "items" in node:
        return {"array"}
    return {"any"}


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "any")


def _format(node: dict[str, Any]) -> str:
    return f" of format {node['format']}" if "format" in node else " with no format"


def _plain(sql: SqlType) -> str:
    return str(SqlType(sql.name, sql.params, True, sql.fields, sql.parts))
