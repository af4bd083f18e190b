"""A Protobuf schema as the classifier walks it: the root file's package, its messages and enums (nested ones by
their full names), and every type its imports define (a field's type resolves through them). Paths read like Avro's:
``Order.items[].price`` from the first message that reaches a field."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from google.protobuf import descriptor_pb2

from bot.domain.lineage.field_paths import FieldWalk
from bot.domain.protobuf.compile import ROOT, compile_proto
from bot.domain.protobuf.features import delimited, required

D = descriptor_pb2.FieldDescriptorProto
SCALARS = {D.TYPE_DOUBLE: "double", D.TYPE_FLOAT: "float", D.TYPE_INT64: "int64", D.TYPE_UINT64: "uint64", D.TYPE_INT32: "int32",
           D.TYPE_FIXED64: "fixed64", D.TYPE_FIXED32: "fixed32", D.TYPE_BOOL: "bool", D.TYPE_STRING: "string", D.TYPE_BYTES: "bytes",
           D.TYPE_UINT32: "uint32", D.TYPE_SFIXED32: "sfixed32", D.TYPE_SFIXED64: "sfixed64", D.TYPE_SINT32: "sint32", D.TYPE_SINT64: "sint64"}
LABELS = {D.LABEL_OPTIONAL: "optional", D.LABEL_REQUIRED: "required", D.LABEL_REPEATED: "repeated"}


@dataclass(slots=True)
class ProtoField:
    """A field: its number, name, label, and type (a scalar's name, or the full name of a message or enum)."""

    number: int
    name: str
    json_name: str
    label: str
    type: str
    kind: str  # scalar, enum, message or map
    oneof: str | None  # a real oneof (proto3 ``optional`` makes none)
    delimited: bool = False  # a message written as a group (proto2's ``group``, Editions' ``DELIMITED``), not length-prefixed


@dataclass(slots=True)
class ProtoMessage:
    """A message (or a map's entry), by its full name."""

    full_name: str
    name: str  # relative to the package: ``Order.Item``
    fields: dict[int, ProtoField] = field(default_factory=dict)
    oneofs: list[str] = field(default_factory=list)
    reserved_numbers: list[tuple[int, int]] = field(default_factory=list)  # [start, end) ranges
    reserved_names: list[str] = field(default_factory=list)
    map_entry: bool = False
    index: int = 0  # its position among the types beside it
    file: str = ROOT
    digest: bytes = b""  # its descriptor (nested types, options and reserved ranges included, no positions) and, in an Editions
    # file, the edition and the features it inherits: equal when defined alike

    def reserves(self, number: int) -> bool:
        """Whether ``number`` is reserved in this message."""
        return any(start <= number < end for start, end in self.reserved_numbers)


@dataclass(slots=True)
class ProtoEnum:
    """An enum, by its full name: its values by number."""

    full_name: str
    name: str
    values: dict[int, str] = field(default_factory=dict)
    file: str = ROOT


@dataclass
class ProtoSchema:
    """The root file and everything it can name."""

    package: str
    syntax: str
    messages: dict[str, ProtoMessage]  # every message, the imports' too, by full name
    enums: dict[str, ProtoEnum]
    own: list[str]  # the root file's top-level messages and enums, by full name, in order
    own_nested: dict[str, list[str]]  # a message's nested messages and enums, in order
    paths: dict[str, str] = field(default_factory=dict)  # message full name -> the first path that reaches it
    canonical: bytes = b""  # the root file's descriptor without positions: equal for the same schema however written

    @property
    def label(self) -> str:
        """The first message's name: where paths start."""
        first = next((n for n in self.own if n in self.messages), None)
        return self.messages[first].name if first else ""

    def path_of(self, message: str) -> str:
        """The path of a message: where a field of the first message reaches it, else its own name."""
        if message not in self.messages:
            return message
        return self.paths.get(message) or self.messages[message].name

    def map_value(self, item: ProtoField) -> ProtoField | None:
        """A map field's value: field 2 of its entry message."""
        return self.messages[item.type].fields.get(2)

    def local(self, full_name: str) -> str:
        """A type's name without its package."""
        found = self.messages.get(full_name) or self.enums.get(full_name)
        return found.name if found is not None else full_name


def parse_proto(text: str, refs: dict[str, str] | None = None, *, like: ProtoSchema | None = None) -> ProtoSchema:
    """Compile and read; a ProtoError names what protoc refused.

    ``like``: another schema (typically the other side of a comparison). A top-level message defined alike there (the
    same full name, file, place and descriptor) is taken over with its nested types instead of read again; the result
    is the same, and the classifier passes over such a message at once."""
    files = compile_proto(text, refs).file
    messages: dict[str, ProtoMessage] = {}
    enums: dict[str, ProtoEnum] = {}
    root = files[-1]
    own: list[str] = []
    own_nested: dict[str, list[str]] = {}
    for file in files:
        prefix = f"{file.package}." if file.package else ""
        scope = _Scope.of(file)
        for index, message in enumerate(file.message_type):
            kept = like.messages.get(prefix + message.name) if like is not None else None
            if (like is not None and kept is not None and kept.file == file.name and kept.index == index
                    and kept.digest == scope.context + message.SerializeToString(deterministic=True)):
                _take(message, kept.full_name, like, messages, enums, own_nested)
            else:
                _message(message, prefix, "", messages, enums, own_nested, file.name, index, scope)
            if file.name == ROOT:
                own.append(prefix + message.name)
        for enum in file.enum_type:
            enums[prefix + enum.name] = ProtoEnum(prefix + enum.name, enum.name, {v.number: v.name for v in enum.value}, file.name)
            if file.name == ROOT:
                own.append(prefix + enum.name)
    schema = ProtoSchema(root.package, root.syntax or "proto2", messages, enums, own, own_nested,  # compiled without positions: the same
                         canonical=b"".join(f.SerializeToString(deterministic=True) for f in [root, *files[:-1]]))  # schema however written
    schema.paths = _paths(schema)
    return schema


class _Scope(NamedTuple):
    """Where a message is written: its file's syntax, the options features are inherited from (the enclosing
    messages', innermost first, then the file's), and what its digest starts with (empty outside Editions)."""

    syntax: str
    options: tuple[Any, ...]
    context: bytes

    @classmethod
    def of(cls, file: descriptor_pb2.FileDescriptorProto) -> _Scope:
        syntax = file.syntax or "proto2"
        if syntax != "editions":
            return cls(syntax, (), b"")
        return cls(syntax, (file.options,), b"%d:" % file.edition + file.options.features.SerializeToString(deterministic=True) + b";")

    def within(self, message: descriptor_pb2.DescriptorProto) -> _Scope:
        """The scope of what ``message`` holds."""
        if self.syntax != "editions":
            return self
        return _Scope(self.syntax, (message.options, *self.options),
                      self.context + message.options.features.SerializeToString(deterministic=True) + b";")


def _message(proto: descriptor_pb2.DescriptorProto, package: str, parent: str, messages: dict[str, ProtoMessage], enums: dict[str, ProtoEnum],
             nested: dict[str, list[str]], file: str, index: int, scope: _Scope) -> None:
    name = f"{parent}.{proto.name}" if parent else proto.name
    full = package + name
    inside = scope.within(proto)
    message = ProtoMessage(full, name, map_entry=proto.options.map_entry, index=index, file=file,
                           digest=scope.context + proto.SerializeToString(deterministic=True),
                           reserved_numbers=[(r.start, r.end) for r in proto.reserved_range], reserved_names=list(proto.reserved_name))
    if proto.oneof_decl:
        message.oneofs = [o.name for i, o in enumerate(proto.oneof_decl) if not any(f.proto3_optional and f.oneof_index == i and f.HasField("oneof_index")
                                                                                    for f in proto.field)]
    fields = message.fields
    editions = inside.syntax == "editions"
    for field_proto in proto.field:  # each attribute read crosses into upb: once each
        kind_number = field_proto.type
        scalar = SCALARS.get(kind_number)
        if scalar is None:
            kind, type_name = ("enum" if kind_number == D.TYPE_ENUM else "message"), field_proto.type_name.lstrip(".")
        else:
            kind, type_name = "scalar", scalar
        oneof = proto.oneof_decl[field_proto.oneof_index].name if field_proto.HasField("oneof_index") and not field_proto.proto3_optional else None
        number = field_proto.number
        label = LABELS[field_proto.label]
        if editions and label == "optional" and required(inside.syntax, field_proto, inside.options):
            label = "required"
        fields[number] = ProtoField(number, field_proto.name, field_proto.json_name, label, type_name, kind, oneof,
                                    kind == "message" and delimited(inside.syntax, field_proto, inside.options, proto))
    messages[full] = message
    nested[full] = []
    for position, inner in enumerate(proto.nested_type):
        _message(inner, package, name, messages, enums, nested, file, position, inside)
        if not inner.options.map_entry:
            nested[full].append(f"{full}.{inner.name}")
    for inner_enum in proto.enum_type:
        enums[f"{full}.{inner_enum.name}"] = ProtoEnum(f"{full}.{inner_enum.name}", f"{name}.{inner_enum.name}",
                                                       {v.number: v.name for v in inner_enum.value}, file)
        nested[full].append(f"{full}.{inner_enum.name}")
    for item in message.fields.values():  # a map field's entry message makes the field a map
        entry = messages.get(item.type)
        if item.kind == "message" and entry is not None and entry.map_entry:
            item.kind = "map"


def _take(proto: descriptor_pb2.DescriptorProto, full: str, like: ProtoSchema,
          messages: dict[str, ProtoMessage], enums: dict[str, ProtoEnum], nested: dict[str, list[str]]) -> None:
    """A message of ``like`` whose descriptor is ``proto``'s, with its nested messages (map entries too) and enums."""
    messages[full] = like.messages[full]
    nested[full] = like.own_nested[full]
    for inner in proto.nested_type:
        _take(inner, f"{full}.{inner.name}", like, messages, enums, nested)
    for inner_enum in proto.enum_type:
        enums[f"{full}.{inner_enum.name}"] = like.enums[f"{full}.{inner_enum.name}"]


def _paths(schema: ProtoSchema) -> dict[str, str]:
    """The first path that reaches each message from the root file's messages, breadth first (``Order.items[]``)."""
    found: dict[str, str] = {}
    queue: deque[str] = deque()
    for name in schema.own:
        if name in schema.messages:
            found[name] = schema.messages[name].name
            queue.append(name)
    while queue:
        current = queue.popleft()
        for item in schema.messages[current].fields.values():
            target, suffix = item.type, "[]" if item.label == "repeated" else ""
            if item.kind == "map":
                value = schema.map_value(item)
                target, suffix = (value.type if value else ""), "{}"
            if target in schema.messages and target not in found:
                found[target] = f"{found[current]}.{item.name}{suffix}"
                queue.append(target)
    return found


def proto_field_walk(schema: ProtoSchema) -> FieldWalk | None:
    """The field paths under the first message (None: no message), parents before children, each once (``items``, ``items.price``): how
    lineage names a Protobuf message's fields, as it names an Avro record's (see ``bot.domain.lineage.field_paths``)."""
    first = next((n for n in schema.own if n in schema.messages), None)

    def steps(message: str) -> list[tuple[str | None, str | None]]:
        found: list[tuple[str | None, str | None]] = []
        for item in schema.messages[message].fields.values():
            target = item.type
            if item.kind == "map":
                value = schema.map_value(item)
                target = value.type if value is not None else ""
            found.append((item.name, target if target in schema.messages else None))
        return found

    return FieldWalk(first, steps, lambda message: message) if first is not None else None
