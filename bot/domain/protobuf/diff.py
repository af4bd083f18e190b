"""The differences between two Protobuf schemas, named as Confluent's Schema Registry names them, in one direction:
``differences(original, update)`` is what a reader on ``update`` meets in data written with ``original``. The
registry's BACKWARD check is ``differences(old, new)``, its FORWARD check ``differences(new, old)``; a difference
outside ``COMPATIBLE`` fails the check. Types pair by their names without the package, fields by number (oneof
members too), enum values by number. Beyond the registry: a deleted field whose number is not reserved,
wire-compatible edits that change the JSON encoding, a field made required, and a message field whose encoding
(length-prefixed or delimited) changed."""

from __future__ import annotations

from bot.domain.compat.changes import Difference
from bot.domain.protobuf.model import ProtoField, ProtoMessage, ProtoSchema

COMPATIBLE = frozenset({
    "MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED", "ENUM_CONST_ADDED", "ENUM_CONST_CHANGED", "ENUM_CONST_REMOVED",
    "FIELD_ADDED", "FIELD_REMOVED", "FIELD_NAME_CHANGED", "FIELD_STRING_OR_BYTES_LABEL_CHANGED", "ONEOF_ADDED", "ONEOF_REMOVED",
    "ONEOF_FIELD_ADDED", "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
    "FIELD_NUMBER_NOT_RESERVED", "FIELD_JSON_CHANGED", "FIELD_TYPE_CHANGED_SAME_WIRE", "FIELD_NO_LONGER_REQUIRED",  # ours: the
    "FIELD_ENUM_CHANGED",  # registry does not see these
})
SCALAR_KINDS = {"int32": "number", "int64": "number", "uint32": "number", "uint64": "number", "bool": "number", "sint32": "signed",
                "sint64": "signed", "string": "text", "bytes": "text", "fixed32": "fixed32", "sfixed32": "fixed32", "fixed64": "fixed64",
                "sfixed64": "fixed64", "float": "float", "double": "double"}
JSON_FORMS = {  # how Protobuf's JSON mapping writes a value of each scalar type (an enum's: its value's name)
    **dict.fromkeys(("int32", "uint32", "sint32", "fixed32", "sfixed32", "float", "double"), "a number"),
    **dict.fromkeys(("int64", "uint64", "sint64", "fixed64", "sfixed64"), "a string of digits"),
    "bool": "true or false", "string": "text", "bytes": "base64 text"}
_SIGNED32, _SIGNED64, _UNSIGNED32, _UNSIGNED64 = (-2**31, 2**31 - 1), (-2**63, 2**63 - 1), (0, 2**32 - 1), (0, 2**64 - 1)
RANGES = {  # the values of each integer type (an enum's: int32's), to tell a change that keeps them all from one that cuts some
    **dict.fromkeys(("int32", "sint32", "sfixed32"), _SIGNED32), **dict.fromkeys(("int64", "sint64", "sfixed64"), _SIGNED64),
    **dict.fromkeys(("uint32", "fixed32"), _UNSIGNED32), **dict.fromkeys(("uint64", "fixed64"), _UNSIGNED64), "bool": (0, 1)}


def differences(original: ProtoSchema, update: ProtoSchema) -> list[Difference]:
    """Every difference a reader on ``update`` meets in data written with ``original``."""
    return _Diff(original, update).run()


