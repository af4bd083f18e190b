"""A transition's versions in Protobuf, written on the ``.proto`` text with protoc's source positions: the old field's
declaration (as the current version writes it, at its own number) goes back right before its new one. Protobuf reads
by number, so the new field needs a number of its own, and the old one must stay free in the expand version."""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Any

from bot.domain.protobuf.compile import ROOT, ProtoError, compile_tree
from bot.domain.transitions.model import Rename, TransitionError

MESSAGE_TYPES, NESTED, FIELDS = 4, 3, 2  # descriptor.proto's field numbers: FileDescriptorProto.message_type, DescriptorProto.nested_type, .field


class ProtoEditor:
    """Protobuf's transition versions."""

    def __init__(self, refs: Mapping[str, str] | None = None) -> None:
        self.refs = dict(refs or {})

    def renames(self, current: str, target: str, current_paths: Container[str], target_paths: Container[str]) -> list[Rename]:
        """Nothing: a .proto cannot say that a field replaces another (the mapping must)."""
        return []

    def expand(self, current: str, target: str, mapping: Sequence[Rename]) -> str:
        """The target with each old field's declaration right before its new one, at its old number."""
        old_file, new_file = self._file(current), self._file(target)
        edits: list[tuple[int, str]] = []
        for rename in mapping:
            old_message, old_path = _message_at(old_file, rename.parent)
            old_field, old_index = _field_named(old_message, rename.old.rpartition(".")[2])
            message, path = _message_at(new_file, rename.parent)
            new_field, new_index = _field_named(message, rename.new.rpartition(".")[2])
            taken = next((f.name for f in message.field if f.number == old_field.number), None)
            if taken is not None:
                raise TransitionError(f"{taken} takes number {old_field.number}, {rename.old}'s: both must be readable during the transition, "
                                      "so the new field needs a number of its own (Protobuf reads fields by number)")
            if any(r.start <= old_field.number < r.end for r in message.reserved_range) or old_field.name in message.reserved_name:
                raise TransitionError(f"the target reserves {rename.old} (number {old_field.number}): the expand version still carries it; "
                                      "leave the reservation out of the target and reserve it in a change after the contract")
            declaration = _text(current, _span(old_file, (*old_path, FIELDS, old_index))).rstrip()
            start = _span(new_file, (*path, FIELDS, new_index))
            line = target.splitlines(keepends=True)[start[0]]
            indent = line[:len(line) - len(line.lstrip())]
            edits.append((_offset(target, start[0], start[1]), declaration + ("" if declaration.endswith(";") else ";") + "\n" + indent))
        text = target
        for offset, inserted in sorted(edits, reverse=True):
            text = text[:offset] + inserted + text[offset:]
        return text

    def contract(self, current: str, target: str, mapping: Sequence[Rename]) -> str:
        """The target, with each old field's number and name reserved where it does not reserve them yet (a number taken
        again later would read old data as the wrong field)."""
        old_file, new_file = self._file(current), self._file(target)
        edits: list[tuple[int, str]] = []
        for rename in mapping:
            old_field, _ = _field_named(_message_at(old_file, rename.parent)[0], rename.old.rpartition(".")[2])
            message, path = _message_at(new_file, rename.parent)
            words = ([] if any(r.start <= old_field.number < r.end for r in message.reserved_range) else [str(old_field.number)])
            quote = "" if new_file.syntax == "editions" else '"'  # editions reserve names as identifiers
            names = [] if old_field.name in message.reserved_name else [f"{quote}{old_field.name}{quote}"]
            end = _span(new_file, path)
            line = target.splitlines(keepends=True)[end[2]]
            indent = line[:len(line) - len(line.lstrip())] + "  "
            start, brace = _offset(target, end[2], 0), _offset(target, end[2], end[3] - 1)  # the closing brace's line, and the brace
            alone = not target[start:brace].strip()  # the brace on a line of its own: the reservations go on lines before it
            for reserved in (names, words):  # inserted at one place in turn: numbers come out first
                if reserved:
                    statement = f"{indent}reserved {', '.join(reserved)};\n"
                    edits.append((start, statement) if alone else (brace, "\n" + statement))
        text = target
        for offset, inserted in sorted(edits, key=lambda e: e[0], reverse=True):
            text = text[:offset] + inserted + text[offset:]
        return text

    def _file(self, text: str) -> Any:
        try:
            found = compile_tree({**self.refs, ROOT: text}, ["."], [ROOT])
        except ProtoError as err:
            raise TransitionError(str(err)) from None
        return found.file[-1]


def _message_at(file: Any, parent: str) -> tuple[Any, tuple[int, ...]]:
    """The message whose fields are at ``parent`` (the file's first message for ``""``), with its source path."""
    if not file.message_type:
        raise TransitionError("the schema has no message")
    index: dict[str, tuple[Any, tuple[int, ...]]] = {}

    def walk(message: Any, full: str, path: tuple[int, ...]) -> None:
        index[full] = (message, path)
        for i, nested in enumerate(message.nested_type):
            walk(nested, f"{full}.{nested.name}", (*path, NESTED, i))

    prefix = f".{file.package}" if file.package else ""
    for i, message in enumerate(file.message_type):
        walk(message, f"{prefix}.{message.name}", (MESSAGE_TYPES, i))
    message, path = index[f"{prefix}.{file.message_type[0].name}"]
    for name in [p for p in parent.split(".") if p]:
        field, _ = _field_named(message, name)
        if field.type_name not in index:
            raise TransitionError(f"{parent} is not a message of this file: a transition edits this schema's own messages")
        message, path = index[field.type_name]
    return message, path


def _field_named(message: Any, name: str) -> tuple[Any, int]:
    for i, field in enumerate(message.field):
        if field.name == name:
            return field, i
    raise TransitionError(f"{message.name} has no field {name}")


def _span(file: Any, path: tuple[int, ...]) -> tuple[int, int, int, int]:
    for location in file.source_code_info.location:
        if tuple(location.path) == path:
            span = list(location.span)
            return (span[0], span[1], span[0], span[2]) if len(span) == 3 else (span[0], span[1], span[2], span[3])
    raise TransitionError("protoc gave no position for a field")


def _offset(text: str, line: int, column: int) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(x) for x in lines[:line]) + column


def _text(text: str, span: tuple[int, int, int, int]) -> str:
    return text[_offset(text, span[0], span[1]):_offset(text, span[2], span[3])]
