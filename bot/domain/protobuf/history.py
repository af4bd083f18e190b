"""What only a subject's whole history shows, which neither the registry (it compares with one version, or each alone)
nor Buf (two trees) sees: a field number that meant another field in an earlier version, deleted since and now taken
again (old data still in the topic reads as the new field), and a number that was reserved and no longer is."""

from __future__ import annotations

from collections.abc import Sequence

from bot.domain.compat.changes import Change
from bot.domain.protobuf.compile import ROOT
from bot.domain.protobuf.model import ProtoField, ProtoMessage, ProtoSchema


def history_changes(history: Sequence[ProtoSchema], new: ProtoSchema) -> list[Change]:
    """FIELD_NUMBER_REUSED and FIELD_NUMBER_UNRESERVED of ``new`` against the versions before it (oldest first)."""
    if not history:
        return []
    found: list[Change] = []
    latest = _by_name(history[-1])
    for name, message in sorted(_by_name(new).items()):
        current = latest.get(name)
        for number, item in sorted(message.fields.items()):
            if current is not None and number in current.fields:
                continue  # the version before has it too: the registry's own comparison judges the change
            for version in range(len(history) - 1, 0, -1):  # the newest earlier version that had the number
                before = _by_name(history[version - 1]).get(name)
                if before is None or number not in before.fields:
                    continue
                old = before.fields[number]
                if old.name != item.name or _shape(old) != _shape(item):
                    path = f"{new.path_of(message.full_name)}.{item.name}"
                    found.append(Change("FIELD_NUMBER_REUSED", path, f"{old.name} ({_shape(old)}) in version {version}", f"{item.name} ({_shape(item)})",
                                        str(number), schema_type="PROTOBUF"))
                break
        if current is not None:
            gone = [n for n in _reserved(current) if not message.reserves(n) and n not in message.fields]
            if gone:
                found.append(Change("FIELD_NUMBER_UNRESERVED", new.path_of(message.full_name), detail=", ".join(map(str, gone[:20])),
                                    schema_type="PROTOBUF"))
    return found


def _by_name(schema: ProtoSchema) -> dict[str, ProtoMessage]:
    return {m.name: m for m in schema.messages.values() if m.file == ROOT and not m.map_entry}


def _shape(item: ProtoField) -> str:
    return f"{'repeated ' if item.label == 'repeated' else ''}{item.type.rsplit('.', 1)[-1]}"


def _reserved(message: ProtoMessage) -> list[int]:
    numbers: list[int] = []
    for start, end in message.reserved_numbers:
        numbers += range(start, min(end, start + 1000))  # a huge range (to max) is shown by its first numbers
    return numbers
