"""When two schemas "match" (Avro 1.12, Schema Resolution), promotions, and which branches correspond."""

from __future__ import annotations

from itertools import filterfalse
from operator import attrgetter

from bot.domain.avro.model import NAMED, Field, Node

NAME_OF = attrgetter("name")

PROMOTIONS: dict[str, frozenset[str]] = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}
LOSSY = frozenset({("int", "float"), ("long", "float"), ("long", "double")})


def unshared(before: list[Field], after: list[Field]) -> list[Field]:
    """The fields of ``after`` that are not also fields of ``before``, in order. Two schemas parsed as a
    pair share the fields they have in common (one object for both), and a shared field has not changed,
    so a walk looks only at these."""
    return list(filterfalse(set(before).__contains__, after))  # fields hash by identity


def promotable(writer: str, reader: str) -> bool:
    """Whether Avro promotes a writer's primitive to the reader's."""
    return reader in PROMOTIONS.get(writer, ())


def names_match(writer: Node, reader: Node) -> bool:
    """Same unqualified name, or the writer's full name is one of the reader's aliases."""
    return writer.short_name == reader.short_name or writer.name in reader.aliases


def decimals_differ(writer: Node, reader: Node) -> bool:
    """Two decimals match only with equal precision and scale (the specification, Decimal)."""
    return (writer.logical == reader.logical == "decimal"
            and (writer.precision, writer.scale) != (reader.precision, reader.scale))


def matches(writer: Node, reader: Node) -> bool:
    """The specification's "match" for two non-union schemas (arrays and maps by kind only)."""
    if writer.type != reader.type:
        return promotable(writer.type, reader.type)
    if writer.type in NAMED:
        if not names_match(writer, reader):
            return False
        if writer.type == "fixed" and writer.size != reader.size:
            return False
    return not decimals_differ(writer, reader)


def first_match(writer: Node, union: Node) -> Node | None:
    """The first branch of a reader's union that matches the writer's schema."""
    return next((branch for branch in union.branches if matches(writer, branch)), None)


def related(a: Node, b: Node) -> bool:
    """Whether two schemas are the same thing changed (to report a change, not an unrelated swap)."""
    if a.type in NAMED or b.type in NAMED:
        return a.type == b.type and (names_match(a, b) or names_match(b, a))
    return a.type == b.type or promotable(a.type, b.type) or promotable(b.type, a.type)


def counterpart(node: Node, union: Node) -> Node | None:
    """The branch of ``union`` that corresponds to ``node``: an identical kind first, then a related one."""
    for branch in union.branches:
        if branch.type == node.type and (node.type not in NAMED or branch.name == node.name):
            return branch
    return next((branch for branch in union.branches if related(node, branch)), None)


def type_change_rule(old: str, new: str) -> str:
    """The rule for a primitive type changing from ``old`` to ``new``."""
    up, down = promotable(old, new), promotable(new, old)
    if up and down:
        return "STRING_BYTES_SWAPPED"
    if up:
        return "TYPE_PROMOTED_LOSSY" if (old, new) in LOSSY else "TYPE_PROMOTED"
    if down:
        return "TYPE_NARROWED"
    return "TYPE_CHANGED"
