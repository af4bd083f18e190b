"""Buf's breaking rules, one small object each: its id, what it checks, its categories in each ``buf.yaml`` version, and
the check itself (the previous image against the current one). Elements pair as Buf pairs them: files by path,
messages, enums and services by full name, fields and enum values by number, RPCs by name."""

from __future__ import annotations

import codecs
import json
import math
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2

from bot.domain.buf.image import Enum, Field, Image, Message, ProtoFile
from bot.domain.protobuf.features import feature, language_feature, required

VERSIONS = ("v1beta1", "v1", "v2")
CATEGORIES = ("FILE", "PACKAGE", "WIRE_JSON", "WIRE", "CSR")
F, P, WJ, W, CSR = "FILE", "PACKAGE", "WIRE_JSON", "WIRE", "CSR"


@dataclass(frozen=True, slots=True)
class BufFinding:
    """One breaking change: Buf's rule id, where it is (the current file, else the previous one), and what happened."""

    rule: str
    file: str
    line: int
    column: int
    message: str


Check = Callable[[Image, Image], Iterator[BufFinding]]


@dataclass(frozen=True)
class Rule:
    """A rule: its id, purpose, categories per configuration version (absent: the version has no such rule), check."""

    id: str
    purpose: str
    categories: dict[str, tuple[str, ...]]
    check: Check


RULES: dict[str, Rule] = {}
DEPRECATED = {  # ids a configuration may still name, and the rules they stand for
    "v1beta1": {"FIELD_SAME_LABEL": ("FIELD_SAME_CARDINALITY",), "FIELD_SAME_CTYPE": ("FIELD_SAME_CPP_STRING_TYPE",),
                "FILE_SAME_JAVA_STRING_CHECK_UTF8": ("FIELD_SAME_JAVA_UTF8_VALIDATION",), "FILE_SAME_PHP_GENERIC_SERVICES": ()},
    "v1": {"FIELD_SAME_LABEL": ("FIELD_SAME_CARDINALITY", "FIELD_WIRE_COMPATIBLE_CARDINALITY", "FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY"),
           "FIELD_SAME_CTYPE": ("FIELD_SAME_CPP_STRING_TYPE",), "FILE_SAME_JAVA_STRING_CHECK_UTF8": ("FIELD_SAME_JAVA_UTF8_VALIDATION",),
           "FILE_SAME_PHP_GENERIC_SERVICES": ()},
}


def rule(rule_id: str, purpose: str, v1beta1: tuple[str, ...] | None, v1: tuple[str, ...] | None,
         v2: tuple[str, ...] | None) -> Callable[[Check], Check]:
    """Register a check under ``rule_id`` with its categories in each version (None: not in that version)."""
    def register(check: Check) -> Check:
        versions = {"v1beta1": v1beta1, "v1": v1, "v2": v2}
        RULES[rule_id] = Rule(rule_id, purpose, {v: c for v, c in versions.items() if c is not None}, check)
        return check
    return register


def _at(file: ProtoFile, path: tuple[int, ...], *fallback: tuple[int, ...]) -> tuple[int, int]:
    for candidate in (path, *fallback):
        line, column = file.at(*candidate) if candidate else (0, 0)  # the file itself: no place in it
        if line:
            return line, column
    return 0, 0


def _finding(rule_id: str, file: ProtoFile, path: tuple[int, ...], message: str, *fallback: tuple[int, ...]) -> BufFinding:
    line, column = _at(file, path, *fallback)
    return BufFinding(rule_id, file.path, line, column, message)


def _named(rule_id: str, item: Field, number: int, word: str, message: str) -> BufFinding:
    """A finding at a field's option ``word`` (descriptor field ``number``), else at the field."""
    line, column = item.file.option_at((*item.path, number), word)
    return BufFinding(rule_id, item.file.path, line, column, message) if line else _finding(rule_id, item.file, item.path, message)


def _file_pairs(prev: Image, cur: Image) -> Iterator[tuple[ProtoFile, ProtoFile]]:
    for path, before in sorted(prev.files.items()):
        if path in cur.files:
            yield before, cur.files[path]


def _message_pairs(prev: Image, cur: Image) -> Iterator[tuple[Message, Message]]:
    for name, before in sorted(prev.messages.items()):
        if name in cur.messages:
            yield before, cur.messages[name]


def _enum_pairs(prev: Image, cur: Image) -> Iterator[tuple[Enum, Enum]]:
    for name, before in sorted(prev.enums.items()):
        if name in cur.enums:
            yield before, cur.enums[name]


def _field_pairs(prev: Image, cur: Image) -> Iterator[tuple[Field, Field]]:
    for before_message, message in _message_pairs(prev, cur):
        for number, before in sorted(before_message.fields.items()):
            if number in message.fields:
                yield before, message.fields[number]
    for key, before in sorted(prev.extensions.items()):
        if key in cur.extensions:
            yield before, cur.extensions[key]


def _parent_of_deleted(messages: dict[str, Message], file: ProtoFile, nested: str) -> tuple[ProtoFile, tuple[int, ...]]:
    """Where a deleted element is reported: its nearest enclosing message that still exists (among ``messages``, by
    nested name), else its file."""
    parts = nested.split(".")
    for end in range(len(parts) - 1, 0, -1):
        found = messages.get(".".join(parts[:end]))
        if found is not None:
            return found.file, found.path
    return file, ()


# Deletions within a file (FILE)

