"""The three formats a Confluent-API registry holds (``schemaType`` ``AVRO``, ``PROTOBUF``, ``JSON``), each parsed
and classified its own way behind one call: Avro by resolution and the semantic walk, Protobuf and JSON Schema by
the registry's differences both ways (JSON Schema strict, or lenient where a subject chose it)."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from bot.domain.avro.parse import SchemaError, parse
from bot.domain.compat.both_ways import classify_both_ways
from bot.domain.compat.classify import Mode, Verdict, classify
from bot.domain.jsonschema.errors import JsonSchemaError
from bot.domain.lineage.field_paths import FieldWalk
from bot.domain.protobuf.compile import ProtoError

INVALID = (SchemaError, ProtoError, JsonSchemaError)  # what each parser raises for a schema it refuses
EXTENSIONS = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}
AVRO_NAMED = ("record", "enum", "fixed")


class SchemaType(enum.StrEnum):
    """A registry's schema types."""

    AVRO = "AVRO"
    PROTOBUF = "PROTOBUF"
    JSON = "JSON"

    @classmethod
    def parse(cls, text: str) -> SchemaType:
        """``avro``, ``protobuf`` or ``json`` (any case; ``JSONSCHEMA`` too); ValueError names them."""
        name = text.strip().upper().replace("_", "").replace("-", "")
        name = "JSON" if name == "JSONSCHEMA" else name
        try:
            return cls(name)
        except ValueError:
            raise ValueError(f"unknown schema type {text!r}: use AVRO, PROTOBUF or JSON") from None

    @classmethod
    def of_file(cls, path: str, text: str) -> SchemaType:
        """By extension (``.avsc``, ``.proto``, ``.json``); a ``.json`` file holding an Avro schema (a record, enum or
        fixed, a union or a primitive name) is Avro, as many repositories keep them; anything else is Avro."""
        found = EXTENSIONS.get(PurePath(path).suffix.lower(), "AVRO")
        if found == "JSON" and _looks_avro(text):
            return cls.AVRO
        return cls(found)


def parse_schema(schema_type: SchemaType, text: str, refs: Mapping[str, str] | None = None, *, like: Any = None) -> Any:
    """The parsed schema of its type; one of ``INVALID`` when it is not one. ``like``: for Protobuf, the other side of
    a comparison, parsed before: the messages defined alike there are taken over, and the result is the same (Avro's
    ``parse`` has its own, with kept parts)."""
    if schema_type is SchemaType.PROTOBUF:  # each format's parser imported on its first use: the others never pay for it
        from bot.domain.protobuf.model import parse_proto

        return parse_proto(text, dict(refs or {}), like=like)
    if schema_type is SchemaType.JSON:
        from bot.domain.jsonschema.model import parse_json_schema

        return parse_json_schema(text, dict(refs or {}))
    return parse(text)


def classify_schemas(schema_type: SchemaType, history: Sequence[Any], new: Any, mode: Mode = Mode.FULL, *, lenient: bool = False) -> Verdict:
    """Classify ``new`` against ``history`` (oldest first), parsed by :func:`parse_schema` for ``schema_type``."""
    if schema_type is SchemaType.PROTOBUF:
        from bot.domain.protobuf import diff as proto_diff
        from bot.domain.protobuf.history import history_changes

        return classify_both_ways(history, new, mode, proto_diff.differences, proto_diff.COMPATIBLE, "PROTOBUF", history_changes)
    if schema_type is SchemaType.JSON:
        from bot.domain.jsonschema import diff as json_diff

        return classify_both_ways(history, new, mode, json_diff.differences, json_diff.LENIENT if lenient else json_diff.STRICT, "JSON",
                                  noted=json_diff.NOTED)
    return classify(history, new, mode)


def field_walk_of(schema_type: SchemaType, schema: Any) -> FieldWalk | None:
    """A parsed schema's field paths (``items``, ``items.price``: the names lineage uses); None when it has no fields."""
    if schema_type is SchemaType.PROTOBUF:
        from bot.domain.protobuf.model import proto_field_walk

        return proto_field_walk(schema)
    if schema_type is SchemaType.JSON:
        from bot.domain.jsonschema.model import json_field_walk

        return json_field_walk(schema)
    from bot.domain.avro.paths import field_walk

    return field_walk(schema)


def field_paths_of(schema_type: SchemaType, schema: Any) -> list[str]:
    """Every field path of a parsed schema, parents first, the shallowest ``FIELD_PATHS`` of them."""
    walk = field_walk_of(schema_type, schema)
    return walk.paths() if walk is not None else []


def paths_of(schema_type: str, text: str, refs: Mapping[str, str] | None = None) -> list[str]:
    """The field paths of a schema given as text (none when it does not parse, alone or with ``refs``)."""
    kind = SchemaType(schema_type)
    try:
        return field_paths_of(kind, parse_schema(kind, text, refs))
    except INVALID:
        return []


def canonical_bytes(schema_type: SchemaType, schema: Any) -> bytes:
    """What a Protobuf or JSON schema's fingerprint hashes: equal for the same schema however it is written (protoc's
    descriptor without positions; the document with sorted keys), its references included."""
    return schema.canonical if schema_type is SchemaType.PROTOBUF else str(schema.canonical).encode()


def _looks_avro(text: str) -> bool:
    try:
        document = json.loads(text)
    except ValueError:
        return False
    if isinstance(document, (list, str)):
        return True
    return isinstance(document, dict) and document.get("type") in AVRO_NAMED and ("fields" in document or "symbols" in document or "size" in document)
