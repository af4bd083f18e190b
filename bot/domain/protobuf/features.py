"""Protobuf Editions' features as protoc resolves them for an element: the nearest ``features`` option that sets one
(the element's own, then the messages it is written in, innermost first, then the file's), else the edition's
default. proto2 and proto3 files have no features: each has its syntax's fixed behaviour (``legacy``)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2

EDITION_DEFAULTS = {"field_presence": "EXPLICIT", "enum_type": "OPEN", "repeated_field_encoding": "PACKED",
                    "utf8_validation": "VERIFY", "message_encoding": "LENGTH_PREFIXED", "json_format": "ALLOW"}  # 2023 and 2024 alike
_VALUES = {name: descriptor_pb2.FeatureSet.DESCRIPTOR.fields_by_name[name].enum_type.values_by_number for name in EDITION_DEFAULTS}


def feature(syntax: str, options: Iterable[Any], name: str, legacy: str) -> str:
    """``name``'s value (``LEGACY_REQUIRED``, ``DELIMITED``, ...) for an element of a file of ``syntax`` whose options,
    from its own to its file's, are ``options``."""
    if syntax != "editions":
        return legacy
    for holder in options:
        features = getattr(holder, "features", None)
        if features is not None and features.HasField(name):
            return str(_VALUES[name][getattr(features, name)].name)
    return EDITION_DEFAULTS[name]


LANGUAGES = {"cpp": (1000, "pb.CppFeatures"), "java": (1001, "pb.JavaFeatures")}  # FeatureSet extensions protoc ships


def language_feature(syntax: str, options: Iterable[Any], language: str, name: str, default: str) -> str:
    """A language's feature (``(pb.cpp).string_type``, ``(pb.java).utf8_validation``), resolved as ``feature`` resolves
    the standard ones: the nearest ``features`` that sets it, else ``default`` (its value for the edition)."""
    if syntax != "editions":
        return default
    from google.protobuf.unknown_fields import UnknownFieldSet  # only Editions files pay for it

    number, kind = LANGUAGES[language]
    for holder in options:
        features = getattr(holder, "features", None)
        if features is None:
            continue
        for extension in UnknownFieldSet(features):  # protobuf's Python package does not register these extensions
            if extension.field_number == number and extension.wire_type == 2:
                found = _language_type(kind).FromString(extension.data)
                if found.HasField(name):
                    return str(found.DESCRIPTOR.fields_by_name[name].enum_type.values_by_number[getattr(found, name)].name)
    return default


@cache
def _language_type(kind: str) -> Any:
    """The message class of a language's features, from the ``.proto`` protoc ships with it."""
    from google.protobuf import descriptor_pool, message_factory

    from bot.domain.protobuf.compile import compile_tree  # protoc: only when a file sets a language feature

    compiled = compile_tree({"features.proto": 'syntax = "proto3";\nimport "google/protobuf/cpp_features.proto";\n'
                                               'import "google/protobuf/java_features.proto";\n'}, ["."], ["features.proto"], source_info=False)
    pool = descriptor_pool.DescriptorPool()
    for file in compiled.file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(kind))


def required(syntax: str, proto: descriptor_pb2.FieldDescriptorProto, options: Iterable[Any]) -> bool:
    """Whether a field is required: proto2's ``required`` label, or Editions' ``LEGACY_REQUIRED`` presence."""
    if proto.label == descriptor_pb2.FieldDescriptorProto.LABEL_REQUIRED:
        return True
    return syntax == "editions" and feature(syntax, (proto.options, *options), "field_presence", "") == "LEGACY_REQUIRED"


def delimited(syntax: str, proto: descriptor_pb2.FieldDescriptorProto, options: Iterable[Any],
              container: descriptor_pb2.DescriptorProto | None) -> bool:
    """Whether a message field is written as a group (start and end tags) rather than length-prefixed: proto2's
    ``group``, or Editions' ``DELIMITED`` message encoding (never for a map or a map's value, which stay
    length-prefixed). ``container``: the message the field is written in (none for a top-level extension). The two
    encodings do not read each other."""
    kind = proto.type
    if kind == descriptor_pb2.FieldDescriptorProto.TYPE_GROUP:
        return True
    if syntax != "editions" or kind != descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE:
        return False
    if container is not None and (container.options.map_entry or _is_map(proto, container)):
        return False
    return feature(syntax, (proto.options, *options), "message_encoding", "") == "DELIMITED"


def _is_map(proto: descriptor_pb2.FieldDescriptorProto, container: descriptor_pb2.DescriptorProto) -> bool:
    """A map field: repeated, of an entry message nested in its own message."""
    if proto.label != descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED:
        return False
    entry = proto.type_name.rsplit(".", 1)[-1]
    return any(inner.name == entry and inner.options.map_entry for inner in container.nested_type)
