"""A module's ``.proto`` files as Buf pairs them: files by path, messages, enums and services by full name, fields by
number, each element with where it starts in its file (protoc's source info, 1-based). CPU-bound to build: off the loop."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import descriptor_pb2

from bot.domain.protobuf.features import delimited

D = descriptor_pb2.FieldDescriptorProto
KINDS = {D.TYPE_DOUBLE: "double", D.TYPE_FLOAT: "float", D.TYPE_INT64: "int64", D.TYPE_UINT64: "uint64", D.TYPE_INT32: "int32",
         D.TYPE_FIXED64: "fixed64", D.TYPE_FIXED32: "fixed32", D.TYPE_BOOL: "bool", D.TYPE_STRING: "string", D.TYPE_GROUP: "group",
         D.TYPE_MESSAGE: "message", D.TYPE_BYTES: "bytes", D.TYPE_UINT32: "uint32", D.TYPE_ENUM: "enum", D.TYPE_SFIXED32: "sfixed32",
         D.TYPE_SFIXED64: "sfixed64", D.TYPE_SINT32: "sint32", D.TYPE_SINT64: "sint64"}


@dataclass(eq=False)
class ProtoFile:
    """One file of the module: its path, package, syntax and where each descriptor path starts."""

    path: str
    proto: descriptor_pb2.FileDescriptorProto
    spans: dict[tuple[int, ...], tuple[int, int]]
    entries: dict[tuple[int, ...], tuple[int, ...]] = field(default_factory=dict)  # a map's entry message -> the map field
    text: str = ""  # the source, where it is at hand

    @property
    def package(self) -> str:
        return str(self.proto.package)

    @property
    def syntax(self) -> str:
        """``proto2``, ``proto3`` or ``editions`` (an unspecified syntax is proto2)."""
        return str(self.proto.syntax or "proto2")

    def at(self, *path: int) -> tuple[int, int]:
        """Line and column (1-based) where the element at descriptor ``path`` starts; (0, 0) when it is not written. A map's
        entry message and its key and value are written as the map field, so they are found where it starts."""
        found = self.spans.get(path)
        if found is None:
            entry = next((e for e in self.entries if path[:len(e)] == e), None)
            return self.spans.get(self.entries[entry], (0, 0)) if entry is not None else (0, 0)
        return found

    def option_at(self, path: tuple[int, ...], word: str) -> tuple[int, int]:
        """Where the option ``word`` whose value is at ``path`` is written (``default = 5``: at ``default``), as Buf places
        such a finding (protoc's source info places the value); the value's place when the source does not read so."""
        line, column = self.at(*path)
        lines = self.text.split("\n") if line else []
        if not line or line > len(lines):
            return line, column
        row, index, seen = lines[line - 1], 0, 1
        while index < len(row) and seen < column:  # protoc counts a tab to the next multiple of 8
            seen = seen + 8 - (seen - 1) % 8 if row[index] == "\t" else seen + 1
            index += 1
        before = row[:index].rstrip()
        if not before.endswith("="):
            return line, column
        name = before[:-1].rstrip()
        if not name.endswith(word) or (len(name) > len(word) and (name[-len(word) - 1].isalnum() or name[-len(word) - 1] == "_")):
            return line, column
        start = len(name) - len(word)
        return line, len(row[:start].expandtabs(8)) + 1


@dataclass(eq=False)
class Message:
    """A message by its full name; ``nested`` is its name within the package (``Order.Item``)."""

    full: str
    nested: str
    file: ProtoFile
    path: tuple[int, ...]
    proto: descriptor_pb2.DescriptorProto
    fields: dict[int, Field] = field(default_factory=dict)
    parent: Message | None = None  # the message it is written in

    @property
    def name(self) -> str:
        return str(self.proto.name)

    def scopes(self) -> tuple[Any, ...]:
        """The options its elements inherit features from: its own, its enclosing messages', then its file's."""
        outer = self.parent.scopes() if self.parent is not None else (self.file.proto.options,)
        return (self.proto.options, *outer)

    @property
    def oneofs(self) -> list[str]:
        """Its real oneofs (a proto3 ``optional`` makes a synthetic one, which is none)."""
        synthetic = {f.oneof_index for f in self.proto.field if f.proto3_optional and f.HasField("oneof_index")}
        return [o.name for i, o in enumerate(self.proto.oneof_decl) if i not in synthetic]


@dataclass(eq=False)
class Field:
    """A field of a message (or an extension, with ``extendee``)."""

    proto: descriptor_pb2.FieldDescriptorProto
    file: ProtoFile
    path: tuple[int, ...]
    message: Message | None
    extendee: str = ""

    @property
    def number(self) -> int:
        return int(self.proto.number)

    @property
    def name(self) -> str:
        return str(self.proto.name)

    @property
    def kind(self) -> str:
        """Its type's kind as Buf reads it from the resolved descriptor: a message with delimited encoding is a group."""
        kind = KINDS.get(self.proto.type, "unknown")
        if kind == "message" and self.file.syntax == "editions" and delimited(
                "editions", self.proto, self.scopes(), self.message.proto if self.message is not None else None):
            return "group"
        return kind

    def scopes(self) -> tuple[Any, ...]:
        """The options it inherits features from, after its own: its message's and theirs, then its file's."""
        return self.message.scopes() if self.message is not None else (self.file.proto.options,)

    @property
    def type_name(self) -> str:
        return str(self.proto.type_name).lstrip(".")

    @property
    def oneof(self) -> str | None:
        """The real oneof it belongs to."""
        if self.message is None or not self.proto.HasField("oneof_index") or self.proto.proto3_optional:
            return None
        return str(self.message.proto.oneof_decl[self.proto.oneof_index].name)

    @property
    def full_name(self) -> str:
        """Its fully-qualified name (an extension is known by it): the package, the message it is declared in, its name."""
        scope = self.message.full if self.message is not None else self.file.package
        return f"{scope}.{self.name}" if scope else self.name

    def describe(self) -> str:
        """``Field "2" with name "price" on message "Item"``, as Buf names a field."""
        if self.extendee:
            return f'Extension "{self.number}" with name "{self.full_name}" on message "{self.extendee}"'
        return f'Field "{self.number}" with name "{self.name}" on message "{self.message.name if self.message else ""}"'


@dataclass(eq=False)
class Enum:
    """An enum by its full name."""

    full: str
    nested: str
    file: ProtoFile
    path: tuple[int, ...]
    proto: descriptor_pb2.EnumDescriptorProto
    parent: Message | None

    @property
    def name(self) -> str:
        return str(self.proto.name)

    def scopes(self) -> tuple[Any, ...]:
        """The options it takes features from: its own, its enclosing messages', then its file's."""
        return (self.proto.options, *(self.parent.scopes() if self.parent is not None else (self.file.proto.options,)))

    def names_by_number(self) -> dict[int, list[str]]:
        """Each number's value names (aliases give a number several), in order."""
        found: dict[int, list[str]] = {}
        for value in self.proto.value:
            found.setdefault(value.number, []).append(value.name)
        return found


@dataclass(eq=False)
class Service:
    """A service by its full name, its methods by name."""

    full: str
    file: ProtoFile
    path: tuple[int, ...]
    proto: descriptor_pb2.ServiceDescriptorProto
    methods: dict[str, tuple[descriptor_pb2.MethodDescriptorProto, tuple[int, ...]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.proto.name)


@dataclass
class Image:
    """The module's files (not what they import from elsewhere) and their elements."""

    files: dict[str, ProtoFile] = field(default_factory=dict)
    messages: dict[str, Message] = field(default_factory=dict)
    enums: dict[str, Enum] = field(default_factory=dict)
    services: dict[str, Service] = field(default_factory=dict)
    extensions: dict[tuple[str, int], Field] = field(default_factory=dict)
    by_file: dict[str, tuple[dict[str, Message], dict[str, Enum], dict[str, Service], dict[str, Field]]] = field(default_factory=dict)

    def in_file(self, path: str) -> tuple[dict[str, Message], dict[str, Enum], dict[str, Service], dict[str, Field]]:
        """One file's messages and enums by nested name, services by name, extensions by nested name (every file's
        indexed in one pass, on the first question: the rules ask once per file and per deleted element)."""
        if not self.by_file:
            for path_of in self.files:
                self.by_file[path_of] = ({}, {}, {}, {})
            for message in self.messages.values():
                self.by_file[message.file.path][0][message.nested] = message
            for enum in self.enums.values():
                self.by_file[enum.file.path][1][enum.nested] = enum
            for service in self.services.values():
                self.by_file[service.file.path][2][service.name] = service
            for extension in self.extensions.values():
                self.by_file[extension.file.path][3][_nested(extension)] = extension
        return self.by_file.get(path, ({}, {}, {}, {}))

    def packages(self) -> dict[str, list[ProtoFile]]:
        """Files by package."""
        found: dict[str, list[ProtoFile]] = {}
        for file in self.files.values():
            found.setdefault(file.package, []).append(file)
        return found


def _nested(extension: Field) -> str:
    parent = extension.message.nested + "." if extension.message is not None else ""
    return parent + extension.name


def image_of(files: Iterable[descriptor_pb2.FileDescriptorProto], module: set[str], texts: Mapping[str, str] | None = None) -> Image:
    """The image of the files whose paths are in ``module`` (the others are their imports); ``texts``: their sources."""
    image = Image()
    for proto in files:
        if proto.name not in module:
            continue
        file = ProtoFile(proto.name, proto, {tuple(loc.path): (loc.span[0] + 1, loc.span[1] + 1) for loc in proto.source_code_info.location if loc.span},
                         text=(texts or {}).get(proto.name, ""))
        image.files[file.path] = file
        prefix = f"{proto.package}." if proto.package else ""
        for index, message in enumerate(proto.message_type):
            _message(image, file, message, prefix, "", (4, index), None)
        for index, enum in enumerate(proto.enum_type):
            image.enums[prefix + enum.name] = Enum(prefix + enum.name, enum.name, file, (5, index), enum, None)
        for index, service in enumerate(proto.service):
            found = Service(prefix + service.name, file, (6, index), service)
            found.methods = {m.name: (m, (6, index, 2, position)) for position, m in enumerate(service.method)}
            image.services[found.full] = found
        for index, extension in enumerate(proto.extension):
            _extension(image, file, extension, (7, index), None)
    return image


def _message(image: Image, file: ProtoFile, proto: descriptor_pb2.DescriptorProto, prefix: str, parent: str, path: tuple[int, ...],
             outer: Message | None) -> None:
    nested = f"{parent}.{proto.name}" if parent else proto.name
    message = Message(prefix + nested, nested, file, path, proto, parent=outer)
    image.messages[message.full] = message
    for index, item in enumerate(proto.field):
        message.fields[item.number] = Field(item, file, (*path, 2, index), message)
    for index, inner in enumerate(proto.nested_type):
        if inner.options.map_entry:
            entry_type = f".{message.full}.{inner.name}"
            file.entries[(*path, 3, index)] = next(((*path, 2, i) for i, f in enumerate(proto.field) if f.type_name == entry_type), ())
        _message(image, file, inner, prefix, nested, (*path, 3, index), message)
    for index, enum in enumerate(proto.enum_type):
        image.enums[f"{message.full}.{enum.name}"] = Enum(f"{message.full}.{enum.name}", f"{nested}.{enum.name}", file, (*path, 4, index), enum, message)
    for index, extension in enumerate(proto.extension):
        _extension(image, file, extension, (*path, 6, index), message)


def _extension(image: Image, file: ProtoFile, proto: descriptor_pb2.FieldDescriptorProto, path: tuple[int, ...], scope: Message | None) -> None:
    extendee = proto.extendee.lstrip(".")
    image.extensions[(extendee, proto.number)] = Field(proto, file, path, scope, extendee)