def _deleted_in_file(kind: str, index: int, rule_id: str) -> Check:
    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        for before, after in _file_pairs(prev, cur):
            old, new = prev.in_file(before.path)[index], cur.in_file(after.path)[index]
            for name in sorted(set(old) - set(new)):
                if kind == "service":
                    yield BufFinding(rule_id, after.path, 0, 0, f'Previously present service "{name}" was deleted from file.')
                    continue
                file, path = _parent_of_deleted(cur.in_file(after.path)[0], after, name)
                yield _finding(rule_id, file, path, f'Previously present {kind} "{name}" was deleted from file.')
    return check


rule("ENUM_NO_DELETE", "Checks that enums are not deleted from a given file.", (F,), (F,), (CSR, F))(_deleted_in_file("enum", 1, "ENUM_NO_DELETE"))
rule("MESSAGE_NO_DELETE", "Checks that messages are not deleted from a given file.", (F,), (F,), (CSR, F))(
    _deleted_in_file("message", 0, "MESSAGE_NO_DELETE"))
rule("SERVICE_NO_DELETE", "Checks that services are not deleted from a given file.", (F,), (F,), (F,))(
    _deleted_in_file("service", 2, "SERVICE_NO_DELETE"))
rule("EXTENSION_NO_DELETE", "Checks that extensions are not deleted from a given file.", None, None, (F,))(
    _deleted_in_file("extension", 3, "EXTENSION_NO_DELETE"))