class _Diff:
    def __init__(self, original: ProtoSchema, update: ProtoSchema) -> None:
        self.o, self.u = original, update
        self.found: list[Difference] = []
        self.done: dict[tuple[str, str], bool] = {}  # (original, update) message -> compatible

    def run(self) -> list[Difference]:
        if self.o.package != self.u.package:
            self.add("PACKAGE_CHANGED", ("package",), self.u.package or "(none)", self.o.package or "(none)", self.u.package or "(none)")
        self.types(self.o.own, self.u.own)
        return self.found

    def add(self, rule: str, key: tuple[str, ...], path: str, old: str = "", new: str = "", detail: str = "") -> None:
        self.found.append(Difference(rule, key, path, old, new, detail))

    def types(self, original: list[str], update: list[str], alike: bool = False) -> None:
        """Messages and enums side by side, by their names without the package (``alike``: nested in messages defined
        alike, so the same types, and the same enums, on both sides)."""
        o_messages = {self.o.messages[n].name: n for n in original if n in self.o.messages and not self.o.messages[n].map_entry}
        u_messages = {self.u.messages[n].name: n for n in update if n in self.u.messages and not self.u.messages[n].map_entry}
        for name in sorted(set(o_messages) | set(u_messages)):
            old, new = o_messages.get(name), u_messages.get(name)
            if new is None:
                self.add("MESSAGE_REMOVED", ("message", name), self.o.path_of(str(old)), detail=name)
            elif old is None:
                self.add("MESSAGE_ADDED", ("message", name), self.u.path_of(new), detail=name)
            else:
                self.message(old, new)
                if self.o.messages[old].index != self.u.messages[new].index:
                    self.add("MESSAGE_MOVED", ("moved", name), self.u.path_of(new), detail=name)
        if alike:
            return
        o_enums = {self.o.enums[n].name: n for n in original if n in self.o.enums}
        u_enums = {self.u.enums[n].name: n for n in update if n in self.u.enums}
        for name in sorted(set(o_enums) | set(u_enums)):
            old, new = o_enums.get(name), u_enums.get(name)
            if new is None:
                self.add("ENUM_REMOVED", ("enum", name), name, detail=name)
            elif old is None:
                self.add("ENUM_ADDED", ("enum", name), name, detail=name)
            else:
                self.enum(old, new)

    def enum(self, original: str, update: str) -> None:
        old, new = self.o.enums[original].values, self.u.enums[update].values
        name = self.u.enums[update].name
        for number in sorted(set(old) | set(new)):
            key = ("enum_value", name, str(number))
            if number not in new:
                self.add("ENUM_CONST_REMOVED", key, f"{name}.{old[number]}", detail=f"{old[number]} = {number}")
            elif number not in old:
                self.add("ENUM_CONST_ADDED", key, f"{name}.{new[number]}", detail=f"{new[number]} = {number}")
            elif old[number] != new[number]:
                self.add("ENUM_CONST_CHANGED", key, f"{name}.{new[number]}", old[number], new[number], str(number))

    def message(self, original: str, update: str) -> bool:
        """Compare two messages (once per pair); whether the reader meets nothing incompatible in them."""
        if (original, update) in self.done:
            return self.done[(original, update)]
        self.done[(original, update)] = True  # a recursive type compares as compatible while it is being compared
        before = len(self.found)
        om, um = self.o.messages[original], self.u.messages[update]
        alike = bool(om.digest) and om.digest == um.digest
        if alike:
            self.linked(om, um, update)
        else:
            self.members(om, um, self.u.path_of(update))
        compatible = all(d.rule in COMPATIBLE for d in self.found[before:])
        self.done[(original, update)] = compatible
        self.types(self._nested(self.o, original), self._nested(self.u, update), alike)
        return compatible

    def linked(self, om: ProtoMessage, um: ProtoMessage, update: str) -> None:
        """Two messages defined alike: only the messages their fields name (directly or as a map's values) may differ."""
        for new in um.fields.values():
            kind = new.kind
            if kind == "map":
                value = self.u.map_value(new)
                kind = value.kind if value is not None else ""
            if kind == "message":
                self.kinds(om.fields[new.number], new, ("field", um.name, str(new.number)), f"{self.u.path_of(update)}.{new.name}", None, None)

    def members(self, om: ProtoMessage, um: ProtoMessage, base: str) -> None:
        """The oneofs and fields of two messages defined differently."""
        o_oneof = {f.number: f.oneof for f in om.fields.values() if f.oneof}
        u_oneof = {f.number: f.oneof for f in um.fields.values() if f.oneof}
        gone_oneofs = {name for name in om.oneofs if name not in um.oneofs
                       and not any(n in um.fields for n, o in o_oneof.items() if o == name)}
        for oneof in um.oneofs:  # fields that could be set together before, exclusive now
            groups, moved_in = set(), 0
            for number, group in u_oneof.items():
                if group != oneof or number not in om.fields:
                    continue
                if number in o_oneof:
                    groups.add(f"oneof:{o_oneof[number]}")
                else:
                    groups.add(f"field:{number}")
                    moved_in += 1
            if len(groups) > 1:
                rule = "MULTIPLE_FIELDS_MOVED_TO_ONEOF" if moved_in > 1 else "FIELD_MOVED_TO_EXISTING_ONEOF"
                self.add(rule, ("oneof_members", um.name, oneof), f"{base}.{oneof}", detail=oneof)
        for oneof in sorted(set(om.oneofs) ^ set(um.oneofs)):
            self.add("ONEOF_REMOVED" if oneof in om.oneofs else "ONEOF_ADDED", ("oneof", um.name, oneof), f"{base}.{oneof}", detail=oneof)
        for number in sorted(set(om.fields) | set(um.fields)):
            old, new = om.fields.get(number), um.fields.get(number)
            key = ("field", um.name, str(number))
            if new is None and old is not None:
                path = f"{base}.{old.name}"
                if old.oneof:
                    if old.oneof not in gone_oneofs:
                        self.add("ONEOF_FIELD_REMOVED", key, path, detail=f"{old.name} = {number} of {old.oneof}")
                else:
                    self.add("REQUIRED_FIELD_REMOVED" if old.label == "required" else "FIELD_REMOVED", key, path, _shown(old), detail=str(number))
                if not um.reserves(number) or old.name not in um.reserved_names:
                    missing = [what for what, kept in ((f"number {number}", um.reserves(number)), (f'name "{old.name}"', old.name in um.reserved_names))
                               if not kept]
                    self.add("FIELD_NUMBER_NOT_RESERVED", ("reserved", um.name, str(number)), path, detail=" and ".join(missing))
            elif old is None and new is not None:
                path = f"{base}.{new.name}"
                if new.oneof:
                    self.add("ONEOF_FIELD_ADDED", key, path, new=_shown(new), detail=new.oneof)
                else:
                    self.add("REQUIRED_FIELD_ADDED" if new.label == "required" else "FIELD_ADDED", key, path, new=_shown(new), detail=str(number))
            elif old is not None and new is not None:
                path = f"{base}.{new.name}"
                if old.oneof and not new.oneof:
                    # the key of the other way's "moved into the oneof": data that sets it beside the others fails an old reader
                    self.add("ONEOF_FIELD_MOVED_TO_TOP_LEVEL", ("oneof_members", um.name, old.oneof), path, detail=old.oneof)
                self.field(old, new, key, path)

    def _nested(self, schema: ProtoSchema, message: str) -> list[str]:
        return schema.own_nested.get(message, [])

    def field(self, old: ProtoField, new: ProtoField, key: tuple[str, ...], path: str) -> None:
        if old.name != new.name:
            self.add("FIELD_NAME_CHANGED", ("name", *key[1:]), path, old.name, new.name, str(new.number))
        if (new.label == "required") != (old.label == "required"):  # one key: a reader on the required side fails
            rule = "FIELD_MADE_REQUIRED" if new.label == "required" else "FIELD_NO_LONGER_REQUIRED"
            self.add(rule, ("required", *key[1:]), path, old.label, new.label, str(new.number))
        self.kinds(old, new, key, path, old.label, new.label)

    def scalar_type(self, old: ProtoField, new: ProtoField, key: tuple[str, ...], path: str) -> None:
        """Two types of one wire group (the registry's scalar kind), beyond the registry: another enum, another JSON form
        (an enum's is its value's name), or another range."""
        o_type, u_type = _type_name(old, self.o), _type_name(new, self.u)
        if o_type == u_type:
            return
        if old.kind == new.kind == "enum":
            self.add("FIELD_ENUM_CHANGED", ("enum", *key[1:]), path, o_type.removeprefix("enum "), u_type.removeprefix("enum "))
        elif (o_json := _json_form(old)) != (u_json := _json_form(new)):
            utf8 = " (and a reader of string refuses bytes that are not valid UTF-8)" if (old.type, new.type) == ("bytes", "string") else ""
            cut = f" (and on the wire, values outside {u_type}'s range are cut or change sign)" if _narrowed(old, new) else ""
            self.add("FIELD_JSON_CHANGED", ("json", *key[1:]), path, o_type, u_type, f"{o_type} as {o_json} and {u_type} as {u_json}{utf8}{cut}")
        else:
            self.add("FIELD_TYPE_CHANGED_SAME_WIRE", ("json", *key[1:]), path, o_type, u_type)

    def kinds(self, old: ProtoField, new: ProtoField, key: tuple[str, ...], path: str, old_label: str | None, new_label: str | None) -> None:
        o_kind, u_kind = _kind(old), _kind(new)
        if o_kind != u_kind:
            self.add("FIELD_KIND_CHANGED", ("kind", *key[1:]), path, _shown(old), _shown(new))
        elif o_kind == "scalar":
            o_scalar, u_scalar = _scalar(old), _scalar(new)
            if o_scalar != u_scalar:
                self.add("FIELD_SCALAR_KIND_CHANGED", ("scalar", *key[1:]), path, _shown(old), _shown(new))
            else:
                if old_label and new_label and old_label != new_label:
                    rule = "FIELD_STRING_OR_BYTES_LABEL_CHANGED" if o_scalar == "text" else "FIELD_NUMERIC_LABEL_CHANGED"
                    self.add(rule, ("label", *key[1:]), path, old_label, new_label)
                self.scalar_type(old, new, key, path)
        elif o_kind == "message":
            if old.delimited != new.delimited:
                self.add("FIELD_ENCODING_CHANGED", ("encoding", *key[1:]), path, _encoding(old), _encoding(new))
            o_name, u_name = self.o.local(old.type), self.u.local(new.type)
            if o_name != u_name:
                self.add("FIELD_NAMED_TYPE_CHANGED", ("named", *key[1:]), path, o_name, u_name, f"its type changed from {o_name} to {u_name}")
            elif not self.message(old.type, new.type):
                self.add("FIELD_NAMED_TYPE_CHANGED", ("named", *key[1:]), path, o_name, u_name, f"its type {u_name} changed incompatibly")
        elif o_kind == "map":
            o_entry, u_entry = self.o.messages[old.type], self.u.messages[new.type]
            for number, part in ((1, "key"), (2, "value")):
                o_part, u_part = o_entry.fields.get(number), u_entry.fields.get(number)
                if o_part is not None and u_part is not None:
                    self.kinds(o_part, u_part, (*key, part), f"{path}{{}}" if part == "value" else f"{path}<key>", None, None)


