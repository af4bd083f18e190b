"""What a transition proposes: the field mapping (old -> new), the expand version (both sides, old beside new) and
the contract version (the target: the old side gone). Each schema format writes its own versions (``EDITORS``); the
checks every format share are here."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence

from bot.domain.compat.formats import SchemaType, field_walk_of, parse_schema
from bot.domain.lineage.field_paths import FIELD_PATHS, FieldWalk
from bot.domain.transitions.avro import AvroEditor
from bot.domain.transitions.jsonschema import JsonEditor
from bot.domain.transitions.model import Editor, Plan, Rename, TransitionError
from bot.domain.transitions.places import every_place
from bot.domain.transitions.protobuf import ProtoEditor

EDITORS: dict[SchemaType, Callable[[Mapping[str, str]], Editor]] = {
    SchemaType.AVRO: lambda _refs: AvroEditor(), SchemaType.JSON: lambda _refs: JsonEditor(), SchemaType.PROTOBUF: ProtoEditor}


def plan(schema_type: str, current: str, target: str, mapping: Sequence[Rename] | None, refs: Mapping[str, str] | None = None,
         reading: Sequence[str] = ()) -> Plan:
    """The transition from ``current`` to ``target`` (with ``mapping``, else what the target says); TransitionError when
    there is no transition to make (nothing maps, a path is wrong, the versions cannot be written). The plan's mapping
    names each renamed field at every place it is at (``bot.domain.transitions.places``); ``reading``: the paths jobs
    read, whose places count however deep they are."""
    kind = SchemaType(schema_type)
    editor = EDITORS[kind](dict(refs or {}))
    try:
        current_walk = field_walk_of(kind, parse_schema(kind, current, refs))
    except Exception as err:  # noqa: BLE001 - the stored version no longer parses alone (a reference gone): say so
        raise TransitionError(f"the current version does not parse: {err}") from None
    try:
        target_walk = field_walk_of(kind, parse_schema(kind, target, refs))
    except Exception as err:  # noqa: BLE001 - each format's own parse error, for the person
        raise TransitionError(f"the target is not a valid schema: {err}") from None
    current_listing, target_listing = (walk.listing() if walk is not None else ({}, {}) for walk in (current_walk, target_walk))
    current_paths, target_paths = _Fields(set(current_listing[0]), current_walk), _Fields(set(target_listing[0]), target_walk)
    renames = list(mapping) if mapping else editor.renames(current, target, current_paths, target_paths)
    if not renames:
        raise TransitionError("nothing to map: no field of the target replaces a field of the current version. Say it with a mapping "
                              "(old=new)" + (", or write the rename the Avro way: the new name with the old one as an alias" if kind is SchemaType.AVRO else ""))
    _check(renames, current_paths, target_paths)
    return Plan(tuple(every_place(current_walk, current_listing, renames, reading)), editor.expand(current, target, renames), editor.contract(current, target, renames))


class _Fields(Container[str]):
    """A version's field paths: those listed, and any deeper one its walk finds (a schema past the listing's limit)."""

    def __init__(self, listed: set[str], walk: FieldWalk | None) -> None:
        self.listed, self.walk = listed, walk

    def __contains__(self, path: object) -> bool:
        return path in self.listed or (isinstance(path, str) and self.walk is not None and len(self.listed) >= FIELD_PATHS and self.walk.has(path))


def _check(renames: Sequence[Rename], current: _Fields, target: _Fields) -> None:
    olds, news = [r.old for r in renames], [r.new for r in renames]
    for what, names in (("old", olds), ("new", news)):
        if len(set(names)) != len(names):
            raise TransitionError(f"mapping: the same {what} field is named twice")
    for rename in renames:
        if rename.old not in current:
            raise TransitionError(f"mapping: {rename.old} is not a field of the current version")
        if rename.old in target:
            raise TransitionError(f"mapping: {rename.old} is still in the target: a transition moves readers off fields the target removes")
        if rename.new not in target:
            raise TransitionError(f"mapping: {rename.new} is not a field of the target")
        if rename.new in current:
            raise TransitionError(f"mapping: {rename.new} is already a field of the current version")
        if rename.new.rpartition(".")[0] != rename.parent:
            raise TransitionError(f"mapping: {rename.old} and {rename.new} are in different records; a transition maps a field to one beside it")