@rule("FILE_NO_DELETE", "Checks that files are not deleted.", (F,), (F,), (CSR, F))
def _file_no_delete(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for path in sorted(set(prev.files) - set(cur.files)):
        yield BufFinding("FILE_NO_DELETE", path, 0, 0, f'Previously present file "{path}" was deleted.')


# Deletions within a package (PACKAGE)

def _deleted_in_package(kind: str, rule_id: str) -> Check:
    def names(image: Image, package: str) -> dict[str, ProtoFile]:
        """The package's elements of this kind by their names within it (an extension's includes the message it is declared in)."""
        prefix = len(package) + 1 if package else 0
        if kind == "message":
            return {m.nested: m.file for m in image.messages.values() if m.file.package == package}
        if kind == "enum":
            return {e.nested: e.file for e in image.enums.values() if e.file.package == package}
        if kind == "service":
            return {s.full[prefix:]: s.file for s in image.services.values() if s.file.package == package}
        return {f.full_name[prefix:]: f.file for f in image.extensions.values() if f.file.package == package}

    def place(cur: Image, package: str, file: ProtoFile, nested: str) -> tuple[str, int, int]:
        """Where Buf reports the deletion: the nearest enclosing message that still exists (a message's anywhere in the
        package, another element's in its own file), else its file."""
        if file.path not in cur.files:
            return file.path, 0, 0
        messages = {m.nested: m for m in cur.messages.values() if m.file.package == package} if kind == "message" else \
            cur.in_file(file.path)[0]
        found, path = _parent_of_deleted(messages, cur.files[file.path], nested)
        return (found.path, *found.at(*path)) if path else (found.path, 0, 0)

    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        current = cur.packages()
        for package in sorted(prev.packages()):
            if package not in current:
                continue  # PACKAGE_NO_DELETE says so
            new = names(cur, package)
            for nested, file in sorted(names(prev, package).items()):
                if nested not in new:
                    yield BufFinding(rule_id, *place(cur, package, file, nested),
                                     f'Previously present {kind} "{nested}" was deleted from package "{package}".')
    return check


rule("PACKAGE_ENUM_NO_DELETE", "Checks that enums are not deleted from a given package.", (P,), (P,), (P,))(
    _deleted_in_package("enum", "PACKAGE_ENUM_NO_DELETE"))
rule("PACKAGE_MESSAGE_NO_DELETE", "Checks that messages are not deleted from a given package.", (P,), (P,), (P,))(
    _deleted_in_package("message", "PACKAGE_MESSAGE_NO_DELETE"))
rule("PACKAGE_SERVICE_NO_DELETE", "Checks that services are not deleted from a given package.", (P,), (P,), (P,))(
    _deleted_in_package("service", "PACKAGE_SERVICE_NO_DELETE"))
rule("PACKAGE_EXTENSION_NO_DELETE", "Checks that extensions are not deleted from a given package.", None, None, (P,))(
    _deleted_in_package("extension", "PACKAGE_EXTENSION_NO_DELETE"))


@rule("PACKAGE_NO_DELETE", "Checks that packages are not deleted.", (P,), (P,), (P,))
def _package_no_delete(prev: Image, cur: Image) -> Iterator[BufFinding]:
    current = cur.packages()
    for package, files in sorted(prev.packages().items()):
        if package not in current:
            yield BufFinding("PACKAGE_NO_DELETE", files[0].path, 0, 0, f'Previously present package "{package}" was deleted.')


# Enums

def _closed(enum: Enum) -> bool:
    legacy = "CLOSED" if enum.file.syntax == "proto2" else "OPEN"
    return feature(enum.file.syntax, enum.scopes(), "enum_type", legacy) == "CLOSED"


@rule("ENUM_SAME_TYPE", "Checks that enums have the same type (open vs closed).", (F, P), (F, P), (F, P))
def _enum_same_type(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _enum_pairs(prev, cur):
        if _closed(before) != _closed(after):
            states = ("closed", "open") if _closed(before) else ("open", "closed")
            yield _finding("ENUM_SAME_TYPE", after.file, (*after.path, 3, 7, 2), f'Enum "{after.name}" changed from {states[0]} to {states[1]}.',
                           after.path)  # at its own features.enum_type, else the enum


def _json_format(element: Enum | Message) -> str:
    syntax = element.file.syntax
    return feature(syntax, element.scopes(), "json_format", "LEGACY_BEST_EFFORT" if syntax == "proto2" else "ALLOW")


@rule("ENUM_SAME_JSON_FORMAT", "Checks that enums have the same JSON format support.", (F, P, WJ), (F, P, WJ), (CSR, F, P, WJ))
def _enum_same_json(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _enum_pairs(prev, cur):
        old, new = _json_format(before), _json_format(after)
        if old == "ALLOW" and new != "ALLOW":
            yield _finding("ENUM_SAME_JSON_FORMAT", after.file, (*after.path, 3, 7, 6),
                           f'Enum "{after.name}" JSON format support changed from {old} to {new}.', after.path)


def _enum_value_no_delete(rule_id: str, unless: str | None) -> Check:
    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        for before, after in _enum_pairs(prev, cur):
            old, new = before.names_by_number(), after.names_by_number()
            for number in sorted(set(old) - set(new)):
                reserved_number = any(r.start <= number <= r.end for r in after.proto.reserved_range)  # enum ranges are inclusive
                reserved_name = all(n in after.proto.reserved_name for n in old[number])
                if (unless == "number" and reserved_number) or (unless == "name" and reserved_name):
                    continue
                suffix = "" if unless is None else f' without reserving the number "{number}"' if unless == "number" else \
                    f" without reserving the name{'s' if len(old[number]) > 1 else ''} " + ", ".join(f'"{n}"' for n in sorted(old[number]))
                yield _finding(rule_id, after.file, after.path, f'Previously present enum value "{number}" on enum "{after.name}" was deleted{suffix}.')
    return check


rule("ENUM_VALUE_NO_DELETE", "Checks that enum values are not deleted from a given enum.", (F, P), (F, P), (CSR, F, P))(
    _enum_value_no_delete("ENUM_VALUE_NO_DELETE", None))
rule("ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED", "Checks that enum values are not deleted from a given enum unless the number is reserved.",
     (WJ, W), (WJ, W), (CSR, WJ, W))(_enum_value_no_delete("ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED", "number"))
rule("ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED", "Checks that enum values are not deleted from a given enum unless the name is reserved.",
     (WJ,), (WJ,), (CSR, WJ))(_enum_value_no_delete("ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED", "name"))


@rule("ENUM_VALUE_SAME_NAME", "Checks that enum values have the same name.", (F, P, WJ), (F, P, WJ), (CSR, F, P, WJ))
def _enum_value_same_name(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _enum_pairs(prev, cur):
        old, new = before.names_by_number(), after.names_by_number()
        for number in sorted(set(old) & set(new)):
            if set(old[number]) <= set(new[number]):  # an alias may be added; a name may not go
                continue
            plural = "s" if len(old[number]) > 1 and len(new[number]) > 1 else ""
            shown = (", ".join(f'"{n}"' for n in sorted(old[number])), ", ".join(f'"{n}"' for n in sorted(new[number])))
            for index, value in enumerate(after.proto.value):  # each name the number now has
                if value.number == number:
                    yield _finding("ENUM_VALUE_SAME_NAME", after.file, (*after.path, 2, index, 2),
                                   f'Enum value "{number}" on enum "{after.name}" changed name{plural} from {shown[0]} to {shown[1]}.', (*after.path, 2, index))


@rule("RESERVED_ENUM_NO_DELETE", "Checks that reserved ranges and names are not deleted from a given enum.",
      (F, P, WJ, W), (F, P, WJ, W), (CSR, F, P, WJ, W))
def _reserved_enum(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _enum_pairs(prev, cur):
        ranges = [(r.start, r.end) for r in after.proto.reserved_range]
        for r in before.proto.reserved_range:
            missing = _missing(r.start, r.end, ranges)
            if missing:
                yield _finding("RESERVED_ENUM_NO_DELETE", after.file, after.path,
                               f'Previously present reserved range "{_range(r.start, r.end, 2**31 - 1)}" on enum "{after.name}" is missing values: '
                               f"{_ranges(missing, 2**31 - 1)} were removed.")
        for name in sorted(set(before.proto.reserved_name) - set(after.proto.reserved_name)):
            yield _finding("RESERVED_ENUM_NO_DELETE", after.file, after.path, f'Previously present reserved name "{name}" on enum "{after.name}" was deleted.')


# Messages

MAX_FIELD = 536870911


def _inclusive(ranges: object) -> list[tuple[int, int]]:
    return [(r.start, r.end - 1) for r in ranges]  # type: ignore[attr-defined]  # message ranges are [start, end)


def _missing(start: int, end: int, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of the inclusive range ``start..end`` that ``ranges`` (inclusive) do not cover."""
    missing, at = [], start
    for low, high in sorted(ranges):
        if high < at:
            continue
        if low > end:
            break
        if low > at:
            missing.append((at, low - 1))
        at = max(at, high + 1)
        if at > end:
            break
    if at <= end:
        missing.append((at, end))
    return missing


def _range(start: int, end: int, top: int) -> str:
    return str(start) if start == end else f"{start} to max" if end == top else f"{start} to {end}"


def _ranges(missing: list[tuple[int, int]], top: int) -> str:
    return ", ".join(f"[{a}]" if a == b else f"[{a},max]" if b == top else f"[{a},{b}]" for a, b in missing)


def _message_ranges(rule_id: str, word: str, attribute: str) -> Check:
    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        for before, after in _message_pairs(prev, cur):
            ranges = _inclusive(getattr(after.proto, attribute))
            for start, end in _inclusive(getattr(before.proto, attribute)):
                missing = _missing(start, end, ranges)
                if missing:
                    yield _finding(rule_id, after.file, after.path,
                                   f'Previously present {word} range "{_range(start, end, MAX_FIELD)}" on message "{after.name}" is missing values: '
                                   f"{_ranges(missing, MAX_FIELD)} were removed.")
            if attribute == "reserved_range":
                for name in sorted(set(before.proto.reserved_name) - set(after.proto.reserved_name)):
                    yield _finding(rule_id, after.file, after.path, f'Previously present reserved name "{name}" on message "{after.name}" was deleted.')
    return check


rule("RESERVED_MESSAGE_NO_DELETE", "Checks that reserved ranges and names are not deleted from a given message.",
     (F, P, WJ, W), (F, P, WJ, W), (CSR, F, P, WJ, W))(_message_ranges("RESERVED_MESSAGE_NO_DELETE", "reserved", "reserved_range"))
rule("EXTENSION_MESSAGE_NO_DELETE", "Checks that extension ranges are not deleted from a given message.", (F, P), (F, P), (CSR, F, P))(
    _message_ranges("EXTENSION_MESSAGE_NO_DELETE", "extension", "extension_range"))


@rule("MESSAGE_NO_REMOVE_STANDARD_DESCRIPTOR_ACCESSOR", "Checks that messages do not change the no_standard_descriptor_accessor option from "
      "false to true.", (F, P), (F, P), (CSR, F, P))
def _descriptor_accessor(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _message_pairs(prev, cur):
        if not before.proto.options.no_standard_descriptor_accessor and after.proto.options.no_standard_descriptor_accessor:
            yield _finding("MESSAGE_NO_REMOVE_STANDARD_DESCRIPTOR_ACCESSOR", after.file, (*after.path, 7, 2),
                           'Message option "no_standard_descriptor_accessor" changed from "false" to "true".', after.path)


@rule("MESSAGE_SAME_JSON_FORMAT", "Checks that messages have the same JSON format support.", (F, P, WJ), (F, P, WJ), (CSR, F, P, WJ))
def _message_same_json(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _message_pairs(prev, cur):
        old, new = _json_format(before), _json_format(after)
        if old == "ALLOW" and new != "ALLOW":
            yield _finding("MESSAGE_SAME_JSON_FORMAT", after.file, (*after.path, 7, 12, 6),
                           f'Message "{after.name}" JSON format support changed from {old} to {new}.', after.path)


@rule("MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT", "Checks that messages have the same value for the message_set_wire_format option.", (), (), ())
def _message_set(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _message_pairs(prev, cur):
        old, new = before.proto.options.message_set_wire_format, after.proto.options.message_set_wire_format
        if old != new:
            yield _finding("MESSAGE_SAME_MESSAGE_SET_WIRE_FORMAT", after.file, (*after.path, 7, 1),
                           f'Message option "message_set_wire_format" changed from "{str(old).lower()}" to "{str(new).lower()}".', after.path)


@rule("MESSAGE_SAME_REQUIRED_FIELDS", "Checks that messages have no added or deleted required fields.", (F, P, WJ, W), (F, P, WJ, W),
      (CSR, F, P, WJ, W))
def _required_fields(prev: Image, cur: Image) -> Iterator[BufFinding]:
    tail = "Required fields must always be sent, so if one side does not know about the required field, this will result in a breakage."
    for before, after in _message_pairs(prev, cur):
        old = {n for n, f in before.fields.items() if _required(f)}
        new = {n: f for n, f in after.fields.items() if _required(f)}
        for number in sorted(old - set(new)):
            yield _finding("MESSAGE_SAME_REQUIRED_FIELDS", after.file, after.path, f'Message "{after.name}" had required field "{number}" deleted. {tail}')
        for number in sorted(set(new) - old):
            yield _finding("MESSAGE_SAME_REQUIRED_FIELDS", after.file, new[number].path, f'Message "{after.name}" had required field "{number}" added. {tail}')


def _required(item: Field) -> bool:
    return required(item.file.syntax, item.proto, item.scopes())


@rule("ONEOF_NO_DELETE", "Checks that oneofs are not deleted from a given message.", (F, P), (F, P), (CSR, F, P))
def _oneof_no_delete(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _message_pairs(prev, cur):
        for name in sorted(set(before.oneofs) - set(after.oneofs)):
            yield _finding("ONEOF_NO_DELETE", after.file, after.path, f'Previously present oneof "{name}" on message "{after.name}" was deleted.')


# Fields

def _field_no_delete(rule_id: str, unless: str | None) -> Check:
    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        for before, after in _message_pairs(prev, cur):
            for number, item in sorted(before.fields.items()):
                if number in after.fields:
                    continue
                if unless == "number" and any(r.start <= number < r.end for r in after.proto.reserved_range):
                    continue
                if unless == "name" and item.name in after.proto.reserved_name:
                    continue
                suffix = "" if unless is None else f' without reserving the number "{number}"' if unless == "number" else \
                    f' without reserving the name "{item.name}"'
                described = item.describe()
                yield _finding(rule_id, after.file, after.path, f"Previously present {described[0].lower()}{described[1:]} was deleted{suffix}.")
    return check


rule("FIELD_NO_DELETE", "Checks that fields are not deleted from a given message.", (F, P), (F, P), (CSR, F, P))(
    _field_no_delete("FIELD_NO_DELETE", None))
rule("FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", "Checks that fields are not deleted from a given message unless the number is reserved.",
     (WJ, W), (WJ, W), (CSR, WJ, W))(_field_no_delete("FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", "number"))
rule("FIELD_NO_DELETE_UNLESS_NAME_RESERVED", "Checks that fields are not deleted from a given message unless the name is reserved.",
     (WJ,), (WJ,), (CSR, WJ))(_field_no_delete("FIELD_NO_DELETE_UNLESS_NAME_RESERVED", "name"))


def _cardinality(image: Image, item: Field) -> str:
    if item.proto.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED:
        entry = image.messages.get(item.type_name)
        return "map" if entry is not None and entry.proto.options.map_entry else "repeated"
    if _required(item):
        return "required"
    return "optional with explicit presence" if _presence(item) else "optional with implicit presence"


def _presence(item: Field) -> bool:
    if item.proto.type in (descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE, descriptor_pb2.FieldDescriptorProto.TYPE_GROUP):
        return True
    if item.extendee or item.proto.HasField("oneof_index"):
        return True
    if item.file.syntax == "proto2":
        return True
    if item.file.syntax == "proto3":
        return bool(item.proto.proto3_optional)
    return feature(item.file.syntax, (item.proto.options, *item.scopes()), "field_presence", "") != "IMPLICIT"


WIRE_CARDINALITY = {"optional with explicit presence": 1, "optional with implicit presence": 1, "required": 2, "repeated": 3, "map": 3}
WIRE_JSON_CARDINALITY = {**WIRE_CARDINALITY, "map": 4}  # maps and repeated fields differ in JSON


def _field_cardinality(rule_id: str, groups: dict[str, int] | None) -> Callable[[Image, Image], Iterator[BufFinding]]:
    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        for before, after in _field_pairs(prev, cur):
            if _map_entry(before) and _map_entry(after):
                continue
            old, new = _cardinality(prev, before), _cardinality(cur, after)
            if (old != new) if groups is None else (groups[old] != groups[new]):
                yield _finding(rule_id, after.file, after.path, f'{after.describe()} changed cardinality from "{old}" to "{new}".')
    return check


def _map_entry(item: Field) -> bool:
    return item.message is not None and item.message.proto.options.map_entry


rule("FIELD_SAME_CARDINALITY", "Checks that fields have the same cardinalities in a given message.", (F, P, WJ, W), (F, P), (F, P))(
    _field_cardinality("FIELD_SAME_CARDINALITY", None))
rule("FIELD_WIRE_COMPATIBLE_CARDINALITY", "Checks that fields have wire-compatible cardinalities in a given message.", (W,), (W,), (W,))(
    _field_cardinality("FIELD_WIRE_COMPATIBLE_CARDINALITY", WIRE_CARDINALITY))
rule("FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY", "Checks that fields have wire and JSON compatible cardinalities in a given message.",
     (WJ,), (WJ,), (CSR, WJ))(_field_cardinality("FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY", WIRE_JSON_CARDINALITY))

WIRE_TYPES = {"int32": 1, "int64": 1, "uint32": 1, "uint64": 1, "bool": 1, "sint32": 2, "sint64": 2, "string": 3, "bytes": 4, "fixed32": 5,
              "sfixed32": 5, "fixed64": 6, "sfixed64": 6, "double": 7, "float": 8, "group": 9, "message": 10, "enum": 11}
WIRE_JSON_TYPES = {"int32": 1, "uint32": 1, "int64": 2, "uint64": 2, "fixed32": 3, "sfixed32": 3, "fixed64": 4, "sfixed64": 4, "bool": 5,
                   "sint32": 6, "sint64": 7, "string": 8, "bytes": 9, "double": 10, "float": 11, "group": 12, "message": 13, "enum": 14}
UPDATING = "See https://developers.google.com/protocol-buffers/docs/proto3#updating for wire compatibility rules."
JSON_RULES = "https://developers.google.com/protocol-buffers/docs/proto3#json"


def _type_path(item: Field) -> tuple[int, ...]:
    return (*item.path, 6) if item.kind in ("message", "enum", "group") else (*item.path, 5)


def _kind_shown(item: Field) -> str:
    return "message (delimited encoding)" if item.kind == "group" and item.file.syntax != "proto2" else item.kind


def _changed_type(rule_id: str, before: Field, after: Field, extra: str = "") -> BufFinding:
    return _finding(rule_id, after.file, _type_path(after), f'{after.describe()} changed type from "{_kind_shown(before)}" to "{_kind_shown(after)}".'
                    + (f" {extra}" if extra else ""), after.path)


def _changed_type_name(rule_id: str, before: Field, after: Field) -> BufFinding:
    return _finding(rule_id, after.file, (*after.path, 6), f'{after.describe()} changed type from "{before.type_name}" to "{after.type_name}".',
                    after.path)


@rule("FIELD_SAME_TYPE", "Checks that fields have the same types in a given message.", (F, P, WJ, W), (F, P), (CSR, F, P))
def _field_same_type(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _field_pairs(prev, cur):
        if before.kind != after.kind:
            yield _changed_type("FIELD_SAME_TYPE", before, after)
        elif after.kind in ("enum", "group", "message") and before.type_name != after.type_name:
            yield _changed_type_name("FIELD_SAME_TYPE", before, after)


def _field_compatible_type(rule_id: str, groups: dict[str, int], extra: str) -> Check:
    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        for before, after in _field_pairs(prev, cur):
            if groups[before.kind] != groups[after.kind]:
                if groups is WIRE_TYPES and (before.kind, after.kind) == ("string", "bytes"):
                    continue
                note = extra
                if groups is WIRE_TYPES and (before.kind, after.kind) == ("bytes", "string"):
                    note += (" Note that while string and bytes are compatible if the data is valid UTF-8, there is no way to enforce that a bytes field "
                             "is UTF-8, so these fields may be incompatible.")
                yield _changed_type(rule_id, before, after, note)
            elif after.kind == "enum" and before.type_name != after.type_name:
                if not _enum_subset(prev.enums.get(before.type_name), cur.enums.get(after.type_name)):
                    yield _changed_type_name(rule_id, before, after)
            elif after.kind in ("group", "message") and before.type_name != after.type_name:
                yield _changed_type_name(rule_id, before, after)
    return check


def _enum_subset(before: Enum | None, after: Enum | None) -> bool:
    """Whether an enum that replaced another keeps its name and every value it had (by number and name)."""
    if before is None or after is None or before.name != after.name:
        return False
    new = after.names_by_number()
    return all(number in new and set(names) <= set(new[number]) for number, names in before.names_by_number().items())


rule("FIELD_WIRE_COMPATIBLE_TYPE", "Checks that fields have wire-compatible types in a given message.", None, (W,), (W,))(
    _field_compatible_type("FIELD_WIRE_COMPATIBLE_TYPE", WIRE_TYPES, UPDATING))
rule("FIELD_WIRE_JSON_COMPATIBLE_TYPE", "Checks that fields have wire and JSON compatible types in a given message.", None, (WJ,), (CSR, WJ))(
    _field_compatible_type("FIELD_WIRE_JSON_COMPATIBLE_TYPE", WIRE_JSON_TYPES,
                           f"See https://developers.google.com/protocol-buffers/docs/proto3#updating for wire compatibility rules and {JSON_RULES} for JSON "
                           "compatibility rules."))


@rule("FIELD_SAME_NAME", "Checks that fields have the same names in a given message.", (F, P, WJ), (F, P, WJ), (CSR, F, P, WJ))
def _field_same_name(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _field_pairs(prev, cur):
        old, new = (before.full_name, after.full_name) if before.extendee else (before.name, after.name)
        if old != new:
            yield _finding("FIELD_SAME_NAME", after.file, (*after.path, 1), f'{after.describe()} changed name from "{old}" to "{new}".', after.path)


@rule("FIELD_SAME_JSON_NAME", "Checks that fields have the same value for the json_name option.", (F, P, WJ), (F, P, WJ), (CSR, F, P, WJ))
def _field_same_json_name(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _field_pairs(prev, cur):
        if not before.extendee and before.proto.json_name != after.proto.json_name:
            yield _named("FIELD_SAME_JSON_NAME", after, 10, "json_name",
                         f'{after.describe()} changed option "json_name" from "{before.proto.json_name}" to "{after.proto.json_name}".')


@rule("FIELD_SAME_ONEOF", "Checks that fields have the same oneofs in a given message.", (F, P, WJ, W), (F, P, WJ, W), (CSR, F, P, WJ, W))
def _field_same_oneof(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _field_pairs(prev, cur):
        if before.extendee:
            continue
        old, new = before.oneof, after.oneof
        if old is not None and new is not None and old != new:
            yield _finding("FIELD_SAME_ONEOF", after.file, after.path, f'{after.describe()} moved from oneof "{old}" to oneof "{new}".')
        elif (old is None) != (new is None):
            moves = ("outside", "inside") if old is None else ("inside", "outside")
            yield _finding("FIELD_SAME_ONEOF", after.file, after.path, f"{after.describe()} moved from {moves[0]} to {moves[1]} a oneof.")


def _default(image: Image, item: Field) -> tuple[Any, str] | None:
    """The field's default as Buf compares and prints it (as written, else its type's zero): text for strings and bytes,
    a number for the rest (an enum's value by its number, a bool as 1 or 0, a float as a float32); None when it cannot
    have one (repeated, message)."""
    if item.proto.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED or item.kind in ("message", "group"):
        return None
    written = item.proto.default_value if item.proto.HasField("default_value") else ""
    if item.kind == "bytes":
        data = codecs.escape_decode(written.encode("latin-1"))[0] if written else b""  # protoc writes a bytes default C-escaped
        return data.decode("latin-1"), "[" + ",".join(f"0x{b:X}" for b in data) + "]"
    if item.kind == "string":
        return written, json.dumps(written, ensure_ascii=False)
    if item.kind == "enum":
        enum = image.enums.get(item.type_name)
        if enum is None or not enum.proto.value:  # an imported enum: told by the name written
            return written, written
        value = next((v for v in enum.proto.value if v.name == written), enum.proto.value[0])
        return int(value.number), f"{enum.name}.{value.name}"
    if item.kind == "bool":
        return int(written == "true"), written or "false"
    if item.kind in ("float", "double"):
        number = float(written) if written else 0.0  # protoc writes inf, -inf and nan as Python reads them
        return (_float32(number) if item.kind == "float" else number), written or "0"
    return int(written or 0), written or "0"


def _float32(number: float) -> float:
    return float(struct.unpack("f", struct.pack("f", number))[0])


def _same_default(old: Any, new: Any, kinds: tuple[str, str]) -> bool:
    """As Buf compares defaults: text with text; numbers by value, a float against a double as float32s, NaN alike."""
    if isinstance(old, str) or isinstance(new, str):
        return bool(old == new)
    if "float" in kinds and "double" in kinds:
        old, new = _float32(old), _float32(new)
    if isinstance(old, float) and isinstance(new, float) and math.isnan(old) and math.isnan(new):
        return True
    return bool(old == new)


@rule("FIELD_SAME_DEFAULT", "Checks that fields have the same default value, if a default is specified.", None, None, (CSR, F, P, WJ, W))
def _field_same_default(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _field_pairs(prev, cur):
        old, new = _default(prev, before), _default(cur, after)
        if old is None or new is None or (not old[0] and not new[0]) or _same_default(old[0], new[0], (before.kind, after.kind)):
            continue  # no default on either side (both their type's zero), or the same one
        yield _named("FIELD_SAME_DEFAULT", after, 7, "default", f"{after.describe()} changed default value from {old[1]} to {new[1]}.")


def _option_rule(rule_id: str, word: str, where: tuple[int, ...], value: Callable[[Field], str], strings: bool = False) -> Check:
    """A field's option or feature that must stay the same, reported where the field sets it (``where``, below the
    field's path), else at the field; ``strings``: for string fields only."""
    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        for before, after in _field_pairs(prev, cur):
            if strings and not (before.kind == "string" and after.kind == "string"):
                continue
            old, new = value(before), value(after)
            if old != new:
                yield _finding(rule_id, after.file, (*after.path, *where), f'{after.describe()} changed {word} from "{old}" to "{new}".', after.path)
    return check


def _utf8(item: Field) -> str:
    return feature(item.file.syntax, (item.proto.options, *item.scopes()), "utf8_validation", "NONE" if item.file.syntax == "proto2" else "VERIFY")


def _java_utf8(item: Field) -> str:
    """``VERIFY`` by the file's ``java_string_check_utf8`` (or, in Editions, ``(pb.java).utf8_validation``), else the
    field's own UTF8 validation, as Buf resolves it."""
    options = item.file.proto.options
    if item.file.syntax != "editions" or options.HasField("java_string_check_utf8"):
        return "VERIFY" if options.java_string_check_utf8 else _utf8(item)
    java = language_feature(item.file.syntax, (item.proto.options, *item.scopes()), "java", "utf8_validation", "DEFAULT")
    return "VERIFY" if java == "VERIFY" else _utf8(item)


def _cpp_string_type(item: Field) -> tuple[str, bool]:
    """The C++ string type (``STRING``, ``CORD``, ``VIEW``) and whether it is a legacy ``STRING_PIECE``: the ``ctype``
    option, else (Editions) the ``(pb.cpp).string_type`` feature."""
    options = item.proto.options
    if options.HasField("ctype"):
        ctype = options.ctype
        if ctype == descriptor_pb2.FieldOptions.CORD:
            return "CORD", False
        return "STRING", ctype == descriptor_pb2.FieldOptions.STRING_PIECE
    return language_feature(item.file.syntax, (options, *item.scopes()), "cpp", "string_type", "STRING"), False


@rule("FIELD_SAME_CPP_STRING_TYPE", "Checks that fields have the same C++ string type, based on ctype field option or (pb.cpp).string_type "
      "feature.", (F, P), (F, P), (F, P))
def _field_same_cpp_string_type(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _field_pairs(prev, cur):
        if any(f.message is not None and f.message.proto.options.map_entry for f in (before, after)):
            continue  # a map's key and value have no string type of their own
        if before.kind not in ("string", "bytes") or after.kind not in ("string", "bytes"):
            continue
        (old, old_piece), (new, new_piece) = _cpp_string_type(before), _cpp_string_type(after)
        if (old, old_piece) != (new, new_piece) and not (old_piece and new == "STRING"):  # STRING_PIECE -> STRING is fine
            shown = ("STRING_PIECE" if old_piece else old, "STRING_PIECE" if new_piece else new)
            yield _finding("FIELD_SAME_CPP_STRING_TYPE", after.file, (*after.path, 8, 1),
                           f'{after.describe()} changed C++ string type from "{shown[0]}" to "{shown[1]}".', (*after.path, 8, 21, 1000, 2), after.path)


@rule("FIELD_SAME_JAVA_UTF8_VALIDATION", "Checks that fields have the same Java string UTF8 validation, based on java_string_check_utf8 file "
      "option or (pb.java).utf8_validation feature.", (F, P), (F, P), (F, P))
def _field_same_java_utf8(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _field_pairs(prev, cur):
        if before.kind == "string" and after.kind == "string" and _java_utf8(before) != _java_utf8(after):
            yield _finding("FIELD_SAME_JAVA_UTF8_VALIDATION", after.file, (8, 27),
                           f'{after.describe()} changed Java string UTF8 validation from "{_java_utf8(before)}" to "{_java_utf8(after)}".',
                           (*after.path, 8, 21, 1001, 2), after.path)


rule("FIELD_SAME_JSTYPE", "Checks that fields have the same value for the jstype option.", (F, P), (F, P), (F, P))(
    _option_rule("FIELD_SAME_JSTYPE", 'option "jstype"', (8, 6), lambda item: descriptor_pb2.FieldOptions.JSType.Name(item.proto.options.jstype)))
rule("FIELD_SAME_UTF8_VALIDATION", "Checks that string fields have the same UTF8 validation mode.", (F, P), (F, P), (F, P))(
    _option_rule("FIELD_SAME_UTF8_VALIDATION", "UTF8 validation", (8, 21, 4), _utf8, strings=True))


# Files

FILE_OPTIONS = {"CC_ENABLE_ARENAS": "cc_enable_arenas", "CC_GENERIC_SERVICES": "cc_generic_services", "CSHARP_NAMESPACE": "csharp_namespace",
                "GO_PACKAGE": "go_package", "JAVA_GENERIC_SERVICES": "java_generic_services", "JAVA_MULTIPLE_FILES": "java_multiple_files",
                "JAVA_OUTER_CLASSNAME": "java_outer_classname", "JAVA_PACKAGE": "java_package", "OBJC_CLASS_PREFIX": "objc_class_prefix",
                "OPTIMIZE_FOR": "optimize_for", "PHP_CLASS_PREFIX": "php_class_prefix", "PHP_METADATA_NAMESPACE": "php_metadata_namespace",
                "PHP_NAMESPACE": "php_namespace", "PY_GENERIC_SERVICES": "py_generic_services", "RUBY_PACKAGE": "ruby_package",
                "SWIFT_PREFIX": "swift_prefix"}


def _file_value(file: ProtoFile, option: str) -> str:
    options = file.proto.options
    value = getattr(options, option)
    if option == "optimize_for":
        return str(descriptor_pb2.FileOptions.OptimizeMode.Name(value))
    if option == "cc_enable_arenas" and not options.HasField(option):
        return "true"  # its default is true since protobuf 3.14
    return str(value).lower() if isinstance(value, bool) else str(value)


def _file_option_rule(rule_id: str, option: str) -> Check:
    number = descriptor_pb2.FileOptions.DESCRIPTOR.fields_by_name[option].number

    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        for before, after in _file_pairs(prev, cur):
            old, new = _file_value(before, option), _file_value(after, option)
            if old != new:
                yield _finding(rule_id, after, (8, number), f'File option "{option}" changed from "{old}" to "{new}".')
    return check


for _suffix, _option in FILE_OPTIONS.items():
    rule(f"FILE_SAME_{_suffix}", f"Checks that files have the same value for the {_option} option.", (F, P), (F, P), (F, P))(
        _file_option_rule(f"FILE_SAME_{_suffix}", _option))


@rule("FILE_SAME_SYNTAX", "Checks that files have the same syntax.", (F, P), (F, P), (CSR, F, P))
def _file_same_syntax(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _file_pairs(prev, cur):
        old = before.syntax if before.syntax != "editions" else f"edition {before.proto.edition}"
        new = after.syntax if after.syntax != "editions" else f"edition {after.proto.edition}"
        if old != new:
            yield _finding("FILE_SAME_SYNTAX", after, (12,), f'File syntax changed from "{old}" to "{new}".', (14,))


@rule("FILE_SAME_PACKAGE", "Checks that files have the same package.", (F,), (F, P, WJ, W), (CSR, F, P, WJ, W))
def _file_same_package(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for before, after in _file_pairs(prev, cur):
        if before.package != after.package:
            yield _finding("FILE_SAME_PACKAGE", after, (2,), f'File package changed from "{before.package}" to "{after.package}".')


# Services

def _method_pairs(prev: Image, cur: Image) -> Iterator[tuple[str, str, ProtoFile, tuple[int, ...], descriptor_pb2.MethodDescriptorProto,
                                                             descriptor_pb2.MethodDescriptorProto]]:
    for name, before in sorted(prev.services.items()):
        after = cur.services.get(name)
        if after is None:
            continue
        for method, (old, _) in sorted(before.methods.items()):
            if method in after.methods:
                new, path = after.methods[method]
                yield method, after.name, after.file, path, old, new


@rule("RPC_NO_DELETE", "Checks that RPCs are not deleted from a given service.", (F, P), (F, P), (F, P))
def _rpc_no_delete(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for name, before in sorted(prev.services.items()):
        after = cur.services.get(name)
        if after is not None:
            for method in sorted(set(before.methods) - set(after.methods)):
                yield _finding("RPC_NO_DELETE", after.file, after.path, f'Previously present RPC "{method}" on service "{after.name}" was deleted.')


def _streaming(rule_id: str, side: str) -> Check:
    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        for method, service, file, path, old, new in _method_pairs(prev, cur):
            was, now = getattr(old, f"{side}_streaming"), getattr(new, f"{side}_streaming")
            if was != now:
                words = ("unary", "streaming") if now else ("streaming", "unary")
                yield _finding(rule_id, file, path, f'RPC "{method}" on service "{service}" changed from {side} {words[0]} to {side} {words[1]}.')
    return check


WIRE_ALL = (F, P, WJ, W)
rule("RPC_SAME_CLIENT_STREAMING", "Checks that RPCs have the same client streaming value.", WIRE_ALL, WIRE_ALL, (CSR, *WIRE_ALL))(
    _streaming("RPC_SAME_CLIENT_STREAMING", "client"))
rule("RPC_SAME_SERVER_STREAMING", "Checks that RPCs have the same server streaming value.", WIRE_ALL, WIRE_ALL, (CSR, *WIRE_ALL))(
    _streaming("RPC_SAME_SERVER_STREAMING", "server"))


def _rpc_type(rule_id: str, attribute: str, word: str, number: int) -> Check:
    def check(prev: Image, cur: Image) -> Iterator[BufFinding]:
        for method, service, file, path, old, new in _method_pairs(prev, cur):
            was, now = getattr(old, attribute).lstrip("."), getattr(new, attribute).lstrip(".")
            if was != now:
                yield _finding(rule_id, file, (*path, number), f'RPC "{method}" on service "{service}" changed {word} type from "{was}" to "{now}".', path)
    return check


rule("RPC_SAME_REQUEST_TYPE", "Checks that RPCs are have the same request type.", WIRE_ALL, WIRE_ALL, (CSR, *WIRE_ALL))(
    _rpc_type("RPC_SAME_REQUEST_TYPE", "input_type", "request", 2))
rule("RPC_SAME_RESPONSE_TYPE", "Checks that RPCs are have the same response type.", WIRE_ALL, WIRE_ALL, (CSR, *WIRE_ALL))(
    _rpc_type("RPC_SAME_RESPONSE_TYPE", "output_type", "response", 3))


@rule("RPC_SAME_IDEMPOTENCY_LEVEL", "Checks that RPCs have the same value for the idempotency_level option.", WIRE_ALL, WIRE_ALL, (CSR, *WIRE_ALL))
def _rpc_idempotency(prev: Image, cur: Image) -> Iterator[BufFinding]:
    for method, service, file, path, old, new in _method_pairs(prev, cur):
        was = descriptor_pb2.MethodOptions.IdempotencyLevel.Name(old.options.idempotency_level)
        now = descriptor_pb2.MethodOptions.IdempotencyLevel.Name(new.options.idempotency_level)
        if was != now:
            yield _finding("RPC_SAME_IDEMPOTENCY_LEVEL", file, (*path, 4, 34), f'RPC "{method}" on service "{service}" changed option "idempotency_level" '
                           f'from "{was}" to "{now}".', path)