def _type_name(item: ProtoField, schema: ProtoSchema) -> str:
    return f"enum {schema.local(item.type)}" if item.kind == "enum" else item.type


def _json_form(item: ProtoField) -> str:
    return "its value's name" if item.kind == "enum" else JSON_FORMS[item.type]


def _narrowed(old: ProtoField, new: ProtoField) -> bool:
    """Whether some value of ``old``'s integer type is not one of ``new``'s (int64 read as int32 keeps its low 32 bits)."""
    o_range, u_range = (RANGES.get("int32" if f.kind == "enum" else f.type) for f in (old, new))
    return o_range is not None and u_range is not None and not (u_range[0] <= o_range[0] and o_range[1] <= u_range[1])


def _kind(item: ProtoField) -> str:
    """The registry's kinds: an enum is a scalar (a number on the wire); a map is its own kind."""
    return "scalar" if item.kind in ("scalar", "enum") else item.kind


def _scalar(item: ProtoField) -> str:
    return "number" if item.kind == "enum" else SCALAR_KINDS[item.type]


def _encoding(item: ProtoField) -> str:
    return "delimited (group) encoding" if item.delimited else "length-prefixed encoding"


def _shown(item: ProtoField) -> str:
    label = "" if item.label == "optional" else f"{item.label} "
    return f"{label}{item.type.rsplit('.', 1)[-1] if item.kind != 'scalar' else item.type}"
